"""The Export page in headless Chromium: filter, choose a format, click the download, and find the
downloaded file byte-equal to what ``evalcore export`` (the real command, as a process) writes for
the same filters; its manifest's SHA-256 is the downloaded file's; a run's scores come as CSV.
Screenshots in tests/e2e/artifacts/."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from app_server import settle, shot
from apptest_util import XSS, shop_sessions
from e2e_ui import Server, choose, heading
from playwright.sync_api import expect

from evalcore.exporting import scores_csv
from evalcore.scoring import score_dataset
from evalcore.store import open_store

pytestmark = pytest.mark.browser

NewPage = Callable[..., Any]
EVALCORE = str(Path(sys.executable).parent / "evalcore")


def pick(page: Any, label: str, options: list[str]) -> None:
    """Pick ``options`` in the multiselect labelled ``label``."""
    box = page.get_by_role("combobox", name=label)
    for option in options:
        box.click()
        page.get_by_role("option", name=option, exact=True).click()
    page.keyboard.press("Escape")
    settle(page)


def download(page: Any, button: str, folder: Path) -> tuple[str, bytes]:
    """Click the download button labelled ``button``; the file's suggested name and its bytes."""
    with page.expect_download(timeout=30_000) as info:
        page.get_by_role("button", name=button, exact=True).click()
    got = info.value
    target = folder / got.suggested_filename
    got.save_as(target)
    return got.suggested_filename, target.read_bytes()


def cli_export(server: Server, out: Path, *options: str) -> tuple[bytes, dict[str, Any]]:
    """The file and manifest the real ``evalcore export`` writes on the server's database."""
    command = [EVALCORE, "export", "--db", str(server.db), "-o", str(out), *options]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads(out.with_name(out.name + ".manifest.json").read_text())
    return out.read_bytes(), manifest


def test_download_an_export_byte_equal_to_the_cli(server: Server, new_page: NewPage, tmp_path: Path) -> None:
    sessions = shop_sessions()
    sessions[0]["messages"][0]["content"] = "Hostile: " + " ".join(XSS)  # approved: the first in the preview
    server.import_sessions("shop", [{"schema_version": 1, **s} for s in sessions], "shop.jsonl")
    with open_store(server.db) as store:
        run_id = score_dataset(store, "shop", ["turn_count"]).run.id

    page = new_page("/export?dataset=shop")
    expect(heading(page)).to_have_text("Export")
    expect(page.get_by_text("30 sessions of 30 match.")).to_be_visible()
    pick(page, "Status", ["approved (5)", "flagged (3)"])
    choose(page, "Format", "openai")
    expect(page.get_by_text("8 sessions of 30 match.")).to_be_visible()
    # The hostile text of the first record is shown as text in the preview, not as markup.
    expect(page.locator('[data-testid="stCode"]').filter(has_text="<script>alert(1)</script>")).to_have_count(1)
    assert page.locator('[data-testid="stMain"] img').count() == 0
    shot(page, "export")

    got = tmp_path / "got"
    got.mkdir()
    name, data = download(page, "Download shop.openai.jsonl", got)
    cli, cli_manifest = cli_export(server, tmp_path / "cli.jsonl", "--dataset", "shop", "--to", "openai",
                                   "--status", "approved,flagged")  # fmt: skip
    assert name == "shop.openai.jsonl"
    assert data == cli and cli_manifest["count"] == 8 and data.count(b"\n") == 8
    manifest_name, manifest = download(page, "Manifest", got)
    record = json.loads(manifest)
    assert manifest_name == "shop.openai.jsonl.manifest.json" and record["file"] == "shop.openai.jsonl"
    assert record["sha256"] == hashlib.sha256(data).hexdigest() == cli_manifest["sha256"]
    assert record["filters"] == cli_manifest["filters"] == {"status": ["approved", "flagged"]}

    # One JSON array, as the command line writes to a name ending in .json.
    page.get_by_role("radio", name="one JSON array", exact=True).click()
    settle(page)
    name, data = download(page, "Download shop.openai.json", got)
    cli, _ = cli_export(server, tmp_path / "cli.json", "--dataset", "shop", "--to", "openai",
                        "--status", "approved,flagged")  # fmt: skip
    assert name == "shop.openai.json" and data == cli and data.startswith(b"[\n{")

    # A run's scores, as CSV.
    name, data = download(page, f"Download CSV · shop.run-{run_id}.scores.csv", got)
    with open_store(server.db) as store:
        assert name == f"shop.run-{run_id}.scores.csv" and data == scores_csv(store, run_id)
    assert data.count(b"\r\n") == 31  # a header and 30 rows
    shot(page, "export-after-downloads")

"""The Export page, run for real with AppTest on a temporary SQLite file: the command line's filters
change the count and the preview, the format and the file's layout change what is downloaded, the
downloads are deferred (made on click) and hold what ``evalcore export`` writes, a run's scores come
as CSV or JSON Lines, and hostile text stays literal.

The ``shop`` dataset (apptest_util.shop_sessions): 30 sessions, 5 approved, 3 flagged, 22 todo;
tags ``refund`` (6) and ``vip`` (3); assistants ``bot-a`` / ``bot-b`` (15 each); a reference on
every third (10); 1, 2 or 3 turns (10 of each, scored by ``turn_count``); "zebra" only in shop-07.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from apptest_util import (  # noqa: F401 (fixtures)
    XSS,
    all_text,
    app,
    db_fixture,
    fresh_db_fixture,
    plain_texts,
    run,
    store_fixture,
    template_db_fixture,
    texts,
)
from streamlit.testing.v1 import AppTest

from evalcore.exporting import export_dataset, manifest_path
from evalcore.importing import import_file
from evalcore.store import Store, open_store
from evalcore.store.queries import SessionFilter
from evalcore.views.export import ExportDownload

PAGE = "app_pages/export.py"


def _export(dataset: str = "shop") -> AppTest:
    at = run(app(dataset=dataset))
    at.switch_page(PAGE)
    run(at)
    at._page_hash = ""  # later runs stay on this page (see apptest_util.open_page)
    return at


def _count(at: AppTest) -> int:
    [line] = [m for m in texts(at, "markdown") if " match." in m]
    match = re.match(r"\*\*([\d,]+) sessions?\*\* of [\d,]+ match\.", line)
    assert match, line
    return int(match.group(1).replace(",", ""))


def _records(at: AppTest) -> list[Any]:
    return [json.loads(c.value) for c in at.code if c.language == "json"]


def _download(at: AppTest) -> ExportDownload:
    download = at.session_state["x_download"]
    assert isinstance(download, ExportDownload)
    return download


def _cli_file(db: Path, tmp_path: Path, name: str, to: str, filters: SessionFilter, dataset: str = "shop") -> bytes:
    """What ``evalcore export`` writes (its code, on the same file) to ``name``, checked against its manifest."""
    out = tmp_path / name
    with open_store(db) as store:
        export_dataset(store, dataset, out, to, filters)
    data = out.read_bytes()
    assert json.loads(manifest_path(out).read_text())["sha256"] == hashlib.sha256(data).hexdigest()
    return data


def test_the_whole_dataset_by_default(db: Path, tmp_path: Path) -> None:
    at = _export()
    assert at.title[0].value == "Export"
    assert _count(at) == 30
    records = _records(at)
    assert [r["session_id"] for r in records] == ["shop-00", "shop-01", "shop-02"]
    assert "The first 3 records of the file (30 sessions)" in " ".join(texts(at, "caption"))
    [command] = [c.value for c in at.code if c.language == "bash"]
    assert command == "evalcore export --dataset shop --to evalcore -o shop.evalcore.jsonl"
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels[:2] == ["Download shop\\.evalcore\\.jsonl", "Manifest"]
    for element in at.get("download_button"):  # made on click, not on every run
        assert element.proto.deferred_file_id and not element.proto.url and not element.proto.disabled
    download = _download(at)
    body = download.data()
    assert body == _cli_file(db, tmp_path, "shop.evalcore.jsonl", "evalcore", SessionFilter())
    manifest = json.loads(download.manifest())
    assert manifest["sha256"] == hashlib.sha256(body).hexdigest() and manifest["count"] == 30
    assert manifest["file"] == "shop.evalcore.jsonl"


@pytest.mark.parametrize(
    ("widget", "key", "value", "expected", "filters"),
    [
        ("multiselect", "x_status", ["approved"], 5, SessionFilter(status=["approved"])),
        ("multiselect", "x_status", ["approved", "flagged"], 8, SessionFilter(status=["approved", "flagged"])),
        ("multiselect", "x_tags", ["refund", "vip"], 1, SessionFilter(tags=["refund", "vip"])),
        ("selectbox", "x_assistant", "bot-b", 15, SessionFilter(assistant="bot-b")),
        ("selectbox", "x_truth", "present", 10, SessionFilter(has_truth=True)),
        ("selectbox", "x_truth", "missing", 20, SessionFilter(has_truth=False)),
        ("text_input", "x_search", "zebra", 1, SessionFilter(search="zebra")),
        ("text_input", "x_search", "zeb*", 1, SessionFilter(search="zeb*")),
    ],
)
def test_each_filter_changes_the_count_the_preview_and_the_file(
    db: Path, tmp_path: Path, widget: str, key: str, value: Any, expected: int, filters: SessionFilter
) -> None:
    at = _export()
    getattr(at, widget)(key=key).set_value(value)
    run(at)
    assert _count(at) == expected
    body = _download(at).data()
    assert body == _cli_file(db, tmp_path, "x.jsonl", "evalcore", filters)
    first = [json.loads(line)["session_id"] for line in body.decode().splitlines()][: min(3, expected)]
    assert [r["session_id"] for r in _records(at)] == first
    if key == "x_truth":  # the command line has no such option: no command is offered
        assert not [c for c in at.code if c.language == "bash"]
        assert any("no ground truth option" in c for c in texts(at, "caption"))


def test_search_in_the_system_prompt_too(db: Path, tmp_path: Path) -> None:
    """ "Search in" sits in its own row with the search box (a control of the same height: the row lines up)."""
    at = _export()
    assert at.segmented_control(key="x_search_system").value is False
    at.text_input(key="x_search").set_value("zebra")
    at.segmented_control(key="x_search_system").set_value(True)
    run(at)
    assert _count(at) == 1
    filters = SessionFilter(search="zebra", search_system_prompt=True)
    assert _download(at).data() == _cli_file(db, tmp_path, "s.jsonl", "evalcore", filters)
    [command] = [c.value for c in at.code if c.language == "bash"]
    assert "--search-system-prompt" in command.split()


def test_score_filter_by_run_metric_and_range(db: Path, store: Store, tmp_path: Path) -> None:
    at = _export()
    at.selectbox(key="x_run").select_index(1)
    run(at)
    assert at.selectbox(key="x_metric").value == "turn_count"
    at.number_input(key="x_min").set_value(2)
    run(at)
    assert _count(at) == 20
    at.number_input(key="x_max").set_value(2)
    run(at)
    assert _count(at) == 10
    run_id = store.runs.recent("shop")[0].id
    filters = SessionFilter(run_id=run_id, metric="turn_count", min_score=2.0, max_score=2.0)
    assert _download(at).data() == _cli_file(db, tmp_path, "s.jsonl", "evalcore", filters)
    [command] = [c.value for c in at.code if c.language == "bash"]
    assert f"--run {run_id} --metric turn_count --min-score 2.0 --max-score 2.0" in command
    assert {r["session_id"] for r in _records(at)} <= {f"shop-{i:02d}" for i in range(1, 30, 3)}
    at.number_input(key="x_min").set_value(5)  # an empty range: nothing matches, nothing to download
    run(at)
    assert _count(at) == 0
    assert "No session matches: the file would be empty." in texts(at, "caption")
    assert all(b.proto.disabled and not b.proto.deferred_file_id for b in at.get("download_button")[:2])


def test_every_writable_format_and_the_json_array(db: Path, tmp_path: Path) -> None:
    at = _export()
    options = at.selectbox(key="x_format").options
    assert options == ["evalcore", "gaussia", "ragas", "anthropic", "open-responses", "databricks", "openai"]
    at.selectbox(key="x_format").set_value("openai")
    run(at)
    assert all("messages" in r and "session_id" not in r for r in _records(at))
    # The caption says what will be written, as the layout chosen says.
    assert "Writes openai records as JSON Lines: one record a line (a .jsonl file)." in plain_texts(at, "caption")
    assert _download(at).data() == _cli_file(db, tmp_path, "o.jsonl", "openai", SessionFilter())
    at.segmented_control(key="x_layout").set_value("json")
    run(at)
    assert any(
        c.startswith("Writes openai records as one JSON array (a .json file)") for c in plain_texts(at, "caption")
    )
    assert not any("JSONL" in c for c in plain_texts(at, "caption"))
    download = _download(at)
    assert download.file_name == "shop.openai.json"
    body = download.data()
    assert body == _cli_file(db, tmp_path, "o.json", "openai", SessionFilter()) and body.startswith(b"[\n{")
    assert json.loads(download.manifest())["file"] == "shop.openai.json"
    [command] = [c.value for c in at.code if c.language == "bash"]
    assert command.endswith("-o shop.openai.json")


def test_the_download_is_kept_across_runs_so_its_manifest_fits_the_file(db: Path) -> None:
    at = _export()
    first = _download(at)
    body = first.data()
    run(at)  # any rerun (a widget elsewhere): the same export keeps its download object
    assert _download(at) is first
    assert json.loads(_download(at).manifest())["sha256"] == hashlib.sha256(body).hexdigest()
    at.multiselect(key="x_status").set_value(["approved"])
    run(at)
    assert _download(at) is not first


def test_a_search_without_a_word_is_a_message(db: Path) -> None:
    at = _export()
    at.text_input(key="x_search").set_value("***")
    run(at)
    assert any("has no word to look for" in w for w in texts(at, "warning"))
    assert not at.get("download_button")


def test_nothing_matches(db: Path) -> None:
    at = _export()
    at.text_input(key="x_search").set_value("nowhere")
    run(at)
    assert _count(at) == 0 and _records(at) == []
    assert all(b.proto.disabled for b in at.get("download_button")[:2])


def test_no_dataset_yet(fresh_db: Path) -> None:
    at = _export()
    assert any("No dataset yet" in i for i in texts(at, "info"))
    assert not at.get("download_button")


def test_run_scores_as_csv_or_jsonl(db: Path, store: Store, tmp_path: Path) -> None:
    at = _export("review")
    runs = store.runs.recent("review")
    assert len(at.selectbox(key="x_scores_run").options) == len(runs)
    [label] = [b.proto.label for b in at.get("download_button") if "scores" in b.proto.label]
    assert label == f"Download CSV · review\\.run\\-{runs[0].id}\\.scores\\.csv"  # the type first: never cut
    at.segmented_control(key="x_scores_kind").set_value("jsonl")
    run(at)
    [button] = [b.proto for b in at.get("download_button") if "scores" in b.proto.label]
    assert button.label.startswith("Download JSON Lines · ") and button.label.endswith("scores\\.jsonl")
    assert button.deferred_file_id
    assert any(c.startswith("One row per session and metric: session_id, position") for c in texts(at, "caption"))
    at.selectbox(key="x_scores_run").select_index(len(runs) - 1)
    run(at)
    [button] = [b.proto for b in at.get("download_button") if "scores" in b.proto.label]
    assert f"run\\-{runs[-1].id}\\.scores" in button.label


def test_a_dataset_without_runs_says_so(db: Path, store: Store, tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text(json.dumps({"session_id": "p1", "messages": [{"role": "user", "content": "hi"}]}) + "\n")
    import_file(store, path, "plain", workers=1)
    at = _export("plain")
    assert "No run has scored this dataset yet." in texts(at, "caption")
    assert _count(at) == 1


def test_hostile_text_stays_literal(db: Path, store: Store, tmp_path: Path) -> None:
    """Markup in sessions, tags, assistants and the dataset's name is shown as text, never rendered."""
    name = "<img src=x onerror=alert(1)> ds"
    path = tmp_path / "hostile.jsonl"
    session = {
        "schema_version": 1,
        "session_id": "<script>alert(1)</script>",
        "assistant_id": "[a](javascript:alert(1))",
        "tags": ["![x](http://127.0.0.1:9/x.png)"],
        "messages": [{"role": "user", "content": "\n".join(XSS)}, {"role": "assistant", "content": "**bold**"}],
    }
    path.write_text(json.dumps(session) + "\n")
    import_file(store, path, name, workers=1)
    at = _export(name)
    assert _count(at) == 1
    [record] = _records(at)
    assert record["session_id"] == "<script>alert(1)</script>" and record["messages"][0]["content"] == "\n".join(XSS)
    [command] = [c.value for c in at.code if c.language == "bash"]
    assert command.startswith("evalcore export --dataset '<img src=x onerror=alert(1)> ds' --to evalcore")
    download = _download(at)
    assert download.file_name == "img-src-x-onerror-alert-1-ds.evalcore.jsonl"
    assert download.data() == _cli_file(db, tmp_path, "h.jsonl", "evalcore", SessionFilter(), dataset=name)
    markdown = "\n".join(texts(at, "markdown") + texts(at, "caption"))
    for bad in (*XSS, "<script>"):
        assert bad not in markdown
    at.multiselect(key="x_tags").set_value(["![x](http://127.0.0.1:9/x.png)"])
    at.selectbox(key="x_assistant").set_value("[a](javascript:alert(1))")
    run(at)
    assert _count(at) == 1
    [command] = [c.value for c in at.code if c.language == "bash"]
    assert "--tag '![x](http://127.0.0.1:9/x.png)' --assistant '[a](javascript:alert(1))'" in command
    assert "javascript:" not in "\n".join(texts(at, "markdown"))
    assert "<script>" in all_text(at)  # shown, as text, in the preview


def test_the_filters_and_format_survive_a_visit_to_another_page(db: Path) -> None:
    at = _export()
    at.multiselect(key="x_status").set_value(["approved"])
    at.selectbox(key="x_format").set_value("ragas")
    run(at)
    assert _count(at) == 5
    at.switch_page("app_pages/sessions.py")
    run(at)
    at.switch_page(PAGE)
    run(at)
    assert at.multiselect(key="x_status").value == ["approved"] and at.selectbox(key="x_format").value == "ragas"
    assert _count(at) == 5 and _download(at).file_name == "shop.ragas.jsonl"

"""`evalcore app` from an installed wheel: no checkout, the app, its pages and the sample data inside the package."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import sysconfig
from pathlib import Path

from app_server import browser, free_port, wait_healthy, wait_idle

ROOT = Path(__file__).resolve().parent.parent


def test_evalcore_app_runs_from_an_installed_wheel(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(ROOT)],
        check=True,
        capture_output=True,
    )
    wheel = next(wheels.glob("evalcore-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # The wheel itself, unpacked into the new environment (no network); its dependencies come from the test's
    # environment through a path file, which adds the folder but none of its own path files (so no editable
    # install of the checkout leaks in).
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target", str(site), str(wheel)],
        check=True,
        capture_output=True,
    )
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALCORE_")}
    where = subprocess.run(
        [str(python), "-c", "import evalcore, evalcore_app, evalcore.cli as c; print(evalcore.__file__); "
         "print(c.app_path())"],
        check=True, capture_output=True, text=True, cwd=work, env=env,
    ).stdout.split()  # fmt: skip
    assert all(str(site) in line for line in where), where
    assert where[1].endswith("evalcore_app/app.py")

    port = free_port()
    db = work / "review.db"
    log = open(tmp_path / "app.log", "wb")  # noqa: SIM115
    process = subprocess.Popen(
        [str(python), "-m", "evalcore.cli", "app", "--db", str(db), "--port", str(port)],
        cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        wait_healthy(f"http://127.0.0.1:{port}", process, tmp_path / "app.log")

        with browser() as chrome:
            page = chrome.new_page(viewport={"width": 1400, "height": 900})
            fetched: list[str] = []
            page.on("request", lambda request: fetched.append(request.url))
            page.goto(f"http://127.0.0.1:{port}/")
            wait_idle(page)
            assert page.locator("h1").first.inner_text() == "Datasets"
            # The page icon travels in the package and is sent inline: nothing is fetched from another host.
            assert (site / "evalcore_app" / "app_pages" / "icon.svg").is_file()
            icon = page.locator("link[rel='shortcut icon']").get_attribute("href") or ""
            assert icon.startswith("data:image/svg+xml"), icon[:80]
            elsewhere = [u for u in fetched if not u.startswith(("data:", f"http://127.0.0.1:{port}/"))]
            assert elsewhere == [], elsewhere
            # The packaged sample data, loaded on first start: the frame picked its first dataset.
            assert "dataset=sample-anthropic" in page.url
    finally:
        process.terminate()
        process.wait(10)
        log.close()
    with sqlite3.connect(db) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY name")]
    assert len(names) == 16 and "sample-ragas" in names

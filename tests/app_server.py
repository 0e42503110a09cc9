"""A real ``streamlit run app.py`` on 127.0.0.1 for browser tests and benchmarks, and a headless Chromium.

The server binds to the loopback address with usage statistics off, so nothing leaves the
machine; it is stopped (by its PID) when the test is done.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("EVALCORE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = ROOT / "tests" / "e2e" / "artifacts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def chromium_available() -> bool:
    return Path(CHROMIUM).exists() or shutil.which("chromium") is not None


def wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path | None, seconds: float = 60) -> None:
    """Wait until the streamlit server at ``url`` answers its health check (raises if it died or took too long)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"streamlit did not start (exit {process.poll()}); see {log}")
        time.sleep(0.2)


@contextmanager
def streamlit_server(
    db: Path | str, *, samples: Path | None = None, log: Path | None = None, folder: Path | None = None
) -> Iterator[str]:
    """``streamlit run app.py`` on a free loopback port with ``db`` as its database (a SQLite file, or a database
    URL: then ``folder`` is where the server runs); yields its URL."""
    port = free_port()
    folder = folder or Path(db).parent
    env = dict(os.environ, EVALCORE_DB=str(db))
    env["EVALCORE_SAMPLE_DATA"] = str(samples) if samples is not None else str(folder / "no-samples")
    command = [
        sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
        "--server.address", "127.0.0.1", "--server.port", str(port), "--server.headless", "true",
        "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
        "--client.showErrorDetails", "none", "--client.toolbarMode", "minimal", "--theme.primaryColor", "#2f62c7",
    ]  # fmt: skip
    out = open(log, "wb") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=str(folder))
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if log is not None:
            out.close()  # type: ignore[union-attr]


@contextmanager
def browser() -> Iterator[Any]:
    """A headless Debian Chromium driven by Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chrome = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chrome
        finally:
            chrome.close()


#: True once the script has finished and every element of the last run is shown: Streamlit marks the app
#: with its script state, fades elements still waiting for a run's output (``data-stale``), and holds a
#: skeleton in the place of a widget whose code is still loading (``stSkeleton``).
SETTLED = """() => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.dataset.testScriptState === 'notRunning'
        && app.dataset.testConnectionState === 'CONNECTED'
        && !document.querySelector('[data-stale="true"]')
        && !document.querySelector('[data-testid="stSkeleton"]');
}"""


def settle(page: Any, timeout: float = 30_000) -> None:
    """Wait until Streamlit is connected, no script runs and no element is stale, twice in a row.

    A click starts its run a moment later, and a run can end in another (``st.rerun``); the second
    look, 150 ms on, catches both. Elements can still appear after this (widgets are loaded on
    demand): wait for what you mean to use with ``expect(...)``.
    """
    page.wait_for_function(SETTLED, timeout=timeout)
    page.wait_for_timeout(150)
    page.wait_for_function(SETTLED, timeout=timeout)


def wait_idle(page: Any, timeout: float = 30_000) -> None:
    """Wait until Streamlit has finished running the script (no 'running' indicator) and the page is still."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
    page.wait_for_selector('[data-testid="stMain"] h1, [data-testid="stMain"] h3', timeout=timeout)
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !document.querySelector('[data-testid=\"stStatusWidget\"]').innerText.includes('Running')",
        timeout=timeout,
    )
    settle(page, timeout)


def shot(page: Any, name: str) -> Path:
    """A screenshot of the whole page kept under tests/e2e/artifacts/ (git-ignored).

    Streamlit scrolls its main area, not the document, so a "full page" screenshot would stop at
    the window's bottom: the window is made as tall as the main area for the picture, then put back.
    """
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    with contextlib.suppress(Exception):  # a page that never settles (a failed test's) is shown as it is
        settle(page, 5_000)  # no half-loaded widget in the picture
    size = page.viewport_size
    tall = page.evaluate(
        "() => { const m = document.querySelector('[data-testid=\"stMain\"]'); return m ? m.scrollHeight : 0; }"
    )
    if size is not None and tall > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": min(int(tall), 16_000)})
        page.wait_for_timeout(250)  # grids are drawn on a canvas: let them paint the new rows
        try:
            page.screenshot(path=str(path), full_page=True)
        finally:
            page.set_viewport_size(size)
    else:
        page.screenshot(path=str(path), full_page=True)
    return path

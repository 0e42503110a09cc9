"""Fixtures of the browser tests: a real ``streamlit run app.py`` per test module on a temporary database,
one headless Chromium per test session, and fresh browser contexts (each a new reviewer) per test.

Chromium is required, not optional: when it is missing the tests fail and say how to install it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from app_server import CHROMIUM, browser, settle, shot
from e2e_ui import Server, on_loopback, start_server
from playwright.sync_api import expect

VIEWPORT = {"width": 1400, "height": 1000}
# Patient, for a loaded CI machine: each wait ends as soon as its condition holds.
expect.set_options(timeout=15_000)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app on an empty temporary database (no sample data), shared by the tests of one module."""
    yield from start_server(tmp_path_factory)


@pytest.fixture(scope="module")  # not longer: a running Playwright keeps an event loop that other tests must not see
def chrome() -> Iterator[Any]:
    """Debian's Chromium (or ``$EVALCORE_CHROMIUM``) driven by Playwright; a missing browser fails the tests."""
    hint = "install Debian's package (apt-get install chromium) or point EVALCORE_CHROMIUM at a Chromium binary"
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"Chromium is needed for the browser tests and {CHROMIUM} is not there: {hint}.", pytrace=False)
    with contextlib.ExitStack() as stack:
        try:
            launched = stack.enter_context(browser())
        except Exception as exc:
            pytest.fail(f"Chromium at {CHROMIUM} did not start ({exc}): {hint}.", pytrace=False)
        yield launched


#: Whether the test's own call failed, for its fixtures' teardown.
_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


@pytest.fixture
def new_page(chrome: Any, server: Server, request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """Open a page in a fresh browser context (its own cookies and Streamlit session: another reviewer).

    A failed test leaves a screenshot of each of its pages in tests/e2e/artifacts/; any traceback the
    server logged during the test fails it (the app shows a short message and logs the details), and so does
    any request the pages made to a host other than 127.0.0.1 (the app loads nothing from elsewhere: no font, no
    icon, no image). ``open_page.requests`` holds every URL the test's pages asked for, from their first load.
    """
    contexts: list[Any] = []
    log_start = len(server.log_text())
    requests: list[str] = []

    def open_page(path: str = "/", *, init: str | None = None) -> Any:
        """``init``: a script run in the page before any of its own (``add_init_script``)."""
        context = chrome.new_context(viewport=VIEWPORT)
        context.set_default_timeout(20_000)
        if init is not None:
            context.add_init_script(init)
        context.on("request", lambda r: requests.append(r.url))
        contexts.append(context)
        page = context.new_page()
        page.on("websocket", lambda ws: requests.append(ws.url))
        page.goto(server.url + path)
        settle(page)
        return page

    open_page.requests = requests  # type: ignore[attr-defined]
    yield open_page
    try:
        if request.node.stash.get(_FAILED, False):
            for n, context in enumerate(contexts):
                for m, page in enumerate(context.pages):
                    shot(page, f"failed-{request.node.name}-{n}-{m}")
    finally:
        for context in contexts:
            context.close()
    logged = server.log_text()[log_start:]
    if "Traceback" in logged:
        pytest.fail(f"the server logged an error during the test:\n{logged[-4000:]}", pytrace=False)
    elsewhere = sorted({url for url in requests if not on_loopback(url)})
    if elsewhere:
        pytest.fail(f"the pages asked a host other than 127.0.0.1 for {elsewhere}", pytrace=False)

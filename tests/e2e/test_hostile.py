"""Conversation text is data: a session full of HTML, scripts, remote images and ``javascript:`` links
is shown as text in the browser. Nothing runs, and nothing is fetched (a loopback listener counts
every request an image would make).
"""

from __future__ import annotations

import http.server
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import pytest
from app_server import settle, shot
from e2e_ui import Server, expander, open_expander, review_path, set_reviewer
from playwright.sync_api import expect

from evalcore.store import open_store

pytestmark = pytest.mark.browser

NewPage = Callable[..., Any]


class Listener:
    """An HTTP server on a free loopback port that counts the requests it gets."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests.append(self.path)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def listener() -> Iterator[Listener]:
    counting = Listener()
    try:
        yield counting
    finally:
        counting.close()


def hostile_session(port: int) -> dict[str, Any]:
    pixel = f"![p](http://127.0.0.1:{port}/pixel.png)"
    html = (
        f'<script>window.__xss=1</script> <img src=x onerror="window.__xss=2"> {pixel} '
        f'[click](javascript:window.__xss=3) <img src="http://127.0.0.1:{port}/html.png">'
    )
    call_id = f"`call-1` {pixel}"
    return {
        "schema_version": 1,
        "session_id": "hostile-1",
        "assistant_id": f"agent {pixel}",
        "context": f"System prompt {html}",
        "messages": [
            {"role": "system", "content": f"System prompt {html}"},
            {"role": "user", "content": f"Question {html}"},
            {
                "role": "assistant",
                "content": f"Let me look. {html}",
                "reasoning": f"Thinking {html}",
                "tool_calls": [{"id": call_id, "name": f"`{pixel}`", "args": {"q": html}}],
            },
            {"role": "tool", "tool_call_id": call_id, "name": f"`{pixel}`", "content": f"Result {html}"},
            {"role": "tool", "tool_call_id": "nobody", "name": f"`orphan` {pixel}", "content": f"Orphan {html}"},
            {"role": "assistant", "content": f"Final answer {html} done."},
        ],
        "reference": f"Reference answer {html} done.",
        "reference_tool_calls": [{"name": f"`{pixel}`", "args": {"q": html}}],
        "rubrics": {f"tone {pixel}": f"Polite {html}"},
        "retrieved_context": [{"doc_uri": f"`doc` {pixel}", "content": f"Chunk {html}"}],
        "tags": ["hostile"],
        "turns": [{"ground_truth": f"Turn answer {html}", "observation": html}],
    }


def test_hostile_content_is_shown_as_text_and_loads_nothing(
    server: Server, new_page: NewPage, listener: Listener
) -> None:

    [ref] = server.import_sessions("hostile", [hostile_session(listener.port)], "hostile.jsonl")
    with open_store(server.db) as store:
        pk = store.sessions.find_ref("hostile", ref)
        extra = html_of(listener)
        store.labels.add_comment(
            pk, f"A comment <script>window.__xss=5</script> {extra}", author=f"<b>mallory</b> {extra}"
        )

    page = new_page(review_path("hostile", ref))
    expect(page.locator('[data-testid="stMain"] h3').first).to_have_text(ref)
    set_reviewer(page, "Alice")
    for label in ("Reasoning", "System prompt", "Retrieved context"):
        open_expander(page, label)
    expect(expander(page, "Reasoning")).to_contain_text("Thinking <script>window.__xss=1</script>")
    shot(page, "review-hostile")
    expander(page, "Reasoning").locator("summary").click()  # opened, then collapsed again
    settle(page)
    for tab in ("Truth", "Calls & rubrics", "Weights", "Verdict", "Scores", "Diff", "History", "Comments"):
        page.get_by_role("tab", name=tab).click()
        settle(page)
        if tab == "Verdict":  # a rubric's description is shown as its help: hover the help icons
            tips = []
            expect(page.locator('[data-testid="stTabs"]').get_by_role("radiogroup")).to_have_count(2)  # pass, tone
            for icon in page.locator('[data-testid="stTabs"] [data-testid="stTooltipHoverTarget"]').all():
                if icon.is_visible():
                    icon.hover()
                    tip = page.locator('[data-testid="stTooltipContent"]')
                    expect(tip).to_be_visible()
                    page.wait_for_timeout(200)  # time for an image in it to load
                    tips.append(tip.inner_text())
            assert any("Polite <script>window.__xss=1</script>" in t for t in tips), tips
        if tab == "Diff":
            shot(page, "review-hostile-diff")
    page.wait_for_timeout(500)  # time for any image or script that would load

    assert listener.requests == [], f"the page fetched {listener.requests}"
    assert page.evaluate("typeof window.__xss") == "undefined"
    expect(page.get_by_text("Question <script>window.__xss=1</script>", exact=False)).to_be_visible()
    assert page.locator('[data-testid="stMain"] a[href^="javascript"]').count() == 0
    assert page.locator(f'img[src*="127.0.0.1:{listener.port}"]').count() == 0
    tool = page.locator('[data-testid="stChatMessage"]').filter(has_text="call-1").first
    expect(tool).to_contain_text(f"127.0.0.1:{listener.port}/pixel.png")  # the name and id, as text


def html_of(listener: Listener) -> str:
    return f'<img src="http://127.0.0.1:{listener.port}/comment.png"> ![c](http://127.0.0.1:{listener.port}/c.png)'


def test_a_hostile_dataset_name_is_shown_as_text(server: Server, new_page: NewPage, listener: Listener) -> None:
    name = f"evil <script>window.__xss=6</script> ![x](http://127.0.0.1:{listener.port}/dataset.png)"
    server.import_sessions(name, [hostile_session(listener.port)], "evil.jsonl")
    page = new_page(f"/?dataset={quote(name, safe='')}")
    expect(page.get_by_role("heading", name=re.compile(r"^Manage evil <script>"))).to_be_visible()
    page.get_by_role("button", name="Delete…").click()  # the confirmation names the dataset too
    expect(page.get_by_text("This deletes")).to_be_visible()
    settle(page)
    page.wait_for_timeout(500)  # time for any image or script that would load
    assert listener.requests == [], f"the page fetched {listener.requests}"
    assert page.evaluate("typeof window.__xss") == "undefined"

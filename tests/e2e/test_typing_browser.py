"""Typed text is never lost to a keyboard shortcut (headless Chromium, one-person mode): a status shortcut pressed in
a text box does nothing; leaving with text typed and not saved (Alt+N, or a click on Next) asks first, and staying
keeps the text; outside a text box the shortcuts work as ever."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from app_server import settle, shot
from e2e_ui import Server, alert, ragas_lines, review_path, set_reviewer, text_area
from playwright.sync_api import Page, expect

from evalcore.store import open_store

pytestmark = pytest.mark.browser


def _status(server: Server, ref: str, dataset: str = "typing") -> str:
    with open_store(server.db) as store:
        return store.sessions.get(store.sessions.find_ref(dataset, ref)).session.status


def _answering(dialogs: list[str], accept: bool) -> Any:
    def handle(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    return handle


def test_shortcuts_never_lose_typed_text(server: Server, new_page: Any) -> None:
    refs = server.import_sessions("typing", ragas_lines()[:3], "typing.jsonl")
    page: Page = new_page(review_path("typing", refs[0]))
    set_reviewer(page, "Ann")
    box = text_area(page, "Reference answer")
    box.fill("Typed and not saved yet")
    box.press("Alt+A")  # approve: not from inside a text box
    box.press("Alt+X")  # reject: neither
    settle(page)
    assert _status(server, refs[0]) == "todo"
    expect(box).to_have_value("Typed and not saved yet")

    dialogs: list[str] = []
    page.once("dialog", _answering(dialogs, accept=False))
    box.press("Alt+N")  # leave: asks; the answer "stay" keeps everything
    settle(page)
    assert dialogs == ["You have typed text that is not saved. Leave it?"]
    assert parse_qs(urlparse(page.url).query)["session"] == [refs[0]]  # still here
    expect(text_area(page, "Reference answer")).to_have_value("Typed and not saved yet")
    shot(page, "review-typing-kept")

    page.once("dialog", _answering(dialogs, accept=False))
    page.get_by_role("button", name="Next").first.click()  # a click on Next asks the same
    settle(page)
    assert len(dialogs) == 2
    expect(text_area(page, "Reference answer")).to_have_value("Typed and not saved yet")

    page.get_by_role("button", name="Save ground truth").click()  # saved: leaving asks nothing now
    settle(page)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("Alt+A")  # outside a text box a shortcut works as ever
    settle(page)
    assert _status(server, refs[0]) == "approved"
    with open_store(server.db) as store:
        assert store.sessions.get(store.sessions.find_ref("typing", refs[0])).session.reference == (
            "Typed and not saved yet"
        )
    page.keyboard.press("Alt+N")
    settle(page)
    assert len(dialogs) == 2  # nothing typed: no question
    expect(page.get_by_text("2 of 3 in the Sessions filter")).to_be_visible()


def test_a_draft_survives_leaving_a_reload_and_a_new_tab(server: Server, new_page: Any) -> None:
    refs = server.import_sessions("drafts", ragas_lines()[:3], "drafts.jsonl")
    page: Page = new_page(review_path("drafts", refs[0]))
    set_reviewer(page, "Ann")
    text_area(page, "Goal").fill("Rebook the cancelled flight")
    page.wait_for_timeout(1500)  # (sent 0.7 s after the last key)
    settle(page)
    assert server.rows("SELECT field, turn, value FROM drafts") == [("goal", -1, '"Rebook the cancelled flight"')]

    dialogs: list[str] = []
    page.on("dialog", _answering(dialogs, accept=True))
    text_area(page, "Goal").press("Alt+N")  # typed and not saved: asked, and left
    settle(page)
    expect(page.get_by_text("2 of 3 in the Sessions filter")).to_be_visible()
    page.keyboard.press("Alt+P")
    settle(page)
    expect(text_area(page, "Goal")).to_have_value("Rebook the cancelled flight")  # back: the draft is there

    page.reload()
    settle(page)
    expect(text_area(page, "Goal")).to_have_value("Rebook the cancelled flight")
    tab = page.context.new_page()
    tab.goto(server.url + review_path("drafts", refs[0]))
    settle(tab)
    expect(text_area(tab, "Goal")).to_have_value("Rebook the cancelled flight")
    expect(tab.get_by_text("Your unsaved text is back in: Goal")).to_be_visible()
    shot(tab, "review-draft-restored")

    tab.get_by_role("button", name="Save ground truth").click()
    settle(tab)
    assert server.rows("SELECT count(*) FROM drafts") == [(0,)]  # saved: the draft is done with
    with open_store(server.db) as store:
        assert store.sessions.get(store.sessions.find_ref("drafts", refs[0])).session.goal == (
            "Rebook the cancelled flight"
        )


def test_ctrl_enter_in_a_text_area_saves_its_form_and_never_approves(server: Server, new_page: Any) -> None:
    """Streamlit's hint under a text area of a form says "Press Ctrl+Enter to submit form"; the page's Approve & next
    is Alt+Enter, which does nothing in a text box: typing never approves and leaves by accident."""
    refs = server.import_sessions("keys", ragas_lines()[:3], "keys.jsonl")
    page: Page = new_page(review_path("keys", refs[0]))
    set_reviewer(page, "Ann")
    box = text_area(page, "Reference answer")
    box.fill("Typed, then Ctrl+Enter")
    expect(page.get_by_text("Press Ctrl+Enter to submit form")).to_be_visible()
    box.press("Control+Enter")  # the form's own key: saved, and still here
    expect(alert(page, "Ground truth saved.")).to_be_visible()
    with open_store(server.db) as store:
        saved = store.sessions.get(store.sessions.find_ref("keys", refs[0])).session
    assert (saved.status, saved.reference) == ("todo", "Typed, then Ctrl+Enter")
    assert parse_qs(urlparse(page.url).query)["session"] == [refs[0]]
    expect(page.get_by_role("button", name="Approve & next")).to_contain_text("Alt + Enter")
    shot(page, "review-ctrl-enter-saved")

    text_area(page, "Goal").fill("Typed, then Alt+Enter")
    text_area(page, "Goal").press("Alt+Enter")  # approve & next: not from inside a text box
    settle(page)
    assert _status(server, refs[0], "keys") == "todo"
    assert parse_qs(urlparse(page.url).query)["session"] == [refs[0]]
    expect(text_area(page, "Goal")).to_have_value("Typed, then Alt+Enter")

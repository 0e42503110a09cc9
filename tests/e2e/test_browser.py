"""A reviewer's day in headless Chromium against a real server: upload a file, open a session, edit its
ground truth in every kind of editor, approve with the keyboard, reload, meet another reviewer's change,
and restore an earlier version. What AppTest cannot do: real clicks, typing, keys, canvas grids, reloads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from app_server import settle, shot
from dbutil import as_user
from e2e_ui import (
    Server,
    alert,
    cell,
    cell_point,
    choose,
    edit_cell,
    grid_with,
    heading,
    open_expander,
    ragas_lines,
    review_path,
    set_reviewer,
    text_area,
)
from playwright.sync_api import expect

from evalcore.store import open_store
from evalcore.views.review.tables import session_label

pytestmark = pytest.mark.browser

NewPage = Callable[..., Any]

# Records every text a progress bar shows, however briefly: the import of a test file is quick.
WATCH_PROGRESS = """() => {
    window.__progress = [];
    const look = () => document.querySelectorAll('[data-testid="stProgress"]').forEach(p => {
        if (!window.__progress.includes(p.innerText)) window.__progress.push(p.innerText);
    });
    new MutationObserver(look).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def session_param(page: Any) -> str | None:
    values = parse_qs(urlparse(page.url).query).get("session")
    return values[0] if values else None


def dataset_count(server: Server, dataset: str) -> int:
    rows = server.rows(
        "SELECT count(*) FROM sessions JOIN datasets ON datasets.id = sessions.dataset_id WHERE datasets.name = ?",
        dataset,
    )
    return int(rows[0][0])


def edits_of(server: Server, dataset: str, key: str) -> list[tuple[Any, ...]]:
    """(field, turn, new value, author, reason) of every edit of one session, oldest first."""
    return server.rows(
        "SELECT e.field, e.turn, e.new, e.author, e.reason FROM edits e JOIN sessions s ON s.id = e.session_pk"
        " JOIN datasets d ON d.id = s.dataset_id WHERE d.name = ? AND s.key = ? ORDER BY e.id",
        dataset,
        key,
    )


def test_upload_with_a_broken_line(server: Server, new_page: NewPage) -> None:
    good = ragas_lines()
    # Big enough that the import runs for a while (its progress shows: 3,000 lines once ended before the page drew
    # its bar, on a loaded machine), with one broken line: line 3.
    lines = [good[n % len(good)] for n in range(12_000)]
    lines.insert(2, '{"user_input": [{"content": "cut off here", "type": "human"}')
    upload = server.folder / "support-chats.jsonl"
    upload.write_text("\n".join(lines) + "\n")

    page = new_page("/")
    expect(heading(page)).to_have_text("Datasets")
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(upload)
    expect(page.get_by_role("button", name="Remove support-chats.jsonl")).to_be_visible()  # uploaded
    settle(page)
    choose(page, "Into dataset", "+ new dataset")
    name = page.get_by_role("textbox", name="New dataset's name")
    expect(name).to_have_value("support-chats")  # the file's name, offered

    page.evaluate(WATCH_PROGRESS)
    page.get_by_role("button", name="Import", exact=True).click()
    problems = page.locator('[data-testid="stExpander"]').filter(has_text=re.compile(r"1 problems?, by line"))
    expect(problems).to_be_visible(timeout=60_000)
    expect(alert(page, re.compile(r"12,?000 sessions stored \(12,?000 new"))).to_be_visible()
    expect(page.locator('[data-testid="stProgress"]')).to_have_count(0)
    progress = page.evaluate("window.__progress")
    assert any("support-chats.jsonl" in text and "bytes read" in text for text in progress), progress
    listed = grid_with(page, "problem")
    expect(cell(listed, 0, 0)).to_have_text("3")  # the line number
    expect(cell(listed, 1, 0)).to_have_text("error")
    expect(cell(listed, 2, 0)).to_contain_text("not valid JSON at line 3, column ")  # the file's line, plainly
    # The new dataset is the current one now, in the sidebar and in the address.
    expect(page.get_by_role("combobox", name="Dataset", exact=True)).to_have_value("support-chats")
    assert parse_qs(urlparse(page.url).query).get("dataset") == ["support-chats"]
    shot(page, "datasets-after-upload")

    page.get_by_role("link", name="Sessions").click()
    expect(heading(page)).to_have_text("Sessions")
    expect(page.get_by_text(re.compile(r"of 12,000 sessions"))).to_be_visible()
    assert dataset_count(server, "support-chats") == 12_000
    keys = {k for (k,) in server.rows("SELECT key FROM sessions WHERE key LIKE 'pos:support-chats.jsonl:%'")}
    assert len(keys) == 12_000 and "pos:support-chats.jsonl:2" not in keys  # the broken line (index 2) is not in


def test_open_a_session_from_the_sessions_table(server: Server, new_page: NewPage) -> None:
    refs = server.import_sessions("open-me", ragas_lines(), "open-me.jsonl")
    page = new_page("/sessions?dataset=open-me")
    table = grid_with(page, "first question")
    expect(cell(table, 2, 1)).to_have_text(session_label(refs[1]))  # column 0 ticks rows, 1 is the status, 2 the id
    shot(page, "sessions-small-dataset")

    table.click(position=cell_point(1, 150))  # a click on a cell opens its session
    page.wait_for_url(re.compile(r"/review\?.*session="))
    expect(heading(page)).to_have_text(session_label(refs[1]))
    assert session_param(page) == refs[1]

    # The other way: tick a row, then the button that opens it.
    page.get_by_role("link", name="Sessions").click()
    table = grid_with(page, "first question")
    expect(cell(table, 2, 2)).to_have_text(session_label(refs[2]))
    table.click(position=cell_point(2, 15))
    button = page.get_by_role("button", name=f"Open {session_label(refs[2])} in Review")
    expect(button).to_be_visible()
    button.click()
    expect(heading(page)).to_have_text(session_label(refs[2]))
    assert session_param(page) == refs[2]


def test_the_bulk_panel_stays_open_while_rows_are_ticked(server: Server, new_page: NewPage) -> None:
    """A labeler's finding: "Change many sessions at once" closed at every tick (the button opening one ticked row
    came and went above it, and the panel was drawn anew)."""
    refs = server.import_sessions("tick", ragas_lines(), "tick.jsonl")
    page = new_page("/sessions?dataset=tick")
    table = grid_with(page, "first question")
    expect(cell(table, 2, 0)).to_have_text(session_label(refs[0]))
    panel = page.locator("details").filter(has_text="Change many sessions at once")
    panel.get_by_text("Change many sessions at once").click()
    expect(panel.get_by_text("Which sessions")).to_be_visible()
    ticked = panel.get_by_role("radio", name="the ticked rows")
    for row, said in ((0, "Apply to 1 session"), (2, "Apply to 2 sessions"), (3, "Apply to 3 sessions")):
        table.click(position=cell_point(row, 15))
        expect(panel.get_by_role("button", name=said, exact=True)).to_be_visible()
        settle(page)
        assert panel.evaluate("e => e.open"), f"the panel closed after ticking row {row}"
        expect(ticked).to_be_checked()  # (the choice stays: its words did not change)
    shot(page, "sessions-bulk-ticked")


def test_review_shows_tool_calls_with_arguments_and_results(server: Server, new_page: NewPage) -> None:
    refs = server.import_sessions("calls", ragas_lines()[:1], "calls.jsonl")
    page = new_page(review_path("calls", refs[0]))
    expect(heading(page)).to_have_text(session_label(refs[0]))
    call = page.locator('[data-testid="stChatMessage"]').filter(has_text="get_reservation").first
    expect(call).to_contain_text('"confirmation_code": "QX7P2M"')  # the arguments
    expect(call).to_contain_text("result")
    expect(call).to_contain_text('"passenger": "Dana Whitfield"')  # its result, under it
    rebook = page.locator('[data-testid="stChatMessage"]').filter(has_text="rebook_flight").first
    expect(rebook).to_contain_text('"seat_preference": "aisle"')
    expect(rebook).to_contain_text('"seat": "14C"')


def test_edit_approve_with_the_keyboard_and_reload(server: Server, new_page: NewPage) -> None:
    refs = server.import_sessions("edit", ragas_lines(), "edit.jsonl")
    page = new_page(review_path("edit", refs[0]))
    expect(heading(page)).to_have_text(session_label(refs[0]))
    expect(alert(page, "Enter your name in the sidebar")).to_be_visible()
    set_reviewer(page, "Alice")
    expect(alert(page, "Enter your name in the sidebar")).to_have_count(0)

    # A reference tool call, in the data editor (a canvas grid) of its own tab: double-click a cell, type,
    # Enter, save.
    page.get_by_role("tab", name="Calls & rubrics").click()
    settle(page)
    calls = grid_with(page, "arguments (JSON object)")
    expect(cell(calls, 1, 0)).to_have_text("get_reservation")
    edit_cell(page, calls, 0, 60, "lookup_reservation")
    expect(cell(calls, 1, 0)).to_have_text("lookup_reservation")
    page.get_by_role("button", name="Save calls and rubrics").click()
    expect(alert(page, "Calls and rubrics saved.")).to_be_visible()
    settle(page)

    # The reference answer, in the Truth tab's form.
    page.get_by_role("tab", name="Truth").click()
    settle(page)
    reference = "Rebooked free on SK422 at 11:40, aisle seat; the bag carries over. (edited in the browser)"
    text_area(page, "Reference answer").fill(reference)
    page.get_by_role("button", name="Save ground truth").click()
    expect(alert(page, "Ground truth saved.")).to_be_visible()
    settle(page)

    # A turn's weight: the effective weight follows what is typed, before anything is saved.
    editor = open_expander(page, "Ground truth for turn 1")
    sentence = editor.locator('[data-testid="stCaptionContainer"]').filter(has_text="Effective weight")
    expect(sentence).to_contain_text("No weights set")
    weight = editor.get_by_role("spinbutton", name="Weight")
    weight.fill("0.5")
    weight.press("Enter")
    expect(sentence).to_contain_text("Effective weight 0.5.")
    expect(sentence).to_contain_text("the remaining 0.5 is split over the 2 other turns")
    assert not [r for r in edits_of(server, "edit", refs[0]) if r[0] == "weight"]  # typed, not saved yet
    expect(editor.locator("details")).to_have_attribute("open", "")  # the editor stays open while typing
    shot(page, "review-turn-weight-typed")
    editor.get_by_role("button", name="Save turn").click()
    expect(alert(page, "Turn 1 saved.")).to_be_visible()
    settle(page)

    # Approve and go on with the keyboard, the focus on the page, not in a text box.
    heading(page).click()
    assert page.evaluate("document.activeElement.tagName") not in ("INPUT", "TEXTAREA")
    page.keyboard.press("Alt+Enter")
    expect(heading(page)).to_have_text(session_label(refs[1]))
    assert session_param(page) == refs[1]

    # Back to the first session and reload the browser: every edit is there.
    page.goto(server.url + review_path("edit", refs[0]))
    settle(page)
    page.reload()
    settle(page)
    expect(heading(page)).to_have_text(session_label(refs[0]))
    expect(page.locator('[data-testid="stCaptionContainer"]').filter(has_text="version")).to_contain_text(
        "approved by Alice"
    )
    expect(text_area(page, "Reference answer")).to_have_value(reference)
    page.get_by_role("tab", name="Calls & rubrics").click()
    settle(page)
    expect(cell(grid_with(page, "arguments (JSON object)"), 1, 0)).to_have_text("lookup_reservation")
    editor = open_expander(page, "Ground truth for turn 1 · effective weight 0.5")
    expect(editor.get_by_role("spinbutton", name="Weight")).to_have_value("0.500")

    # And in the database, each with its author.
    status = server.rows("SELECT status, status_by FROM sessions WHERE key = ?", refs[0])
    assert status == [("approved", "Alice")]
    edits = edits_of(server, "edit", refs[0])
    assert {(field, turn) for field, turn, *_ in edits} == {
        ("reference", None),
        ("weight", 0),
        ("reference_tool_calls", None),
        ("status", None),
    }
    assert {author for _, _, _, author, _ in edits} == {"Alice"}
    saved = {field: json.loads(new) for field, _, new, _, _ in edits}
    assert saved["reference"] == reference
    assert saved["weight"] == 0.5
    names = [c["name"] for c in saved["reference_tool_calls"]]
    assert names == ["lookup_reservation", "search_flights", "rebook_flight"]
    assert saved["reference_tool_calls"][0]["args"] == {"confirmation_code": "QX7P2M"}


def test_a_second_tab_saving_a_stale_form_meets_a_conflict(server: Server, new_page: NewPage) -> None:
    refs = server.import_sessions("conflict", ragas_lines()[:1], "conflict.jsonl")
    alice = new_page(review_path("conflict", refs[0]))
    set_reviewer(alice, "Alice")
    bob = new_page(review_path("conflict", refs[0]))  # another browser on the same session, opened before the save
    # (two people at once: tests/e2e/test_signin_browser.py)

    text_area(alice, "Reference answer").fill("Alice's reference.")
    alice.get_by_role("button", name="Save ground truth").click()
    expect(alert(alice, "Ground truth saved.")).to_be_visible()

    text_area(bob, "Reference answer").fill("Bob's reference.")  # on the version Bob opened
    bob.get_by_role("button", name="Save ground truth").click()
    refused = alert(bob, "Ground truth was not saved:")
    expect(refused).to_be_visible()
    # In the page's words (both tabs are this machine's one person, Alice: the other one is "you, in another tab"),
    # and their value beside it.
    expect(refused).to_contain_text(
        f"you (in another tab) changed Reference answer in {session_label(refs[0])} since you opened it"
    )
    expect(refused).not_to_contain_text("reload")
    box = bob.locator(".st-key-conflict_box")
    expect(box.get_by_text("Reference answer now, as you (in another tab) saved it at")).to_be_visible()
    expect(box.locator('[data-testid="stCode"]')).to_contain_text("Alice's reference.")
    shot(bob, "review-conflict")
    assert [(f, a) for f, _, _, a, _ in edits_of(server, "conflict", refs[0])] == [("reference", "Alice")]

    bob.get_by_role("button", name="Take theirs").click()
    expect(text_area(bob, "Reference answer")).to_have_value("Alice's reference.")
    expect(refused).to_have_count(0)


def test_restore_an_earlier_version_from_history(server: Server, new_page: NewPage) -> None:

    refs = server.import_sessions("restore", ragas_lines()[:1], "restore.jsonl")
    with open_store(server.db) as store:
        pk = store.sessions.find_ref("restore", refs[0])
        version = as_user(store, "Carol").sessions.save(
            pk, {"reference": "First draft."}, base_version=store.sessions.get(pk).version
        )
        as_user(store, "Carol").sessions.save(pk, {"reference": "Second draft."}, base_version=version)
        first, second = (e.id for e in store.sessions.history(pk))

    page = new_page(review_path("restore", refs[0]))
    set_reviewer(page, "Dave")
    expect(text_area(page, "Reference answer")).to_have_value("Second draft.")
    page.get_by_role("tab", name="History").click()
    history = grid_with(page, "field")  # column 0 ticks a row, 1 is the edit, 2 its time, 3 who, 4 the field
    expect(cell(history, 1, 0)).to_have_text(str(second))  # newest first
    expect(cell(history, 1, 1)).to_have_text(str(first))
    expect(cell(history, 3, 0)).to_have_text("Carol")
    expect(cell(history, 4, 0)).to_have_text("Reference answer")
    history.click(position=cell_point(1, 15))  # the older edit, read in full below the table
    detail = page.locator(".st-key-history_detail")
    expect(detail).to_contain_text(f"#{first} · Reference answer · by Carol")
    expect(detail.locator('[data-testid="stCode"]').first).to_have_text("First draft.")
    shot(page, "review-history-detail")
    page.get_by_role("combobox", name="Restore the session to how it was after", exact=True).click()
    page.get_by_role("option", name=re.compile(rf"^#{first} · Reference answer · by Carol")).click()
    settle(page)
    page.get_by_role("button", name="Restore").click()
    expect(alert(page, f"Restored to the state after edit #{first}.")).to_be_visible()
    expect(cell(grid_with(page, "field"), 3, 0)).to_have_text("Dave")  # the restore is an edit too
    page.get_by_role("tab", name="Truth").click()
    expect(text_area(page, "Reference answer")).to_have_value("First draft.")

    last = edits_of(server, "restore", refs[0])[-1]
    assert last[0] == "reference" and json.loads(last[2]) == "First draft." and last[3] == "Dave"
    assert last[4] == f"restored to the state after edit #{first}"

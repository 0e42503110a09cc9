"""Review in Chromium at 1400 px (the labeler's findings, issue 24 item 7): a deep link with ``turn=`` shows that
turn on screen, not the page of turns with the turn far below; the transcript has the larger part of the width."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from e2e_ui import Server, heading, review_path
from playwright.sync_api import expect

from evalcore.views.review.tables import session_label

pytestmark = pytest.mark.browser

NewPage = Callable[..., Any]


def _long_session() -> dict[str, Any]:
    """Eight turns, each answer long enough that a page of four turns is several screens tall."""
    messages: list[dict[str, Any]] = []
    for i in range(1, 9):
        messages.append({"role": "user", "content": f"Question number {i}: where is my parcel?"})
        answer = " ".join(f"Line {j} of answer {i}: the parcel is on its way to the depot." for j in range(40))
        messages.append({"role": "assistant", "content": answer})
    return {"schema_version": 1, "session_id": "long-talk", "assistant_id": "bot", "messages": messages}


def _in_viewport(page: Any, selector: str) -> bool:
    top = page.evaluate(f"() => document.querySelector({selector!r}).getBoundingClientRect().top")
    return 0 <= float(top) < float(page.viewport_size["height"])


def test_a_deep_link_to_a_turn_scrolls_to_it(server: Server, new_page: NewPage) -> None:
    (ref,) = server.import_sessions("long", [_long_session()], "long.jsonl")
    page = new_page(review_path("long", ref) + "&turn=8")
    expect(heading(page)).to_have_text(session_label(ref))
    turn = page.locator(".st-key-turn-7")  # turn 8 (0-based keys), the last of the second page of four
    expect(turn).to_contain_text("Turn 8 of 8")
    expect(turn).to_be_in_viewport()
    page.wait_for_timeout(800)  # the second scroll, once the page is drawn: it is still there
    assert _in_viewport(page, ".st-key-turn-7")
    expect(page.locator(".st-key-turn-3")).to_have_count(0)  # turn 4 is on the first page, not shown

    # Without a turn, the page opens at its top (nothing scrolls on its own).
    other = new_page(review_path("long", ref))
    expect(heading(other)).to_have_text(session_label(ref))
    expect(other.locator(".st-key-turn-0")).to_contain_text("Turn 1 of 8")
    other.wait_for_timeout(800)
    expect(heading(other)).to_be_in_viewport()
    expect(other.locator(".st-key-turn-3")).not_to_be_in_viewport()


def test_the_transcript_has_the_larger_part_of_the_width(server: Server, new_page: NewPage) -> None:
    (ref,) = server.import_sessions("wide", [_long_session()], "wide.jsonl")
    page = new_page(review_path("wide", ref))
    expect(page.locator(".st-key-turn-0")).to_be_visible()
    widths = page.evaluate(
        """() => {
            const turn = document.querySelector('.st-key-turn-0');
            const column = turn.closest('[data-testid="stColumn"]');
            const row = column.parentElement;
            const columns = [...row.querySelectorAll(':scope > [data-testid="stColumn"]')];
            return columns.map(c => c.getBoundingClientRect().width);
        }"""
    )
    transcript, panel = widths
    assert transcript > 1.3 * panel, widths  # 7 : 5 (it was 5 : 6)
    assert transcript > 570, widths  # at 1400 px with the sidebar open (it was about 410)

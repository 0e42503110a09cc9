"""What the Sessions page says when its filters match no session (``evalcore.views.sessions.no_match``)."""

from __future__ import annotations

from evalcore.store.queries import SessionFilter
from evalcore.views.sessions import no_match


def test_each_case_says_what_was_asked_and_what_to_change() -> None:
    assert no_match(SessionFilter()) == "This dataset has no session yet: import some on the Datasets page."
    assert no_match(SessionFilter(search="refund voucher")) == (
        "No session has every word of “refund voucher” (the system prompt is searched only when ticked). "
        "Try fewer words, or word* for a word's beginning."
    )
    assert no_match(SessionFilter(search="policy", search_system_prompt=True)) == (
        "No session has every word of “policy”. Try fewer words, or word* for a word's beginning."
    )
    assert no_match(SessionFilter(search="refund", status=["approved"])) == (
        "No session matches the search “refund” and the filters together: clear a filter or change the words."
    )
    assert no_match(SessionFilter(status=["rejected"], tags=["vip"])) == (
        "No session matches these filters: clear one of them to see more."
    )
    assert no_match(SessionFilter(search="   ", status=["rejected"])) == (  # (a blank search looks for nothing)
        "No session matches these filters: clear one of them to see more."
    )

"""Which ground-truth editor a draft belongs to: the editors' widget keys on Review, and the fields they edit.

The page keys each text editor ``s-NAME-PK-EPOCH`` (the session's fields) or ``t-NAME-TURN-PK-EPOCH`` (a turn's);
what the browser sends while someone types names the widget, and ``draft_target`` turns it into the field (and turn)
the draft is kept for (``store.drafts``), or None for anything else.
"""

from __future__ import annotations

__all__ = ["SESSION_DRAFTS", "TURN_DRAFTS", "draft_target"]

#: The session's text editors: widget name -> field.
SESSION_DRAFTS = {
    "reference": "reference",
    "goal": "goal",
    "expected_facts": "expected_facts",
    "reference_topics": "reference_topics",
    "guidelines": "guidelines",
    "erc": "expected_retrieved_context",
}
#: A turn's text editors: widget name -> field.
TURN_DRAFTS = {"gt": "ground_truth", "obs": "observation", "etu": "expected_tool_usage", "qa": "qa_id"}


def draft_target(widget: str, suffix: str) -> tuple[str, int | None] | None:
    """The field (and turn; None: the session's) that the editor keyed ``widget`` edits, when it ends with
    ``-suffix`` (the page's ``PK-EPOCH``); None when it is not a ground-truth text editor of this page."""
    if not isinstance(widget, str) or not widget.endswith("-" + suffix):
        return None
    stem = widget[: -len(suffix) - 1]
    kind, _, rest = stem.partition("-")
    if kind == "s" and rest in SESSION_DRAFTS:
        return SESSION_DRAFTS[rest], None
    if kind == "t":
        name, _, turn = rest.rpartition("-")
        if name in TURN_DRAFTS and turn.isdigit() and turn.isascii():
            return TURN_DRAFTS[name], int(turn)
    return None

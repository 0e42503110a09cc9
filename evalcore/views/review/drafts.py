"""Which ground-truth editor a draft belongs to: the editors' widget keys on Review, and the fields they edit.

The page keys each text editor ``s-NAME-PK-EPOCH`` (the session's fields) or ``t-NAME-TURN-PK-EPOCH`` (a turn's);
what the browser sends while someone types names the widget, and ``draft_target`` turns it into the field (and turn)
the draft is kept for (``store.drafts``), or None for anything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalcore.store.drafts import Draft

__all__ = ["SESSION_DRAFTS", "TURN_DRAFTS", "DraftsView", "draft_target", "is_saved_text"]

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


def is_saved_text(typed: Any, saved: Any) -> bool:
    """Whether text sent from an editor is what the field already holds (``saved``: its value in the form's shape,
    ``form_values``): no draft to keep. The browser sends what was typed 0.7 s after the last key, so the text of a
    form saved within that time arrives after its save: kept as a draft, it would come back as "unsaved" text (in
    another tab of the same person: beside their own saved value)."""
    return str(typed if typed is not None else "") == str(saved if saved is not None else "")


@dataclass(frozen=True)
class DraftsView:
    """A person's drafts on one session, as Review lays them into its editors: those begun on the version the forms
    show (``version``) go back into their boxes; older ones are shown beside the form to copy."""

    drafts: list[Draft]
    version: int

    def fresh(self, turn: int | None) -> dict[str, Any]:
        """The drafts of ``turn``'s editors (None: the session's) begun on the forms' version: field -> text."""
        return {d.field: d.value for d in self.drafts if d.turn == turn and d.base_version == self.version}

    def stale(self, turn: int | None, current: dict[str, Any] | None = None) -> list[Draft]:
        """The drafts of ``turn``'s editors begun on another version (but those whose text is the field's value in
        ``current``, the form's values: nothing unsaved in them)."""
        now = current or {}
        return [d for d in self.drafts if d.turn == turn and d.base_version != self.version
                and not (d.field in now and is_saved_text(d.value, now[d.field]))]  # fmt: skip

    def fresh_keys(self) -> set[tuple[str, int | None]]:
        """(field, turn) of every draft begun on the forms' version."""
        return {(d.field, d.turn) for d in self.drafts if d.base_version == self.version}

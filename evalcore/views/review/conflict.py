"""A refused save on Review, said in the page's own words: which fields (as the page labels them: "Reference
answer", "Turn 3 · Observation"), who changed them, and the value they saved.

The store's ``ConflictError`` names fields by their keys (``reference``, ``turns[2].observation``, 0-based) and the
session by its id; the page reads the edits made since its forms' version (``Sessions.history``) and shows them
through :func:`conflict_view`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from evalcore.store.records import Edit
from evalcore.views.review.fields import SESSION_EDITORS, TURN_EDITORS

__all__ = ["ConflictView", "TheirValue", "conflict_view", "field_label", "value_text"]

_SESSION_LABELS = {spec.name: spec.label for spec in SESSION_EDITORS} | {"status": "Status"}
_TURN_LABELS = {spec.name: spec.label for spec in TURN_EDITORS}
_TURN_PATH = re.compile(r"turns\[(\d+)\]\.(\w+)", re.ASCII)

#: The most values a conflict shows (a restore can change every field at once); the rest are counted.
MOST_VALUES = 8


def field_label(field: str, turn: int | None = None) -> str:
    """A field as the Review page labels it: ``reference`` -> ``Reference answer``; ``observation`` of turn 2
    (0-based) -> ``Turn 3 · Observation``. A path as the store writes it (``turns[2].observation``) is read too; a
    name the page has no label for is given as it is."""
    if turn is None and (path := _TURN_PATH.fullmatch(field)):
        turn, field = int(path.group(1)), path.group(2)
    if turn is None:
        return _SESSION_LABELS.get(field, field)
    return f"Turn {turn + 1} · {_TURN_LABELS.get(field, field)}"


def value_text(value: Any) -> str:
    """A stored value as a person reads it: text as it is, anything else as indented JSON, nothing as ``(empty)``."""
    if value is None or value == "" or value == []:
        return "(empty)"
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


@dataclass(frozen=True)
class TheirValue:
    """A field someone else changed since the forms' version, and the value it has now (plain text)."""

    label: str
    author: str
    at: str
    value: str


@dataclass(frozen=True)
class ConflictView:
    """A refused save, as the page says it: ``message`` (plain text, names quoted as they are), the values the
    others saved (latest per field, at most ``MOST_VALUES``), and how many more fields they changed."""

    message: str
    values: list[TheirValue]
    more: int = 0


def _who(authors: list[str], me: str | None) -> str:
    names = ["you (in another tab)" if a == me else a for a in dict.fromkeys(authors)]
    if not names:
        return "someone"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def conflict_view(what: str, session: str, base_version: int, edits: list[Edit], me: str | None) -> ConflictView:
    """Why ``what`` ("Ground truth", "Turn 3") was not saved: the ``edits`` of ``session`` (its label, as the page's
    heading shows it) made after ``base_version`` (the version the forms show), by whom (``me``: the person at this
    browser, said as "you, in another tab"), and each changed field's value now."""
    since = [e for e in edits if e.version > base_version]
    latest: dict[tuple[int | None, str], Edit] = {}
    for edit in since:
        latest.pop((edit.turn, edit.field), None)  # (the latest last: fields in the order last changed)
        latest[(edit.turn, edit.field)] = edit
    labels = [field_label(e.field, e.turn) for e in latest.values()]
    who = _who([e.author for e in since], me)
    changed = f"changed {', '.join(labels)}" if labels else "changed it"
    now = max((e.version for e in since), default=base_version)
    message = (
        f"{what} was not saved: {who} {changed} in {session} since you opened it "
        f"(your forms show version {base_version}; it is at version {now} now). Nothing of yours was saved."
    )
    shown = list(latest.values())[-MOST_VALUES:]
    values = [
        TheirValue(field_label(e.field, e.turn), _who([e.author], me), e.at[:16].replace("T", " "), value_text(e.new))
        for e in shown
    ]
    return ConflictView(message, values, len(latest) - len(shown))

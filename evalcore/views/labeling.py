"""What the Labeling page shows: a dataset's questions as a table, a question as typed in the page's form, its queues
with where each stands, and each person's part."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from evalcore.errors import UsageError
from evalcore.store.questions import KINDS, LEVELS, Question, QuestionDef
from evalcore.store.queues import Queue, QueueProgress
from evalcore.views.table import column
from evalcore.views.text import visible

__all__ = [
    "KIND_NOTES",
    "QueueRow",
    "QuestionRow",
    "ReviewerRow",
    "question_def",
    "question_form",
    "question_rows",
    "queue_rows",
    "reviewer_rows",
]

#: What each kind of question asks, for the form's choices.
KIND_NOTES: dict[str, str] = {
    "choice": "one of the options",
    "multi": "any of the options",
    "rating": "a point of a scale",
    "number": "a number",
    "text": "free text",
}


@dataclass(frozen=True)
class QuestionRow:
    name: str = column("Question")
    kind: str = column("Kind")
    level: str = column("Asked of")
    asks: str = column("Options / scale")
    required: str = column("Required")
    version: int = column("Version")
    state: str = column("State")


def _asks(q: Question) -> str:
    spec = q.spec
    if q.kind in ("choice", "multi"):
        return " | ".join(spec["options"])
    if q.kind == "rating":
        labels = ", ".join(f"{p} {label}" for p, label in spec.get("labels", {}).items())
        return f"{spec['min']}–{spec['max']}" + (f" ({labels})" if labels else "")
    if q.kind == "number":
        low, high = spec.get("min"), spec.get("max")
        return "any" if low is None and high is None else f"{'' if low is None else low}…{'' if high is None else high}"
    return f"up to {spec['max_length']:,} characters"


def question_rows(questions: list[Question]) -> list[QuestionRow]:
    """The dataset's questions (retired ones too) as table rows, in their order."""
    return [
        QuestionRow(visible(q.name), q.kind, "each turn" if q.level == "turn" else "the session", visible(_asks(q)),
                    "yes" if q.required else "", q.version, "retired" if q.retired else "asked")
        for q in questions
    ]  # fmt: skip


def _bound(text: str, what: str) -> float | None:
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise UsageError(f"{what}: give a number (got {text!r})") from None
    if not math.isfinite(value):
        raise UsageError(f"{what}: give a finite number (got {text!r})")
    return value


def question_def(form: dict[str, Any]) -> QuestionDef:
    """A question as typed in the page's form: ``name``, ``kind``, ``level``, ``help``, ``required``, ``options``
    (one per line, or separated by commas), ``min`` and ``max`` (text), ``labels`` (``1 = poor`` per line). A
    ``UsageError`` names what is wrong; ``QuestionDef`` checks the rest when it is saved."""
    kind, level = form.get("kind"), form.get("level", "session")
    if kind not in KINDS:
        raise UsageError(f"choose a kind: {', '.join(KINDS)}")
    if level not in LEVELS:
        raise UsageError(f"choose what it is asked of: {', '.join(LEVELS)}")
    raw = str(form.get("options") or "")
    options = tuple(o.strip() for o in raw.replace(",", "\n").splitlines() if o.strip())
    labels: dict[str, str] = {}
    for line in str(form.get("labels") or "").splitlines():
        if not line.strip():
            continue
        point, _, label = line.partition("=")
        if not label.strip():
            raise UsageError(f"a label is written as 'POINT = LABEL' (got {line.strip()!r})")
        labels[point.strip()] = label.strip()
    return QuestionDef(
        name=str(form.get("name") or ""),
        kind=kind,
        level=level,
        help=str(form.get("help") or ""),
        required=bool(form.get("required")),
        options=options,
        min=_bound(str(form.get("min") or ""), "the lowest value"),
        max=_bound(str(form.get("max") or ""), "the highest value"),
        labels=labels,
    )


def question_form(q: Question) -> dict[str, Any]:
    """The page's form filled with question ``q`` (``question_def`` reads it back)."""
    spec = q.spec
    return {
        "name": q.name, "kind": q.kind, "level": q.level, "help": q.help, "required": q.required,
        "options": "\n".join(spec.get("options", [])),
        "min": "" if spec.get("min") is None else f"{spec['min']:g}",
        "max": "" if spec.get("max") is None else f"{spec['max']:g}",
        "labels": "\n".join(f"{p} = {label}" for p, label in spec.get("labels", {}).items()),
    }  # fmt: skip


@dataclass(frozen=True)
class QueueRow:
    name: str = column("Queue")
    items: int = column("Items")
    complete: int = column("Complete")
    share: float = column("Done")
    overlap: int = column("People per item")
    lease: str = column("Lease")
    mode: str = column("Answers")
    members: str = column("Members")
    mine: int = column("You submitted")


def _lease(seconds: int) -> str:
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"


def queue_rows(queues: list[tuple[Queue, QueueProgress]], me: str) -> list[QueueRow]:
    """Each queue with where it stands, and what ``me`` submitted in it."""
    rows = []
    for queue, progress in queues:
        mine = next((r.submitted for r in progress.reviewers if r.name == me), 0)
        rows.append(QueueRow(
            visible(queue.name), progress.items, progress.complete, progress.share, queue.min_reviews,
            _lease(queue.lease_seconds), "blind" if queue.blind else "open",
            visible(", ".join(queue.members)) or "every reviewer", mine,
        ))  # fmt: skip
    return rows


@dataclass(frozen=True)
class ReviewerRow:
    person: str = column("Person")
    submitted: int = column("Submitted")
    skipped: int = column("Skipped")
    holding: int = column("Holding now")


def reviewer_rows(progress: QueueProgress) -> list[ReviewerRow]:
    """Each person's part in a queue."""
    return [ReviewerRow(visible(r.name), r.submitted, r.skipped, r.holding) for r in progress.reviewers]

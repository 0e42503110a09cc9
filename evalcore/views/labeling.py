"""What the Labeling page shows: a dataset's questions as a table, a question as typed in the page's form, its queues
with where each stands, and each person's part."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from evalcore.errors import UsageError
from evalcore.reviewer_agreement import (
    Disagreement,
    ReviewerAgreement,
    disagreements,
    multilabel_agreement,
    reviewer_agreement,
    table_from_answers,
)
from evalcore.store.questions import KINDS, LEVELS, Question, QuestionDef
from evalcore.store.queues import Queue, QueueProgress
from evalcore.store.store import Store
from evalcore.views.review.questions import answer_text
from evalcore.views.table import column
from evalcore.views.text import visible

__all__ = [
    "KIND_NOTES",
    "AgreementRow",
    "DisagreementRow",
    "agreement_rows",
    "disagreement_rows",
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


@dataclass(frozen=True)
class AgreementRow:
    """How far reviewers agree on one question (a multi-label question: on one of its labels)."""

    question: str = column("Question")
    level: str = column("Compared as")
    alpha: float | None = column("Krippendorff's alpha")
    percent: float | None = column("Agreement")
    items: int = column("Items (2+ answers)")
    reviewers: int = column("Reviewers")
    pairs: str = column("Cohen's kappa of each pair")
    note: str = column("Note")


@dataclass(frozen=True)
class DisagreementRow:
    """A session whose submitted answers to a question differ: a link to it on Review, and who said what."""

    session: str = column("Session")
    question: str = column("Question")
    answers: str = column("Answers")
    review: str = column("Open")


_LEVELS = {"choice": "nominal", "rating": "ordinal", "number": "interval"}


def _figure(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _agreement_row(name: str, level: str, result: ReviewerAgreement) -> AgreementRow:
    pairs = "; ".join(
        f"{p.rater_a}–{p.rater_b} {'n/a' if p.kappa.value is None else f'{p.kappa.value:.2f}'} ({p.kappa.n_items})"
        for p in result.pairs
    )
    return AgreementRow(visible(name), level, _figure(result.alpha.value), _figure(result.percent_agreement.value),
                        result.alpha.n_items, result.n_raters, visible(pairs), result.alpha.reason or "")  # fmt: skip


def agreement_rows(store: Store, dataset: str) -> list[AgreementRow]:
    """Per question the dataset asks (text excepted), how far the submitted answers agree: each item is a session
    (or a session's turn, for a question of each turn)."""
    answers = store.answers.of_dataset(dataset)
    rows: list[AgreementRow] = []
    for q in store.questions.of(dataset, retired=True):
        if q.kind == "text":
            continue
        given = [((a.session_pk, a.turn), a.author, a.value) for a in answers if a.question_id == q.id]
        if not given:
            continue
        table = table_from_answers(given)
        if q.kind == "multi":
            cells = [[v if isinstance(v, list) else None for v in row] for row in table.rows]
            for label in multilabel_agreement(cells, labels=q.options, raters=table.raters):
                rows.append(_agreement_row(f"{q.name}: {label.label}", "yes / no per label", label.agreement))
            continue
        scale = list(range(q.spec["min"], q.spec["max"] + 1)) if q.kind == "rating" else None
        level = _LEVELS[q.kind]
        result = reviewer_agreement(table.rows, level, scale, raters=table.raters)  # type: ignore[arg-type]
        rows.append(_agreement_row(q.name, level, result))
    return rows


def disagreement_rows(store: Store, dataset: str, *, limit: int = 200) -> list[DisagreementRow]:
    """The sessions whose submitted answers to a question differ (text excepted), with a link to each on Review;
    at most ``limit``."""
    answers = store.answers.of_dataset(dataset)
    found: list[tuple[int, int | None, str, Disagreement]] = []
    for q in store.questions.of(dataset, retired=True):
        if q.kind == "text":
            continue
        given = [((a.session_pk, a.turn), a.author, a.value) for a in answers if a.question_id == q.id]
        for d in disagreements(given):
            unit: tuple[int, int | None] = d.unit  # type: ignore[assignment]
            found.append((unit[0], unit[1], q.name, d))
    found = found[:limit]
    links = store.sessions.links(sorted({pk for pk, _, _, _ in found}))
    rows = []
    for pk, turn, name, d in found:
        link = links.get(pk, str(pk))
        target = f"/review?dataset={quote(dataset, safe='')}&session={quote(link, safe='')}"
        rows.append(DisagreementRow(
            visible(link) + ("" if turn is None else f" · turn {turn + 1}"), visible(name),
            visible(" · ".join(f"{who}: {answer_text(value)}" for who, value in d.answers)),
            target + ("" if turn is None else f"&turn={turn + 1}"),
        ))  # fmt: skip
    return rows

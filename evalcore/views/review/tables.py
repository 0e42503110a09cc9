"""The Review page's tables, as rows: weights, scores across runs, history (an edit read in full below it), and
other reviewers' verdicts (a compact list).

Columns come in the order a reviewer reads them (what matters first), values as they are shown.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalcore import identity
from evalcore.store.labels import LABEL, Verdict
from evalcore.store.records import Edit
from evalcore.store.runs import SessionScore
from evalcore.views.review.conflict import field_label, value_text
from evalcore.views.review.transcript import TranscriptView
from evalcore.views.review.weights import WeightsExplanation, format_number
from evalcore.views.table import column
from evalcore.views.text import visible

__all__ = [
    "EditDetail",
    "HistoryRow",
    "OtherVerdicts",
    "ScoreRow",
    "WeightRow",
    "edit_detail",
    "edit_label",
    "history_rows",
    "score_rows",
    "session_label",
    "other_verdicts",
    "restore_targets",
    "weight_rows",
]


def session_label(ref: str) -> str:
    """What a reviewer calls a session (``evalcore.identity.session_label``: its id, ``id · assistant``, or its file
    and place), as shown: every invisible or reordering character in it written as its escape (``\\u202e``),
    so an id reading ``gnp<U+202E>exe.png`` never shows as ``gnpgnp.exe`` and an id of zero-width spaces never
    as nothing. Plain text: put it in Markdown through ``escape_inline``."""
    return visible(identity.session_label(ref))


@dataclass(frozen=True)
class WeightRow:
    """A turn's weight: as typed, and as Gaussia's rules make it."""

    turn: int
    typed: str = column("typed")
    effective: float = 0.0
    question: str = ""


def weight_rows(view: TranscriptView, typed: list[float | None], explained: WeightsExplanation) -> list[WeightRow]:
    """One row per turn of ``view`` (a page's view: of the page): its weight as typed, its effective weight, and
    its question. ``typed`` and ``explained`` are of every turn of the session."""
    rows = []
    for turn in view.turns:
        weight = typed[turn.index]
        rows.append(
            WeightRow(
                turn.index + 1,
                format_number(weight) if weight is not None else "",
                explained.effective[turn.index],
                turn.query[:100],
            )
        )
    return rows


@dataclass(frozen=True)
class ScoreRow:
    """One score of the session, in one run."""

    metric: str
    value: float | None
    reason: str
    run: str
    model: str
    tokens: int | None
    cost: float | None


def score_rows(scores: list[SessionScore]) -> list[ScoreRow]:
    """One row per score, newest run first: metric, value and reason, then how it was made."""
    return [
        ScoreRow(
            s.metric + ("" if s.turn is None else f" · turn {s.turn + 1}"),
            s.value,
            s.reason or s.error or s.status.replace("_", " "),
            f"#{s.run_id} · imported with the data" if s.imported else f"#{s.run_id} · {s.run_started_at[:10]}",
            s.model or "",
            (s.input_tokens or 0) + (s.output_tokens or 0) or None,
            s.cost,
        )  # fmt: skip
        for s in scores
    ]


@dataclass(frozen=True)
class HistoryRow:
    """One edit of the session's history, as a row of its narrow table: what was changed, when and by whom (the
    values themselves are read in full below the table: ``edit_detail``)."""

    edit: int = column("#")
    at: str = ""
    by: str = ""
    field: str = ""


def history_rows(edits: list[Edit]) -> list[HistoryRow]:
    """The history, newest first: which edit, when, by whom, and the field as the page labels it."""
    return [
        HistoryRow(e.id, e.at[:16].replace("T", " "), visible(e.author), field_label(e.field, e.turn))
        for e in reversed(edits)
    ]


@dataclass(frozen=True)
class EditDetail:
    """One edit in full (plain text): a heading line, the value it set, the value before, and why."""

    title: str
    new: str
    old: str
    reason: str


def edit_detail(edit: Edit) -> EditDetail:
    """An edit of the history, to be read in full: ``#12 · Reference answer · by ann · 2026-11-23 08:02``, its new
    and old values (text as it is, anything else as indented JSON, nothing as ``(empty)``), and its reason."""
    return EditDetail(edit_label(edit), value_text(edit.new), value_text(edit.old), edit.reason or "")


def edit_label(edit: Edit) -> str:
    """An edit as an option of "restore to": ``#12 · Reference answer · by ann · 2026-11-23 08:02`` (plain text)."""
    where = field_label(edit.field, edit.turn)
    return f"#{edit.id} · {visible(where)} · by {visible(edit.author)} · {edit.at[:16].replace('T', ' ')}"


def restore_targets(edits: list[Edit]) -> list[int]:
    """The edits a session can be restored to, newest first: every one but the newest (the state after it is the
    session as it is)."""
    return [e.id for e in reversed(edits[:-1])]


@dataclass(frozen=True)
class OtherVerdicts:
    """Another reviewer's verdicts on the session, as one line: ``pass · politeness 4`` (plain text)."""

    reviewer: str
    verdicts: str
    at: str


def _verdict_text(name: str, value: float) -> str:
    if name == LABEL:
        return {1.0: "pass", 0.0: "fail"}.get(value, f"pass/fail {format_number(value)}")
    rubric = name.removeprefix("rubric:")
    return f"{rubric} {format_number(value)}"


def other_verdicts(verdicts: list[Verdict]) -> list[OtherVerdicts]:
    """Other reviewers' verdicts, one line per reviewer (in the order they are given, pass or fail first), with the
    time of their latest: a compact list that a long name cannot push out of a narrow panel."""
    by_author: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_author.setdefault(v.author, []).append(v)
    lines = []
    for author, theirs in by_author.items():
        ordered = sorted(theirs, key=lambda v: v.name != LABEL)
        said = " · ".join(visible(_verdict_text(v.name, v.value)) for v in ordered)
        lines.append(OtherVerdicts(visible(author), said, max(v.at for v in theirs)[:16].replace("T", " ")))
    return lines

"""The Review page's tables, as rows: weights, scores across runs, history, other reviewers' verdicts.

Columns come in the order a reviewer reads them (what matters first), values as they are shown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from evalcore import identity
from evalcore.store.labels import Verdict
from evalcore.store.records import Edit
from evalcore.store.runs import SessionScore
from evalcore.views.review.transcript import TranscriptView
from evalcore.views.review.weights import WeightsExplanation, format_number
from evalcore.views.table import column
from evalcore.views.text import visible

__all__ = [
    "HistoryRow",
    "ScoreRow",
    "VerdictRow",
    "WeightRow",
    "edit_label",
    "history_rows",
    "score_rows",
    "session_label",
    "short",
    "verdict_rows",
    "weight_rows",
]


def session_label(ref: str) -> str:
    """What a reviewer calls a session (``evalcore.identity.session_label``: its id, ``id · assistant``, or its file
    and place), as shown: every invisible or reordering character in it written as its escape (``\\u202e``),
    so an id reading ``gnp<U+202E>exe.png`` never shows as ``gnpgnp.exe`` and an id of zero-width spaces never
    as nothing. Plain text: put it in Markdown through ``escape_inline``."""
    return visible(identity.session_label(ref))


def short(value: Any, limit: int = 120) -> str:
    """A stored value as one short line for a table cell (history's old and new)."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class WeightRow:
    """A turn's weight: as typed, and as Gaussia's rules make it."""

    turn: int
    typed: str = column("weight typed")
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
    """One edit of the session's history."""

    edit: int = column("#")
    at: str = ""
    by: str = ""
    field: str = ""
    new: str = ""
    old: str = ""
    reason: str = ""


def history_rows(edits: list[Edit]) -> list[HistoryRow]:
    """The history, newest first: who changed what from what to what, when and why."""
    return [
        HistoryRow(
            e.id, e.at[:16].replace("T", " "), visible(e.author), e.where, short(e.new), short(e.old), e.reason or ""
        )
        for e in reversed(edits)
    ]


def edit_label(edit: Edit) -> str:
    """An edit as an option of "restore to": ``#12 · reference · by ann · 2026-11-23 08:02`` (plain text)."""
    return f"#{edit.id} · {visible(edit.where)} · by {visible(edit.author)} · {edit.at[:16].replace('T', ' ')}"


@dataclass(frozen=True)
class VerdictRow:
    """Another reviewer's verdict."""

    reviewer: str
    verdict: str
    value: float
    at: str


def verdict_rows(verdicts: list[Verdict]) -> list[VerdictRow]:
    """Other reviewers' verdicts."""
    return [VerdictRow(visible(v.author), visible(v.name), v.value, v.at[:16].replace("T", " ")) for v in verdicts]

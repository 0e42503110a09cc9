"""The Review page's tables, as rows: weights, scores across runs, history, other reviewers' verdicts.

Columns come in the order a reviewer reads them (what matters first), values as they are shown.
"""

from __future__ import annotations

import json
from typing import Any

from evalcore.identity import session_label
from evalcore.store.records import Edit
from evalcore.store.runs import SessionScore
from evalcore.store.verdicts import Verdict
from evalcore.views.review.transcript import TranscriptView
from evalcore.views.review.weights import WeightsExplanation, format_number

__all__ = ["edit_label", "history_rows", "score_rows", "session_label", "short", "verdict_rows", "weight_rows"]


def short(value: Any, limit: int = 120) -> str:
    """A stored value as one short line for a table cell (history's old and new)."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def weight_rows(view: TranscriptView, typed: list[float | None], explained: WeightsExplanation) -> list[dict[str, Any]]:
    """One row per turn: its weight as typed, its effective weight, and its question."""
    return [
        {
            "turn": turn.index + 1,
            "typed": format_number(weight) if weight is not None else "",
            "effective": effective,
            "question": turn.query[:100],
        }
        for turn, weight, effective in zip(view.turns, typed, explained.effective, strict=True)
    ]


def score_rows(scores: list[SessionScore]) -> list[dict[str, Any]]:
    """One row per score, newest run first: metric, value and reason, then how it was made."""
    return [
        {
            "metric": s.metric + ("" if s.turn is None else f" · turn {s.turn + 1}"),
            "value": s.value,
            "reason": s.reason or s.error or s.status.replace("_", " "),
            "run": f"#{s.run_id} · {s.run_started_at[:10]}",
            "model": s.model or "",
            "tokens": (s.input_tokens or 0) + (s.output_tokens or 0) or None,
            "cost": s.cost,
        }
        for s in scores
    ]


def history_rows(edits: list[Edit]) -> list[dict[str, Any]]:
    """The history, newest first: who changed what from what to what, when and why."""
    return [
        {
            "edit": e.id,
            "at": e.at[:16].replace("T", " "),
            "by": e.author,
            "field": e.where,
            "new": short(e.new),
            "old": short(e.old),
            "reason": e.reason or "",
        }
        for e in reversed(edits)
    ]


def edit_label(edit: Edit) -> str:
    """An edit as an option of "restore to": ``#12 · reference · by ann · 2026-11-23 08:02``."""
    return f"#{edit.id} · {edit.where} · by {edit.author} · {edit.at[:16].replace('T', ' ')}"


def verdict_rows(verdicts: list[Verdict]) -> list[dict[str, Any]]:
    """Other reviewers' verdicts."""
    return [{"reviewer": v.author, "verdict": v.name, "value": v.value, "at": v.at[:16].replace("T", " ")}
            for v in verdicts]  # fmt: skip

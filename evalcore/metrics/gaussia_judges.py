"""Gaussia's judges, per turn: context and conversational quality.

The judge sees the turn's real reference answer, or the observation when there is one, never
the assistant's own answer in the reference's place (Gaussia's bug, not copied).
"""

from __future__ import annotations

import math
from typing import ClassVar

from pydantic import BaseModel, Field

from evalcore.judge import Judge
from evalcore.metrics.base import Level, Metric, MetricResult, register_metric
from evalcore.metrics.judged import usage
from evalcore.metrics.strings import turn_reference
from evalcore.metrics.transcript import transcript
from evalcore.schema import Session, Turn


class _TurnJudged(Metric):
    uses_judge: ClassVar[bool] = True
    level: ClassVar[Level] = "turn"

    def reference_part(self, session: Session, turn: Turn, *, last: bool) -> str:
        """The observation when there is one, else the real reference answer (Gaussia's bug avoided)."""
        if turn.truth.observation:
            return f"Observation:\n{turn.truth.observation}"
        reference = turn_reference(session, turn, last=last)
        return f"Ground Truth Assistant (reference answer):\n{reference}" if reference else ""


class ContextAnswer(BaseModel):
    score: float = Field(ge=0, le=1)
    insight: str


@register_metric
class GaussiaContext(_TurnJudged):
    """How strictly each answer stays within the session's context, 0-1 (Gaussia Context)."""

    name: ClassVar[str] = "gaussia_context"
    description: ClassVar[str] = "judge per turn: answer keeps to the session context, 0-1 (Gaussia Context)"
    needs: ClassVar[tuple[str, ...]] = ("context",)

    async def judge_turn(self, session: Session, turn: Turn, judge: Judge, *, last: bool) -> MetricResult:
        if turn.answer is None:
            return self.not_applicable("no assistant answer in this turn", turn.index)
        with_observation = bool(turn.truth.observation)
        reference = self.reference_part(session, turn, last=last)
        compare = "consider the observation, " if with_observation else "compare it with the reference answer, "
        system = (
            "You are a contextual compliance analyzer. Examine the context, review the assistant's answer, "
            + (compare if reference else "")  # no reference to compare with: the prompt does not mention one
            + "determine how well the answer aligns with and stays within the context (0 to 1), and give "
            + ("insights citing points from the observation." if with_observation else "insights.")
        )
        parts = (f"Context:\n{session.context}", f"Question:\n{turn.query}", reference, f"Assistant:\n{turn.answer}")
        user = "\n\n".join(p for p in parts if p)
        verdict = await judge.ask(system, user, ContextAnswer)
        return self.result(verdict.answer.score, verdict.answer.insight, turn=turn.index, usage=usage(judge, verdict))


_DIMENSIONS = (
    "memory",
    "language",
    "quality_maxim",
    "quantity_maxim",
    "relation_maxim",
    "manner_maxim",
    "sensibleness",
)


class ConversationalAnswer(BaseModel):
    memory: float = Field(ge=0, le=10)
    language: float = Field(ge=0, le=10)
    quality_maxim: float = Field(ge=0, le=10)
    quantity_maxim: float = Field(ge=0, le=10)
    relation_maxim: float = Field(ge=0, le=10)
    manner_maxim: float = Field(ge=0, le=10)
    sensibleness: float = Field(ge=0, le=10)
    insight: str


@register_metric
class GaussiaConversational(_TurnJudged):
    """Memory, language, Grice's four maxims and sensibleness of each answer, 0-10 (Gaussia Conversational).

    The value is the mean of the seven; each one is kept as a part of the score.
    """

    name: ClassVar[str] = "gaussia_conversational"
    description: ClassVar[str] = "judge per turn: memory, language, 4 maxims, sensibleness, 0-10 (Gaussia)"
    scale: ClassVar[tuple[float, float]] = (0.0, 10.0)

    async def judge_turn(self, session: Session, turn: Turn, judge: Judge, *, last: bool) -> MetricResult:
        if turn.answer is None:
            return self.not_applicable("no assistant answer in this turn", turn.index)
        language = session.language or "english"
        system = (
            "You are an expert evaluator of conversational dialogue quality"
            + (", judging the answer based on the given observation. " if turn.truth.observation else ". ")
            + f"The answer must be in {language}; otherwise score language low. Memory is 10 when the question "
            "does not refer to the past; otherwise rate how well earlier details are recalled. Rate Grice's maxims "
            "of quality, quantity, relation and manner, and sensibleness (makes sense in context), all 0 to 10."
        )
        start = next(i for i, m in enumerate(session.messages) if m is turn.messages[0])  # by identity, not value
        earlier = [m for m in session.messages[:start] if m.role != "system"]
        user = "\n\n".join(
            p
            for p in (
                f"Earlier conversation:\n{transcript(earlier)}" if earlier else "",
                f"Question:\n{turn.query}",
                self.reference_part(session, turn, last=last),
                f"Assistant (actual answer):\n{turn.answer}",
            )
            if p
        )
        verdict = await judge.ask(system, user, ConversationalAnswer)
        parts = {d: float(getattr(verdict.answer, d)) for d in _DIMENSIONS}
        value = math.fsum(parts.values()) / len(parts)
        return self.result(value, verdict.answer.insight, turn=turn.index, sub=parts, usage=usage(judge, verdict))

"""What the data itself says: turns, tool calls, token usage, latency, and Databricks' document recall."""

from __future__ import annotations

import math
from typing import ClassVar

from evalcore.metrics.base import Metric, MetricResult, register_metric
from evalcore.metrics.recorded import recorded_latency, usage_totals
from evalcore.schema import Session

_UNBOUNDED = (0.0, math.inf)


@register_metric
class TurnCount(Metric):
    """The number of turns (user messages)."""

    name: ClassVar[str] = "turn_count"
    description: ClassVar[str] = "number of turns"
    scale: ClassVar[tuple[float, float]] = _UNBOUNDED

    def score_session(self, session: Session) -> MetricResult:
        return self.result(float(session.n_turns()))


@register_metric
class ToolCallCount(Metric):
    """The number of tool calls the assistant made."""

    name: ClassVar[str] = "tool_call_count"
    description: ClassVar[str] = "number of tool calls"
    scale: ClassVar[tuple[float, float]] = _UNBOUNDED

    def score_session(self, session: Session) -> MetricResult:
        return self.result(float(len(session.tool_calls())))


@register_metric
class TokenUsage(Metric):
    """Tokens used, where the data carries them (session or message ``metadata.usage``)."""

    name: ClassVar[str] = "token_usage"
    description: ClassVar[str] = "total tokens recorded in the data (input and output as parts)"
    scale: ClassVar[tuple[float, float]] = _UNBOUNDED
    needs: ClassVar[tuple[str, ...]] = ("token_usage",)

    def score_session(self, session: Session) -> MetricResult:
        totals = usage_totals(session)
        if not totals:
            return self.not_applicable("missing token usage in the data")
        total = totals.get("total_tokens", totals.get("input_tokens", 0) + totals.get("output_tokens", 0))
        parts = {k.removesuffix("_tokens"): float(v) for k, v in totals.items() if k != "total_tokens"}
        return self.result(float(total), sub=parts)


@register_metric
class Latency(Metric):
    """Seconds the agent took, where the data carries it (``metadata.latency_ms``)."""

    name: ClassVar[str] = "latency"
    description: ClassVar[str] = "seconds recorded in the data (session, else summed over messages)"
    scale: ClassVar[tuple[float, float]] = _UNBOUNDED
    needs: ClassVar[tuple[str, ...]] = ("latency",)

    def score_session(self, session: Session) -> MetricResult:
        latency = recorded_latency(session)
        if latency is None:
            return self.not_applicable("missing latency in the data")
        return self.result(latency / 1000.0)


@register_metric
class DocumentRecall(Metric):
    """Share of the expected documents that were retrieved, by ``doc_uri`` (Databricks)."""

    name: ClassVar[str] = "document_recall"
    description: ClassVar[str] = "expected doc_uris found among the retrieved ones (Databricks)"
    needs: ClassVar[tuple[str, ...]] = ("retrieved_context", "expected_retrieved_context")

    def score_session(self, session: Session) -> MetricResult:
        retrieved = {c.doc_uri for c in session.retrieved_context or [] if c.doc_uri}
        expected = {c.doc_uri for c in session.expected_retrieved_context or [] if c.doc_uri}
        if not retrieved or not expected:
            return self.not_applicable("missing doc_uri in retrieved or expected context")
        found = expected & retrieved
        missed = sorted(expected - retrieved)
        reason = f"{len(found)} of {len(expected)} expected documents retrieved"
        return self.result(len(found) / len(expected), reason + (f"; missing {', '.join(missed)}" if missed else ""))

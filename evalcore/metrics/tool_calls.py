"""Tool-call metrics: ragas' ToolCallAccuracy and ToolCallF1 (numbers identical to ragas 0.4.3),
and Gaussia's agentic tool correctness per turn."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from evalcore.metrics.base import Level, Metric, MetricResult, register_metric
from evalcore.schema import Session, ToolCall, Turn


def _sort_key(call: ToolCall) -> tuple[str, ...]:
    # ragas: the name, then each argument name (sorted) followed by str() of its value.
    key = [call.name]
    for name in sorted(call.args):
        key += [name, str(call.args[name])]
    return tuple(key)


def _arg_score(pred: dict[str, Any], ref: dict[str, Any]) -> float:
    if not ref and not pred:
        return 1.0
    if not ref:
        return 0.0
    return sum(1.0 for k in ref if k in pred and str(pred[k]) == str(ref[k])) / len(ref)


def tool_call_accuracy(predicted: list[ToolCall], reference: list[ToolCall], *, strict_order: bool) -> float:
    """ragas 0.4.3 ``ToolCallAccuracy``: 0 whenever the call names do not line up."""
    if not predicted and not reference:
        return 1.0
    if not predicted or not reference:
        return 0.0
    if not strict_order:
        predicted = sorted(predicted, key=_sort_key)
        reference = sorted(reference, key=_sort_key)
    pred_names = [c.name for c in predicted]
    ref_names = [c.name for c in reference]
    aligned = pred_names == ref_names if strict_order else sorted(pred_names) == sorted(ref_names)
    score = 0.0
    for ref, pred in zip(reference, predicted, strict=False):
        if ref.name == pred.name:
            score += _arg_score(pred.args, ref.args)
    score /= len(reference)
    compared = min(len(predicted), len(reference))
    if compared < len(reference):
        score *= compared / len(reference)
    return score * int(aligned)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _hashable(value: Any) -> Any:
    # ragas' recursion (dicts to frozensets, lists to tuples), with scalars passed straight through.
    if isinstance(value, dict):
        return frozenset((k, v if type(v) in _SCALARS else _hashable(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return tuple(v if type(v) in _SCALARS else _hashable(v) for v in value)
    return value


_CONTAINERS = (dict, list, tuple)


def _call_key(call: ToolCall) -> tuple[str, Any]:
    args = call.args
    for value in args.values():
        if isinstance(value, _CONTAINERS):
            return call.name, _hashable(args)
    return call.name, frozenset(args.items())  # flat arguments: the common case, no recursion


def tool_call_f1(predicted: list[ToolCall], reference: list[ToolCall]) -> tuple[float, float, float, int]:
    """ragas 0.4.3 ``ToolCallF1`` (set semantics; rounded to 4 places): (f1, precision, recall, matched)."""
    expected = {_call_key(c) for c in reference}
    actual = {_call_key(c) for c in predicted}
    tp = len(actual & expected)
    fp, fn = len(actual) - tp, len(expected) - tp
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return round(f1, 4), precision, recall, tp


def _describe(predicted: list[ToolCall], reference: list[ToolCall]) -> str:
    called = ", ".join([c.name for c in predicted]) or "none"
    expected = ", ".join([c.name for c in reference]) or "none"
    return f"called {called}; expected {expected}"


@register_metric
class ToolCallAccuracy(Metric):
    """The agent's tool calls against the reference calls, in order (ragas' ``ToolCallAccuracy``)."""

    name: ClassVar[str] = "tool_call_accuracy"
    description: ClassVar[str] = "tool calls vs reference tool calls, in order (ragas 0.4.3 ToolCallAccuracy)"
    needs: ClassVar[tuple[str, ...]] = ("reference_tool_calls",)
    strict_order: bool = True

    def score_session(self, session: Session) -> MetricResult:
        predicted, reference = session.tool_calls(), session.reference_tool_calls or []
        value = tool_call_accuracy(predicted, reference, strict_order=self.strict_order)
        return self.result(value, _describe(predicted, reference))


@register_metric
class ToolCallAccuracyFlexible(ToolCallAccuracy):
    """``tool_call_accuracy`` with the order of calls ignored (ragas' ``strict_order=False``)."""

    name: ClassVar[str] = "tool_call_accuracy_flexible"
    description: ClassVar[str] = "tool calls vs reference tool calls, any order (ragas strict_order=False)"
    strict_order: bool = False


@register_metric
class ToolCallF1(Metric):
    """F1 of the set of (name, arguments) calls against the reference (ragas' ``ToolCallF1``)."""

    name: ClassVar[str] = "tool_call_f1"
    description: ClassVar[str] = "F1 of called vs reference (name, args) sets (ragas 0.4.3 ToolCallF1)"
    needs: ClassVar[tuple[str, ...]] = ("reference_tool_calls",)

    def score_session(self, session: Session) -> MetricResult:
        predicted, reference = session.tool_calls(), session.reference_tool_calls or []
        f1, precision, recall, matched = tool_call_f1(predicted, reference)
        reason = f"{matched} of {len(reference)} reference calls made exactly; {len(predicted)} calls in all"
        return self.result(f1, reason, sub={"precision": precision, "recall": recall})


class ToolWeights(BaseModel):
    """Gaussia's weights of the four parts of tool correctness."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    selection: float = Field(default=0.25, ge=0)
    parameters: float = Field(default=0.25, ge=0)
    sequence: float = Field(default=0.25, ge=0)
    utilization: float = Field(default=0.25, ge=0)


def _selection(used: set[str], expected: set[str]) -> float:
    if used == expected:
        return 1.0
    if used < expected:
        return len(used) / len(expected)
    if expected < used:
        return len(expected) / len(used)
    return len(used & expected) / len(used | expected)


def _params_match(expected: dict[str, Any], used: dict[str, Any]) -> float:
    if expected == used:
        return 1.0
    keys = set(expected) | set(used)
    return sum(1 for k in keys if k in expected and k in used and expected[k] == used[k]) / len(keys)


@register_metric
class AgenticToolCorrectness(Metric):
    """Gaussia's tool correctness of each turn against its ``ground_truth_agentic``.

    selection (sets of tool names), parameters (each expected call against the first used
    call of that tool), sequence (steps, when ``tool_sequence_matters``), utilization (the
    answer uses the tools' results), weighted; a turn is correct at ``threshold`` or above.
    Unlike Gaussia, a turn that used no tool when tools were expected scores (low) instead
    of being skipped.
    """

    name: ClassVar[str] = "agentic_tool_correctness"
    description: ClassVar[str] = "Gaussia's tool selection, parameters, sequence and utilization per turn"
    needs: ClassVar[tuple[str, ...]] = ("expected_tool_usage",)
    level: ClassVar[Level] = "turn"
    weights: ToolWeights = Field(default_factory=ToolWeights)
    threshold: float = Field(default=1.0, ge=0, le=1)

    def score_turn(self, session: Session, turn: Turn, *, last: bool) -> MetricResult:
        expected_usage = turn.truth.expected_tool_usage
        if not expected_usage:
            return self.not_applicable("no ground_truth_agentic for this turn", turn.index)
        expected = [t for t in expected_usage.get("expected_tools") or [] if isinstance(t, dict)]
        calls = turn.tool_calls
        used = [
            {"tool_name": c.name, "parameters": c.args, "step": (c.metadata.get("gaussia") or {}).get("step", i + 1)}
            for i, c in enumerate(calls)
        ]
        raw = (turn.truth.metadata.get("gaussia") or {}).get("agentic") or {}
        parts = {
            "selection": _selection({u["tool_name"] for u in used}, {str(e.get("tool_name")) for e in expected}),
            "parameters": self._parameters(expected, used),
            "sequence": self._sequence(expected, used, bool(expected_usage.get("tool_sequence_matters", True))),
            "utilization": 1.0 if raw.get("final_answer_uses_tools") else 0.0,
        }
        w = self.weights
        overall = math.fsum(getattr(w, k) * v for k, v in parts.items())
        correct = overall >= self.threshold
        reason = ", ".join(f"{k} {v:.2f}" for k, v in parts.items()) + f"; {'correct' if correct else 'not correct'}"
        return self.result(overall, reason, turn=turn.index, sub={**parts, "is_correct": float(correct)})

    @staticmethod
    def _parameters(expected: list[dict[str, Any]], used: list[dict[str, Any]]) -> float:
        if not expected:
            return 1.0
        scores = []
        for e in expected:
            first = next((u for u in used if u["tool_name"] == e.get("tool_name")), None)
            scores.append(0.0 if first is None else _params_match(e.get("parameters") or {}, first["parameters"]))
        return sum(scores) / len(scores)

    @staticmethod
    def _sequence(expected: list[dict[str, Any]], used: list[dict[str, Any]], matters: bool) -> float:
        if not matters:
            return 1.0
        if not expected:
            return 1.0
        seen: dict[Any, int] = {}
        hits = 0
        for e in expected:
            name = e.get("tool_name")
            nth = seen.get(name, 0)
            seen[name] = nth + 1
            same = [u for u in used if u["tool_name"] == name]
            if nth < len(same) and same[nth]["step"] == e.get("step"):
                hits += 1
        return hits / len(expected)

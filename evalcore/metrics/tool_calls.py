"""Tool-call metrics: ragas' ToolCallAccuracy and ToolCallF1 (numbers identical to ragas 0.4.3),
and Gaussia's agentic tool correctness per turn."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from evalcore.metrics.base import Level, Metric, MetricResult, register_metric
from evalcore.metrics.calls import CallLike, SessionCalls
from evalcore.schema import Session, Turn


def _sort_key(call: CallLike) -> tuple[str, ...]:
    # ragas: the name, then each argument name (sorted) followed by str() of its value.
    key = [call.name]
    for name in sorted(call.args):
        key += [name, str(call.args[name])]
    return tuple(key)


def tool_call_accuracy(predicted: Sequence[CallLike], reference: Sequence[CallLike], *, strict_order: bool) -> float:
    """ragas 0.4.3 ``ToolCallAccuracy``: 0 whenever the call names do not line up.

    ragas scores each aligned pair (the share of reference arguments whose ``str()`` the
    prediction repeats; 1 when neither has arguments), averages over the reference calls and
    multiplies by whether the names line up. Here a misaligned pair ends the work at once:
    the same numbers, to the last bit, without scoring what is then multiplied by zero.
    """
    return _accuracy(predicted, reference, strict_order)[0]


def _misnamed(predicted: Sequence[CallLike], reference: Sequence[CallLike], strict_order: bool) -> str:
    n, pred, ref = next(
        (n, p, r) for n, (p, r) in enumerate(zip(predicted, reference, strict=True), 1) if p.name != r.name
    )
    if strict_order:
        return f"call {n} is {pred.name}; expected {ref.name}"
    return f"{pred.name} called where {ref.name} was expected (order ignored)"


def _calls(n: int) -> str:
    return "1 call" if n == 1 else f"{n} calls"


def _accuracy(predicted: Sequence[CallLike], reference: Sequence[CallLike], strict_order: bool) -> tuple[float, str]:
    """``tool_call_accuracy`` with its reason."""
    if not predicted or not reference:
        if predicted:
            return 0.0, f"{_calls(len(predicted))} made; none expected"
        if reference:
            return 0.0, f"no call made; {_calls(len(reference))} expected"
        return 1.0, "no call made and none expected"
    if len(predicted) != len(reference):
        return 0.0, f"{_calls(len(predicted))} made; {_calls(len(reference))} expected"
    if not strict_order:
        predicted = sorted(predicted, key=_sort_key)
        reference = sorted(reference, key=_sort_key)
    score = 0.0
    for ref, pred in zip(reference, predicted, strict=False):  # as long as each other (checked above)
        if ref.name != pred.name:
            return 0.0, _misnamed(predicted, reference, strict_order)
        expected, given = ref.args, pred.args
        if expected:
            hits = 0.0
            for key, value in expected.items():
                if key in given:
                    other = given[key]
                    if type(other) is str and type(value) is str:  # str() of a str is itself
                        if other == value:
                            hits += 1.0
                    elif other is value or str(other) == str(value):
                        hits += 1.0
            score += hits / len(expected)
        elif not given:
            score += 1.0
    score /= len(reference)
    order = "in order" if strict_order else "in any order"
    return score, f"{_calls(len(reference))} named as expected, {order}; arguments matched {score:.2f}"


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _hashable(value: Any) -> Any:
    # ragas' recursion (dicts and sets to frozensets, lists to tuples), scalars passed straight through.
    if isinstance(value, dict):
        return frozenset([(k, v if type(v) in _SCALARS else _hashable(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return tuple([v if type(v) in _SCALARS else _hashable(v) for v in value])
    if isinstance(value, set):
        return frozenset([_hashable(v) for v in value])
    return value


# Up to this many calls a side, distinct calls are found by equality (C loops over short lists);
# beyond, by hashing as ragas does.
_BY_EQUALITY = 64


def _distinct(calls: Sequence[CallLike]) -> list[tuple[str, dict[str, Any]]]:
    seen: list[tuple[str, dict[str, Any]]] = []
    for call in calls:
        key = (call.name, call.args)
        if key not in seen:
            seen.append(key)
    return seen


def tool_call_f1(predicted: Sequence[CallLike], reference: Sequence[CallLike]) -> tuple[float, float, float, int]:
    """ragas 0.4.3 ``ToolCallF1`` (set semantics; rounded to 4 places): (f1, precision, recall, matched).

    ragas makes each call hashable (name, arguments with dicts as frozensets and lists as
    tuples) and compares the two sets. For JSON arguments (what every format gives), equal
    hashable forms are exactly equal ``(name, args)`` pairs, so short lists are compared as they
    are, with no copies. (A Python tuple, which no format makes, would not equal the same list.)
    """
    if len(predicted) > _BY_EQUALITY or len(reference) > _BY_EQUALITY:
        expected_set = {(c.name, _hashable(c.args)) for c in reference}
        actual_set = {(c.name, _hashable(c.args)) for c in predicted}
        n_actual, n_expected, tp = len(actual_set), len(expected_set), len(actual_set & expected_set)
    else:
        expected, actual = _distinct(reference), _distinct(predicted)
        n_actual, n_expected, tp = len(actual), len(expected), 0
        for key in actual:
            if key in expected:
                tp += 1
    if tp == n_actual == n_expected:  # the same calls (1.0), or none on either side (0.0): ragas' numbers
        return (1.0, 1.0, 1.0, tp) if tp else (0.0, 0.0, 0.0, 0)
    fp, fn = n_actual - tp, n_expected - tp
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return round(f1, 4), precision, recall, tp


@register_metric
class ToolCallAccuracy(Metric):
    """The agent's tool calls against the reference calls, in order (ragas' ``ToolCallAccuracy``)."""

    name: ClassVar[str] = "tool_call_accuracy"
    description: ClassVar[str] = "tool calls vs reference tool calls, in order (ragas 0.4.3 ToolCallAccuracy)"
    needs: ClassVar[tuple[str, ...]] = ("reference_tool_calls",)
    reads_calls: ClassVar[bool] = True
    strict_order: bool = True

    def score_session(self, session: Session) -> MetricResult:  # (the calls straight from the session)
        value, reason = _accuracy(session.tool_calls(), session.reference_tool_calls or [], self.strict_order)
        return MetricResult(self.name, None, value, reason)

    def score_calls(self, calls: SessionCalls) -> MetricResult:
        value, reason = _accuracy(calls.made, calls.reference or [], self.strict_order)
        return MetricResult(self.name, None, value, reason)


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
    reads_calls: ClassVar[bool] = True

    def score_session(self, session: Session) -> MetricResult:  # (the calls straight from the session)
        return self._score(session.tool_calls(), session.reference_tool_calls or [])

    def score_calls(self, calls: SessionCalls) -> MetricResult:
        return self._score(calls.made, calls.reference or [])

    def _score(self, predicted: Sequence[CallLike], reference: Sequence[CallLike]) -> MetricResult:
        f1, precision, recall, matched = tool_call_f1(predicted, reference)
        reason = f"{matched} of {len(reference)} reference calls made exactly; {len(predicted)} calls in all"
        return MetricResult(self.name, None, f1, reason, sub={"precision": precision, "recall": recall})


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
        }
        uses = raw.get("final_answer_uses_tools")
        if uses is not None:  # Gaussia's data says it; other data does not, and a guess would be a zero
            parts["utilization"] = 1.0 if uses else 0.0
        w = self.weights
        overall = math.fsum(getattr(w, k) * v for k, v in parts.items())
        if uses is None:  # the known parts carry the whole weight, utilization's too, in their proportions
            known = math.fsum(getattr(w, k) for k in parts)
            overall = overall / known * (known + w.utilization) if known else 0.0
        correct = overall >= self.threshold
        reason = ", ".join(f"{k} {v:.2f}" for k, v in parts.items())
        if uses is None:
            reason += ", utilization unknown (the data does not say whether the answer used the results)"
        reason += f"; {'correct' if correct else 'not correct'}"
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

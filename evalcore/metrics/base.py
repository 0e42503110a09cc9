"""What every metric is: a typed model whose fields are its parameters, with a name, needs and a level.

A metric scores one session. A turn-level metric scores each turn it applies to and rolls
the turns up into the session's score with Gaussia's weight rules. What a session lacks
gives a "not applicable: missing X" result, never a zero and never a crash.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from evalcore.errors import RegistryError, UsageError
from evalcore.metrics.calls import CALL_REQUIREMENTS, SessionCalls
from evalcore.metrics.recorded import recorded_latency, usage_totals
from evalcore.registry import Registry
from evalcore.schema import Session, Turn, resolve_weights

if TYPE_CHECKING:
    from evalcore.judge import Judge

__all__ = [
    "PLUGIN_GROUP",
    "REQUIREMENTS",
    "Metric",
    "MetricResult",
    "create_metric",
    "get_metric",
    "load_metric_plugin",
    "metric_names",
    "metrics",
    "plugin_failures",
    "register_metric",
]

Level = Literal["turn", "session"]

#: The longest reason (or error) a judged result keeps; beyond it the text is cut, and marked as cut.
MAX_REASON_CHARS = 4000


#: What a metric may need, and how to tell whether a session has it.
REQUIREMENTS: dict[str, Callable[[Session], bool]] = {
    "reference_tool_calls": lambda s: s.reference_tool_calls is not None,
    "reference": lambda s: bool(s.reference) or any(t.ground_truth for t in s.turn_truth),
    "expected_facts": lambda s: bool(s.expected_facts),
    "expected_facts_or_response": lambda s: bool(s.expected_facts) or bool(s.reference_answer()),
    "retrieved_context": lambda s: bool(s.retrieved_context),
    "expected_retrieved_context": lambda s: bool(s.expected_retrieved_context),
    "reference_topics": lambda s: bool(s.reference_topics),
    "rubrics": lambda s: bool(s.rubrics),
    "context": lambda s: bool(s.context),
    "expected_tool_usage": lambda s: any(t.expected_tool_usage for t in s.turn_truth),
    "desired_outcome": lambda s: bool(s.reference_answer()) or bool(s.goal) or bool(s.expected_facts),
    "answer": lambda s: s.final_answer() is not None,
    "user_message": lambda s: any(m.role == "user" for m in s.messages),
    "token_usage": lambda s: bool(usage_totals(s)),
    "latency": lambda s: recorded_latency(s) is not None,
}


@dataclass(slots=True)
class JudgeUsage:
    """What the judge calls behind one result cost (tokens ``None``: the endpoint's figures were not believable)."""

    model: str
    calls: int = 0
    cached: int = 0
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cost: float | None = None
    latency_ms: float = 0.0
    warnings: tuple[str, ...] = ()  # what the calls' figures were not trusted for

    @classmethod
    def of(cls, model: str, verdict: Any) -> JudgeUsage:
        """The usage of a judge's ``Verdict`` (what its calls cost)."""
        return cls(
            model=model,
            calls=verdict.calls,
            cached=verdict.cached,
            input_tokens=verdict.input_tokens,
            output_tokens=verdict.output_tokens,
            cost=verdict.cost,
            latency_ms=verdict.latency_ms,
            warnings=tuple(getattr(verdict, "warnings", ())),
        )


@dataclass(slots=True)
class MetricResult:
    """One score: a value with its reason, or an error, or "not applicable" with what was missing.

    A plain dataclass, not a validated model: results are made by metrics, millions per run.
    """

    metric: str
    turn: int | None = None  # None: the whole session
    value: float | None = None
    reason: str | None = None
    error: str | None = None
    not_applicable: str | None = None
    sub: dict[str, float] = field(default_factory=dict)  # named parts of the score (precision, recall...)
    warnings: list[str] = field(default_factory=list)
    usage: JudgeUsage | None = None

    @property
    def status(self) -> Literal["ok", "error", "not_applicable"]:
        """``ok``, ``error`` or ``not_applicable``."""
        if self.error is not None:
            return "error"
        if self.not_applicable is not None:
            return "not_applicable"
        return "ok"


class Metric(BaseModel):
    """Base of every metric. Subclasses set the class variables and implement a scoring method.

    Deterministic metrics implement ``score_turn`` or ``score_session``; judge metrics
    implement ``judge_turn`` or ``judge_session`` (async, given a ``Judge``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: ClassVar[str]
    description: ClassVar[str]
    needs: ClassVar[tuple[str, ...]] = ()
    level: ClassVar[Level] = "session"
    uses_judge: ClassVar[bool] = False
    #: Reads nothing of a session but its tool calls: implements ``score_calls`` (a session-level deterministic
    #: metric whose needs are all in ``CALL_REQUIREMENTS``). A scorer may then hand it the calls read straight
    #: from the stored JSON (``evaluate_calls``), without building the session's models.
    reads_calls: ClassVar[bool] = False
    #: The range of values, for charts and for readers: (low, high).
    scale: ClassVar[tuple[float, float]] = (0.0, 1.0)

    def params(self) -> dict[str, Any]:
        """The parameters as given (defaults left out)."""
        return self.model_dump(mode="json", exclude_defaults=True)

    def spec(self) -> str:
        """The metric with its parameters, as ``name`` or ``name:key=value:...`` (``create_metric`` reads it back)."""
        return ":".join([self.name, *(f"{k}={_spec_value(v)}" for k, v in sorted(self.params().items()))])

    def key(self) -> str:
        """The name scores are stored under: the spec, so that one metric with two settings never collides."""
        return self.spec()

    def missing(self, session: Session) -> list[str]:
        """What the session lacks that this metric needs."""
        return [need for need in self.needs if not REQUIREMENTS[need](session)]

    def not_applicable(self, what: str, turn: int | None = None) -> MetricResult:
        """A result saying the metric does not apply, and why."""
        return MetricResult(metric=self.name, turn=turn, not_applicable=what)

    def result(
        self, value: float | None, reason: str | None = None, turn: int | None = None, **extra: Any
    ) -> MetricResult:
        """A result of this metric."""
        if extra:
            return MetricResult(self.name, turn, value, reason, **extra)
        return MetricResult(self.name, turn, value, reason)  # positional: the common case, made millions of times

    # -- deterministic scoring -------------------------------------------------------------

    def score_turn(self, session: Session, turn: Turn, *, last: bool) -> MetricResult:
        """Score one turn (turn-level deterministic metrics)."""
        raise NotImplementedError

    def score_session(self, session: Session) -> MetricResult:
        """Score the whole session (session-level deterministic metrics); a metric that ``reads_calls`` scores
        the session's calls."""
        if self.reads_calls:
            return self.score_calls(SessionCalls.of(session))
        raise NotImplementedError

    def score_calls(self, calls: SessionCalls) -> MetricResult:
        """Score a session's tool calls (metrics that ``reads_calls``)."""
        raise NotImplementedError

    def evaluate(self, session: Session) -> list[MetricResult]:
        """Score ``session``: per-turn results (if any), then the session's result, last."""
        if self.uses_judge:
            raise UsageError(f"{self.name} needs a judge model; use evaluate_async")
        for need in self.needs:  # checked in place: the common case lacks nothing and makes no list
            if not REQUIREMENTS[need](session):
                return [self.not_applicable(f"missing {', '.join(self.missing(session))}")]
        try:
            if self.level == "session":
                return [self.score_session(session)]
            turns = session.turns()
            final = final_turn(turns)
            results = [self.score_turn(session, t, last=t.index == final) for t in turns]
        except Exception as exc:  # errors are data: one bad session never stops a run
            return [self.result(None, error=f"{type(exc).__name__}: {exc}")]
        return [*results, self.roll_up(session, results)]

    def evaluate_calls(self, calls: SessionCalls) -> list[MetricResult]:
        """``evaluate`` of the session whose tool calls ``calls`` are, for a metric that ``reads_calls``: the
        same results, from the calls alone."""
        missing = [need for need in self.needs if not CALL_REQUIREMENTS[need](calls)]
        if missing:
            return [self.not_applicable(f"missing {', '.join(missing)}")]
        try:
            return [self.score_calls(calls)]
        except Exception as exc:  # as in ``evaluate``: errors are data
            return [self.result(None, error=f"{type(exc).__name__}: {exc}")]

    # -- judged scoring --------------------------------------------------------------------

    async def judge_turn(self, session: Session, turn: Turn, judge: Judge, *, last: bool) -> MetricResult:
        """Score one turn with the judge (turn-level judge metrics)."""
        raise NotImplementedError

    async def judge_session(self, session: Session, judge: Judge) -> MetricResult:
        """Score the session with the judge (session-level judge metrics)."""
        raise NotImplementedError

    async def evaluate_async(self, session: Session, judge: Judge | None) -> list[MetricResult]:
        """Score ``session``, calling the judge where the metric needs one."""
        if not self.uses_judge:
            return self.evaluate(session)
        if judge is None:
            return [self.result(None, error="no judge model configured (EVALCORE_JUDGE_MODEL or --judge-model)")]
        missing = self.missing(session)
        if missing:
            return [self.not_applicable(f"missing {', '.join(missing)}")]
        if self.level == "session":
            return [await self._guarded(self.judge_session(session, judge), None, judge)]
        turns = session.turns()
        final = final_turn(turns)
        results = [
            await self._guarded(self.judge_turn(session, t, judge, last=t.index == final), t.index, judge)
            for t in turns
        ]
        return [*results, _judged(self.roll_up(session, results), judge)]

    async def _guarded(self, work: Any, turn: int | None, judge: Judge | None = None) -> MetricResult:
        try:
            result: MetricResult = await work
        except Exception as exc:  # the judge's failures are data, kept with the item, with what they cost
            result = self.result(None, turn=turn, error=f"{type(exc).__name__}: {exc}", usage=_usage_of_failure(exc))
        return _judged(result, judge)

    # -- rolling turns up ------------------------------------------------------------------

    def roll_up(self, session: Session, results: list[MetricResult]) -> MetricResult:
        """The session's score from its turns' scores, weighted by Gaussia's rules.

        The weights are resolved over every turn of the session (Gaussia resolves them over all
        of a session's batches; a fallback to equal weights is reported as a warning), then the
        turns that failed or do not apply are left out and the weights of the rest renormalised
        to sum to 1, as Gaussia's weighted mean does. When every turn scored weighs 0, the
        session has no score ("not applicable"), rather than one decided by weightless turns.
        """
        scored = [r for r in results if r.status == "ok" and r.value is not None]
        failed = [r for r in results if r.status == "error"]
        if not scored:
            if failed:  # what the failed calls cost stays with the session's result
                error = f"every turn failed; first: {failed[0].error}"
                return self.result(None, error=error, usage=_sum_usage(results))
            reasons = sorted({r.not_applicable or "" for r in results})
            return self.not_applicable("no turn to score" + (f" ({'; '.join(reasons)})" if reasons else ""))
        turns = [r.turn for r in results if r.turn is not None]
        resolved, warning = resolve_weights([_turn_weight(session, t) for t in turns])
        weight_of = dict(zip(turns, resolved, strict=True))
        raw = [weight_of.get(r.turn, 0.0) if r.turn is not None else 0.0 for r in scored]
        total = math.fsum(raw)
        if total <= 0.0:
            which = ", ".join(str((r.turn or 0) + 1) for r in scored)
            return MetricResult(
                self.name,
                not_applicable=f"the turns scored ({which}) all weigh 0",
                warnings=[warning] if warning else [],
                usage=_sum_usage(results),
            )
        weights = [w / total for w in raw]
        value = math.fsum(w * (r.value or 0.0) for w, r in zip(weights, scored, strict=True))
        sub: dict[str, float] = {}
        for key in scored[0].sub:
            if all(key in r.sub for r in scored):
                sub[key] = math.fsum(w * r.sub[key] for w, r in zip(weights, scored, strict=True))
        reason = f"weighted mean of {len(scored)} turn{'s' if len(scored) != 1 else ''}"
        if failed:
            reason += f"; {len(failed)} failed"
        return self.result(value, reason, sub=sub, warnings=[warning] if warning else [], usage=_sum_usage(results))


def _judged(result: MetricResult, judge: Judge | None) -> MetricResult:
    """A judged result made safe to keep: its texts redacted of credentials (the client already did;
    this is the second fence) and cut to ``MAX_REASON_CHARS``; untrusted token figures noted."""
    redact: Callable[[str], str] = getattr(judge, "redact", None) or (lambda text: text)
    if result.reason is not None:
        result.reason = _capped(redact(result.reason))
    if result.error is not None:
        result.error = _capped(redact(result.error))
    if result.not_applicable is not None:
        result.not_applicable = _capped(redact(result.not_applicable))
    if result.usage is not None:
        for warning in result.usage.warnings:
            if warning not in result.warnings:
                result.warnings.append(warning)
    if result.warnings:
        result.warnings = [_capped(redact(w)) for w in result.warnings]
    return result


def _capped(text: str) -> str:
    if len(text) <= MAX_REASON_CHARS:
        return text
    return f"{text[:MAX_REASON_CHARS]} [cut: {len(text):,} characters in all]"


def _usage_of_failure(exc: Exception) -> JudgeUsage | None:
    verdict = getattr(exc, "verdict", None)
    if verdict is None or not (verdict.calls or verdict.cached):
        return None
    return JudgeUsage.of(getattr(exc, "model", None) or "judge", verdict)


def _turn_weight(session: Session, turn: int | None) -> float | None:
    if turn is None or turn >= len(session.turn_truth):
        return None
    return session.turn_truth[turn].weight


def _sum_usage(results: list[MetricResult]) -> JudgeUsage | None:
    usages = [r.usage for r in results if r.usage is not None]
    if not usages:
        return None
    costs = [u.cost for u in usages]
    tokens_in = [u.input_tokens for u in usages]
    tokens_out = [u.output_tokens for u in usages]
    return JudgeUsage(
        model=usages[0].model,
        calls=sum(u.calls for u in usages),
        cached=sum(u.cached for u in usages),
        input_tokens=None if None in tokens_in else sum(t or 0 for t in tokens_in),
        output_tokens=None if None in tokens_out else sum(t or 0 for t in tokens_out),
        cost=None if any(c is None for c in costs) else math.fsum(c or 0.0 for c in costs),
        latency_ms=sum(u.latency_ms for u in usages),
        warnings=tuple(dict.fromkeys(w for u in usages for w in u.warnings)),
    )


#: The built-in metrics' modules: imported, and so registered, on the registry's first lookup.
BUILTIN_METRICS = tuple(
    f"evalcore.metrics.{name}"
    # deterministic first: a lookup imports these in order until the name is found
    for name in ("tool_calls", "counts", "strings", "judged", "databricks_judges", "gaussia_judges")
)
#: The entry-point group through which an installed distribution adds metrics (see ``load_metric_plugin``).
PLUGIN_GROUP = "evalcore.metrics"


def _adopt(entry: Any) -> object:
    """Register what a plug-in names (``module:Class``): a ``Metric`` subclass, else a ``RegistryError``."""
    if not (isinstance(entry, type) and issubclass(entry, Metric)):
        raise RegistryError(f"{entry!r} is not a Metric class (a subclass of evalcore.metrics.Metric)")
    return register_metric(entry)


def _named_plugins() -> list[tuple[str, str]]:
    """The plug-ins ``$EVALCORE_PLUGINS`` names (``evalcore app --plugin`` sets it for the app)."""
    from evalcore import config

    return [(target, f"plug-in {target!r} (of {config.PLUGINS})") for target in config.plugins()]


_REGISTRY: Registry[type[Metric]] = Registry(
    "metric", BUILTIN_METRICS, group=PLUGIN_GROUP, adopt=_adopt, also=_named_plugins
)


def register_metric(cls: type[Metric]) -> type[Metric]:
    """Class decorator: register a metric under its ``name``; a taken name is refused, and so are a metric with
    no ``name`` or ``description``, one that needs what no rule of ``REQUIREMENTS`` tells, and one that says it
    ``reads_calls`` but is not a session-level deterministic one needing only what calls tell."""
    for attribute in ("name", "description"):
        if not isinstance(getattr(cls, attribute, None), str) or not getattr(cls, attribute).strip():
            raise RegistryError(f"metric class {cls.__qualname__} has no {attribute} (a ClassVar[str])")
    unknown = [need for need in cls.needs if need not in REQUIREMENTS]
    if unknown:
        raise RegistryError(
            f"metric {cls.name!r} needs {', '.join(map(repr, unknown))}, which evalcore cannot tell; "
            f"needs are among: {', '.join(REQUIREMENTS)}"
        )
    if cls.reads_calls and (cls.uses_judge or cls.level != "session" or not set(cls.needs) <= set(CALL_REQUIREMENTS)):
        raise RegistryError(
            f"metric {cls.name!r} reads_calls: it must be a session-level deterministic metric whose needs are "
            f"among {', '.join(CALL_REQUIREMENTS)}"
        )
    return _REGISTRY.add(cls.name, cls)


def load_metric_plugin(target: str) -> list[str]:
    """Load the metrics of a plug-in not installed as a distribution (``--plugin``): ``module`` (whose import
    registers its metrics with ``@register_metric``) or ``module:Class`` (a ``Metric`` subclass, registered here).
    Returns the names of its metrics; a plug-in that cannot be loaded is a ``PluginError`` naming it and why."""
    return _REGISTRY.load(target)


def plugin_failures() -> list[str]:
    """Why each installed plug-in (entry point of ``evalcore.metrics``) that failed to load failed, one line each
    (after a listing: ``metrics()``, ``metric_names()``)."""
    return list(_REGISTRY.plugin_failures)


def metrics() -> list[type[Metric]]:
    """Every registered metric class, by name."""
    return _REGISTRY.entries()


def metric_names() -> list[str]:
    """Every registered metric's name, sorted."""
    return _REGISTRY.names()


def get_metric(name: str) -> type[Metric]:
    """The metric class registered as ``name``."""
    return _REGISTRY.get(name)


def create_metric(spec: str | dict[str, Any] | Metric) -> Metric:
    """A metric from ``name``, ``name:key=value:...``, or ``{"name": ..., "params": {...}}`` (also as JSON text)."""
    if isinstance(spec, Metric):
        return spec
    if isinstance(spec, str) and spec.lstrip().startswith("{"):
        from evalcore._infra.jsonopt import json_option, shown

        spec = json_option(spec, f"metric spec {shown(spec)!r}")
        if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
            raise UsageError('a JSON metric spec needs a "name" (and may have "params")')
    if isinstance(spec, str):
        name, *pairs = spec.split(":")
        params: dict[str, Any] = {}
        for pair in pairs:
            key, sep, raw = pair.partition("=")
            if not sep:
                raise UsageError(f"metric parameter {pair!r} of {name} should be key=value")
            params[key.strip()] = _parse_value(raw.strip())
    else:
        name, params = spec["name"], dict(spec.get("params") or {})
    cls = get_metric(name.strip())
    try:
        return cls(**params)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in error["loc"])
        raise UsageError(f"metric {cls.name}: {where}: {error['msg']}") from exc


def final_turn(turns: Sequence[Turn]) -> int:
    """The turn the session's own reference answer is for (``last`` of ``score_turn``): the last the assistant
    answered — a conversation may end with the user's message alone (τ-bench's "###STOP###"), and a reference
    answer given the session compares with its final answer — else the last."""
    for turn in reversed(turns):
        if turn.answer is not None:
            return turn.index
    return len(turns) - 1


def _spec_value(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _parse_value(raw: str) -> Any:
    """A ``key=value`` parameter's value: JSON when it is JSON, else the text as written."""
    from evalcore._infra.jsonopt import NOT_JSON, json_option, shown

    value = json_option(raw, f"metric parameter {shown(raw)!r}", text_if_not_json=True)
    return raw if value is NOT_JSON else value

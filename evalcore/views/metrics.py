"""What the Metrics page shows: the metrics by group with what each needs and how many sessions
of the dataset have it, each metric's parameters as form fields, the judge's endpoint (never its
key), an estimate of a judge run's calls, tokens and cost, a running job's live counts, and the
dataset's past runs.

Which sessions have what a metric needs is found with the metric's own rules
(``evalcore.metrics.REQUIREMENTS``) on each session as the store reads it back, reviewers' edits
included (``Runs.sessions``). That pass is the slow part on a large dataset (about 50 us a session), so it is made
once per dataset and kept: later looks read only the sessions edited, re-imported or added since
(see ``needs_profile``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import threading
import types
import typing
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from evalcore.errors import NotFoundError, UsageError
from evalcore.judge import JudgeConfig
from evalcore.metrics import REQUIREMENTS, Metric, create_metric, get_metric, metrics, plugin_failures
from evalcore.metrics.transcript import transcript
from evalcore.model.redact import public_url
from evalcore.resuming import OtherEndpointError
from evalcore.schema import Session
from evalcore.store import Store
from evalcore.store.jobs import STALLED_AFTER, Job
from evalcore.store.records import now
from evalcore.store.runs import RESUMABLE, Run
from evalcore.views.outcome import Failure, ending, failures, failures_text
from evalcore.views.table import column
from evalcore.views.text import visible

__all__ = [
    "ESTIMATE_NOTE",
    "GROUPS",
    "GROUP_TITLES",
    "NEED_LABELS",
    "Applicability",
    "Estimate",
    "EstimateRow",
    "JudgeView",
    "LastRun",
    "MetricInfo",
    "NeedsProfile",
    "ParamField",
    "PastRun",
    "PickerRow",
    "ResumeView",
    "ProgressView",
    "applicability",
    "endpoint_refusal",
    "estimate",
    "estimate_rows",
    "estimate_total",
    "judge_config",
    "judge_view",
    "last_run",
    "latest_scoring_job",
    "metric_groups",
    "needs_profile",
    "param_fields",
    "params_from_form",
    "past_runs",
    "picker_rows",
    "plugin_problems",
    "progress_view",
    "resumable_runs",
    "resume_view",
    "run_failures",
    "run_view",
]

Group = Literal["deterministic", "LLM judge"]
GROUPS: tuple[Group, ...] = ("deterministic", "LLM judge")
#: Each group's name as a heading.
GROUP_TITLES: dict[Group, str] = {"deterministic": "Deterministic", "LLM judge": "LLM judge"}

#: What each need is, in words: "needs reference tool calls: 12 of 40 sessions have them".
NEED_LABELS: dict[str, str] = {
    "reference_tool_calls": "reference tool calls",
    "reference": "a reference answer",
    "expected_facts": "expected facts",
    "expected_facts_or_response": "expected facts or an expected response",
    "retrieved_context": "retrieved context",
    "expected_retrieved_context": "expected retrieved context",
    "reference_topics": "reference topics",
    "rubrics": "rubrics of their own",
    "context": "a context",
    "expected_tool_usage": "expected tool usage on a turn",
    "desired_outcome": "a reference answer, goal or expected facts",
    "answer": "an assistant answer",
    "user_message": "a user message",
    "guidelines": "guidelines",
    "token_usage": "token usage recorded in the data",
    "latency": "latency recorded in the data",
}

#: Needs a metric adds beyond its class's ``needs`` (its own ``missing``), and the parameter that lifts them.
_EXTRA_NEEDS: dict[str, Callable[[Session], bool]] = {"guidelines": lambda s: bool(s.guidelines)}
_CHECKS: tuple[tuple[str, Callable[[Session], bool]], ...] = (*REQUIREMENTS.items(), *_EXTRA_NEEDS.items())
_BIT = {name: 1 << i for i, (name, _) in enumerate(_CHECKS)}


# -- the metrics by group ---------------------------------------------------------------------


@dataclass(frozen=True)
class MetricInfo:
    """One registered metric as the picker lists it."""

    name: str
    description: str
    group: Group
    level: str  # "turn" or "session"
    needs: tuple[str, ...]
    has_params: bool

    @property
    def needs_text(self) -> str:
        """What it needs, in words ("nothing" when nothing)."""
        return ", ".join(NEED_LABELS.get(n, n) for n in self.needs) or "nothing"


def _needs(cls: type[Metric], params: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """What ``cls`` needs with ``params``: its ``needs``, and guidelines for guideline adherence
    unless global guidelines are given (its ``missing`` says so)."""
    needs = tuple(cls.needs)
    if "global_guidelines" in cls.model_fields and not (params or {}).get("global_guidelines"):
        needs += ("guidelines",)
    return needs


def metric_groups() -> dict[Group, list[MetricInfo]]:
    """Every registered metric, deterministic ones first, then LLM judges; by name within each."""
    groups: dict[Group, list[MetricInfo]] = {g: [] for g in GROUPS}
    for cls in metrics():
        group: Group = "LLM judge" if cls.uses_judge else "deterministic"
        groups[group].append(
            MetricInfo(cls.name, cls.description, group, cls.level, _needs(cls), bool(cls.model_fields))
        )
    return groups


def plugin_problems() -> list[str]:
    """Why each installed plug-in metric that could not be loaded was not (one message each, naming it): the
    page shows them above the metrics, which are listed without them."""
    metrics()  # (the listing loads the plug-ins)
    return plugin_failures()


# -- which sessions have what ------------------------------------------------------------------


@dataclass(frozen=True)
class NeedsProfile:
    """For one dataset: how many sessions have each combination of what metrics need."""

    total: int
    masks: dict[int, int]  # bit mask of the needs met -> number of sessions
    pks_by_mask: dict[int, list[int]]  # the sessions behind each mask, in pk order
    read: int = 0  # sessions read from the store for this look (the others were known, unchanged)
    version: tuple[str, int, int] = ("", 0, 0)  # (database, dataset id, latest edit): what the counts are of

    def count(self, needs: tuple[str, ...]) -> int:
        """How many sessions have every one of ``needs``."""
        want = _mask(needs)
        return sum(n for mask, n in self.masks.items() if mask & want == want)

    def have(self, need: str) -> int:
        """How many sessions have ``need``."""
        return self.count((need,))

    def pks(self, needs: tuple[str, ...]) -> list[int]:
        """The sessions that have every one of ``needs``, in pk order."""
        want = _mask(needs)
        return sorted(pk for mask, pks in self.pks_by_mask.items() if mask & want == want for pk in pks)


def _mask(needs: tuple[str, ...]) -> int:
    mask = 0
    for need in needs:
        mask |= _BIT[need]
    return mask


def session_mask(session: Session) -> int:
    """The needs ``session`` meets, as bits."""
    mask = 0
    for name, check in _CHECKS:
        if check(session):
            mask |= _BIT[name]
    return mask


@dataclass
class _Known:
    """What earlier looks found in one dataset: each session's needs, as of edit ``edit_id``; and the profile the
    last look gave, with the ``(sessions, highest session pk)`` it was of."""

    edit_id: int
    masks: dict[int, int]
    shape: tuple[int, int] = (-1, -1)
    profile: NeedsProfile | None = None


_cache: dict[tuple[str, int], _Known] = {}  # (database, dataset id) -> what is known
_cache_lock = threading.Lock()
_SIGNATURE = ",".join(name for name, _ in _CHECKS)  # the bits' meaning: a saved profile of other bits is not used


def _saved(store: Store, dataset_id: int) -> _Known | None:
    raw = store.meta.get(f"needs_profile:{dataset_id}")
    if not raw:
        return None
    try:
        data = json.loads(raw)
        if data["checks"] != _SIGNATURE:
            return None
        return _Known(int(data["edit_id"]), {int(pk): int(mask) for pk, mask in data["masks"]})
    except (ValueError, KeyError, TypeError):  # a damaged entry: counted afresh
        return None


def needs_profile(store: Store, dataset: str) -> NeedsProfile:
    """What the sessions of ``dataset`` have.

    Counted once per dataset, then kept (in memory and in the store's ``meta`` table, so a restart
    does not count again); each later look reads the dataset's session ids (an index) and the
    sessions edited or re-imported since (every change to a session is an entry in ``edits``), and
    only those sessions themselves.
    """
    dataset_id = store.datasets.id_of(dataset)
    edit_id = store.sessions.last_edit()
    # The dataset unchanged since the last look (no session added or edited; sessions are removed only with
    # their dataset): that look's profile, with no session read (this runs on every rerun of the Metrics page).
    n, top = store.sessions.shape(dataset)
    key = (store.url, dataset_id)
    with _cache_lock:
        known = _cache.get(key)
    if known is not None and known.profile is not None and (known.shape, known.edit_id) == ((n, top), edit_id):
        return dataclasses.replace(known.profile, read=0)
    pks = sorted(store.sessions.pks(dataset))
    known = known or _saved(store, dataset_id) or _Known(0, {})
    masks = dict(known.masks)
    stale = {pk for pk in pks if pk not in masks}
    if known.edit_id < edit_id:
        members = set(pks)
        stale |= {pk for pk in store.sessions.edited_since(known.edit_id) if pk in members}
    todo = sorted(stale)
    runs = store.runs
    for start in range(0, len(todo), 1000):  # read as the scorer reads them: a third faster than Store.get_many
        for pk, session in runs.sessions(todo[start : start + 1000]):
            masks[pk] = session_mask(session)
    fresh = _Known(edit_id, {pk: masks[pk] for pk in pks if pk in masks})
    if todo or len(fresh.masks) != len(known.masks) or known.edit_id != edit_id:
        entry = {"checks": _SIGNATURE, "edit_id": edit_id, "masks": list(fresh.masks.items())}
        store.meta.set(f"needs_profile:{dataset_id}", json.dumps(entry, separators=(",", ":")))
    counts: Counter[int] = Counter()
    pks_by_mask: dict[int, list[int]] = {}
    for pk, mask in fresh.masks.items():
        counts[mask] += 1
        pks_by_mask.setdefault(mask, []).append(pk)
    version = (store.url, dataset_id, edit_id)
    fresh.shape, fresh.profile = (n, top), NeedsProfile(len(fresh.masks), dict(counts), pks_by_mask, len(todo), version)
    with _cache_lock:
        _cache[key] = fresh
    return fresh.profile


@dataclass(frozen=True)
class Applicability:
    """How many sessions of the dataset a metric can score, and, when not all, why not."""

    metric: str
    sessions: int
    applicable: int
    reason: str | None  # "needs reference tool calls: 12 of 40 sessions have them"

    @property
    def fraction(self) -> float:
        """The share of sessions it can score (0 for an empty dataset)."""
        return self.applicable / self.sessions if self.sessions else 0.0

    @property
    def text(self) -> str:
        """``40 of 40`` or the reason."""
        if self.reason:
            return self.reason
        return f"all {self.sessions:,}" if self.sessions else "no sessions"


def applicability(profile: NeedsProfile, name: str, params: Mapping[str, Any] | None = None) -> Applicability:
    """How far metric ``name`` (with ``params``) applies to the profiled dataset."""
    needs = _needs(get_metric(name), params)
    applicable = profile.count(needs)
    reason = None
    if applicable < profile.total:
        short = [n for n in needs if profile.have(n) < profile.total]
        parts = [f"{NEED_LABELS.get(n, n)}: {profile.have(n):,} of {profile.total:,} sessions have it" for n in short]
        reason = "needs " + "; ".join(parts)
        if len(short) > 1:
            reason += f" ({applicable:,} have all)"
    return Applicability(name, profile.total, applicable, reason)


@dataclass(frozen=True)
class PickerRow:
    """A metric in the picker's table."""

    metric: str
    applies_to: float  # the share of sessions it applies to, 0 to 1
    needs: str
    measures: str


def picker_rows(profile: NeedsProfile, infos: list[MetricInfo]) -> list[PickerRow]:
    """The picker's table: each metric with what it measures, the share of sessions it applies to (0 to
    1) and what it needs, with how many sessions have it when not all do."""
    rows = []
    for info in infos:
        fit = applicability(profile, info.name)
        rows.append(PickerRow(info.name, fit.fraction, fit.reason or info.needs_text, info.description))
    return rows


# -- parameters as form fields -----------------------------------------------------------------

FieldKind = Literal["bool", "choice", "int", "float", "text", "text_list", "mapping"]


@dataclass(frozen=True)
class ParamField:
    """One parameter of a metric as a form field: a dotted ``name`` for a field of a nested model."""

    name: str
    label: str
    kind: FieldKind
    default: Any  # as the widget shows it: a text list one item a line, a mapping "key: value" a line
    choices: tuple[Any, ...] = ()
    description: str = ""
    minimum: float | None = None
    maximum: float | None = None
    required: bool = False


def _bounds(info: FieldInfo) -> tuple[float | None, float | None]:
    low = high = None
    for rule in info.metadata:
        for attr in ("ge", "gt"):
            if getattr(rule, attr, None) is not None:
                low = float(getattr(rule, attr))
        for attr in ("le", "lt"):
            if getattr(rule, attr, None) is not None:
                high = float(getattr(rule, attr))
    return low, high


def _shown(kind: FieldKind, value: Any) -> Any:
    if kind == "text_list":
        return "\n".join(str(v) for v in value or [])
    if kind == "mapping":
        return "\n".join(f"{k}: {v}" for k, v in (value or {}).items())
    return value


def _fields_of(model: type[BaseModel], prefix: str = "") -> list[ParamField]:
    found: list[ParamField] = []
    for name, info in model.model_fields.items():
        annotation = info.annotation
        origin = typing.get_origin(annotation)
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        low, high = _bounds(info)
        common = ParamField(
            name=prefix + name,
            label=(prefix + name).replace("_", " ").replace(".", ": "),
            kind="text",
            default=None,
            description=info.description or "",
            required=info.is_required(),
        )
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            found += _fields_of(annotation, f"{prefix}{name}.")
            continue
        if origin is Literal:
            choices = typing.get_args(annotation)
            found.append(replace(common, kind="choice", default=default, choices=choices))
        elif annotation is bool:
            found.append(replace(common, kind="bool", default=bool(default)))
        elif annotation is int:
            found.append(replace(common, kind="int", default=default, minimum=low, maximum=high))
        elif annotation is float:
            found.append(replace(common, kind="float", default=default, minimum=low, maximum=high))
        elif origin is list:
            found.append(replace(common, kind="text_list", default=_shown("text_list", default)))
        elif origin is dict:
            found.append(replace(common, kind="mapping", default=_shown("mapping", default)))
        elif annotation is str or (origin in (typing.Union, types.UnionType) and str in typing.get_args(annotation)):
            found.append(replace(common, default=default or ""))
        else:  # a type no widget fits: edited as JSON text
            found.append(replace(common, default=json.dumps(default)))
    return found


def param_fields(name: str) -> list[ParamField]:
    """The form fields of metric ``name``'s parameters (its pydantic fields; nested models flattened)."""
    return _fields_of(get_metric(name))


def _parse_field(field: ParamField, value: Any) -> Any:
    if field.kind == "text_list":
        return [line.strip() for line in str(value or "").splitlines() if line.strip()]
    if field.kind == "mapping":
        mapping: dict[str, str] = {}
        for n, line in enumerate(str(value or "").splitlines(), 1):
            if not line.strip():
                continue
            key, sep, text = line.partition(":")
            if not sep or not key.strip():
                raise UsageError(f"{field.label}: line {n} should read 'name: text', not {line.strip()!r}")
            mapping[key.strip()] = text.strip()
        return mapping
    if field.kind == "text":
        return str(value or "").strip()
    return value


def params_from_form(name: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters of metric ``name`` from its form's ``values`` (by field name), those left at
    their default left out; checked by the metric itself (``UsageError`` naming the bad field)."""
    params: dict[str, Any] = {}
    for field in param_fields(name):
        if field.name not in values:
            continue
        value = _parse_field(field, values[field.name])
        if value == _parse_field(field, field.default) and not field.required:
            continue
        target = params
        *path, last = field.name.split(".")
        for part in path:
            target = target.setdefault(part, {})
        target[last] = value
    metric = create_metric({"name": name, "params": params})  # validated: UsageError names the field
    return metric.params()


# -- the judge ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgeView:
    """The judge a run would use, as it may be shown: model, endpoint without credentials, and only
    whether a key is set."""

    model: str | None
    base_url: str
    key_note: str  # "key: set in environment" or "no key"

    @property
    def configured(self) -> bool:
        """A model is named."""
        return bool(self.model)


def judge_config(model: str | None = None, base_url: str | None = None, **options: Any) -> JudgeConfig | None:
    """The judge from the environment, with the model and base URL the page may override (never the
    key: it comes from the environment only); ``None`` when no model is named."""
    return JudgeConfig.from_env(
        model=(model or "").strip() or None, base_url=(base_url or "").strip() or None, **options
    )


def judge_view(model: str | None = None, base_url: str | None = None) -> JudgeView:
    """What the page shows of the judge (see ``judge_config``)."""
    config = judge_config(model, base_url)
    probe = config or judge_config("?", base_url)  # the endpoint and key as they would be, had a model been named
    assert probe is not None
    note = "key: set in environment" if probe.api_key else "no key"
    return JudgeView(config.model if config else None, probe.public_url, note)


# -- an estimate of a judge run ------------------------------------------------------------------

#: Characters per token, for the estimate (English text averages about 4).
CHARS_PER_TOKEN = 4
#: Tokens of one judge answer, for the estimate: a JSON object with a reason of a sentence or two.
OUTPUT_TOKENS_PER_CALL = 150
#: Sessions read to estimate prompt sizes; the rest is extrapolated from them.
ESTIMATE_SAMPLE = 200
#: Characters of a turn judge's instructions and answer schema (the prompt is made inside the call).
_TURN_INSTRUCTIONS = 900


#: Prompt sizes measured for an estimate, by (profile version, metric, parameters, sample): a page
#: asks again on every rerun, and the sessions have not changed.
_measured: dict[tuple[Any, ...], tuple[int, int, int]] = {}


@dataclass(frozen=True)
class Estimate:
    """What running one judge metric over the dataset would take, estimated before running it.

    Calls are exact for session judges (one per session it applies to) and counted from the turns
    with an answer for turn judges (measured on a sample); tokens are the prompt's characters / 4
    plus ``OUTPUT_TOKENS_PER_CALL`` per call, before any cached answer or repair; cost uses the
    price table. A model with no price has no cost and a note saying so.
    """

    metric: str
    sessions: int
    calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None
    note: str | None


def _session_prompt_chars(metric: Metric, session: Session) -> tuple[int, int]:
    """(calls, prompt characters) of one session."""
    if metric.level == "session":
        prompt = getattr(metric, "prompt", None)
        shape = getattr(metric, "answer_shape", None)
        if callable(prompt) and callable(shape):
            try:
                schema = json.dumps(shape(session).model_json_schema())
                return 1, len(str(getattr(metric, "system", ""))) + len(schema) + len(prompt(session)) + 120
            except Exception:  # an estimate never fails a page: fall back to the transcript's size
                pass
        return 1, _TURN_INSTRUCTIONS + len(transcript(session.messages))
    calls = chars = 0
    seen = 0
    for turn in session.turns():
        seen += sum(len(m.text or "") for m in turn.messages) + 20
        if turn.answer is None:
            continue
        calls += 1
        chars += _TURN_INSTRUCTIONS + len(session.context or "") + seen + len(turn.truth.ground_truth or "")
    return calls, chars


def estimate(
    store: Store,
    profile: NeedsProfile,
    spec: str | dict[str, Any] | Metric,
    config: JudgeConfig | None,
    *,
    model: str | None = None,
    sample: int = ESTIMATE_SAMPLE,
) -> Estimate:
    """Calls, tokens and cost of judge metric ``spec`` over the profiled dataset (see ``Estimate``)."""
    metric = create_metric(spec)
    pks = profile.pks(_needs(type(metric), metric.params()))
    memo = (profile.version, profile.total, metric.key(), json.dumps(metric.params(), sort_keys=True), sample)
    with _cache_lock:
        measured = _measured.get(memo)
    if measured is None:
        step = max(1, math.ceil(len(pks) / sample)) if pks else 1
        picked = pks[::step][:sample]
        calls = chars = 0
        for stored in store.sessions.get_many(picked):
            n, c = _session_prompt_chars(metric, stored.session)
            calls += n
            chars += c
        measured = (calls, chars, len(picked))
        with _cache_lock:
            if len(_measured) >= 256:  # older versions of the data: forgotten
                _measured.clear()
            _measured[memo] = measured
    calls, chars, seen = measured
    scale = len(pks) / seen if seen else 0.0
    total_calls = round(calls * scale)
    tokens_in = round(chars * scale / CHARS_PER_TOKEN)
    tokens_out = total_calls * OUTPUT_TOKENS_PER_CALL
    name = model or (config.model if config else None)
    cost: float | None = None
    note = None
    if name is None:
        note = "no judge model named"
    else:
        prices = config.prices if config else {}
        price = prices.get(name)
        if price is None:
            note = f"no price for model {name}"
        else:
            cost = (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
    return Estimate(metric.key(), len(pks), total_calls, tokens_in, tokens_out, cost, note)


#: How the estimate is made, for the page to say under it.
ESTIMATE_NOTE = (
    f"An estimate: prompts measured on up to {ESTIMATE_SAMPLE} sessions at {CHARS_PER_TOKEN} characters a token, "
    f"{OUTPUT_TOKENS_PER_CALL} tokens an answer; answers already in the judge's cache cost nothing, repairs and "
    "retries cost more."
)


@dataclass(frozen=True)
class EstimateRow:
    """One judge metric's estimate."""

    metric: str
    calls: int
    tokens_in: int
    tokens_out: int
    cost: float | None = column("cost ($)")


def estimate_rows(estimates: list[Estimate]) -> list[EstimateRow]:
    """The estimate's table: one row per judge metric."""
    return [EstimateRow(e.metric, e.calls, e.input_tokens, e.output_tokens, e.cost) for e in estimates]


def estimate_total(estimates: list[Estimate]) -> str:
    """All the estimates in one line: ``About 80 calls, 12,400 tokens, $0.0031.``"""
    calls = sum(e.calls for e in estimates)
    tokens = sum(e.input_tokens + e.output_tokens for e in estimates)
    costs = [e.cost for e in estimates]
    text = f"About {calls:,} calls, {tokens:,} tokens"
    if costs and all(c is not None for c in costs):
        text += f", ${sum(c or 0.0 for c in costs):,.4f}."
    else:
        notes = sorted({e.note for e in estimates if e.note})
        text += f"; cost unknown ({'; '.join(notes)})." if notes else "."
    return text


# -- a running job --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProgressView:
    """A scoring job (or a run started outside the app) as the page follows it: the bar's fraction and text, the
    live counts, and the failures grouped by reason."""

    job_id: int | None  # None: a run no job of the app works on (the command line's, the library's)
    run_id: int | None
    status: str  # "running", "done", "partial", "failed", "cancelled" or "stalled"
    fraction: float
    sessions_done: int | None  # None: not known (a run without a job counts items only)
    sessions_total: int | None
    done: int  # (session, metric) items scored
    failed: int
    not_applicable: int
    items: int
    message: str
    failures: tuple[Failure, ...] = ()

    @property
    def active(self) -> bool:
        """Still going."""
        return self.status == "running"

    @property
    def counts(self) -> str:
        """``120 scored · 3 failed · 17 not applicable``."""
        return f"{self.done:,} scored · {self.failed:,} failed · {self.not_applicable:,} not applicable"

    @property
    def counts_markdown(self) -> str:
        """The sessions and the items' counts in one line, the figures in bold (markdown; only numbers): items
        scored, failed and not applicable, of the run's items (never fewer than those three together)."""
        total = max(self.items, self.done + self.failed + self.not_applicable)
        items = (
            f"**{self.done:,}** scored · **{self.failed:,}** failed · **{self.not_applicable:,}** not applicable"
            + (f" of {total:,}" if total else "")
        )
        if self.sessions_total is None:
            return "Items " + items
        return f"Sessions **{self.sessions_done or 0:,}** of {self.sessions_total:,} · items " + items

    @property
    def failures_line(self) -> str:
        """``Failures: 140 × HTTP 500 from the judge · 20 × timeout`` (empty when nothing failed)."""
        return f"Failures: {failures_text(list(self.failures))}" if self.failures else ""


#: Failures of runs already grouped, by (database, run, failed items, last save): a finished run's never change.
_failures: dict[tuple[Any, ...], tuple[Failure, ...]] = {}


def run_failures(store: Store, run_id: int, n_failed: int, updated_at: str | None = None) -> tuple[Failure, ...]:
    """Run ``run_id``'s failed items grouped by reason, the most frequent first (none when ``n_failed`` is 0)."""
    if not n_failed:
        return ()
    key = (store.url, run_id, n_failed, updated_at)
    with _cache_lock:
        found = _failures.get(key)
    if found is None:
        found = tuple(failures(store.runs.error_counts(run_id)))
        with _cache_lock:
            if len(_failures) >= 512:
                _failures.clear()
            _failures[key] = found
    return found


def _finished(status: str, done: int, failed: int) -> str:
    """A run's status as shown: a "done" run where items failed is "partial", or "failed" when all did."""
    return ending(done, failed) if status == "done" else status


def _items_scored(done: int, not_applicable: int) -> str:
    """``23 items scored, 12 not applicable`` (what a finished run's items came to; failures are said apart)."""
    scored = f"{done:,} {'item' if done == 1 else 'items'} scored"
    return scored + (f", {not_applicable:,} not applicable" if not_applicable else "")


def _done_message(view_status: str, done: int, failed: int, scored: str, run_id: int | None) -> str:
    run = f" (run #{run_id})" if run_id else ""
    if view_status == "failed":
        return f"Failed: all {failed:,} items failed, none was scored{run}"
    if view_status == "partial":
        return f"Partly failed: {failed:,} of {done + failed:,} items failed{run}"
    return f"Done: {scored}{run}"


def progress_view(store: Store, job: Job, run_id: int | None) -> ProgressView:
    """How far scoring job ``job`` (whose run is ``run_id``, once it exists) has come."""
    done = failed = na = items = 0
    updated = None
    if run_id is not None:
        try:
            live = store.runs.progress(run_id)
        except NotFoundError:  # the run was deleted with its dataset
            pass
        else:
            items, done, failed, na = live.n_items, live.n_done, live.n_failed, live.n_not_applicable
            updated = live.updated_at
    status = "stalled" if job.stalled else job.status
    fraction = job.fraction if job.total or job.status == "done" else 0.0
    if status == "running":
        message = f"Scoring: {job.done:,} of {job.total:,} sessions" if job.total else "Starting the run…"
    elif status == "done":
        status = ending(done, failed)
        message = _done_message(status, done, failed, f"{job.total:,} sessions scored", run_id)
    elif status == "cancelled":
        message = f"Cancelled after {job.done:,} of {job.total:,} sessions; resume it below to go on"
    elif status == "stalled":
        message = "The scoring stopped without a word (the server was restarted?); resume it below"
    else:
        message = f"Failed: {job.error}"
    found = run_failures(store, run_id, failed, updated) if run_id is not None else ()
    return ProgressView(job.id, run_id, status, fraction, job.done, job.total, done, failed, na, items, message, found)


def run_view(store: Store, run: Run) -> ProgressView:
    """Run ``run`` as the page shows a run no job of the app works on (started from the command line, say): its
    status, counts and failures, from its row."""
    status: str = run.status
    stalled = run.status == "running" and run.updated_at is not None and _older_than(run.updated_at, STALLED_AFTER)
    if stalled:
        status = "stalled"
    scored = f"{run.items_done:,} of {max(run.n_items, run.items_done):,} items"
    if status == "running":
        message = f"Scoring outside the app: {scored}"
    elif status == "done":
        status = ending(run.n_done, run.n_failed)
        said = _items_scored(run.n_done, run.n_not_applicable)
        message = _done_message(status, run.n_done, run.n_failed, said, run.id)
    elif status == "cancelled":
        message = f"Cancelled after {scored}; resume it below to go on"
    elif status == "stalled":
        message = "The scoring stopped without a word (its process was stopped?); resume it below"
    else:
        message = f"Failed: {run.error or 'no reason recorded'}"
    return ProgressView(
        None, run.id, status, run.fraction, None, None, run.n_done, run.n_failed, run.n_not_applicable,
        run.n_items, message, run_failures(store, run.id, run.n_failed, run.updated_at),
    )  # fmt: skip


def _older_than(stamp: str, age: timedelta) -> bool:
    try:
        return datetime.fromisoformat(now()) - datetime.fromisoformat(stamp) > age
    except ValueError:
        return False


def latest_scoring_job(store: Store, dataset: str) -> Job | None:
    """The dataset's latest scoring job (running or not), if any."""
    return next((job for job in store.jobs.recent(dataset, limit=50) if job.kind == "score"), None)


@dataclass(frozen=True)
class LastRun:
    """The dataset's latest scoring, whoever started it: a job of the app, or a run made elsewhere (the command
    line)."""

    label: str
    view: ProgressView


def last_run(store: Store, dataset: str) -> LastRun | None:
    """The dataset's latest scoring: its latest job, or its latest run when that is newer (a run the command line
    made has no job)."""
    job = latest_scoring_job(store, dataset)
    newest = store.runs.recent(dataset, limit=1)
    run = newest[0] if newest else None
    if run is not None and (job is None or (job.run_id != run.id and run.started_at > job.started_at)):
        return LastRun(run.label, run_view(store, run))
    if job is None:
        return None
    return LastRun(job.label, progress_view(store, job, job.run_id))


# -- past runs --------------------------------------------------------------------------------------


def _duration(start: str | None, end: str | None) -> str:
    if not start or not end:
        return ""
    try:
        seconds = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


@dataclass(frozen=True)
class PastRun:
    """One of a dataset's runs, as the Metrics page lists them."""

    run: int = column("#")
    started: str = ""
    status: str = ""
    metrics: str = ""
    judge: str = ""
    items: int = 0  # never fewer than the three that follow together
    done: int = column("scored", default=0)
    failed: int = 0
    not_applicable: int = column("not applicable", default=0)
    judge_calls: int | None = column("calls", default=None)
    cost: float | None = column("cost ($)", default=None)
    duration: str = ""
    by: str = ""
    failures: str = ""  # "140 × HTTP 500 from the judge · 20 × timeout"

    @property
    def label(self) -> str:
        """The run as a choice of "Unfinished runs": ``#3 tool_call_f1 (cancelled, 40 of 120 items)`` (plain text)."""
        scored = self.done + self.failed + self.not_applicable
        return f"#{self.run} {self.metrics} ({self.status}, {scored:,} of {self.items:,} items)"


def past_runs(store: Store, dataset: str, *, limit: int = 100) -> list[PastRun]:
    """The dataset's runs, newest first, one row each: metrics, judge, items, scored / failed / not
    applicable (the items never fewer than those three together), judge calls and cost (summed over the session
    scores), duration, status and who started it, and
    the failures grouped by reason. A finished run where items failed has the status "partial", or "all failed"
    when every item that could be scored failed. (A metric's parameters and the judge's name are what someone
    typed: their invisible characters are shown as escapes.)"""
    store.datasets.id_of(dataset)  # NotFoundError for no such dataset
    runs = store.runs.recent(dataset, limit=limit)
    spent = store.runs.judge_spend([run.id for run in runs])
    result = []
    for run in runs:
        calls, cost = spent.get(run.id, (None, None))
        shown = _finished(run.status, run.n_done, run.n_failed)
        if run.status == "done" and shown == "failed":
            shown = "all failed"  # (not "failed": a run stopped by an error, which can be resumed)
        reasons = run_failures(store, run.id, run.n_failed, run.updated_at)
        result.append(
            PastRun(
                run.id, run.started_at[:19].replace("T", " "), "imported" if run.imported else shown,
                visible(", ".join(run.metrics)),
                visible(run.judge_model or ""), max(run.n_items, run.items_done), run.n_done, run.n_failed,
                run.n_not_applicable, calls,
                cost, _duration(run.started_at, run.finished_at or run.updated_at), visible(run.created_by or ""),
                visible(failures_text(list(reasons))),
            )
        )  # fmt: skip
    return result


def resumable_runs(rows: list[PastRun], active_run: int | None) -> list[PastRun]:
    """Of ``past_runs``' rows, the runs that can go on: cancelled, failed, or left running by a worker
    that is gone (not ``active_run``, the one a job works on now)."""
    return [row for row in rows if row.status in RESUMABLE and row.run != active_run]


# -- resuming at the run's own endpoint ------------------------------------------------------------


@dataclass(frozen=True)
class ResumeView:
    """Where resuming run ``run`` calls its judge: its own model at its own endpoint (``own_url``; ``None``: the run
    did not record it), and the endpoint the form names (``form_url``), which needs the user's confirmation."""

    run: int
    model: str | None
    own_url: str | None
    form_url: str

    @property
    def other(self) -> bool:
        """The form names another endpoint than the run's (or the run did not record its own)."""
        return bool(self.model) and (self.own_url is None or public_url(self.own_url) != public_url(self.form_url))

    @property
    def must_confirm(self) -> bool:
        """The run can go on only at a confirmed endpoint: it did not record its own."""
        return bool(self.model) and self.own_url is None

    @property
    def note(self) -> str:
        """What resuming calls, in a sentence."""
        if not self.model:
            return f"Run #{self.run} has no judge metric: resuming it calls no model."
        if self.own_url is None:
            return f"Run #{self.run} did not record where its judge {self.model} was called: confirm the endpoint."
        return f"Resuming run #{self.run} calls its own judge, {self.model} at {self.own_url}."

    @property
    def confirm_label(self) -> str | None:
        """The confirmation naming both endpoints (``None``: none needed)."""
        if not self.other:
            return None
        own = f"the run's own {self.own_url}" if self.own_url else "an endpoint the run did not record"
        return f"Call {self.form_url} (this form's endpoint) instead of {own}"


def resume_view(store: Store, run_id: int, form_url: str) -> ResumeView:
    """Where resuming run ``run_id`` calls its judge, against the form's endpoint ``form_url``."""
    run = store.runs.get(run_id)
    own = run.judge_base_url if run.judge_model else None
    return ResumeView(run.id, visible(run.judge_model) if run.judge_model else None, own, public_url(form_url))


def endpoint_refusal(exc: OtherEndpointError) -> str:
    """Why the Run button did not start: an unfinished run of the same metrics called its judge elsewhere."""
    own = exc.run_url or "an endpoint it did not record"
    return (
        f"Run #{exc.run_id} of these metrics and settings is unfinished, and its judge was called at {own}; this "
        f"form names {exc.url}. Resume it under Past runs (at its own endpoint, or confirm this one there), or tick "
        "“Start a new run”."
    )

"""What the Metrics page shows, computed on a real SQLite file: groups, applicability with counts,
parameter forms from the metrics' models, the judge without its key, estimates, past runs."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user

from evalcore.errors import UsageError
from evalcore.importing import import_file
from evalcore.judge import JudgeConfig
from evalcore.metrics import create_metric, metrics
from evalcore.metrics.base import MetricResult
from evalcore.scoring import save_results, score_dataset
from evalcore.store import Store, open_store
from evalcore.views import metrics as metric_views
from evalcore.views.metrics import (
    PastRun,
    PickerRow,
    applicability,
    estimate,
    estimate_rows,
    estimate_total,
    judge_view,
    metric_groups,
    needs_profile,
    param_fields,
    params_from_form,
    past_runs,
    picker_rows,
    resumable_runs,
)
from evalcore.views.table import labels


def session(i: int) -> dict[str, Any]:
    """40 sessions: reference tool calls on 12 (i < 12), a reference on every other one (20), retrieved
    context on 10 (i % 4 == 0) of which expected retrieved context on 5 (i % 8 == 0)."""
    data: dict[str, Any] = {
        "session_id": f"s-{i:02d}",
        "messages": [
            {"role": "user", "content": f"Where is order {i}? " + "x" * 40 * (i % 3)},
            {"role": "assistant", "tool_calls": [{"id": "c", "name": "get_order", "args": {"id": i}}]},
            {"role": "tool", "tool_call_id": "c", "name": "get_order", "content": "shipped"},
            {"role": "assistant", "content": f"Order {i} has shipped."},
            {"role": "user", "content": "Thanks"},
            {"role": "assistant", "content": "You are welcome."},
        ],
    }
    if i < 12:
        data["reference_tool_calls"] = [{"name": "get_order", "args": {"id": i}}]
    if i % 2 == 0:
        data["reference"] = f"Order {i} shipped."
    if i % 4 == 0:
        data["retrieved_context"] = [{"content": "Orders ship in a day."}]
    if i % 8 == 0:
        data["expected_retrieved_context"] = [{"content": "Orders ship in a day."}]
    if i in (5, 6):  # latency recorded: on the session, or on a message
        (data if i == 5 else data["messages"][3])["metadata"] = {"latency_ms": 1200}
    if i == 7:  # token usage recorded on a message; a NaN latency is no latency
        data["messages"][3]["metadata"] = {"usage": {"input_tokens": 30, "output_tokens": 5}, "latency_ms": "soon"}
    return data


@pytest.fixture
def store(store_url: str, tmp_path: Path) -> Iterator[Store]:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"schema_version": 1, **session(i)}) + "\n" for i in range(40)))
    with open_store(store_url) as s:
        import_file(s, path, "ds", workers=1)
        yield s


def test_metrics_are_grouped_with_what_they_need() -> None:
    groups = metric_groups()
    assert list(groups) == ["deterministic", "LLM judge"]
    names = {g: [m.name for m in ms] for g, ms in groups.items()}
    assert sorted(names["deterministic"] + names["LLM judge"]) == sorted(cls.name for cls in metrics())
    assert "turn_count" in names["deterministic"] and "correctness" in names["LLM judge"]
    assert not set(names["deterministic"]) & set(names["LLM judge"])
    by_name = {m.name: m for ms in groups.values() for m in ms}
    assert by_name["tool_call_accuracy"].needs_text == "reference tool calls"
    assert by_name["turn_count"].needs_text == "nothing" and not by_name["turn_count"].has_params
    assert by_name["rouge"].has_params and by_name["rouge"].level == "turn"
    # Guideline adherence needs guidelines unless global ones are given (its own ``missing``).
    assert "guidelines" in by_name["guideline_adherence"].needs


def test_applicability_counts_every_need_and_says_why(store: Store) -> None:
    profile = needs_profile(store, "ds")
    assert profile.total == 40
    calls = applicability(profile, "tool_call_accuracy")
    assert (calls.sessions, calls.applicable) == (40, 12)
    assert calls.reason == "needs reference tool calls: 12 of 40 sessions have it"
    assert calls.fraction == pytest.approx(0.3)
    turns = applicability(profile, "turn_count")
    assert (turns.applicable, turns.reason, turns.text) == (40, None, "all 40")
    assert applicability(profile, "exact_match").applicable == 20
    recall = applicability(profile, "document_recall")
    assert recall.applicable == 5
    assert recall.reason == (
        "needs retrieved context: 10 of 40 sessions have it; expected retrieved context: 5 of 40 sessions "
        "have it (5 have all)"
    )
    # Parameters can lift a need: global guidelines make guideline adherence apply everywhere.
    assert applicability(profile, "guideline_adherence").applicable == 0
    assert applicability(profile, "guideline_adherence", {"global_guidelines": ["Be brief."]}).applicable == 40
    # The counts agree with what the metrics themselves find missing, session by session.
    pks = store.sessions.pks("ds")
    for name in ("tool_call_accuracy", "exact_match", "document_recall", "correctness", "turn_count"):
        metric = create_metric(name)
        truth = sum(1 for s in store.sessions.get_many(pks) if not metric.missing(s.session))
        assert applicability(profile, name).applicable == truth, name


def test_the_profile_follows_edits_reading_only_what_changed(store: Store, tmp_path: Path) -> None:
    first = needs_profile(store, "ds")
    assert applicability(first, "tool_call_accuracy").applicable == 12 and first.read == 40
    pk = store.sessions.find("ds", "s-30")
    stored = store.sessions.get(pk)
    as_user(store, "ann").sessions.save(
        pk, {"reference_tool_calls": [{"name": "get_order", "args": {"id": 30}}]}, base_version=stored.version
    )
    profile = needs_profile(store, "ds")
    assert applicability(profile, "tool_call_accuracy").applicable == 13
    assert profile.read == 1  # only the edited session was read again
    assert needs_profile(store, "ds").read == 0
    # Kept in the store too: a restarted server (its memory empty) does not count again.
    metric_views._cache.clear()
    with open_store(store.url) as other:
        again = needs_profile(other, "ds")
        assert again.read == 0 and applicability(again, "tool_call_accuracy").applicable == 13
    # New sessions, and a re-imported one that lost its reference tool calls: only those are read.
    path = tmp_path / "more.jsonl"
    changed = {**session(0), "reference_tool_calls": None}
    path.write_text("".join(json.dumps({"schema_version": 1, **s}) + "\n" for s in [changed, session(40)]))
    report = import_file(store, path, "ds", workers=1)
    assert (report.new, report.updated) == (1, 1)
    grown = needs_profile(store, "ds")
    assert grown.total == 41 and grown.read == 2
    assert applicability(grown, "tool_call_accuracy").applicable == 12


def test_param_fields_come_from_the_metric_models() -> None:
    rouge = {f.name: f for f in param_fields("rouge")}
    assert rouge["rouge_type"].kind == "choice" and rouge["rouge_type"].choices == ("rouge1", "rougeL")
    assert rouge["rouge_type"].default == "rougeL" and rouge["mode"].default == "fmeasure"
    strict = param_fields("tool_call_accuracy")[0]
    assert (strict.name, strict.kind, strict.default) == ("strict_order", "bool", True)
    tool = {f.name: f for f in param_fields("agentic_tool_correctness")}
    assert tool["weights.selection"].kind == "float" and tool["weights.selection"].minimum == 0.0
    assert (tool["threshold"].minimum, tool["threshold"].maximum, tool["threshold"].default) == (0.0, 1.0, 1.0)
    aspect = {f.name: f for f in param_fields("aspect_critique")}
    assert aspect["aspect"].required and aspect["aspect"].kind == "text"
    assert param_fields("guideline_adherence")[0].kind == "text_list"
    rubric = param_fields("rubric_score")[0]
    assert rubric.kind == "mapping" and rubric.default.startswith("score1_description: ")
    assert param_fields("turn_count") == []


def test_params_from_a_form_leave_defaults_out_and_are_checked() -> None:
    assert params_from_form("rouge", {"rouge_type": "rougeL", "mode": "fmeasure"}) == {}
    assert params_from_form("rouge", {"rouge_type": "rouge1", "mode": "fmeasure"}) == {"rouge_type": "rouge1"}
    assert params_from_form("agentic_tool_correctness", {"weights.selection": 0.5, "threshold": 1.0}) == {
        "weights": {"selection": 0.5}
    }
    assert params_from_form("guideline_adherence", {"global_guidelines": " Be brief.\n\nBe kind. \n"}) == {
        "global_guidelines": ["Be brief.", "Be kind."]
    }
    assert params_from_form("rubric_score", {"rubrics": "good: it is good\nbad: it is bad"}) == {
        "rubrics": {"good": "it is good", "bad": "it is bad"}
    }
    assert params_from_form("aspect_critique", {"aspect": "polite", "definition": "Is it polite?"}) == {
        "aspect": "polite",
        "definition": "Is it polite?",
    }
    with pytest.raises(UsageError, match="aspect_critique: aspect"):
        params_from_form("aspect_critique", {"aspect": "", "definition": "x"})
    with pytest.raises(UsageError, match="line 1 should read 'name: text'"):
        params_from_form("rubric_score", {"rubrics": "no colon here"})
    with pytest.raises(UsageError, match="threshold"):
        params_from_form("agentic_tool_correctness", {"threshold": 2.0})


def test_the_judge_is_shown_without_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "EVALCORE_JUDGE_MODEL",
        "EVALCORE_BASE_URL",
        "EVALCORE_JUDGE_BASE_URL",
        "EVALCORE_API_KEY",
        "OPENAI_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    view = judge_view()
    assert (view.model, view.configured, view.key_note) == (None, False, "no key")
    monkeypatch.setenv("EVALCORE_JUDGE_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("EVALCORE_BASE_URL", "http://user:pw@127.0.0.1:9/v1?api-key=hush")
    monkeypatch.setenv("EVALCORE_API_KEY", "sk-secret-123")
    view = judge_view()
    assert view.model == "gpt-4o-mini" and view.key_note == "key: set in environment"
    assert "pw" not in view.base_url and "hush" not in view.base_url and "sk-secret" not in repr(view)
    other = judge_view("my-model", "http://127.0.0.1:1/v1")
    assert (other.model, other.base_url) == ("my-model", "http://127.0.0.1:1/v1")
    config = metric_views.judge_config(" ", " ", max_retries=0)
    assert config is not None and config.model == "gpt-4o-mini" and config.max_retries == 0
    assert config.api_key == "sk-secret-123"  # in memory for the worker, never shown


def test_an_estimate_counts_calls_tokens_and_cost(store: Store) -> None:
    profile = needs_profile(store, "ds")
    priced = JudgeConfig(model="gpt-4o-mini")
    safety = estimate(store, profile, "safety", priced)
    assert (safety.metric, safety.sessions, safety.calls) == ("safety", 40, 40)  # one call per session
    assert safety.output_tokens == 40 * metric_views.OUTPUT_TOKENS_PER_CALL
    assert 40 * 50 < safety.input_tokens < 40 * 1000
    price_in, price_out = priced.prices["gpt-4o-mini"]
    assert safety.cost == pytest.approx((safety.input_tokens * price_in + safety.output_tokens * price_out) / 1e6)
    assert safety.note is None
    grounded = estimate(store, profile, "groundedness", priced)
    assert (grounded.sessions, grounded.calls) == (10, 10)
    # A turn judge makes a call per turn with an answer: two per session here.
    conversational = estimate(store, profile, "gaussia_conversational", priced)
    assert (conversational.sessions, conversational.calls) == (40, 80)
    # A sample stands for the rest: calls still come out right, tokens close.
    sampled = estimate(store, profile, "safety", priced, sample=7)
    assert sampled.calls == 40 and abs(sampled.input_tokens - safety.input_tokens) < safety.input_tokens * 0.2
    unknown = estimate(store, profile, "safety", JudgeConfig(model="my-local-model"))
    assert unknown.cost is None and unknown.note == "no price for model my-local-model"
    assert estimate(store, profile, "safety", None).note == "no judge model named"


def test_past_runs_have_their_counts_cost_and_duration(store: Store) -> None:
    assert past_runs(store, "ds") == []
    score_dataset(store, "ds", ["turn_count", "tool_call_accuracy"])
    (row,) = past_runs(store, "ds")
    assert row.status == "done" and row.metrics == "turn_count, tool_call_accuracy"
    assert (row.items, row.done, row.failed, row.not_applicable) == (80, 52, 0, 28)
    assert row.cost is None and row.judge == "" and row.duration.endswith(" s")
    time.sleep(0.01)
    score_dataset(store, "ds", ["turn_count"], resume=False)
    assert [r.metrics for r in past_runs(store, "ds")] == ["turn_count", "turn_count, tool_call_accuracy"]


def test_a_finished_runs_counts_agree_and_say_what_they_count(store: Store) -> None:
    """metrics.png: "Done: 35 items scored" where 12 were not applicable; hostile-metrics: "Done: 0 items scored"
    beside "Items 1 done" and items 0, done 1 in Past runs (a run whose item count was never set)."""
    score_dataset(store, "ds", ["turn_count", "tool_call_accuracy"])
    [run] = store.runs.recent("ds")
    view = metric_views.run_view(store, run)
    assert view.message == f"Done: 52 items scored, 28 not applicable (run #{run.id})"
    assert view.counts_markdown == "Items **52** scored · **0** failed · **28** not applicable of 80"
    (row,) = past_runs(store, "ds")
    headings = labels(PastRun)
    assert (headings["done"], headings["failed"], headings["not_applicable"]) == ("scored", "failed", "not applicable")
    # A run made with no item count (as imported scores and the hostile test's run are): the items are what it has.
    bare = store.runs.create("ds", ["turn_count"], {"turn_count": {"name": "turn_count"}})
    source = store.runs.get(run.id)
    pk = store.sessions.pks("ds")[0]
    save_results(store, bare.id, [(pk, "turn_count", MetricResult("turn_count", None, 2.0))])
    bare = store.runs.recount(bare.id, status="done")
    assert (bare.n_items, bare.n_done) == (0, 1) and source.n_items == 80
    view = metric_views.run_view(store, bare)
    assert view.message == f"Done: 1 item scored (run #{bare.id})"
    assert view.counts_markdown == "Items **1** scored · **0** failed · **0** not applicable of 1"
    newest = past_runs(store, "ds")[0]
    assert (newest.items, newest.done) == (1, 1)


def test_the_picker_table_says_how_far_each_metric_applies(store: Store) -> None:
    profile = needs_profile(store, "ds")
    rows = {r.metric: r for r in picker_rows(profile, metric_groups()["deterministic"])}
    assert list(labels(PickerRow).values()) == ["metric", "applies to", "needs", "measures"]
    assert (rows["turn_count"].applies_to, rows["turn_count"].needs) == (1.0, "nothing")
    assert rows["tool_call_accuracy"].applies_to == pytest.approx(0.3)
    assert rows["tool_call_accuracy"].needs == "needs reference tool calls: 12 of 40 sessions have it"


def test_estimate_rows_and_total(store: Store) -> None:
    profile = needs_profile(store, "ds")
    priced = [estimate(store, profile, name, JudgeConfig(model="gpt-4o")) for name in ("safety", "groundedness")]
    rows = estimate_rows(priced)
    assert [(r.metric, r.calls) for r in rows] == [("safety", 40), ("groundedness", 10)]
    total = estimate_total(priced)
    tokens = sum(e.input_tokens + e.output_tokens for e in priced)
    assert total == f"About 50 calls, {tokens:,} tokens, ${sum(e.cost or 0 for e in priced):,.4f}."
    unpriced = estimate(store, profile, "safety", JudgeConfig(model="local"))
    assert estimate_total([priced[0], unpriced]).endswith("; cost unknown (no price for model local).")


def test_unfinished_runs_can_be_resumed_but_not_the_one_running() -> None:
    def row(run: int, status: str) -> PastRun:
        return PastRun(run, status=status, metrics="safety", items=40, done=5, failed=1)

    rows = [row(5, "running"), row(4, "running"), row(3, "cancelled"), row(2, "done"), row(1, "failed")]
    found = resumable_runs(rows, active_run=5)
    assert [r.run for r in found] == [4, 3, 1]
    assert found[1].label == "#3 safety (cancelled, 6 of 40 items)"
    assert [r.run for r in resumable_runs(rows, active_run=None)] == [5, 4, 3, 1]


def test_latency_and_token_usage_apply_only_where_the_data_records_them(store: Store) -> None:
    profile = needs_profile(store, "ds")
    latency = applicability(profile, "latency")
    assert (latency.applicable, latency.reason) == (2, "needs latency recorded in the data: 2 of 40 sessions have it")
    tokens = applicability(profile, "token_usage")
    assert (tokens.applicable, tokens.fraction) == (1, 1 / 40)
    assert tokens.reason == "needs token usage recorded in the data: 1 of 40 sessions have it"
    rows = {r.metric: r for r in picker_rows(profile, metric_groups()["deterministic"])}
    assert (rows["latency"].applies_to, rows["token_usage"].applies_to, rows["turn_count"].applies_to) == (
        2 / 40,
        1 / 40,
        1.0,
    )
    # The same sessions the metrics score: every other one is not applicable.
    for name in ("latency", "token_usage"):
        scored = [
            s.session.session_id
            for s in store.sessions.get_many(store.sessions.pks("ds"))
            if create_metric(name).evaluate(s.session)[-1].status == "ok"
        ]
        assert scored == (["s-05", "s-06"] if name == "latency" else ["s-07"]), name

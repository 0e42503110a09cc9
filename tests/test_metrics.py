"""Deterministic metrics: ragas' numbers exactly, Gaussia's rules, not-applicable results, summaries."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from evalcore.errors import UnknownNameError, UsageError
from evalcore.importing import import_file
from evalcore.metrics import create_metric, metric_names
from evalcore.metrics.aggregate import summarize
from evalcore.schema import Message, Session, ToolCall, TurnTruth
from evalcore.scoring import score_dataset
from evalcore.store import open_store

EVALCORE = str(Path(sys.executable).parent / "evalcore")
RAGAS_METRICS = ("tool_call_accuracy", "tool_call_accuracy_flexible", "tool_call_f1")


def test_score_output_matches_ragas_for_every_row(ragas_reference: Path, tmp_path: Path) -> None:
    db, out = tmp_path / "r.db", tmp_path / "scores.jsonl"
    source = str(ragas_reference / "ragas_samples.jsonl")
    subprocess.run([EVALCORE, "import", source, "--dataset", "ref", "--db", str(db)], check=True, capture_output=True)
    proc = subprocess.run(
        [
            EVALCORE,
            "score",
            "--dataset",
            "ref",
            "--metrics",
            ",".join(RAGAS_METRICS),
            "--output",
            str(out),
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    expected = [json.loads(line) for line in (ragas_reference / "ragas_scores.jsonl").read_text().splitlines()]
    got = {(r["position"], r["metric"]): r for r in map(json.loads, out.read_text().splitlines())}
    assert len(got) == 3 * len(expected) == 900
    for row in expected:
        for metric in RAGAS_METRICS:
            score = got[(row["index"], metric)]
            assert score["value"] == row[metric], (row, metric, score)
            assert score["error"] is None
    assert "tool_call_accuracy: " in proc.stdout and "n=300" in proc.stdout


def _session(calls: list[ToolCall], reference: list[ToolCall] | None) -> Session:
    return Session(
        messages=[
            Message(role="user", content="go"),
            Message(role="assistant", content="", tool_calls=calls),
            Message(role="assistant", content="done"),
        ],
        reference_tool_calls=reference,
    )


def A(**args: object) -> ToolCall:
    return ToolCall(name="a", args=dict(args))


def B(**args: object) -> ToolCall:
    return ToolCall(name="b", args=dict(args))


@pytest.mark.parametrize(
    ("predicted", "reference", "strict", "flexible", "f1"),
    [
        ([], [], 1.0, 1.0, 0.0),  # both empty: accuracy 1, f1 0 (ragas)
        ([A(x=1)], [], 0.0, 0.0, 0.0),
        ([], [A(x=1)], 0.0, 0.0, 0.0),
        ([A(x=1), B(y=2)], [A(x=1), B(y=3)], 0.5, 0.5, 0.5),
        ([B(y=2), A(x=1)], [A(x=1), B(y=2)], 0.0, 1.0, 1.0),
        ([A(x=1), A(x=1), B(y=2)], [A(x=1), B(y=2)], 0.0, 0.0, 1.0),  # a retried call: 0, duplicates collapse in f1
        ([A(x=75)], [A(x="75")], 1.0, 1.0, 0.0),  # accuracy compares str(); f1 compares values
        ([A(x=1, extra=2)], [A(x=1)], 1.0, 1.0, 0.0),  # extra arguments are not penalised by accuracy
        ([A(x={"k": [1, 2]})], [A(x={"k": [1, 2]})], 1.0, 1.0, 1.0),  # nested values work in f1 (ragas #2506)
        ([A()], [A()], 1.0, 1.0, 1.0),
        ([A(x=1)], [A()], 0.0, 0.0, 0.0),
    ],
)
def test_tool_call_metrics_edge_cases(
    predicted: list[ToolCall], reference: list[ToolCall], strict: float, flexible: float, f1: float
) -> None:
    session = _session(predicted, reference)
    values = [create_metric(m).evaluate(session)[-1].value for m in RAGAS_METRICS]
    assert values == [strict, flexible, f1]


def test_missing_inputs_give_not_applicable_never_zero() -> None:
    session = _session([A(x=1)], None)
    (result,) = create_metric("tool_call_accuracy").evaluate(session)
    assert result.status == "not_applicable" and result.value is None
    assert result.not_applicable == "missing reference_tool_calls"
    (result,) = create_metric("exact_match").evaluate(session)
    assert result.not_applicable == "missing reference"
    (result,) = create_metric("document_recall").evaluate(session)
    assert result.not_applicable == "missing retrieved_context, expected_retrieved_context"
    (result,) = create_metric("token_usage").evaluate(session)
    assert result.status == "not_applicable"


def test_the_sessions_reference_is_for_the_last_turn_the_assistant_answered() -> None:
    """A labeler's finding: a τ-bench conversation ends with the user's "###STOP###" alone, so the session's
    reference answer went to a turn with no answer and exact_match never applied (the Metrics page said it did)."""
    messages = [
        Message(role="user", content="Cancel my booking."),
        Message(role="assistant", content="Which booking?"),
        Message(role="user", content="ABC123."),
        Message(role="assistant", content="Booking ABC123 is cancelled."),
        Message(role="user", content="###STOP###"),
    ]
    session = Session(messages=messages, reference="Booking ABC123 is cancelled.")
    *turns, whole = create_metric("exact_match").evaluate(session)
    assert [(t.turn, t.value, t.not_applicable) for t in turns] == [
        (0, None, "no reference answer for this turn"),
        (1, 1.0, None),  # the final answer, against the session's reference
        (2, None, "no reference answer for this turn"),
    ]
    assert whole.value == 1.0
    ended = Session(messages=messages[:4], reference="Booking ABC123 is cancelled.")  # (no stop message)
    assert [r.value for r in create_metric("exact_match").evaluate(ended)] == [None, 1.0, 1.0]
    unanswered = Session(messages=[Message(role="user", content="Hello?")], reference="Hi.")
    (turn, whole) = create_metric("exact_match").evaluate(unanswered)  # (no answer anywhere: the last turn, as before)
    assert turn.not_applicable == "no assistant answer in this turn" and whole.status == "not_applicable"


def test_turn_metrics_roll_up_with_gaussia_weights() -> None:
    session = Session(
        messages=[
            Message(role="user", content="q1"),
            Message(role="assistant", content="a1"),
            Message(role="user", content="q2"),
            Message(role="assistant", content="wrong"),
            Message(role="user", content="q3"),
            Message(role="assistant", content="a3"),
        ],
        turn_truth=[
            TurnTruth(ground_truth="a1", weight=0.5),
            TurnTruth(ground_truth="a2"),
            TurnTruth(ground_truth="a3"),
        ],
    )
    results = create_metric("exact_match").evaluate(session)
    assert [(r.turn, r.value) for r in results[:-1]] == [(0, 1.0), (1, 0.0), (2, 1.0)]
    assert results[-1].turn is None and results[-1].value == pytest.approx(0.5 + 0.25)
    session.turn_truth[1].weight = 0.9  # all weights set, sum 1.4: Gaussia falls back to 1/n, with a warning
    session.turn_truth[2].weight = 0.0
    result = create_metric("exact_match").evaluate(session)[-1]
    assert result.value == pytest.approx(2 / 3) and "not 1.0" in result.warnings[0]
    session.turn_truth[0].ground_truth = None  # an unscored turn is left out, weights resolved among the rest
    session.turn_truth = [TurnTruth(), TurnTruth(ground_truth="a2"), TurnTruth(ground_truth="a3")]
    result = create_metric("exact_match").evaluate(session)[-1]
    assert result.value == pytest.approx(0.5)
    assert create_metric("exact_match").evaluate(session)[0].not_applicable == "no reference answer for this turn"


def _three_turns(weights: list[float | None], truths: list[str | None]) -> Session:
    messages = [Message(role=role, content=text) for q, a in (("q1", "a1"), ("q2", "no"), ("q3", "a3"))
                for role, text in (("user", q), ("assistant", a))]  # fmt: skip
    turns = [TurnTruth(ground_truth=t, weight=w) for w, t in zip(weights, truths, strict=True)]
    return Session(messages=messages, turn_truth=turns)


def test_weights_resolved_over_every_turn_then_renormalised_over_the_turns_scored() -> None:
    # Gaussia resolves weights over all of a session's turns, then takes the weighted mean of the
    # scores it has. Here turn 3 has no reference: 0.2 and 0.3 become 0.4 and 0.6, with no warning.
    result = create_metric("exact_match").evaluate(_three_turns([0.2, 0.3, 0.5], ["a1", "a2", None]))[-1]
    assert result.value == pytest.approx(0.4) and result.warnings == []
    # Partial weights: turn 1 weighs 0.5, turns 2 and 3 share the rest (0.25 each); turn 3 unscored.
    result = create_metric("exact_match").evaluate(_three_turns([0.5, None, None], ["a1", "a2", None]))[-1]
    assert result.value == pytest.approx(0.5 / 0.75) and result.warnings == []
    # A fallback is decided over every turn and reported, whichever turns are scored.
    result = create_metric("exact_match").evaluate(_three_turns([0.9, 0.9, 0.9], ["a1", "a2", None]))[-1]
    assert result.value == pytest.approx(0.5) and "sum to 2.7, not 1.0" in result.warnings[0]
    # The only turns scored weigh 0: no score at all, rather than one decided by weightless turns.
    result = create_metric("exact_match").evaluate(_three_turns([0.0, 0.0, 1.0], ["a1", "a2", None]))[-1]
    assert result.value is None and result.not_applicable == "the turns scored (1, 2) all weigh 0"
    # Every turn weighs 0: Gaussia's rule 5 falls back to equal weights, with a warning.
    result = create_metric("exact_match").evaluate(_three_turns([0.0, 0.0, 0.0], ["a1", "a2", "a3"]))[-1]
    assert result.value == pytest.approx(2 / 3) and "sum to 0" in result.warnings[0]


def _agentic_session(used: list[ToolCall], expected: dict[str, object], uses_tools: bool = True) -> Session:
    return Session(
        messages=[
            Message(role="user", content="book"),
            Message(role="assistant", tool_calls=used),
            *[Message(role="tool", content="ok", name=c.name) for c in used],
            Message(role="assistant", content="booked"),
        ],
        turn_truth=[
            TurnTruth(
                expected_tool_usage=expected, metadata={"gaussia": {"agentic": {"final_answer_uses_tools": uses_tools}}}
            )
        ],
    )


def test_gaussia_tool_correctness() -> None:
    expected = {
        "expected_tools": [
            {"tool_name": "search", "parameters": {"q": "rome", "n": 2}, "step": 1},
            {"tool_name": "book", "parameters": {"id": 7}, "step": 2},
        ],
        "tool_sequence_matters": True,
    }
    metric = create_metric("agentic_tool_correctness")

    def step(call: ToolCall, n: int) -> ToolCall:
        return call.model_copy(update={"metadata": {"gaussia": {"step": n}}})

    perfect = _agentic_session([step(ToolCall(name="search", args={"q": "rome", "n": 2}), 1),
                                step(ToolCall(name="book", args={"id": 7}), 2)], expected)  # fmt: skip
    turn, session_result = metric.evaluate(perfect)
    assert turn.value == 1.0 and turn.sub["is_correct"] == 1.0 and session_result.value == 1.0
    partial = _agentic_session(
        [step(ToolCall(name="search", args={"q": "paris", "n": 2}), 2)], expected, uses_tools=False
    )
    (turn, _) = metric.evaluate(partial)
    # selection: {search} ⊂ {search, book} = 1/2; parameters: search 1 of 2 keys match -> 0.5, book never used -> 0
    # sequence: search expected at step 1, used at step 2 -> 0, book -> 0; utilization 0
    assert turn.sub == {"selection": 0.5, "parameters": 0.25, "sequence": 0.0, "utilization": 0.0, "is_correct": 0.0}
    assert turn.value == pytest.approx(0.25 * 0.5 + 0.25 * 0.25)
    only_selection = {"selection": 1, "parameters": 0, "sequence": 0, "utilization": 0}
    weighted = create_metric(
        {"name": "agentic_tool_correctness", "params": {"weights": only_selection, "threshold": 0.5}}
    )
    (turn, _) = weighted.evaluate(partial)
    assert turn.value == 0.5 and turn.sub["is_correct"] == 1.0
    unordered = {**expected, "tool_sequence_matters": False}
    (turn, _) = metric.evaluate(_agentic_session([ToolCall(name="book", args={"id": 7})], unordered))
    assert turn.sub["sequence"] == 1.0 and turn.sub["selection"] == 0.5
    extra = _agentic_session([ToolCall(name="search", args={}), ToolCall(name="book", args={}),
                              ToolCall(name="cancel", args={})], expected)  # fmt: skip
    assert metric.evaluate(extra)[0].sub["selection"] == pytest.approx(2 / 3)
    disjoint = _agentic_session([ToolCall(name="x", args={}), ToolCall(name="search", args={})],
                                {"expected_tools": [{"tool_name": "search"}, {"tool_name": "y"}]})  # fmt: skip
    assert metric.evaluate(disjoint)[0].sub["selection"] == pytest.approx(1 / 3)
    # Data other than Gaussia's does not say whether the answer used the tools' results: utilization is
    # unknown, left out, and the three known parts carry the whole weight (not a utilization of 0).
    unknown = perfect.model_copy(deep=True)
    unknown.turn_truth[0].metadata = {}
    (turn, _) = metric.evaluate(unknown)
    assert turn.value == pytest.approx(1.0) and "utilization" not in turn.sub and turn.sub["is_correct"] == 1.0
    assert "utilization unknown" in (turn.reason or "")
    unknown_partial = partial.model_copy(deep=True)
    unknown_partial.turn_truth[0].metadata = {}
    (turn, _) = metric.evaluate(unknown_partial)
    assert turn.value == pytest.approx((0.5 + 0.25 + 0.0) / 3)


def test_counts_usage_latency_and_document_recall() -> None:
    session = Session(
        messages=[
            Message(role="user", content="q"),
            Message(role="assistant", content="a", metadata={"usage": {"input_tokens": 10, "output_tokens": 5}}),
            Message(role="user", content="q2"),
            Message(
                role="assistant", tool_calls=[A(), B()], metadata={"usage": {"input_tokens": 3, "output_tokens": 2}}
            ),
        ],
        metadata={"latency_ms": 2300},
        retrieved_context=[{"doc_uri": "a"}, {"doc_uri": "b"}, {"doc_uri": "a"}],
        expected_retrieved_context=[{"doc_uri": "a"}, {"doc_uri": "c"}],
    )
    value = {name: create_metric(name).evaluate(session)[-1] for name in
             ("turn_count", "tool_call_count", "token_usage", "latency", "document_recall")}  # fmt: skip
    assert value["turn_count"].value == 2 and value["tool_call_count"].value == 2
    assert value["token_usage"].value == 20 and value["token_usage"].sub == {"input": 13.0, "output": 7.0}
    assert value["latency"].value == 2.3
    assert value["document_recall"].value == 0.5 and "missing c" in (value["document_recall"].reason or "")


def test_metric_specs() -> None:
    metric = create_metric("string_similarity:measure=jaro_winkler")
    assert metric.key() == "string_similarity:measure=jaro_winkler" and metric.params() == {"measure": "jaro_winkler"}
    assert create_metric("rouge").key() == "rouge"
    with pytest.raises(UsageError, match="string_similarity: measure: Input should be"):
        create_metric("string_similarity:measure=cosine")
    with pytest.raises(UnknownNameError, match="unknown metric 'nope'; known: agent_goal_accuracy"):
        create_metric("nope")
    critique = create_metric({"name": "aspect_critique", "params": {"aspect": "polite", "definition": "Is it polite?"}})
    assert critique.key() == "aspect_critique:polite"


def test_every_metric_is_documented_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    for name in metric_names():
        assert f"| `{name}` |" in readme, name


def test_summary_counts_failures_and_never_hides_nan() -> None:
    summary = summarize("m", [1.0, 0.0, math.nan], failed=1, not_applicable=2, warnings=1)
    assert (summary.count, summary.mean, summary.failed, summary.not_applicable) == (2, 0.5, 2, 2)
    assert summary.ci_low is not None and summary.ci_low <= 0.5 <= (summary.ci_high or 0)
    assert (
        summary.describe().startswith("m: 0.500 [")
        and "2 failed, 2 not applicable, 1 with warnings" in summary.describe()
    )
    empty = summarize("m", [], failed=3)
    assert empty.mean is None and empty.describe() == "m: no score n=0 (3 failed)"


def test_scoring_is_resumable_and_errors_are_data(tmp_path: Path, ragas_reference: Path) -> None:
    with open_store(tmp_path / "s.db") as store:
        import_file(store, ragas_reference / "ragas_samples.jsonl", "ref")
        first = score_dataset(store, "ref", ["tool_call_f1", "turn_count"])
        assert first.run.status == "done" and first.skipped == 0 and first.run.n_done == 600
        again = score_dataset(store, "ref", ["tool_call_f1", "turn_count"])
        assert again.run.id != first.run.id  # a finished run is not resumed: a new run
        with pytest.raises(UsageError, match="metric given twice"):
            score_dataset(store, "ref", ["turn_count", "turn_count"])
        with pytest.raises(UsageError, match="need a judge model"):
            score_dataset(store, "ref", ["safety"])


def test_score_sessions_in_memory(ragas_reference: Path) -> None:
    from evalcore import read_path
    from evalcore.scoring import score_sessions

    with read_path(ragas_reference / "ragas_samples.jsonl") as results:
        sessions = [r.session for r in results if r.session is not None]
    expected = [json.loads(line) for line in (ragas_reference / "ragas_scores.jsonl").read_text().splitlines()]
    scored = score_sessions(sessions, list(RAGAS_METRICS))
    assert [{m: s[m][-1].value for m in RAGAS_METRICS} for s in scored] == [
        {m: row[m] for m in RAGAS_METRICS} for row in expected
    ]
    with pytest.raises(UsageError, match="need a judge model"):
        score_sessions(sessions[:1], ["correctness"])


def test_json_metric_specs_and_scoring_inside_an_event_loop(ragas_reference: Path, tmp_path: Path) -> None:
    import asyncio

    spec = '{"name": "aspect_critique", "params": {"aspect": "tone", "definition": "Polite: never curt, see https://x.example"}}'
    metric = create_metric(spec)
    assert metric.params()["definition"].startswith("Polite: never curt")
    with pytest.raises(UsageError, match="not valid JSON"):
        create_metric("{nope")
    with open_store(tmp_path / "s.db") as store:
        import_file(store, ragas_reference / "ragas_samples.jsonl", "ref")

        async def in_a_notebook() -> int:  # a running loop, as in Jupyter
            return score_dataset(store, "ref", ["tool_call_f1"]).run.n_done

        assert asyncio.run(in_a_notebook()) == 300


def test_counts_ignore_nan_and_infinite_numbers() -> None:
    # JSON files may carry NaN (ragas writes it): it is not a latency or a token count.
    session = Session(
        messages=[
            Message(role="user", content="hi"),
            Message(
                role="assistant",
                content="hello",
                metadata={"latency_ms": math.nan, "usage": {"input_tokens": math.inf}},
            ),
        ],
        metadata={"latency_ms": math.nan},
    )
    for name in ("latency", "token_usage"):
        (result,) = create_metric(name).evaluate(session)
        assert result.status == "not_applicable", (name, result)
    session.messages[1].metadata["latency_ms"] = 1500
    assert create_metric("latency").evaluate(session)[-1].value == 1.5

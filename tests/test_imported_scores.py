"""Scores that came with ragas, Databricks / MLflow and MLflow trace files are the session's scores (issue 21,
item 1), hence metrics of the dataset's imported run: ragas' metric columns of an evaluation result's rows, the
judged and computed columns of a Databricks / MLflow results table and its ``assessments``, an MLflow 3 trace's
feedback. The files' round trips stay as they were (ragas' byte for byte).

The ragas result rows are made here as ``EvaluationResult.to_pandas()`` makes them (the sample's columns, then
the scores' columns) from the reference data made with the real ragas (``tests/data/ragas_reference``: each
sample of ``ragas_samples.jsonl`` beside ragas' own scores of it in ``ragas_scores.jsonl``). The Databricks
results rows and the MLflow trace are in ``tests/data/real/traces`` (see SOURCE.md there)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user, query
from formats_util import assert_round_trip, sessions_of, write_jsonl

from evalcore import convert_file
from evalcore.formats import get_format
from evalcore.formats._scores import assessment_scores, result_column_scores
from evalcore.importing import import_file
from evalcore.scoring import summarize_run
from evalcore.store import Store, open_store

REAL = Path(__file__).resolve().parent / "data" / "real" / "traces"
MADE = Path(__file__).resolve().parent / "data" / "made"  # (made in this repository: tests/data/README.md)
RAGAS_METRICS = ("tool_call_accuracy", "tool_call_f1")
#: The scores of tests/data/made/databricks_eval_results_rows.jsonl, row by row, read off the file by hand.
DATABRICKS = [
    {"correctness": 1.0, "safety": 1.0, "chunk_relevance/precision": 1.0},  # agent/latency_seconds judges nothing
    {"correctness": 0.0, "safety": 1.0, "chunk_relevance/precision": 1.0},
    {"relevance_to_query": 1.0, "correctness": 1.0},
    {"toxicity": 0.00021, "answer_similarity": 4.0},
]  # fmt: skip


@pytest.fixture
def store(store_url: str) -> Any:
    with open_store(store_url) as s:
        yield as_user(s, "ann", "owner")


def _ragas_scores(ragas_reference: Path) -> list[dict[str, Any]]:
    lines = (ragas_reference / "ragas_scores.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture
def ragas_result(ragas_reference: Path, tmp_path: Path) -> Path:
    """An evaluation result's rows: each reference sample, then ragas' own scores of it, one JSON line a row."""
    samples = (ragas_reference / "ragas_samples.jsonl").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "ragas_result.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for line, scores in zip(samples, _ragas_scores(ragas_reference), strict=True):
            row = json.loads(line) | {m: scores[m] for m in RAGAS_METRICS}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def test_ragas_result_rows_give_ragas_scores(ragas_result: Path, ragas_reference: Path) -> None:
    sessions = sessions_of(ragas_result)
    expected = [{m: s[m] for m in RAGAS_METRICS} for s in _ragas_scores(ragas_reference)]
    assert len(sessions) == 300 and [s.scores for s in sessions] == expected
    assert sessions[7].scores == {"tool_call_accuracy": 0.0, "tool_call_f1": 1.0}  # line 8: a shuffle


def test_ragas_result_rows_round_trip_byte_for_byte(ragas_result: Path, tmp_path: Path) -> None:
    assert convert_file(ragas_result, tmp_path / "out.jsonl", to="ragas").errors == 0
    assert (tmp_path / "out.jsonl").read_bytes() == ragas_result.read_bytes()
    convert_file(ragas_result, tmp_path / "mid.jsonl", to="evalcore")
    convert_file(tmp_path / "mid.jsonl", tmp_path / "back.jsonl", to="ragas")
    assert (tmp_path / "back.jsonl").read_bytes() == ragas_result.read_bytes()


def test_ragas_samples_fields_ids_and_failed_metrics_are_no_scores(tmp_path: Path) -> None:
    turn = '"user_input": [{"content": "hi", "type": "human"}]'
    lines = [
        # ragas' scores file's own columns: a row number and a label beside the scores
        "{" + turn + ', "index": 3, "perturbation": "argdrop", "tool_call_f1": 0.0}',
        # a failed metric: NaN as json.dumps writes it, null as pandas' to_json does; a true/false is no metric
        "{" + turn + ', "faithfulness": NaN, "answer_relevancy": null, "sample_id": 12, "flag": true}',
        # a custom AspectCritic's verdict (an integer) and a mode-named metric
        "{" + turn + ', "reference": "r", "politeness": 1, "topic_adherence(mode=f1)": 0.5}',
    ]
    source = tmp_path / "r.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    first, second, third = sessions_of(source, "ragas")
    assert first.scores == {"tool_call_f1": 0.0}
    assert second.scores == {} and math.isnan(second.metadata["ragas"]["faithfulness"])
    assert third.scores == {"politeness": 1, "topic_adherence(mode=f1)": 0.5}
    assert convert_file(source, tmp_path / "o.jsonl", to="ragas").errors == 0
    assert (tmp_path / "o.jsonl").read_text(encoding="utf-8") == source.read_text(encoding="utf-8")


def test_the_ragas_writer_writes_a_sessions_scores(tau_bench_file: Path, tmp_path: Path) -> None:
    rewards = [row["reward"] for row in json.loads(tau_bench_file.read_text())]
    assert convert_file(tau_bench_file, tmp_path / "tau.jsonl", to="ragas").errors == 0
    rows = [json.loads(line) for line in (tmp_path / "tau.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row["reward"] for row in rows] == rewards  # τ-bench's reward, a column after the sample's
    assert all(list(row)[-1] == "reward" for row in rows)
    # A score changed or gone in the session is changed or gone in the row; a kept score column goes with it.
    [session] = sessions_of(write_jsonl(tmp_path / "one.jsonl", [{"user_input": [], "tool_call_f1": 0.5, "n": "x"}]))
    changed = session.model_copy(update={"scores": {"tool_call_f1": 1.0}})
    gone = session.model_copy(update={"scores": {}})
    ragas = get_format("ragas")
    assert list(ragas.write(changed)) == [{"user_input": [], "tool_call_f1": 1.0, "n": "x"}]
    assert list(ragas.write(gone)) == [{"user_input": [], "n": "x"}]


def test_databricks_results_rows_give_their_scores(tmp_path: Path) -> None:
    path = MADE / "databricks_eval_results_rows.jsonl"
    sessions = sessions_of(path)
    assert [s.scores for s in sessions] == DATABRICKS
    assert sessions[1].reference == "Use the toPandas() method."  # the row is read as it was
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert_round_trip(tmp_path, "databricks", rows)  # the score columns come back as they were


def test_an_mlflow_traces_assessment_is_its_score(tmp_path: Path) -> None:
    [session] = sessions_of(REAL / "mlflow_v3_trace_assessment.json")
    assert session.scores == {"Relevance": 5.0}  # MLflow's UI fixture gives the feedback as the text "5"
    # A Databricks row with that trace has the trace's scores, under its own columns'.
    trace = json.loads((REAL / "mlflow_v3_trace_assessment.json").read_text(encoding="utf-8"))
    rows = [
        {"request": "q", "response": "a", "trace": json.dumps(trace)},
        {"request": "q", "response": "a", "trace": json.dumps(trace), "Relevance/value": 2},
    ]
    with_trace, overridden = sessions_of(write_jsonl(tmp_path / "rows.jsonl", rows), "databricks")
    assert with_trace.scores == {"Relevance": 5.0} and overridden.scores == {"Relevance": 2.0}


def test_which_assessments_and_columns_are_scores() -> None:
    def feedback(name: str, value: Any, **more: Any) -> dict[str, Any]:
        return {"assessment_name": name, "feedback": {"value": value}, **more}

    assessments = [
        feedback("thumbs", "up"),  # text that is no number: no score
        feedback("safety", "no"),
        feedback("guideline", True),
        feedback("correctness", "yes", last_update_time="2025-04-28T06:28:27.686Z"),
        feedback("correctness", "no", last_update_time="2025-04-28T01:35:53.621Z"),  # earlier: not this one
        feedback("relevance", 1, valid=False),  # overridden by another
        feedback("span_level", 1, span_id="span-test-1"),  # about one span, not the conversation
        {"assessment_name": "failed", "feedback": {"error": {"error_code": "RATE_LIMIT"}}},
        {"assessment_name": "expected_facts", "expectation": {"value": ["a fact"]}},
        {"name": "rating", "feedback": {"value": 0.25}},
    ]
    assert assessment_scores(assessments) == {"safety": 0.0, "guideline": 1.0, "correctness": 1.0, "rating": 0.25}
    row = {
        "request": "7",  # an input column: never a score, whatever it holds
        "response/llm_judged/groundedness/rating": "no",
        "response/llm_judged/groundedness/rationale": "yes",
        "response/llm_judged/groundedness/error_message": None,
        "retrieval/ground_truth/document_recall": 0.5,
        "retrieval/llm_judged/chunk_relevance/ratings": ["yes", "no"],
        "metric/custom_check": 3,
        "faithfulness/v1/score": float("nan"),
    }
    assert result_column_scores(row) == {"groundedness": 0.0, "document_recall": 0.5, "metric/custom_check": 3.0}


def test_the_files_scores_are_the_imported_runs_metrics(
    store: Store, ragas_result: Path, ragas_reference: Path
) -> None:
    import_file(store, ragas_result, "ragas", workers=1)
    [run] = store.runs.recent("ragas")
    assert run.imported and run.metrics == list(RAGAS_METRICS) and (run.n_items, run.n_done) == (600, 600)
    positions = dict(query(store, "SELECT id, position FROM sessions"))
    expected = _ragas_scores(ragas_reference)
    for metric in RAGAS_METRICS:
        values = {positions[pk]: value for pk, _, value in store.runs.session_values(run.id, metric)}
        assert values == {i: s[metric] for i, s in enumerate(expected)}
    means = {s.metric: s.mean for s in summarize_run(store, run.id)}
    for metric in RAGAS_METRICS:
        assert means[metric] == pytest.approx(sum(s[metric] for s in expected) / 300)
    import_file(store, MADE / "databricks_eval_results_rows.jsonl", "dbx", workers=1)
    import_file(store, REAL / "mlflow_v3_trace_assessment.json", "dbx", workers=1)
    [run] = store.runs.recent("dbx")
    names = sorted({name for scores in DATABRICKS for name in scores} | {"Relevance"})
    assert run.imported and run.metrics == names and run.n_done == sum(map(len, DATABRICKS)) + 1
    correctness = sorted(v for _, _, v in store.runs.session_values(run.id, "correctness"))
    assert correctness == [0.0, 1.0, 1.0]
    assert [v for _, _, v in store.runs.session_values(run.id, "Relevance")] == [5.0]

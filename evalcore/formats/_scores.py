"""The scores a file came with, read into ``Session.scores`` (the store keeps them as the dataset's imported
run: ``evalcore.store.outcomes``): ragas' metric columns, the judged and computed columns of a Databricks /
MLflow evaluation results table, and MLflow 3 assessments (feedback) on a trace.

A value is a score when it reads as a number: a number, a true/false (1/0), a judge's ``yes``/``no`` rating (1/0)
or text holding a number (MLflow's UI writes ``"5"``). Anything else (a rationale, ``null``, ``NaN``, a list of
per-chunk ratings) is no score and stays where the reader keeps the rest of the row.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["assessment_scores", "is_id_name", "number", "result_column_scores"]

_RATINGS = {"yes": 1.0, "no": 0.0, "true": 1.0, "false": 0.0}
_NOT_SCORES = ("/rationale", "/error_message", "/error", "/justification", "/ratings")
_ID_NAME = re.compile(r"(?i)^(index|idx|id|row|line|position|trial)$|_(id|index|idx)$")


def number(value: Any) -> float | None:
    """``value`` as a score, ``None`` when it is none (see the module's docstring)."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        try:
            found = float(value)
        except OverflowError:  # an integer beyond a float
            return None
        return found if math.isfinite(found) else None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _RATINGS:
            return _RATINGS[text]
        try:
            found = float(text)
        except ValueError:
            return None
        return found if math.isfinite(found) else None
    return None


def is_id_name(name: str) -> bool:
    """Whether a column named ``name`` numbers rows rather than scores them (``index``, ``id``, ``sample_id``...)."""
    return bool(_ID_NAME.search(name))


def result_column_scores(row: dict[str, Any]) -> dict[str, float]:
    """The scores of one row of a Databricks / MLflow evaluation results table.

    Its result columns are paths: ``response/llm_judged/correctness/rating`` (``yes``/``no``),
    ``retrieval/llm_judged/chunk_relevance/precision``, ``retrieval/ground_truth/document_recall`` (Agent
    Evaluation, MLflow 2), ``toxicity/v1/score`` (``mlflow.evaluate``), ``correctness/value``
    (``mlflow.genai.evaluate``); an ``assessments`` column holds MLflow 3 assessments. A score is named after its
    judge or metric (``correctness``, ``chunk_relevance/precision``, ``document_recall``, ``toxicity``); what a
    column says beats an assessment of the same name. The agent's own measurements (``agent/latency_seconds``,
    ``agent/total_token_count``) judge nothing: no scores.
    """
    scores: dict[str, float] = {}
    if isinstance(row.get("assessments"), list):
        scores.update(assessment_scores(row["assessments"]))
    for column, value in row.items():
        if "/" not in column or column.endswith(_NOT_SCORES) or column.startswith("agent/"):
            continue
        found = number(value)
        if found is not None and (name := _metric_name(column)):
            scores[name] = found
    return scores


def _metric_name(column: str) -> str:
    name = re.sub(r"/(rating|score|value)$", "", column)
    name = re.sub(r"/v\d+$", "", name)
    for marker in ("llm_judged/", "ground_truth/"):
        if marker in name:
            name = name.split(marker, 1)[1]
    return name.strip("/")


def assessment_scores(assessments: Any) -> dict[str, float]:
    """The scores among MLflow 3 assessments (``trace.info.assessments`` or a results table's ``assessments``):
    each feedback on the whole trace (no ``span_id``) whose value reads as a number, by its name. Expectations
    (ground truth) are no scores; nor is an assessment marked ``valid: false`` (one another overrides) or a
    feedback that failed (an ``error``, no value). Of two of one name the later (``last_update_time``) counts."""
    if not isinstance(assessments, list):
        return {}
    found: dict[str, tuple[str, float]] = {}
    for item in assessments:
        if not isinstance(item, dict) or item.get("valid") is False or item.get("span_id"):
            continue
        name = item.get("assessment_name", item.get("name"))
        feedback = item.get("feedback")
        if not isinstance(name, str) or not name.strip() or not isinstance(feedback, dict):
            continue
        value = number(feedback.get("value"))
        if value is None:
            continue
        when = str(item.get("last_update_time", item.get("last_update_time_ms", "")))
        if name not in found or when >= found[name][0]:
            found[name] = (when, value)
    return {name: value for name, (_, value) in found.items()}

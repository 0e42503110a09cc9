"""evalcore's string metrics against ragas 0.4.3's own values, with no ragas installed.

``tests/data/ragas_string_scores.json`` holds ~60 (reference, response) pairs with the values
ragas 0.4.3 gave for ExactMatch, StringPresence, NonLLMStringSimilarity (Levenshtein, Hamming,
Jaro, Jaro-Winkler), BleuScore and RougeScore (rouge1/rougeL x fmeasure/precision/recall); it is
made by ``tests/bench/make_ragas_string_refs.py`` in the ragas venv. Each pair becomes a one-turn
session: a user message, the response as the assistant's answer, the reference as the session's
reference answer (which the last turn takes) or as the turn's own ground truth.

Where evalcore differs from ragas by design, the test asserts evalcore's documented behaviour
instead and says why; ``test_only_empty_texts_differ_from_ragas`` pins exactly which pairs those are.
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from evalcore.metrics import MetricResult, create_metric
from evalcore.schema import Message, Session
from evalcore.schema.session import TurnTruth

DATA = Path(__file__).parent / "data" / "ragas_string_scores.json"
REFS: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = REFS["cases"]
SPECS: list[str] = list(REFS["metrics"])
WHERE = ("session_reference", "turn_ground_truth")
TOLERANCE = 1e-12


def _session(reference: str, response: str, where: str) -> Session:
    messages = [Message(role="user", content="question"), Message(role="assistant", content=response)]
    if where == "session_reference":
        return Session(messages=messages, reference=reference)
    return Session(messages=messages, turn_truth=[TurnTruth(ground_truth=reference)])


def _evaluate(case: dict[str, Any], spec: str, where: str) -> list[MetricResult]:
    return create_metric(spec).evaluate(_session(case["reference"], case["response"], where))


def _versions() -> str:
    made = ", ".join(f"{k} {v}" for k, v in REFS["versions"].items())
    here = ", ".join(f"{k} {version(k)}" for k in ("rapidfuzz", "sacrebleu", "rouge-score", "nltk"))
    return f"(reference made with {made}; installed here: {here})"


def _differs(ours: MetricResult, theirs: Any) -> str | None:
    """Why evalcore's result is not ragas' value, or None when they agree."""
    if isinstance(theirs, dict):  # ragas raised: evalcore must fail on the pair too
        expected_type = theirs["error"].split(":")[0]
        if ours.status == "error" and expected_type in (ours.error or ""):
            return None
        return f"ragas raised {theirs['error']!r}, evalcore gave {ours!r}"
    if ours.status != "ok" or ours.value is None:
        return f"ragas {theirs!r}, evalcore {ours.status} ({ours.error or ours.not_applicable})"
    # ragas' RougeScore returns the int 0 when a text has no token (rouge_score's LCS score);
    # evalcore always returns a float: the same number, so only the value is compared.
    if ours.value == theirs or abs(ours.value - theirs) <= TOLERANCE:
        return None
    return f"ragas {theirs!r}, evalcore {ours.value!r} (off by {ours.value - theirs:.3g})"


def _has_empty_text(case: dict[str, Any]) -> bool:
    return case["reference"] == "" or case["response"] == ""


def test_reference_file_is_complete() -> None:
    assert REFS["ragas_version"] == "0.4.3"
    assert len(CASES) >= 50
    assert len({c["id"] for c in CASES}) == len(CASES)
    assert set(SPECS) == {
        "exact_match",
        "string_presence",
        *(f"string_similarity:measure={m}" for m in ("levenshtein", "hamming", "jaro", "jaro_winkler")),
        "bleu",
        *(f"rouge:rouge_type={t}:mode={m}" for t in ("rouge1", "rougeL") for m in ("fmeasure", "precision", "recall")),
    }
    for case in CASES:
        assert set(case["ragas"]) == set(SPECS), case["id"]
    covers = {c["covers"] for c in CASES}
    assert {"identical", "empty", "case", "substring", "unicode", "hamming", "sentences", "punctuation"} <= covers
    assert "numbers" in covers
    # Hamming on texts of different lengths (rapidfuzz pads the shorter one) is really exercised.
    assert any(len(c["reference"]) != len(c["response"]) and c["covers"] == "hamming" for c in CASES)
    # Texts that ragas' BleuScore splits into several sentences, on both sides, in differing numbers.
    assert any(c["reference"].count(". ") != c["response"].count(". ") for c in CASES if c["covers"] == "sentences")


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("case", [c for c in CASES if not _has_empty_text(c)], ids=lambda c: c["id"])
def test_string_metrics_equal_ragas(case: dict[str, Any], where: str) -> None:
    problems = []
    for spec in SPECS:
        results = _evaluate(case, spec, where)
        turn, session = results[0], results[-1]
        assert len(results) == 2 and turn.turn == 0 and session.turn is None, (spec, results)
        why = _differs(session, case["ragas"][spec])
        if why:
            problems.append(f"{spec}: {why}")
        elif session.status == "ok":
            # One turn: the session's value is that turn's value, untouched by the roll-up.
            assert turn.value == session.value, (spec, turn, session)
            assert isinstance(session.value, float)
    assert not problems, (
        f"{case['id']}: reference {case['reference']!r}, response {case['response']!r}\n  "
        + "\n  ".join(problems)
        + f"\n{_versions()}"
    )


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("case", [c for c in CASES if _has_empty_text(c)], ids=lambda c: c["id"])
def test_empty_texts_are_not_applicable_where_ragas_scores(case: dict[str, Any], where: str) -> None:
    """A difference by design, kept visible.

    ragas scores empty strings like any others: ExactMatch("", "") = 1, StringPresence of an empty
    reference = 1 (the empty string is in every response), NonLLMStringSimilarity("", "") = 1 and
    0 against any non-empty text, BleuScore 0, RougeScore 0 (the int). evalcore treats an empty
    reference as no reference ("not applicable: missing reference", README: a session that lacks
    what a metric needs gets "not applicable: missing X", not a zero), and an assistant message
    with empty text as no answer for its turn, so the turn and the session are not applicable.
    """
    for spec in SPECS:
        theirs = case["ragas"][spec]
        assert isinstance(theirs, int | float), (spec, theirs)  # ragas gave a number, not an error
        results = _evaluate(case, spec, where)
        if case["reference"] == "":
            assert [(r.status, r.not_applicable, r.value) for r in results] == [
                ("not_applicable", "missing reference", None)
            ], spec
        else:
            turn, session = results
            assert (turn.turn, turn.status, turn.not_applicable) == (
                0,
                "not_applicable",
                "no assistant answer in this turn",
            ), spec
            assert (session.turn, session.status, session.value) == (None, "not_applicable", None), spec
            assert session.not_applicable == "no turn to score (no assistant answer in this turn)", spec


def test_only_empty_texts_differ_from_ragas() -> None:
    """The pairs where evalcore does not give ragas' number are exactly those with an empty text."""
    differing = {
        case["id"]
        for case in CASES
        for spec in SPECS
        for where in WHERE
        if _differs(_evaluate(case, spec, where)[-1], case["ragas"][spec])
    }
    empty = {c["id"] for c in CASES if _has_empty_text(c)}
    assert differing == empty
    assert empty == {"empty-both", "empty-response", "empty-reference", "empty-response-short-reference"}

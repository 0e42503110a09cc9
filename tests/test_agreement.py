"""Judge-against-human agreement: the statistics against examples worked by hand (the arithmetic is in the
comments), cross-checked against independent formulations (numpy's matrix algebra, pandas' Spearman), and
``judge_agreement`` on a real SQLite store with real runs, scores and verdicts."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from formats_util import write_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.agreement import (
    ANY_RUBRIC,
    Agreement,
    cohen_kappa,
    confusion_matrix,
    judge_agreement,
    kappa_band,
    percent_agreement,
    spearman,
)
from evalcore.errors import NotFoundError, UsageError
from evalcore.importing import import_file
from evalcore.metrics import MetricResult, create_metric
from evalcore.scoring import save_results
from evalcore.store import Store, open_store
from evalcore.store.labels import LABEL, rubric_verdict

# -- Cohen's kappa, unweighted -----------------------------------------------------------------------


def test_perfect_agreement_is_kappa_1() -> None:
    # po = 4/4 = 1; marginals 1/2, 1/2 on both sides: pe = 1/4 + 1/4 = 1/2; kappa = (1 - 1/2) / (1 - 1/2) = 1.
    a = [0, 1, 0, 1]
    assert cohen_kappa(a, a) == pytest.approx(1.0)
    assert percent_agreement(a, a) == 1.0
    assert confusion_matrix(a, a, [0, 1]) == [[2, 0], [0, 2]]


def test_complete_disagreement_is_kappa_minus_1() -> None:
    # po = 0; marginals 1/2, 1/2 on both sides: pe = 1/2; kappa = (0 - 1/2) / (1 - 1/2) = -1.
    a, b = [0, 1, 0, 1], [1, 0, 1, 0]
    assert cohen_kappa(a, b) == pytest.approx(-1.0)
    assert percent_agreement(a, b) == 0.0
    assert confusion_matrix(a, b, [0, 1]) == [[0, 2], [2, 0]]


def test_agreement_at_chance_is_kappa_0() -> None:
    # Items 1 and 4 agree: po = 2/4 = 1/2. Both raters say 1 half the time: pe = 1/2*1/2 + 1/2*1/2 = 1/2.
    # kappa = (1/2 - 1/2) / (1 - 1/2) = 0, though half the items agree.
    a, b = [1, 1, 0, 0], [1, 0, 1, 0]
    assert cohen_kappa(a, b) == pytest.approx(0.0, abs=1e-12)
    assert percent_agreement(a, b) == 0.5


def test_wikipedia_example_is_kappa_0_4() -> None:
    # Wikipedia's "Cohen's kappa": 50 proposals; both yes 20, A yes B no 5, A no B yes 10, both no 15.
    # po = (20 + 15) / 50 = 0.7. A says yes 25/50 = 0.5, B 30/50 = 0.6.
    # pe = 0.5*0.6 + 0.5*0.4 = 0.3 + 0.2 = 0.5. kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    a = [1] * 20 + [1] * 5 + [0] * 10 + [0] * 15
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert percent_agreement(a, b) == pytest.approx(0.7)
    # Rows: rater a (no, yes); columns: rater b (no, yes).
    assert confusion_matrix(a, b, [0, 1]) == [[15, 10], [5, 20]]
    assert confusion_matrix(a, b, [1, 0]) == [[20, 5], [10, 15]]  # the order given is the order kept


def test_unweighted_kappa_of_three_categories() -> None:
    # a = 1 2 3 3, b = 1 3 3 1: items 1 and 3 agree, po = 2/4 = 1/2.
    # a's shares (1, 2, 3): 1/4, 1/4, 1/2; b's: 1/2, 0, 1/2. pe = 1/4*1/2 + 1/4*0 + 1/2*1/2 = 3/8.
    # kappa = (1/2 - 3/8) / (1 - 3/8) = (1/8) / (5/8) = 0.2.
    assert cohen_kappa([1, 2, 3, 3], [1, 3, 3, 1]) == pytest.approx(0.2)


# -- weighted kappa ------------------------------------------------------------------------------


def test_weighted_kappa_worked_by_hand() -> None:
    # a = 1 2 3 3, b = 1 3 3 1, categories 1 2 3 (k = 3). kappa_w = 1 - sum(w*observed) / sum(w*expected).
    # Shares: a (1, 2, 3) = 1/4, 1/4, 1/2; b = 1/2, 0, 1/2. The pairs: (1,1) (2,3) (3,3) (3,1).
    #
    # Linear, w = |i - j| / (k - 1): w(2,3) = 1/2, w(1,3) = 1.
    #   observed: (0 + 1/2 + 0 + 1) / 4 = 3/8.
    #   expected: a=1: 1/4 * (b=3: 1/2 * 1)               = 1/8
    #             a=2: 1/4 * (b=1: 1/2 * 1/2 + b=3: 1/2 * 1/2) = 1/8
    #             a=3: 1/2 * (b=1: 1/2 * 1)               = 1/4   -> 1/2 in all.
    #   kappa = 1 - (3/8) / (1/2) = 1 - 3/4 = 0.25.
    # Quadratic, w = ((i - j) / (k - 1))^2: w(2,3) = 1/4, w(1,3) = 1.
    #   observed: (1/4 + 1) / 4 = 5/16.
    #   expected: 1/4*1/2*1 + 1/4*(1/2*1/4 + 1/2*1/4) + 1/2*1/2*1 = 2/16 + 1/16 + 4/16 = 7/16.
    #   kappa = 1 - (5/16) / (7/16) = 1 - 5/7 = 2/7.
    a, b = [1, 2, 3, 3], [1, 3, 3, 1]
    assert cohen_kappa(a, b, weights="linear") == pytest.approx(0.25)
    assert cohen_kappa(a, b, weights="quadratic") == pytest.approx(2 / 7)
    # Unused categories above (4, 5) scale every weight alike (k - 1 = 4 instead of 2): the same kappas.
    assert cohen_kappa(a, b, [1, 2, 3, 4, 5], weights="linear") == pytest.approx(0.25)
    assert cohen_kappa(a, b, [1, 2, 3, 4, 5], weights="quadratic") == pytest.approx(2 / 7)
    # With two categories every weighting is the unweighted kappa (Wikipedia's example again).
    wa = [1] * 25 + [0] * 25
    wb = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert cohen_kappa(wa, wb, weights="linear") == pytest.approx(0.4)
    assert cohen_kappa(wa, wb, weights="quadratic") == pytest.approx(0.4)


def test_weighted_kappa_rewards_near_misses() -> None:
    # The same two exact agreements out of four, but every miss one step off instead of two:
    # a = 1 2 3 3, b = 1 3 3 2. Linear observed: (1/2 + 1/2) / 4 = 1/4.
    # b's shares: 1/4, 1/4, 1/2. Expected (linear): a=1: 1/4*(1/4*1/2 + 1/2*1) = 5/32;
    # a=2: 1/4*(1/4*1/2 + 1/2*1/2) = 3/32; a=3: 1/2*(1/4*1 + 1/4*1/2) = 6/32 -> 14/32 = 7/16.
    # kappa = 1 - (1/4) / (7/16) = 1 - 4/7 = 3/7, above the 0.25 of the farther misses.
    assert cohen_kappa([1, 2, 3, 3], [1, 3, 3, 2], weights="linear") == pytest.approx(3 / 7)


# -- Spearman ------------------------------------------------------------------------------------------


def test_spearman_with_ties() -> None:
    # a = 1 2 2 3 -> ranks 1, 2.5, 2.5, 4 (the tied 2s share ranks 2 and 3); b = 1 3 2 4 -> ranks 1 3 2 4.
    # Both means 2.5. Deviations a: -1.5 0 0 1.5; b: -1.5 0.5 -0.5 1.5.
    # rho = (2.25 + 0 + 0 + 2.25) / sqrt((2.25 + 2.25) * (2.25 + 0.25 + 0.25 + 2.25)) = 4.5 / sqrt(22.5) = sqrt(0.9).
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(math.sqrt(0.9))
    # Ties on both sides, no relation: ranks 1.5 1.5 3.5 3.5 against 1.5 3.5 1.5 3.5 -> (1 - 1 - 1 + 1) / ... = 0.
    assert spearman([1, 1, 2, 2], [1, 2, 1, 2]) == pytest.approx(0.0, abs=1e-12)
    # Only the order counts: any rising relation is 1, any falling one -1.
    assert spearman([1, 2, 3, 4], [1, 10, 100, 1000]) == pytest.approx(1.0)
    assert spearman([0.1, 0.2, 0.9], [5, 3, 1]) == pytest.approx(-1.0)


# -- undefined and bad input ------------------------------------------------------------------


def test_undefined_cases_are_none() -> None:
    assert cohen_kappa([], []) is None and cohen_kappa([1], [1]) is None and cohen_kappa([1], [0]) is None
    # Both raters gave every item the same one category: no disagreement to expect, kappa 0/0.
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) is None
    assert cohen_kappa([3, 3], [3, 3], [1, 2, 3, 4, 5], weights="quadratic") is None
    # One rater constant but the other not: defined. po = 1/2, pe = 1 * 1/2 -> kappa 0.
    assert cohen_kappa([1, 1], [1, 0]) == pytest.approx(0.0, abs=1e-12)
    assert spearman([], []) is None and spearman([1], [2]) is None
    assert spearman([1, 1, 1], [1, 2, 3]) is None and spearman([1, 2, 3], [4, 4, 4]) is None
    assert percent_agreement([], []) is None
    assert confusion_matrix([], [], [0, 1]) == [[0, 0], [0, 0]]


def test_bad_input_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="different numbers of items"):
        cohen_kappa([1, 0], [1])
    with pytest.raises(UsageError, match="different numbers"):
        spearman([1, 2], [1, 2, 3])
    with pytest.raises(UsageError, match="different numbers"):
        percent_agreement([1], [])
    with pytest.raises(UsageError, match=r"outside the categories \[0, 1\]: \[2\]"):
        cohen_kappa([0, 1, 2], [0, 1, 1], [0, 1])
    with pytest.raises(UsageError, match="outside the categories"):
        confusion_matrix([0, 1], [0, 7], [0, 1])
    with pytest.raises(UsageError, match="listed twice"):
        confusion_matrix([0], [0], [0, 0])
    with pytest.raises(UsageError, match="unknown kappa weights 'cubic'"):
        cohen_kappa([0, 1], [0, 1], weights="cubic")  # type: ignore[arg-type]


def test_kappa_bands() -> None:
    assert [kappa_band(k) for k in (None, -0.3, 0.0, 0.2, 0.21, 0.4, 0.6, 0.8, 0.81, 1.0)] == [
        "undefined",
        "poor",
        "slight",
        "slight",
        "fair",
        "fair",
        "moderate",
        "substantial",
        "almost perfect",
        "almost perfect",
    ]
    wikipedia = cohen_kappa([1] * 25 + [0] * 25, [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15)
    assert kappa_band(wikipedia) == "fair"  # 0.4 as computed, whatever its last bit


# -- cross-checks with independent formulations ---------------------------------------------------------


def _kappa_by_matrices(a: list[int], b: list[int], k: int, weights: str | None) -> float | None:
    """Weighted kappa the way sklearn writes it: counts, the outer product of the margins, a weight matrix."""
    observed = np.zeros((k, k))
    np.add.at(observed, (np.array(a), np.array(b)), 1)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    i, j = np.indices((k, k))
    w = (i != j).astype(float) if weights is None else np.abs(i - j) if weights == "linear" else (i - j) ** 2
    denominator = float((w * expected).sum())
    return None if denominator == 0 else 1 - float((w * observed).sum()) / denominator


@settings(max_examples=150, deadline=None)
@given(
    st.integers(2, 5).flatmap(
        lambda k: st.lists(st.tuples(st.integers(0, k - 1), st.integers(0, k - 1)), min_size=2, max_size=40).map(
            lambda pairs: (k, pairs)
        )
    ),
    st.sampled_from([None, "linear", "quadratic"]),
)
def test_kappa_agrees_with_the_matrix_formulation(case: tuple[int, list[tuple[int, int]]], weights: Any) -> None:
    k, pairs = case
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    ours = cohen_kappa(a, b, list(range(k)), weights)
    theirs = _kappa_by_matrices(a, b, k, weights)
    if theirs is None:
        assert ours is None
    else:
        assert ours == pytest.approx(theirs, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.floats(0, 1, allow_nan=False)), min_size=2, max_size=40))
def test_spearman_agrees_with_pandas_ranks_and_numpy(pairs: list[tuple[int, float]]) -> None:
    a, b = [float(p[0]) for p in pairs], [p[1] for p in pairs]
    if len(set(a)) == 1 or len(set(b)) == 1:
        assert spearman(a, b) is None
        return
    # pandas ranks ties by their average rank; numpy's Pearson correlation of the ranks is Spearman's rho.
    expected = float(np.corrcoef(pd.Series(a).rank(method="average"), pd.Series(b).rank(method="average"))[0, 1])
    assert spearman(a, b) == pytest.approx(expected, abs=1e-9)


# -- judge_agreement on a real store -------------------------------------------------------------------

ASPECT = "aspect_critique:polite"
TOPIC = "topic_adherence"
GAUSSIA = "gaussia_conversational"
RUBRIC = "rubric_score"
CLARITY, TONE = rubric_verdict("clarity"), rubric_verdict("tone")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        yield s


def _sessions(store: Store, tmp_path: Path, dataset: str, n: int) -> list[int]:
    records = [
        {
            "schema_version": 1,
            "session_id": f"{dataset}{i}",
            "messages": [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": "answer"}],
        }
        for i in range(n)
    ]
    report = import_file(store, write_jsonl(tmp_path / f"{dataset}.jsonl", records), dataset)
    assert report.failed == 0
    return store.sessions.pks(dataset)


def _run(store: Store, dataset: str, specs: list[dict[str, Any]]) -> int:
    """A run as ``score_dataset`` records one: metric keys, and each key's name and parameters."""
    metrics = [create_metric(s) for s in specs]
    params = {m.key(): {"name": m.name, **m.params()} for m in metrics}
    return store.runs.create(dataset, [m.key() for m in metrics], params, judge_model="judge").id


def _write(store: Store, run_id: int, key: str, values: dict[int, float | str]) -> None:
    """Session scores: a number, or ``"error"`` / ``"n/a"`` for a failed or not applicable result."""
    scored = []
    for pk, value in values.items():
        if value == "error":
            result = MetricResult(key, error="TimeoutError: the judge did not answer")
        elif value == "n/a":
            result = MetricResult(key, not_applicable="missing answer")
        else:
            assert not isinstance(value, str)
            result = MetricResult(key, value=value, reason="because")
        scored.append((pk, key, result))
    save_results(store, run_id, scored)


def _by(agreements: list[Agreement]) -> dict[tuple[str, str], Agreement]:
    return {(a.metric, a.verdict): a for a in agreements}


def _pair_view(a: Agreement) -> list[tuple[str, float, int, int]]:
    return [(p.session_ref, p.judge_value, p.judge, p.human) for p in a.pairs]


@pytest.fixture
def reviewed(store: Store, tmp_path: Path) -> tuple[Store, list[int], int]:
    """Ten sessions d0..d9 with labels and rubric verdicts, and one run of four judges and one plain metric."""
    pks = _sessions(store, tmp_path, "d", 10)
    s = dict(enumerate(pks))
    run = _run(
        store,
        "d",
        [
            {"name": "aspect_critique", "params": {"aspect": "polite", "definition": "is it polite?"}},
            {"name": TOPIC},
            {"name": GAUSSIA},
            {"name": RUBRIC},
            {"name": "exact_match"},
        ],
    )
    # Labels: d4 by three reviewers (2 pass, 1 fail: pass); d8 split 1-1 (a tie); d9 given, then withdrawn.
    for i, value in [(0, 1), (1, 0), (2, 0), (3, 1), (4, 1), (5, 1), (6, 0), (7, 1), (8, 1), (9, 1)]:
        store.labels.set_verdict(s[i], LABEL, value, author="ann")
    store.labels.set_verdict(s[4], LABEL, 1, author="bob")
    store.labels.set_verdict(s[4], LABEL, 0, author="cy")
    store.labels.set_verdict(s[8], LABEL, 0, author="bob")
    store.labels.set_verdict(s[9], LABEL, None, author="ann")
    # Rubric verdicts: d1 by two reviewers (2 and 5: median 3.5, rounded up to 4); d3 has two rubrics.
    store.labels.set_verdict(s[0], CLARITY, 4, author="ann")
    store.labels.set_verdict(s[1], CLARITY, 2, author="ann")
    store.labels.set_verdict(s[1], CLARITY, 5, author="bob")
    store.labels.set_verdict(s[2], CLARITY, 1, author="ann")
    store.labels.set_verdict(s[3], CLARITY, 3, author="ann")
    store.labels.set_verdict(s[3], TONE, 2, author="ann")
    store.labels.set_verdict(s[4], TONE, 5, author="ann")
    # The aspect critique: d5 failed, d6 not applicable, d7 never scored; d9 (withdrawn) scored 0.
    _write(
        store,
        run,
        ASPECT,
        {s[0]: 1, s[1]: 1, s[2]: 0, s[3]: 0, s[4]: 1, s[5]: "error", s[6]: "n/a", s[8]: 1, s[9]: 0},
    )
    _write(store, run, TOPIC, {s[0]: 0.9, s[1]: 0.5, s[2]: 0.2, s[3]: 0.05})
    _write(store, run, GAUSSIA, {s[0]: 7.5, s[1]: 5.0, s[2]: 2.0})
    _write(store, run, RUBRIC, {s[0]: 4, s[1]: 3, s[2]: 5, s[3]: 3, s[4]: 4.4})
    _write(store, run, "exact_match", {pk: 1.0 for pk in pks})
    store.runs.finish(run)
    return store, pks, run


def test_binary_judge_against_labels(reviewed: tuple[Store, list[int], int]) -> None:
    store, pks, run = reviewed
    found = _by(judge_agreement(store, "d"))
    assert sorted(found) == [
        (ASPECT, LABEL),
        (GAUSSIA, LABEL),
        (RUBRIC, CLARITY),
        (RUBRIC, TONE),
        (TOPIC, LABEL),
    ]  # exact_match is no judge; nothing else is compared
    a = found[ASPECT, LABEL]
    assert (a.kind, a.run_id, a.threshold, a.categories, a.weighting) == ("binary", run, 0.5, (0, 1), "unweighted")
    # Pairs (judge, reviewers): d0 (1,1) d1 (1,0) d2 (0,0) d3 (0,1) d4 (1, majority of 1 1 0 = 1).
    assert _pair_view(a) == [
        ("d0", 1.0, 1, 1),
        ("d1", 1.0, 1, 0),
        ("d2", 0.0, 0, 0),
        ("d3", 0.0, 0, 1),
        ("d4", 1.0, 1, 1),
    ]
    assert a.n == 5 and a.pairs[4].reviewers == 3 and a.pairs[0].session_pk == pks[0]
    # Rows the judge (fail, pass), columns the reviewers: judge fail: d2 agrees, d3 not;
    # judge pass: d1 not, d0 d4 agree.
    assert a.confusion == ((1, 1), (1, 2))
    # po = 3/5; judge passes 3/5, reviewers 3/5: pe = (2/5)^2 + (3/5)^2 = 13/25;
    # kappa = (15/25 - 13/25) / (12/25) = 1/6.
    assert a.kappa == pytest.approx(1 / 6)
    assert a.percent_agreement == pytest.approx(0.6)
    # Ranks: judge 4 4 1.5 1.5 4, reviewers 4 1.5 1.5 4 4; deviations from 3: (1 1 -1.5 -1.5 1), (1 -1.5 -1.5 1 1):
    # sum of products 1 - 1.5 + 2.25 - 1.5 + 1 = 1.25; each sum of squares 7.5: rho = 1.25 / 7.5 = 1/6.
    assert a.spearman == pytest.approx(1 / 6)
    assert [(p.session_ref, p.gap) for p in a.disagreements] == [("d1", 1.0), ("d3", 1.0)]  # equal gaps: by session
    # Left out, each counted once: d8's tie, d5 failed, d6 not applicable, d7 never scored; d9's verdict withdrawn.
    assert (a.n_reviewer_ties, a.n_judge_failed, a.n_judge_not_applicable, a.n_not_scored) == (1, 1, 1, 1)
    assert a.n_multi_reviewer == 2  # d4 (three reviewers) and d8 (the tie)
    assert a.n_ambiguous == 0


def test_continuous_judges_are_thresholded_at_the_middle_of_their_scale(reviewed: tuple[Store, list[int], int]) -> None:
    store, _pks, _run_id = reviewed
    found = _by(judge_agreement(store, "d"))
    topic = found[TOPIC, LABEL]
    assert topic.threshold == 0.5
    # 0.9 -> pass (reviewers: pass), 0.5 -> pass (at the threshold; reviewers: fail),
    # 0.2 -> fail (reviewers: fail), 0.05 -> fail (reviewers: pass).
    assert _pair_view(topic) == [("d0", 0.9, 1, 1), ("d1", 0.5, 1, 0), ("d2", 0.2, 0, 0), ("d3", 0.05, 0, 1)]
    # Largest gap first: d3 is 0.95 from a pass, d1 0.5 from a fail.
    assert [(p.session_ref, p.gap) for p in topic.disagreements] == [("d3", pytest.approx(0.95)), ("d1", 0.5)]
    # po = 1/2, both sides half passes: pe = 1/2, kappa 0. Spearman on the values themselves: ranks 4 3 2 1
    # against 3.5 1.5 1.5 3.5: deviations (1.5 .5 -.5 -1.5)·(1 -1 -1 1) = 1.5 - .5 + .5 - 1.5 = 0.
    assert topic.kappa == pytest.approx(0.0, abs=1e-12) and topic.spearman == pytest.approx(0.0, abs=1e-12)
    assert topic.n_not_scored == 5  # d4 to d8 have labels but no topic score (d9's label was withdrawn)
    assert topic.n_reviewer_ties == 0
    gaussia = found[GAUSSIA, LABEL]
    assert gaussia.threshold == 5.0  # a 0-10 judge: its middle
    assert _pair_view(gaussia) == [("d0", 7.5, 1, 1), ("d1", 5.0, 1, 0), ("d2", 2.0, 0, 0)]
    assert [(p.session_ref, p.gap) for p in gaussia.disagreements] == [("d1", 0.5)]  # 5.0 of 10 is 0.5 from a fail


def test_ordinal_judge_against_rubric_verdicts(reviewed: tuple[Store, list[int], int]) -> None:
    store, _pks, _run_id = reviewed
    found = _by(judge_agreement(store, "d"))
    clarity = found[RUBRIC, CLARITY]
    assert (clarity.kind, clarity.threshold, clarity.categories, clarity.weighting) == (
        "ordinal",
        None,
        (1, 2, 3, 4, 5),
        "quadratic",
    )
    # rubric_score's rubric has no name, so each session's only rubric verdict is used; d3 has two: left out.
    assert _pair_view(clarity) == [("d0", 4.0, 4, 4), ("d1", 3.0, 3, 4), ("d2", 5.0, 5, 1)]
    assert clarity.n_ambiguous == 1 and clarity.n_multi_reviewer == 1  # d1: 2 and 5, median 3.5 -> 4
    assert clarity.confusion == (
        (0, 0, 0, 0, 0),
        (0, 0, 0, 0, 0),
        (0, 0, 0, 1, 0),  # judge 3, reviewers 4 (d1)
        (0, 0, 0, 1, 0),  # judge 4, reviewers 4 (d0)
        (1, 0, 0, 0, 0),  # judge 5, reviewers 1 (d2)
    )
    # Quadratic, as category indexes: judge 3 2 4, reviewers 3 3 0; k = 5, w = ((i - j)/4)^2.
    # observed: (0 + 1/16 + 16/16) / 3 = 17/48. Shares: judge 1/3 each at 2, 3, 4; reviewers 2/3 at 3, 1/3 at 0.
    # expected: i=2: 2/9*1/16 + 1/9*4/16; i=3: 1/9*9/16; i=4: 2/9*1/16 + 1/9*16/16 = (2 + 4 + 9 + 2 + 16)/144 = 11/48.
    # kappa = 1 - (17/48) / (11/48) = -6/11.
    assert clarity.kappa == pytest.approx(-6 / 11)
    # Spearman of 4 3 5 against 4 4 1: ranks 2 1 3 and 2.5 2.5 1; deviations (0 -1 1)·(.5 .5 -1) = -1.5;
    # sums of squares 2 and 1.5: rho = -1.5 / sqrt(3).
    assert clarity.spearman == pytest.approx(-1.5 / math.sqrt(3))
    assert clarity.percent_agreement == pytest.approx(1 / 3)
    assert [(p.session_ref, p.gap) for p in clarity.disagreements] == [("d2", 4.0), ("d1", 1.0)]
    # Linear: w = |i - j|/4. observed (1/4 + 1)/3 = 5/12; expected i=2: 2/9*1/4 + 1/9*2/4 = 4/36;
    # i=3: 1/9*3/4 = 3/36; i=4: 2/9*1/4 + 1/9*1 = 6/36 -> 13/36. kappa = 1 - (15/36)/(13/36) = -2/13.
    linear = _by(judge_agreement(store, "d", weights="linear"))[RUBRIC, CLARITY]
    assert linear.weighting == "linear" and linear.kappa == pytest.approx(-2 / 13)
    # d4's tone: 4.4 rounds to 4 against 5; a single pair has no kappa and no rho.
    tone = found[RUBRIC, TONE]
    assert _pair_view(tone) == [("d4", 4.4, 4, 5)]
    assert tone.kappa is None and tone.spearman is None and tone.percent_agreement == 0.0
    assert (
        tone.kappa_note == tone.spearman_note == "only one session has both a judge score and a verdict; it takes two"
    )
    assert clarity.kappa_note is None and clarity.spearman_note is None
    assert [p.gap for p in tone.disagreements] == [pytest.approx(0.6)]
    assert tone.n_ambiguous == 1


def test_a_named_rubric_is_compared_with_its_own_verdicts_only(reviewed: tuple[Store, list[int], int]) -> None:
    store, pks, _run_id = reviewed
    s = dict(enumerate(pks))
    spec = {"name": RUBRIC, "params": {"rubrics": {"clarity": "Is the answer clear?"}}}
    run = _run(store, "d", [spec])
    key = create_metric(spec).key()
    _write(store, run, key, {s[0]: 2, s[3]: 3, s[4]: 5, s[5]: 1})
    named = [a for a in judge_agreement(store, "d") if a.metric == key]
    assert [a.verdict for a in named] == [CLARITY]  # never tone, though d4's only rubric verdict is tone
    (clarity,) = named
    assert _pair_view(clarity) == [("d0", 2.0, 2, 4), ("d3", 3.0, 3, 3)]  # d3 counts now: its clarity is known
    assert clarity.n_ambiguous == 0 and clarity.n_not_scored == 2  # d1 and d2 have clarity but no score
    # Two pairs: judge 2 3 against reviewers 4 3; as indexes 1 2 against 3 2, w = ((i - j)/4)^2.
    # observed: (4/16 + 0)/2 = 1/8. Shares: judge 1/2 at 1 and 2; reviewers 1/2 at 3 and 2.
    # expected: 1/4 * (w(1,3) + w(1,2) + w(2,3) + w(2,2)) = 1/4 * (4 + 1 + 1 + 0)/16 = 6/64 = 3/32.
    # kappa = 1 - (1/8)/(3/32) = 1 - 4/3 = -1/3.
    assert clarity.kappa == pytest.approx(-1 / 3)


def test_newest_run_with_scores_unless_a_run_is_named(reviewed: tuple[Store, list[int], int]) -> None:
    store, pks, first = reviewed
    s = dict(enumerate(pks))
    aspect = {"name": "aspect_critique", "params": {"aspect": "polite", "definition": "is it polite?"}}
    second = _run(store, "d", [aspect])
    _write(store, second, ASPECT, {s[0]: 1, s[1]: 0, s[2]: 0, s[3]: 1})  # agrees on all four
    _run(store, "d", [aspect])  # a newer run with no score yet: not used
    latest = _by(judge_agreement(store, "d"))
    assert latest[ASPECT, LABEL].run_id == second and latest[ASPECT, LABEL].kappa == pytest.approx(1.0)
    assert latest[TOPIC, LABEL].run_id == first  # the newest run that scored *it*
    named = judge_agreement(store, "d", first)
    assert {a.run_id for a in named} == {first}
    assert _by(named)[ASPECT, LABEL].kappa == pytest.approx(1 / 6)
    assert _by(judge_agreement(store, "d", second)).keys() == {(ASPECT, LABEL)}


def test_nothing_to_compare(store: Store, tmp_path: Path) -> None:
    pks = _sessions(store, tmp_path, "e", 3)
    assert judge_agreement(store, "e") == []  # no verdicts, no runs
    store.labels.set_verdict(pks[0], LABEL, 1, author="ann")
    assert judge_agreement(store, "e") == []  # verdicts, no run
    plain = _run(store, "e", [{"name": "exact_match"}])
    _write(store, plain, "exact_match", {pk: 1.0 for pk in pks})
    assert judge_agreement(store, "e") == []  # a run, but of no judge
    judged = _run(store, "e", [{"name": "safety"}])
    _write(store, judged, "safety", {pks[1]: 1, pks[2]: 0})
    assert judge_agreement(store, "e") == []  # the judge scored none of the reviewed sessions
    store.labels.set_verdict(pks[0], LABEL, None, author="ann")
    store.labels.set_verdict(pks[1], LABEL, 1, author="ann")
    (only,) = judge_agreement(store, "e")
    assert only.n == 1 and only.kappa is None and only.spearman is None and only.percent_agreement == 1.0
    assert only.disagreements == ()


def test_only_failures_still_report_what_was_left_out(store: Store, tmp_path: Path) -> None:
    pks = _sessions(store, tmp_path, "f", 3)
    run = _run(store, "f", [{"name": "safety"}, {"name": "instance_rubric_score"}])
    _write(store, run, "safety", {pks[0]: "error", pks[1]: "n/a"})
    _write(store, run, "instance_rubric_score", {pks[0]: 3, pks[1]: 4})
    for pk in pks:
        store.labels.set_verdict(pk, LABEL, 1, author="ann")
        store.labels.set_verdict(pk, CLARITY, 3, author="ann")
        store.labels.set_verdict(pk, TONE, 4, author="ann")
    found = _by(judge_agreement(store, "f"))
    safety = found["safety", LABEL]
    assert safety.n == 0 and safety.kappa is None and safety.percent_agreement is None
    assert safety.confusion == ((0, 0), (0, 0))
    assert safety.kappa_note == "no session has both a judge score and a verdict"
    assert (safety.n_judge_failed, safety.n_judge_not_applicable, safety.n_not_scored) == (1, 1, 1)
    # Every scored session has two rubric verdicts and the judge's rubric is unknown: one empty report of it.
    rubric = found["instance_rubric_score", ANY_RUBRIC]
    assert rubric.n == 0 and rubric.n_ambiguous == 2 and rubric.kind == "ordinal"
    assert len(found) == 2


def test_bad_arguments(reviewed: tuple[Store, list[int], int], tmp_path: Path) -> None:
    store, _pks, run = reviewed
    _sessions(store, tmp_path, "other", 1)
    with pytest.raises(UsageError, match=rf"run #{run} scored dataset 'd', not 'other'"):
        judge_agreement(store, "other", run)
    with pytest.raises(NotFoundError, match="no run #999"):
        judge_agreement(store, "d", 999)
    with pytest.raises(NotFoundError, match="no dataset named 'nope'"):
        judge_agreement(store, "nope")
    with pytest.raises(UsageError, match="unknown kappa weights"):
        judge_agreement(store, "d", weights="cubic")  # type: ignore[arg-type]


def test_several_reviewers_and_rounding(store: Store, tmp_path: Path) -> None:
    pks = _sessions(store, tmp_path, "g", 4)
    run = _run(store, "g", [{"name": RUBRIC}])
    # Judge values round half up: 2.5 -> 3 (not to the even 2), 3.5 -> 4; 0.4 is kept within 1-5 as 1.
    _write(store, run, RUBRIC, {pks[0]: 2.5, pks[1]: 3.5, pks[2]: 0.4, pks[3]: 5})
    for author, value in [("ann", 2), ("bob", 3)]:  # median 2.5 -> 3
        store.labels.set_verdict(pks[0], CLARITY, value, author=author)
    for author, value in [("ann", 1), ("bob", 4), ("cy", 5)]:  # median of three: 4
        store.labels.set_verdict(pks[1], CLARITY, value, author=author)
    store.labels.set_verdict(pks[2], CLARITY, 1, author="ann")
    # A verdict whose value was cleared in place (NULL) counts for nothing: d3 is not compared.
    with store._engine.write() as conn:
        conn.execute(
            "INSERT INTO verdicts (session_pk, author, name, value, at) VALUES (?, 'ann', ?, NULL, 'now')",
            [pks[3], CLARITY],
        )
    (clarity,) = judge_agreement(store, "g")
    assert _pair_view(clarity) == [("g0", 2.5, 3, 3), ("g1", 3.5, 4, 4), ("g2", 0.4, 1, 1)]
    assert [p.reviewers for p in clarity.pairs] == [2, 3, 1] and clarity.n_multi_reviewer == 2
    assert clarity.n_not_scored == 0 and clarity.disagreements == ()
    assert clarity.kappa == pytest.approx(1.0) and clarity.percent_agreement == 1.0


def test_why_kappa_or_rho_is_undefined(store: Store, tmp_path: Path) -> None:
    pks = _sessions(store, tmp_path, "u", 3)
    run = _run(store, "u", [{"name": "safety"}, {"name": "relevance_to_query"}])
    _write(store, run, "safety", {pk: 1 for pk in pks})  # the judge passes everything
    _write(store, run, "relevance_to_query", {pks[0]: 1, pks[1]: 0, pks[2]: 1})
    for pk in pks:
        store.labels.set_verdict(pk, LABEL, 1, author="ann")  # and so do the reviewers
    found = _by(judge_agreement(store, "u"))
    safety = found["safety", LABEL]
    # All three in one category on both sides: po = 1, pe = 1, kappa = 0/0; both sides constant for rho.
    assert safety.kappa is None and safety.percent_agreement == 1.0 and safety.confusion == ((0, 0), (0, 3))
    assert safety.kappa_note == (
        "the judge and the reviewers rated every session pass: with no variation, kappa is undefined"
    )
    assert safety.spearman_note == "the judge gave every session the same score: no ranking to compare"
    relevance = found["relevance_to_query", LABEL]
    # The judge varies, the reviewers do not: kappa is defined (po = 2/3, pe = 2/3 * 1 = 2/3 -> 0), rho is not.
    assert relevance.kappa == pytest.approx(0.0, abs=1e-12) and relevance.kappa_note is None
    assert relevance.spearman is None
    assert relevance.spearman_note == "the reviewers gave every session the same verdict: no ranking to compare"


def test_runs_without_parameters_and_unknown_metrics(store: Store, tmp_path: Path) -> None:
    pks = _sessions(store, tmp_path, "h", 2)
    # A run recorded without its metrics' parameters (the key names the metric), and one of a metric
    # this evalcore does not know: the known judge is still compared, the unknown one left out.
    run = store.runs.create("h", ["aspect_critique:kind", "retired_judge"], {}).id
    _write(store, run, "aspect_critique:kind", {pks[0]: 1, pks[1]: 0})
    _write(store, run, "retired_judge", {pks[0]: 1, pks[1]: 0})
    store.labels.set_verdict(pks[0], LABEL, 1, author="ann")
    store.labels.set_verdict(pks[1], LABEL, 0, author="ann")
    (only,) = judge_agreement(store, "h")
    assert (only.metric, only.kind, only.n, only.kappa) == ("aspect_critique:kind", "binary", 2, pytest.approx(1.0))

"""Reviewer-against-reviewer agreement: Krippendorff's alpha equal to the ``krippendorff`` package (a test
oracle only: evalcore never imports it) on random tables with missing answers, and to Krippendorff's own
worked examples; pairwise kappa, percent agreement and multi-label figures against cases worked by hand;
undefined figures (one reviewer, one item, no variation) as ``None`` with a reason."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.agreement import cohen_kappa
from evalcore.errors import UsageError
from evalcore.reviewer_agreement import (
    Level,
    alpha,
    disagreements,
    multilabel_agreement,
    pairwise_kappa,
    percent_agreement,
    reviewer_agreement,
    table_from_answers,
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers x 12 units with
# missing data. Rows here are units, columns the observers A, B, C, D.
_A = [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None]
_B = [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3]
_C = [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None]
_D = [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]
TEXTBOOK = [list(unit) for unit in zip(_A, _B, _C, _D, strict=True)]


def _oracle(table: list[list[int | None]], level: Level) -> float | None:
    """The ``krippendorff`` package's alpha (raters x units, NaN for missing); None where it refuses or gives NaN."""
    data = np.array([[np.nan if v is None else float(v) for v in row] for row in table], dtype=float).T
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            value = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    except ValueError:
        return None
    return None if math.isnan(value) else value


# -- Krippendorff's worked examples --------------------------------------------------------------------------


@pytest.mark.parametrize(("level", "expected"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_the_textbook_example_with_missing_data(level: Level, expected: float) -> None:
    figure = alpha(TEXTBOOK, level)
    assert figure.value is not None and round(figure.value, 3) == expected
    assert figure.reason is None
    # unit 12 has one answer only: it is not pairable; 11 units, 4 observers, 40 answers
    assert (figure.n_items, figure.n_raters, figure.n_answers) == (11, 4, 40)


def test_the_packages_own_example() -> None:
    rows = [
        [None, None, None, None, None, 3, 4, 1, 2, 1, 1, 3, 3, None, 3],
        [1, None, 2, 1, 3, 3, 4, 3, None, None, None, None, None, None, None],
        [None, None, 2, 1, 3, 4, 4, None, 2, 1, 1, 3, 3, None, 4],
    ]
    table = [list(unit) for unit in zip(*rows, strict=True)]
    assert round(alpha(table, "nominal").value or 0, 6) == 0.691358
    assert round(alpha(table, "interval").value or 0, 6) == 0.810845


def test_a_small_case_worked_by_hand() -> None:
    # reviewer 1: a a b b; reviewer 2: a b b b. Coincidences: o_aa 2, o_ab = o_ba 1, o_bb 4; n_a 3, n_b 5, n 8.
    # alpha = 1 - (n - 1) * (o_ab + o_ba) / (2 n_a n_b) = 1 - 7 * 2 / 30 = 8/15.
    # kappa: p_o 3/4, p_e = 1/2 * 1/4 + 1/2 * 3/4 = 1/2, kappa = (3/4 - 1/2) / (1/2) = 1/2.
    table = [["a", "a"], ["a", "b"], ["b", "b"], ["b", "b"]]
    result = reviewer_agreement(table, "nominal", raters=["ann", "bob"])
    assert result.alpha.value == pytest.approx(8 / 15)
    assert result.percent_agreement.value == pytest.approx(0.75)
    (pair,) = result.pairs
    assert (pair.rater_a, pair.rater_b) == ("ann", "bob")
    assert pair.kappa.value == pytest.approx(0.5)
    assert pair.percent_agreement.value == pytest.approx(0.75)
    assert (pair.kappa.n_items, pair.kappa.n_raters, pair.kappa.n_answers) == (4, 2, 8)
    assert (result.n_items, result.n_raters, result.weighting) == (4, 2, "unweighted")


def test_an_ordinal_scale_of_words_is_the_scale_of_its_ranks() -> None:
    scale = ["poor", "fair", "good", "great", "perfect"]
    words = [[None if v is None else scale[v - 1] for v in unit] for unit in TEXTBOOK]
    assert alpha(words, "ordinal", scale).value == pytest.approx(alpha(TEXTBOOK, "ordinal").value)
    # an ordinal question of words without its scale is refused, not sorted alphabetically
    with pytest.raises(UsageError, match="needs its scale"):
        alpha(words, "ordinal")
    with pytest.raises(UsageError, match="not on the scale"):
        alpha([["poor", "awful"]], "ordinal", scale)


# -- against the package, on random tables ----------------------------------------------------------------------

_cell = st.one_of(st.none(), st.integers(min_value=1, max_value=5))


@settings(max_examples=300, deadline=None)
@given(
    table=st.integers(min_value=1, max_value=6).flatmap(
        lambda raters: st.lists(st.lists(_cell, min_size=raters, max_size=raters), min_size=1, max_size=25)
    ),
    level=st.sampled_from(["nominal", "ordinal", "interval"]),
)
def test_alpha_equals_the_krippendorff_package(table: list[list[int | None]], level: Level) -> None:
    expected = _oracle(table, level)
    figure = alpha(table, level)
    if expected is None:
        assert figure.value is None and figure.reason
    else:
        assert figure.value == pytest.approx(expected, rel=1e-9, abs=1e-9)
        assert figure.reason is None


def test_alpha_equals_the_package_on_many_seeded_tables_with_spread_values() -> None:
    rng = np.random.default_rng(24)
    compared = 0
    for _ in range(400):
        units, raters = int(rng.integers(2, 40)), int(rng.integers(2, 7))
        truth = rng.integers(0, 7, size=units)
        noise = rng.integers(-1, 2, size=(units, raters))
        values = np.clip(truth[:, None] + noise * (rng.random((units, raters)) < 0.4), 0, 6) * 1.5
        missing = rng.random((units, raters)) < rng.random() * 0.6
        table = [[None if missing[u, r] else float(values[u, r]) for r in range(raters)] for u in range(units)]
        for level in ("nominal", "ordinal", "interval"):
            expected = _oracle(table, level)  # type: ignore[arg-type]
            figure = alpha(table, level)  # type: ignore[arg-type]
            if expected is None:
                assert figure.value is None
            else:
                compared += 1
                assert figure.value == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert compared > 1000  # the tables were not all undefined


# -- undefined figures ---------------------------------------------------------------------------------------


def test_a_single_reviewer_gives_no_figure_but_a_reason() -> None:
    result = reviewer_agreement([[1], [2], [3]], "ordinal", raters=["ann"])
    assert result.alpha.value is None and result.alpha.reason == "only one reviewer answered: agreement takes two"
    assert result.percent_agreement.value is None and result.percent_agreement.reason
    assert result.pairs == ()
    assert (result.n_items, result.n_raters) == (3, 1)
    # one reviewer among several columns: the others never answered
    lone = reviewer_agreement([[1, None], [2, None]], "interval")
    assert lone.alpha.value is None and "only one reviewer" in (lone.alpha.reason or "")
    (pair,) = lone.pairs
    assert pair.kappa.value is None and "no item in common" in (pair.kappa.reason or "")
    assert pair.percent_agreement.value is None


def test_no_item_with_two_answers_gives_no_figure() -> None:
    figure = alpha([[1, None], [None, 2]], "nominal")
    assert figure.value is None and "no item was answered by two" in (figure.reason or "")
    assert figure.n_raters == 2


def test_one_item_and_no_variation_give_no_figure() -> None:
    one = reviewer_agreement([[3, 3, 3]], "ordinal")
    assert one.alpha.value is None and "no variation" in (one.alpha.reason or "")
    assert one.alpha.n_items == 1 and one.alpha.n_answers == 3
    assert one.percent_agreement.value == 1.0
    assert all(p.kappa.value is None and "one item in common" in (p.kappa.reason or "") for p in one.pairs)
    same = reviewer_agreement([["pass", "pass"]] * 5, "nominal")
    assert same.alpha.value is None and "'pass'" in (same.alpha.reason or "")
    assert same.pairs[0].kappa.value is None and "no variation" in (same.pairs[0].kappa.reason or "")


def test_an_empty_table_gives_no_figure() -> None:
    result = reviewer_agreement([], "nominal")
    assert result.alpha.value is None and result.alpha.reason == "nobody answered: agreement takes two reviewers"
    assert (result.n_items, result.n_raters, result.pairs) == (0, 0, ())
    assert alpha([[None, None]], "interval").value is None


def test_bad_values_are_refused_with_where_they_are() -> None:
    with pytest.raises(UsageError, match="row 2, column 1"):
        alpha([[1, 2], [math.nan, 1]], "interval")
    with pytest.raises(UsageError, match="takes numbers"):
        alpha([["a", "b"]], "interval")
    with pytest.raises(UsageError, match="unknown level"):
        alpha([[1, 2]], "ratio")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="weights"):
        pairwise_kappa([[1, 2]], "ordinal", weights="cubic")  # type: ignore[arg-type]


# -- pairwise kappa and percent agreement ------------------------------------------------------------------------


def test_pairwise_kappa_uses_the_items_both_answered() -> None:
    table = [
        [1, 1, None],
        [2, 2, 2],
        [3, 2, 3],
        [None, 1, 1],
        [3, 3, 1],
    ]
    pairs = {(p.rater_a, p.rater_b): p for p in pairwise_kappa(table, "ordinal", raters=["a", "b", "c"])}
    assert list(pairs) == [("a", "b"), ("a", "c"), ("b", "c")]
    # a and b share items 1, 2, 3, 5; on the scale 1..3 (indices 0..2), quadratic weights
    assert pairs["a", "b"].kappa.value == pytest.approx(cohen_kappa([0, 1, 2, 2], [0, 1, 1, 2], [0, 1, 2], "quadratic"))
    assert pairs["a", "b"].kappa.n_items == 4
    assert pairs["a", "c"].kappa.n_items == 3 and pairs["b", "c"].kappa.n_items == 4
    assert pairs["a", "c"].percent_agreement.value == pytest.approx(2 / 3)
    linear = pairwise_kappa(table, "ordinal", raters=["a", "b", "c"], weights="linear")
    assert linear[0].kappa.value == pytest.approx(cohen_kappa([0, 1, 2, 2], [0, 1, 1, 2], [0, 1, 2], "linear"))


def test_percent_agreement_averages_the_items() -> None:
    # item 1: 3 answers alike -> 3/3 pairs; item 2: a, a, b -> 1 of 3 pairs; item 3: one answer, left out
    figure = percent_agreement([["a", "a", "a"], ["a", "a", "b"], ["a", None, None]])
    assert figure.value == pytest.approx((1 + 1 / 3) / 2)
    assert (figure.n_items, figure.n_raters, figure.n_answers) == (2, 3, 6)


# -- multi-label ------------------------------------------------------------------------------------------------


def test_multilabel_alpha_is_the_nominal_alpha_of_each_label_as_yes_no() -> None:
    table: list[list[set[str] | None]] = [
        [{"rude", "wrong"}, {"wrong"}, None],
        [set(), set(), {"rude"}],
        [{"slow"}, {"slow", "wrong"}, {"slow"}],
        [{"wrong"}, None, {"wrong", "rude"}],
        [set(), {"rude"}, set()],
    ]
    found = multilabel_agreement(table, labels=["rude", "slow", "wrong", "unused"], raters=["a", "b", "c"])
    assert [f.label for f in found] == ["rude", "slow", "wrong", "unused"]
    for figure in found:
        yes_no = [[None if cell is None else int(figure.label in cell) for cell in row] for row in table]
        expected = _oracle(yes_no, "nominal")
        got = figure.agreement.alpha
        assert (got.value is None) == (expected is None)
        if expected is not None:
            assert got.value == pytest.approx(expected)
    unused = found[-1].agreement.alpha
    assert unused.value is None and "False" in (unused.reason or "")  # nobody chose it: no variation
    assert [f.label for f in multilabel_agreement(table)] == ["rude", "slow", "wrong"]
    with pytest.raises(UsageError, match="not one of the question's labels"):
        multilabel_agreement(table, labels=["rude"])
    with pytest.raises(UsageError, match="a set of labels"):
        multilabel_agreement([["rude", None]])  # type: ignore[list-item]


# -- answers as rows and the disagreements ------------------------------------------------------------------------


def test_a_table_from_answer_rows() -> None:
    rows = [("s1", "ann", 1), ("s1", "bob", 2), ("s2", "bob", 2), ("s3", "cat", None), ("s2", "cat", 2)]
    table = table_from_answers(rows)
    assert table.units == ("s1", "s2", "s3")
    assert table.raters == ("ann", "bob", "cat")
    assert table.rows == ((1, 2, None), (None, 2, 2), (None, None, None))
    with pytest.raises(UsageError, match="'s1': reviewer 'ann' answered twice"):
        table_from_answers([("s1", "ann", 1), ("s1", "ann", 2)])
    with pytest.raises(UsageError, match="'s1', reviewer 'ann'"):
        table_from_answers([("s1", "ann", math.inf)])
    agreement = reviewer_agreement(table.rows, "interval", raters=table.raters)
    assert agreement.alpha.n_items == 2 and agreement.n_raters == 3


def test_disagreements_list_the_items_whose_answers_differ() -> None:
    rows = [
        (7, "ann", "pass"),
        (7, "bob", "fail"),
        (8, "ann", "pass"),
        (8, "bob", "pass"),
        (9, "ann", ["rude", "wrong"]),
        (9, "bob", ["wrong", "rude"]),  # the same labels in another order: the same answer
        (10, "ann", {"rude"}),
        (10, "bob", set()),
        (10, "cat", None),  # no answer is no disagreement
        (11, "ann", 3),
        (12, "ann", 1),
        (12, "bob", 2),
        (12, "cat", 3),
    ]
    found = disagreements(rows)
    assert [d.unit for d in found] == [7, 10, 12]
    assert found[0].answers == (("ann", "pass"), ("bob", "fail"))
    assert found[1].answers == (("ann", {"rude"}), ("bob", set()))
    assert [d.distinct for d in found] == [2, 2, 3]
    assert disagreements([]) == []


def test_evalcore_never_imports_the_oracle() -> None:
    package = Path(__file__).resolve().parent.parent / "evalcore"
    users = [p.name for p in package.rglob("*.py") if "krippendorff" in p.read_text().replace("Krippendorff", "")]
    assert not users

"""Gaussia's turn weights explained: the rule, the effective weights, the sentence."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.schema import resolve_weights
from evalcore.views.review import explain_weights, format_number
from evalcore.views.review.weights import typed_weights

CASES = [
    ([None, None, None, None], "none_set", "No weights set: each of the 4 turns weighs 1/4 (0.25)."),
    ([0.2, 0.3, 0.5], "all_set", "All 3 weights set and sum to 1: used as given."),
    (
        [0.5, None, 0.1, None, None],
        "partial",
        "2 of 5 weights set (sum 0.6): the remaining 0.4 is split over the 3 other turns (0.133 each).",
    ),
    ([0.6, 0.6], "fallback_sum", "The weights sum to 1.2, not 1: Gaussia falls back to equal weights, 1/2 each."),
    (
        [0.4, 0.4, 0.4],
        "fallback_sum",
        "The weights sum to 1.2, not 1: Gaussia falls back to equal weights, 1/3 each.",
    ),
    (
        [0.6, 0.5, None],
        "fallback_over",
        "The 2 weights given already sum to 1.1 while 1 turn has none: equal weights 1/3 each.",
    ),
    (
        [1.0, None, None],
        "fallback_over",
        "The 1 weight given is already 1 while 2 turns have none: equal weights 1/3 each.",
    ),
    ([None, 0.4], "partial", "1 of 2 weights set (sum 0.4): the remaining 0.6 goes to the 1 other turn (0.6)."),
    ([], "no_turns", "The session has no turns, so no weights."),
    ([None], "none_set", "No weight set: the only turn weighs 1."),
    ([1.0], "all_set", "The only weight is set to 1: used as given."),
    ([0.5], "fallback_sum", "The weight is 0.5, not 1: Gaussia falls back to equal weights, 1 each."),
]


@pytest.mark.parametrize(("weights", "kind", "sentence"), CASES)
def test_rule_and_sentence(weights: list[float | None], kind: str, sentence: str) -> None:
    explained = explain_weights(weights)
    assert explained.kind == kind
    assert explained.sentence == sentence
    assert explained.effective == resolve_weights(weights)[0]
    assert explained.problem is None
    assert explained.falls_back == kind.startswith("fallback")


def test_floating_point_sums_count_as_one() -> None:
    explained = explain_weights([0.1, 0.2, 0.7])
    assert explained.kind == "all_set" and explained.effective == [0.1, 0.2, 0.7]
    explained = explain_weights([0.1, 0.2, None])
    assert explained.sentence == ("2 of 3 weights set (sum 0.3): the remaining 0.7 goes to the 1 other turn (0.7).")
    assert explained.effective[2] == pytest.approx(0.7)
    third = 1 / 3
    assert explain_weights([third, third, third]).kind == "all_set"


def test_effective_weights_for_partial() -> None:
    explained = explain_weights([0.5, None, 0.1, None, None])
    assert explained.effective == pytest.approx([0.5, 0.4 / 3, 0.1, 0.4 / 3, 0.4 / 3])
    assert math.fsum(explained.effective) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("weights", "problem"),
    [
        ([-0.5, None], "A weight must be a number >= 0: turn 1 has -0.5."),
        ([0.5, float("nan")], "A weight must be a number >= 0: turn 2 has nan."),
        ([float("inf"), -1, None], "A weight must be a number >= 0: turn 1 has inf; turn 2 has -1."),
    ],
)
def test_invalid_weights_are_a_problem_not_a_crash(weights: list[float | None], problem: str) -> None:
    explained = explain_weights(weights)
    assert explained.kind == "invalid"
    assert explained.problem == problem and explained.sentence == problem
    assert explained.effective == resolve_weights(weights)[0]


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.25, "0.25"), (1 / 3, "0.333"), (0.1 + 0.2, "0.3"), (1.2, "1.2"), (1.0, "1"), (0.0, "0"), (12.5, "12.5"),
     (1234.5678, "1234.568"), (0.00001, "0.00001"), (-0.5, "-0.5"), (2 / 15, "0.133")],
)  # fmt: skip
def test_format_number(value: float, text: str) -> None:
    assert format_number(value) == text


WEIGHTS = st.lists(st.one_of(st.none(), st.floats(min_value=0, max_value=2, allow_nan=False)), max_size=8)


@settings(max_examples=300, deadline=None)
@given(WEIGHTS)
def test_effective_weights_are_resolve_weights(weights: list[float | None]) -> None:
    explained = explain_weights(weights)
    effective, warning = resolve_weights(weights)
    assert explained.effective == effective
    assert explained.falls_back == (warning is not None)
    assert explained.sentence.endswith(".")
    if weights and explained.kind != "invalid":
        assert math.fsum(explained.effective) == pytest.approx(1.0)


def test_typed_weights_lay_the_editors_over_the_saved() -> None:
    saved: list[float | None] = [0.5, None, 0.25, None]
    typed = {"t-weight-1-7-0": 0.1, "t-weight-2-7-0": None, "t-weight-3-8-0": 0.9, "t-weight-9-7-0": 0.3,
             "t-weight-x-7-0": 0.4, "t-gt-0-7-0": "text"}  # fmt: skip
    # Turn 1 typed, turn 2 cleared; another session's editor (8-0), a turn beyond the last and a stray key: left out.
    assert typed_weights(saved, 4, typed, "t-weight-", "-7-0") == [0.5, 0.1, None, None]
    assert saved == [0.5, None, 0.25, None]  # (not changed in place)
    # Turns the saved weights do not reach (the conversation grew since the forms' version): not set; fewer: cut.
    assert typed_weights(saved, 6, typed, "t-weight-", "-7-0") == [0.5, 0.1, None, None, None, None]
    assert typed_weights(saved, 2, typed, "t-weight-", "-7-0") == [0.5, 0.1]
    assert typed_weights([], 0, typed, "t-weight-", "-7-0") == []

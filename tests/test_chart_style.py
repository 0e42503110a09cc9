"""The Dashboard's chart texts: long names cut on the axis, each cell's text colour for its cell, a histogram of
whole values ticked at its values."""

from __future__ import annotations

import pytest

from evalcore.metrics.aggregate import Summary
from evalcore.views.chart_style import (
    DARK,
    LABEL_CHARS,
    WHITE,
    axis_labels,
    axis_title,
    cell_ink,
    heatmap_inks,
    histogram_ticks,
    inks,
)
from evalcore.views.dashboard import Bin, Distribution, Heatmap

QUALITY = [(0.0, "#d0473d"), (0.5, "#f3e3b5"), (1.0, "#2e9d5b")]  # the page's red - cream - green
COUNTS = [(0.0, "#f4f6fa"), (1.0, "#7aa0e0")]


def test_a_long_name_is_cut_on_its_tick_and_whole_in_its_value() -> None:
    long = "agent_goal_accuracy_with_reference_and_more"
    values, ticks = axis_labels(["short", long, "<b>x</b> \u202e"])
    assert values == ["short", long, "&lt;b&gt;x&lt;/b&gt; \\u202e"]  # as Plotly shows them literally
    assert ticks[0] == "short" and ticks[2] == values[2]
    assert ticks[1] == long[: LABEL_CHARS - 1] + "…" and len(ticks[1]) == LABEL_CHARS


def test_cutting_never_splits_an_escape_or_an_entity() -> None:
    name = "a" * (LABEL_CHARS - 2) + "<<<<"
    _, [tick] = axis_labels([name])
    assert tick == "a" * (LABEL_CHARS - 2) + "&lt;…"


def test_two_names_alike_at_the_start_stay_two_values() -> None:
    names = ["x" * 40 + "1", "x" * 40 + "2"]
    values, ticks = axis_labels(names)
    assert len(set(values)) == 2 and ticks[0] == ticks[1]


@pytest.mark.parametrize(
    ("scale", "t", "ink"),
    [
        (QUALITY, 1.0, WHITE),  # dark green: the screenshot's invisible 1s
        (QUALITY, 0.0, WHITE),  # red
        (QUALITY, 0.5, DARK),  # cream
        (QUALITY, 0.75, DARK),  # between cream and green, still light
        (COUNTS, 0.0, DARK),
        (COUNTS, 1.0, DARK),  # a light blue
        ([(0.0, "#f4f6fa"), (1.0, "#2f62c7")], 1.0, WHITE),  # the confusion matrix's full cell
        (QUALITY, None, DARK),
    ],
)
def test_the_ink_reads_on_its_cell(scale: list[tuple[float, str]], t: float | None, ink: str) -> None:
    assert cell_ink(scale, t) == ink


def test_inks_of_a_grid_and_of_a_heatmap_with_counts() -> None:
    assert inks([[0.0, 0.5], [1.0, None]], QUALITY) == [[WHITE, DARK], [WHITE, DARK]]
    h = Heatmap(
        run_id=1, metrics=["ok", "turns"], sessions=[(1, "a"), (2, "b")], values=[[1.0, 9.0], [0.5, 1.0]],
        scaled=[[1.0, 1.0], [0.5, 0.0]], total=2, neutral=[False, True],
    )  # fmt: skip
    assert heatmap_inks(h, QUALITY, COUNTS) == [[WHITE, DARK], [DARK, DARK]]


def _distribution(bins: list[Bin]) -> Distribution:
    return Distribution(1, "m", Summary("m", 3, 0.5, 0.1, 0.9, 0, 0), bins, (0.0, 1.0))


def test_a_binary_histogram_is_ticked_at_0_and_1() -> None:
    d = _distribution([Bin(-0.5, 0.5, 2, 0.0, 0.0), Bin(0.5, 1.5, 1, 1.0, 1.0)])
    assert histogram_ticks(d) == ([0.0, 1.0], ["0", "1"])


def test_a_histogram_of_ranges_keeps_plotlys_ticks() -> None:
    d = _distribution([Bin(0.0, 0.5, 2, 0.1, 0.4), Bin(0.5, 1.0, 1, 0.6, 0.6)])
    assert histogram_ticks(d) is None
    assert histogram_ticks(_distribution([])) is None


def test_an_axis_title_is_cut_too() -> None:
    assert axis_title("mean turn_count") == "mean turn_count"
    title = axis_title("mean " + "x" * 100 + " <img>")
    assert title.endswith("…") and len(title) == 60 and "<" not in title

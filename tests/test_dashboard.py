"""What the Dashboard charts, computed by evalcore.views.dashboard on a real SQLite store, checked against
values worked out by hand (and, for intervals, against the plain bootstrap of evalcore.metrics.aggregate)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from apptest_util import shop_sessions, write_jsonl
from dbutil import as_user

from evalcore.errors import NotFoundError, UsageError
from evalcore.importing import import_file
from evalcore.metrics.aggregate import summarize, summarize_counts
from evalcore.metrics.base import MetricResult
from evalcore.scoring import save_results
from evalcore.store import Store, open_store
from evalcore.views.dashboard import (
    by_assistant,
    compare_runs,
    distribution,
    earlier_runs,
    heatmap,
    metric_scale,
    pair_sessions,
    review_progress,
    scored_runs,
)


@pytest.fixture
def store(store_url: str, tmp_path: Path) -> Iterator[Store]:
    with open_store(store_url) as store:
        import_file(store, write_jsonl(tmp_path / "shop.jsonl", shop_sessions()[:10]), "shop", workers=1)
        yield store


def _run(store: Store, values: dict[int, dict[str, float | str | None]]) -> int:
    """A run over ``shop`` with the given session values per metric: a number, "error" or "n/a"."""
    metrics = sorted({m for row in values.values() for m in row})
    run = store.runs.create("shop", metrics, {})
    pks = store.sessions.pks("shop")
    results = []
    for i, row in values.items():
        for metric, value in row.items():
            if value == "error":
                result = MetricResult(metric, error="boom")
            elif value == "n/a":
                result = MetricResult(metric, not_applicable="missing reference")
            else:
                assert not isinstance(value, str)
                result = MetricResult(metric, value=value)
            results.append((pks[i], metric, result))
    save_results(store, run.id, results)
    store.runs.finish(run.id)
    return run.id


def test_summarize_counts_equals_the_mean_and_is_close_to_the_plain_bootstrap() -> None:
    counts = [(0.0, 30), (0.5, 50), (1.0, 20)]
    values = [v for v, c in counts for _ in range(c)]
    fast, plain = summarize_counts("m", counts), summarize("m", values)
    assert fast.count == 100 and fast.mean == pytest.approx(0.45)  # (0*30 + .5*50 + 1*20) / 100
    # Both are percentile bootstrap intervals of the same mean: the standard error is
    # sqrt(var / n) = sqrt(0.1225 / 100) = 0.035, so the 95% interval is about 0.45 ± 0.069.
    assert fast.ci_low == pytest.approx(plain.ci_low, abs=0.02) and fast.ci_high == pytest.approx(
        plain.ci_high, abs=0.02
    )
    assert fast.ci_low == pytest.approx(0.45 - 1.96 * 0.035, abs=0.02)
    one = summarize_counts("m", [(0.7, 5)], failed=2, not_applicable=1)
    assert (one.count, one.mean, one.ci_low, one.ci_high, one.failed, one.not_applicable) == (5, 0.7, 0.7, 0.7, 2, 1)
    empty = summarize_counts("m", [], failed=3)
    assert empty.mean is None and empty.failed == 3
    nan = summarize_counts("m", [(math.nan, 2), (1.0, 1)])
    assert nan.count == 1 and nan.failed == 2  # never averaged: counted as failed


def test_the_interval_quantiles_are_numpys_to_the_last_bit() -> None:
    """``aggregate.quantile`` is ``numpy.quantile``'s default (linear) method, the same floating-point steps: equal
    numbers for sizes, levels and values of every kind (ties, one value, negative, tiny and huge), and the
    summaries' intervals are the ones ``numpy.quantile`` gave them."""
    import numpy as np

    from evalcore.metrics.aggregate import quantile

    rng = np.random.default_rng(7)
    samples = [rng.random(n) for n in (1, 2, 3, 10, 999, 1000, 1001)]
    samples += [np.round(rng.random(1000), 1), rng.normal(0, 1e-9, 50), rng.normal(0, 1e12, 50), np.zeros(7)]
    qs = [0.0, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.975, 0.995, 1.0, (1 - 0.9) / 2, 1 - (1 - 0.9) / 2]
    for values in samples:
        ordered = np.sort(values).tolist()
        for q in qs:
            assert quantile(ordered, q) == float(np.quantile(values, q)), (len(values), q)
    counts = [(0.0, 30), (0.5, 50), (1.0, 20)]
    n = 100
    drawn = np.random.default_rng(0).multinomial(n, np.asarray([0.3, 0.5, 0.2]), size=1000)
    means = drawn @ np.asarray([0.0, 0.5, 1.0]) / n
    low, high = np.quantile(means, [0.025, 0.975])
    summary = summarize_counts("m", counts)
    assert (summary.ci_low, summary.ci_high) == (float(low), float(high))


def test_distribution_histogram_and_summary(store: Store) -> None:
    run = _run(
        store,
        {
            0: {"tool_call_f1": 0.0},
            1: {"tool_call_f1": 0.5},
            2: {"tool_call_f1": 0.52},
            3: {"tool_call_f1": 1.0},
            4: {"tool_call_f1": 1.0},
            5: {"tool_call_f1": "error"},
            6: {"tool_call_f1": "n/a"},
            7: {"tool_call_f1": "n/a"},
        },
    )
    d = distribution(store, run, "tool_call_f1", bins=10)
    assert d.scale == (0.0, 1.0)
    s = d.summary
    assert (s.count, s.failed, s.not_applicable) == (5, 1, 2)
    assert s.mean == pytest.approx((0 + 0.5 + 0.52 + 1 + 1) / 5)
    assert [b.count for b in d.bins] == [1, 0, 0, 0, 0, 2, 0, 0, 0, 2]  # 1.0 falls in the last bar
    middle = d.bins[5]
    assert (middle.low, middle.high) == pytest.approx((0.5, 0.6))
    assert (middle.min_value, middle.max_value) == (0.5, 0.52)  # what a click filters the Sessions on
    assert middle.label == "0.5–0.6" and d.bins[1].min_value is None


def test_a_one_to_five_scale_gets_a_bar_per_value(store: Store) -> None:
    run = _run(store, {i: {"rubric_score": float(v)} for i, v in enumerate([1, 3, 3, 5, 5, 5])})
    d = distribution(store, run, "rubric_score")
    assert metric_scale("rubric_score") == (1.0, 5.0)
    assert [b.label for b in d.bins] == ["1", "2", "3", "4", "5"]
    assert [b.count for b in d.bins] == [1, 0, 2, 0, 3]


def test_unknown_run_or_metric(store: Store) -> None:
    run = _run(store, {0: {"turn_count": 1.0}})
    with pytest.raises(UsageError, match="did not score 'bleu'"):
        distribution(store, run, "bleu")
    with pytest.raises(NotFoundError):
        distribution(store, run + 99, "turn_count")


def test_by_assistant(store: Store) -> None:
    # shop-00..09 alternate bot-a (even) and bot-b (odd).
    run = _run(
        store, {i: {"tool_call_f1": 1.0 if i % 2 == 0 else 0.25} for i in range(9)} | {9: {"tool_call_f1": "error"}}
    )
    groups = {g.label: g.summary for g in by_assistant(store, run, "tool_call_f1")}
    assert set(groups) == {"bot-a", "bot-b"}
    assert (groups["bot-a"].count, groups["bot-a"].mean) == (5, 1.0)
    assert (groups["bot-b"].count, groups["bot-b"].mean, groups["bot-b"].failed) == (4, 0.25, 1)


def test_run_against_run(store: Store) -> None:
    a = _run(store, {0: {"m": 1.0}, 1: {"m": 0.5}, 2: {"m": 0.5}, 3: {"m": 0.0}, 4: {"m": 1.0}, 5: {"m": 1.0}})
    b = _run(store, {0: {"m": 0.0}, 1: {"m": 0.5}, 2: {"m": 0.75}, 3: {"m": 0.0}, 4: {"m": 0.5}, 5: {"m": "error"}})
    c = compare_runs(store, a, b, "m")
    assert c.paired == 5  # session 5 failed in b: not paired
    assert (c.n_worse, c.n_better, c.n_same) == (2, 1, 2)
    assert [(p.ref, p.a, p.b) for p in c.worse] == [("shop-00", 1.0, 0.0), ("shop-04", 1.0, 0.5)]  # biggest drop first
    assert c.differences.mean == pytest.approx((-1 + 0 + 0.25 + 0 - 0.5) / 5)
    assert sorted(c.points) == [(0.0, 0.0, 1), (0.5, 0.5, 1), (0.5, 0.75, 1), (1.0, 0.0, 1), (1.0, 0.5, 1)]
    assert c.spread == [(-1.0, 1), (-0.5, 1), (0.0, 2), (0.25, 1)]
    behind = pair_sessions(store, a, b, "m", 0.5, 0.75)
    assert [p.ref for p in behind] == ["shop-02"]


def test_heatmap_in_the_order_of_one_metric_on_each_metrics_scale(store: Store) -> None:
    run = _run(
        store,
        {
            0: {"rubric_score": 5.0, "tool_call_f1": 1.0},  # scaled 1.0, 1.0
            1: {"rubric_score": 1.0, "tool_call_f1": 0.5},  # scaled 0.0, 0.5
            2: {"rubric_score": 3.0, "tool_call_f1": "n/a"},  # scaled 0.5
            3: {"rubric_score": "error", "tool_call_f1": "error"},  # no value: last
        },
    )
    h = heatmap(store, run, "rubric_score")
    assert h.metrics == ["rubric_score", "tool_call_f1"] and h.total == 4
    assert [ref for _, ref in h.sessions] == ["shop-01", "shop-02", "shop-00", "shop-03"]
    assert h.values[0] == [1.0, 0.5] and h.scaled[0] == [0.0, 0.5]
    assert h.values[1] == [3.0, None] and h.values[3] == [None, None]
    assert [ref for _, ref in heatmap(store, run, "rubric_score", limit=2, offset=2).sessions] == ["shop-00", "shop-03"]
    by_f1 = heatmap(store, run, "tool_call_f1")
    assert [ref for _, ref in by_f1.sessions] == ["shop-01", "shop-00", "shop-02", "shop-03"]  # n/a and failed last
    assert [ref for _, ref in heatmap(store, run, "tool_call_f1", limit=1, offset=3).sessions] == ["shop-03"]


def test_review_progress_by_day_and_reviewer(store: Store) -> None:
    pks = store.sessions.pks("shop")
    as_user(store, "ann").sessions.set_status_many(pks[5:8], "approved")  # shop-05..07 were flagged/flagged/flagged
    as_user(store, "bob").sessions.set_status_many(pks[8:10], "rejected")
    version = store.sessions.get(pks[9]).version
    as_user(store, "ann").sessions.save(pks[9], {"status": "approved"}, base_version=version)
    p = review_progress(store, "shop")
    assert len(p.days) == 1
    assert p.reviewers == ["ann", "bob"]
    assert p.by_reviewer["approved"] == [4, 0] and p.by_reviewer["rejected"] == [0, 2]
    assert p.by_day["approved"] == [4] and p.by_day["rejected"] == [2] and p.by_day["todo"] == [0]
    assert p.current["approved"] == 5 + 3 + 1 and p.current["rejected"] == 1  # imported 5 approved
    assert sum(p.current.values()) == 10


def test_scored_runs_newest_first(store: Store) -> None:
    first = _run(store, {0: {"m": 1.0}})
    second = _run(store, {0: {"m": 0.0}})
    assert [r.id for r in scored_runs(store, "shop")] == [second, first]


def test_counts_have_an_open_scale_drawn_to_the_data(store: Store) -> None:
    run = _run(store, {i: {"turn_count": float(v), "tool_call_count": 0.0} for i, v in enumerate([1, 2, 2, 3, 7])})
    d = distribution(store, run, "turn_count")
    assert [b.label for b in d.bins] == ["0", "1", "2", "3", "4", "5", "6", "7"]  # one bar per count, from 0
    assert [b.count for b in d.bins] == [0, 1, 2, 1, 0, 0, 0, 1]
    h = heatmap(store, run, "turn_count")
    # turn_count placed on 0 (its scale's floor) .. 7 (the run's largest); a metric that is 0 everywhere on 0..1.
    assert h.scaled[0] == pytest.approx([0.0, 1 / 7]) and h.scaled[-1] == [0.0, 1.0]
    assert h.metrics == ["tool_call_count", "turn_count"]


def test_heatmap_counts_are_neutral_and_rows_name_their_assistant(store: Store) -> None:
    run = _run(
        store, {0: {"tool_call_count": 27.0, "tool_call_f1": 0.5}, 1: {"tool_call_count": 3.0, "tool_call_f1": 1.0}}
    )
    h = heatmap(store, run, "tool_call_f1")
    assert h.metrics == ["tool_call_count", "tool_call_f1"] and h.neutral == [True, False]
    assert h.assistants == ["bot-a", "bot-b"]  # shop-00 and shop-01 (apptest_util.shop_sessions)
    assert h.row_labels == ["shop-00 · bot-a", "shop-01 · bot-b"]
    # 27 tool calls is not "good": the count is drawn by the neutral scale only, the F1 by the quality scale only.
    assert h.cells(neutral=True) == [[1.0, None], [pytest.approx(3 / 27), None]]  # on 0..27, the run's largest
    assert h.cells(neutral=False) == [[None, 0.5], [None, 1.0]]


def test_only_earlier_runs_are_offered_for_a_comparison(store: Store) -> None:
    first = _run(store, {0: {"m": 1.0}})
    second = _run(store, {0: {"m": 0.5, "other": 1.0}})
    third = _run(store, {0: {"other": 0.0}})
    runs = scored_runs(store, "shop")
    by_id = {r.id: r for r in runs}
    assert [r.id for r in earlier_runs(runs, by_id[second], "m")] == [first]
    assert earlier_runs(runs, by_id[first], "m") == []  # a later run is never "earlier"
    assert [r.id for r in earlier_runs(runs, by_id[third], "other")] == [second]

"""From sessions' scores to a dataset's: count, mean, a bootstrap confidence interval, and the
number of failed and not-applicable items. Never a silent NaN."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Summary", "prepare", "summarize", "summarize_counts"]


def prepare() -> None:
    """Import what a summary's interval needs (numpy) ahead of the first summary, for a caller with time to
    spare before it (a scorer waiting for its worker processes)."""
    import numpy  # noqa: F401


@dataclass(frozen=True)
class Summary:
    """A metric over a dataset. ``mean`` and the interval are ``None`` when nothing was scored."""

    metric: str
    count: int
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    failed: int
    not_applicable: int
    warnings: int = 0

    def describe(self) -> str:
        """One line a person reads: ``metric: 0.812 [0.780, 0.843] n=120 (2 failed, 5 n/a)``; a metric that applied
        to no session says so: ``metric: applied to no session (all 120 not applicable)``."""
        if self.mean is None and not self.failed:
            if not self.not_applicable:
                return f"{self.metric}: no session to score"
            return f"{self.metric}: applied to no session (all {self.not_applicable} not applicable)"
        if self.mean is None:
            value = "no score"
        else:
            interval = f" [{self.ci_low:.3f}, {self.ci_high:.3f}]" if self.ci_low is not None else ""
            value = f"{self.mean:.3f}{interval}"
        extra = [f"{self.failed} failed"] if self.failed else []
        extra += [f"{self.not_applicable} not applicable"] if self.not_applicable else []
        extra += [f"{self.warnings} with warnings"] if self.warnings else []
        return f"{self.metric}: {value} n={self.count}" + (f" ({', '.join(extra)})" if extra else "")


def summarize(
    metric: str,
    values: list[float],
    *,
    failed: int = 0,
    not_applicable: int = 0,
    warnings: int = 0,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Summary:
    """Summarize the scored values of a metric, with a percentile bootstrap interval of the mean."""
    finite = [v for v in values if math.isfinite(v)]
    failed += len(values) - len(finite)  # a NaN or infinity is a failure, counted, never averaged
    if not finite:
        return Summary(metric, 0, None, None, None, failed, not_applicable, warnings)
    mean = math.fsum(finite) / len(finite)
    if len(finite) == 1 or min(finite) == max(finite):
        return Summary(metric, len(finite), mean, mean, mean, failed, not_applicable, warnings)
    import numpy as np  # (on first use: not every command that imports this summarises)

    data = np.asarray(finite, dtype=float)
    rng = np.random.default_rng(seed)
    n = len(data)
    step = max(1, 2_000_000 // n)  # resample in blocks that stay small in memory
    means = np.concatenate(
        [data[rng.integers(0, n, size=(min(step, resamples - i), n))].mean(axis=1) for i in range(0, resamples, step)]
    )
    low, high = _interval(np.sort(means).tolist(), level)
    return Summary(metric, n, mean, low, high, failed, not_applicable, warnings)


def summarize_counts(
    metric: str,
    counts: list[tuple[float, int]],
    *,
    failed: int = 0,
    not_applicable: int = 0,
    warnings: int = 0,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> Summary:
    """``summarize`` for values given as ``(value, how many sessions have it)``, as SQL's ``GROUP BY value``
    returns them: a bootstrap resample of n values drawn from k distinct ones is a multinomial draw of
    their counts, so the interval costs k (not n) per resample — fast on 100,000 sessions whose metric
    takes few values (tool-call metrics, 1–5 rubric scores). Many distinct values fall back to ``summarize``.
    """
    finite = [(v, c) for v, c in counts if c > 0 and math.isfinite(v)]
    failed += sum(c for v, c in counts if c > 0 and not math.isfinite(v))
    n = sum(c for _, c in finite)
    if not finite:
        return Summary(metric, 0, None, None, None, failed, not_applicable, warnings)
    if len(finite) > 2000:
        values = [v for v, c in finite for _ in range(c)]
        return summarize(metric, values, failed=failed, not_applicable=not_applicable, warnings=warnings,
                         resamples=resamples, level=level, seed=seed)  # fmt: skip
    mean = math.fsum(v * c for v, c in finite) / n
    if len(finite) == 1:
        return Summary(metric, n, mean, mean, mean, failed, not_applicable, warnings)
    import numpy as np

    points = np.asarray([v for v, _ in finite], dtype=float)
    probabilities = np.asarray([c for _, c in finite], dtype=float) / n
    drawn = np.random.default_rng(seed).multinomial(n, probabilities, size=resamples)
    means = drawn @ points / n
    low, high = _interval(np.sort(means).tolist(), level)
    return Summary(metric, n, mean, low, high, failed, not_applicable, warnings)


def _interval(ordered: list[float], level: float) -> tuple[float, float]:
    """The percentile interval of ``level`` of the sorted resampled means: ``numpy.quantile(means, [a, 1 - a])``
    to the last bit (its default, "linear" method), without what it imports on first use (``numpy.ma``, a
    fifth of numpy's import, paid at the end of every scoring run)."""
    alpha = (1 - level) / 2
    return quantile(ordered, alpha), quantile(ordered, 1 - alpha)


def quantile(ordered: list[float], q: float) -> float:
    """The ``q`` quantile of the sorted values ``ordered`` as ``numpy.quantile`` computes it by default (linear
    interpolation between the closest ranks; the same floating-point steps, so the same number)."""
    last = len(ordered) - 1
    virtual = last * q
    if virtual >= last:
        return ordered[-1]
    if virtual < 0:
        return ordered[0]
    below = math.floor(virtual)
    gamma = virtual - below
    a, b = ordered[below], ordered[below + 1]
    diff = b - a
    return b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma

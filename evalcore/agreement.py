"""How far each LLM judge agrees with the reviewers: Cohen's kappa, Spearman's rho, percent agreement.

Two parts. The statistics (``confusion_matrix``, ``cohen_kappa``, ``spearman``, ``percent_agreement``)
are plain functions of two lists of ratings, written out here (no scipy, no sklearn). ``judge_agreement``
pairs a dataset's judge scores with the reviewers' verdicts (``store.labels``) and returns
one ``Agreement`` per judge metric and verdict.

Which judge is compared with which verdict:

- A judge whose scale is 1-5 (the rubric scores) is *ordinal*: it is compared with a ``rubric:NAME``
  verdict. NAME is the judge's own rubric when the run says it (a ``rubric_score`` whose ``rubrics``
  parameter has exactly one named rubric, the ``score1_description``-style keys not counting); otherwise
  a session's verdict is used only when the session has exactly one rubric verdict (any reviewer), and
  sessions with several are left out, counted as ``n_ambiguous``. The judge's value is rounded half up
  (and kept within 1-5) to give its category. Kappa is weighted (quadratic by default, or linear).
- Every other judge is *binary* and is compared with the pass / fail ``label``: a value at or above the
  middle of the judge's scale passes (0.5 for the 0-1 judges; the 0/1 judges are unchanged by it; 5 for
  a 0-10 judge). Kappa is unweighted. Spearman's rho uses the judge's value itself, before the threshold.

Several reviewers on one session: labels go by majority, and a tie leaves the session out (counted as
``n_reviewer_ties``); 1-5 verdicts take the median, rounded half up (3 and 4 give 4). ``n_multi_reviewer``
counts the compared sessions that had more than one reviewer.

Scores come from the newest run of the dataset that has session scores of the metric (or from the run
asked for). Spearman's rho always uses the judge's value as stored. A session left out is counted once,
under the first of: the run did not score it, the reviewers' labels tie, the judge failed, the metric did
not apply (or gave no value). Withdrawn verdicts (no value) do not count at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalcore.errors import EvalcoreError, UsageError
from evalcore.metrics import get_metric
from evalcore.store.labels import LABEL
from evalcore.store.store import Store

__all__ = [
    "ANY_RUBRIC",
    "Agreement",
    "Pair",
    "Weights",
    "cohen_kappa",
    "confusion_matrix",
    "judge_agreement",
    "kappa_band",
    "percent_agreement",
    "spearman",
]

#: How a weighted kappa counts a disagreement: by its steps apart (linear) or their square (quadratic).
Weights = Literal["linear", "quadratic"]

#: The verdict of an ``Agreement`` with no pairs, made only to report ordinal sessions left out because
#: each had several rubric verdicts and the judge's rubric is not known.
ANY_RUBRIC = "rubric:*"

_RUBRIC = "rubric:"
_ORDINAL_SCALE = (1.0, 5.0)
_ORDINAL = (1, 2, 3, 4, 5)
_BINARY = (0, 1)


# -- the statistics ------------------------------------------------------------------------------


def _check_pair(a: Sequence[float], b: Sequence[float]) -> None:
    if len(a) != len(b):
        raise UsageError(f"the two raters rated different numbers of items ({len(a)} and {len(b)})")


def _categories(a: Sequence[float], b: Sequence[float], categories: Sequence[float] | None) -> list[float]:
    if categories is None:
        return sorted({*a, *b})
    listed = list(categories)
    if len(set(listed)) != len(listed):
        raise UsageError("a category is listed twice")
    unknown = sorted({*a, *b} - set(listed))
    if unknown:
        raise UsageError(f"ratings outside the categories {listed}: {unknown}")
    return listed


def confusion_matrix(a: Sequence[float], b: Sequence[float], categories: Sequence[float]) -> list[list[int]]:
    """How many items rater ``a`` put in each category (rows) and rater ``b`` in each (columns)."""
    _check_pair(a, b)
    listed = _categories(a, b, categories)
    index = {c: i for i, c in enumerate(listed)}
    matrix = [[0] * len(listed) for _ in listed]
    for x, y in zip(a, b, strict=True):
        matrix[index[x]][index[y]] += 1
    return matrix


def cohen_kappa(
    a: Sequence[float],
    b: Sequence[float],
    categories: Sequence[float] | None = None,
    weights: Weights | None = None,
) -> float | None:
    """Cohen's kappa of two raters: 1 when they always agree, 0 when they agree as often as chance
    would, below 0 when less often.

    ``categories`` are the possible ratings in order (by default those seen, sorted). With ``weights``
    a disagreement counts by how many categories apart the two ratings are (``linear``) or by the
    square of it (``quadratic``); without, every disagreement counts the same. ``None`` when kappa
    is undefined: fewer than 2 items, or no disagreement to expect (both raters gave every item the
    same single category) - show it as "undefined", not as a number.
    """
    _check_pair(a, b)
    if weights not in (None, "linear", "quadratic"):
        raise UsageError(f"unknown kappa weights {weights!r}: use 'linear', 'quadratic' or none")
    listed = _categories(a, b, categories)
    n, k = len(a), len(listed)
    if n < 2 or k < 2:
        return None
    matrix = confusion_matrix(a, b, listed)
    rows = [sum(row) / n for row in matrix]
    columns = [sum(matrix[i][j] for i in range(k)) / n for j in range(k)]

    def weight(i: int, j: int) -> float:
        if weights is None:
            return 0.0 if i == j else 1.0
        if weights == "linear":
            return abs(i - j) / (k - 1)
        return ((i - j) / (k - 1)) ** 2

    observed = math.fsum(weight(i, j) * matrix[i][j] / n for i in range(k) for j in range(k))
    expected = math.fsum(weight(i, j) * rows[i] * columns[j] for i in range(k) for j in range(k))
    if expected <= 0.0:
        return None
    return 1.0 - observed / expected


def _ranks(values: Sequence[float]) -> list[float]:
    """Ranks from 1, tied values sharing the average of their ranks."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        average = (start + end) / 2 + 1
        for position in range(start, end + 1):
            ranks[order[position]] = average
        start = end + 1
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation (ties get the average of their ranks): 1 when ``b`` rises whenever
    ``a`` does, -1 when it falls. ``None`` when fewer than 2 items or one side never varies."""
    _check_pair(a, b)
    if len(a) < 2:
        return None
    ra, rb = _ranks(a), _ranks(b)
    mean = (len(a) + 1) / 2  # the mean of ranks 1..n, ties or not
    da = [r - mean for r in ra]
    db = [r - mean for r in rb]
    saa = math.fsum(x * x for x in da)
    sbb = math.fsum(y * y for y in db)
    if saa == 0.0 or sbb == 0.0:
        return None
    rho = math.fsum(x * y for x, y in zip(da, db, strict=True)) / math.sqrt(saa * sbb)
    return max(-1.0, min(1.0, rho))


def percent_agreement(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The share of items both raters put in the same category (0 to 1); ``None`` with no items."""
    _check_pair(a, b)
    if not a:
        return None
    return sum(1 for x, y in zip(a, b, strict=True) if x == y) / len(a)


def kappa_band(kappa: float | None) -> str:
    """Landis and Koch's (1977) words for a kappa: poor (below 0), slight (to 0.20), fair (to 0.40),
    moderate (to 0.60), substantial (to 0.80), almost perfect (above); ``undefined`` for ``None``."""
    if kappa is None:
        return "undefined"
    kappa = round(kappa, 9)  # 0.4 computed as 0.40000000000000002 is still "fair"
    if kappa < 0:
        return "poor"
    for limit, band in ((0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if kappa <= limit:
            return band
    return "almost perfect"


# -- judges against reviewers -----------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """One session rated by both the judge and the reviewers."""

    session_pk: int
    session_ref: str  # its session_id, else the identity evalcore gave it (for ``session_label``)
    judge_value: float  # the judge's score as stored
    judge: int  # the judge's category: 0/1 (binary) or 1-5 (ordinal)
    human: int  # the reviewers' category, after majority (labels) or median (rubrics)
    reviewers: int  # how many reviewers gave this verdict
    verdict: str  # the verdict compared: ``label`` or ``rubric:NAME``
    gap: float  # how far apart: |judge value - reviewers' category|, a binary judge's value taken on 0-1


@dataclass(frozen=True)
class Agreement:
    """How one judge metric agrees with one kind of reviewer verdict over the sessions both rated."""

    metric: str  # the metric key, as the run stored it
    verdict: str  # ``label`` or ``rubric:NAME`` (``ANY_RUBRIC``: nothing paired, see ``n_ambiguous``)
    kind: Literal["binary", "ordinal"]
    run_id: int  # the run whose scores are compared
    threshold: float | None  # binary: a judge value at or above it passes; ordinal: None
    categories: tuple[int, ...]  # (0, 1) fail/pass, or (1, 2, 3, 4, 5)
    confusion: tuple[tuple[int, ...], ...]  # rows: the judge's category; columns: the reviewers'
    kappa: float | None  # Cohen's kappa (None: undefined, fewer than 2 pairs or no variation)
    kappa_note: str | None  # why the kappa is undefined, in a sentence (None when it is defined)
    weighting: Literal["unweighted", "linear", "quadratic"]  # how the kappa counts disagreements
    spearman: float | None  # Spearman's rho of the judge's value and the reviewers' category
    spearman_note: str | None  # why rho is undefined, in a sentence (None when it is defined)
    percent_agreement: float | None  # share of pairs in the same category (None: no pairs)
    pairs: tuple[Pair, ...]  # every pair, in session order
    disagreements: tuple[Pair, ...]  # the pairs in different categories, largest gap first
    n_multi_reviewer: int  # pairs and ties whose verdict came from more than one reviewer
    n_reviewer_ties: int  # sessions left out: the reviewers' labels split evenly
    n_judge_failed: int  # sessions left out: the judge failed on them
    n_judge_not_applicable: int  # sessions left out: the metric did not apply (or gave no value)
    n_not_scored: int  # sessions with the verdict that the run did not score
    n_ambiguous: int  # ordinal, judge's rubric unknown: scored sessions with several rubric verdicts

    @property
    def n(self) -> int:
        """How many sessions were compared."""
        return len(self.pairs)


@dataclass(frozen=True)
class _JudgeMetric:
    key: str
    run_id: int
    scale: tuple[float, float]
    rubric: str | None  # the judge's own rubric's name, when the run says it


def _named_rubrics(rubrics: Any) -> list[str]:
    if not isinstance(rubrics, dict):
        return []
    return [k for k in rubrics if not (k.startswith("score") and k.endswith("_description"))]


def _judge_metrics(store: Store, dataset: str, run_id: int | None) -> list[_JudgeMetric]:
    """The judge metrics to compare, each with the run whose scores are used."""
    if run_id is not None:
        run = store.runs.get(run_id)
        if run.dataset != dataset:
            raise UsageError(f"run #{run_id} scored dataset {run.dataset!r}, not {dataset!r}")
        runs = [run]
    else:
        runs = store.runs.recent(dataset)  # newest first
    found: dict[str, _JudgeMetric] = {}
    for run in runs:
        params = run.params if isinstance(run.params, dict) else {}
        for key in run.metrics:
            if key in found:
                continue  # a newer run has it
            entry = params.get(key)
            given: dict[str, Any] = entry if isinstance(entry, dict) else {}
            try:
                cls = get_metric(str(given.get("name") or key.split(":", 1)[0]))
            except EvalcoreError:
                continue  # a metric this evalcore no longer knows
            if not cls.uses_judge:
                continue
            if not store.runs.has_scores(run.id, key):
                continue  # the run has no score of it yet: an older run may
            named = _named_rubrics(given.get("rubrics"))
            rubric = named[0] if tuple(cls.scale) == _ORDINAL_SCALE and len(named) == 1 else None
            found[key] = _JudgeMetric(key, run.id, (float(cls.scale[0]), float(cls.scale[1])), rubric)
    return sorted(found.values(), key=lambda m: m.key)


def _half_up(x: float) -> int:
    return math.floor(x + 0.5)


def _human(name: str, values: list[float]) -> int | None:
    """The reviewers' one verdict: majority label (None on a tie), or median rubric score rounded half up."""
    if name == LABEL:
        passes = sum(1 for v in values if v >= 0.5)
        fails = len(values) - passes
        return None if passes == fails else int(passes > fails)
    ordered = sorted(values)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return _half_up(median)


@dataclass
class _Tally:
    pairs: list[Pair]
    multi: int = 0
    ties: int = 0
    failed: int = 0
    not_applicable: int = 0
    not_scored: int = 0


def judge_agreement(
    store: Store, dataset: str, run_id: int | None = None, *, weights: Weights = "quadratic"
) -> list[Agreement]:
    """How far each judge metric of ``dataset`` agrees with the reviewers' verdicts (see the module doc).

    One ``Agreement`` per judge metric and verdict that share at least one session, sorted by metric
    and verdict; empty when nobody gave a verdict or no judge has scored. ``run_id`` compares that
    run's scores only; otherwise each metric's newest run with scores. ``weights`` weighs the 1-5 kappas.
    """
    if weights not in ("linear", "quadratic"):
        raise UsageError(f"unknown kappa weights {weights!r}: use 'linear' or 'quadratic'")
    store.datasets.id_of(dataset)  # NotFoundError for no such dataset
    judges = _judge_metrics(store, dataset, run_id)
    if not judges:
        return []
    given: dict[int, dict[str, list[float]]] = {}  # session -> verdict name -> every reviewer's value
    refs: dict[int, str] = {}
    for pk, ref, name, value in store.labels.verdict_values(dataset):
        given.setdefault(pk, {}).setdefault(name, []).append(float(value))
        refs[pk] = ref
    if not given:
        return []
    humans = {  # session -> verdict name -> (the reviewers' one category or None on a tie, how many reviewers)
        pk: {name: (_human(name, values), len(values)) for name, values in named.items()} for pk, named in given.items()
    }
    out: list[Agreement] = []
    for judge in judges:
        scores: dict[int, tuple[str, float | None]] = {
            pk: (status, value) for pk, status, value in store.runs.session_values(judge.run_id, judge.key)
        }
        out.extend(_compare(judge, humans, refs, scores, weights))
    return out


def _compare(
    judge: _JudgeMetric,
    humans: dict[int, dict[str, tuple[int | None, int]]],
    refs: dict[int, str],
    scores: dict[int, tuple[str, float | None]],
    weights: Weights,
) -> list[Agreement]:
    ordinal = judge.scale == _ORDINAL_SCALE
    low, high = judge.scale
    threshold = None if ordinal else (low + high) / 2
    tallies: dict[str, _Tally] = {}
    ambiguous = 0
    for pk, named in humans.items():
        if not ordinal:
            name = LABEL if LABEL in named else None
        elif judge.rubric is not None:
            name = _RUBRIC + judge.rubric if _RUBRIC + judge.rubric in named else None
        else:
            rubrics = [n for n in named if n.startswith(_RUBRIC)]
            if len(rubrics) > 1:
                ambiguous += pk in scores
                continue
            name = rubrics[0] if rubrics else None
        if name is None:
            continue
        tally = tallies.setdefault(name, _Tally([]))
        if pk not in scores:
            tally.not_scored += 1
            continue
        human, reviewers = named[name]
        status, value = scores[pk]
        if human is None:
            tally.ties += 1
            tally.multi += 1  # a tie takes two reviewers at least
        elif status == "error":
            tally.failed += 1
        elif status != "ok" or value is None or not math.isfinite(value):
            tally.not_applicable += 1
        else:
            if ordinal:
                category, gap = min(5, max(1, _half_up(value))), abs(value - human)
            else:
                category, gap = int(value >= (threshold or 0.0)), abs((value - low) / (high - low) - human)
            tally.multi += reviewers > 1
            tally.pairs.append(Pair(pk, refs[pk], value, category, human, reviewers, name, gap))
    agreements = [
        _agreement(judge, name, tally, ambiguous, threshold, weights)
        for name, tally in sorted(tallies.items())
        if tally.pairs or tally.ties or tally.failed or tally.not_applicable
    ]
    if ordinal and ambiguous and not agreements:
        agreements.append(_agreement(judge, ANY_RUBRIC, _Tally([]), ambiguous, threshold, weights))
    return agreements


def _agreement(
    judge: _JudgeMetric, name: str, tally: _Tally, ambiguous: int, threshold: float | None, weights: Weights
) -> Agreement:
    ordinal = threshold is None
    categories = _ORDINAL if ordinal else _BINARY
    pairs = tuple(tally.pairs)
    judged = [p.judge for p in pairs]
    human = [p.human for p in pairs]
    values = [p.judge_value for p in pairs]
    kappa = cohen_kappa(judged, human, categories, weights if ordinal else None)
    rho = spearman(values, human)
    return Agreement(
        metric=judge.key,
        verdict=name,
        kind="ordinal" if ordinal else "binary",
        run_id=judge.run_id,
        threshold=threshold,
        categories=categories,
        confusion=tuple(tuple(row) for row in confusion_matrix(judged, human, categories)),
        kappa=kappa,
        kappa_note=None if kappa is not None else _too_few(len(pairs)) or _one_category(judged[0], ordinal),
        weighting=weights if ordinal else "unweighted",
        spearman=rho,
        spearman_note=None if rho is not None else _too_few(len(pairs)) or _constant(values, human),
        percent_agreement=percent_agreement(judged, human),
        pairs=pairs,
        disagreements=tuple(sorted((p for p in pairs if p.judge != p.human), key=lambda p: (-p.gap, p.session_pk))),
        n_multi_reviewer=tally.multi,
        n_reviewer_ties=tally.ties,
        n_judge_failed=tally.failed,
        n_judge_not_applicable=tally.not_applicable,
        n_not_scored=tally.not_scored,
        n_ambiguous=ambiguous if ordinal and judge.rubric is None else 0,
    )


def _too_few(n: int) -> str | None:
    if n == 0:
        return "no session has both a judge score and a verdict"
    if n == 1:
        return "only one session has both a judge score and a verdict; it takes two"
    return None


def _one_category(category: int, ordinal: bool) -> str:
    name = str(category) if ordinal else ("pass", "fail")[category == 0]
    return f"the judge and the reviewers rated every session {name}: with no variation, kappa is undefined"


def _constant(values: list[float], human: list[int]) -> str:
    if len(set(values)) == 1:
        return "the judge gave every session the same score: no ranking to compare"
    return "the reviewers gave every session the same verdict: no ranking to compare"

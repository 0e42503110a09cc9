"""How far reviewers agree with each other: Krippendorff's alpha, pairwise Cohen's kappa, percent agreement.

Plain functions of a table of answers, written out here (no numpy): rows are the items (units), columns
the reviewers (raters), a cell is one reviewer's answer to one item or ``None`` when that reviewer did not
answer it. ``table_from_answers`` builds such a table from rows of ``(unit, rater, value)``, as a store
hands out submitted answers; ``disagreements`` lists the items whose answers differ.

Every figure comes as a ``Figure``: its value, or ``None`` with the reason in a sentence when it is
undefined (one reviewer, no item answered by two, no variation at all) - never NaN, never an exception
for data that is merely too thin - and the numbers behind it: how many items, reviewers and answers.

- **Krippendorff's alpha** (``alpha``), at the level that fits the question: ``nominal`` (categories with
  no order: single choice, yes/no), ``ordinal`` (ordered categories: a rating on a named scale; the order
  is the scale given, or the values sorted) or ``interval`` (numbers whose differences mean something).
  Computed from the coincidence matrix as in Krippendorff, *Computing Krippendorff's alpha-reliability*
  (2011): only items with two answers or more count ("pairable" values); missing answers are simply
  missing. 1 is perfect agreement, 0 agreement at chance, below 0 systematic disagreement.
- **Cohen's kappa** for every two reviewers (``pairwise_kappa``) on the items both answered, with
  ``evalcore.agreement.cohen_kappa``: unweighted for nominal questions, weighted (quadratic by default,
  or linear) by the steps apart on the scale for ordinal and interval ones (for interval values the
  steps are the ranks of the distinct values, not their distances: alpha is the figure that uses the
  distances). With each pair, its percent agreement.
- **Percent agreement** of the whole table (``percent_agreement``): over the items with two answers or
  more, the share of pairs of answers to an item that are equal, averaged over the items (each item
  counts once, however many reviewers answered it).
- **Multi-label questions** (``multilabel_agreement``; an answer is a set of labels): one nominal
  yes/no alpha (and kappa, percent agreement) per label, a reviewer's answer saying "yes" to the labels
  in it and "no" to the others. Chosen over MASI-weighted alpha because a figure per label says *which*
  label the reviewers read differently, each figure is an ordinary alpha (checked against the same
  oracle), and an empty answer ("none of these") counts as "no" everywhere rather than as undefined.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Literal, TypeAlias

from evalcore.agreement import Weights, cohen_kappa
from evalcore.agreement import percent_agreement as pair_percent_agreement
from evalcore.errors import UsageError

__all__ = [
    "AnswerTable",
    "Disagreement",
    "Figure",
    "LabelAgreement",
    "Level",
    "PairKappa",
    "ReviewerAgreement",
    "alpha",
    "disagreements",
    "multilabel_agreement",
    "pairwise_kappa",
    "percent_agreement",
    "reviewer_agreement",
    "table_from_answers",
]

#: The level of measurement of a question's answers (Stevens'), which decides how alpha weighs a disagreement.
Level = Literal["nominal", "ordinal", "interval"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval")

#: One answer: a category (text, number, yes/no) or, for a multi-label question, a set of labels.
Value: TypeAlias = str | int | float | bool
Cell: TypeAlias = Value | None


@dataclass(frozen=True)
class Figure:
    """One agreement figure and what it rests on."""

    value: float | None  # None: undefined, see ``reason``
    reason: str | None  # why the figure is undefined, in a sentence (None when it is defined)
    n_items: int  # items behind it (alpha, percent agreement: answered by two reviewers or more)
    n_raters: int  # reviewers who gave at least one of the answers behind it
    n_answers: int  # answers behind it


@dataclass(frozen=True)
class PairKappa:
    """Cohen's kappa and percent agreement of two reviewers on the items both answered."""

    rater_a: str
    rater_b: str
    kappa: Figure
    percent_agreement: Figure  # the share of the items both answered that they answered alike


@dataclass(frozen=True)
class ReviewerAgreement:
    """Every figure for one question."""

    level: Level
    alpha: Figure
    percent_agreement: Figure
    pairs: tuple[PairKappa, ...]  # every two reviewers, in the table's rater order
    n_items: int  # items with at least one answer
    n_raters: int  # reviewers with at least one answer
    weighting: Literal["unweighted", "linear", "quadratic"]  # how the pairwise kappas count a disagreement


@dataclass(frozen=True)
class LabelAgreement:
    """The figures of one label of a multi-label question, as a yes/no question."""

    label: str
    agreement: ReviewerAgreement


@dataclass(frozen=True)
class AnswerTable:
    """Answers as a table: ``rows[i][j]`` is rater ``raters[j]``'s answer to ``units[i]`` (None: none)."""

    units: tuple[Hashable, ...]
    raters: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]


@dataclass(frozen=True)
class Disagreement:
    """An item whose submitted answers differ."""

    unit: Hashable
    answers: tuple[tuple[str, object], ...]  # (rater, answer), in the order given
    distinct: int  # how many different answers


# -- the table -------------------------------------------------------------------------------------------


def _check_value(value: object, where: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"{where}: the answer {value!r} is not a number")


def table_from_answers(rows: Iterable[tuple[Hashable, str, object]]) -> AnswerTable:
    """The table of ``(unit, rater, value)`` rows: units and raters in the order first seen. A value of
    ``None`` is no answer. Two answers of one reviewer to one item are refused (``UsageError``)."""
    units: dict[Hashable, dict[str, object]] = {}
    raters: dict[str, None] = {}
    for unit, rater, value in rows:
        answers = units.setdefault(unit, {})
        if rater in answers:
            raise UsageError(f"item {unit!r}: reviewer {rater!r} answered twice; give one answer per reviewer")
        if value is None:
            continue
        _check_value(value, f"item {unit!r}, reviewer {rater!r}")
        answers[rater] = value
        raters.setdefault(rater, None)
    order = tuple(raters)
    return AnswerTable(
        units=tuple(units),
        raters=order,
        rows=tuple(tuple(units[u].get(r) for r in order) for u in units),
    )


def _rater_names(table: Sequence[Sequence[object]], raters: Sequence[str] | None) -> tuple[str, ...]:
    width = max((len(row) for row in table), default=0)
    if raters is None:
        return tuple(f"rater {i + 1}" for i in range(width))
    if len(raters) < width:
        raise UsageError(f"the table has {width} columns of answers but {len(raters)} reviewers are named")
    if len(set(raters)) != len(raters):
        raise UsageError("a reviewer is named twice")
    return tuple(raters)


def _cells(table: Sequence[Sequence[object]]) -> list[list[tuple[int, object]]]:
    """Each row's answers as (column, value), missing ones left out; non-finite numbers refused."""
    out: list[list[tuple[int, object]]] = []
    for i, row in enumerate(table):
        answers = []
        for j, value in enumerate(row):
            if value is None:
                continue
            _check_value(value, f"row {i + 1}, column {j + 1}")
            answers.append((j, value))
        out.append(answers)
    return out


def _domain(values: Iterable[object], level: Level, scale: Sequence[object] | None) -> list[object]:
    """The possible values in order (the scale given, else the values seen: sorted unless nominal)."""
    seen: dict[object, None] = dict.fromkeys(values)
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r}: use one of {', '.join(LEVELS)}")
    if level == "interval":
        wrong = [v for v in seen if isinstance(v, bool) or not isinstance(v, (int, float))]
        if wrong:
            raise UsageError(f"an interval question takes numbers; got {wrong[0]!r}")
    if scale is not None:
        listed = list(scale)
        if len(set(listed)) != len(listed):
            raise UsageError("a value is listed twice in the scale")
        unknown = [v for v in seen if v not in set(listed)]
        if unknown:
            raise UsageError(f"the answer {unknown[0]!r} is not on the scale {listed!r}")
        if level == "interval":
            return sorted(listed)  # type: ignore[type-var]
        return listed
    if level == "nominal":
        return list(seen)
    if level == "ordinal" and not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seen):
        raise UsageError("an ordinal question whose answers are not numbers needs its scale, in order")
    return sorted(seen)  # type: ignore[type-var]


# -- Krippendorff's alpha ----------------------------------------------------------------------------------


def _distance(level: Level, domain: list[object], totals: list[float]) -> list[list[float]]:
    """delta squared of every two values of the domain (``totals``: each value's pairable count)."""
    k = len(domain)
    if level == "nominal":
        return [[0.0 if c == d else 1.0 for d in range(k)] for c in range(k)]
    if level == "interval":
        numbers = [float(v) for v in domain]  # type: ignore[arg-type]
        return [[(numbers[c] - numbers[d]) ** 2 for d in range(k)] for c in range(k)]
    # ordinal: the counts of the values from c to d, less half of the two ends, squared
    prefix = [0.0]
    for t in totals:
        prefix.append(prefix[-1] + t)
    out = [[0.0] * k for _ in range(k)]
    for c in range(k):
        for d in range(k):
            low, high = min(c, d), max(c, d)
            between = prefix[high + 1] - prefix[low]
            out[c][d] = (between - (totals[c] + totals[d]) / 2) ** 2
    return out


def _undefined(reason: str, items: int = 0, raters: int = 0, answers: int = 0) -> Figure:
    return Figure(None, reason, items, raters, answers)


def _too_thin(answered: list[list[tuple[int, object]]]) -> str | None:
    """Why no agreement can be measured on these answers (None when it can)."""
    raters = {j for row in answered for j, _ in row}
    if not raters:
        return "nobody answered: agreement takes two reviewers"
    if len(raters) == 1:
        return "only one reviewer answered: agreement takes two"
    if not any(len(row) >= 2 for row in answered):
        return "no item was answered by two reviewers: agreement takes items answered by two or more"
    return None


def alpha(
    table: Sequence[Sequence[object]],
    level: Level = "nominal",
    scale: Sequence[object] | None = None,
) -> Figure:
    """Krippendorff's alpha of a units x raters table (``None`` cells: no answer) at ``level``.

    ``scale``: the possible values in order (needed for an ordinal question whose values are not
    numbers; for any question, an answer off the scale is refused). Undefined (a ``Figure`` whose value
    is ``None``, with the reason) when fewer than two reviewers answered, no item has two answers, or
    every pairable answer is the same value.
    """
    answered = _cells(table)
    domain = _domain((v for row in answered for _, v in row), level, scale)
    thin = _too_thin(answered)
    if thin is not None:
        return _undefined(thin, raters=len({j for row in answered for j, _ in row}))
    pairable = [row for row in answered if len(row) >= 2]
    index = {v: i for i, v in enumerate(domain)}
    k = len(domain)
    coincidence = [[0.0] * k for _ in range(k)]
    for row in pairable:
        counts = [0] * k
        for _, v in row:
            counts[index[v]] += 1
        m = len(row)
        for c in range(k):
            if not counts[c]:
                continue
            for d in range(k):
                pairs = counts[c] * (counts[d] - (c == d))
                if pairs:
                    coincidence[c][d] += pairs / (m - 1)
    totals = [math.fsum(row) for row in coincidence]
    n = math.fsum(totals)
    items = len(pairable)
    raters = len({j for row in pairable for j, _ in row})
    answers = sum(len(row) for row in pairable)
    present = [domain[c] for c in range(k) if totals[c] > 0]
    if len(present) < 2:
        return _undefined(
            f"every answer given by two reviewers or more is {present[0]!r}: with no variation, alpha is undefined",
            items,
            raters,
            answers,
        )
    delta = _distance(level, domain, totals)
    observed = math.fsum(coincidence[c][d] * delta[c][d] for c in range(k) for d in range(k))
    expected = math.fsum(totals[c] * totals[d] * delta[c][d] for c in range(k) for d in range(k) if c != d)
    value = 1.0 - (n - 1) * observed / expected
    return Figure(value, None, items, raters, answers)


# -- percent agreement and pairwise kappa ---------------------------------------------------------------------


def percent_agreement(table: Sequence[Sequence[object]]) -> Figure:
    """Over the items answered by two reviewers or more, the share of pairs of answers that are equal,
    averaged over those items (0 to 1). Undefined with fewer than two reviewers or no such item."""
    answered = _cells(table)
    thin = _too_thin(answered)
    if thin is not None:
        return _undefined(thin, raters=len({j for row in answered for j, _ in row}))
    shares = []
    raters: set[int] = set()
    answers = 0
    for row in answered:
        m = len(row)
        if m < 2:
            continue
        values = [v for _, v in row]
        alike = sum(1 for a, b in combinations(values, 2) if a == b)
        shares.append(alike / (m * (m - 1) / 2))
        raters.update(j for j, _ in row)
        answers += m
    return Figure(math.fsum(shares) / len(shares), None, len(shares), len(raters), answers)


def pairwise_kappa(
    table: Sequence[Sequence[object]],
    level: Level = "nominal",
    scale: Sequence[object] | None = None,
    raters: Sequence[str] | None = None,
    weights: Weights = "quadratic",
) -> tuple[PairKappa, ...]:
    """Cohen's kappa (and percent agreement) of every two reviewers, on the items both answered:
    unweighted for ``nominal``, weighted by ``weights`` for ``ordinal`` and ``interval``. ``raters``
    names the columns (by default ``rater 1``, ``rater 2``...)."""
    if weights not in ("linear", "quadratic"):
        raise UsageError(f"unknown kappa weights {weights!r}: use 'linear' or 'quadratic'")
    names = _rater_names(table, raters)
    answered = _cells(table)
    domain = _domain((v for row in answered for _, v in row), level, scale)
    index = {v: i for i, v in enumerate(domain)}
    categories = list(range(len(domain)))
    out = []
    for ja, jb in combinations(range(len(names)), 2):
        a: list[int] = []
        b: list[int] = []
        for row in answered:
            given = dict(row)
            if ja in given and jb in given:
                a.append(index[given[ja]])
                b.append(index[given[jb]])
        n = len(a)
        behind = (n, 2 if n else 0, 2 * n)
        if n == 0:
            note = f"{names[ja]} and {names[jb]} answered no item in common"
            kappa = _undefined(note)
            share = _undefined(note)
        else:
            value = cohen_kappa(a, b, categories, None if level == "nominal" else weights)
            if value is not None:
                kappa = Figure(value, None, *behind)
            elif n == 1:
                kappa = _undefined(f"{names[ja]} and {names[jb]} answered one item in common; kappa takes two", *behind)
            else:
                kappa = _undefined(
                    f"{names[ja]} and {names[jb]} gave every item they share the same answer: "
                    "with no variation, kappa is undefined",
                    *behind,
                )
            share = Figure(pair_percent_agreement(a, b), None, *behind)
        out.append(PairKappa(names[ja], names[jb], kappa, share))
    return tuple(out)


def reviewer_agreement(
    table: Sequence[Sequence[object]],
    level: Level = "nominal",
    scale: Sequence[object] | None = None,
    raters: Sequence[str] | None = None,
    weights: Weights = "quadratic",
) -> ReviewerAgreement:
    """Every figure of one question's table: alpha at ``level``, percent agreement, the pairwise kappas."""
    answered = _cells(table)
    names = _rater_names(table, raters)
    return ReviewerAgreement(
        level=level,
        alpha=alpha(table, level, scale),
        percent_agreement=percent_agreement(table),
        pairs=pairwise_kappa(table, level, scale, names, weights),
        n_items=sum(1 for row in answered if row),
        n_raters=len({j for row in answered for j, _ in row}),
        weighting="unweighted" if level == "nominal" else weights,
    )


# -- multi-label questions ----------------------------------------------------------------------------------


def multilabel_agreement(
    table: Sequence[Sequence[Collection[str] | None]],
    labels: Sequence[str] | None = None,
    raters: Sequence[str] | None = None,
) -> tuple[LabelAgreement, ...]:
    """Per label, the nominal agreement of the yes/no question "is this label in the answer?" (a cell:
    the set of labels a reviewer chose, empty for none; ``None`` for no answer). ``labels``: the
    question's options, in order (by default the labels chosen, sorted); a label chosen that is not
    among them is refused."""
    chosen: dict[str, None] = {}
    for i, row in enumerate(table):
        for j, cell in enumerate(row):
            if cell is None:
                continue
            if isinstance(cell, str) or not isinstance(cell, Collection):
                raise UsageError(f"row {i + 1}, column {j + 1}: a multi-label answer is a set of labels, not {cell!r}")
            chosen.update(dict.fromkeys(cell))
    if labels is None:
        order = sorted(chosen)
    else:
        order = list(labels)
        if len(set(order)) != len(order):
            raise UsageError("a label is listed twice")
        unknown = [label for label in chosen if label not in set(order)]
        if unknown:
            raise UsageError(f"the label {unknown[0]!r} is not one of the question's labels {order!r}")
    out = []
    for label in order:
        yes_no = [[None if cell is None else label in cell for cell in row] for row in table]
        out.append(LabelAgreement(label, reviewer_agreement(yes_no, "nominal", (False, True), raters)))
    return tuple(out)


# -- disagreements --------------------------------------------------------------------------------------------


def _comparable(value: object) -> object:
    if isinstance(value, (set, frozenset, list, tuple)):
        return frozenset(value)
    return value


def disagreements(rows: Iterable[tuple[Hashable, str, object]]) -> list[Disagreement]:
    """The items whose submitted answers differ, in the order the items first appear. ``rows`` are
    ``(unit, rater, value)``; ``None`` values (no answer) are left out. A multi-label answer (a set, list
    or tuple of labels) is compared as a set: the same labels in another order are the same answer."""
    table = table_from_answers(rows)
    out = []
    for unit, row in zip(table.units, table.rows, strict=True):
        answers = tuple((r, v) for r, v in zip(table.raters, row, strict=True) if v is not None)
        distinct: list[object] = []
        for _, value in answers:
            key = _comparable(value)
            if key not in distinct:
                distinct.append(key)
        if len(distinct) > 1:
            out.append(Disagreement(unit, answers, len(distinct)))
    return out

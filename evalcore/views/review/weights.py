"""Gaussia's turn weights explained in words, for the reviewer who types them.

Gaussia weighs each turn of a session when it averages per-turn scores. The rules (see
:func:`evalcore.schema.resolve_weights`, which this module uses, so the numbers shown are
the numbers scored):

- no weight set: every turn weighs 1/n;
- every weight set: used as given when they sum to 1, else 1/n each;
- some set: the rest of 1 is shared equally by the turns without one, unless the given
  ones already sum to 1 or more: then 1/n each.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from evalcore.schema import resolve_weights

__all__ = ["WeightKind", "WeightsExplanation", "explain_weights", "format_number", "typed_weights"]

WeightKind = Literal["no_turns", "none_set", "all_set", "partial", "fallback_sum", "fallback_over", "invalid"]


@dataclass(frozen=True)
class WeightsExplanation:
    """The effective weight of every turn, which rule gave it, and that rule in a sentence.

    ``effective`` is exactly what :func:`~evalcore.schema.resolve_weights` returns. ``kind``:

    - ``no_turns``: the session has no turns;
    - ``none_set``: no weight set, 1/n each;
    - ``all_set``: every weight set and they sum to 1, used as given;
    - ``partial``: some set (summing below 1), the rest shared by the others;
    - ``fallback_sum``: every weight set but they do not sum to 1, 1/n each;
    - ``fallback_over``: some set but they already sum to 1 or more, 1/n each;
    - ``invalid``: a weight is negative, NaN or infinite; ``problem`` says which (the store
      refuses such a weight, so it can never be scored; ``effective`` is still what
      ``resolve_weights`` makes of it).
    """

    effective: list[float]
    kind: WeightKind
    sentence: str
    problem: str | None = None

    @property
    def falls_back(self) -> bool:
        """Whether the weights typed are ignored in favour of equal weights."""
        return self.kind in ("fallback_sum", "fallback_over")


def format_number(value: float) -> str:
    """A weight as a reviewer reads it: at most 3 decimals (3 significant digits below 1), no trailing zeros."""
    if math.isnan(value) or math.isinf(value):
        return str(value)
    if abs(value) >= 1:
        text = f"{value:.3f}".rstrip("0").rstrip(".")
    else:
        text = f"{value:.3g}"
        if "e" in text:  # tiny: 1e-05 reads better as 0.00001
            text = f"{value:.10f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _turns(n: int) -> str:
    return "1 turn" if n == 1 else f"{n} turns"


def _equal(n: int) -> str:
    return "1" if n == 1 else f"1/{n}"


def _problem(weights: list[float | None]) -> str | None:
    bad = [
        f"turn {i + 1} has {format_number(w)}"
        for i, w in enumerate(weights)
        if w is not None and (math.isnan(w) or math.isinf(w) or w < 0)
    ]
    if not bad:
        return None
    return f"A weight must be a number >= 0: {'; '.join(bad)}."


def typed_weights(
    saved: list[float | None], n_turns: int, typed: Mapping[str, Any], prefix: str, suffix: str
) -> list[float | None]:
    """The weight of each of ``n_turns`` turns: ``saved`` (a turn it does not reach: not set), with what is typed in
    a turn's editor over it — ``typed`` holds the editors' values, the one of turn ``i`` under
    ``f"{prefix}{i}{suffix}"`` (a cleared editor: ``None``). One look at each editor there is, not one per turn: a
    session may have hundreds of thousands of turns."""
    weights = saved[:n_turns] + [None] * (n_turns - len(saved))
    for name, value in typed.items():
        if name.startswith(prefix) and name.endswith(suffix):
            index = name[len(prefix) : len(name) - len(suffix)]
            if index.isdigit() and int(index) < len(weights):
                weights[int(index)] = value
    return weights


def explain_weights(weights: list[float | None]) -> WeightsExplanation:
    """Explain the weights typed for each turn (``None``: not set), one entry per turn."""
    effective, _warning = resolve_weights(weights)
    n = len(weights)
    problem = _problem(weights)
    if problem is not None:
        return WeightsExplanation(effective, "invalid", problem, problem)
    if n == 0:
        return WeightsExplanation(effective, "no_turns", "The session has no turns, so no weights.")
    given = [w for w in weights if w is not None]
    total = math.fsum(given)
    if not given:
        if n == 1:
            return WeightsExplanation(effective, "none_set", "No weight set: the only turn weighs 1.")
        return WeightsExplanation(
            effective,
            "none_set",
            f"No weights set: each of the {n} turns weighs 1/{n} ({format_number(1 / n)}).",
        )
    if len(given) == n:
        if effective == [float(w) for w in given] and abs(total - 1.0) <= 1e-6:
            if n == 1:
                return WeightsExplanation(effective, "all_set", "The only weight is set to 1: used as given.")
            return WeightsExplanation(effective, "all_set", f"All {n} weights set and sum to 1: used as given.")
        what = "The weight is" if n == 1 else "The weights sum to"
        return WeightsExplanation(
            effective,
            "fallback_sum",
            f"{what} {format_number(total)}, not 1: Gaussia falls back to equal weights, {_equal(n)} each.",
        )
    missing = n - len(given)
    if total >= 1.0:
        if len(given) == 1:
            head = f"The 1 weight given is already {format_number(total)}"
        else:
            head = f"The {len(given)} weights given already sum to {format_number(total)}"
        have = "has" if missing == 1 else "have"
        return WeightsExplanation(
            effective,
            "fallback_over",
            f"{head} while {_turns(missing)} {have} none: equal weights 1/{n} each.",
        )
    rest = 1.0 - total
    share = effective[next(i for i, w in enumerate(weights) if w is None)]
    if missing == 1:
        where = f"goes to the 1 other turn ({format_number(share)})"
    else:
        where = f"is split over the {missing} other turns ({format_number(share)} each)"
    return WeightsExplanation(
        effective,
        "partial",
        f"{len(given)} of {n} weights set (sum {format_number(total)}): the remaining {format_number(rest)} {where}.",
    )

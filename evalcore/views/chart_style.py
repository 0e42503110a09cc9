"""How the Dashboard's charts write their texts, worked out: a long name shortened with an ellipsis on an axis (the
whole name stays in the hover), the colour of a cell's text chosen for its cell's colour (white on a dark cell, dark
on a light one), and the ticks of a histogram of whole values (one at each value, not at the bars' edges).

Colour scales are Plotly's: ``[[position, "#rrggbb"], ...]`` from position 0 to 1; a cell's colour is interpolated
in RGB between the two stops around its value, as Plotly draws it.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalcore.views.dashboard import Distribution, Heatmap
from evalcore.views.text import chart_text, visible

__all__ = [
    "DARK",
    "LABEL_CHARS",
    "TITLE_CHARS",
    "WHITE",
    "axis_labels",
    "axis_title",
    "cell_ink",
    "heatmap_inks",
    "histogram_ticks",
    "inks",
]

#: The text colours a cell can get.
DARK, WHITE = "#31333f", "#ffffff"
#: Axis labels longer than this many characters are shortened (an ellipsis ends them).
LABEL_CHARS = 28
#: Axis titles longer than this many characters are shortened (the page names the metric in full above its chart).
TITLE_CHARS = 60

#: A colour scale: (position, "#rrggbb") stops from 0 to 1.
Scale = Sequence[tuple[float, str]]


def axis_labels(names: Sequence[str], limit: int = LABEL_CHARS) -> tuple[list[str], list[str]]:
    """The values of a category axis (each name whole, as a chart shows it literally: what a hover shows and a
    click returns) and the tick text written for each (the name cut to ``limit`` characters with an ellipsis)."""
    values = [chart_text(n) for n in names]
    shown = [visible(n) for n in names]
    ticks = [chart_text(s) if len(s) <= limit else chart_text(s[: limit - 1].rstrip()) + "…" for s in shown]
    return values, ticks


def axis_title(name: str, limit: int = TITLE_CHARS) -> str:
    """An axis title naming ``name`` as a chart shows it literally, cut to ``limit`` characters with an ellipsis."""
    return axis_labels([name], limit)[1][0]


def _rgb(colour: str) -> tuple[float, float, float]:
    c = colour.lstrip("#")
    return int(c[0:2], 16) / 255, int(c[2:4], 16) / 255, int(c[4:6], 16) / 255


def _colour_at(scale: Scale, t: float) -> tuple[float, float, float]:
    stops = [(float(p), _rgb(c)) for p, c in scale]
    t = min(max(t, stops[0][0]), stops[-1][0])
    for (p0, c0), (p1, c1) in zip(stops, stops[1:], strict=False):
        if t <= p1:
            f = 0.0 if p1 == p0 else (t - p0) / (p1 - p0)
            r, g, b = (a + (z - a) * f for a, z in zip(c0, c1, strict=True))
            return r, g, b
    return stops[-1][1]


def _brightness(rgb: tuple[float, float, float]) -> float:
    """Perceived brightness, 0 to 1 (the YIQ formula Plotly's own text contrast uses)."""
    r, g, b = rgb
    return 0.299 * r + 0.587 * g + 0.114 * b


def cell_ink(scale: Scale, t: float | None) -> str:
    """The text colour for a cell of value ``t`` (0 to 1) on ``scale``: white on a dark cell (brightness under
    half, as Plotly decides), dark on a light one and on an empty cell."""
    if t is None:
        return DARK
    return WHITE if _brightness(_colour_at(scale, t)) < 0.5 else DARK


def inks(values: Sequence[Sequence[float | None]], scale: Scale) -> list[list[str]]:
    """:func:`cell_ink` of every cell of a grid."""
    return [[cell_ink(scale, v) for v in row] for row in values]


def heatmap_inks(h: Heatmap, quality: Scale, counts: Scale) -> list[list[str]]:
    """The text colour of each cell of the sessions × metrics heatmap: on ``quality``'s colours for a quality
    metric, on ``counts``' for a count (``Heatmap.cells``)."""
    good, neutral = h.cells(neutral=False), h.cells(neutral=True)
    return [
        [cell_ink(quality, g) if g is not None else cell_ink(counts, n) for g, n in zip(gs, ns, strict=True)]
        for gs, ns in zip(good, neutral, strict=True)
    ]


def histogram_ticks(d: Distribution) -> tuple[list[float], list[str]] | None:
    """The ticks of a histogram whose every bar holds one whole value (a 0/1 metric, a 1–5 rating): one at each
    value, labelled with it — not at the bars' edges (−0.5, 0.5, 1.5). ``None``: bars of ranges (Plotly's ticks)."""
    if not d.bins or any(b.high - b.low != 1 or not float(b.low + 0.5).is_integer() for b in d.bins):
        return None
    return [b.low + 0.5 for b in d.bins], [b.label for b in d.bins]

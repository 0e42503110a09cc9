"""Plotly figures for the Dashboard, drawn from what ``evalcore.views.dashboard`` computed (no computing here:
each function lays out given numbers). One calm look: small margins, one blue, status colours."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from evalcore.agreement import Agreement
from evalcore.views.ab import ABMetric
from evalcore.views.chart_style import axis_labels, axis_title, heatmap_inks, histogram_ticks, inks
from evalcore.views.dashboard import Comparison, Distribution, Group, Heatmap, ReviewProgress
from evalcore.views.text import chart_text
from evalcore.views.tools import ToolFailures
from evalcore.views.usage import Trend

#: Every chart's toolbar: its PNG download (at twice the size, named for the chart) and nothing that changes the
#: view (the charts are clicked, not zoomed).
CONFIG: dict[str, Any] = {
    "displayModeBar": "hover",
    "displaylogo": False,
    "modeBarButtons": [["toImage"]],
    "toImageButtonOptions": {"format": "png", "scale": 2},
}


def show(fig: go.Figure, *, key: str, csv: str, name: str, **options: Any) -> Any:
    """Draw ``fig`` with the toolbar's PNG export (``CONFIG``) and, under it, a download of its data (``csv``, named
    ``name``.csv; a chart with no data has none). Returns the chart's selection event."""
    config = {**CONFIG, "toImageButtonOptions": {**CONFIG["toImageButtonOptions"], "filename": name}}
    event = st.plotly_chart(fig, key=key, config=config, **options)
    show_csv(csv, name=name, key=f"csv-{key}")
    return event


def show_csv(csv: str, *, name: str, key: str) -> None:
    """A download of a chart's or table's data (``csv``, named ``name``.csv); nothing when there is no data."""
    if csv:
        st.download_button(
            "CSV", csv, file_name=f"{name}.csv", mime="text/csv", key=key, icon=":material/download:",
            type="tertiary", on_click="ignore", help="This data as a CSV file",
        )  # fmt: skip


BLUE = "#2f62c7"
GREY = "#9aa3b2"
STATUS_COLOURS = {
    "todo": "#c3c8d1",
    "in_progress": "#7aa0e0",
    "approved": "#2e9d5b",
    "rejected": "#d0473d",
    "flagged": "#e0a31a",
}
FONT = {"family": "Source Sans, sans-serif", "size": 12, "color": "#31333f"}


def _layout(fig: go.Figure, *, height: int = 260, **extra: Any) -> go.Figure:
    extra.setdefault("showlegend", False)
    extra.setdefault("margin", {"l": 8, "r": 8, "t": 8, "b": 8})
    fig.update_layout(
        height=height,
        font=FONT,
        plot_bgcolor="white",
        paper_bgcolor="white",
        bargap=0.12,
        hoverlabel={"font": FONT, "bgcolor": "white"},
        clickmode="event+select",
        dragmode=False,
        **extra,
    )
    fig.update_xaxes(showgrid=False, linecolor="#d5d8de", ticks="outside", tickcolor="#d5d8de", automargin=True)
    fig.update_yaxes(gridcolor="#eef0f3", zeroline=False, automargin=True)
    return fig


def _cells(z: Any, x: list[str], y: list[str], text: list[list[str]], colours: Any, hover: str) -> go.Heatmap:
    """A grid of cells coloured by ``z`` (0 to 1); their texts are written over them by :func:`_cell_texts`."""
    return go.Heatmap(
        z=z, x=x, y=y, text=text, colorscale=colours, zmin=0, zmax=1, showscale=False, xgap=2, ygap=2,
        hovertemplate=hover,
    )  # fmt: skip


def _cell_texts(x: list[str], y: list[str], text: list[list[str]], ink: list[list[str]]) -> go.Scatter:
    """Each cell's text in the colour that reads on its cell (``ink``, from ``evalcore.views.chart_style``)."""
    return go.Scatter(
        x=[m for _ in y for m in x], y=[r for r in y for _ in x], mode="text", text=[t for row in text for t in row],
        textfont={"color": [c for row in ink for c in row], "size": 12}, hoverinfo="skip",
    )  # fmt: skip


def _short_axis(fig: go.Figure, axis: str, names: list[str]) -> None:
    """A category axis of names: each tick cut short with an ellipsis (the whole name in the hover)."""
    values, ticks = axis_labels(names)
    fig.update_layout({f"{axis}axis": {"tickmode": "array", "tickvals": values, "ticktext": ticks}})


def histogram(d: Distribution) -> go.Figure:
    """The distribution's bars on the metric's axis, the mean a dotted line (click a bar: its sessions)."""
    fig = go.Figure(
        go.Bar(
            x=[(b.low + b.high) / 2 for b in d.bins],
            y=[b.count for b in d.bins],
            width=[(b.high - b.low) * 0.92 for b in d.bins],
            marker_color=BLUE,
            customdata=[b.label for b in d.bins],
            hovertemplate="%{customdata}: %{y:,} sessions<extra>click to see them</extra>",
        )
    )
    if d.summary.mean is not None:
        fig.add_vline(x=d.summary.mean, line={"color": "#31333f", "dash": "dot", "width": 1})
        fig.add_annotation(
            text=f"mean {d.summary.mean:.3f}", x=d.summary.mean, y=1.06, yref="paper", showarrow=False, xanchor="left"
        )
    ticks = histogram_ticks(d)
    if ticks is not None:  # one tick at each whole value (a 0/1 metric: 0 and 1, not −0.5 … 1.5)
        fig.update_xaxes(tickmode="array", tickvals=ticks[0], ticktext=ticks[1])
    return _layout(
        fig, xaxis_title=axis_title(d.metric), yaxis_title="sessions", margin={"l": 8, "r": 8, "t": 22, "b": 8}
    )


def by_assistant(groups: list[Group], metric: str) -> go.Figure:
    """Each assistant's mean with its interval (click a bar: that assistant's sessions); every group has a mean."""
    means = [g.summary.mean or 0.0 for g in groups]
    fig = go.Figure(
        go.Bar(
            y=[chart_text(g.label) for g in groups],
            x=means,
            orientation="h",
            marker_color=BLUE,
            error_x={
                "type": "data",
                "symmetric": False,
                "array": [(g.summary.ci_high or m) - m for g, m in zip(groups, means, strict=True)],
                "arrayminus": [m - (g.summary.ci_low or m) for g, m in zip(groups, means, strict=True)],
                "color": "#31333f",
                "thickness": 1.2,
            },
            customdata=[g.summary.count for g in groups],
            hovertemplate="%{y}: %{x:.3f} (n=%{customdata:,})<extra>click to see them</extra>",
        )
    )
    _short_axis(fig, "y", [g.label for g in groups])
    return _layout(
        fig, height=max(140, 60 + 34 * len(groups)), xaxis_title=axis_title(f"mean {metric}"), yaxis_type="category"
    )


def paired(c: Comparison) -> go.Figure:
    """Run B against run A: one circle per pair of values, its size the number of sessions."""
    most = max((n for _, _, n in c.points), default=1)
    values = [v for a, b, _ in c.points for v in (a, b)]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    fig = go.Figure(
        go.Scatter(
            x=[a for a, _, _ in c.points],
            y=[b for _, b, _ in c.points],
            mode="markers",
            marker={
                "size": [8 + 28 * (n / most) ** 0.5 for _, _, n in c.points],
                "color": [BLUE if b >= a else "#d0473d" for a, b, _ in c.points],
                "opacity": 0.75,
                "line": {"width": 0},
            },
            customdata=[n for _, _, n in c.points],
            hovertemplate="run #" + str(c.run_a) + ": %{x}<br>run #" + str(c.run_b) + ": %{y}<br>"
            "%{customdata:,} sessions<extra>click to list them</extra>",
        )
    )
    fig.add_shape(type="line", x0=low, y0=low, x1=high, y1=high, line={"color": GREY, "dash": "dot", "width": 1})
    return _layout(fig, height=300, xaxis_title=f"run #{c.run_a}", yaxis_title=f"run #{c.run_b}")


def differences(c: Comparison) -> go.Figure:
    """How the differences (B - A) spread: below zero got worse."""
    diffs = c.spread
    xs = [d for d, _ in diffs]
    gaps = [b - a for a, b in zip(xs, xs[1:], strict=False) if b > a]
    reach = max([abs(x) for x in xs] + [0.5])
    width = min([0.8 * g for g in gaps] + [reach * 0.06])
    fig = go.Figure(
        go.Bar(
            x=xs,
            y=[n for _, n in diffs],
            width=[width] * len(xs),
            marker_color=["#d0473d" if d < 0 else GREY if d == 0 else BLUE for d in xs],
            hovertemplate="%{x:+.3f}: %{y:,} sessions<extra></extra>",
        )
    )
    return _layout(
        fig, height=300, xaxis_title=f"run #{c.run_b} − run #{c.run_a}", yaxis_title="sessions",
        xaxis_range=[-reach * 1.1, reach * 1.1],
    )  # fmt: skip


#: The colours of quality (red is bad, green good) and of counts (more is neither: one calm blue).
QUALITY_SCALE: list[tuple[float, str]] = [(0, "#d0473d"), (0.5, "#f3e3b5"), (1, "#2e9d5b")]
COUNT_SCALE: list[tuple[float, str]] = [(0, "#f4f6fa"), (1, "#7aa0e0")]


def heatmap(h: Heatmap) -> go.Figure:
    """Sessions x metrics, quality coloured red to green on each metric's scale and counts (open scales) in a
    neutral blue, the raw value in the cell; each row its session and assistant (click: Review)."""
    text = [["—" if v is None else f"{v:.3g}" for v in row] for row in h.values]
    refs = [chart_text(label) for label in h.row_labels]
    metrics = [chart_text(m) for m in h.metrics]
    hover = "%{y} · %{x}: %{text}<extra>click to review</extra>"
    fig = go.Figure(
        [
            _cells(h.cells(neutral=False), metrics, refs, text, QUALITY_SCALE, hover),
            _cells(h.cells(neutral=True), metrics, refs, text, COUNT_SCALE, hover),
            _cell_texts(metrics, refs, text, heatmap_inks(h, QUALITY_SCALE, COUNT_SCALE)),
        ]
    )
    # Plotly cannot select a heatmap's cells: nearly invisible squares over them take the clicks.
    fig.add_trace(
        go.Scatter(
            x=[m for _ in refs for m in metrics],
            y=[ref for ref in refs for _ in h.metrics],
            mode="markers",
            marker={"symbol": "square", "size": 22, "opacity": 0.01, "color": "white"},
            hoverinfo="none",
        )
    )
    fig = _layout(
        fig, height=60 + 24 * len(h.sessions), yaxis_type="category", xaxis_type="category",
        yaxis_range=[len(refs) - 0.5, -0.5], xaxis_range=[-0.5, len(h.metrics) - 0.5],
    )  # fmt: skip
    fig.update_xaxes(side="top")
    _short_axis(fig, "x", h.metrics)
    _short_axis(fig, "y", h.row_labels)
    return fig


def progress_by_day(p: ReviewProgress) -> go.Figure:
    """Statuses set per day, stacked."""
    fig = go.Figure(
        [
            go.Bar(x=p.days, y=p.by_day[s], name=s, marker_color=STATUS_COLOURS[s])
            for s in ("approved", "rejected", "flagged", "in_progress", "todo")
        ]
    )
    return _layout(fig, barmode="stack", showlegend=True, legend={"orientation": "h", "y": 1.12}, xaxis_type="category")


def progress_by_reviewer(p: ReviewProgress) -> go.Figure:
    """Statuses set by each reviewer, stacked (a long name cut short on the axis)."""
    fig = go.Figure(
        [
            go.Bar(
                y=[chart_text(r) for r in p.reviewers],
                x=p.by_reviewer[s],
                name=s,
                orientation="h",
                marker_color=STATUS_COLOURS[s],
            )  # fmt: skip
            for s in ("approved", "rejected", "flagged", "in_progress", "todo")
        ]
    )
    _short_axis(fig, "y", p.reviewers)
    return _layout(
        fig,
        height=max(150, 80 + 30 * len(p.reviewers)),
        barmode="stack",
        showlegend=True,
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},  # above the bars, never on them
        yaxis_type="category",
        margin={"l": 8, "r": 8, "t": 30, "b": 8},
    )


CONFUSION_SCALE: list[tuple[float, str]] = [(0, "#f4f6fa"), (1, BLUE)]


def confusion(a: Agreement) -> go.Figure:
    """The judge's categories (rows) against the reviewers' (columns), each cell its count."""
    names = ["fail", "pass"] if a.kind == "binary" else [str(c) for c in a.categories]
    counts = [list(row) for row in a.confusion]
    most = max((n for row in counts for n in row), default=0) or 1
    shares = [[n / most for n in row] for row in counts]
    text = [[f"{n:,}" for n in row] for row in counts]
    hover = "judge %{y}, reviewers %{x}: %{text} sessions<extra></extra>"
    fig = go.Figure(
        [
            _cells(shares, names, names, text, CONFUSION_SCALE, hover),
            _cell_texts(names, names, text, inks(shares, CONFUSION_SCALE)),
        ]
    )
    side = 70 + 34 * len(names)
    return _layout(
        fig, height=side, xaxis_title="reviewers", yaxis_title="judge", xaxis_type="category",
        yaxis_type="category", yaxis_autorange="reversed",
    )  # fmt: skip


def ab_differences(found: list[ABMetric]) -> go.Figure:
    """Each metric's paired mean difference B − A with its interval (a dot and a bar; zero dotted)."""
    shown = [m for m in found if m.difference.mean is not None]
    means = [m.difference.mean or 0.0 for m in shown]
    fig = go.Figure(
        go.Scatter(
            y=[chart_text(m.metric) for m in shown],
            x=means,
            mode="markers",
            marker={"size": 10, "color": [BLUE if d >= 0 else "#d0473d" for d in means]},
            error_x={
                "type": "data",
                "symmetric": False,
                "color": "#31333f",
                "thickness": 1.2,
                "array": [(m.difference.ci_high or d) - d for m, d in zip(shown, means, strict=True)],
                "arrayminus": [d - (m.difference.ci_low or d) for m, d in zip(shown, means, strict=True)],
            },
            customdata=[[m.pairs, m.improved, m.regressed] for m in shown],
            hovertemplate="%{y}: %{x:+.3f} over %{customdata[0]:,} tasks "
            "(%{customdata[1]:,} improved, %{customdata[2]:,} regressed)<extra></extra>",
        )  # fmt: skip
    )
    fig.add_vline(x=0, line={"color": GREY, "dash": "dot", "width": 1})
    _short_axis(fig, "y", [m.metric for m in shown])
    return _layout(fig, height=max(120, 60 + 34 * len(shown)), xaxis_title="B − A (paired by task)",
                   yaxis_type="category")  # fmt: skip


#: Each failure's colour in the per-tool chart.
FAILURE_COLOURS = {
    "missing": "#d0473d",
    "wrong_arguments": "#e0a31a",
    "out_of_order": "#7aa0e0",
    "extra": GREY,
}


def tool_failures(found: ToolFailures, limit: int = 15) -> go.Figure:
    """Per tool (the most failed at the top), its failures stacked: missing, wrong arguments, out of order, extra."""
    tools = found.tools[:limit]
    names = [chart_text(t.tool) for t in tools]
    fig = go.Figure(
        [
            go.Bar(
                y=names,
                x=[t.counts[kind] for t in tools],
                name=kind.replace("_", " "),
                orientation="h",
                marker_color=colour,
                customdata=[kind] * len(tools),
                hovertemplate="%{y}: %{x:,} " + kind.replace("_", " ") + "<extra>click to see the sessions</extra>",
            )  # fmt: skip
            for kind, colour in FAILURE_COLOURS.items()
        ]
    )
    _short_axis(fig, "y", [t.tool for t in tools])
    return _layout(
        fig, height=max(140, 70 + 26 * len(tools)), barmode="stack", showlegend=True,
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"}, yaxis_type="category",
        yaxis_autorange="reversed", xaxis_title="calls", margin={"l": 8, "r": 8, "t": 30, "b": 8},
    )  # fmt: skip


def trend(t: Trend) -> go.Figure:
    """A metric's mean per assistant over runs in time order: one line per assistant."""
    fig = go.Figure(
        [
            go.Scatter(
                x=t.runs,
                y=t.means[who],
                name=chart_text(who),
                mode="lines+markers",
                connectgaps=True,
                customdata=t.counts[who],
                hovertemplate=chart_text(who) + ", run %{x}: %{y:.3f} (n=%{customdata:,})<extra></extra>",
            )  # fmt: skip
            for who in t.means
        ]
    )
    return _layout(
        fig, height=260, showlegend=True, legend={"orientation": "h", "y": 1.02, "yanchor": "bottom"},
        xaxis_type="category", yaxis_title=axis_title(f"mean {t.metric}"), margin={"l": 8, "r": 8, "t": 30, "b": 8},
    )  # fmt: skip

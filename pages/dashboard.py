"""Dashboard: each metric's distribution, assistants compared, a run against another, sessions x metrics,
review progress and the judges against the reviewers — every chart clickable down to its sessions."""

from __future__ import annotations

from typing import Any

import streamlit as st

from evalcore.agreement import judge_agreement, kappa_band
from evalcore.views.dashboard import (
    agreement_note,
    by_assistant,
    compare_runs,
    disagreement_rows,
    distribution,
    earlier_runs,
    heatmap,
    pair_sessions,
    review_progress,
    scored_runs,
    verdicts_version,
    worse_rows,
)
from evalcore.views.review.tables import session_label
from evalcore.views.text import escape_inline, literal_name, visible
from pages import _charts, _shared

_shared.frame_first()

HEATMAP_ROWS = 20

store = _shared.store()
dataset = _shared.dataset()
st.title("Dashboard")
if dataset is None:
    st.info("No dataset yet: import one on the Datasets page.", icon=":material/info:")
    st.page_link(_shared.PAGES["datasets"], label="Go to Datasets", icon=":material/database:")
    st.stop()
runs = scored_runs(store, dataset)
if not runs:
    st.info("No run has scored this dataset yet.", icon=":material/monitoring:")
    if "metrics" in _shared.PAGES:
        st.page_link(_shared.PAGES["metrics"], label="Score it on the Metrics page", icon=":material/functions:")
    st.stop()

# A chart's selection stays with its key: after acting on a click the charts get fresh keys, or coming
# back to this page would act on the same click again.
epoch = st.session_state.setdefault("dash_epoch", 0)


def clicked(event: Any) -> list[dict[str, Any]]:
    """The points of a chart's selection (none until a click); acting on them starts a new epoch."""
    points = list(event.selection.points) if event and event.selection else []
    if points:
        st.session_state["dash_epoch"] = epoch + 1
    return points


def state(run: Any) -> tuple[Any, ...]:
    """What identifies a run's scores as they are now (a finished run's never change): a cache key."""
    return (run.id, run.status, run.finished_at, run.n_done, run.n_failed, run.n_not_applicable)


# The two figures that read every score of a run are kept per run and metric: a finished run never changes.
@st.cache_data(show_spinner=False, max_entries=32)
def _by_assistant(path: str, run_state: tuple[Any, ...], metric: str) -> list[Any]:
    """The assistants that have a mean (those whose sessions all failed have nothing to chart)."""
    return [g for g in by_assistant(_shared.store(), run_state[0], metric) if g.summary.mean is not None]


@st.cache_data(show_spinner=False, max_entries=32)
def _compare(path: str, a: tuple[Any, ...], b: tuple[Any, ...], metric: str) -> Any:
    return compare_runs(_shared.store(), a[0], b[0], metric)


c = st.columns([3, 3, 3], vertical_alignment="bottom")
run = c[0].selectbox("Run", runs, format_func=lambda r: visible(r.label), key="dash_run")
metric = c[1].selectbox("Metric", run.metrics, format_func=visible, key="dash_metric")
others = earlier_runs(runs, run, metric)
against = c[2].selectbox(
    "Compare with an earlier run", [None, *others], key="dash_against",
    format_func=lambda r: "no comparison" if r is None else visible(r.label),
    help="Both runs on the sessions they both scored, this metric.",
)  # fmt: skip

# -- the distribution ---------------------------------------------------------------------------------
d = distribution(store, run.id, metric)
s = d.summary
st.markdown(f"#### {literal_name(metric)}")
m = st.columns(4)
m[0].metric("Mean", "—" if s.mean is None else f"{s.mean:.3f}")
m[1].metric("95% interval", "—" if s.ci_low is None else f"{s.ci_low:.3f} – {s.ci_high:.3f}", help="Bootstrap")
m[2].metric("Scored", f"{s.count:,}")
m[3].metric("Failed · not applicable", f"{s.failed:,} · {s.not_applicable:,}")
left, right = st.columns([3, 2], gap="medium")
with left:
    st.caption("Sessions by score. Click a bar to see its sessions.")
    event = st.plotly_chart(
        _charts.histogram(d), on_select="rerun", key=f"dash_hist-{epoch}", config={"displayModeBar": False}
    )
    for point in clicked(event):
        chosen = d.bins[int(point["point_index"])]
        if chosen.count:
            _shared.show_sessions(run=run, metric=metric, min=chosen.min_value, max=chosen.max_value)
with right:
    shown = _by_assistant(store.url, state(run), metric)
    st.caption("By assistant: mean and 95% interval. Click a bar for its sessions.")
    if shown:
        event = st.plotly_chart(
            _charts.by_assistant(shown, metric), on_select="rerun", key=f"dash_assist-{epoch}",
            config={"displayModeBar": False},
        )  # fmt: skip
        for point in clicked(event):
            group = shown[int(point["point_index"])]
            _shared.show_sessions(run=run, metric=metric, assistant=group.assistant or "any")
    else:
        st.info("No session has a score for this metric in this run.")

# -- run against run ---------------------------------------------------------------------------------
if against is not None:
    cmp = _compare(store.url, state(against), state(run), metric)
    st.markdown(f"#### Run #{run.id} against run #{against.id}")
    diff = cmp.differences
    change = "—" if diff.mean is None else f"{diff.mean:+.3f} [{diff.ci_low:+.3f}, {diff.ci_high:+.3f}]"
    st.caption(
        f"{cmp.paired:,} sessions scored by both: **{cmp.n_worse:,} worse**, {cmp.n_better:,} better, "
        f"{cmp.n_same:,} the same; mean change {change}."
    )
    a, b = st.columns(2, gap="medium")
    with a:
        event = st.plotly_chart(_charts.paired(cmp), on_select="rerun", key=f"dash_pairs-{epoch}",
                                config={"displayModeBar": False})  # fmt: skip
        for point in clicked(event):
            st.session_state["dash_pair"] = (against.id, run.id, metric, float(point["x"]), float(point["y"]))
    with b:
        st.plotly_chart(_charts.differences(cmp), key="dash_diffs", config={"displayModeBar": False})
    pair = st.session_state.get("dash_pair")
    if pair is not None and pair[:3] == (against.id, run.id, metric):
        behind = pair_sessions(store, *pair)
        st.caption(f"Sessions scored {pair[3]:g} by run #{pair[0]} and {pair[4]:g} by run #{pair[1]}:")
        with st.container(horizontal=True):
            for p in behind:
                st.button(escape_inline(session_label(p.ref)), key=f"dash_open-{p.pk}", on_click=_shared.open_session,
                          args=(p.ref,),
                          type="tertiary", icon=":material/rate_review:")  # fmt: skip
    if cmp.worse:
        st.caption("Worse first. Click a row to review the session.")
        picked = _shared.table(
            worse_rows(cmp), on_select="rerun", selection_mode="single-row",
            key=f"dash_worse-{epoch}", column_config={"change": st.column_config.NumberColumn(format="%+.3f")},
        )  # fmt: skip
        for row in picked.selection.rows if picked else []:
            st.session_state["dash_epoch"] = epoch + 1
            _shared.open_session(cmp.worse[row].ref)

# -- the judges against the reviewers -----------------------------------------------------------------
st.markdown("#### Judges against reviewers")


@st.cache_data(show_spinner=False, max_entries=20)
def _agreements(path: str, name: str, version: tuple[Any, ...]) -> list[Any]:
    """Agreement figures, computed again only when a verdict or a run of the dataset changed."""
    return judge_agreement(_shared.store(), name)


agreements = _agreements(store.url, dataset, verdicts_version(store, dataset))
if not agreements:
    st.info(
        "No judge metric has been scored on sessions that reviewers gave a verdict on. Give verdicts on the "
        "Review page (Verdict tab), score a judge metric, and see here how far the judge can be trusted.",
        icon=":material/balance:",
    )
for n, a in enumerate(agreements):
    with st.container(border=True):
        how = "weighted " + a.weighting if a.weighting != "unweighted" else "Cohen's"
        st.markdown(f"**{literal_name(a.metric)}** against the reviewers' **{literal_name(a.verdict)}**")
        k = st.columns([1, 1, 1, 1, 3])
        k[0].metric("Sessions", f"{a.n:,}")
        k[1].metric(f"Kappa ({how})", "—" if a.kappa is None else f"{a.kappa:.2f}", kappa_band(a.kappa),
                    delta_color="off", delta_arrow="off", help=a.kappa_note)  # fmt: skip
        k[2].metric("Spearman ρ", "—" if a.spearman is None else f"{a.spearman:.2f}", help=a.spearman_note)
        k[3].metric("Agree", "—" if a.percent_agreement is None else f"{a.percent_agreement:.0%}")
        with k[4]:
            st.plotly_chart(_charts.confusion(a), key=f"dash_conf-{n}", config={"displayModeBar": False})
        st.caption(agreement_note(a))
        if a.disagreements:
            picked = _shared.table(
                disagreement_rows(a), on_select="rerun",
                selection_mode="single-row", key=f"dash_disagree-{n}-{epoch}",
                height=min(38 + 35 * len(a.disagreements), 38 + 35 * 8),
            )  # fmt: skip
            for row in picked.selection.rows if picked else []:
                st.session_state["dash_epoch"] = epoch + 1
                _shared.open_session(a.disagreements[row].session_ref)

# -- review progress ----------------------------------------------------------------------------------
st.markdown("#### Review progress")
progress = review_progress(store, dataset)
st.caption(f"Now: {progress.sentence}.")
if progress.days:
    a, b = st.columns(2, gap="medium")
    with a:
        st.caption("Statuses set per day")
        st.plotly_chart(_charts.progress_by_day(progress), key="dash_days", config={"displayModeBar": False})
    with b:
        st.caption("Statuses set by each reviewer")
        st.plotly_chart(_charts.progress_by_reviewer(progress), key="dash_who", config={"displayModeBar": False})
else:
    st.info("No reviewer has set a status on this dataset yet.")

# -- sessions x metrics -------------------------------------------------------------------------------
st.markdown("#### Sessions × metrics")
page_key = f"dash_heat_page-{run.id}-{metric}"
start = (int(st.session_state.get(page_key, 1)) - 1) * HEATMAP_ROWS
h = heatmap(store, run.id, metric, limit=HEATMAP_ROWS, offset=start)
st.caption(
    f"The run's {h.total:,} sessions by {literal_name(metric)}, the lowest first, each with its assistant; scores "
    "coloured red to green on each metric's scale, counts (turns, tool calls, tokens, seconds) in blue, the value "
    "in the cell. Click a cell to review the session."
)
if h.sessions:
    event = st.plotly_chart(_charts.heatmap(h), on_select="rerun", key=f"dash_heat-{epoch}",
                            config={"displayModeBar": False})  # fmt: skip
    for point in clicked(event):  # a square over a cell: (session, metric) in reading order
        row = int(point["point_index"]) // max(1, len(h.metrics))
        _shared.open_session(h.sessions[row][1])
    if h.total > HEATMAP_ROWS:
        st.pagination(-(-h.total // HEATMAP_ROWS), key=page_key, max_visible_pages=7)

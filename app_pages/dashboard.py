"""Dashboard: each metric's distribution, assistants compared, a run against another, two assistants compared task by
task, where tools fail, cost and trends per assistant, sessions x metrics, review progress and the judges against
the reviewers — every chart clickable down to its sessions, its data downloadable, the choices kept in the URL."""

from __future__ import annotations

from typing import Any

import streamlit as st

from app_pages import _charts, _shared
from evalcore.agreement import judge_agreement, kappa_band
from evalcore.views import chart_data
from evalcore.views.ab import Side, ab_metrics, ab_pairs, ab_rows, ab_start, pair_rows, same_side
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
from evalcore.views.tools import COLUMNS, dataset_tool_failures, tool_rows
from evalcore.views.usage import trend, usage_by_assistant

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
# Every choice is kept in the URL (``bind``): a link opened anywhere shows the same view.
run = c[0].selectbox("Run", runs, format_func=lambda r: visible(r.label), key="dash_run", bind="query-params")
metric = c[1].selectbox("Metric", run.metrics, format_func=visible, key="dash_metric", bind="query-params")
others = earlier_runs(runs, run, metric)
against = c[2].selectbox(
    "Compare with an earlier run", [None, *others], key="dash_against", bind="query-params",
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
    event = _charts.show(
        _charts.histogram(d), on_select="rerun", key=f"dash_hist-{epoch}", csv=chart_data.histogram_csv(d),
        name=f"{metric}-run{run.id}-distribution",
    )  # fmt: skip
    for point in clicked(event):
        chosen = d.bins[int(point["point_index"])]
        if chosen.count:
            _shared.show_sessions(run=run, metric=metric, min=chosen.min_value, max=chosen.max_value)
with right:
    shown = _by_assistant(store.url, state(run), metric)
    st.caption("By assistant: mean and 95% interval. Click a bar for its sessions.")
    if shown:
        event = _charts.show(
            _charts.by_assistant(shown, metric), on_select="rerun", key=f"dash_assist-{epoch}",
            csv=chart_data.assistant_csv(shown), name=f"{metric}-run{run.id}-by-assistant",
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
        event = _charts.show(
            _charts.paired(cmp), on_select="rerun", key=f"dash_pairs-{epoch}", csv=chart_data.paired_csv(cmp),
            name=f"{metric}-run{run.id}-vs-run{against.id}",
        )  # fmt: skip
        for point in clicked(event):
            st.session_state["dash_pair"] = (against.id, run.id, metric, float(point["x"]), float(point["y"]))
    with b:
        _charts.show(_charts.differences(cmp), key="dash_diffs", csv=chart_data.differences_csv(cmp),
                     name=f"{metric}-run{run.id}-minus-run{against.id}")  # fmt: skip
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

# -- A/B by task ----------------------------------------------------------------------------------------
st.markdown("#### A/B by task")
faceted = store.sessions.facets(dataset)
assistants = sorted(faceted.assistants)
every = "every assistant"
who_choices = [every, *assistants]
first_sides = ab_start(runs, len(assistants))
ab = st.columns([3, 2, 3, 2], vertical_alignment="bottom")
a_run = ab[0].selectbox(
    "A: run", runs, index=first_sides.a_run, format_func=lambda r: visible(r.label), key="ab_a_run", bind="query-params"
)
a_who = ab[1].selectbox(
    "A: assistant", who_choices, index=first_sides.a_who, format_func=visible, key="ab_a_who", bind="query-params"
)
b_run = ab[2].selectbox(
    "B: run", runs, index=first_sides.b_run, format_func=lambda r: visible(r.label), key="ab_b_run", bind="query-params"
)
b_who = ab[3].selectbox(
    "B: assistant", who_choices, index=first_sides.b_who, format_func=visible, key="ab_b_who", bind="query-params"
)
side_a = Side(a_run.id, None if a_who == every else a_who)
side_b = Side(b_run.id, None if b_who == every else b_who)


@st.cache_data(show_spinner="Pairing the tasks…", max_entries=16)
def _ab(path: str, a: tuple[Any, ...], b: tuple[Any, ...], who: tuple[str | None, str | None]) -> Any:
    return ab_metrics(_shared.store(), Side(a[0], who[0]), Side(b[0], who[1]))


@st.cache_data(show_spinner=False, max_entries=16)
def _ab_pairs(path: str, a: tuple[Any, ...], b: tuple[Any, ...], who: tuple[str | None, str | None], m: str) -> Any:
    return ab_pairs(_shared.store(), Side(a[0], who[0]), Side(b[0], who[1]), m)[0]


if same_side(side_a, side_b, faceted.assistants, faceted.total):
    st.info(
        "A and B are the same sessions' scores: choose another assistant or another run for one side (A/B sets two "
        "assistants, or two runs that scored a metric in common, against each other).",
        icon=":material/compare_arrows:",
    )
else:
    compared = _ab(store.url, state(a_run), state(b_run), (side_a.assistant, side_b.assistant))
    if not compared:
        st.info("The two runs scored no metric in common.", icon=":material/compare_arrows:")
    elif not any(m.pairs for m in compared):
        st.info("No task was answered on both sides: sessions are matched by their task id, else their first "
                "user message.", icon=":material/compare_arrows:")  # fmt: skip
    else:
        first = compared[0]
        st.caption(
            f"A is {escape_inline(side_a.label)}, B is {escape_inline(side_b.label)}: sessions matched by task (the "
            f"task id the data kept, else the first user message; a task's trials averaged). {first.pairs:,} tasks "
            f"paired, {first.only_a:,} only in A, {first.only_b:,} only in B. Improved means higher in B; the "
            "interval is a 95% bootstrap interval of the paired mean difference."
        )
        left, right = st.columns([3, 2], gap="medium")
        with left:
            _shared.table(
                ab_rows(compared), key="ab_table",
                column_config={m: st.column_config.NumberColumn(format="%.3f") for m in ("mean_a", "mean_b")}
                | {"difference": st.column_config.NumberColumn(format="%+.3f")},
            )  # fmt: skip
        with right:
            _charts.show(_charts.ab_differences(compared), key="ab_chart", csv=chart_data.rows_csv(ab_rows(compared)),
                         name="ab-by-task")  # fmt: skip
        ab_metric = metric if metric in [m.metric for m in compared] else compared[0].metric
        pairs = _ab_pairs(store.url, state(a_run), state(b_run), (side_a.assistant, side_b.assistant), ab_metric)
        st.caption(
            f"Tasks by {literal_name(ab_metric)}, the worst change first. Click a row to see the two transcripts "
            "side by side."
        )
        shown_pairs = pair_rows(pairs, limit=200)
        picked = _shared.table(
            shown_pairs, on_select="rerun", selection_mode="single-row", key=f"ab_pairs-{epoch}",
            height=min(38 + 35 * len(shown_pairs), 38 + 35 * 8),
            column_config={"change": st.column_config.NumberColumn(format="%+.3f")},
        )  # fmt: skip
        _charts.show_csv(chart_data.rows_csv(pair_rows(pairs)), name=f"ab-pairs-{ab_metric}", key="ab_pairs_csv")
        for row in picked.selection.rows if picked else []:
            st.session_state["dash_epoch"] = epoch + 1
            p = pairs[row]
            st.switch_page(_shared.PAGES["compare"], query_params={
                "dataset": dataset, "a": p.a_ref, "b": p.b_ref, "task": p.task[:300], "metric": ab_metric,
            })  # fmt: skip

# -- where tools fail -----------------------------------------------------------------------------------
st.markdown("#### Where tools fail")


@st.cache_data(show_spinner="Comparing the tool calls…", max_entries=8, ttl=60)
def _tools(path: str, name: str, who: str | None) -> Any:
    return dataset_tool_failures(_shared.store(), name, assistant=who)


t = st.columns([2, 5], vertical_alignment="bottom")
tools_who = t[0].selectbox("Assistant", who_choices, format_func=visible, key="tools_who", bind="query-params")
failures = _tools(store.url, dataset, None if tools_who == every else tools_who)
if not failures.tools:
    st.info("No session has reference tool calls to compare its calls with.", icon=":material/build:")
else:
    t[1].caption(
        f"The assistant's calls against the reference calls, per tool, over {failures.sessions:,} sessions with "
        f"reference calls ({failures.skipped:,} without, not counted). A call with the expected name but other "
        "arguments counts under wrong arguments (which are named); a swap of two calls is one out of order. "
        "Click a cell or a bar to list its sessions."
    )
    rows = tool_rows(failures)
    if not failures.failed:  # an empty chart says nothing: say it
        st.success("No tool failed: every reference call was made, with its arguments, in order, and no call "
                   "was extra.", icon=":material/check_circle:")  # fmt: skip
    # (the page's width: its eight columns, the arguments named in the last, are cut in less)
    picked = _shared.table(rows, on_select="rerun", selection_mode="single-cell", key=f"tools_table-{epoch}",
                           height=min(38 + 35 * len(rows), 38 + 35 * 10))  # fmt: skip
    for r, col in picked.selection.cells if picked else []:
        if col in COLUMNS and r < len(failures.tools):
            st.session_state["tools_cell"] = (failures.tools[r].tool, col)
    if failures.failed:
        event = _charts.show(
            _charts.tool_failures(failures), on_select="rerun", key=f"tools_chart-{epoch}",
            csv=chart_data.rows_csv(rows), name="tool-calls-per-tool",
        )  # fmt: skip
        for point in clicked(event):
            kind = point.get("customdata")
            tool = failures.tools[int(point["point_index"])].tool
            st.session_state["tools_cell"] = (tool, kind[0] if isinstance(kind, list) else kind)
    cell = st.session_state.get("tools_cell")
    picked_tool = next((x for x in failures.tools if cell and x.tool == cell[0]), None)
    if picked_tool is not None and cell is not None:
        behind = picked_tool.sessions.get(cell[1], [])
        refs = store.sessions.links(behind[:50])
        more = f" (the first 50 of {len(behind):,})" if len(behind) > 50 else ""
        st.caption(
            f"{literal_name(picked_tool.tool)}, {cell[1].replace('_', ' ')}: {len(behind):,} sessions{more}. "
            "Open one in Review:"
        )
        with st.container(horizontal=True):
            for pk in behind[:50]:
                st.button(escape_inline(session_label(refs[pk])), key=f"tools_open-{pk}", on_click=_shared.open_session,
                          args=(refs[pk],), type="tertiary", icon=":material/rate_review:")  # fmt: skip

# -- cost, tokens and latency; trends ---------------------------------------------------------------------
st.markdown("#### Cost, tokens and latency per assistant")


@st.cache_data(show_spinner=False, max_entries=8, ttl=60)
def _usage(path: str, name: str, version: tuple[Any, ...]) -> Any:
    return usage_by_assistant(_shared.store(), name)


usage = _usage(store.url, dataset, verdicts_version(store, dataset))
st.caption(
    "Tokens and seconds as the data records them (the token_usage and latency metrics), means over the sessions "
    "that record them; what the judges spent scoring each assistant's sessions."
)
_shared.table(
    usage, key="usage_table",
    column_config={"tokens_mean": st.column_config.NumberColumn(format="%.0f"),
                   "seconds_mean": st.column_config.NumberColumn(format="%.2f"),
                   "seconds_median": st.column_config.NumberColumn(format="%.2f"),
                   "judge_cost": st.column_config.NumberColumn(format="%.4f")},
)  # fmt: skip
_charts.show_csv(chart_data.rows_csv(usage), name="cost-per-assistant", key="usage_csv")
st.markdown(f"#### {literal_name(metric)} over runs")
over_time = trend(store, dataset, metric)
if len(over_time.runs) < 2:
    st.caption(f"Only one run scored {literal_name(metric)}: a trend needs two.")
else:
    st.caption("Each assistant's mean in every run that scored this metric, the oldest run first.")
    _charts.show(_charts.trend(over_time), key="trend_chart", csv=chart_data.trend_csv(over_time),
                 name=f"{metric}-over-runs")  # fmt: skip

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
            _charts.show(_charts.confusion(a), key=f"dash_conf-{n}", csv=chart_data.confusion_csv(a),
                         name=f"{a.metric}-against-{a.verdict}")  # fmt: skip
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
        _charts.show(_charts.progress_by_day(progress), key="dash_days",
                     csv=chart_data.progress_csv(progress, by_reviewer=False), name="statuses-per-day")  # fmt: skip
    with b:
        st.caption("Statuses set by each reviewer")
        _charts.show(_charts.progress_by_reviewer(progress), key="dash_who",
                     csv=chart_data.progress_csv(progress, by_reviewer=True), name="statuses-per-reviewer")  # fmt: skip
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
    event = _charts.show(_charts.heatmap(h), on_select="rerun", key=f"dash_heat-{epoch}", csv=chart_data.heatmap_csv(h),
                         name=f"run{run.id}-sessions-by-{metric}")  # fmt: skip
    for point in clicked(event):  # a square over a cell: (session, metric) in reading order
        row = int(point["point_index"]) // max(1, len(h.metrics))
        _shared.open_session(h.sessions[row][1])
    if h.total > HEATMAP_ROWS:
        st.pagination(-(-h.total // HEATMAP_ROWS), key=page_key, max_visible_pages=7)

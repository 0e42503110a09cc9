"""Metrics: pick metrics by group, set their parameters, name the judge, see the estimate, run in the
background with live progress, cancel, resume; and the dataset's past runs."""

from typing import Any

import streamlit as st

from app_pages import _shared
from evalcore import background
from evalcore.errors import EvalcoreError
from evalcore.resuming import OtherEndpointError
from evalcore.views.metrics import (
    ESTIMATE_NOTE,
    GROUP_TITLES,
    ParamField,
    ProgressView,
    applicability,
    endpoint_refusal,
    estimate,
    estimate_rows,
    estimate_total,
    judge_config,
    judge_view,
    last_run,
    latest_scoring_job,
    metric_groups,
    needs_profile,
    param_fields,
    params_from_form,
    past_runs,
    picker_rows,
    plugin_problems,
    progress_view,
    resumable_runs,
    resume_view,
)
from evalcore.views.text import literal_message, literal_name, plural

#: A row of the metric picker's table: three lines of what a metric needs and measures (Streamlit wraps a cell's
#: text in rows over 4rem).
PICKER_ROW = 66


store = _shared.store()
st.title("Metrics")
dataset = _shared.dataset()
if not dataset:
    st.info("No dataset yet: import one on the Datasets page.", icon=":material/info:")
    st.stop()

with st.spinner("Counting what the sessions have (done once per dataset, then kept)…"):
    profile = needs_profile(store, dataset)
groups = metric_groups()
for problem in plugin_problems():  # a broken plug-in is named; the others and the built-ins stay usable
    st.error(literal_message(problem), icon=":material/error:")
st.caption(
    f"Score **{literal_name(dataset)}** ({plural(profile.total, 'session')}). Deterministic metrics "
    "need no model; LLM judges call the endpoint below. A run goes on in the background: leave the page and "
    "come back."
)


# -- the running job ----------------------------------------------------------------------------


def render(view: ProgressView) -> None:
    """A run's bar or ending (coloured by how it ended), its counts and its failures by reason."""
    _shared.job_status(view.status, view.fraction, view.message, view.failures_line)
    st.markdown(view.counts_markdown)


def show_progress(job_id: int) -> bool:
    """The job's bar and live counts; whether it is still running."""
    job = store.jobs.get(job_id)
    view = progress_view(store, job, background.job_run(store, job_id))
    render(view)
    return view.active


running = st.session_state.get("score_job")
last_job = latest_scoring_job(store, dataset)
if running is None or running[0] != dataset:
    running = (dataset, last_job.id) if last_job is not None and last_job.active else None  # started in another tab
if running is not None:
    st.session_state["score_job"] = running
    # At its end the whole page runs again: the past runs below then have this one.
    _shared.follow_job(
        running[1], show_progress, stopping="Stopping after the sessions in hand…", key="cancel_run", ended="score_job"
    )
else:
    last = last_run(store, dataset)  # the app's last job, or a newer run (from the command line)
    if last is not None:
        with st.container(border=True):
            st.caption(f"Last run: {literal_name(last.label)}")
            render(last.view)

# -- choose and configure -----------------------------------------------------------------------

picked: dict[str, list[str]] = {}
st.subheader("Choose metrics")
tabs = st.tabs([f"{GROUP_TITLES[group]} ({len(infos)})" for group, infos in groups.items()])
for tab, (group, infos) in zip(tabs, groups.items(), strict=True):
    with tab:
        names = [info.name for info in infos]
        picked[group] = st.multiselect(
            f"{GROUP_TITLES[group]} metrics to run",
            names,
            key=f"pick_{group.replace(' ', '_').lower()}",
            placeholder="Pick metrics (or read the table below first)",
        )
        _shared.table(  # (sized to the page at 1400 px, what a metric needs and measures wrapping in its row)
            picker_rows(profile, infos),
            height=38 + PICKER_ROW * len(names),
            row_height=PICKER_ROW,
            column_config={
                "metric": st.column_config.TextColumn(width=190, pinned=True),
                "applies_to": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1, width=80),
                "needs": st.column_config.TextColumn(width=370),
                "measures": st.column_config.TextColumn(width=370),
            },
        )


def param_widget(metric: str, field: ParamField) -> Any:
    """The widget of one parameter; its value."""
    key = f"param:{metric}:{field.name}"
    label = field.label + (" *" if field.required else "")
    helptext = field.description or None
    if field.kind == "bool":
        return st.toggle(label, value=bool(field.default), key=key, help=helptext)
    if field.kind == "choice":
        return st.selectbox(label, field.choices, index=field.choices.index(field.default), key=key, help=helptext)
    if field.kind in ("int", "float"):
        number = int if field.kind == "int" else float
        return st.number_input(
            label,
            value=number(field.default or 0),
            min_value=None if field.minimum is None else number(field.minimum),
            max_value=None if field.maximum is None else number(field.maximum),
            step=number(1 if field.kind == "int" else 0.05),
            key=key,
            help=helptext,
        )
    if field.kind == "text_list":
        return st.text_area(label, value=field.default, key=key, help="One a line.", height=90)
    if field.kind == "mapping":
        return st.text_area(label, value=field.default, key=key, help="One `name: text` a line.", height=150)
    return st.text_input(label, value=field.default, key=key, help=helptext)


chosen = [*picked["deterministic"], *picked["LLM judge"]]
left, right = st.columns(2, gap="large")
params_of: dict[str, dict[str, Any]] = {}
problems: list[str] = []
with left:
    configurable = {name: fields for name in chosen if (fields := param_fields(name))}
    st.subheader("Parameters")
    if not configurable:
        st.caption("The metrics picked have no parameters." if chosen else "Pick metrics above to set them up.")
    for name, fields in configurable.items():
        with st.expander(f"{name}", expanded=any(f.required for f in fields)):
            columns = st.columns(2 if len(fields) > 1 else 1)
            values = {}
            for n, field in enumerate(fields):
                with columns[n % len(columns)]:
                    values[field.name] = param_widget(name, field)
            try:
                params = params_from_form(name, values)
            except EvalcoreError as exc:  # it quotes what was typed: shown as text
                st.error(literal_message(str(exc)), icon=":material/error:")
                problems.append(name)
                continue
            params_of[name] = params
            fit = applicability(profile, name, params)
            if fit.reason:
                st.caption(f"With these settings it {fit.reason}.")
specs = [{"name": name, "params": params_of.get(name, {})} for name in chosen if name not in problems]

judged = [s for s in specs if s["name"] in picked["LLM judge"]]
with right:
    st.subheader("Judge")
    env_view = judge_view()
    model = st.text_input(
        "Judge model",
        value=env_view.model or "",
        key="judge_model",
        placeholder="EVALCORE_JUDGE_MODEL is not set: name a model",
    )
    endpoint = st.text_input("Endpoint (base URL)", value=env_view.base_url, key="judge_base_url")
    base_url = None if endpoint.strip() == env_view.base_url else endpoint  # as shown: the environment's own
    view = judge_view(model, base_url)
    st.caption(f"{view.key_note} (`EVALCORE_API_KEY`): the key is never stored or shown.")
    with st.expander("Calls"):
        c1, c2, c3 = st.columns(3)
        retries = c1.number_input("Retries", 0, 10, 4, key="judge_retries", help="Per call, with backoff.")
        timeout = c2.number_input("Timeout (s)", 1, 600, 60, key="judge_timeout", help="Per attempt.")
        concurrency = c3.number_input("At once", 1, 64, 8, key="judge_concurrency", help="Calls in flight.")
    config = None
    try:
        config = judge_config(model, base_url, max_retries=retries, timeout=float(timeout), concurrency=concurrency)
    except EvalcoreError as exc:  # it may quote the model or the endpoint typed: shown as text
        st.error(literal_message(str(exc)), icon=":material/error:")

    if judged:
        st.subheader("Estimate")
        estimates = [estimate(store, profile, spec, config) for spec in judged]
        _shared.table(
            estimate_rows(estimates),
            column_config={
                "calls": st.column_config.NumberColumn(format="localized"),
                "tokens_in": st.column_config.NumberColumn(format="localized"),
                "tokens_out": st.column_config.NumberColumn(format="localized"),
                "cost": st.column_config.NumberColumn(format="%.4f"),
            },
        )
        st.caption(literal_message(estimate_total(estimates)) + " " + ESTIMATE_NOTE)
    elif chosen:
        st.caption("No judge metric picked: this run calls no model.")

    st.subheader("Run")
    new_run = st.checkbox(
        "Start a new run", key="new_run", help="Else an unfinished run of the same metrics and settings goes on."
    )
    blocked = None
    if not _shared.can("score"):
        blocked = f"Scoring is an admin's: you are a {_shared.user().role}. The results below are yours to read."
    elif not chosen:
        blocked = "Pick at least one metric."
    elif problems:
        blocked = f"Fix the parameters of {', '.join(problems)}."
    elif judged and config is None:
        blocked = "Name a judge model for the LLM judge metrics."
    elif running is not None:
        blocked = "A run is going on: wait for it, or cancel it."
    if blocked:
        st.caption(blocked)
    if st.button("Run", type="primary", icon=":material/play_arrow:", disabled=blocked is not None, key="run"):
        try:
            job_id = background.start_scoring(store, dataset, specs, judge=config if judged else None, new_run=new_run)
        except OtherEndpointError as exc:  # an unfinished run of these metrics called its judge elsewhere
            st.error(literal_message(endpoint_refusal(exc)), icon=":material/error:")
        except EvalcoreError as exc:
            st.error(literal_message(str(exc)), icon=":material/error:")
        else:
            st.session_state["score_job"] = (dataset, job_id)
            st.rerun()

# -- past runs ----------------------------------------------------------------------------------

st.subheader("Past runs")
rows = past_runs(store, dataset)
if not rows:
    st.caption("No run of this dataset yet.")
else:
    _shared.table(
        rows,
        height=min(38 + 35 * len(rows), 38 + 35 * 12),
        column_config={
            "run": st.column_config.NumberColumn(),
            "metrics": st.column_config.TextColumn(width="medium"),
            "items": st.column_config.NumberColumn(format="localized"),
            "done": st.column_config.NumberColumn(format="localized"),
            "failed": st.column_config.NumberColumn(format="localized"),
            "not_applicable": st.column_config.NumberColumn(format="localized"),
            "judge_calls": st.column_config.NumberColumn(format="localized"),
            "cost": st.column_config.NumberColumn(format="%.4f"),
            "failures": st.column_config.TextColumn(width="large"),
        },
    )
    active_run = background.job_run(store, running[1]) if running is not None else None
    unfinished = resumable_runs(rows, active_run)
    if unfinished:
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        chosen_run = c1.selectbox(
            "Unfinished runs",
            [r.run for r in unfinished],
            format_func=lambda run_id: next(r.label for r in unfinished if r.run == run_id),
            key="resume_pick",
        )
        where = resume_view(store, chosen_run, view.base_url)
        st.caption(literal_message(where.note))
        other = False
        if where.confirm_label is not None:  # the form names another endpoint: only when the user says so
            other = st.checkbox(literal_message(where.confirm_label), key="resume_other")
        resumable = running is None and _shared.can("score") and (other or not where.must_confirm)
        if c2.button("Resume", icon=":material/resume:", key="resume", disabled=not resumable):
            try:
                job_id = background.resume_run(store, chosen_run, judge=config, allow_other_endpoint=other)
            except EvalcoreError as exc:
                st.error(literal_message(str(exc)), icon=":material/error:")
            else:
                st.session_state["score_job"] = (dataset, job_id)
                st.rerun()

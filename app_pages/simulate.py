"""Simulate: run a multi-turn solver task's samples against a model, in the background, into a dataset; then
open the conversations in Review, score them on Metrics, compare two models on the Dashboard."""

import streamlit as st

from app_pages import _shared
from evalcore import background
from evalcore.errors import EvalcoreError
from evalcore.solver.dataset import task_name
from evalcore.views.simulate import (
    SamplesView,
    TaskView,
    config_label,
    configured,
    default_model,
    endpoint_view,
    first_link,
    latest_solve_job,
    outline,
    read_samples_file,
    read_samples_text,
    read_task_file,
    read_task_text,
    sample_files_beside,
    solve_progress,
    task_files,
)
from evalcore.views.text import code_span, literal_markdown, literal_message, literal_name, plural, visible

store = _shared.store()
st.title("Simulate")
st.caption(
    "Run a multi-turn solver task (LatticeFlow's `multi_turn_solver` YAML) on its samples against a model. Each "
    "sample's conversation becomes a session of the dataset you name: open it in Review, score it on Metrics, and "
    "compare two models' runs of the task on the Dashboard (by assistant)."
)


# -- the running job ----------------------------------------------------------------------------


def show_progress(job_id: int) -> bool:
    """The job's bar, or what it did; whether it is still running."""
    view = solve_progress(store.jobs.get(job_id))
    _shared.job_status(view.status, view.fraction, view.message, view.failures_line)
    if view.summary:
        st.caption(literal_message(view.summary))
    if view.errors:
        with st.expander(f"{plural(len(view.errors), 'sample')} failed (each kept with its error)"):
            st.markdown("\n".join(f"- {literal_message(e)}" for e in view.errors[:50]))
    return view.active


running = st.session_state.get("sim_job")
if running is not None:
    job_id, target, first_ref = running
    with st.container(border=True):
        if solve_progress(store.jobs.get(job_id)).active:
            # At its end the whole page runs again: the links to the results appear.
            stopping = "Stopping: the samples not finished are left for a later run…"
            _shared.follow_job(job_id, show_progress, stopping=stopping, key="sim_cancel")
        else:
            show_progress(job_id)
            if not solve_progress(store.jobs.get(job_id)).has_sessions:  # cancelled before its first sample, say
                st.caption("The run left no session: nothing to review, score or compare.")
            else:
                links = st.container(horizontal=True)
                if links.button("Open in Review", icon=":material/rate_review:", type="primary", key="sim_review"):
                    _shared.open_session(first_ref, in_dataset=target)
                if links.button("Score on Metrics", icon=":material/functions:", key="sim_metrics"):
                    st.session_state["dataset"] = target
                    st.switch_page(_shared.PAGES["metrics"])
                if links.button("Compare on the Dashboard", icon=":material/monitoring:", key="sim_dashboard"):
                    st.session_state["dataset"] = target
                    st.switch_page(_shared.PAGES["dashboard"])
else:
    last = latest_solve_job(store)
    if last is not None:
        st.caption(f"Last solver run: {literal_name(last.label)} into {literal_name(last.dataset)}")

# -- the task and its samples --------------------------------------------------------------------

left, right = st.columns(2, gap="large")
view: TaskView | None = None
with left:
    st.subheader("Task")
    files = task_files(_shared.sample_folder())
    origin = st.segmented_control(
        "Task from", ["Folder", "Upload"], default="Folder" if files else "Upload", key="sim_task_from"
    )
    task_path = None
    if origin == "Folder":
        task_path = st.selectbox("Task file", files, format_func=lambda p: visible(p.name), key="sim_task_file")
        if task_path is not None:
            view = read_task_file(task_path)
        else:
            st.info("No task file in the folder ($EVALCORE_TASKS, else the sample data's tasks/).")
    else:
        upload = st.file_uploader("Task file (YAML)", type=["yaml", "yml"], key="sim_task_upload")
        if upload is not None:
            view = read_task_text(upload.getvalue().decode("utf-8", errors="replace"), upload.name)
    if view is not None and view.task is None:
        st.error(
            f"**{literal_name(view.name)}** cannot run: "
            + "\n".join(f"\n- {literal_message(p)}" for p in view.problems),
            icon=":material/error:",
        )
    elif view is not None and view.task is not None:
        fmt = view.task.solver.message_format
        st.caption(f"{plural(len(view.task.builders), 'step')}; conversations recorded as `{fmt}`")
        steps = [
            ("    " * depth + ("- " if depth else "1. ")) + literal_markdown(text) for depth, text in outline(view.task)
        ]
        st.markdown("\n".join(steps))

samples: SamplesView | None = None
with right:
    st.subheader("Samples")
    beside = sample_files_beside(task_path) if task_path is not None else []
    origin = st.segmented_control(
        "Samples from", ["Beside the task", "Upload"], default="Beside the task" if beside else "Upload",
        key="sim_samples_from",
    )  # fmt: skip
    if origin == "Beside the task":
        path = st.selectbox("Samples file", beside, format_func=lambda p: visible(p.name), key="sim_samples_file")
        if path is not None:
            samples = read_samples_file(path)
        else:
            st.info("No samples file beside the task: upload one.")
    else:
        upload = st.file_uploader("Samples (JSONL, JSON or CSV)", type=["jsonl", "json", "csv"], key="sim_upload")
        if upload is not None:
            samples = read_samples_text(upload.getvalue().decode("utf-8-sig", errors="replace"), upload.name)
    if samples is not None:
        st.caption(f"{plural(len(samples.rows), 'sample')}; the first ones:")
        _shared.table(samples.preview)
        if samples.problems:
            st.warning(
                f"{plural(len(samples.problems), 'line')} left out:\n"
                + "\n".join(f"\n- {literal_message(p)}" for p in samples.problems[:20]),
                icon=":material/warning:",
            )

# -- the run ------------------------------------------------------------------------------------

st.subheader("Run")
endpoint = endpoint_view()
key_note = "its key is set" if endpoint.has_key else "no key is set (EVALCORE_API_KEY)"
st.caption(
    f"Models are called at the endpoint below (EVALCORE_BASE_URL: {code_span(visible(endpoint.url))}); {key_note}."
)
ready = view is not None and view.task is not None and samples is not None and bool(samples.rows)
with st.form("sim_run", border=True):
    cols = st.columns([2, 2, 1])
    model = cols[0].text_input("Model under evaluation", value=default_model(), key="sim_model")
    name = task_name(view.task) if ready and view is not None and view.task is not None else ""
    dataset = cols[1].text_input("Into dataset", value=name, key="sim_dataset", help="created if new")
    concurrency = cols[2].number_input("Concurrency", min_value=1, max_value=64, value=4, key="sim_concurrency")
    base_url = st.text_input(
        "Endpoint (base URL)", value=endpoint.url, key="sim_base_url", help="An OpenAI-compatible endpoint."
    )
    values: dict[str, str] = {}
    for key in view.config_keys if view is not None else []:
        # A key is letters, digits, "_", "." and "-" (``<< config.KEY >>``, evalcore.solver.task.PLACEHOLDER): no
        # Markdown that could load or link anything, so the label (its words) and the code span take it as it is (a
        # label's escapes would reach its aria-label as backslashes); the placeholder in the help is shown escaped.
        values[key] = st.text_input(
            config_label(key), key=f"sim_config_{key}", help=f"The task's `config.{key}`: fills its "
            f"<< config.{literal_name(key)} >>"
        )  # fmt: skip
    run = st.form_submit_button("Run", type="primary", icon=":material/play_arrow:", disabled=not ready)
if run and view is not None and samples is not None:
    task, problems = configured(view, values)
    unnamed = [f"name the {what}" for what, value in (("model under evaluation", model), ("dataset", dataset))
               if not value.strip()]  # fmt: skip
    if unnamed or task is None:  # (everything missing said at once)
        said = [*unnamed, *(problems if task is None else [])]
        st.error("\n".join(f"- {literal_message(p)}" for p in said), icon=":material/error:")
    else:
        try:
            config = endpoint.config(model.strip(), int(concurrency), base_url)
        except EvalcoreError as exc:  # a price table that cannot be read, say
            st.error(literal_message(str(exc)), icon=":material/error:")
            st.stop()
        job_id = background.start_solving(
            store, task, samples.rows, dataset.strip(), config, concurrency=int(concurrency), places=samples.places,
        )  # fmt: skip
        st.session_state["sim_job"] = (job_id, dataset.strip(), first_link(task, samples, model.strip()))
        st.rerun()

"""Datasets: every dataset with its progress; upload a file into one; load the samples; rename, delete."""

import streamlit as st

from app_pages import _shared
from evalcore.background import start_import
from evalcore.formats import formats
from evalcore.samples import load_samples, sample_datasets
from evalcore.views.datasets import ImportOutcome, dataset_rows, import_outcome, latest_import, sample_card
from evalcore.views.text import literal_message, literal_name, plural, visible

store = _shared.store()
st.title("Datasets")
if problem := _shared.sample_problem():
    st.warning(f"The sample data could not be loaded: {literal_message(problem)}", icon=":material/warning:")

rows = dataset_rows(store, sample_datasets(_shared.sample_folder()))  # the user's own datasets first
if rows:
    # Widths in pixels: every header and format name whole at 1400 px (the file's name, last, takes what is left).
    counts = {"todo": 56, "approved": 78, "rejected": 70, "flagged": 64, "with_truth": 98}
    _shared.table(
        rows,
        height=min(38 + 35 * len(rows), 38 + 35 * 15),  # every dataset at once, up to 15
        column_config={
            "dataset": st.column_config.TextColumn(width=170, pinned=True),
            "sessions": st.column_config.NumberColumn(format="localized", width=78),
            "formats": st.column_config.TextColumn(width=118),
            **{name: st.column_config.NumberColumn(width=px) for name, px in counts.items()},
            "reviewed": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1, width=110),
            "last_import": st.column_config.TextColumn(width=128),
        },
    )
else:
    st.info("No dataset yet: upload a file below, or load the sample data.", icon=":material/info:")


def show_outcome(outcome: ImportOutcome) -> None:
    """An import's result: the headline, and every problem by line and field."""
    job = outcome.job
    if job.status == "running":
        st.progress(job.fraction, text=literal_message(f"{job.label} — {job.done:,} of {job.total:,} bytes read"))
        return
    show = st.error if job.status == "failed" else st.warning if outcome.problems else st.success
    show(literal_message(outcome.headline))  # it names a file: shown as text
    if outcome.problems:
        with st.expander(f"{plural(len(outcome.problems), 'problem')}, by line", expanded=True):
            _shared.table(  # (a problem is read whole: four lines of it, wrapped)
                outcome.problems, row_height=_shared.WRAPPED_ROW,
                height=min(38 + _shared.WRAPPED_ROW * len(outcome.problems), 38 + _shared.WRAPPED_ROW * 6),
                column_config={  # (a width of its own: a column sized to its text would not wrap it)
                    "line": st.column_config.NumberColumn(width=58), "level": st.column_config.TextColumn(width=62),
                    "problem": st.column_config.TextColumn(width=425),
                },
            )  # fmt: skip


@st.fragment(run_every=0.5)
def follow_job(job_id: int) -> None:
    """The running import's progress, read from the store twice a second until it ends."""
    job = store.jobs.get(job_id)
    show_outcome(import_outcome(job))
    if not job.active:
        st.session_state.pop("import_job", None)
        st.rerun()  # the whole page: the table above now has the new sessions


left, right = st.columns([3, 2], gap="large")
with left:
    st.subheader("Import a file")
    upload = st.file_uploader(
        "A file in any format evalcore reads (JSON or JSON Lines)", type=["json", "jsonl"], key="upload"
    )
    names = store.datasets.names()  # (the table's rows show them with their invisible characters escaped)
    c1, c2 = st.columns(2)
    target: str = (
        c1.selectbox(
            "Into dataset",
            ["+ new dataset", *names],
            index=0,  # a new dataset unless another is chosen
            format_func=visible,
            key="import_target",
        )
        or ""
    )
    new_name = ""
    if target == "+ new dataset":
        default = upload.name.rsplit(".", 1)[0] if upload is not None else ""
        # A widget keeps its first value: offer the file's name afresh whenever another file is chosen.
        if "import_new_name" not in st.session_state or st.session_state.get("import_new_name_for") != default:
            st.session_state.update(import_new_name=default, import_new_name_for=default)
        new_name = c2.text_input("New dataset's name", key="import_new_name")
    c3, c4 = st.columns(2)
    fmt = c3.selectbox(
        "Format",
        ["detect", *(f.name for f in formats())],
        key="import_format",
        help="Leave on 'detect' to recognise it.",
    )
    assistant = c4.text_input(
        "Assistant (optional)",
        key="import_assistant",
        help="Every session imported is this assistant's, whatever the file says (as `evalcore import --assistant`). "
        "Leave empty to keep each session's own.",
    )
    dataset_name = new_name.strip() if target == "+ new dataset" else target
    done_already = upload is not None and st.session_state.get("imported_upload") == upload.file_id
    if done_already:
        st.caption("This file has been imported; choose another to import again.")
    if not _shared.can("import"):
        st.caption(f"Importing is an admin's: you are a {_shared.user().role}.")
    ready = upload is not None and bool(dataset_name) and not done_already and _shared.can("import")
    if st.button("Import", type="primary", disabled=not ready, key="import"):
        assert upload is not None
        st.session_state["imported_upload"] = upload.file_id  # one click, one import
        st.session_state["import_job"] = start_import(
            store, upload.getvalue(), upload.name, dataset_name,
            fmt=None if fmt == "detect" else fmt, assistant=assistant.strip() or None,
        )  # fmt: skip
        # The sidebar's widget owns session_state["dataset"] by now: switch through the deep link, which
        # the frame reads before making it (the dataset is made here so the link finds it at once).
        store.datasets.get(dataset_name, create=True)
        st.query_params["dataset"] = dataset_name
        st.rerun()
    running = st.session_state.get("import_job")
    if running is not None:
        follow_job(running)
    elif _shared.dataset():
        outcome = latest_import(store, _shared.dataset() or "")
        if outcome is not None and outcome.job.status != "running":
            st.caption(f"Last import into {literal_name(_shared.dataset() or '')}")
            show_outcome(outcome)
        elif outcome is not None:
            follow_job(outcome.job.id)  # started in another tab

with right:
    st.subheader("Sample data")
    card = sample_card(_shared.sample_folder())
    st.caption(card.caption)
    if st.button(
        "Load the sample data", icon=":material/download:", key="load_samples",
        disabled=not (card.can_load and _shared.can("import")),
    ):  # fmt: skip
        with st.spinner("Importing and scoring the samples…"):
            loads = load_samples(store, _shared.sample_folder())
        st.session_state["samples_loaded"] = sum(load.report.new for load in loads)
        st.rerun()
    if "samples_loaded" in st.session_state:
        new = int(st.session_state.pop("samples_loaded"))
        if new:
            st.success(f"Sample data loaded: {plural(new, 'new session')}.")
        else:  # (the app loads them on its first start)
            st.info("The sample data was loaded already: its datasets are in the table above.", icon=":material/info:")

    current = _shared.dataset()
    if current and _shared.can("manage_datasets"):
        st.subheader(f"Manage {literal_name(current)}")  # a name is data: never markdown that loads an image
        if "rename_to" not in st.session_state or st.session_state.get("rename_to_for") != current:
            st.session_state.update(rename_to=current, rename_to_for=current)  # this dataset's name, not the last
        with st.form("rename", border=False):
            renamed = st.text_input("Rename to", key="rename_to")
            if st.form_submit_button("Rename"):
                with _shared.saving("The new name"):
                    st.query_params["dataset"] = store.datasets.rename(current, renamed)
                    st.rerun()
        with st.popover("Delete…", icon=":material/delete:"):
            size = store.datasets.get(current).sessions
            st.write(
                f"This deletes **{literal_name(current)}**: its {size:,} sessions with their history, comments, "
                "verdicts and scores."
            )
            typed = st.text_input(f"Type {literal_name(current)} to confirm", key="delete_confirm")
            if st.button("Delete for good", type="primary", disabled=typed != current, key="delete"):
                with _shared.saving("The deletion"):
                    n = store.datasets.delete(current, confirm=typed)
                    st.query_params.pop("dataset", None)
                    st.toast(f"Deleted {literal_name(current)} ({n} sessions).")
                    st.rerun()

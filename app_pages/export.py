"""Export: the dataset, filtered, in any writable format — the file `evalcore export` writes, with its
manifest — previewed before it is downloaded; and a run's scores as CSV or JSON Lines."""

import streamlit as st

from app_pages import _shared
from evalcore.errors import EvalcoreError
from evalcore.schema import STATUSES
from evalcore.views.export import (
    SCORE_KINDS,
    ExportDownload,
    LabelsDownload,
    ScoresDownload,
    cli_command,
    export_preview,
    layout_caption,
    writable_formats,
)
from evalcore.views.sessions import page_filter
from evalcore.views.text import escape_inline, literal_message, plural, visible

store = _shared.store()
dataset = _shared.dataset()
st.title("Export")
if dataset is None:
    st.info("No dataset yet: import one on the Datasets page.", icon=":material/info:")
    st.page_link(_shared.PAGES["datasets"], label="Go to Datasets", icon=":material/database:")
    st.stop()

found = store.sessions.facets(dataset)
runs = store.runs.recent(dataset)
finished = [r for r in runs if r.status != "running"]
st.caption(
    "The sessions of the dataset, filtered, with their curated ground truth: byte for byte the file "
    "`evalcore export` writes for the same filters, and its manifest."
)

# -- filters (the command line's) ----------------------------------------------------------------
c = st.columns([3.4, 3, 2.2, 1.6], vertical_alignment="bottom")
status = c[0].multiselect(
    "Status", list(STATUSES), format_func=lambda s: f"{s} ({found.statuses[s]})", key="x_status",
    persist_state="session", placeholder="any",
)  # fmt: skip
tags = c[1].multiselect(
    "Tags (all of)", list(found.tags), format_func=lambda t: f"{visible(t)} ({found.tags[t]})", key="x_tags",
    persist_state="session", placeholder="any",
)  # fmt: skip
assistant = c[2].selectbox(
    "Assistant", ["any", *found.assistants], key="x_assistant", persist_state="session",
    format_func=lambda a: a if a == "any" else f"{visible(a)} ({found.assistants[a]})",
)  # fmt: skip
truth = c[3].selectbox(
    "Ground truth", ["any", "present", "missing"], key="x_truth", persist_state="session",
    help=f"{found.with_truth} of {found.total} sessions have some ground truth. The command line has no such option.",
)  # fmt: skip
q = st.columns([6.4, 3.8], vertical_alignment="bottom")
search = q[0].text_input("Search", key="x_search", persist_state="session", placeholder="words (word* for a prefix)")
search_system = q[1].segmented_control(
    "Search in", [False, True], default=False, required=True, key="x_search_system", persist_state="session",
    format_func=lambda v: "messages and system prompt" if v else "messages",
)  # fmt: skip

run_id = metric = min_score = max_score = None
with st.expander("Score filter", icon=":material/filter_alt:", expanded=bool(st.session_state.get("x_run"))):
    s = st.columns([3, 2, 1.2, 1.2], vertical_alignment="bottom")
    run = s[0].selectbox(
        "Run", [None, *finished], key="x_run", persist_state="session",
        format_func=lambda r: "no score filter" if r is None else visible(r.label),
        help="Only the sessions this run scored on the metric, within the range.",
    )  # fmt: skip
    if run is not None:
        run_id = run.id
        metric = s[1].selectbox("Metric", run.metrics, format_func=visible, key="x_metric", persist_state="session")
        low = s[2].number_input("Min", value=None, key="x_min", persist_state="session", placeholder="any")
        high = s[3].number_input("Max", value=None, key="x_max", persist_state="session", placeholder="any")
        min_score = None if low is None else float(low)
        max_score = None if high is None else float(high)

# -- format and download -------------------------------------------------------------------------
names = writable_formats()
f = st.columns([2.4, 2.6, 5.2], vertical_alignment="bottom")
to = f[0].selectbox(
    "Format", list(names), key="x_format", persist_state="session",
    help="\n".join(f"- **{name}**: {escape_inline(about)}" for name, about in names.items()),
)  # fmt: skip
layout = f[1].segmented_control(
    "File", ["jsonl", "json"], default="jsonl", required=True, key="x_layout", persist_state="session",
    format_func=lambda v: "JSON Lines" if v == "jsonl" else "one JSON array",
    help="As the command line decides by the output's name: `.json` writes one JSON array.",
)  # fmt: skip
f[2].caption(escape_inline(layout_caption(to, array=layout == "json")))

try:
    filters = page_filter(
        status=status, tags=tags, assistant=assistant, search=search, search_system_prompt=search_system, truth=truth,
        run_id=run_id, metric=metric, min_score=min_score, max_score=max_score,
    )  # fmt: skip
    download = ExportDownload(store, dataset, to, filters, array=layout == "json")
    preview = export_preview(store, dataset, to, filters)
except EvalcoreError as exc:  # it quotes what was typed in the search box: shown as text
    st.warning(literal_message(str(exc)), icon=":material/filter_alt_off:")
    st.stop()
# One download object per export, kept across reruns: its manifest describes the file downloaded last.
kept = st.session_state.get("x_download")
if isinstance(kept, ExportDownload) and kept.key == download.key:
    download = kept
st.session_state["x_download"] = download

matching = plural(preview.count, "session")
with st.container(horizontal=True, vertical_alignment="center", key="x_downloads"):
    st.markdown(f"**{matching}** of {found.total:,} match.")
    st.download_button(
        f"Download {escape_inline(visible(download.file_name))}", download.data, file_name=download.file_name,
        mime="application/octet-stream",
        icon=":material/download:", type="primary", on_click="ignore", disabled=not preview.count, key="x_get_data",
    )  # fmt: skip
    st.download_button(
        "Manifest", download.manifest, file_name=download.manifest_name, mime="application/json",
        icon=":material/receipt_long:", on_click="ignore", disabled=not preview.count, key="x_get_manifest",
        help="Filters, count, schema versions and the file's SHA-256, as `evalcore export` writes beside its file.",
    )  # fmt: skip
command = cli_command(dataset, to, filters, download.file_name)
if command is not None:
    st.caption("The same file from the command line (its manifest differs only in the time it was made):")
    st.code(command, language="bash", wrap_lines=True)
else:
    st.caption("The command line has no ground truth option: this export can be made only here.")

st.subheader("Preview")
st.caption(preview.caption)
if preview.records:
    for column, record in zip(st.columns(len(preview.records)), preview.records, strict=True):
        column.code(record, language="json", wrap_lines=True, height=min(21 * preview.tallest + 24, 360))

# -- what labelers answered -------------------------------------------------------------------------
if store.questions.of(dataset, retired=True):
    st.subheader("Labels")
    lab = st.columns([6, 3], vertical_alignment="bottom")
    lab[0].caption(
        "Every submitted answer to the dataset's questions, and the gold: what `evalcore export-labels` writes. "
        "The **evalcore** format carries them with each session too (an import elsewhere keeps them); other "
        "formats leave them out."
    )
    labels_kind = lab[1].segmented_control(
        "As", list(SCORE_KINDS), default="csv", required=True, key="x_labels_kind",
        format_func=lambda k: SCORE_KINDS[k][0],
    )  # fmt: skip
    labels = LabelsDownload(store, dataset, labels_kind)
    st.download_button(
        escape_inline(labels.label), labels.data, file_name=labels.file_name,
        mime=labels.mime, icon=":material/download:", on_click="ignore", key="x_get_labels",
    )  # fmt: skip

# -- a run's scores ------------------------------------------------------------------------------
st.subheader("Run scores")
if not runs:
    st.caption("No run has scored this dataset yet.")
    st.stop()
r = st.columns([6, 3], vertical_alignment="bottom")
chosen = r[0].selectbox("Run", runs, format_func=lambda r: visible(r.label), key="x_scores_run")
kind = r[1].segmented_control(
    "As", list(SCORE_KINDS), default="csv", required=True, key="x_scores_kind", format_func=lambda k: SCORE_KINDS[k][0],
)  # fmt: skip
scores = ScoresDownload(store, chosen, kind)
st.download_button(
    escape_inline(scores.label), scores.data, file_name=scores.file_name, mime=scores.mime,
    icon=":material/download:", on_click="ignore", key="x_get_scores",
)  # fmt: skip
st.caption(
    "One row per session and metric: session_id, position, metric, value, reason, error; parts and "
    "not_applicable where they apply (CSV has every column on every row, and a text that a spreadsheet would "
    "take for a formula starts with ' there; JSON Lines keeps every text as it is)."
)

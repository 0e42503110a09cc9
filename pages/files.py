"""Files: open a sample or upload a file in any supported format and read its sessions."""

import pandas as pd
import streamlit as st

from evalcore.formats import formats
from evalcore.overview import sample_files
from pages._shared import file_overview, render_session, sample_folder, upload_overview

st.title("Files")
st.caption("Open a sample or upload a file: evalcore detects its format and lists its sessions.")

folder = sample_folder()
samples = sample_files(folder)
source = st.radio("Source", ["Sample data", "Upload"], horizontal=True, key="source")
fmt_names = ["detect"] + [f.name for f in formats()]
fmt = st.selectbox("Format", fmt_names, key="format", help="Leave on 'detect' to recognise it from the content.")
chosen_format = None if fmt == "detect" else fmt

overview = None
if source == "Sample data":
    if not samples:
        st.info(f"No sample files in {folder}.")
    else:
        picked = st.selectbox("Sample file", samples, format_func=lambda p: p.name, key="sample")
        overview = file_overview(picked, chosen_format)
else:
    upload = st.file_uploader("Upload JSON or JSONL", type=["json", "jsonl"], key="upload")
    if upload is not None:
        overview = upload_overview(upload.getvalue(), upload.name, chosen_format)

if overview is not None:
    cols = st.columns(4)
    cols[0].metric("Format", overview.format or "—")
    cols[1].metric("Sessions", len(overview.sessions))
    cols[2].metric("Records with errors", overview.records_with_errors)
    cols[3].metric("Warnings", overview.warnings)
    if overview.problems:
        with st.expander(f"{len(overview.problems)} problems", expanded=overview.records_with_errors > 0):
            for line, problem in overview.problems:
                st.text(f"{overview.name}:{line}: {problem}")
    if overview.sessions:
        st.dataframe(pd.DataFrame(overview.rows), hide_index=True, use_container_width=True)
        labels = [
            f"{i}: {r['session_id'] or '(no id)'} — {r['first question'][:60]}" for i, r in enumerate(overview.rows)
        ]
        index = st.selectbox("Session", range(len(labels)), format_func=lambda i: labels[i], key="session")
        render_session(overview.sessions[index])

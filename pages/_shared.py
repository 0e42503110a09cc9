"""Streamlit glue shared by the pages: rendering of sessions, the sample folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import streamlit as st

from evalcore.overview import FileOverview, overview_of_bytes, overview_of_path
from evalcore.schema import Message, Session

ROOT = Path(__file__).resolve().parent.parent


def sample_folder() -> Path:
    """The folder of sample files: ``$EVALCORE_SAMPLE_DATA``, else ``sample_data/``."""
    return Path(os.environ.get("EVALCORE_SAMPLE_DATA", ROOT / "sample_data"))


_AVATARS = {"system": "⚙️", "user": "user", "assistant": "assistant", "tool": "🛠️"}


@st.cache_data(max_entries=8, show_spinner="Reading the file…")
def _file_overview(path: str, modified: float, fmt: str | None) -> FileOverview:
    return overview_of_path(path, fmt)


def file_overview(path: Path, fmt: str | None) -> FileOverview:
    """A file read once per change (not on every rerun of the page)."""
    return _file_overview(str(path), path.stat().st_mtime, fmt)


@st.cache_data(max_entries=8, show_spinner="Reading the upload…")
def upload_overview(data: bytes, name: str, fmt: str | None) -> FileOverview:
    """An uploaded file read once (not on every rerun of the page)."""
    return overview_of_bytes(data, name, fmt)


def render_message(message: Message) -> None:
    """One message as a chat bubble, with its reasoning and tool calls."""
    with st.chat_message(message.role, avatar=_AVATARS[message.role]):
        if message.role == "tool":
            st.caption(
                f"result of `{message.name or 'tool'}`"
                + (f" · call `{message.tool_call_id}`" if message.tool_call_id else "")
            )
        elif message.role == "system":
            st.caption("system")
        if message.reasoning:
            with st.expander("reasoning"):
                st.write(message.reasoning)
        if message.text:
            st.markdown(message.text) if message.role != "tool" else st.code(message.text, language="json")
        for call in message.calls:
            label = f"🔧 `{call.name}`" + (f" · `{call.id}`" if call.id else "")
            st.markdown(label)
            st.code(json.dumps(call.args, indent=2, ensure_ascii=False), language="json")


def render_session(session: Session) -> None:
    """The transcript of a session, then its session-level ground truth."""
    for message in session.messages:
        render_message(message)
    truth = session.model_dump(
        include={"goal", "reference", "reference_tool_calls", "expected_facts", "rubrics", "guidelines",
                 "reference_topics", "retrieved_context", "expected_retrieved_context", "turn_truth", "scores"},
        exclude_defaults=True,
    )  # fmt: skip
    if truth:
        st.subheader("Ground truth")
        st.json(truth, expanded=2)

"""Streamlit glue shared by the frame and the pages: the store, the reviewer, the dataset, deep links."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from evalcore import background, config
from evalcore.errors import ConflictError, EvalcoreError
from evalcore.samples import ensure_samples
from evalcore.store import Store, default_db_path, open_store
from evalcore.store.queries import SessionFilter
from evalcore.store.store import is_postgres, sqlite_path
from evalcore.views.table import labels, records
from evalcore.views.text import literal_message

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("evalcore.app")

#: The review loop's keyboard shortcuts: one table makes the buttons and the "?" list, so the list
#: shows only keys that have a handler.
SHORTCUTS = {
    "approve_next": ("Approve and next", "Ctrl+Enter"),
    "approve": ("Approve", "Alt+A"),
    "reject": ("Reject", "Alt+X"),
    "flag": ("Flag", "Alt+F"),
    "todo": ("Back to todo", "Alt+T"),
    "previous": ("Previous session", "Alt+P"),
    "next": ("Next session", "Alt+N"),
    "turns_back": ("Earlier turns", "Alt+K"),
    "turns_on": ("Later turns", "Alt+J"),
}


def frame_first() -> None:
    """Make sure the frame (app.py) runs before any page, even on a server's very first request.

    Streamlit takes a ``pages/`` folder beside the entry script for its old multipage scheme and,
    until some script calls ``st.navigation``, runs a requested page file on its own — without the
    frame, the sidebar or the store. Here ``pages/`` is the app's package, so the old scheme is
    switched off (Streamlit's own flag, which ``st.navigation`` sets too) and the run restarted.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()


def db_path() -> str:
    """The database: ``$EVALCORE_DB`` (``evalcore app --db`` sets it), else ``./evalcore.db``."""
    return default_db_path()


def sample_folder() -> Path:
    """The folder of sample files: ``$EVALCORE_SAMPLE_DATA``, else ``sample_data/`` beside the app."""
    return Path(config.sample_data_folder() or ROOT / "sample_data")


@st.cache_resource(show_spinner="Opening the database…")
def _store(path: str) -> Store:
    store = open_store(path)
    folder = sample_folder()
    if folder.is_dir():
        ensure_samples(store, folder)  # once per database: a newcomer sees real data on every page
    return store


def store() -> Store:
    """The store of this server (each browser session's thread gets its own connection)."""
    where = db_path()
    return _store(where if is_postgres(where) else os.path.abspath(sqlite_path(where)))


def reviewer() -> str | None:
    """The reviewer's name, as given in the sidebar (``None`` until given)."""
    name = str(st.session_state.get("reviewer") or "").strip()
    return name or None


def dataset() -> str | None:
    """The dataset chosen in the sidebar."""
    value = st.session_state.get("dataset")
    return str(value) if value else None


def browse_state() -> dict[str, Any]:
    """The Sessions page's filter and sort, which Review's previous / next follow."""
    state: dict[str, Any] = st.session_state.setdefault("browse", {})
    if state.get("dataset") != dataset():
        state.clear()
        state.update(dataset=dataset(), filters=SessionFilter(), sort="order", descending=False)
    return state


def open_session(ref: str, turn: int | None = None, in_dataset: str | None = None) -> None:
    """Go to Review with session ``ref`` (its exported id, or its key) of the current dataset (or ``in_dataset``)."""
    params = {"dataset": in_dataset or dataset() or "", "session": ref}
    if turn is not None:
        params["turn"] = str(turn)
    st.switch_page(PAGES["review"], query_params=params)


#: The app's pages, filled in by app.py (pages link to each other through it).
PAGES: dict[str, Any] = {}


def need_reviewer() -> str | None:
    """The reviewer's name; when none is given yet, a note saying edits need one."""
    name = reviewer()
    if name is None:
        st.info("Enter your name in the sidebar to edit: every change is saved with it.", icon=":material/badge:")
    return name


@contextmanager
def saving(what: str) -> Iterator[None]:
    """Run a save; a refusal is shown as a message (a conflict with who changed what), never a traceback.

    A message quotes what was typed (a name, a tag) and names other reviewers and sessions: shown as text."""
    try:
        yield
    except ConflictError as exc:
        st.error(literal_message(str(exc)), icon=":material/sync_problem:")
    except EvalcoreError as exc:
        st.error(literal_message(f"{what} was not saved: {exc}"), icon=":material/error:")


def report_error(exc: Exception) -> None:
    """An unexpected error: a short message on the page, the details in the server's log."""
    log.error("page failed", exc_info=exc)
    if isinstance(exc, EvalcoreError):
        st.error(literal_message(str(exc)), icon=":material/error:")  # it may quote a link's parameters: text
    else:
        st.error(
            f"Something went wrong ({type(exc).__name__}). Nothing was lost: every accepted edit is saved. "
            "The details are in the server's log.",
            icon=":material/error:",
        )


#: The Sessions page's filter widgets (their keys) and the value each has when it filters nothing.
SESSION_FILTERS: dict[str, Any] = {
    "f_status": [],
    "f_tags": [],
    "f_assistant": "any",
    "f_truth": "any",
    "f_search": "",
    "f_run": None,
    "f_metric": None,
    "f_min": None,
    "f_max": None,
}


def show_sessions(**wanted: Any) -> None:
    """Go to Sessions filtered by ``wanted`` (its widget keys without ``f_``: ``run``, ``metric``, ``min``,
    ``max``, ``assistant``...), every other filter cleared: a drill-down from a chart."""
    for key, empty in SESSION_FILTERS.items():
        st.session_state[key] = wanted.get(key[2:], empty)
    st.session_state["page_number"] = 1
    st.switch_page(PAGES["sessions"])


@st.fragment(run_every=0.5)
def follow_job(job_id: int, show: Callable[[int], bool], *, stopping: str, key: str, ended: str | None = None) -> None:
    """A background job, read from the store twice a second until it ends: ``show(job_id)`` draws it (and says
    whether it still runs), with a Cancel button (``key``) and ``stopping`` once cancelling; at its end
    ``ended`` is dropped from the session state and the whole page runs again."""
    if show(job_id):
        if background.cancel_requested(store(), job_id):
            st.caption(stopping)
        elif st.button("Cancel", icon=":material/stop_circle:", key=key):
            background.cancel(store(), job_id, author=reviewer())
            st.caption(stopping)
        return
    if ended is not None:
        st.session_state.pop(ended, None)
    st.rerun()


def job_status(status: str, fraction: float, message: str) -> None:
    """A background job's state: its bar while it runs, else how it ended. (Only a failure's message quotes
    something from outside, the error: shown as text; the others are the views' own sentences and figures.)"""
    if status == "running":
        st.progress(fraction, text=message)
    elif status == "done":
        st.success(message, icon=":material/check_circle:")
    elif status in ("cancelled", "stalled"):
        st.warning(message, icon=":material/pause_circle:")
    else:
        st.error(literal_message(message), icon=":material/error:")


#: How every table shows a value that is missing (a score no run gave, a deterministic run's cost).
MISSING = "—"


def table(data: Any, *, column_config: dict[str, Any] | None = None, **options: Any) -> Any:
    """``st.dataframe`` as every page shows a table: no index, a missing value as ``MISSING``.

    ``data``: typed rows (``evalcore.views.table``), each column headed by its field's label unless
    ``column_config`` (keyed by field name) gives one; or anything ``st.dataframe`` takes."""
    config = dict(column_config or {})
    if isinstance(data, list) and data and is_dataclass(data[0]):
        for name, label in labels(type(data[0]), data).items():
            given = config.get(name)
            if given is None:
                config[name] = label
            elif isinstance(given, dict) and not given.get("label"):
                config[name] = {**given, "label": label}
        data = pd.DataFrame(records(data))
    return st.dataframe(data, hide_index=True, placeholder=MISSING, column_config=config or None, **options)

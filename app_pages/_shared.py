"""Streamlit glue shared by the frame and the pages: the store, the reviewer, the dataset, deep links."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from evalcore import background, config, signin
from evalcore.errors import ConflictError, EvalcoreError
from evalcore.samples import ensure_samples
from evalcore.store import Store, default_db_path, open_store
from evalcore.store.access import Action, User
from evalcore.store.queries import SessionFilter
from evalcore.store.runs import Run
from evalcore.store.store import is_postgres, sqlite_path
from evalcore.store.users import LOCAL
from evalcore.views.table import labels, records
from evalcore.views.text import literal_message, literal_name, visible

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("evalcore.app")

#: The review loop's keyboard shortcuts: one table makes the buttons and the "?" list, so the list
#: shows only keys that have a handler.
SHORTCUTS = {
    # (not Ctrl+Enter: in a text box of a form that saves the form, as Streamlit's hint under the box says)
    "approve_next": ("Approve and next", "Alt+Enter"),
    "approve": ("Approve", "Alt+A"),
    "reject": ("Reject", "Alt+X"),
    "flag": ("Flag", "Alt+F"),
    "todo": ("Back to todo", "Alt+T"),
    "previous": ("Previous session", "Alt+P"),
    "next": ("Next session", "Alt+N"),
    "turns_back": ("Earlier turns", "Alt+K"),
    "turns_on": ("Later turns", "Alt+J"),
}


def db_path() -> str:
    """The database: ``$EVALCORE_DB`` (``evalcore app --db`` sets it), else ``./evalcore.db``."""
    return default_db_path()


def sample_folder() -> Path:
    """The folder of sample files: ``$EVALCORE_SAMPLE_DATA``, else ``sample_data/`` beside the app."""
    return Path(config.sample_data_folder() or ROOT / "sample_data")


#: Why the sample data could not be loaded into a database, by its path (shown on the Datasets page).
SAMPLE_PROBLEMS: dict[str, str] = {}


@st.cache_resource(show_spinner="Opening the database…")
def _store(path: str) -> Store:
    store = open_store(path)
    folder = sample_folder()
    if folder.is_dir():
        try:
            ensure_samples(store, folder)  # once per database: a newcomer sees real data on every page
        except EvalcoreError as exc:  # (a full disk, say): the app goes on without them, and says why once
            log.error("the sample data could not be loaded", exc_info=exc)
            SAMPLE_PROBLEMS[path] = str(exc)
    return store


def sample_problem() -> str | None:
    """Why the sample data could not be loaded into this server's database on its first start, if it could not."""
    where = db_path()
    return SAMPLE_PROBLEMS.get(where if is_postgres(where) else os.path.abspath(sqlite_path(where)))


def server_store() -> Store:
    """The store of this server, used by the machine's local user (each browser session's thread gets its own
    connection). Pages use ``store()``: the same store, used by the person at this browser."""
    where = db_path()
    return _store(where if is_postgres(where) else os.path.abspath(sqlite_path(where)))


def admit() -> User:
    """Who uses the app at this browser, as the store says at this run (the frame asks on every run, so a disabled
    user is out and a changed role applies at their next click). With sign-in configured: the signed-in person —
    else a page that asks them to sign in, or says why they may not come in, and the run stops. Without it: the
    machine's local user, the store's owner (who gives the name their changes carry once: ``named``)."""
    base = server_store()
    claims = st.user.to_dict()
    if not signin.sign_in_mode(claims):
        st.session_state["_user"] = user = base.users.local()
        return user
    identity = signin.identity_of(claims)
    if identity is None:
        _sign_in_page()
        st.stop()
    assert identity is not None
    first_view = st.session_state.get("_identity") != (identity.iss, identity.sub)
    admission = signin.admit(base.users, identity, first_view=first_view)
    if admission.user is None:
        st.session_state.pop("_user", None)
        _refused_page(admission.refusal or "you may not come in", identity.email if admission.stranger else None)
        st.stop()
    st.session_state["_identity"] = (identity.iss, identity.sub)
    st.session_state["_user"] = admission.user
    return admission.user


def _sign_in_page() -> None:
    st.title("evalcore")
    st.markdown("Sign in to review, score and export this team's conversations.")
    names = signin.providers(st.secrets.get("auth") or {}) or ["default"]
    for name in names:
        label = "Sign in" if name == "default" else f"Sign in with {name.title()}"
        st.button(label, key=f"login_{name}", type="primary", icon=":material/login:", on_click=st.login, args=(name,))


def _refused_page(reason: str, email: str | None) -> None:
    st.title("evalcore")
    st.error(literal_message(reason), icon=":material/block:")
    st.caption("An admin adds people on the Users page, or with the command line:")
    st.code(f"evalcore users add {email or 'EMAIL'} --role reviewer", language=None)
    st.button("Sign out", icon=":material/logout:", key="refused_logout", on_click=st.logout)


def user() -> User:
    """The person at this browser (the frame's ``admit`` of this run)."""
    found = st.session_state.get("_user")
    return found if isinstance(found, User) else server_store().users.local()


def named() -> bool:
    """Whether the person's changes carry a name they chose: always when signed in; in one-person mode once the
    local user has given theirs (asked once, kept in the store)."""
    return user().iss != LOCAL or server_store().users.local_named()


def store() -> Store:
    """The store, used by the person at this browser: every change it makes is checked against their role and
    carries their name (the machine's local user in one-person mode)."""
    return server_store().as_user(user())


def can(action: Action) -> bool:
    """Whether the person at this browser may ``action`` (reviewing, in one-person mode, once they are named)."""
    return user().can(action) and (action != "review" or named())


def reviewer() -> str | None:
    """The reviewer's name when they may review (``None`` otherwise: a viewer, or no name given yet)."""
    return user().name if can("review") else None


def who_am_i() -> None:
    """The sidebar's line about the person at this browser: their name and role and a sign-out, or (one-person
    mode) the name their changes carry — asked once, then changed only on purpose."""
    me = user()
    if me.iss != LOCAL:
        st.markdown(f"Signed in as **{literal_name(me.name)}**, {me.role}")
        st.button("Sign out", icon=":material/logout:", key="logout", on_click=st.logout, type="tertiary")
        return
    if not named():
        with st.form("your_name", border=False):
            name = st.text_input(
                "Your name", key="your_name", placeholder="who is reviewing?",
                help="Put on every change you make. Asked once: this database remembers it, in every tab and after "
                "a restart.",
            )  # fmt: skip
            if st.form_submit_button("Save name", type="primary", icon=":material/badge:"):
                with saving("Your name"):
                    server_store().users.rename(me, name)
                    st.rerun()
        return
    you = st.popover(f"You: {literal_name(me.name)}", icon=":material/badge:", type="tertiary")  # (a label is Markdown)
    with you, st.form("rename_me", border=False):
        name = st.text_input("Your name", value=me.name, help="Put on every change you make from now on.")
        if st.form_submit_button("Save name"):
            with saving("Your name"):
                server_store().users.rename(me, name)
                st.rerun()


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
    """The reviewer's name; when they may not review, a note saying why (a viewer; no name given yet)."""
    name = reviewer()
    if name is None:
        if not named():
            st.info("Enter your name in the sidebar to edit: every change is saved with it.", icon=":material/badge:")
        else:
            st.info(f"You are a {user().role}: you read everything and change nothing.", icon=":material/visibility:")
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
    "f_search_system": False,
    "f_run": None,
    "f_metric": None,
    "f_min": None,
    "f_max": None,
}


def show_sessions(**wanted: Any) -> None:
    """Go to Sessions filtered by ``wanted`` (its widget keys without ``f_``: ``run``, ``metric``, ``min``,
    ``max``, ``assistant``...), every other filter cleared: a drill-down from a chart. The filters go in the
    address too, as the Sessions page's widgets name them there (``bind``): the list is a link, and a reload keeps
    it. (The address is given whole: Streamlit refuses to clear one whose parameters a widget of this page binds.)"""
    address: dict[str, str] = {"dataset": dataset() or ""}
    for key, empty in SESSION_FILTERS.items():
        value = st.session_state[key] = wanted.get(key[2:], empty)
        if value != empty:
            address[key] = _in_address(value)
    st.session_state["page_number"] = 1
    st.switch_page(PAGES["sessions"], query_params=address)


def _in_address(value: Any) -> str:
    """A filter's value as the Sessions page's widget shows it, and so names it in the address: a run by its label,
    a number as a number, a name as ``visible`` shows it."""
    if isinstance(value, Run):
        return visible(value.label)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(float(value))
    return visible(str(value))


@st.fragment(run_every=0.5)
def follow_job(job_id: int, show: Callable[[int], bool], *, stopping: str, key: str, ended: str | None = None) -> None:
    """A background job, read from the store twice a second until it ends: ``show(job_id)`` draws it (and says
    whether it still runs), with a Cancel button (``key``) and ``stopping`` once cancelling; at its end
    ``ended`` is dropped from the session state and the whole page runs again."""
    if show(job_id):
        if background.cancel_requested(store(), job_id):
            st.caption(stopping)
        elif can("score") and st.button("Cancel", icon=":material/stop_circle:", key=key):
            background.cancel(store(), job_id)
            st.caption(stopping)
        return
    if ended is not None:
        st.session_state.pop(ended, None)
    st.rerun()


def job_status(status: str, fraction: float, message: str, failures: str = "") -> None:
    """A background job's state: its bar while it runs, else how it ended — green only when nothing failed, amber
    when some items failed ("partial"), red when all did or the job failed — and under it the failures grouped by
    reason (``failures``). (A failure's message and the reasons may quote something from outside, an error: shown
    as text; the others are the views' own sentences and figures.)"""
    if status == "running":
        st.progress(fraction, text=message)
    elif status == "done":
        st.success(message, icon=":material/check_circle:")
    elif status == "partial":
        st.warning(message, icon=":material/warning:")
    elif status in ("cancelled", "stalled"):
        st.warning(message, icon=":material/pause_circle:")
    else:
        st.error(literal_message(message), icon=":material/error:")
    if failures:
        st.caption(literal_message(failures))


#: How every table shows a value that is missing (a score no run gave, a deterministic run's cost).
MISSING = "—"


#: The height of a table row that wraps its text (Streamlit wraps a cell's text in rows over 4rem): four lines.
WRAPPED_ROW = 80


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


#: Scrolls the page to the element of a keyed container (``st.container(key=...)``: class ``st-key-KEY``), trying
#: for up to 5 s while the page is still drawn, and once more when it is (what is drawn above may still grow).
_SCROLL = """<script>(() => {
  let tries = 0;
  const go = () => {
    const el = window.parent.document.querySelector(".st-key-%s") || document.querySelector(".st-key-%s");
    if (el) { el.scrollIntoView({block: "start"}); setTimeout(() => el.scrollIntoView({block: "start"}), 400); }
    else if (tries++ < 50) setTimeout(go, 100);
  };
  go();
})();</script>"""


def scroll_to(container_key: str) -> None:
    """Scroll the browser to the container keyed ``container_key`` (letters, digits, ``-`` and ``_`` only)."""
    if not container_key.replace("-", "").replace("_", "").isalnum() or not container_key.isascii():
        raise ValueError(f"not a container key to scroll to: {container_key!r}")
    st.html(_SCROLL % (container_key, container_key), unsafe_allow_javascript=True, width="content")


#: Review's shortcuts that change a session's status, and those that leave it (the page's keys of their buttons).
STATUS_KEYS = ("approve_next", "approve", "reject", "flag", "todo")
LEAVING_KEYS = ("previous", "next", "turns_back", "turns_on")

# Typing is never lost to a shortcut: Streamlit lets Ctrl/Alt shortcuts through while the cursor is in a text box
# (its hotkeys listen on the document). This listener sits on the body, between the app's own handlers (React's,
# at #root: a text area's Ctrl+Enter still applies it) and the document's: a status shortcut typed in a text box
# stops here; a shortcut that leaves the page of text typed and not saved (a form not submitted, a box not yet
# applied) asks first, and goes on by clicking its button when the person says so. A click on those buttons asks
# the same. Installed once per browser tab.
_GUARD = """<script>(() => {
  const doc = window.parent ? window.parent.document : document;
  const win = doc.defaultView || window;
  if (win.__evalcoreGuard) return;
  win.__evalcoreGuard = true;
  const STATUS = %s, LEAVING = %s;
  const ASK = "You have typed text that is not saved. Leave it?";
  const editable = (el) => el && (el.isContentEditable || el.tagName === "TEXTAREA" ||
    (el.tagName === "INPUT" && !["checkbox", "radio", "range", "button", "file", "reset", "submit", "color"]
      .includes(el.type)));
  const combo = (e) => (e.ctrlKey || e.metaKey ? "Ctrl+" : "") + (e.altKey ? "Alt+" : "") +
    (e.key === "Enter" ? "Enter" : (e.code || "").replace(/^Key/, "").toUpperCase());
  const dirty = () => doc.querySelector("[data-evalcore-dirty]") !== null;
  const clean = (el) => { if (el && el.removeAttribute) el.removeAttribute("data-evalcore-dirty"); };
  doc.addEventListener("input", (e) => {
    if (!editable(e.target)) return;
    const form = e.target.closest("[data-testid='stForm']");
    (form || e.target).setAttribute("data-evalcore-dirty", "1");
  }, true);
  doc.addEventListener("focusout", (e) => {  // a box outside a form applies its text when it loses the cursor
    if (editable(e.target) && !e.target.closest("[data-testid='stForm']")) clean(e.target);
  }, true);
  doc.addEventListener("click", (e) => {
    const button = e.target.closest && e.target.closest("button");
    if (!button) return;
    if (button.closest("[data-testid='stFormSubmitButton']")) {
      clean(button.closest("[data-testid='stForm']"));
      return;
    }
    const leaving = LEAVING.some(([, key]) => button.closest(".st-key-" + key));
    if (leaving && dirty() && !win.confirm(ASK)) { e.preventDefault(); e.stopImmediatePropagation(); }
    else if (leaving) doc.querySelectorAll("[data-evalcore-dirty]").forEach(clean);
  }, true);
  doc.body.addEventListener("keydown", (e) => {
    if (!editable(e.target)) return;
    const pressed = combo(e);
    if (STATUS.some(([keys]) => keys === pressed)) { e.stopPropagation(); return; }
    const leave = LEAVING.find(([keys]) => keys === pressed);
    if (!leave || !dirty()) return;
    e.stopPropagation();
    e.preventDefault();
    if (!win.confirm(ASK)) return;
    doc.querySelectorAll("[data-evalcore-dirty]").forEach(clean);
    const target = doc.querySelector(".st-key-" + leave[1] + " button");
    if (target) target.click();
  }, false);
})();</script>"""


def guard_typing() -> None:
    """Keep what a person types from being lost to a keyboard shortcut or a click that leaves the page (see
    ``_GUARD``): status shortcuts do nothing in a text box; leaving with unsaved text asks first."""
    status = [[SHORTCUTS[k][1], k] for k in STATUS_KEYS]
    leaving = [[SHORTCUTS[k][1], k] for k in LEAVING_KEYS]
    st.html(_GUARD % (json.dumps(status), json.dumps(leaving)), unsafe_allow_javascript=True, width="content")


# What a person types into Review's ground-truth editors is sent to the server as they type (0.7 s after they
# stop), to be kept as their draft (``store.drafts``): given back when they return — another session and back, a
# reload, a new tab. The component draws nothing; its script listens to the page's text boxes once per browser tab
# and names the editor (its widget key) with the text. ``data.suffix`` is the page's current ``PK-EPOCH``: only
# that session's editors are sent.
_DRAFTS_JS = """
export default function(component) {
  const { setTriggerValue, data } = component;
  const win = window;
  const state = win.__evalcoreDrafts || (win.__evalcoreDrafts = { timers: {}, installed: false });
  state.send = setTriggerValue;
  state.suffix = data && data.suffix;
  if (state.installed) return;
  state.installed = true;
  document.addEventListener("input", (e) => {
    const box = e.target;
    if (!box || !(box.tagName === "TEXTAREA" || (box.tagName === "INPUT" && box.type === "text"))) return;
    const holder = box.closest("[class*='st-key-s-'], [class*='st-key-t-']");
    if (!holder) return;
    const name = [...holder.classList].find((c) => c.startsWith("st-key-s-") || c.startsWith("st-key-t-"));
    const widget = name ? name.slice("st-key-".length) : "";
    if (!state.suffix || !widget.endsWith("-" + state.suffix)) return;
    clearTimeout(state.timers[widget]);
    state.timers[widget] = setTimeout(() => {
      delete state.timers[widget];
      try { state.send("draft", { widget: widget, value: box.value }); } catch (err) { /* the page is gone */ }
    }, 700);
  }, true);
}
"""
_drafts_component = st.components.v2.component("evalcore_drafts", js=_DRAFTS_JS)


def typed_draft(suffix: str) -> dict[str, Any] | None:
    """What the browser sent of the text being typed into an editor of the session keyed ``suffix`` (``PK-EPOCH``)
    since the last run: ``{"widget": KEY, "value": TEXT}``, or None."""
    result = _drafts_component(key="evalcore_drafts", data={"suffix": suffix}, on_draft_change=lambda: None,
                               height=0)  # fmt: skip
    sent = getattr(result, "draft", None)
    return sent if isinstance(sent, dict) else None

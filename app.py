"""evalcore's Streamlit app: the frame around every page.

The frame runs before every page: it opens the store, asks who is at the browser (the signed-in person and
their role, read again on every run; or the machine's local user, whose name is asked once), shows the pages
their role can use, keeps the current dataset in the sidebar (shared by every page), and reads deep links
(``?dataset=NAME&session=ID&turn=N``).
"""

from pathlib import Path

import streamlit as st

from app_pages import _shared
from evalcore.views.text import code_span, visible
from evalcore.views.users import pages_for

# The icon is a file of the app's, sent inline (an SVG becomes a data: URL): a ``:material/...:`` page icon makes
# the browser fetch it from fonts.gstatic.com on every load (offline it fails, and it tells Google the app is used).
# The pages' ``:material/...:`` icons are drawn with the font Streamlit bundles: nothing is fetched for them.
st.set_page_config(
    page_title="evalcore", page_icon=str(Path(__file__).parent / "app_pages" / "icon.svg"), layout="wide"
)
# Denser than Streamlit's default: less empty space above each page's title.
_CSS = (
    # and narrower side margins than wide layout's 5rem: Review's transcript and panel get the width.
    "[data-testid='stMainBlockContainer']{padding-top:2.2rem;padding-bottom:3rem;padding-left:2rem;padding-right:2rem}"
    # Review's eight tabs in its part of the page (1400 px: all in sight, none behind the tab bar's arrow)
    "[data-testid='stTabs'] [role='tablist']{gap:.4rem}"
    "[data-testid='stTabs'] [role='tab'] p{font-size:.8rem}"
    # A tool's arguments and output (``st.text`` in a chat message): a quiet monospace box.
    "[data-testid='stChatMessage'] [data-testid='stText']{background:#f6f7f9;border-radius:.4rem;padding:.5rem .75rem}"
    "[data-testid='stChatMessage'] [data-testid='stText'] span{font-family:'Source Code Pro',monospace;"
    "font-size:.8rem;line-height:1.45;white-space:pre-wrap;overflow-wrap:anywhere}"
)
st.html(f"<style>{_CSS}</style>")

try:
    acting = _shared.admit()  # who is at this browser, asked on every run (it stops the run for a stranger)
    store = _shared.store()
    names = store.datasets.names()
except Exception as exc:  # a database that cannot be opened: say so, never a traceback
    _shared.report_error(exc)
    st.stop()

_shared.PAGES.update(
    datasets=st.Page("app_pages/datasets.py", title="Datasets", icon=":material/database:", default=True),
    sessions=st.Page("app_pages/sessions.py", title="Sessions", icon=":material/table_rows:", url_path="sessions"),
    review=st.Page("app_pages/review.py", title="Review", icon=":material/rate_review:", url_path="review"),
    labeling=st.Page("app_pages/labeling.py", title="Labeling", icon=":material/checklist:", url_path="labeling"),
    metrics=st.Page("app_pages/metrics.py", title="Metrics", icon=":material/functions:", url_path="metrics"),
    dashboard=st.Page("app_pages/dashboard.py", title="Dashboard", icon=":material/monitoring:", url_path="dashboard"),
    compare=st.Page("app_pages/compare.py", title="Side by side", icon=":material/compare_arrows:", url_path="compare"),
    export=st.Page("app_pages/export.py", title="Export", icon=":material/download:", url_path="export"),
    simulate=st.Page("app_pages/simulate.py", title="Simulate", icon=":material/forum:", url_path="simulate"),
    users=st.Page("app_pages/users.py", title="Users", icon=":material/group:", url_path="users"),
)
# A page the person's role cannot use is not in the navigation, so its URL does not open it either.
allowed = pages_for(acting)
navigation = st.navigation(
    {
        section: [_shared.PAGES[k] for k in keys if k in allowed]
        for section, keys in (
            ("Review", ("datasets", "sessions", "review", "labeling")),
            ("Scores", ("metrics", "dashboard", "compare", "export")),
            ("Solver", ("simulate",)),
            ("Team", ("users",)),
        )
        if any(k in allowed for k in keys)
    }
)

# The current dataset: a deep link wins, then the last choice, then the first dataset. The URL always
# carries the current dataset, so only a link that differs from what the last run put there is new
# (else the link would undo every choice made in the sidebar).
wanted = st.query_params.get("dataset")
if wanted in names and wanted != st.session_state.get("dataset_in_url"):
    st.session_state["dataset"] = wanted
if st.session_state.get("dataset") not in names:
    st.session_state["dataset"] = names[0] if names else None


def _dataset_changed() -> None:
    """Another dataset: the session and turn in the URL belonged to the last one."""
    for name in ("session", "turn", "a", "b", "task", "metric"):
        st.query_params.pop(name, None)


with st.sidebar:
    st.selectbox(
        "Dataset",
        names,
        format_func=visible,  # a name's invisible or reordering characters shown as escapes (plain text here)
        key="dataset",
        on_change=_dataset_changed,
        placeholder="No dataset yet",
        help="Every page works on this dataset.",
        persist_state="session",
    )
    _shared.who_am_i()
    st.caption(f"Database: {code_span(visible(store.where))}")

if st.session_state.get("dataset"):
    st.query_params["dataset"] = st.session_state["dataset"]
st.session_state["dataset_in_url"] = st.session_state.get("dataset")

try:
    navigation.run()
except Exception as exc:  # never a traceback on a page: a message, and the details in the log
    _shared.report_error(exc)

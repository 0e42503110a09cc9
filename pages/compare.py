"""Side by side: two sessions' transcripts on one screen — an A/B pair of the Dashboard, the same task answered by
two assistants (``?a=REF&b=REF``, each a session of the current dataset)."""

import streamlit as st

from evalcore.errors import NotFoundError
from evalcore.views.ab import side_caption
from evalcore.views.review.tables import session_label
from evalcore.views.review.transcript import transcript
from evalcore.views.text import escape_inline, literal_message, literal_name
from pages import _shared
from pages._transcript import render_items, render_turn

_shared.frame_first()

store = _shared.store()
dataset = _shared.dataset()
st.title("Side by side")
refs = [st.query_params.get("a"), st.query_params.get("b")]
if dataset is None or not all(refs):
    st.info(
        "Two sessions side by side: open a pair from the Dashboard's A/B by task (a row of its tasks).",
        icon=":material/compare_arrows:",
    )
    st.page_link(_shared.PAGES["dashboard"], label="Go to the Dashboard", icon=":material/monitoring:")
    st.stop()
try:
    pks = [store.sessions.find_ref(dataset, str(ref)) for ref in refs]
except NotFoundError as exc:  # it quotes the link's session: shown as text
    st.warning(literal_message(str(exc)), icon=":material/search_off:")
    st.stop()
task = st.query_params.get("task")
if task:
    metric = st.query_params.get("metric")
    by = f" · compared by {literal_name(metric)}" if metric else ""
    st.caption(f"Task: {literal_message(task)}{by}")
for side, column, pk in zip(("A", "B"), st.columns(2, gap="medium"), pks, strict=True):
    stored = store.sessions.get(pk)
    with column, st.container(key=f"side-{side}"):
        st.markdown(f"##### {side}: {escape_inline(session_label(stored.link))}")
        st.caption(literal_message(side_caption(store, pk)))
        st.button("Open in Review", key=f"review-{side}", icon=":material/rate_review:", type="tertiary",
                  on_click=_shared.open_session, args=(stored.link,))  # fmt: skip
        view = transcript(stored.session)
        render_items(view.preamble, f"{side}-pre")
        for turn in view.turns:
            render_turn(turn, f"{side}-t{turn.index}")

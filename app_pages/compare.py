"""Side by side: two sessions' transcripts on one screen — an A/B pair of the Dashboard, the same task answered by
two assistants (``?a=REF&b=REF``, each a session of the current dataset)."""

import streamlit as st

from app_pages import _shared
from app_pages._transcript import raw_text_toggle, render_items, render_turn
from evalcore.errors import NotFoundError
from evalcore.views.ab import side_caption
from evalcore.views.review.tables import session_label
from evalcore.views.review.transcript import transcript
from evalcore.views.side_by_side import divergence
from evalcore.views.text import escape_inline, literal_message, literal_name

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
raw_text_toggle()
task = st.query_params.get("task")
if task:
    metric = st.query_params.get("metric")
    by = f" · compared by {literal_name(metric)}" if metric else ""
    st.caption(f"Task: {literal_message(task)}{by}")
stored = [store.sessions.get(pk) for pk in pks]
views = [transcript(s.session) for s in stored]
apart = divergence(*views)
if apart.same_calls:
    st.success(literal_message(apart.summary), icon=":material/done_all:")
else:
    st.info(literal_message(apart.summary), icon=":material/call_split:")
for side, column, pk, one, view in zip(("A", "B"), st.columns(2, gap="medium"), pks, stored, views, strict=True):
    with column, st.container(key=f"side-{side}"):
        st.markdown(f"##### {side}: {escape_inline(session_label(one.link))}")
        st.caption(literal_message(side_caption(store, pk)))
        st.button("Open in Review", key=f"review-{side}", icon=":material/rate_review:", type="tertiary",
                  on_click=_shared.open_session, args=(one.link,))  # fmt: skip
        render_items(view.preamble, f"{side}-pre")
        for turn in view.turns:
            render_turn(turn, f"{side}-t{turn.index}")

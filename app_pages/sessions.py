"""Sessions: the dataset's sessions filtered, searched, sorted and paged; open one; change many at once. The filters
and the sort are kept in the URL (``bind``): a link opens the same view."""

from typing import Any

import streamlit as st

from app_pages import _shared
from evalcore.errors import EvalcoreError
from evalcore.schema import STATUSES
from evalcore.store.queries import SORTS
from evalcore.views.review.tables import session_label
from evalcore.views.sessions import no_match, page_filter, sessions_table
from evalcore.views.text import escape_inline, literal_message, literal_name, plural, visible

store = _shared.store()
dataset = _shared.dataset()
st.title("Sessions")
if dataset is None:
    st.info("No dataset yet: import one on the Datasets page.", icon=":material/info:")
    st.page_link(_shared.PAGES["datasets"], label="Go to Datasets", icon=":material/database:")
    st.stop()

state = _shared.browse_state()
#: How each filter is kept: through the session's pages, and in the URL (a link opens the same view).
KEPT: dict[str, Any] = {"persist_state": "session", "bind": "query-params"}
found = store.sessions.facets(dataset)
runs = [r for r in store.runs.recent(dataset) if r.status != "running"]


def reset_page() -> None:
    st.session_state["page_number"] = 1


# -- filters ------------------------------------------------------------------------------------
c = st.columns([2, 2, 2, 1.4, 3], vertical_alignment="bottom")
# A choice is named in the URL as it is shown: without its count (which changes), the counts said in the help.
status = c[0].multiselect(
    "Status", list(STATUSES), key="f_status", **KEPT, on_change=reset_page,
    help=" · ".join(f"{s}: {found.statuses[s]:,}" for s in STATUSES),
)  # fmt: skip
tags = c[1].multiselect(
    "Tags (all of)", list(found.tags), format_func=visible, key="f_tags", **KEPT, on_change=reset_page,
    help=" · ".join(f"{literal_name(t)}: {n:,}" for t, n in found.tags.items()) or None,
)  # fmt: skip
assistant = c[2].selectbox(
    "Assistant", ["any", *found.assistants], key="f_assistant", **KEPT, on_change=reset_page, format_func=visible,
    help=" · ".join(f"{literal_name(a)}: {n:,}" for a, n in found.assistants.items()) or None,
)  # fmt: skip
truth = c[3].selectbox(
    "Ground truth", ["any", "present", "missing"], key="f_truth", **KEPT, on_change=reset_page,
    help=f"{found.with_truth} of {found.total} sessions have some ground truth.",
)  # fmt: skip
search = c[4].text_input(
    "Search", key="f_search", **KEPT, on_change=reset_page,
    placeholder="words (word* for a prefix)",
    help="The conversation, tool names and arguments, ground truth; the system prompt only if ticked below.",
)  # fmt: skip
search_system = c[4].checkbox("Search the system prompt too", key="f_search_system", **KEPT, on_change=reset_page)

run_id = metric = min_score = max_score = None
with st.expander("Score filter and sort", expanded=bool(st.session_state.get("f_run"))):
    s = st.columns([4.2, 2.4, 1.1, 1.1, 1.6, 1.3], vertical_alignment="bottom")
    run = s[0].selectbox(
        "Run", [None, *runs], key="f_run", **KEPT, on_change=reset_page,
        format_func=lambda r: "no score filter" if r is None else visible(r.label),
    )  # fmt: skip
    if run is not None:
        run_id = run.id
        metric = s[1].selectbox(
            "Metric", run.metrics, format_func=visible, key="f_metric", **KEPT, on_change=reset_page
        )
        low = s[2].number_input("Min", value=None, key="f_min", **KEPT, on_change=reset_page, placeholder="any")
        high = s[3].number_input("Max", value=None, key="f_max", **KEPT, on_change=reset_page, placeholder="any")
        min_score = None if low is None else float(low)
        max_score = None if high is None else float(high)
    sorts = [k for k in SORTS if k != "score" or run is not None]
    sort = s[4].selectbox("Sort by", sorts, key="f_sort", **KEPT, on_change=reset_page)
    descending = s[5].toggle("Desc", key="f_desc", **KEPT, on_change=reset_page)

filters = page_filter(
    status=list(status), tags=list(tags), assistant=assistant, search=search, search_system_prompt=search_system,
    truth=truth,
    run_id=run_id, metric=metric, min_score=min_score, max_score=max_score,
)  # fmt: skip
state.update(filters=filters, sort=sort, descending=descending)

# -- the table ----------------------------------------------------------------------------------
size = int(st.session_state.get("page_size", 50))
number = int(st.session_state.get("page_number", 1))
try:
    table = sessions_table(store, dataset, filters, sort=sort, descending=descending, limit=size,
                           offset=(number - 1) * size)  # fmt: skip
except EvalcoreError as exc:  # it quotes what was typed in the search box: shown as text
    st.warning(literal_message(str(exc)), icon=":material/filter_alt_off:")
    st.stop()
pages = max(1, -(-table.total // size))
if number > pages:
    st.session_state["page_number"] = number = pages

first = (number - 1) * size + 1 if table.total else 0
if table.total:
    st.caption(
        f"{first:,}–{first + len(table.rows) - 1 if table.rows else 0:,} of **{table.total:,}** sessions. "
        "Click a cell to open its session in Review; tick rows to change them together."
    )
else:  # (what a person typed is quoted: shown as text)
    st.info(literal_message(no_match(filters)), icon=":material/search_off:")
config = {
    "status": st.column_config.TextColumn(width="small"),
    "id": st.column_config.TextColumn(width="medium"),
    "first_question": st.column_config.TextColumn(width="medium"),
    "turns": st.column_config.NumberColumn(width="small"),
    "tool_calls": st.column_config.NumberColumn(width="small"),
    "ground_truth": st.column_config.CheckboxColumn(width=98),  # (its header whole)
    "tags": st.column_config.TextColumn(width="medium"),
    **{
        m: st.column_config.NumberColumn(
            visible(m), format=table.number_formats[m], width="small", help=literal_name(m)
        )
        for m in [*table.metrics, "score"]
    },
}
event = _shared.table(
    table.rows,
    column_config=config,
    column_order=table.columns,
    on_select="rerun",
    selection_mode=["multi-row", "single-cell"],
    key="sessions_table",
    height=min(38 + 35 * max(len(table.rows), 1), 38 + 35 * 20),
)
# A selection made on rows that are gone since (another reviewer's change, a new filter) opens nothing.
cells = [c for c in (event.selection.cells if event else []) if c[0] < len(table.refs)]
if cells:
    _shared.open_session(table.refs[cells[0][0]])
selected = [table.pks[i] for i in (event.selection.rows if event else []) if i < len(table.pks)]

with st.container(horizontal=True, vertical_alignment="bottom", key="pager"):
    if st.button("Previous", icon=":material/arrow_back:", disabled=number <= 1, key="page_prev"):
        st.session_state["page_number"] = number - 1
        st.rerun()
    if st.button("Next", icon=":material/arrow_forward:", disabled=number >= pages, key="page_next"):
        st.session_state["page_number"] = number + 1
        st.rerun()
    st.caption(f"Page {number:,} of {pages:,}")
    st.selectbox(
        "Rows per page", [25, 50, 100, 200], index=1, key="page_size", persist_state="session", on_change=reset_page,
        width=140,
    )  # fmt: skip
# Its place is kept when no row or several are ticked: an element coming and going above the panel below would
# close the panel at every tick.
opener = st.empty()
if len(selected) == 1:
    i = table.pks.index(selected[0])
    label = f"Open {escape_inline(session_label(table.refs[i]))} in Review"  # a button's label is Markdown
    if opener.button(label, icon=":material/open_in_new:", key="open_selected"):
        _shared.open_session(table.refs[i])

# -- bulk changes -------------------------------------------------------------------------------
with st.expander("Change many sessions at once", icon=":material/checklist:", key="bulk"):
    author = _shared.need_reviewer()
    # Its choices' words stay the same whatever is ticked (the browser forgot the choice when they changed); the
    # numbers are on the button and the confirmation.
    scope = st.radio(
        "Which sessions",
        ["selected", "filter"],
        format_func=lambda v: "the ticked rows" if v == "selected" else "every session this filter matches",
        horizontal=True,
        key="bulk_scope",
    )  # fmt: skip
    b = st.columns([2, 2, 2, 3], vertical_alignment="bottom")
    action = b[0].selectbox("Change", ["status", "add tag", "remove tag"], key="bulk_action")
    if action == "status":
        value = b[1].selectbox("to", list(STATUSES), key="bulk_status")
    else:
        value = b[1].text_input("tag", key="bulk_tag")
    count = len(selected) if scope == "selected" else table.total
    confirmed = scope == "selected" or b[2].checkbox(f"Yes, change {count:,}", key="bulk_confirm")
    ready = bool(author and count and value and confirmed)
    if b[3].button(f"Apply to {plural(count, 'session')}", disabled=not ready, type="primary", key="bulk_apply"):
        assert author is not None
        with _shared.saving("The change"):
            pks = selected if scope == "selected" else store.sessions.matching(dataset, filters)
            if action == "status":
                changed = store.sessions.set_status_many(pks, value)
            elif action == "add tag":
                changed = store.sessions.tag_many(pks, add=[value])
            else:
                changed = store.sessions.tag_many(pks, remove=[value])
            st.session_state["bulk_done"] = f"{plural(changed, 'session')} changed."
            st.rerun()
    if "bulk_done" in st.session_state:
        st.success(st.session_state.pop("bulk_done"))

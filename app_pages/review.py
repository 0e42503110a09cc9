"""Review: one session's transcript with its tool calls, the ground-truth editors, the reviewer's verdict,
status and navigation, history, comments, scores and the answer against the reference."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, Literal

import pandas as pd
import streamlit as st

from app_pages import _shared
from app_pages._transcript import render_items, render_turn
from evalcore.errors import ConflictError, EvalcoreError, NotFoundError
from evalcore.schema import TurnTruth
from evalcore.store.labels import LABEL, rubric_verdict
from evalcore.views.review.conflict import conflict_view
from evalcore.views.review.diff import diff_markdown, word_diff
from evalcore.views.review.drafts import SESSION_DRAFTS, TURN_DRAFTS, DraftsView, draft_target, is_saved_text
from evalcore.views.review.fields import (
    SESSION_EDITORS,
    TURN_EDITORS,
    FieldProblem,
    calls_from_conversation,
    form_values,
    session_changes,
    turn_changes,
    turn_form_values,
)
from evalcore.views.review.questions import (
    QuestionForm,
    asked_of,
    gold_table,
    gold_views,
    has_own_questions,
    questions_view,
)
from evalcore.views.review.tables import (
    edit_detail,
    edit_label,
    history_rows,
    other_verdicts,
    restore_targets,
    score_rows,
    session_label,
    weight_rows,
)
from evalcore.views.review.transcript import page_transcript, read_turn_page, turn_page_of_link
from evalcore.views.review.weights import explain_weights, format_number
from evalcore.views.review.weights import typed_weights as weights_typed
from evalcore.views.text import code_span, literal_markdown, literal_message, literal_name, plural, visible

TURNS_PER_PAGE = 4
#: How long "saved" is said under the button that saved (any rerun in that time says it again).
SAVED_FOR = 8.0
# The panel's tables are ~415 px wide at a 1400 px window: their columns are sized to fit it (a long value wraps).
SPECS = {s.name: s for s in (*SESSION_EDITORS, *TURN_EDITORS)}

store = _shared.store()
dataset = _shared.dataset()
author = _shared.reviewer()
if dataset is None:
    st.title("Review")
    st.info("No dataset yet: import one on the Datasets page.", icon=":material/info:")
    st.stop()

state = _shared.browse_state()
ref = st.query_params.get("session")
if not ref:
    first = store.sessions.browse(
        dataset, state["filters"], sort=state["sort"], descending=state["descending"], limit=1
    )
    if not first.items:
        st.title("Review")
        st.info("No session matches the filter of the Sessions page.", icon=":material/filter_alt_off:")
        st.stop()
    ref = first.items[0].link
    st.query_params["session"] = ref
try:
    pk = store.sessions.find_ref(dataset, ref)
except NotFoundError as exc:  # it quotes the link's session: shown as text (a link can hold any Markdown)
    st.title("Review")
    st.warning(literal_message(str(exc)), icon=":material/search_off:")
    st.page_link(_shared.PAGES["sessions"], label="Pick a session", icon=":material/table_rows:")
    st.stop()

# The page of turns shown (a link's ``turn=N`` opens the page of that turn, once): what is read of the session.
# A large session is read a page at a time (``Sessions.page``); a small one whole, as it always was.
page_key = f"turn_page-{pk}"
wanted = st.query_params.get("turn")
linked_page = turn_page_of_link(wanted, TURNS_PER_PAGE)
if linked_page is not None and st.session_state.get("turn_deeplink") != (pk, wanted):
    st.session_state["turn_deeplink"] = (pk, wanted)
    st.session_state["turn_scroll"] = int(str(wanted)) - 1  # the link's turn is scrolled to once it is drawn
else:
    linked_page = None  # (followed already: the page is the person's own choice since)
window = read_turn_page(store.sessions, pk, linked_page or int(st.session_state.get(page_key, 1)), TURNS_PER_PAGE)
read, page, pages = window.read, window.number, window.pages
if linked_page is not None:
    st.session_state[page_key] = page
stored = read.stored
session = stored.session  # (a large session's: its own fields, and the messages of the page)

# What this reviewer's forms are based on: the version they first saw, until they save, take another
# reviewer's changes, or leave. A newer version in the store is announced, never silently loaded into
# a form that holds typing. (Of a large session, a page of turns first shown later is based on the version read
# then: saving it over a newer one than the forms' asks, as any save does.)
bases: dict[int, dict[str, Any]] = st.session_state.setdefault("review_base", {})
if st.session_state.get("review_pk") != pk:
    bases.clear()
    st.session_state.pop("review_conflict", None)  # another session's: never re-applied to this one
    st.session_state["review_pk"] = pk
base = bases.setdefault(
    pk, {"version": stored.version, "session": session, "truth": {}, "weights": read.weights, "epoch": 0}
)
for turn_index, turn_truth in read.truth.items():
    base["truth"].setdefault(turn_index, turn_truth)
key = f"{pk}-{base['epoch']}"


def forget_drafts(fields: Iterable[str] | None, turn: int | None = None) -> None:
    """Drop the person's drafts of ``fields`` (of ``turn``) on this session; ``None``: every draft of theirs."""
    if author is None:
        return
    try:
        if fields is None:
            store.drafts.drop(pk)
        else:
            for field in fields:
                store.drafts.drop(pk, field, turn=turn)
    except EvalcoreError:  # (a draft left behind is harmless: it is shown, never saved, and can be discarded)
        pass


# Text typed into an editor, sent by the browser as it is typed: kept as the person's draft of that field.
typed = _shared.typed_draft(key)
typed_into = draft_target(typed.get("widget", ""), key) if typed is not None and author is not None else None
if typed is not None and typed_into is not None:
    field_typed, turn_typed = typed_into
    saved_values = (form_values(base["session"]) if turn_typed is None
                    else turn_form_values(base["truth"].get(turn_typed) or TurnTruth()))  # fmt: skip
    try:
        if is_saved_text(typed.get("value"), saved_values.get(field_typed)):  # (sent after its form was saved)
            store.drafts.drop(pk, field_typed, turn=turn_typed)
        else:
            store.drafts.save(pk, field_typed, str(typed.get("value", "")), base_version=base["version"],
                              turn=turn_typed)  # fmt: skip
    except EvalcoreError as exc:
        st.session_state["review_notice"] = ("error", f"Your draft was not kept: {exc}")
drafts = DraftsView(store.drafts.of(pk) if author is not None else [], base["version"])
# The drafts there were when this session's forms were first drawn: what "your unsaved text is back" is about (a
# draft kept while the person types is not announced: nothing above the form may come and go as they type).
opened_with: set[tuple[str, int | None]] = st.session_state.setdefault("drafts_opened_with", {}).setdefault(
    key, drafts.fresh_keys()
)


def rebase(*, reset: bool) -> None:
    """Base the forms on the store's current version (``reset``: drop what is typed in them too)."""
    fresh = store.sessions.page(pk, read.first_turn, TURNS_PER_PAGE)
    base.update(version=fresh.stored.version, session=fresh.stored.session, truth=dict(fresh.truth),
                weights=fresh.weights)  # fmt: skip
    if reset:
        base["epoch"] += 1
        forget_drafts(None)  # what was typed is dropped: its drafts too


def save(groups: list[tuple[int | None, dict[str, Any]]], what: str, where: str) -> bool:
    """Save reviewer changes on top of the forms' version; a conflict is kept to be resolved. ``where``: the part of
    the page whose button asked for it (``truth``, ``calls``, ``turn-N``, ``status``), where "saved" is said."""

    def refused(message: str) -> bool:
        turns = [turn for turn, _ in groups if turn is not None]
        if len(groups) == 1 and turns:  # a turn's: said in that turn, where its Save was clicked
            st.session_state["turn_refusal"] = (turns[0], message)
        else:
            st.session_state["review_notice"] = ("error", message)
        return False

    if author is None:  # (the buttons are off: a shortcut key, or a role lowered since the page was drawn)
        return refused("You may not change this session: see the note above.")
    try:
        for turn, changes in groups:
            base["version"] = store.sessions.save(pk, changes, base_version=base["version"], turn=turn)
    except ConflictError:
        st.session_state["review_conflict"] = {"groups": groups, "what": what, "where": where, "scroll": True}
        return False
    except EvalcoreError as exc:
        return refused(f"{what} was not saved: {exc}")
    rebase(reset=False)
    for turn, _ in groups:  # the form is saved: its drafts are done with
        forget_drafts(SESSION_DRAFTS.values() if turn is None else TURN_DRAFTS.values(), turn)
    said_saved(where, f"{what} saved.")
    return True


def go_to(target: int | None) -> None:
    if target is not None:
        st.query_params["session"] = store.sessions.links([target])[target]
        st.query_params.pop("turn", None)


def set_status(status: str, then: int | None = None) -> None:
    if save([(None, {"status": status})], "Status", "status"):
        said_saved("status", f"{session_label(stored.link)} set to {status}.", anywhere=True)
        if then is not None:
            go_to(then)


def said_saved(where: str, text: str, *, anywhere: bool = False) -> None:
    """Keep ``text`` to be said at ``where`` (``saved_here``) for ``SAVED_FOR`` seconds of reruns (the draft of what
    was typed, sent 0.7 s after the last key, reruns the page right after a save: said once, it would flash), on
    this session (``anywhere``: on the next one too, as Approve & next's)."""
    st.session_state["review_saved"] = {"where": where, "text": text, "pk": None if anywhere else pk,
                                        "at": time.monotonic()}  # fmt: skip


def saved_here(where: str) -> None:
    """Say "saved" beside the button that saved (a toast would sit on Prev / Next, top right)."""
    said = st.session_state.get("review_saved")
    if said is None:
        return
    if said["pk"] not in (None, pk) or time.monotonic() - said["at"] > SAVED_FOR:
        st.session_state.pop("review_saved")  # (said where its button was, for a few seconds; not later, nor elsewhere)
    elif said["where"] == where:
        st.success(said["text"], icon=":material/check:")


def problems_text(problems: list[FieldProblem]) -> str:
    return "\n".join(f"- {literal_message(str(p))}" for p in problems)


# -- header: who, where, status, navigation ---------------------------------------------------------
nb = store.sessions.neighbours(dataset, pk, state["filters"], sort=state["sort"], descending=state["descending"])
view = page_transcript(read)
place = f"{nb.index + 1:,} of {nb.total:,}" if nb.index is not None else f"outside the filter ({nb.total:,})"
title, moves = st.columns([5, 3], vertical_alignment="bottom")
title.markdown(f"### {literal_markdown(session_label(stored.link))}")
S = _shared.SHORTCUTS
with moves.container(horizontal=True, horizontal_alignment="right", key="moves"):
    st.button(
        "Prev", shortcut=S["previous"][1], key="previous", on_click=go_to, args=(nb.previous,),
        disabled=nb.previous is None, help="Previous session in the filter", icon=":material/arrow_back:",
    )  # fmt: skip
    st.button(
        "Next", shortcut=S["next"][1], key="next", on_click=go_to, args=(nb.next,),
        disabled=nb.next is None, help="Next session in the filter", icon=":material/arrow_forward:",
    )  # fmt: skip
st.caption(
    " · ".join(
        [
            f"**{session.status}**" + (f" by {literal_name(stored.status_by)}" if stored.status_by else ""),
            literal_name(session.assistant_id) if session.assistant_id else "no assistant id",
            f"{view.turn_count} turns, {view.n_tool_calls} tool calls",
            f"version {stored.version}",
            f"{place} in the Sessions filter",
        ]
    )
)
in_queue = None
if (asked_queue := st.query_params.get("queue", "")).isdigit():
    try:
        in_queue = store.queues.get(int(asked_queue))
    except NotFoundError:
        st.query_params.pop("queue", None)


def queue_next(queue_id: int) -> None:
    """Open the next item of the queue for this person (or say there is none)."""
    try:
        target = store.queues.next(queue_id)
    except EvalcoreError as exc:
        st.session_state["queue_notice"] = ("error", str(exc))
        return
    if target is None:
        st.session_state["queue_notice"] = ("success", "Nothing is left for you in this queue: thank you.")
    else:
        go_to(target)


def queue_submit(queue_id: int) -> None:
    try:
        store.answers.submit(pk, queue_id=queue_id)
    except EvalcoreError as exc:
        st.session_state["queue_notice"] = ("error", f"Not submitted: {exc}")
        return
    queue_next(queue_id)


def queue_skip(queue_id: int) -> None:
    try:
        store.queues.skip(queue_id, pk)
    except EvalcoreError as exc:
        st.session_state["queue_notice"] = ("error", f"Not skipped: {exc}")
        return
    queue_next(queue_id)


if in_queue is not None:
    with st.container(border=True, key="queue_bar"):
        spot = store.queues.place(in_queue.id, pk)
        where = (f"item {spot[0]:,} of {spot[1]:,} · you have submitted {spot[2]:,}" if spot
                 else "this session is not one of its items")  # fmt: skip
        with st.container(horizontal=True, vertical_alignment="center"):
            st.markdown(f"**Queue {literal_name(in_queue.name)}** · {where}")
            off = author is None or spot is None
            st.button("Submit & next", key="queue_submit", type="primary", icon=":material/send:",
                      on_click=queue_submit, args=(in_queue.id,), disabled=off,
                      help="Hand in your answers to this queue and open your next item")  # fmt: skip
            st.button("Skip", key="queue_skip", icon=":material/skip_next:", on_click=queue_skip, args=(in_queue.id,),
                      disabled=off, help="Not for me: the queue does not hand it to me again")  # fmt: skip
            st.page_link(_shared.PAGES["labeling"], label="Leave the queue", icon=":material/logout:")
        st.caption(
            "**Submit & next** finishes this item. Approve & next below only sets the session's status and "
            "opens the next session of the Sessions filter; Submit answers hands in your answers and stays."
        )
        notice = st.session_state.pop("queue_notice", None)
        if notice is not None:
            (st.success if notice[0] == "success" else st.error)(literal_message(notice[1]))

# One primary action a screen: in a queue, the queue's own (Submit & next); the page's others are secondary there.
PRIMARY: Literal["primary", "secondary"] = "secondary" if in_queue is not None else "primary"
with st.container(horizontal=True, vertical_alignment="center", key="actions"):
    st.button(
        "Approve & next", type=PRIMARY, shortcut=S["approve_next"][1],
        key="approve_next", icon=":material/done_all:", on_click=set_status, args=("approved", nb.next),
        help="Approve, then open the next session of the Sessions filter", disabled=author is None,
    )  # fmt: skip
    for button, text, status in (("approve", "Approve", "approved"), ("reject", "Reject", "rejected"),
                                 ("flag", "Flag", "flagged"), ("todo", "To do", "todo")):  # fmt: skip
        st.button(text, shortcut=S[button][1], key=button, on_click=set_status, args=(status,), disabled=author is None)
    with st.popover("Shortcuts", icon=":material/keyboard:", help="Every keyboard shortcut of this page"):
        st.markdown("\n".join(f"- `{keys}` {label}" for label, keys in S.values()))
        st.caption("In a text box Ctrl+Enter saves its form (or applies the box); the status keys do nothing there.")
    saved_here("status")


def conflict_box(conflict: dict[str, Any], said: Any) -> None:
    """A refused save (``said``: its ``ConflictView``): who changed what, the values they saved, and the two ways on
    (shown where the save was asked for)."""
    with st.container(border=True, key="conflict_box"):
        # The conflict names the other reviewer and the session, and quotes their values: shown as text.
        st.error(literal_message(said.message), icon=":material/sync_problem:")
        for theirs in said.values:
            st.caption(f"{literal_name(theirs.label)} now, as {literal_name(theirs.author)} saved it at {theirs.at}:")
            st.code(theirs.value, language=None, wrap_lines=True, height=None if len(theirs.value) < 600 else 200)
        if said.more:
            st.caption(f"…and {plural(said.more, 'other field')} changed (see History).")
        choice = st.container(horizontal=True)
        drop = "Drop your change and show the session as it is now"
        if choice.button("Take theirs", key="take_theirs", help=drop):
            st.session_state.pop("review_conflict")
            rebase(reset=True)
            st.rerun()
        if choice.button("Re-apply mine on top", key="reapply", type="primary",
                     help="Save your change over the current version (their other changes stay)"):  # fmt: skip
            st.session_state.pop("review_conflict")
            rebase(reset=False)
            if save(conflict["groups"], conflict["what"], conflict["where"]):
                base["epoch"] += 1
            st.rerun()
        st.caption(
            "**Take theirs** drops your change and shows the session as it is now. **Re-apply mine on top** "
            "saves your change over theirs: their changes to other fields stay."
        )


# Every message above the columns sits in one container that is always there: a message coming or going
# must not move what follows, or Streamlit would remount it (an open turn editor would snap shut).
with st.container():
    if view.error is not None:
        st.error(f"The run failed: {literal_markdown(view.error)}", icon=":material/report:")
    if author is None:
        _shared.need_reviewer()  # (says why: no name given yet, or a viewer)
    notice = st.session_state.pop("review_notice", None)
    if notice is not None:  # ("saved" is said beside the button that saved: ``saved_here``)
        st.error(literal_message(notice[1]), icon=":material/error:")  # it may quote what was typed

    conflict = st.session_state.get("review_conflict")
    # A turn's refused save is said in that turn, where its Save was clicked; the session's here.
    conflict_turn = conflict["groups"][0][0] if conflict is not None and len(conflict["groups"]) == 1 else None
    conflict_said = None
    if conflict is not None:
        conflict_said = conflict_view(conflict["what"], session_label(stored.link), base["version"],
                                      store.sessions.history(pk), author)  # fmt: skip
        if conflict_turn is None:
            conflict_box(conflict, conflict_said)
        else:  # (the box is under that turn, maybe far down the page: said here, and scrolled to once)
            st.warning(
                f"Turn {conflict_turn + 1} was not saved: someone else saved this session first. Their value and "
                f"your two ways on are under turn {conflict_turn + 1}, in its ground truth below.",
                icon=":material/sync_problem:",
            )
    elif stored.version > base["version"]:
        newer = [e for e in store.sessions.history(pk) if e.version > base["version"]]
        who = ", ".join(sorted({e.author for e in newer})) or "someone"
        fields = ", ".join(sorted({e.where for e in newer}))
        st.warning(
            f"{literal_name(who)} changed this session since you opened it "
            f"({literal_name(fields)}). Your forms show version {base['version']}; "
            "saving them will ask whether to keep their changes.",
            icon=":material/sync_problem:",
        )
        if st.button("Load their version", key="load_theirs"):
            rebase(reset=True)
            st.rerun()

# -- the session panel (right), the transcript (left) ---------------------------------------------------
edited: Any = base["session"]
talk_column, panel = st.columns([7, 5], gap="medium")  # the transcript gets the larger part
questions = asked_of(store.questions.of(dataset), session)
asked = has_own_questions(questions)  # the dataset's own questions take the place of the verdicts
with panel:
    tabs = st.tabs(
        [
            "Truth",
            "Calls & rubrics",
            "Weights",
            "Questions" if asked else "Verdict",
            "Scores",
            "Diff",
            "History",
            "Comments",
        ],  # fmt: skip
        key="review_tab",
        on_change="rerun",
    )


def save_form(form: dict[str, Any], what: str, where: str) -> bool | None:
    """Save what a ground-truth form asks for: whether it was saved, or ``None`` when nothing was tried
    (its problems, or that nothing changed, are said under the form)."""
    result = session_changes(edited, form)
    if result.problems:
        st.error("Nothing was saved; fix these first:\n\n" + problems_text(result.problems))
    elif not result.changes:
        st.info("Nothing changed.")
    else:
        return save([(None, result.changes)], what, where)
    return None


with tabs[0]:
    if tabs[0].open:
        values = form_values(edited)
        restored = drafts.fresh(None)
        values.update(restored)
        if restored.keys() & {field for field, turn in opened_with if turn is None}:
            with st.container(horizontal=True, vertical_alignment="center"):
                names = ", ".join(SPECS[f].label for f in restored if f in SPECS)
                st.caption(f"Your unsaved text is back in: {literal_name(names)} (kept as you typed; not saved yet).")
                if st.button("Discard it", key=f"discard_fresh-{key}", type="tertiary", icon=":material/undo:"):
                    forget_drafts(list(restored))
                    rebase(reset=True)
                    st.rerun()
        stale = drafts.stale(None, form_values(edited))  # (a draft of the text saved since: nothing unsaved)
        if stale:
            with st.expander(f"Your unsaved text from version {stale[0].base_version} (the session changed since)",
                             icon=":material/history_edu:", expanded=True):  # fmt: skip
                for d in stale:
                    st.caption(literal_name(SPECS[d.field].label if d.field in SPECS else d.field))
                    st.code(str(d.value), language=None, wrap_lines=True)
                if st.button("Discard it", key=f"discard_drafts-{key}"):
                    forget_drafts([d.field for d in stale])
                    st.rerun()
        with st.form(f"truth-{key}", border=False):
            form: dict[str, Any] = {}
            for name in ("reference", "goal", "expected_facts", "reference_topics", "guidelines"):
                spec = SPECS[name]
                height = 160 if name == "reference" else 110
                form[name] = st.text_area(spec.label, values[name], help=spec.help, height=height,
                                          key=f"s-{name}-{key}")  # fmt: skip
            form["tags"] = st.multiselect(
                "Tags", sorted({*values["tags"], *store.sessions.facets(dataset).tags}), default=values["tags"],
                accept_new_options=True, key=f"s-tags-{key}", help=SPECS["tags"].help, format_func=visible,
            )  # fmt: skip
            form["expected_retrieved_context"] = st.text_area(
                SPECS["expected_retrieved_context"].label, values["expected_retrieved_context"],
                help=SPECS["expected_retrieved_context"].help, height=130, key=f"s-erc-{key}",
            )  # fmt: skip
            submitted = st.form_submit_button("Save ground truth", type=PRIMARY, disabled=author is None)
        if submitted and save_form(form, "Ground truth", "truth") is not None:
            st.rerun()  # how it went is said: saved (under the form), an error or a conflict to resolve (above)
        saved_here("truth")

# The tables live in a tab of their own: their grid is the heaviest script a page loads, so the first
# paint of a session (the Truth tab) goes without it.
with tabs[1]:
    if tabs[1].open:
        values = form_values(edited)
        seeds = st.session_state.setdefault("calls_seed", {})
        if st.button("Copy tool calls from the conversation", key=f"copy_calls-{key}", icon=":material/content_copy:",
                     disabled=not view.n_tool_calls):  # fmt: skip
            # (a large session's calls are the whole conversation's: read whole, when asked)
            seeds[key] = calls_from_conversation(session if read.whole else store.sessions.get(pk).session)
        with st.form(f"calls-{key}", border=False):
            calls = seeds.get(key, values["reference_tool_calls"])
            tables: dict[str, Any] = {
                "reference_tool_calls": st.data_editor(
                    pd.DataFrame(calls, columns=["name", "arguments"]),
                    num_rows="dynamic",
                    key=f"s-calls-{key}-{len(seeds.get(key, []))}",
                    column_config={
                        "name": st.column_config.TextColumn("tool", width=118, required=True),
                        "arguments": st.column_config.TextColumn("arguments (JSON object)", width=258),
                    },
                    hide_index=True,
                    row_height=_shared.WRAPPED_ROW,  # (the arguments wrap: three lines; a cell opens whole to edit)
                )
            }
            st.caption(SPECS["reference_tool_calls"].help)
            tables["rubrics"] = st.data_editor(
                pd.DataFrame(values["rubrics"], columns=["name", "description"]),
                num_rows="dynamic",
                key=f"s-rubrics-{key}",
                column_config={
                    "name": st.column_config.TextColumn("rubric", width=118),
                    "description": st.column_config.TextColumn("description", width=258),
                },
                hide_index=True,
                row_height=_shared.WRAPPED_ROW,  # (the description wraps)
            )
            st.caption(SPECS["rubrics"].help)
            stored_tables = st.form_submit_button("Save calls and rubrics", type=PRIMARY, disabled=author is None)
        outcome = save_form(tables, "Calls and rubrics", "calls") if stored_tables else None
        if outcome is not None:
            if outcome:
                seeds.pop(key, None)
            st.rerun()
        saved_here("calls")

with tabs[2]:
    if tabs[2].open:
        st.caption(
            "Each turn's weight in the session's score, under Gaussia's rules. Edit weights beside each turn "
            "below; the effective weights here follow what is typed."
        )


def typed_weights() -> list[float | None]:
    """Every turn's weight: as typed in its (shown) editor, else as saved."""
    return weights_typed(base["weights"], view.turn_count, st.session_state.to_dict(), "t-weight-", f"-{key}")


explained = explain_weights(typed_weights())
with tabs[2]:
    if tabs[2].open:
        (st.warning if explained.falls_back or explained.problem else st.info)(explained.sentence)
        _shared.table(
            weight_rows(view, typed_weights(), explained),
            row_height=_shared.WRAPPED_ROW,  # (the question wraps: three lines of it)
            column_config={
                "turn": st.column_config.NumberColumn(width=44),
                "typed": st.column_config.TextColumn(width=54, help="The weight typed or saved for the turn"),
                "effective": st.column_config.ProgressColumn(format="%.3f", min_value=0, max_value=1, width=96,
                                                             help="Its weight in the session's score"),
                "question": st.column_config.TextColumn(width=218, help="The turn's user message"),
            },
        )  # fmt: skip


def answer_changed(question_id: int, widget: str, turn: int | None = None) -> None:
    """Keep what was chosen or typed as a draft; a refusal is said under the question."""
    try:
        store.answers.save_draft(pk, question_id, st.session_state.get(widget), turn=turn)
        st.session_state.pop(f"q-error-{question_id}-{turn}", None)
    except EvalcoreError as exc:
        st.session_state[f"q-error-{question_id}-{turn}"] = str(exc)


def submit_answers() -> None:
    try:
        store.answers.submit(pk)
        st.session_state["q-submitted"] = ("success", "Your answers are submitted.")
    except EvalcoreError as exc:
        st.session_state["q-submitted"] = ("error", str(exc))


def gold_changed(question_id: int, widget: str, turn: int | None = None) -> None:
    """Settle the question's answer (the widget cleared: unsettle it); a refusal is said under the question."""
    try:
        store.answers.set_gold(pk, question_id, st.session_state.get(widget), turn=turn)
        st.session_state.pop(f"g-error-{question_id}-{turn}", None)
    except EvalcoreError as exc:
        st.session_state[f"g-error-{question_id}-{turn}"] = str(exc)


def question_widget(form: QuestionForm, turn: int | None = None, *, gold: bool = False) -> None:
    q = form.question
    prefix = "g" if gold else "q"
    widget = f"{prefix}-{q.id}-{key}" if turn is None else f"{prefix}-{q.id}-t{turn}-{key}"
    common: dict[str, Any] = {
        "key": widget, "on_change": gold_changed if gold else answer_changed, "args": (q.id, widget, turn),
        "disabled": author is None,
        "help": literal_markdown(q.help) if q.help else None,
    }  # fmt: skip
    label = literal_markdown(form.label) + (" · *draft*" if form.draft else "")
    if form.widget == "buttons":
        st.segmented_control(label, form.options, default=form.value,
                             format_func=lambda o: form.captions.get(o, str(o)), **common)  # fmt: skip
    elif form.widget == "select":
        at = form.options.index(form.value) if form.value in form.options else None
        st.selectbox(label, form.options, index=at, format_func=lambda o: form.captions.get(o, str(o)), **common)
    elif form.widget == "pills":
        st.pills(label, form.options, selection_mode="multi", default=form.value or [], **common)
    elif form.widget == "multiselect":
        st.multiselect(label, form.options, default=form.value or [], **common)
    elif form.widget == "number":
        st.number_input(label, value=form.value, **common)
    else:
        st.text_area(label, value=form.value or "", height=90, **common)
    refused = st.session_state.get(f"{prefix}-error-{q.id}-{turn}")
    if refused:
        st.error(literal_message(refused), icon=":material/error:")


# Read only when shown: the Questions tab, or questions asked of each turn (under the turns).
per_turn = any(q.level == "turn" for q in questions)
qv = questions_view(store, dataset, pk, questions) if asked and (tabs[3].open or per_turn) else None
settled = gold_views(store, pk, questions) if qv is not None and _shared.can("adjudicate") else {}
with tabs[3]:
    if tabs[3].open and qv is not None:
        if qv.guidelines:
            with st.expander("Guidelines", icon=":material/menu_book:"):
                st.markdown(qv.guidelines)  # (Markdown without HTML: Streamlit shows no raw HTML)
        for question_form in qv.forms:
            question_widget(question_form)
        if qv.turn_questions:
            st.caption("Asked of each turn, under it in the transcript: " + literal_name(", ".join(qv.turn_questions)))
        with st.container(horizontal=True, vertical_alignment="center"):
            st.button("Submit answers", key="submit_answers", type=PRIMARY, icon=":material/send:",
                      on_click=submit_answers, disabled=author is None or not qv.can_submit)  # fmt: skip
            st.caption(qv.state)
        outcome = st.session_state.pop("q-submitted", None)
        if outcome is not None:
            (st.success if outcome[0] == "success" else st.error)(literal_message(outcome[1]))
        settle = settled.get(None, [])
        if settle:
            st.markdown("**Settle into gold** · everyone's answers side by side; the gold goes into the labels "
                        "export beside them")  # fmt: skip
            _shared.table(gold_table(settle))
            for gold_choice in settle:
                question_widget(gold_choice.form, gold=True)
        elif qv.others:
            st.caption("Other people's answers")
            _shared.table(qv.others)
        elif qv.hidden:
            st.caption(f"{plural(qv.hidden, 'answer')} of other people hidden: a queue of this dataset is blind.")
    elif tabs[3].open:
        mine = {v.name: v.value for v in store.labels.verdicts(pk) if v.author == author}
        others = [v for v in store.labels.verdicts(pk) if v.author != author]

        def give(name: str, widget: str, scale: dict[Any, float]) -> None:
            value = st.session_state.get(widget)
            try:
                store.labels.set_verdict(pk, name, None if value is None else scale[value])
            except EvalcoreError as exc:
                st.session_state["review_notice"] = ("error", f"The verdict was not saved: {exc}")

        st.caption("Your own judgement, kept beside the judges' scores (the Dashboard compares the two).")
        label = {1.0: "pass", 0.0: "fail"}.get(mine.get(LABEL, -1.0))
        st.segmented_control(
            "Does the assistant pass?", ["pass", "fail"], default=label, key=f"v-label-{key}",
            on_change=give, args=(LABEL, f"v-label-{key}", {"pass": 1.0, "fail": 0.0}), disabled=author is None,
        )  # fmt: skip
        for rubric in session.rubrics or {}:
            if rubric.startswith("score") and rubric.endswith("_description"):
                continue
            name = rubric_verdict(rubric)
            current = int(mine[name]) if name in mine else None
            st.segmented_control(
                f"{literal_name(rubric)} (1–5)", [1, 2, 3, 4, 5], default=current, key=f"v-{rubric}-{key}",
                on_change=give, args=(name, f"v-{rubric}-{key}", {i: float(i) for i in range(1, 6)}),
                disabled=author is None, help=literal_markdown(session.rubrics[rubric]) if session.rubrics else None,
            )  # fmt: skip
        if others:
            st.caption("Other reviewers")
            st.markdown("\n".join(f"- **{literal_name(o.reviewer)}** · {literal_name(o.verdicts)} · {o.at}"
                                   for o in other_verdicts(others)))  # fmt: skip

with tabs[4]:
    if tabs[4].open:
        scores = store.runs.for_session(pk)
        if not scores:
            st.info("No run has scored this session yet.")
        else:
            # Rows three lines high: a metric's name and its reason wrap (the panel is narrow); how each score was made
            # (run, model, tokens, cost) is to the right.
            _shared.table(
                score_rows(scores),
                height=min(38 + _shared.WRAPPED_ROW * len(scores), 38 + _shared.WRAPPED_ROW * 8),
                row_height=_shared.WRAPPED_ROW,
                column_config={
                    "metric": st.column_config.TextColumn(width=110),
                    # (no format: a count shows as 7, a score as 0.8333 — each row may be another metric)
                    "value": st.column_config.NumberColumn(width=58),
                    "reason": st.column_config.TextColumn(width=245),
                    "cost": st.column_config.NumberColumn(format="$%.5f"),
                },
            )

with tabs[5]:
    if tabs[5].open:
        # (a large session without a reference answer of its own: its last turn's, read whole when asked)
        answer = read.final_answer
        reference = (session if read.whole or session.reference is not None
                     else store.sessions.get(pk).session).reference_answer()  # fmt: skip
        if not answer or not reference:
            st.info("The diff needs both a final answer and a reference answer.")
        else:
            diff = word_diff(answer, reference)
            source = "reference answer" if session.reference is not None else "last turn's reference answer"
            st.caption(
                f"The assistant's final answer against the {source}: "
                f"{plural(diff.words_removed, 'word')} only in the answer (struck), "
                f"{plural(diff.words_added, 'word')} only in the reference, similarity {diff.similarity:.0%}."
            )
            with st.container(border=True):
                st.markdown(diff_markdown(diff))

with tabs[6]:
    if tabs[6].open:
        history = store.sessions.history(pk)
        if not history:
            st.info("No edit yet: the session is as it was imported.")
        else:
            # A narrow table (the panel is narrow): the edit picked in it is read in full below it.
            picked = _shared.table(
                history_rows(history),
                height=min(38 + 35 * len(history), 38 + 35 * 10),
                column_config={
                    "edit": st.column_config.NumberColumn(width=44),
                    "at": st.column_config.TextColumn(width=124),
                    "by": st.column_config.TextColumn(width=72),
                    "field": st.column_config.TextColumn(width=146),
                },
                on_select="rerun", selection_mode="single-row", key=f"history-{key}",
            )  # fmt: skip
            rows = picked.selection.rows if picked is not None else []
            newest_first = list(reversed(history))
            if rows and rows[0] < len(newest_first):
                detail = edit_detail(newest_first[rows[0]])
                with st.container(border=True, key="history_detail"):
                    st.markdown(f"**{literal_name(detail.title)}**")
                    st.caption("New value")
                    st.code(detail.new, language=None, wrap_lines=True)
                    st.caption("Value before")
                    st.code(detail.old, language=None, wrap_lines=True)
                    if detail.reason:
                        st.caption(f"Why: {literal_name(detail.reason)}")
            else:
                st.caption("Select an edit to read its new and old values in full.")
            targets = restore_targets(history)
            if not targets:
                st.caption("One edit only: the session is as it was after it (nothing earlier to restore to).")
            else:
                labels = {e.id: edit_label(e) for e in history}
                # (the newest edit is not offered: the session is as it was after it)
                target = st.selectbox(
                    "Restore the session to how it was after", targets,
                    format_func=labels.__getitem__, key=f"restore_to-{key}",
                )  # fmt: skip
                if st.button("Restore", key=f"restore-{key}", disabled=author is None, icon=":material/history:"):
                    try:
                        base["version"] = store.sessions.restore(pk, int(target), base_version=stored.version)
                    except EvalcoreError as exc:
                        st.error(literal_message(f"Not restored: {exc}"))
                    else:
                        rebase(reset=True)
                        said_saved("history", f"Restored to the state after edit #{target}.")
                        st.rerun()
            saved_here("history")

with tabs[7]:
    if tabs[7].open:
        for comment in store.labels.comments(pk):
            where = f" · turn {comment.turn + 1}" if comment.turn is not None else ""
            st.markdown(
                f"**{literal_name(comment.author)}** · {comment.at[:16].replace('T', ' ')}{where}  \n"
                + literal_markdown(comment.body)
            )
        with st.form(f"comment-{key}", clear_on_submit=True, border=False):
            body = st.text_area("Add a comment", key=f"comment_body-{key}", height=80)
            if st.form_submit_button("Comment", disabled=author is None):
                try:
                    store.labels.add_comment(pk, body)
                except EvalcoreError as exc:
                    st.error(literal_message(str(exc)))
                else:
                    st.rerun()

# -- the transcript, a page of turns at a time, each turn with its ground truth under it ------------------


def turn_page(delta: int) -> None:
    """Move ``delta`` pages of turns (0: to the page the navigator chose); the link follows."""
    if delta:
        st.session_state[page_key] = min(pages, max(1, page + delta))
    st.query_params["turn"] = str((st.session_state[page_key] - 1) * TURNS_PER_PAGE + 1)


shown = view.page((page - 1) * TURNS_PER_PAGE, TURNS_PER_PAGE)
with talk_column:
    with st.container(horizontal=True, vertical_alignment="center", key="turn_nav"):
        st.button("Earlier", key="turns_back", disabled=page <= 1, on_click=turn_page, args=(-1,),
                  shortcut=S["turns_back"][1], icon=":material/arrow_upward:")  # fmt: skip
        st.button("Later", key="turns_on", disabled=page >= pages, on_click=turn_page, args=(1,),
                  shortcut=S["turns_on"][1], icon=":material/arrow_downward:")  # fmt: skip
        if shown:
            st.caption(f"Turns {shown[0].index + 1}–{shown[-1].index + 1} of {view.turn_count}")
        if pages > 1:
            st.pagination(pages, key=page_key, on_change=turn_page, args=(0,), max_visible_pages=5)
    if view.retrieved_context:
        chunks = plural(len(view.retrieved_context), "chunk")
        with st.expander(f"Retrieved context · {chunks}", icon=":material/library_books:"):
            for chunk in view.retrieved_context:
                st.markdown(
                    f"{code_span(visible(chunk.doc_uri or 'no uri'))}  \n" + literal_markdown(chunk.content or "")
                )
    if page == 1 and view.preamble:
        render_items(view.preamble, f"pre-{key}")
    if not view.turns:
        st.info("This session has no user message, so no turns to annotate.")

    for turn in shown:
        truth = base["truth"].get(turn.index, turn.truth)
        values = turn_form_values(truth)
        values.update(drafts.fresh(turn.index))
        weight_key = f"t-weight-{turn.index}-{key}"
        with st.container(border=True, key=f"turn-{turn.index}"):
            st.markdown(f"**Turn {turn.index + 1}** of {view.turn_count}")
            render_turn(turn, f"t{turn.index}-{key}")
            marks = [f"effective weight {format_number(explained.effective[turn.index])}"]
            marks += [SPECS[name].label.lower() for name in ("ground_truth", "observation", "expected_tool_usage")
                      if values[name]]  # fmt: skip
            if qv is not None and qv.per_turn:
                forms = qv.turn_forms(turn.index)
                answered = sum(1 for f in forms if f.value is not None)
                with st.expander(f"Questions for turn {turn.index + 1} · {answered} of {len(forms)} answered",
                                 icon=":material/checklist:", key=f"turn-questions-{turn.index}-{key}"):  # fmt: skip
                    for turn_form in forms:
                        question_widget(turn_form, turn.index)
                    turn_gold = settled.get(turn.index, [])
                    if turn_gold:
                        st.markdown("**Settle into gold**")
                        _shared.table(gold_table(turn_gold))
                        for gold_choice in turn_gold:
                            question_widget(gold_choice.form, turn.index, gold=True)
            # Keyed, so that its label can follow the typed weight without closing it.
            editor = st.expander(
                f"Ground truth for turn {turn.index + 1} · " + ", ".join(marks), icon=":material/edit_note:",
                key=f"turn-truth-{turn.index}-{key}",
            )  # fmt: skip
            with editor:
                st.number_input(
                    "Weight", value=values["weight"], min_value=0.0, step=0.05, format="%.3f", key=weight_key,
                    placeholder="not set", help=SPECS["weight"].help, persist_state="session",
                )  # fmt: skip
                st.caption(
                    f"Effective weight **{format_number(explained.effective[turn.index])}**. {explained.sentence}"
                )
                with st.form(f"turn-form-{turn.index}-{key}", border=False):
                    tform: dict[str, Any] = {
                        "ground_truth": st.text_area("Reference answer for this turn", values["ground_truth"],
                                                     key=f"t-gt-{turn.index}-{key}", height=100,
                                                     help=SPECS["ground_truth"].help),
                        "observation": st.text_area("Observation", values["observation"],
                                                    key=f"t-obs-{turn.index}-{key}", height=68,
                                                    help=SPECS["observation"].help),
                        "expected_tool_usage": st.text_area("Expected tool usage (JSON)", values["expected_tool_usage"],
                                                            key=f"t-etu-{turn.index}-{key}", height=120,
                                                            help=SPECS["expected_tool_usage"].help),
                        "qa_id": st.text_input("Turn id (qa_id)", values["qa_id"], key=f"t-qa-{turn.index}-{key}",
                                               help=SPECS["qa_id"].help),
                    }  # fmt: skip
                    done = st.form_submit_button("Save turn", type=PRIMARY, disabled=author is None)
                if done:
                    tform["weight"] = st.session_state.get(weight_key)
                    result = turn_changes(truth, tform)
                    if result.problems:
                        st.error("Nothing was saved; fix these first:\n\n" + problems_text(result.problems))
                    elif not result.changes:
                        st.info("Nothing changed.")
                    else:
                        save([(turn.index, result.changes)], f"Turn {turn.index + 1}", f"turn-{turn.index}")
                        st.rerun()  # the header says how it went: saved, an error, or a conflict
                saved_here(f"turn-{turn.index}")
                if conflict is not None and conflict_turn == turn.index:
                    conflict_box(conflict, conflict_said)  # said here, where its Save was clicked
                refusal = st.session_state.get("turn_refusal")
                if refusal is not None and refusal[0] == turn.index:
                    st.session_state.pop("turn_refusal")
                    st.error(literal_message(refusal[1]), icon=":material/error:")
    # A deep link's turn (``turn=N``), drawn on this page of turns: scrolled to (last, so that nothing above moves).
    scroll_turn = st.session_state.pop("turn_scroll", None)
    if scroll_turn is not None and any(turn.index == scroll_turn for turn in shown):
        _shared.scroll_to(f"turn-{scroll_turn}")
    elif conflict is not None and conflict.pop("scroll", False) and conflict_turn is not None:
        _shared.scroll_to("conflict_box")  # a turn's refused save: its box, far below the notice at the top
saved_here("")  # (a "saved" of another session, or said long enough: dropped)

_shared.guard_typing()  # typed text is never lost to a shortcut (last: the element takes no room above anything)

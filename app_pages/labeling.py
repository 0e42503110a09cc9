"""Labeling: the dataset's queues, where each stands and a way into them; for admins, the questions, the guidelines
and the queues' settings."""

import streamlit as st

from app_pages import _shared
from evalcore.errors import EvalcoreError
from evalcore.store.questions import KINDS, LEVELS
from evalcore.store.queues import MAX_OVERLAP
from evalcore.views.labeling import (
    KIND_NOTES,
    agreement_rows,
    disagreement_rows,
    question_def,
    question_form,
    question_rows,
    queue_rows,
    reviewer_rows,
)
from evalcore.views.review.questions import has_verdict_questions
from evalcore.views.text import literal_message, literal_name

store = _shared.store()
dataset = _shared.dataset()
st.title("Labeling")
if dataset is None:
    st.info("No dataset yet: import one on the Datasets page.", icon=":material/info:")
    st.stop()
st.caption(
    "Questions people answer about every session, and queues that hand each person the next session to do — "
    "as many people on each as the queue asks. Answers are kept as drafts until submitted on Review."
)
if done := st.session_state.pop("labeling_done", None):
    st.success(literal_message(done), icon=":material/check_circle:")

admin = _shared.can("manage_datasets")
queues = store.queues.of(dataset)


def work_on(queue_id: int) -> None:
    """Take the next item of the queue and open it on Review (in the queue)."""
    try:
        pk = store.queues.next(queue_id)
    except EvalcoreError as exc:  # a refusal (not a member, a viewer) said here, where the button is
        st.session_state["labeling_refused"] = str(exc)
        return
    if pk is None:
        st.session_state["labeling_done"] = "Nothing is left for you in this queue: every item is done or taken."
        return
    st.session_state["labeling_go"] = (store.sessions.get(pk).link, queue_id)


tabs = st.tabs(["Queues", "Questions", "Guidelines", "Agreement"] if admin else ["Queues"], key="labeling_tab",
               on_change="rerun")  # fmt: skip

with tabs[0]:
    if not queues:
        st.info("No queue for this dataset yet." + (" Make one below." if admin else " An admin makes them."))
    else:
        progress = [(q, store.queues.progress(q.id)) for q in queues]
        _shared.table(
            queue_rows(progress, store.user.name),
            column_config={"share": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1)},
        )
        by_id = {q.id: q for q in queues}
        with st.container(horizontal=True, vertical_alignment="bottom"):
            chosen = st.selectbox("Queue", list(by_id), format_func=lambda i: by_id[i].name, key="work_queue")
            st.button("Start labeling", type="primary", icon=":material/play_arrow:", key="work",
                      on_click=work_on, args=(chosen,), disabled=not _shared.can("review"))  # fmt: skip
        if refused := st.session_state.pop("labeling_refused", None):
            st.error(literal_message(refused), icon=":material/block:")
        if go := st.session_state.pop("labeling_go", None):
            st.switch_page(_shared.PAGES["review"], query_params={"dataset": dataset, "session": go[0],
                                                                  "queue": str(go[1])})  # fmt: skip
        if admin and chosen is not None:
            queue = by_id[chosen]
            with st.expander(f"People in {literal_name(queue.name)}"):
                _shared.table(reviewer_rows(next(p for q, p in progress if q.id == queue.id)))
            with st.form("queue_settings", border=True):
                st.markdown(f"**Settings of {literal_name(queue.name)}** (they apply once saved; work done stays)")
                c = st.columns([1, 1, 1, 3])
                overlap = c[0].number_input("People per item", 1, MAX_OVERLAP, queue.min_reviews, key="set_overlap")
                lease = c[1].number_input("Lease (minutes)", 1, 7 * 24 * 60, max(1, queue.lease_seconds // 60),
                                          key="set_lease")  # fmt: skip
                blind = c[2].toggle("Blind", value=queue.blind, key="set_blind")
                members = c[3].multiselect("Members (none: every reviewer)", [u.name for u in store.users.all()],
                                           default=list(queue.members), key="set_members")  # fmt: skip
                refilter = st.checkbox("Take the Sessions page's filter again", key="set_refilter")
                left, right = st.columns([1, 1])
                if left.form_submit_button("Save settings", type="primary"):
                    with _shared.saving("The queue"):
                        store.queues.update(
                            queue.id, min_reviews=int(overlap), lease_seconds=int(lease) * 60, blind=blind,
                            members=members, filters=_shared.browse_state()["filters"] if refilter else None,
                        )  # fmt: skip
                        st.session_state["labeling_done"] = f"Queue {queue.name} changed."
                        st.rerun()
                if right.form_submit_button("Delete the queue", icon=":material/delete:"):
                    with _shared.saving("The queue"):
                        store.queues.delete(queue.id)
                        st.session_state["labeling_done"] = f"Queue {queue.name} deleted (its answers stay)."
                        st.rerun()
    if admin:
        with st.form("new_queue", clear_on_submit=True, border=True):
            selected = store.sessions.count(dataset, _shared.browse_state()["filters"])
            st.markdown(f"**New queue** over the {selected:,} sessions the Sessions page's filter selects")
            c = st.columns([2, 1, 1, 1])
            name = c[0].text_input("Name", placeholder="first pass", key="new_queue_name")
            overlap = c[1].number_input("People per item", 1, MAX_OVERLAP, 1, key="new_overlap")
            lease = c[2].number_input("Lease (minutes)", 1, 7 * 24 * 60, 5, key="new_lease")
            blind = c[3].toggle("Blind", key="new_blind", help="Reviewers do not see each other's answers")
            members = st.multiselect("Members (none: every reviewer)", [u.name for u in store.users.all()],
                                     key="new_members")  # fmt: skip
            if st.form_submit_button("Make the queue", type="primary"):
                with _shared.saving("The queue"):
                    made = store.queues.create(
                        dataset, name, filters=_shared.browse_state()["filters"], min_reviews=int(overlap),
                        lease_seconds=int(lease) * 60, blind=blind, members=members,
                    )  # fmt: skip
                    st.session_state["labeling_done"] = f"Queue {made.name} made."
                    st.rerun()

if admin:
    with tabs[1]:
        questions = store.questions.of(dataset, retired=True)
        if questions:
            _shared.table(question_rows(questions))
            if has_verdict_questions(questions):
                st.caption(
                    "A reviewer's pass / fail and rubric verdicts are answers to the questions they stand for (made "
                    "when first given): Review asks them on its Verdict tab until the dataset has questions of its "
                    "own, then with those. The Dashboard compares the judges with them, and with the gold where "
                    "settled."
                )
        else:
            st.info("No question yet: Review asks the pass / fail and rubric verdicts until you add one.")
        by_qid = {q.id: q for q in questions}
        editing = st.selectbox("Question", [None, *by_qid], key="question_pick",
                               format_func=lambda i: "A new question" if i is None else by_qid[i].name)  # fmt: skip
        current = question_form(by_qid[editing]) if editing is not None else {}
        with st.form(f"question_{editing}", border=True):
            c = st.columns([3, 1.4, 1.4, 1])
            form = {
                "name": c[0].text_input("Name", value=current.get("name", ""), key=f"q_name_{editing}"),
                "kind": c[1].selectbox("Kind", KINDS, index=KINDS.index(current.get("kind", "choice")),
                                       format_func=lambda k: f"{k}: {KIND_NOTES[k]}", key=f"q_kind_{editing}",
                                       disabled=editing is not None),
                "level": c[2].selectbox("Asked of", LEVELS, index=LEVELS.index(current.get("level", "session")),
                                        format_func=lambda v: "the session" if v == "session" else "each turn",
                                        key=f"q_level_{editing}", disabled=editing is not None),
                "required": c[3].checkbox("Required", value=current.get("required", False), key=f"q_req_{editing}"),
            }  # fmt: skip
            d = st.columns([2, 1, 1, 2])
            form["options"] = d[0].text_area("Options (choice, multi): one per line", value=current.get("options", ""),
                                             height=100, key=f"q_options_{editing}")  # fmt: skip
            form["min"] = d[1].text_input(
                "Lowest (rating, number)", value=current.get("min", ""), key=f"q_min_{editing}"
            )
            form["max"] = d[2].text_input("Highest", value=current.get("max", ""), key=f"q_max_{editing}")
            form["labels"] = d[3].text_area("Named points (rating): 1 = poor", value=current.get("labels", ""),
                                            height=100, key=f"q_labels_{editing}")  # fmt: skip
            form["help"] = st.text_input("Help shown beside it", value=current.get("help", ""), key=f"q_help_{editing}")
            if editing is not None:
                form["kind"], form["level"] = current["kind"], current["level"]
            if st.form_submit_button("Add the question" if editing is None else "Save the question", type="primary"):
                with _shared.saving("The question"):
                    if editing is None:
                        made_q = store.questions.define(dataset, question_def(form))
                        st.session_state["labeling_done"] = f"Question {made_q.name} added."
                        for field in ("name", "kind", "level", "req", "options", "min", "max", "labels", "help"):
                            del st.session_state[f"q_{field}_None"]  # (an empty form for the next question)
                    else:
                        saved = store.questions.edit(editing, question_def(form))
                        st.session_state["labeling_done"] = f"Question {saved.name} saved (version {saved.version})."
                    st.rerun()
        if editing is not None:
            q = by_qid[editing]
            with st.container(horizontal=True):
                if st.button("Restore" if q.retired else "Retire", key="q_retire",
                             help="A retired question is asked no more; its answers stay"):  # fmt: skip
                    with _shared.saving("The question"):
                        store.questions.retire(q.id, not q.retired)
                        st.rerun()
                for label, offset in (("Move up", -1), ("Move down", 1)):
                    if st.button(label, key=f"q_move_{offset}"):
                        with _shared.saving("The order"):
                            store.questions.move(q.id, offset)
                            st.rerun()

    with tabs[2], st.form("guidelines", border=False):
        text = st.text_area("Guidelines (Markdown), shown on Review beside the questions",
                            value=store.questions.guidelines(dataset), height=260, key="guidelines_text")  # fmt: skip
        if st.form_submit_button("Save the guidelines", type="primary"):
            with _shared.saving("The guidelines"):
                store.questions.set_guidelines(dataset, text)
                st.session_state["labeling_done"] = "The guidelines are saved."
                st.rerun()

    with tabs[3]:
        if tabs[3].open:
            agreement = agreement_rows(store, dataset)
            if not agreement:
                st.info("No submitted answers to compare yet (text answers are not compared).")
            else:
                st.caption(
                    "How far the reviewers' submitted answers agree, per question: Krippendorff's alpha (1 perfect, "
                    "0 as by chance, below 0 systematic disagreement) at the level that fits the question, the share "
                    "of answers alike, and Cohen's kappa of every two reviewers on the items both answered (with "
                    "that count). A figure that cannot be computed says why."
                )
                figures = {
                    "alpha": st.column_config.NumberColumn(format="%.3f"),
                    "percent": st.column_config.NumberColumn(format="percent"),
                }
                _shared.table(agreement, column_config=figures)
                differing = disagreement_rows(store, dataset)
                st.markdown(f"**Disagreements** · {len(differing):,} (open one to settle it into gold on Review)")
                if differing:
                    _shared.table(differing, column_config={
                        "review": st.column_config.LinkColumn("Open", display_text="Review"),
                    })  # fmt: skip

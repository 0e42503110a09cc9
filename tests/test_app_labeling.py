"""The Labeling page and Review in a queue (AppTest): an admin defines questions, guidelines and a queue in the page's
forms; reviewers start labeling, submit and skip their way through the queue with Review's queue bar saying where
they are; a refusal is said where the button is."""

from __future__ import annotations

from pathlib import Path

from apptest_util import (  # noqa: F401 (fixtures)
    app,
    db_fixture,
    open_page,
    person,
    plain_texts,
    run,
    store_fixture,
    template_db_fixture,
    texts,
)
from dbutil import as_user
from streamlit.testing.v1 import AppTest

from evalcore.store import Store
from evalcore.store.questions import QuestionDef


def _labeling(who: str, role: str = "reviewer") -> AppTest:
    at = app(dataset="review")
    person(at, who, role)
    return open_page(run(at), "labeling")


def _submit(at: AppTest, label: str) -> AppTest:
    [button] = [b for b in at.button if b.label == label]
    button.click()
    return run(at)


def test_an_admin_defines_questions_guidelines_and_a_queue(db: Path, store: Store) -> None:
    at = _labeling("ada", "admin")
    assert [t.label for t in at.tabs] == ["Queues", "Questions", "Guidelines", "Agreement"]
    assert any("No queue for this dataset yet" in i for i in plain_texts(at, "info"))

    at.text_input(key="q_name_None").input("Resolved?")
    at.text_area(key="q_options_None").input("yes\nno")
    at.checkbox(key="q_req_None").check()
    _submit(at, "Add the question")
    assert "Question Resolved? added." in plain_texts(at, "success")
    (q,) = store.questions.of("review")
    assert (q.name, q.kind, q.options, q.required) == ("Resolved?", "choice", ["yes", "no"], True)

    at.selectbox(key="q_kind_None").set_value("rating")
    at.text_input(key="q_name_None").input("Quality")
    at.text_input(key="q_min_None").input("0")
    at.text_input(key="q_max_None").input("4")
    at.text_area(key="q_labels_None").input("0 = useless\n4 = perfect")
    _submit(at, "Add the question")
    quality = store.questions.find("review", "Quality")
    assert quality.spec == {"min": 0, "max": 4, "labels": {"0": "useless", "4": "perfect"}}
    # Added: the form is empty again for the next question (it kept the last one's name and options).
    assert (at.text_input(key="q_name_None").value, at.selectbox(key="q_kind_None").value) == ("", "choice")
    assert at.text_area(key="q_labels_None").value == "" and at.text_input(key="q_max_None").value == ""

    at.selectbox(key="q_kind_None").set_value("rating")
    at.text_input(key="q_name_None").input("Broken")
    at.text_input(key="q_min_None").input("lots")
    _submit(at, "Add the question")
    assert any("the lowest value: give a number (got 'lots')" in e for e in plain_texts(at, "error"))
    assert at.text_input(key="q_name_None").value == "Broken"  # refused: what was typed stays

    at.selectbox(key="question_pick").set_value(q.id)
    run(at)
    assert at.text_area(key=f"q_options_{q.id}").value == "yes\nno"
    at.text_area(key=f"q_options_{q.id}").input("yes\nno\npartly")
    _submit(at, "Save the question")
    assert "Question Resolved? saved (version 2)." in plain_texts(at, "success")
    _submit(at, "Retire")
    assert store.questions.get(q.id).retired
    _submit(at, "Restore")
    assert not store.questions.get(q.id).retired
    table = at.dataframe[0].value
    assert list(table["name"]) == ["Resolved?", "Quality"] and list(table["version"]) == [2, 1]

    at.text_area(key="guidelines_text").input("Be **strict**.")
    _submit(at, "Save the guidelines")
    assert store.questions.guidelines("review") == "Be **strict**."

    at.text_input(key="new_queue_name").input("first pass")
    at.number_input(key="new_overlap").set_value(2)
    _submit(at, "Make the queue")
    (queue,) = store.queues.of("review")
    assert (queue.name, queue.min_reviews, queue.lease_seconds, len(store.queues.items(queue.id))) == (
        "first pass", 2, 300, 3
    )  # fmt: skip
    rows = at.dataframe[0].value
    assert list(rows["name"]) == ["first pass"] and list(rows["items"]) == [3]
    at.number_input(key="set_overlap").set_value(1)
    _submit(at, "Save settings")
    assert store.queues.get(queue.id).min_reviews == 1


def test_reviewers_work_through_a_queue_on_review(db: Path, store: Store) -> None:
    admin = as_user(store, "ada", "admin")
    q = admin.questions.define("review", QuestionDef("Resolved?", "choice", options=("yes", "no"), required=True))
    queue = admin.queues.create("review", "first pass", min_reviews=1)
    items = store.queues.items(queue.id)

    at = _labeling("ann")
    assert [t.label for t in at.tabs] == ["Queues"]  # a reviewer works the queues; an admin defines them
    _submit(at, "Start labeling")
    assert at.query_params["queue"] == [str(queue.id)] or at.query_params["queue"] == str(queue.id)
    assert any("**Queue first pass** · item 1 of 3 · you have submitted 0" in m for m in texts(at, "markdown"))
    # One primary action on the screen, the queue's: the page's other actions are secondary in a queue.
    assert [b.label for b in at.button if b.proto.type == "primary"] == ["Submit & next"]
    at.session_state["review_tab"] = "Questions"
    run(at)
    assert [b.label for b in at.button if b.proto.type == "primary"] == ["Submit & next"]
    assert at.button(key="submit_answers").proto.type == "secondary"

    _submit(at, "Submit & next")  # the required question is not answered: said in the queue bar
    assert any("Not submitted: answer the required question 'Resolved?'" in e for e in plain_texts(at, "error"))
    ann = store.as_user(store.users.find("ann"))
    ann.answers.save_draft(items[0], q.id, "yes")
    _submit(at, "Submit & next")
    assert any("item 2 of 3 · you have submitted 1" in m for m in texts(at, "markdown"))
    _submit(at, "Skip")
    assert any("item 3 of 3 · you have submitted 1" in m for m in texts(at, "markdown"))
    ann.answers.save_draft(items[2], q.id, "no")
    _submit(at, "Submit & next")
    assert "Nothing is left for you in this queue: thank you." in plain_texts(at, "success")
    assert [s.author for pk in items for s in store.answers.submissions(pk)] == ["ann", "ann"]

    bob = _labeling("bob")  # overlap 1: only the skipped item is left
    _submit(bob, "Start labeling")
    assert any("item 2 of 3" in m for m in texts(bob, "markdown"))


def test_refusals_are_said_beside_the_button(db: Path, store: Store) -> None:
    admin = as_user(store, "ada", "admin")
    as_user(store, "ann", "reviewer")
    admin.queues.create("review", "ann only", members=["ann"])
    bob = _labeling("bob")
    _submit(bob, "Start labeling")
    assert any("you are not a member of the queue 'ann only'" in e for e in plain_texts(bob, "error"))
    viewer = _labeling("vic", "viewer")
    assert [b for b in viewer.button if b.label == "Start labeling"][0].disabled


def test_the_agreement_tab(db: Path, store: Store) -> None:
    admin = as_user(store, "ada", "admin")
    q = admin.questions.define("review", QuestionDef("Resolved?", "choice", options=("yes", "no")))
    pks = store.sessions.pks("review")
    for name, answers in (("ann", ("yes", "no")), ("bob", ("yes", "yes"))):
        reviewer = as_user(store, name, "reviewer")
        for pk, value in zip(pks, answers, strict=False):
            reviewer.answers.save_draft(pk, q.id, value)
            reviewer.answers.submit(pk)
    at = _labeling("ada", "admin")
    at.session_state["labeling_tab"] = "Agreement"
    run(at)
    figures, differing = (frame.value for frame in at.dataframe[-2:])
    assert list(figures["question"]) == ["Resolved?"] and list(figures["items"]) == [2]
    assert list(differing["answers"]) == ["ann: no · bob: yes"]
    assert differing["review"][0].startswith("/review?dataset=review&session=")
    assert "**Disagreements** · 1 (open one to settle it into gold on Review)" in texts(at, "markdown")


def test_the_verdicts_are_questions_of_the_programme(db: Path, store: Store) -> None:
    (pk, *_) = store.sessions.pks("review")
    at = _labeling("ada", "admin")
    at.session_state["labeling_tab"] = "Questions"
    run(at)
    assert "No question yet: Review asks the pass / fail and rubric verdicts until you add one." in plain_texts(
        at, "info"
    )
    as_user(store, "ann", "reviewer").labels.set_verdict(pk, "label", 1)  # an answer to the question it stands for
    run(at)
    assert list(at.dataframe[0].value["name"]) == ["Pass / fail"]
    assert any("verdicts are answers to the questions they stand for" in c for c in texts(at, "caption"))
    assert [(a.author, a.value) for a in store.answers.of_dataset("review")] == [("ann", "pass")]

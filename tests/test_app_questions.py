"""Review's Questions tab (AppTest): a dataset's own questions in place of the verdicts, drafts kept as they are
chosen, a submission refused while a required question is unanswered (said under the button), the guidelines, and
other people's answers — hidden while a queue of the dataset is blind."""

from __future__ import annotations

from pathlib import Path

from apptest_util import (  # noqa: F401 (fixtures)
    app,
    by_prefix,
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


def _questions(store: Store) -> dict[str, int]:
    admin = as_user(store, "ada", "admin")
    made = [
        admin.questions.define("review", QuestionDef("Resolved?", "choice", options=("yes", "no"), required=True,
                                                     help="Did the user get what they asked for?")),
        admin.questions.define("review", QuestionDef("Issues", "multi", options=("tone", "wrong tool"))),
        admin.questions.define("review", QuestionDef("Quality", "rating", labels={"1": "poor", "5": "great"})),
        admin.questions.define("review", QuestionDef("Why", "text")),
        admin.questions.define("review", QuestionDef("Per turn", "text", level="turn")),
    ]  # fmt: skip
    admin.questions.set_guidelines("review", "## Labeling\n\nA session is *resolved* when the order was found.")
    return {q.name: q.id for q in made}


def _questions_tab(reviewer: str) -> AppTest:
    at = app(dataset="review", session="r-tools")
    person(at, reviewer)
    at = open_page(run(at), "review")
    at.session_state["review_tab"] = "Questions"
    return run(at)


def test_answers_are_drafts_until_submitted(db: Path, store: Store) -> None:
    ids = _questions(store)
    pk = store.sessions.find("review", "r-tools")
    at = _questions_tab("ann")
    assert "Guidelines" in [e.label for e in at.expander]
    assert any("A session is *resolved* when" in m for m in texts(at, "markdown"))
    assert [b.label for b in at.segmented_control] == ["Resolved\\? \\*", "Quality"]
    assert at.segmented_control[1].options == ["1 · poor", "2", "3", "4", "5 · great"]
    assert "Per turn" in " ".join(texts(at, "caption"))
    assert at.button(key="submit_answers").disabled  # nothing to submit yet

    at.segmented_control[1].set_value(4)
    run(at)
    ann = store.as_user(store.users.find("ann"))
    assert [(a.question_id, a.draft, a.submitted) for a in ann.answers.mine(pk)] == [(ids["Quality"], 4, False)]
    assert "Quality · *draft*" in [b.label for b in at.segmented_control]
    assert any(c.startswith("Draft: 1 answer") for c in texts(at, "caption"))

    at.button(key="submit_answers").click()
    run(at)
    assert any("answer the required question 'Resolved?' before submitting" in e for e in plain_texts(at, "error"))
    assert store.answers.submissions(pk) == []

    at.segmented_control[0].set_value("yes")
    by_prefix(at.pills, f"q-{ids['Issues']}-").set_value(["wrong tool"])
    by_prefix(at.text_area, f"q-{ids['Why']}-").input("<b>found</b> it")
    run(at)
    at.button(key="submit_answers").click()
    run(at)
    assert "Your answers are submitted." in plain_texts(at, "success")
    assert [(a.question_id, a.value) for a in store.answers.of_session(pk)] == [
        (ids["Resolved?"], "yes"), (ids["Issues"], ["wrong tool"]), (ids["Quality"], 4), (ids["Why"], "<b>found</b> it")
    ]  # fmt: skip
    assert any(c.startswith("Submitted ") for c in texts(at, "caption"))

    # Bob sees Ann's answers (as text) beside his own empty form; a blind queue hides them from him, not from an admin.
    bob = _questions_tab("bob")
    assert bob.segmented_control[0].value is None
    table = bob.dataframe[0].value
    assert set(table["version"]) == {"v1"}  # the version of the question each answered
    assert set(zip(table["question"], table["person"], table["answer"], strict=True)) == {
        ("Resolved?", "ann", "yes"), ("Issues", "ann", "wrong tool"), ("Quality", "ann", "4"),
        ("Why", "ann", "<b>found</b> it"),
    }  # fmt: skip
    as_user(store, "ada", "admin").queues.create("review", "blind pass", blind=True, min_reviews=2)
    bob = _questions_tab("bob")
    assert not bob.dataframe and any("4 answers of other people hidden" in c for c in texts(bob, "caption"))
    assert _questions_tab("ada").dataframe  # an adjudicator sees them


def test_a_viewer_sees_the_questions_but_cannot_answer(db: Path, store: Store) -> None:
    _questions(store)
    at = app(dataset="review", session="r-tools")
    person(at, "vic", "viewer")
    at = open_page(run(at), "review")
    at.session_state["review_tab"] = "Questions"
    run(at)
    assert all(w.disabled for w in at.segmented_control) and at.button(key="submit_answers").disabled


def test_without_questions_the_verdicts_stay(db: Path) -> None:
    at = _questions_tab("ann")  # (no question defined: the tab is still the verdicts')
    at.session_state["review_tab"] = "Verdict"
    run(at)
    assert by_prefix(at.segmented_control, "v-label-")


def test_a_question_of_each_turn_is_asked_under_the_turn(db: Path, store: Store) -> None:
    ids = _questions(store)
    pk = store.sessions.find("review", "r-tools")
    at = _questions_tab("ann")
    assert [e.label for e in at.expander if e.label.startswith("Questions for turn")] == [
        f"Questions for turn {n} · 0 of 1 answered" for n in (1, 2, 3, 4)
    ]  # the page of turns shown
    by_prefix(at.text_area, f"q-{ids['Per turn']}-t1-").input("the lookup was right")
    run(at)
    ann = store.as_user(store.users.find("ann"))
    assert [(a.turn, a.draft) for a in ann.answers.mine(pk)] == [(1, "the lookup was right")]
    assert "Questions for turn 2 · 1 of 1 answered" in [e.label for e in at.expander]


def test_an_adjudicator_settles_a_disagreement(db: Path, store: Store) -> None:
    ids = _questions(store)
    pk = store.sessions.find("review", "r-tools")
    for name, value in (("ann", "yes"), ("bob", "no"), ("cy", "yes")):
        reviewer = as_user(store, name, "reviewer")
        reviewer.answers.save_draft(pk, ids["Resolved?"], value)
        reviewer.answers.save_draft(pk, ids["Quality"], 3)
        reviewer.answers.submit(pk)
    ada = _questions_tab("ada")
    table = ada.dataframe[0].value
    assert list(table.columns) == ["question", "ann", "bob", "cy", "agreed", "gold"]
    assert [list(r) for r in table.itertuples(index=False)] == [
        ["Resolved?", "yes", "no", "yes", "no", ""],  # (they differ: said so)
        ["Quality", "3", "3", "3", "yes", ""],
    ]
    by_prefix(ada.segmented_control, f"g-{ids['Resolved?']}-").set_value("yes")
    run(ada)
    (gold,) = store.answers.gold(pk)
    assert (gold.question_id, gold.value, gold.author) == (ids["Resolved?"], "yes", "ada")
    assert ada.dataframe[0].value["gold"][0] == "yes (ada)"
    assert not [w for w in _questions_tab("ann").segmented_control if w.key.startswith("g-")]  # a reviewer's is not


def test_an_adjudicator_settles_a_question_of_a_turn(db: Path, store: Store) -> None:
    ids = _questions(store)
    pk = store.sessions.find("review", "r-tools")
    for name, value in (("ann", "right lookup"), ("bob", "wrong lookup")):
        as_user(store, name, "reviewer").answers.save_draft(pk, ids["Per turn"], value, turn=1)
        as_user(store, name, "reviewer").answers.save_draft(pk, ids["Resolved?"], "yes")
    for name in ("ann", "bob"):
        as_user(store, name, "reviewer").answers.submit(pk)
    ada = _questions_tab("ada")
    by_prefix(ada.text_area, f"g-{ids['Per turn']}-t1-").input("right lookup")
    run(ada)
    assert [(g.turn, g.question_id, g.value, g.author) for g in store.answers.gold(pk)] == [
        (1, ids["Per turn"], "right lookup", "ada")
    ]
    assert not [w for w in ada.text_area if w.key.startswith(f"g-{ids['Per turn']}-t0-")]  # nothing to settle there

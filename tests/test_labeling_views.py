"""What the Labeling page shows, computed: questions as typed in its form, its tables, agreement per question (worked
by hand) and the disagreements with their links to Review."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dbutil import as_user
from formats_util import write_jsonl

from evalcore.errors import UsageError
from evalcore.importing import import_file
from evalcore.store import Store, open_store
from evalcore.store.questions import QuestionDef
from evalcore.views.labeling import (
    agreement_rows,
    disagreement_rows,
    question_def,
    question_form,
    question_rows,
    queue_rows,
)


@pytest.fixture
def store(store_url: str, tmp_path: Path) -> Iterator[Store]:
    with open_store(store_url) as s:
        records = [{"schema_version": 1, "session_id": f"s{i}", "messages": [
            {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]} for i in range(1, 4)]  # fmt: skip
        import_file(as_user(s, "ada"), write_jsonl(tmp_path / "d.jsonl", records), "d")
        yield s


def test_a_question_as_typed_in_the_form(store: Store) -> None:
    typed = {"name": " Quality ", "kind": "rating", "level": "session", "min": "0", "max": "4",
             "labels": "0 = useless\n4 = perfect", "required": True, "help": "How good?"}  # fmt: skip
    made = as_user(store, "ada").questions.define("d", question_def(typed))
    labels = {"0": "useless", "4": "perfect"}
    assert (made.name, made.spec, made.required) == ("Quality", {"min": 0, "max": 4, "labels": labels}, True)
    again = question_form(made)
    assert (again["min"], again["max"], again["labels"]) == ("0", "4", "0 = useless\n4 = perfect")
    assert question_def(again) == question_def({**typed, "name": "Quality"})
    choice = question_def({"name": "Resolved?", "kind": "choice", "options": "yes, no\npartly"})
    assert choice.options == ("yes", "no", "partly")
    for bad, message in (
        ({"name": "x", "kind": "colour"}, "choose a kind"),
        ({"name": "x", "kind": "text", "level": "page"}, "choose what it is asked of"),
        ({"name": "x", "kind": "number", "min": "lots"}, "the lowest value: give a number"),
        ({"name": "x", "kind": "number", "max": "inf"}, "finite"),
        ({"name": "x", "kind": "rating", "labels": "1 poor"}, "POINT = LABEL"),
    ):
        with pytest.raises(UsageError, match=message):
            question_def(bad)
    rows = question_rows(store.questions.of("d", retired=True))
    assert [(r.name, r.kind, r.asks, r.required, r.version) for r in rows] == [
        ("Quality", "rating", "0–4 (0 useless, 4 perfect)", "yes", 1)
    ]


def test_agreement_and_disagreements_worked_by_hand(store: Store) -> None:
    admin = as_user(store, "ada")
    resolved = admin.questions.define("d", QuestionDef("Resolved?", "choice", options=("yes", "no")))
    issues = admin.questions.define("d", QuestionDef("Issues", "multi", options=("tone", "tool")))
    admin.questions.define("d", QuestionDef("Why", "text"))
    s1, s2, s3 = store.sessions.pks("d")
    for name, answers in (("ann", ("yes", "yes", "no")), ("bob", ("yes", "no", "no"))):
        reviewer = as_user(store, name, "reviewer")
        for pk, value in zip((s1, s2, s3), answers, strict=True):
            reviewer.answers.save_draft(pk, resolved.id, value)
            reviewer.answers.submit(pk)
    as_user(store, "ann", "reviewer").answers.save_draft(s1, issues.id, ["tone"])
    as_user(store, "ann", "reviewer").answers.submit(s1)

    rows = {r.question: r for r in agreement_rows(store, "d")}
    assert list(rows) == ["Resolved?", "Issues: tone", "Issues: tool"]  # text answers are not compared
    r = rows["Resolved?"]
    # Coincidences: yes-yes 2, yes-no 1, no-yes 1, no-no 2 (n 6); D_o = 2/6, D_e = 2*3*3/(6*5) = 0.6.
    assert r.alpha == pytest.approx(1 - (2 / 6) / 0.6, abs=1e-3) and r.alpha == 0.444
    assert (r.percent, r.items, r.reviewers, r.level) == (0.667, 3, 2, "nominal")
    assert r.pairs == "ann–bob 0.40 (3)"  # kappa: po 2/3, pe 4/9 -> 0.4
    assert rows["Issues: tone"].alpha is None and rows["Issues: tone"].note  # one reviewer: undefined, and why

    (d,) = disagreement_rows(store, "d")
    assert (d.session, d.question, d.answers) == ("s2", "Resolved?", "ann: yes · bob: no")
    assert d.review == "/review?dataset=d&session=s2"


def test_queue_rows(store: Store) -> None:
    admin = as_user(store, "ada")
    queue = admin.queues.create("d", "pass", min_reviews=2, lease_seconds=3600, blind=True)
    (row,) = queue_rows([(queue, store.queues.progress(queue.id))], "ann")
    assert (row.name, row.items, row.complete, row.overlap, row.lease, row.mode, row.members, row.mine) == (
        "pass", 3, 0, 2, "1 h", "blind", "every reviewer", 0
    )  # fmt: skip


def test_a_rubrics_verdict_is_asked_only_of_the_sessions_with_that_rubric(store: Store) -> None:
    from evalcore.schema import Session
    from evalcore.store.labels import LABEL, rubric_verdict
    from evalcore.views.review.questions import asked_of, has_own_questions, has_verdict_questions

    pk = store.sessions.pks("d")[0]
    ann = as_user(store, "ann", "reviewer")
    ann.labels.set_verdict(pk, LABEL, 1)
    ann.labels.set_verdict(pk, rubric_verdict("tone"), 4)
    verdicts = store.questions.of("d")
    assert [q.name for q in verdicts] == ["Pass / fail", "tone"] and not has_own_questions(verdicts)
    assert has_verdict_questions(verdicts) and not has_verdict_questions([])
    with_tone, without = Session(rubrics={"tone": "Is it polite?"}), Session(rubrics={"facts": "Are they right?"})
    assert [q.name for q in asked_of(verdicts, with_tone)] == ["Pass / fail", "tone"]
    assert [q.name for q in asked_of(verdicts, without)] == ["Pass / fail"]
    as_user(store, "ada").questions.define("d", QuestionDef("Resolved?", "choice", options=("yes", "no")))
    questions = store.questions.of("d")
    assert has_own_questions(questions)  # Review asks them all on its Questions tab now
    assert [q.name for q in asked_of(questions, Session())] == ["Pass / fail", "Resolved?"]

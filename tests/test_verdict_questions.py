"""Reviewers' verdicts are answers to questions of the dataset's labeling programme, on both engines: a verdict given
is a submitted answer at once; verdicts given before (``store.labels.adopt``, after the upgrade) move into submitted
answers of their reviewers, the judges compared with the same values afterwards; a settled question's gold is what
they are compared with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from dbutil import as_user, execute, query
from formats_util import write_jsonl

from evalcore.errors import PermissionDeniedError
from evalcore.importing import import_file
from evalcore.store import Store, open_store
from evalcore.store.labels import LABEL, rubric_verdict
from evalcore.store.migrations import VERDICTS_ADOPT
from evalcore.store.questions import VERDICT_KEY


@pytest.fixture
def store(store_url: str, tmp_path: Path) -> Iterator[Store]:
    with open_store(store_url) as s:
        records = [{"schema_version": 1, "session_id": f"s{i}", "messages": [
            {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]} for i in range(1, 4)]  # fmt: skip
        import_file(as_user(s, "admin"), write_jsonl(tmp_path / "d.jsonl", records), "d")
        yield s


def test_verdicts_become_questions_and_answers(store: Store) -> None:
    s1, s2, s3 = store.sessions.pks("d")
    clarity = rubric_verdict("clarity")
    ann, bob = (as_user(store, name, "reviewer").user for name in ("ann", "bob"))
    # Verdicts given before verdicts were answers (kept in the verdicts table), one before the store had users.
    for pk, author, author_id, name, value in (
        (s1, "ann", ann.id, LABEL, 1), (s1, "ann", ann.id, clarity, 4), (s1, "bob", bob.id, LABEL, 0),
        (s2, "bob", bob.id, LABEL, 1), (s3, "old timer", None, LABEL, 1),
    ):  # fmt: skip
        execute(store, "INSERT INTO verdicts (session_pk, author, name, value, at, author_id) VALUES (?, ?, ?, ?, "
                       "'2025-01-01T00:00:00+00:00', ?)", [pk, author, name, value, author_id])  # fmt: skip
    before = sorted(store.labels.verdict_values("d"))
    assert len(before) == 5

    with pytest.raises(PermissionDeniedError):
        as_user(store, "ann", "reviewer").labels.adopt("d")
    # The upgrade's migration left its note: the store, upgraded (or a SQLite file opened), moves them all.
    execute(store, "INSERT INTO meta (key, value) VALUES (?, 'pending')", [VERDICTS_ADOPT])
    store.upgrade()
    assert query(store, "SELECT count(*) FROM meta WHERE key = ?", [VERDICTS_ADOPT]) == [(0,)]
    questions = {q.name: q for q in store.questions.of("d")}
    assert list(questions) == ["Pass / fail", "clarity"]
    assert questions["Pass / fail"].spec == {"options": ["pass", "fail"], VERDICT_KEY: LABEL}
    assert questions["clarity"].kind == "rating" and questions["clarity"].spec[VERDICT_KEY] == clarity
    assert query(store, "SELECT count(*) FROM verdicts") == [(0,)]  # moved, not copied
    answers = {(a.session_pk, a.author, a.question_id): a.value for a in store.answers.of_dataset("d")}
    assert answers == {
        (s1, "ann", questions["Pass / fail"].id): "pass", (s1, "ann", questions["clarity"].id): 4,
        (s1, "bob", questions["Pass / fail"].id): "fail", (s2, "bob", questions["Pass / fail"].id): "pass",
        (s3, "old timer", questions["Pass / fail"].id): "pass",
    }  # fmt: skip
    old = store.users.find("old timer")
    assert (old.role, old.disabled) == ("viewer", True)  # who gave it is kept; they may not come in
    assert sorted(store.labels.verdict_values("d")) == before  # the judges are compared with the same values
    assert as_user(store, "admin").labels.adopt("d") == 0 and len(store.questions.of("d")) == 2  # again: nothing

    # New verdicts are submitted answers; a rubric scored for the first time gets its question.
    bob = as_user(store, "bob", "reviewer")
    bob.labels.set_verdict(s2, LABEL, 0)
    bob.labels.set_verdict(s2, rubric_verdict("tone"), 2)
    assert [(v.author, v.name, v.value) for v in store.labels.verdicts(s2)] == [
        ("bob", LABEL, 0.0), ("bob", "rubric:tone", 2.0)
    ]  # fmt: skip
    assert [q.name for q in store.questions.of("d")] == ["Pass / fail", "clarity", "tone"]
    bob.labels.set_verdict(s2, rubric_verdict("tone"), None)  # withdrawn
    assert [v.name for v in store.labels.verdicts(s2)] == [LABEL]

    # A settled question: its gold alone is what the judges are compared with.
    as_user(store, "admin").answers.set_gold(s1, questions["Pass / fail"].id, "fail")
    on_s1 = [(name, value) for pk, _, name, value in store.labels.verdict_values("d") if pk == s1]
    assert sorted(on_s1) == [(LABEL, 0.0), (clarity, 4.0)]
    assert any(v.author == "admin (gold)" for v in store.labels.verdicts(s1))


def test_a_verdict_is_an_answer_at_once(store: Store) -> None:
    from evalcore.store.questions import QuestionDef

    s1, s2, _ = store.sessions.pks("d")
    as_user(store, "ann", "reviewer").labels.set_verdict(s1, LABEL, 1)
    as_user(store, "bob", "reviewer").labels.set_verdict(s2, rubric_verdict("clarity"), 3)
    before = sorted(store.labels.verdict_values("d"))
    # A verdict is an answer at once, to the question it stands for, made when first needed.
    assert [q.name for q in store.questions.of("d")] == ["Pass / fail", "clarity"]
    assert [(a.author, a.value) for a in store.answers.of_session(s1)] == [("ann", "pass")]
    assert query(store, "SELECT count(*) FROM verdicts") == [(0,)]
    # A verdict left in the old table (a store not reopened since its upgrade) moves in with the first question.
    execute(store, "INSERT INTO verdicts (session_pk, author, name, value, at) VALUES (?, 'old timer', ?, 0, "
                   "'2025-01-01T00:00:00+00:00')", [s2, LABEL])  # fmt: skip
    admin = as_user(store, "admin")
    admin.questions.define("d", QuestionDef("Resolved?", "choice", options=("yes", "no")))
    assert [q.name for q in store.questions.of("d")] == ["Pass / fail", "clarity", "Resolved?"]
    assert query(store, "SELECT count(*) FROM verdicts") == [(0,)]
    assert sorted(store.labels.verdict_values("d")) == sorted([*before, (s2, "s2", LABEL, 0.0)])


def test_a_first_question_on_a_dataset_without_verdicts_is_the_only_one(store: Store) -> None:
    from evalcore.store.questions import QuestionDef

    as_user(store, "admin").questions.define("d", QuestionDef("Resolved?", "choice", options=("yes", "no")))
    assert [q.name for q in store.questions.of("d")] == ["Resolved?"]

"""A dataset's verdicts become questions of its labeling programme (``store.labels.adopt``), on both engines: every
verdict moves into a submitted answer of its reviewer, the judges are compared with the same values afterwards,
new verdicts are answers, and a settled question's gold is what they are compared with."""

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
    as_user(store, "ann", "reviewer").labels.set_verdict(s1, LABEL, 1)
    as_user(store, "ann", "reviewer").labels.set_verdict(s1, clarity, 4)
    as_user(store, "bob", "reviewer").labels.set_verdict(s1, LABEL, 0)
    as_user(store, "bob", "reviewer").labels.set_verdict(s2, LABEL, 1)
    # A verdict from before the store had users: a name, no user.
    execute(store, "INSERT INTO verdicts (session_pk, author, name, value, at) VALUES (?, 'old timer', ?, 1, "
                   "'2025-01-01T00:00:00+00:00')", [s3, LABEL])  # fmt: skip
    before = sorted(store.labels.verdict_values("d"))

    with pytest.raises(PermissionDeniedError):
        as_user(store, "ann", "reviewer").labels.adopt("d")
    assert as_user(store, "admin").labels.adopt("d") == 5
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


def test_a_datasets_first_question_makes_its_verdicts_questions_first(store: Store) -> None:
    from evalcore.store.questions import QuestionDef

    s1, s2, _ = store.sessions.pks("d")
    as_user(store, "ann", "reviewer").labels.set_verdict(s1, LABEL, 1)
    as_user(store, "bob", "reviewer").labels.set_verdict(s2, rubric_verdict("clarity"), 3)
    before = sorted(store.labels.verdict_values("d"))
    admin = as_user(store, "admin")
    admin.questions.define("d", QuestionDef("Resolved?", "choice", options=("yes", "no")))
    # Review asks the questions in place of the verdicts now: the verdicts given so far are among them, as answers.
    assert [q.name for q in store.questions.of("d")] == ["Pass / fail", "clarity", "Resolved?"]
    assert query(store, "SELECT count(*) FROM verdicts") == [(0,)]
    assert sorted(store.labels.verdict_values("d")) == before
    assert [(a.author, a.value) for a in store.answers.of_session(s1)] == [("ann", "pass")]
    # A second question adopts nothing more (there is nothing left to move).
    admin.questions.define("d", QuestionDef("Why", "text"))
    assert len(store.questions.of("d")) == 4


def test_a_first_question_on_a_dataset_without_verdicts_is_the_only_one(store: Store) -> None:
    from evalcore.store.questions import QuestionDef

    as_user(store, "admin").questions.define("d", QuestionDef("Resolved?", "choice", options=("yes", "no")))
    assert [q.name for q in store.questions.of("d")] == ["Resolved?"]

"""The evalcore format carries a session's answers and gold with it (``Session.labels``, ``evalcore.store.carried``):
an export and an import into another store lose nothing of a labeling programme — on both engines — and what cannot
be stored is said on the record's line, the session and its other labels kept."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dbutil import as_user, query
from formats_util import write_jsonl

from evalcore.convert import convert_file
from evalcore.exporting import export_dataset
from evalcore.importing import import_file
from evalcore.label_export import label_bytes
from evalcore.store import Store, open_store
from evalcore.store.carried import IMPORTED
from evalcore.store.questions import QuestionDef

EVALCORE = str(Path(sys.executable).parent / "evalcore")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        yield s


@pytest.fixture
def elsewhere(store_url: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Another store on the same engine: where an export is imported."""
    url = str(tmp_path / "elsewhere.db") if store_url.endswith(".db") else request.getfixturevalue(
        "pg_cluster").new_database()  # fmt: skip
    with open_store(url) as s:
        yield s


def _record(i: int) -> dict[str, object]:
    return {"schema_version": 1, "session_id": f"t{i}", "assistant_id": "bot-a",
            "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                         {"role": "user", "content": "bye"}, {"role": "assistant", "content": "=1+1"}]}  # fmt: skip


def _programme(store: Store, tmp_path: Path) -> tuple[int, int, int]:
    """Three sessions; questions of every kind, one edited (answers to both versions) and one renamed since it was
    answered; two reviewers' answers, a draft, gold with a note, a pass/fail verdict made a question."""
    admin = as_user(store, "admin")
    import_file(admin, write_jsonl(tmp_path / "d.jsonl", [_record(i) for i in range(3)]), "d")
    a, b, c = store.sessions.pks("d")
    resolved = admin.questions.define("d", QuestionDef("Resolved?", "choice", options=("yes", "no")))
    issues = admin.questions.define("d", QuestionDef("Issues", "multi", options=("tone", "tool")))
    quality = admin.questions.define("d", QuestionDef("Quality", "rating", labels={"1": "poor", "5": "great"}))
    cost = admin.questions.define("d", QuestionDef("Cost", "number", min=0))
    why = admin.questions.define("d", QuestionDef("Why", "text", level="turn", help="Say why"))
    ann, bob = as_user(store, "ann", "reviewer"), as_user(store, "bob", "reviewer")
    ann.answers.save_draft(a, resolved.id, "yes")
    ann.answers.save_draft(a, issues.id, ["tool", "tone"])
    ann.answers.save_draft(a, quality.id, 4)
    ann.answers.save_draft(a, cost.id, 0.5)
    ann.answers.save_draft(a, why.id, "=SUM(A1)", turn=1)
    ann.answers.submit(a)
    admin.questions.edit(resolved.id, QuestionDef("Resolved?", "choice", options=("yes", "no", "partly")))
    admin.questions.edit(cost.id, QuestionDef("Cost ($)", "number", min=0))  # renamed: v2
    bob.answers.save_draft(a, resolved.id, "partly")  # answers version 2
    bob.answers.save_draft(a, cost.id, 0.25)
    bob.answers.submit(a)
    bob.answers.save_draft(b, resolved.id, "yes")  # a draft: its writer's own, never carried
    ann.labels.set_verdict(c, "label", 1.0)
    admin.labels.adopt("d")  # the verdicts become a question; ann's verdict an answer
    as_user(store, "ada", "admin").answers.set_gold(a, resolved.id, "no", note="the tool failed")
    bob.labels.add_comment(b, "Too short to judge.")  # a session with a comment alone
    ann.labels.add_comment(a, "The refund tool was called twice.", turn=1)
    return a, b, c


def _export(store: Store, path: Path, to: str = "evalcore") -> bytes:
    export_dataset(as_user(store, "admin"), "d", path, to)
    return path.read_bytes()


def test_an_export_and_an_import_elsewhere_lose_nothing(store: Store, elsewhere: Store, tmp_path: Path) -> None:
    _programme(store, tmp_path)
    first = _export(store, tmp_path / "out.jsonl")
    lines = [json.loads(line) for line in first.decode().splitlines()]
    carried = lines[0]["labels"]
    assert [(q["name"], q.get("version", 1), q.get("asked_as")) for q in carried["questions"]] == [
        ("Resolved?", 1, None), ("Resolved?", 2, None), ("Issues", 1, None), ("Quality", 1, None),
        ("Cost ($)", 1, "Cost"), ("Cost ($)", 2, None), ("Why", 1, None),
    ]  # fmt: skip
    assert lines[1]["labels"] == {
        "comments": [{"user": "bob", "body": "Too short to judge.", "at": lines[1]["labels"]["comments"][0]["at"]}]
    }  # (not the draft)
    assert [(c["turn"], c["body"]) for c in carried["comments"]] == [(1, "The refund tool was called twice.")]
    assert [a["question"] for a in lines[2]["labels"]["answers"]] == ["Pass / fail"]
    gold = [a for a in carried["answers"] if a.get("status") == "gold"]
    assert gold == [{"question": "Resolved?", "question_version": 2, "value": "no", "user": "ada", "status": "gold",
                     "at": gold[0]["at"], "note": "the tool failed"}]  # fmt: skip

    report = import_file(as_user(elsewhere, "eve"), tmp_path / "out.jsonl", "d", workers=2)  # (rows pickled)
    assert (report.new, report.failed, report.warnings) == (3, 0, 0), report.problems
    assert label_bytes(elsewhere, "d") == label_bytes(store, "d")
    assert _export(elsewhere, tmp_path / "again.jsonl") == first  # the sessions and their labels, byte for byte
    for mine, theirs in zip(store.questions.of("d"), elsewhere.questions.of("d"), strict=True):
        assert (mine.name, mine.version, mine.spec, mine.position) == (
            theirs.name, theirs.version, theirs.spec, theirs.position)  # fmt: skip
        assert store.questions.versions(mine.id) == elsewhere.questions.versions(theirs.id)
    # The people behind the answers: disabled users of their own (they cannot sign in), who submitted the session.
    people = {u.name: u for u in elsewhere.users.all()}
    assert all(people[name].disabled and people[name].iss == IMPORTED for name in ("ann", "bob", "ada"))
    a_copy = elsewhere.sessions.pks("d")[0]
    assert sorted(s.author for s in elsewhere.answers.submissions(a_copy)) == ["ann", "bob"]
    assert [(c.turn, c.author, c.body) for c in elsewhere.labels.comments(a_copy)] == [
        (1, "ann", "The refund tool was called twice.")]  # fmt: skip
    # The verdict is still a verdict there: the Dashboard compares the judges with it.
    assert [(v.name, v.value, v.author) for v in elsewhere.labels.human_verdicts("d")] == [("label", 1.0, "ann")]

    again = import_file(as_user(elsewhere, "eve"), tmp_path / "out.jsonl", "d")  # the same file again: no change
    assert (again.unchanged, again.warnings) == (3, 0)
    assert label_bytes(elsewhere, "d") == label_bytes(store, "d")
    assert _export(elsewhere, tmp_path / "thrice.jsonl") == first  # (no comment twice)


def test_what_cannot_be_stored_is_said_and_the_rest_kept(store: Store, tmp_path: Path) -> None:
    _programme(store, tmp_path)
    _export(store, tmp_path / "out.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    answers = lines[0]["labels"]["answers"]
    answers[0]["value"] = "maybe"  # not an option of the question
    answers.append({"question": "Why", "turn": 7, "value": "x", "user": "cy"})  # no such turn
    answers.append({"question": "Nowhere", "value": "x", "user": "cy"})  # no such question
    lines[2]["labels"]["questions"][0]["spec"]["options"] = ["pass", "fail", "skip"]  # differs from this dataset's
    write_jsonl(tmp_path / "edited.jsonl", lines)
    admin = as_user(store, "admin")
    before = label_bytes(store, "d")
    report = import_file(admin, tmp_path / "edited.jsonl", "d", workers=1)
    assert (report.unchanged, report.failed, report.warnings) == (3, 0, 4)
    said = sorted(str(p).split("edited.jsonl:")[1] for p in report.problems)
    assert said == [
        "1: warning: labels: 'ann''s answer to 'Resolved?': Resolved?: choose one of 'yes', 'no' (got 'maybe'); "
        "not imported",
        "1: warning: labels: 'cy''s answer to 'Why' on turn 7: the session has 2 turns (no turn 7); not imported",
        "1: warning: labels: question 'Nowhere' version 1 is not defined; not imported",
        "3: warning: labels: question 'Pass / fail' version 1 differs from this dataset's version of that number; "
        "not imported",
    ]
    assert label_bytes(store, "d") == before  # the answers it could store were there already: nothing else changed


def test_an_answer_there_gives_way_only_to_a_later_one_and_drafts_stay(
    store: Store, elsewhere: Store, tmp_path: Path
) -> None:
    a, _, _ = _programme(store, tmp_path)
    _export(store, tmp_path / "out.jsonl")
    ann = as_user(elsewhere, "ann", "reviewer")  # a user of that store by the name the file gives: the same person
    import_file(as_user(elsewhere, "eve"), tmp_path / "out.jsonl", "d")
    copy = elsewhere.sessions.pks("d")[0]
    resolved = elsewhere.questions.find("d", "Resolved?")
    ann.answers.save_draft(copy, resolved.id, "no")  # ann starts to change her mind there
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    for answer in lines[0]["labels"]["answers"]:
        if answer["question"] == "Resolved?" and answer["user"] == "ann":
            answer["value"], answer["at"] = "no", "2000-01-01T00:00:00Z"  # older than what is there: ignored
        if answer["question"] == "Quality":
            answer["value"], answer["at"] = 5, "2999-01-01T00:00:00Z"  # later: replaces it
    write_jsonl(tmp_path / "edited.jsonl", lines)
    report = import_file(as_user(elsewhere, "eve"), tmp_path / "edited.jsonl", "d")
    assert report.warnings == 0, report.problems
    mine = {elsewhere.questions.get(x.question_id).name: x for x in ann.answers.mine(copy)}
    assert (mine["Resolved?"].value, mine["Resolved?"].draft) == ("yes", "no")
    assert mine["Quality"].value == 5


def test_formats_that_cannot_carry_labels_say_so(store: Store, store_url: str, tmp_path: Path) -> None:
    _programme(store, tmp_path)
    out = tmp_path / "ragas.jsonl"
    done = subprocess.run([EVALCORE, "export", "--dataset", "d", "--to", "openai", "-o", str(out), "--db",
                           store_url], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    note = ("note: the labels (answers, gold, comments) of 3 of them are not carried by openai: export the answers "
            "and gold with `evalcore export-labels`, or export in the evalcore format")  # fmt: skip
    assert note in done.stderr
    assert "labels" not in out.read_text()
    _export(store, tmp_path / "out.jsonl")
    report = convert_file(tmp_path / "out.jsonl", tmp_path / "converted.jsonl", to="openai")
    assert [str(p).split("out.jsonl:")[1] for p in report.problems] == [
        f"{n}: warning: labels not carried by openai: dropped" for n in (1, 2, 3)
    ]
    assert query(store, "SELECT count(*) FROM answers")[0][0] > 0


def test_only_a_session_with_labels_carries_the_field() -> None:
    """The labels ride on a subclass: every other session keeps 21 fields (an instance dict of 22 takes twice the
    memory — 832 bytes against 464 — which every session read, scored or exported would pay)."""
    import sys

    from evalcore.formats import get_format
    from evalcore.schema import LabelledSession, Session

    assert len(Session.model_fields) <= 21
    plain = Session.model_validate({"messages": []})
    assert sys.getsizeof(plain.__dict__) < 600
    fmt = get_format("evalcore")
    record = _record(0)
    assert type(fmt.parse(record)) is Session
    labelled = fmt.parse({**record, "labels": {"comments": [{"user": "ann", "body": "ok"}]}})
    assert isinstance(labelled, LabelledSession) and labelled.labels is not None
    assert json.loads(fmt.serialise(labelled)[0])["labels"] == {"comments": [{"user": "ann", "body": "ok"}]}

"""Labeling programmes in the store, on both engines: questions and their versions, guidelines, answers as drafts then
submitted, gold, queues with overlap, leases and skips — and reviewers racing for Next in real processes."""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user, query
from formats_util import write_jsonl

from evalcore.errors import NotFoundError, OverlapReachedError, PermissionDeniedError, UsageError
from evalcore.importing import import_file
from evalcore.store import Store, open_store
from evalcore.store.queries import SessionFilter
from evalcore.store.questions import QuestionDef

SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        yield s


def _sessions(store: Store, tmp_path: Path, n: int, dataset: str = "d") -> list[int]:
    """``n`` sessions of two turns each."""
    records = [
        {
            "schema_version": 1,
            "session_id": f"s{i}",
            "tags": ["odd"] if i % 2 else [],
            "messages": [
                {"role": "user", "content": f"question {i}"},
                {"role": "assistant", "content": "answer"},
                {"role": "user", "content": "and then?"},
                {"role": "assistant", "content": "done"},
            ],
        }
        for i in range(n)
    ]
    report = import_file(as_user(store, "admin"), write_jsonl(tmp_path / f"{dataset}.jsonl", records), dataset)
    assert report.failed == 0
    return store.sessions.pks(dataset)


RESOLVED = QuestionDef("Resolved?", "choice", options=("yes", "no"), required=True, help="Did the agent finish?")


# -- questions ---------------------------------------------------------------------------------------------------


def test_questions_of_every_kind_their_versions_and_the_guidelines(store: Store, tmp_path: Path) -> None:
    _sessions(store, tmp_path, 2)
    admin = as_user(store, "admin")
    resolved = admin.questions.define("d", RESOLVED)
    issues = admin.questions.define("d", QuestionDef("Issues", "multi", options=("tone", "wrong tool", "slow")))
    quality = admin.questions.define("d", QuestionDef("Quality", "rating", labels={"1": "poor", "5": "great"}))
    cost = admin.questions.define("d", QuestionDef("Cost", "number", min=0))
    note = admin.questions.define("d", QuestionDef("Why", "text", level="turn", max_length=100))
    assert [q.name for q in store.questions.of("d")] == ["Resolved?", "Issues", "Quality", "Cost", "Why"]
    assert quality.spec == {"min": 1, "max": 5, "labels": {"1": "poor", "5": "great"}}
    assert (cost.spec, note.level, resolved.required, resolved.version) == ({"min": 0, "max": None}, "turn", True, 1)

    bad = [
        (QuestionDef("x", "choice", options=("only",)), "at least 2 options"),
        (QuestionDef("x", "choice", options=("a", "a")), "given twice"),
        (QuestionDef("x", "multi"), "at least 1 option"),
        (QuestionDef("x", "rating", min=5, max=1), "lowest point below"),
        (QuestionDef("x", "rating", min=1.5), "whole numbers"),
        (QuestionDef("x", "rating", labels={"9": "off"}), "point of the scale 1-5"),
        (QuestionDef("x", "number", min=2, max=1), "lowest value is above"),
        (QuestionDef("x", "text", max_length=0), "length is 1 to"),
        (QuestionDef("x", "colour"), "unknown kind"),  # type: ignore[arg-type]
        (QuestionDef("x", "text", level="page"), "unknown level"),  # type: ignore[arg-type]
        (QuestionDef(" ", "text"), "name is one line"),
        (QuestionDef("Resolved?", "text"), "already"),
    ]
    for question, message in bad:
        with pytest.raises(UsageError, match=message):
            admin.questions.define("d", question)
    with pytest.raises(PermissionDeniedError):
        as_user(store, "rev", "reviewer").questions.define("d", QuestionDef("y", "text"))

    # An edit that changes what is asked is a new version; the old definition stays readable.
    same = admin.questions.edit(resolved.id, RESOLVED)
    assert same.version == 1
    edited = admin.questions.edit(resolved.id, QuestionDef("Resolved?", "choice", options=("yes", "no", "partly")))
    assert (edited.version, edited.options, edited.required) == (2, ["yes", "no", "partly"], False)
    versions = store.questions.versions(resolved.id)
    assert versions[1]["spec"] == {"options": ["yes", "no"]} and versions[2]["spec"]["options"][-1] == "partly"
    with pytest.raises(UsageError, match="level and kind stay"):
        admin.questions.edit(resolved.id, QuestionDef("Resolved?", "multi", options=("a",)))
    with pytest.raises(UsageError, match="already"):
        admin.questions.edit(issues.id, QuestionDef("Quality", "multi", options=("a",)))

    admin.questions.retire(cost.id)
    assert [q.name for q in store.questions.of("d")] == ["Resolved?", "Issues", "Quality", "Why"]
    assert len(store.questions.of("d", retired=True)) == 5
    admin.questions.move(note.id, -10)
    assert store.questions.of("d")[0].name == "Why"
    assert store.questions.find("d", "Quality").id == quality.id
    with pytest.raises(NotFoundError):
        store.questions.get(999_999)

    assert store.questions.guidelines("d") == ""
    admin.questions.set_guidelines("d", "# How to label\n\n*Resolved* means the **user's** goal was met.")
    assert store.questions.guidelines("d").startswith("# How to label")
    admin.questions.set_guidelines("d", "  ")
    assert store.questions.guidelines("d") == ""


# -- answers -----------------------------------------------------------------------------------------------------


def test_drafts_then_submitted_answers_required_questions_and_versions(store: Store, tmp_path: Path) -> None:
    a, b = _sessions(store, tmp_path, 2)
    admin = as_user(store, "admin")
    resolved = admin.questions.define("d", RESOLVED)
    why = admin.questions.define("d", QuestionDef("Why", "text", level="turn", required=True))
    quality = admin.questions.define("d", QuestionDef("Quality", "rating"))
    ann = as_user(store, "ann", "reviewer")

    ann.answers.save_draft(a, resolved.id, "yes")
    ann.answers.save_draft(a, quality.id, 4.0)
    mine = {x.question_id: x for x in ann.answers.mine(a)}
    assert mine[resolved.id].current == "yes" and not mine[resolved.id].submitted
    assert mine[quality.id].draft == 4 and isinstance(mine[quality.id].draft, int)
    assert store.answers.of_session(a) == []  # a draft is its writer's own

    # Refused while a required question is unanswered (on every turn, for a turn's question): nothing changes.
    with pytest.raises(UsageError, match="'Why'"):
        ann.answers.submit(a)
    ann.answers.save_draft(a, why.id, "fine", turn=0)
    with pytest.raises(UsageError, match="'Why'"):
        ann.answers.submit(a)
    assert all(not x.submitted for x in ann.answers.mine(a)) and store.answers.submissions(a) == []
    ann.answers.save_draft(a, why.id, "fine too", turn=1)
    done = ann.answers.submit(a)
    assert done.author == "ann" and [s.author for s in store.answers.submissions(a)] == ["ann"]
    submitted = store.answers.of_session(a)
    assert [(x.question_id, x.turn, x.value) for x in submitted] == [
        (resolved.id, None, "yes"), (why.id, 0, "fine"), (why.id, 1, "fine too"), (quality.id, None, 4)
    ]  # fmt: skip
    assert all(x.question_version == 1 and x.draft is None for x in submitted)

    # A draft over a submitted answer leaves it as submitted until the next submit; clearing the draft keeps it.
    ann.answers.save_draft(a, resolved.id, "no")
    (r,) = [x for x in ann.answers.mine(a) if x.question_id == resolved.id]
    assert (r.value, r.draft, r.current) == ("yes", "no", "no")
    ann.answers.save_draft(a, resolved.id, None)
    (r,) = [x for x in ann.answers.mine(a) if x.question_id == resolved.id]
    assert (r.value, r.draft) == ("yes", None)

    # The question changes: a new answer says it answered version 2; the old one still says version 1.
    admin.questions.edit(quality.id, QuestionDef("Quality", "rating", min=0, max=10))
    bob = as_user(store, "bob", "reviewer")
    for question_id, value, turn in (
        (resolved.id, "no", None),
        (why.id, "x", 0),
        (why.id, "y", 1),
        (quality.id, 9, None),
    ):
        bob.answers.save_draft(a, question_id, value, turn=turn)
    bob.answers.submit(a)
    versions = {(x.author, x.question_id): x.question_version for x in store.answers.of_session(a)}
    assert versions[("ann", quality.id)] == 1 and versions[("bob", quality.id)] == 2
    assert len(store.answers.of_dataset("d")) == 8

    bad: list[tuple[int, Any, int | None, str]] = [
        (resolved.id, "maybe", None, "choose one of"),
        (quality.id, 11, None, "from 0 to 10"),
        (quality.id, 2.5, None, "whole number"),
        (quality.id, True, None, "give a number"),
        (quality.id, float("nan"), None, "give a number"),
        (why.id, "x", None, "answered on a turn"),
        (resolved.id, "yes", 0, "answered on the session"),
        (why.id, "x", 2, "has 2 turns"),
        (why.id, "x", -1, "whole number from 0"),
    ]
    for question_id, value, turn, message in bad:
        with pytest.raises(UsageError, match=message):
            ann.answers.save_draft(b, question_id, value, turn=turn)
    with pytest.raises(NotFoundError):
        ann.answers.save_draft(999_999, resolved.id, "yes")
    with pytest.raises(PermissionDeniedError):
        as_user(store, "vic", "viewer").answers.save_draft(b, resolved.id, "yes")
    admin.questions.retire(quality.id)
    with pytest.raises(UsageError, match="retired"):
        ann.answers.save_draft(b, quality.id, 3)
    assert [x.question_id for x in store.answers.of_session(a)].count(quality.id) == 2  # its answers stay


def test_gold_is_set_by_an_adjudicator_with_who_and_when(store: Store, tmp_path: Path) -> None:
    (a,) = _sessions(store, tmp_path, 1)
    admin = as_user(store, "admin")
    resolved = admin.questions.define("d", RESOLVED)
    with pytest.raises(PermissionDeniedError):
        as_user(store, "ann", "reviewer").answers.set_gold(a, resolved.id, "yes")
    judge = as_user(store, "ada", "admin")
    judge.answers.set_gold(a, resolved.id, "no", note="the refund was never issued")
    (gold,) = store.answers.gold(a)
    assert (gold.value, gold.author, gold.note, gold.question_version, gold.turn) == (
        "no", "ada", "the refund was never issued", 1, None
    )  # fmt: skip
    judge.answers.set_gold(a, resolved.id, "yes")
    assert [(g.value, g.note) for g in store.answers.gold_of_dataset("d")] == [("yes", None)]
    with pytest.raises(UsageError, match="choose one of"):
        judge.answers.set_gold(a, resolved.id, "perhaps")
    judge.answers.set_gold(a, resolved.id, None)
    assert store.answers.gold(a) == []


def test_ground_truth_drafts_are_each_persons_own(store: Store, tmp_path: Path) -> None:
    (a,) = _sessions(store, tmp_path, 1)
    ann, bob = as_user(store, "ann", "reviewer"), as_user(store, "bob", "reviewer")
    ann.drafts.save(a, "reference", "The refund was issued", base_version=1)
    ann.drafts.save(a, "observation", "slow", base_version=1, turn=1)
    ann.drafts.save(a, "reference", "The refund was issued on May 3", base_version=1)
    assert [(d.field, d.turn, d.value) for d in ann.drafts.of(a)] == [
        ("reference", None, "The refund was issued on May 3"), ("observation", 1, "slow")
    ]  # fmt: skip
    assert bob.drafts.of(a) == []
    ann.drafts.drop(a, "reference")
    assert [d.field for d in ann.drafts.of(a)] == ["observation"]
    ann.drafts.drop(a)
    assert ann.drafts.of(a) == []
    with pytest.raises(NotFoundError):
        ann.drafts.save(999_999, "reference", "x", base_version=1)
    with pytest.raises(PermissionDeniedError):
        as_user(store, "vic", "viewer").drafts.save(a, "reference", "x", base_version=1)


# -- queues ------------------------------------------------------------------------------------------------------


def _answer(store: Store, pk: int, question_id: int, queue_id: int | None = None) -> None:
    store.answers.save_draft(pk, question_id, "yes")
    store.answers.submit(pk, queue_id=queue_id)


def test_queue_order_leases_skips_and_progress(store: Store, tmp_path: Path) -> None:
    pks = _sessions(store, tmp_path, 4)
    admin = as_user(store, "admin")
    q = admin.questions.define("d", RESOLVED)
    queue = admin.queues.create("d", "pass 1", min_reviews=2)
    ann, bob, cy = (as_user(store, n, "reviewer") for n in ("ann", "bob", "cy"))

    assert ann.queues.next(queue.id) == pks[0]
    assert ann.queues.next(queue.id) == pks[0]  # the item I hold, until I submit or skip it
    assert bob.queues.next(queue.id) == pks[0]  # overlap 2: a second person on it
    assert cy.queues.next(queue.id) == pks[1]  # two hold the first: the next one
    _answer(ann, pks[0], q.id, queue.id)
    assert ann.queues.next(queue.id) == pks[1]  # cy alone holds the second: room for one more
    ann.queues.skip(queue.id, pks[1])
    assert ann.queues.next(queue.id) == pks[2]  # skipped: not handed to me again
    assert ann.answers.submissions(pks[1]) == []  # and a skip is no answer
    _answer(bob, pks[0], q.id, queue.id)
    with pytest.raises(OverlapReachedError, match="kept as drafts"):
        _answer(cy, pks[0], q.id, queue.id)  # two have submitted it: a third is refused...
    assert [x.draft for x in cy.answers.mine(pks[0])] == ["yes"]  # ...and cy's work is kept

    progress = store.queues.progress(queue.id)
    assert (progress.items, progress.complete, progress.started, progress.submissions) == (4, 1, 1, 2)
    people = {r.name: (r.submitted, r.skipped, r.holding) for r in progress.reviewers}
    assert people == {"ann": (1, 1, 1), "bob": (1, 0, 0), "cy": (0, 0, 1)}
    assert ann.queues.place(queue.id, pks[2]) == (3, 4, 1)
    assert ann.queues.place(queue.id, 999_999) is None

    # The overlap changes after work started: every item's state follows.
    admin.queues.update(queue.id, min_reviews=1)
    assert store.queues.progress(queue.id).complete == 1
    assert bob.queues.next(queue.id) == pks[3]  # the second and third are held by one person each: enough now
    # A new filter takes its sessions again; submissions stay with the sessions.
    admin.queues.update(queue.id, filters=SessionFilter(tags=["odd"]))
    assert store.queues.items(queue.id) == [pks[1], pks[3]]
    assert store.queues.progress(queue.id).submissions == 0
    admin.queues.update(queue.id, filters=SessionFilter())
    assert store.queues.progress(queue.id).submissions == 2


def test_an_expired_lease_returns_the_item(store: Store, tmp_path: Path) -> None:
    pks = _sessions(store, tmp_path, 2)
    admin = as_user(store, "admin")
    q = admin.questions.define("d", RESOLVED)
    queue = admin.queues.create("d", "quick", min_reviews=1, lease_seconds=1)
    ann, bob, cy = (as_user(store, n, "reviewer") for n in ("ann", "bob", "cy"))
    assert ann.queues.next(queue.id) == pks[0]
    assert bob.queues.next(queue.id) == pks[1]
    assert cy.queues.next(queue.id) is None  # both held
    time.sleep(1.2)
    assert cy.queues.next(queue.id) == pks[0]  # ann's lease ran out
    _answer(ann, pks[0], q.id, queue.id)  # ann submits late: nobody had submitted, so it counts
    with pytest.raises(OverlapReachedError):
        _answer(cy, pks[0], q.id, queue.id)
    assert cy.queues.next(queue.id) == pks[1]  # bob's lease ran out too


def test_queue_members_settings_and_deletion(store: Store, tmp_path: Path) -> None:
    pks = _sessions(store, tmp_path, 2)
    admin = as_user(store, "admin")
    ann = as_user(store, "ann", "reviewer")
    bob = as_user(store, "bob", "reviewer")
    queue = admin.queues.create("d", "ann's", members=["ann@example.com"], blind=True)
    assert (queue.members, queue.blind) == (("ann",), True)
    assert ann.queues.next(queue.id) == pks[0]
    with pytest.raises(PermissionDeniedError, match="not a member"):
        bob.queues.next(queue.id)
    admin.queues.update(queue.id, members=["ann", "bob"])
    assert bob.queues.next(queue.id) == pks[1]  # (overlap 1: ann holds the first)
    for kwargs, message in (
        ({"min_reviews": 0}, "overlap"),
        ({"min_reviews": True}, "overlap"),
        ({"lease_seconds": 0}, "lease"),
    ):
        with pytest.raises(UsageError, match=message):
            admin.queues.update(queue.id, **kwargs)
    with pytest.raises(UsageError, match="already"):
        admin.queues.create("d", "ann's")
    with pytest.raises(NotFoundError):
        admin.queues.create("d", "x", members=["nobody"])
    with pytest.raises(PermissionDeniedError):
        ann.queues.create("d", "mine")
    assert [x.name for x in store.queues.of("d")] == ["ann's"]
    admin.queues.delete(queue.id)
    assert store.queues.of("d") == []
    with pytest.raises(NotFoundError):
        ann.queues.next(queue.id)


def test_deleting_a_dataset_takes_its_labeling_with_it(store: Store, tmp_path: Path) -> None:
    pks = _sessions(store, tmp_path, 2)
    _sessions(store, tmp_path, 1, dataset="other")
    admin = as_user(store, "admin")
    q = admin.questions.define("d", RESOLVED)
    queue = admin.queues.create("d", "pass", min_reviews=2)
    ann = as_user(store, "ann", "reviewer")
    ann.queues.next(queue.id)
    _answer(ann, pks[0], q.id, queue.id)
    ann.queues.skip(queue.id, pks[1])
    ann.drafts.save(pks[1], "reference", "x", base_version=1)
    admin.answers.set_gold(pks[0], q.id, "yes")
    kept = admin.questions.define("other", RESOLVED)
    admin.datasets.delete("d", confirm="d")
    for table in ("questions", "question_versions", "answers", "submissions", "gold", "queues", "queue_items",
                  "queue_leases", "queue_skips", "queue_members", "drafts"):  # fmt: skip
        left = query(store, f"SELECT count(*) FROM {table}")[0][0]
        assert left == (1 if table in ("questions", "question_versions") else 0), table
    assert store.questions.of("other")[0].id == kept.id


# -- racing for Next, in real processes --------------------------------------------------------------------------


def _reviewer(url: str, name: str, queue_id: int, question_id: int, out: Any) -> None:
    """A reviewer in a process of their own: Next, answer, submit, until the queue has nothing left for them."""
    try:
        with open_store(url) as store:
            me = as_user(store, name, "reviewer")
            done = []
            while (pk := me.queues.next(queue_id)) is not None:
                me.answers.save_draft(pk, question_id, "yes")
                me.answers.submit(pk, queue_id=queue_id)
                done.append(pk)
            out.put((name, done, None))
    except BaseException as exc:  # (reported to the test, which fails on it)
        out.put((name, [], f"{type(exc).__name__}: {exc}"))


@pytest.mark.parametrize("reviewers", [2, 10])
def test_reviewers_racing_for_next_never_push_an_item_past_its_overlap(
    store: Store, store_url: str, tmp_path: Path, reviewers: int
) -> None:
    pks = _sessions(store, tmp_path, 3 * reviewers)
    admin = as_user(store, "admin")
    q = admin.questions.define("d", RESOLVED)
    queue = admin.queues.create("d", "race", min_reviews=2)
    names = [f"r{i}" for i in range(reviewers)]
    for name in names:
        as_user(store, name, "reviewer")  # (made here: the processes only sign in)
    out = SPAWN.Queue()
    procs = [SPAWN.Process(target=_reviewer, args=(store_url, n, queue.id, q.id, out)) for n in names]
    try:
        for p in procs:
            p.start()
        results = [out.get(timeout=120) for _ in procs]
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
            p.join(timeout=10)
    assert [r for r in results if r[2]] == []
    per_item = Counter(pk for _, done, _ in results for pk in done)
    assert per_item == {pk: 2 for pk in pks}, per_item
    stored = Counter(r[0] for r in query(store, "SELECT session_pk FROM submissions"))
    assert stored == {pk: 2 for pk in pks}
    assert all(len(set(done)) == len(done) for _, done, _ in results)  # nobody did an item twice
    assert store.queues.progress(queue.id).complete == len(pks)

"""How many sessions a filter matches, on both engines: what the Sessions page, Review's position, the filters'
facets and the Datasets page say equals the sessions counted one by one, through imports, re-imports, saves,
status changes, restores, deletions and copies. PostgreSQL keeps its counts in ``session_counts`` (its count(*) is
slow); SQLite counts. A change that fails leaves the counts as they were."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user, execute, query
from formats_util import write_jsonl

from evalcore.errors import ConflictError
from evalcore.importing import import_file
from evalcore.schema import STATUSES
from evalcore.store import Store, open_store
from evalcore.store.copy import copy_store
from evalcore.store.queries import SessionFilter

ASSISTANTS = [None, "alpha", "beta", "=beta", ""]
TAGS = [[], ["billing"], ["billing", "escalated"], ["escalated", "billing", "escalated"], ["été"]]


def _session(n: int, *, assistant: str | None = None, truth: bool = False, status: str = "todo") -> dict[str, Any]:
    row: dict[str, Any] = {
        "schema_version": 1,
        "session_id": f"s{n}",
        "status": status,
        "messages": [{"role": "user", "content": f"question {n}"}, {"role": "assistant", "content": f"answer {n}"}],
    }
    if assistant is not None:
        row["assistant_id"] = assistant
    if truth:
        row["reference"] = f"the reference of {n}"
    row["tags"] = TAGS[n % len(TAGS)]
    return row


def _sessions(count: int, offset: int = 0) -> list[dict[str, Any]]:
    return [
        _session(n, assistant=ASSISTANTS[n % len(ASSISTANTS)], truth=n % 3 == 0, status=STATUSES[n % 2 * 2])
        for n in range(offset, offset + count)
    ]


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        yield s


FILTERS = [
    SessionFilter(),
    *(SessionFilter(status=[s]) for s in STATUSES),
    SessionFilter(status=["todo", "approved"]),
    *(SessionFilter(assistant=a) for a in ASSISTANTS if a),
    SessionFilter(has_truth=True),
    SessionFilter(has_truth=False),
    SessionFilter(status=["approved", "flagged"], assistant="alpha", has_truth=True),
    SessionFilter(status=["todo"], has_truth=False),
    *(SessionFilter(tags=[t]) for t in ("billing", "escalated", "été", "x", "none")),
    SessionFilter(tags=["billing", "escalated"]),
    SessionFilter(tags=["billing"], status=["todo"]),
]


def _matches(store: Store, dataset: str, f: SessionFilter) -> int:
    """The sessions ``f`` matches, each read and looked at (no count asked of the database)."""
    n = 0
    for pk in store.sessions.iter_pks(dataset):
        session = store.sessions.get(pk).session
        if f.status and session.status not in f.status:
            continue
        if f.assistant and session.assistant_id != f.assistant:
            continue
        if f.has_truth is not None and session.has_ground_truth() != f.has_truth:
            continue
        if not set(f.tags) <= set(session.tags):
            continue
        n += 1
    return n


def _check(store: Store, dataset: str) -> None:
    for f in FILTERS:
        expected = _matches(store, dataset, f)
        assert store.sessions.count(dataset, f) == expected, f
        page = store.sessions.browse(dataset, f, limit=2)
        assert page.total == expected, f
    facets = store.sessions.facets(dataset)
    assert facets.statuses == {s: _matches(store, dataset, SessionFilter(status=[s])) for s in STATUSES}
    assert facets.total == _matches(store, dataset, SessionFilter())
    assert facets.with_truth == _matches(store, dataset, SessionFilter(has_truth=True))
    by_assistant = Counter(store.sessions.get(pk).session.assistant_id for pk in store.sessions.iter_pks(dataset))
    by_assistant.pop(None, None)  # (no assistant: not a facet; an empty name is one)
    assert facets.assistants == by_assistant
    assert list(facets.assistants) == sorted(facets.assistants, key=lambda a: (-facets.assistants[a], a))
    by_tag = Counter(t for pk in store.sessions.iter_pks(dataset) for t in set(store.sessions.get(pk).session.tags))
    assert facets.tags == by_tag
    assert list(facets.tags) == sorted(facets.tags, key=lambda t: (-facets.tags[t], t))
    overview = next(o for o in store.datasets.overviews() if o.name == dataset)
    assert overview.sessions == facets.total and overview.statuses == facets.statuses
    assert store.datasets.get(dataset).sessions == facets.total
    assert {d.name: d.sessions for d in store.datasets.all()}[dataset] == facets.total
    if store.kind == "postgresql":  # the kept counts are the sessions' own, none left over
        kept = query(
            store,
            "SELECT dataset_id, status, assistant, has_truth, n FROM session_counts WHERE n <> 0 ORDER BY 1, 2, 3, 4",
        )
        counted = query(
            store,
            "SELECT dataset_id, status, coalesce('=' || assistant_id, ''), has_truth, count(*) FROM sessions "
            "GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4",
        )
        assert kept == counted
        kept_tags = query(store, "SELECT dataset_id, tag, n FROM tag_counts WHERE n <> 0 ORDER BY 1, 2")
        counted_tags = query(
            store,
            "SELECT s.dataset_id, t.tag, count(*) FROM session_tags t JOIN sessions s ON s.id = t.session_pk "
            "GROUP BY 1, 2 ORDER BY 1, 2",
        )
        assert kept_tags == counted_tags


def test_the_counts_follow_every_change(store: Store, tmp_path: Path) -> None:
    ann = as_user(store, "ann")
    import_file(ann, write_jsonl(tmp_path / "a.jsonl", _sessions(40)), "d")
    import_file(ann, write_jsonl(tmp_path / "other.jsonl", _sessions(7)), "other")
    _check(store, "d")
    # A re-import: new sessions, and changed ones (another assistant, the reference gone, a new one).
    again = _sessions(50)
    for row in again[:10]:
        row["assistant_id"] = "beta"
        row.pop("reference", None)
    again[20]["reference"] = "now it has one"
    import_file(ann, write_jsonl(tmp_path / "b.jsonl", again), "d")
    _check(store, "d")
    # Saves: a status, a reference given and taken away, tags, a stale save refused.
    pks = store.sessions.pks("d")
    stored = ann.sessions.get(pks[1])
    version = ann.sessions.set_status(pks[1], "flagged", base_version=stored.version)
    version = ann.sessions.save(pks[1], {"reference": "given"}, base_version=version)
    ann.sessions.save(pks[2], {"tags": ["x"]}, base_version=ann.sessions.get(pks[2]).version)
    with pytest.raises(ConflictError):
        ann.sessions.set_status(pks[1], "approved", base_version=version - 1)
    _check(store, "d")
    first_edit = ann.sessions.history(pks[1])[0].id
    ann.sessions.restore(pks[1], first_edit, base_version=version)
    three = ann.sessions.get(pks[3])
    ann.sessions.save(pks[3], {"reference": None, "status": "rejected"}, base_version=three.version)
    _check(store, "d")
    # Many at once, then a dataset deleted (the other's counts stay).
    ann.sessions.set_status_many(pks[10:30], "in_progress")
    _check(store, "d")
    ann.datasets.delete("other", confirm="other")
    _check(store, "d")
    assert store.sessions.count("d") == len(store.sessions.pks("d")) > 50  # (a new assistant: new sessions)


def test_a_failed_import_changes_no_count(store: Store, tmp_path: Path) -> None:
    ann = as_user(store, "ann")
    import_file(ann, write_jsonl(tmp_path / "a.jsonl", _sessions(12)), "d")
    before = store.sessions.facets("d")
    rows = _sessions(5, offset=100)
    lines = [*(write_jsonl(tmp_path / "b.jsonl", rows).read_text().splitlines()), "{not json"]
    (tmp_path / "b.jsonl").write_text("\n".join(lines) + "\n")
    report = import_file(ann, tmp_path / "b.jsonl", "d")
    assert report.failed == 1 and report.new == 5  # (the good records kept)
    _check(store, "d")
    assert store.sessions.facets("d").total == before.total + 5


def test_a_copy_between_engines_keeps_the_counts(store: Store, tmp_path: Path, pg_cluster: Any) -> None:
    ann = as_user(store, "ann")
    import_file(ann, write_jsonl(tmp_path / "a.jsonl", _sessions(30)), "d")
    pk = store.sessions.pks("d")[4]
    ann.sessions.set_status(pk, "approved", base_version=ann.sessions.get(pk).version)
    other = str(tmp_path / "copy.db") if store.kind == "postgresql" else pg_cluster.new_database()
    with open_store(other) as copied:
        for _ in range(2):  # (a copy run again changes nothing)
            copy_store(store, copied)
            _check(copied, "d")
        assert copied.sessions.facets("d") == store.sessions.facets("d")


def test_a_database_from_before_the_counts_gets_them_on_upgrade(pg_cluster: Any, tmp_path: Path) -> None:
    url = pg_cluster.new_database()
    with open_store(url) as store:
        import_file(as_user(store, "ann"), write_jsonl(tmp_path / "a.jsonl", _sessions(25)), "d")
        # As the database was before migration 0009: no counts, no triggers.
        execute(store, "DROP TABLE session_counts")
        execute(store, "DROP TABLE tag_counts")
        execute(store, "DROP FUNCTION evalcore_count_sessions CASCADE")
        execute(store, "DELETE FROM evalcore_migrations WHERE name IN ('0009_session_counts', '0010_tag_counts')")
    from evalcore.errors import SchemaVersionError

    with pytest.raises(SchemaVersionError, match="db upgrade"):
        open_store(url)
    from evalcore.store.postgres import PostgresEngine

    engine = PostgresEngine(url, check=False)
    try:
        assert engine.migrate() == ["0009_session_counts", "0010_tag_counts"]
    finally:
        engine.close()
    with open_store(url) as store:
        _check(store, "d")
        ann = as_user(store, "ann")  # (and counted from now on)
        pk = store.sessions.pks("d")[3]
        ann.sessions.save(pk, {"tags": ["new"], "status": "flagged"}, base_version=ann.sessions.get(pk).version)
        _check(store, "d")


def test_two_writers_changing_statuses_at_once_keep_the_counts(store_url: str, tmp_path: Path) -> None:
    """Saves in threads, each moving sessions between statuses (opposite ways): no deadlock, no count lost."""
    import threading

    with open_store(store_url) as store:
        import_file(as_user(store, "ann"), write_jsonl(tmp_path / "a.jsonl", _sessions(40)), "d")
        pks = store.sessions.pks("d")
    errors: list[BaseException] = []

    def work(name: str, order: list[str]) -> None:
        try:
            with open_store(store_url) as mine:
                me = as_user(mine, name)
                for pk, status in zip(pks, itertools.cycle(order), strict=False):
                    for _ in range(5):
                        try:
                            me.sessions.set_status(pk, status, base_version=me.sessions.get(pk).version)
                            break
                        except ConflictError:
                            continue
        except BaseException as exc:  # (said below)
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=("ann", ["approved", "todo", "flagged"])),
        threading.Thread(target=work, args=("bob", ["flagged", "todo", "approved"])),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    with open_store(store_url) as store:
        _check(store, "d")


def test_a_page_after_another_process_renamed_deleted_or_made_the_dataset_again(store_url: str, tmp_path: Path) -> None:
    """A page uses the dataset's id this process read before, checked in the same round trip: a dataset renamed,
    deleted, or deleted and made again under its name since is found as it is now."""
    from evalcore.errors import NotFoundError

    with open_store(store_url) as mine, open_store(store_url) as theirs:
        import_file(as_user(mine, "ann"), write_jsonl(tmp_path / "a.jsonl", _sessions(6)), "d")
        assert mine.sessions.browse("d").total == 6  # (its id now known to this store)
        as_user(theirs, "bob").datasets.rename("d", "e")
        with pytest.raises(NotFoundError, match="no dataset named 'd'"):
            mine.sessions.browse("d")
        assert mine.sessions.browse("e").total == 6
        import_file(as_user(theirs, "bob"), write_jsonl(tmp_path / "b.jsonl", _sessions(2, offset=50)), "d")
        page = mine.sessions.browse("d")
        assert (page.total, [s.session_id for s in page.items]) == (2, ["s50", "s51"])
        as_user(theirs, "bob").datasets.delete("e", confirm="e")
        with pytest.raises(NotFoundError):
            mine.sessions.browse("e", offset=10)
        as_user(theirs, "bob").datasets.delete("d", confirm="d")
        import_file(as_user(theirs, "bob"), write_jsonl(tmp_path / "c.jsonl", _sessions(3, offset=70)), "d")
        assert [s.session_id for s in mine.sessions.browse("d").items] == ["s70", "s71", "s72"]


def test_a_page_says_which_sessions_share_their_id(store: Store, tmp_path: Path) -> None:
    """Two assistants' answers to one conversation are two sessions with one session id: their links tell them apart,
    on the page as on the session read whole (the page says it in its own round trip on PostgreSQL)."""
    rows = [_session(1, assistant="alpha"), _session(1, assistant="beta"), _session(2, assistant="alpha")]
    import_file(as_user(store, "ann"), write_jsonl(tmp_path / "a.jsonl", rows), "d")
    page = store.sessions.browse("d")
    assert [s.shared for s in page.items] == [True, True, False]
    assert [s.link for s in page.items] == [store.sessions.get(s.pk).link for s in page.items]
    assert len({s.link for s in page.items}) == 3


def test_a_reimport_keeps_the_reviewers_status_and_tags(store: Store, tmp_path: Path) -> None:
    """A changed conversation imported again replaces the stored one; its status and tags stay as reviewers left
    them (the README's import section), and so do their counts."""
    ann = as_user(store, "ann")
    import_file(ann, write_jsonl(tmp_path / "a.jsonl", _sessions(20)), "d")
    pk = store.sessions.pks("d")[11]
    before = store.sessions.get(pk).session
    again = _sessions(20)
    again[11].update(tags=["from the file"], status="flagged")
    again[11]["messages"][1]["content"] = "a new answer"
    assert import_file(ann, write_jsonl(tmp_path / "b.jsonl", again), "d").updated == 1
    after = store.sessions.get(pk).session
    assert after.messages[1].content == "a new answer"
    assert (after.tags, after.status) == (before.tags, before.status) != (["from the file"], "flagged")
    _check(store, "d")

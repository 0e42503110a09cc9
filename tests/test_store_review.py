"""The store's review-app features on real SQLite files: connections per thread, migration 0002,
facets, neighbours, bulk changes, dataset management, verdicts, scores across runs, imports from a stream."""

from __future__ import annotations

import hashlib
import io
import json
import math
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user, own_connection, query
from formats_util import sessions_of, write_jsonl
from sqlite_utils import Database

from evalcore.errors import ConflictError, NotFoundError, PermissionDeniedError, UsageError
from evalcore.importing import import_file, import_stream
from evalcore.schema import STATUSES
from evalcore.scoring import score_dataset
from evalcore.store import SCHEMA_VERSION, Store, open_store
from evalcore.store.labels import LABEL, rubric_verdict
from evalcore.store.migrations import migration_set
from evalcore.store.queries import SessionFilter
from evalcore.store.rows import row_for


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        yield s


def _native(
    session_id: str | None,
    *,
    turns: int = 1,
    calls: int = 0,
    assistant: str | None = "bot-a",
    reference: str | None = None,
    turn_truth: list[dict[str, Any]] | None = None,
    tags: list[str] | None = None,
    words: str = "",
) -> dict[str, Any]:
    """A record of evalcore's own format: ``turns`` user turns, ``calls`` tool calls in the first."""
    messages: list[dict[str, Any]] = []
    for t in range(turns):
        messages.append({"role": "user", "content": f"question {t} of {session_id or 'anon'} {words}".strip()})
        for c in range(calls if t == 0 else 0):
            call_id = f"{session_id}-{c}"
            messages.append({"role": "assistant", "tool_calls": [{"name": "lookup", "args": {"n": c}, "id": call_id}]})
            messages.append({"role": "tool", "content": "{}", "tool_call_id": call_id})
        messages.append({"role": "assistant", "content": f"answer {t}"})
    record: dict[str, Any] = {"schema_version": 1, "messages": messages}
    if session_id is not None:
        record["session_id"] = session_id
    if assistant is not None:
        record["assistant_id"] = assistant
    if reference is not None:
        record["reference"] = reference
    if turn_truth is not None:
        record["turn_truth"] = turn_truth
    if tags:
        record["tags"] = tags
    return record


def _import(store: Store, tmp_path: Path, dataset: str, records: list[dict[str, Any]], name: str = "s.jsonl") -> None:
    report = import_file(store, write_jsonl(tmp_path / name, records), dataset)
    assert report.failed == 0, [str(p) for p in report.problems]


def _pk(store: Store, dataset: str, session_id: str) -> int:
    return store.sessions.find(dataset, session_id)


def _all(store: Store, dataset: str, f: SessionFilter | None = None, **kw: Any) -> list[int]:
    return [s.pk for s in store.sessions.browse(dataset, f, limit=100_000, **kw).items]


# -- a connection per thread -------------------------------------------------------------


def test_an_open_write_in_one_thread_is_not_seen_by_another(store: Store, tmp_path: Path) -> None:
    _import(store, tmp_path, "d", [_native("a"), _native("b")])
    pk = _pk(store, "d", "a")
    inside, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            with store._engine.write() as conn:
                conn.execute("UPDATE sessions SET status = 'flagged', version = version + 1 WHERE id = ?", [pk])
                inside.set()
                release.wait(10)
        except BaseException as exc:  # reported below
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert inside.wait(10)
        stored = store.sessions.get(pk)  # this thread's own connection: the other's write is not committed
        assert stored.session.status == "todo" and stored.version == 1
        assert store.sessions.browse("d", SessionFilter(status=["flagged"])).total == 0
        assert store.sessions.facets("d").statuses["flagged"] == 0
    finally:
        release.set()
        thread.join(10)
    assert not errors and not thread.is_alive()
    stored = store.sessions.get(pk)
    assert stored.session.status == "flagged" and stored.version == 2
    assert store.sessions.browse("d", SessionFilter(status=["flagged"])).total == 1


def test_a_failed_write_in_one_thread_leaves_no_trace(store: Store, tmp_path: Path) -> None:
    _import(store, tmp_path, "d", [_native("a")])
    pk = _pk(store, "d", "a")

    def writer() -> None:
        with store._engine.write() as conn:
            conn.execute("UPDATE sessions SET status = 'flagged' WHERE id = ?", [pk])
            raise RuntimeError("boom")

    errors: list[BaseException] = []
    thread = threading.Thread(target=lambda: _catch(writer, errors))
    thread.start()
    thread.join(10)
    assert [str(e) for e in errors] == ["boom"]
    assert store.sessions.get(pk).session.status == "todo"
    as_user(store, "ann").sessions.set_status(pk, "approved", base_version=1)  # the write lock was released
    assert store.sessions.get(pk).session.status == "approved"


def _catch(work: Any, errors: list[BaseException]) -> None:
    try:
        work()
    except BaseException as exc:
        errors.append(exc)


def test_two_threads_save_different_sessions_at_once(store: Store, tmp_path: Path) -> None:
    _import(store, tmp_path, "d", [_native("a"), _native("b")])
    pks = {"ann": _pk(store, "d", "a"), "bob": _pk(store, "d", "b")}
    start = threading.Barrier(2)
    errors: list[BaseException] = []
    connections: dict[str, int] = {}

    def reviewer(author: str) -> None:
        try:
            if store.kind == "sqlite":
                connections[author] = id(own_connection(store))
            start.wait(10)
            version = 1
            for n in range(20):
                version = as_user(store, author).sessions.save(
                    pks[author], {"reference": f"{author} {n}"}, base_version=version
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reviewer, args=(a,)) for a in pks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors
    if store.kind == "sqlite":
        assert len({connections["ann"], connections["bob"], id(own_connection(store))}) == 3  # a connection each
    for author, pk in pks.items():
        stored = store.sessions.get(pk)
        assert stored.version == 21 and stored.session.reference == f"{author} 19"
        assert {e.author for e in store.sessions.history(pk)} == {author} and len(store.sessions.history(pk)) == 20


def test_close_closes_the_connections_of_other_threads(tmp_path: Path) -> None:
    store = open_store(tmp_path / "a.db")
    opened, closed = threading.Event(), threading.Event()
    box: dict[str, Any] = {}

    def worker() -> None:
        box["db"] = own_connection(store)
        box["names"] = store.datasets.names()
        opened.set()
        closed.wait(10)
        box["after"] = store.datasets.names()  # a closed store opens a fresh connection when used again

    thread = threading.Thread(target=worker)
    thread.start()
    assert opened.wait(10)
    assert len(store._engine._connections) == 2
    store.close()
    assert store._engine._connections == []
    with pytest.raises(sqlite3.ProgrammingError):
        box["db"].execute("SELECT 1")
    closed.set()
    thread.join(10)
    assert box["names"] == [] and box["after"] == []
    store.close()


def test_connections_of_finished_threads_are_closed(tmp_path: Path) -> None:
    store = open_store(tmp_path / "threads.db")  # (the SQLite engine's connection per thread)
    _import(store, tmp_path, "d", [_native("a")])
    seen: list[Any] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            seen.append(own_connection(store))
            assert store.datasets.get("d").sessions == 1
        except BaseException as exc:
            errors.append(exc)

    for _ in range(50):
        thread = threading.Thread(target=reader)
        thread.start()
        thread.join(10)
        assert len(store._engine._connections) <= 2  # this thread's and the last reader's
    assert not errors
    assert len({id(db) for db in seen}) == 50
    for db in seen[:-1]:
        with pytest.raises(sqlite3.ProgrammingError):
            db.execute("SELECT 1")
    store.datasets.names()  # the main thread's connection still works


# -- migration 0002 on a version-1 database ----------------------------------------------


def _v1_database(path: Path, source: Path) -> dict[str, int]:
    """A database as evalcore wrote it before migration 0002: one dataset, sessions stored with the
    old ``turns`` key (hashed that way); returns the pks by session_id."""
    db = Database(path)
    migration_set().apply(db, stop_before="0002_review")
    assert [m.name for m in migration_set().applied(db)] == ["0001_initial"]
    db.execute("INSERT INTO datasets (name, description, created_at) VALUES ('old', NULL, '2025-01-01T00:00:00+00:00')")
    pks: dict[str, int] = {}
    for n, session in enumerate(sessions_of(source, "evalcore")):
        values = list(row_for(1, source.name, session).values())
        data = values[14].replace('"turn_truth":', '"turns":')
        values[14], values[15] = data, hashlib.sha256(data.encode()).hexdigest()
        stamp = f"2025-01-0{n + 1}T00:00:00+00:00"
        cursor = db.conn.execute(
            "INSERT INTO sessions (dataset_id, key, session_id, assistant_id, title, status, tags, n_turns, "
            "n_messages, n_tool_calls, source, format, position, line, data, content_hash, search_text, "
            "created_at, updated_at) VALUES (" + ", ".join("?" * 19) + ")",
            [*values[:17], stamp, stamp],
        )
        pks[str(session.session_id)] = int(cursor.lastrowid or 0)
    db.conn.execute("INSERT INTO sessions_fts (rowid, search_text) SELECT id, search_text FROM sessions")
    db.conn.commit()
    return pks


def _v1_edit(path: Path, pk: int, field: str, old: Any, new: Any, *, turn: int | None = None) -> None:
    conn = sqlite3.connect(path)
    version = conn.execute("SELECT version FROM sessions WHERE id = ?", [pk]).fetchone()[0] + 1
    conn.execute(
        "INSERT INTO edits (session_pk, turn, field, old, new, author, at, reason, version) "
        "VALUES (?, ?, ?, ?, ?, 'ann', '2025-02-01T00:00:00+00:00', NULL, ?)",
        [pk, turn, field, json.dumps(old), json.dumps(new), version],
    )
    conn.execute("UPDATE sessions SET version = ?, n_edits = n_edits + 1 WHERE id = ?", [version, pk])
    conn.commit()
    conn.close()


def test_migration_0002_on_a_version_1_database(tmp_path: Path) -> None:
    source = write_jsonl(
        tmp_path / "old.jsonl",
        [
            _native("with-ref", reference="The reference."),
            _native("with-turns", turns=2, turn_truth=[{"ground_truth": "first"}, {"observation": "look"}]),
            _native("none"),
            _native("edited-in", turns=1),
            _native("edited-out"),
            _native("qa-only"),
        ],
    )
    path = tmp_path / "v1.db"
    pks = _v1_database(path, source)
    raw = sqlite3.connect(path).execute("SELECT data FROM sessions WHERE id = ?", [pks["with-turns"]]).fetchone()[0]
    assert '"turns":' in raw and "turn_truth" not in raw  # stored as version 1 did
    _v1_edit(path, pks["edited-in"], "reference", None, "added by a reviewer")
    _v1_edit(path, pks["edited-out"], "reference", None, "briefly")
    _v1_edit(path, pks["edited-out"], "reference", "briefly", None)
    _v1_edit(path, pks["qa-only"], "qa_id", None, "q-1", turn=0)

    with open_store(path) as store:
        conn = sqlite3.connect(path)
        assert conn.execute("SELECT count(*) FROM _sqlite_migrations").fetchone()[0] == SCHEMA_VERSION
        truth = dict(conn.execute("SELECT session_id, has_truth FROM sessions").fetchall())
        assert truth == {
            "with-ref": 1,
            "with-turns": 1,
            "none": 0,
            "edited-in": 1,
            "edited-out": 0,
            "qa-only": 0,
        }
        # The flag agrees with the sessions as loaded (the file's ground truth with the edits laid over it).
        for session_id, pk in pks.items():
            assert bool(truth[session_id]) == store.sessions.get(pk).session.has_ground_truth(), session_id
        session = store.sessions.get(pks["with-turns"]).session
        assert [(t.ground_truth, t.observation) for t in session.turn_truth] == [("first", None), (None, "look")]
        assert [t.truth.ground_truth for t in session.turns()] == ["first", None]
        assert store.sessions.get(pks["qa-only"]).session.turn_truth[0].qa_id == "q-1"
        with_truth = store.sessions.browse("old", SessionFilter(has_truth=True), limit=100)
        assert {s.session_id for s in with_truth.items} == {"with-ref", "with-turns", "edited-in"}
        assert store.sessions.count("old", SessionFilter(has_truth=False)) == 3
        (overview,) = store.datasets.overviews()
        assert overview.last_import_at == "2025-01-06T00:00:00+00:00" and overview.with_truth == 3
        for table in ("verdicts", "jobs", "meta"):
            assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
        # The same file imported again is the same data: nothing is changed, no history is added.
        again = import_file(store, source, "old")
        assert (again.new, again.updated, again.unchanged) == (0, 0, 6)
        assert store.sessions.get(pks["with-turns"]).version == 1
        # Saving a session still works and keeps the flag right.
        pk = pks["with-turns"]
        as_user(store, "ann").sessions.save(pk, {"ground_truth": None}, base_version=1, turn=0)
        v = as_user(store, "ann").sessions.save(pk, {"observation": None}, base_version=2, turn=1)
        assert store.sessions.get(pk).session.turn_truth == []
        assert store.sessions.browse("old", SessionFilter(has_truth=True), limit=100).total == 2
        assert v == 3


# -- filters and summaries ---------------------------------------------------------------


def test_has_truth_filter_and_summary_fields(store: Store, tmp_path: Path) -> None:
    _import(
        store,
        tmp_path,
        "d",
        [
            _native("ref", reference="r"),
            _native(None, turn_truth=[{"ground_truth": "g"}]),
            _native("plain"),
            _native(None),
        ],
        name="mixed.jsonl",
    )
    items = store.sessions.browse("d").items
    assert [(s.session_id, s.key, s.has_truth, s.updated_by) for s in items] == [
        ("ref", 'ida:["ref","bot-a"]', True, None),  # a session is its id and its assistant
        (None, "pos:mixed.jsonl:1", True, None),
        ("plain", 'ida:["plain","bot-a"]', False, None),
        (None, "pos:mixed.jsonl:3", False, None),
    ]
    assert [s.ref for s in items] == ["ref", "pos:mixed.jsonl:1", "plain", "pos:mixed.jsonl:3"]
    assert [s.ref for s in store.sessions.browse("d", SessionFilter(has_truth=True)).items] == [
        "ref",
        "pos:mixed.jsonl:1",
    ]
    assert [s.ref for s in store.sessions.browse("d", SessionFilter(has_truth=False)).items] == [
        "plain",
        "pos:mixed.jsonl:3",
    ]
    assert SessionFilter(has_truth=False).as_dict() == {"has_truth": False}
    # A reviewer's ground truth moves a session into the filter; clearing it moves it out again.
    pk = items[2].pk
    as_user(store, "ann").sessions.save(pk, {"reference": "now it has one"}, base_version=1)
    summary = store.sessions.browse("d", SessionFilter(has_truth=True)).items[-1]
    assert summary.pk == pk and summary.has_truth and summary.updated_by == "ann" and summary.version == 2
    as_user(store, "bob").sessions.save(pk, {"reference": None}, base_version=2)
    assert store.sessions.count("d", SessionFilter(has_truth=True)) == 2
    assert store.sessions.browse("d", SessionFilter(has_truth=False)).items[0].updated_by == "bob"
    # A tag does not count as ground truth.
    as_user(store, "bob").sessions.save(pk, {"tags": ["x"]}, base_version=3)
    assert store.sessions.count("d", SessionFilter(has_truth=True)) == 2


def test_find_ref_and_meta(store: Store, tmp_path: Path) -> None:
    _import(store, tmp_path, "d", [_native("a"), _native(None), _native("b")], name="f.jsonl")
    _import(store, tmp_path, "e", [_native("a")], name="g.jsonl")
    items = store.sessions.browse("d").items
    assert store.sessions.find_ref("d", "a") == items[0].pk
    assert store.sessions.find_ref("d", "pos:f.jsonl:1") == items[1].pk
    assert store.sessions.find_ref("d", 'ida:["b","bot-a"]') == items[2].pk  # the key works as well
    assert store.sessions.find_ref("e", "a") != items[0].pk
    for summary in items:
        assert store.sessions.find_ref("d", summary.ref) == summary.pk
    with pytest.raises(NotFoundError, match="no session 'zzz' in dataset 'd'"):
        store.sessions.find_ref("d", "zzz")
    with pytest.raises(NotFoundError, match="no dataset named 'nope'"):
        store.sessions.find_ref("nope", "a")

    assert store.meta.get("greeting") is None
    store.meta.set("greeting", "hello")
    store.meta.set("greeting", "hello again")
    store.meta.set("other", "x")
    assert store.meta.get("greeting") == "hello again"
    with open_store(store.url) as other:  # another process or tab sees it
        assert other.meta.get("greeting") == "hello again" and other.meta.get("other") == "x"


# -- facets ------------------------------------------------------------------------------


def test_facets_count_statuses_tags_assistants_and_truth(store: Store, tmp_path: Path) -> None:
    records = [
        _native("s1", assistant="bot-b", tags=["hard", "refunds"], reference="r"),
        _native("s2", assistant="bot-a", tags=["hard"]),
        _native("s3", assistant="bot-b", tags=["easy", "hard"]),
        _native("s4", assistant="bot-c", tags=["refunds"], turn_truth=[{"weight": 0.5}]),
        _native("s5", assistant=None),
        _native("s6", assistant="bot-b", tags=["zeta"]),
    ]
    _import(store, tmp_path, "d", records)
    _import(store, tmp_path, "other", [_native("o1", assistant="bot-z", tags=["hard"])], name="o.jsonl")
    f = store.sessions.facets("d")
    assert f.total == 6 and f.with_truth == 2
    assert f.statuses == {"todo": 6, "in_progress": 0, "approved": 0, "rejected": 0, "flagged": 0}
    assert list(f.statuses) == list(STATUSES)
    assert list(f.tags.items()) == [("hard", 3), ("refunds", 2), ("easy", 1), ("zeta", 1)]
    assert list(f.assistants.items()) == [("bot-b", 3), ("bot-a", 1), ("bot-c", 1)]

    as_user(store, "ann").sessions.set_status(_pk(store, "d", "s1"), "approved", base_version=1)
    as_user(store, "ann").sessions.set_status(_pk(store, "d", "s2"), "flagged", base_version=1)
    as_user(store, "ann").sessions.save(_pk(store, "d", "s5"), {"tags": ["zeta", "easy"], "goal": "g"}, base_version=1)
    f = store.sessions.facets("d")
    assert f.statuses == {"todo": 4, "in_progress": 0, "approved": 1, "rejected": 0, "flagged": 1}
    assert list(f.tags.items()) == [("hard", 3), ("easy", 2), ("refunds", 2), ("zeta", 2)]
    assert f.with_truth == 3

    store.datasets.get("empty", create=True)
    empty = store.sessions.facets("empty")
    assert empty.total == 0 and set(empty.statuses.values()) == {0} and empty.tags == {} and empty.assistants == {}
    with pytest.raises(NotFoundError):
        store.sessions.facets("nope")


# -- neighbours --------------------------------------------------------------------------


def _walk(store: Store, dataset: str, f: SessionFilter | None, sort: str, descending: bool) -> None:
    """Going from the first session with ``next`` visits every session in ``browse``'s order; going
    back from the last with ``previous`` visits them in reverse."""
    expected = _all(store, dataset, f, sort=sort, descending=descending)
    assert len(expected) > 3
    visited: list[int] = []
    pk: int | None = expected[0]
    while pk is not None:
        n = store.sessions.neighbours(dataset, pk, f, sort=sort, descending=descending)
        assert n.index == len(visited) and n.total == len(expected), (sort, descending, pk)
        visited.append(pk)
        assert len(visited) <= len(expected)
        pk = n.next
    assert visited == expected, (sort, descending)
    back: list[int] = []
    pk = expected[-1]
    while pk is not None:
        n = store.sessions.neighbours(dataset, pk, f, sort=sort, descending=descending)
        assert n.index == len(expected) - 1 - len(back)
        back.append(pk)
        assert len(back) <= len(expected)
        pk = n.previous
    assert back == expected[::-1], (sort, descending)


@pytest.fixture
def varied(store: Store, tmp_path: Path) -> Store:
    """Twelve sessions: some without session_id, turns and tool calls with ties, two assistants."""
    records = []
    for i in range(12):
        session_id = None if i % 4 == 1 else f"s-{(7 * i) % 12:02d}"  # ids not in file order
        records.append(_native(session_id, turns=1 + i % 3, calls=(i * 5) % 4, assistant="bot-a" if i % 2 else "bot-b"))
    _import(store, tmp_path, "d", records)
    _import(store, tmp_path, "other", [_native("x"), _native("y")], name="o.jsonl")
    return store


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("sort", ["order", "session_id", "turns", "tool_calls", "assistant", "status"])
def test_neighbours_walk_the_list_browse_shows(varied: Store, sort: str, descending: bool) -> None:
    store = varied
    _walk(store, "d", None, sort, descending)
    _walk(store, "d", SessionFilter(assistant="bot-b"), sort, descending)


def test_neighbours_put_null_session_ids_first_ascending_and_last_descending(varied: Store) -> None:
    store = varied
    ascending = store.sessions.browse("d", sort="session_id", limit=100).items
    assert [s.session_id for s in ascending[:3]] == [None, None, None]
    assert all(s.session_id is not None for s in ascending[3:])
    descending = store.sessions.browse("d", sort="session_id", descending=True, limit=100).items
    assert [s.session_id for s in descending[-3:]] == [None, None, None]
    last_named = descending[-4]
    n = store.sessions.neighbours("d", last_named.pk, sort="session_id", descending=True)
    assert n.next == descending[-3].pk and n.index == 8
    first_null = ascending[0]
    n = store.sessions.neighbours("d", first_null.pk, sort="session_id")
    assert n.previous is None and n.next == ascending[1].pk and n.index == 0


def test_neighbours_by_score(varied: Store) -> None:
    store = varied
    report = score_dataset(store, "d", ["tool_call_count", "turn_count"])
    run_id = report.run.id
    for metric in ("tool_call_count", "turn_count"):
        f = SessionFilter(run_id=run_id, metric=metric)
        for descending in (False, True):
            _walk(store, "d", f, "score", descending)
        scores = [s.score or 0.0 for s in store.sessions.browse("d", f, sort="score", limit=100).items]
        assert scores == sorted(scores) and len(set(scores)) < len(scores)  # ties are there to break
    only_some = SessionFilter(run_id=run_id, metric="tool_call_count", min_score=1, max_score=2)
    _walk(store, "d", only_some, "score", True)
    with pytest.raises(UsageError, match="needs both a run and a metric"):
        store.sessions.neighbours("d", _all(store, "d")[0], sort="score")


def test_neighbours_of_a_session_that_left_the_filter(varied: Store) -> None:
    store = varied
    todo = SessionFilter(status=["todo"])
    for sort, descending in (("order", False), ("turns", False), ("turns", True), ("session_id", False)):
        expected = _all(store, "d", todo, sort=sort, descending=descending)
        pk = expected[4]
        version = store.sessions.get(pk).version
        as_user(store, "ann").sessions.set_status(pk, "approved", base_version=version)
        n = store.sessions.neighbours("d", pk, todo, sort=sort, descending=descending)
        assert n.index is None and n.total == len(expected) - 1
        assert (n.previous, n.next) == (expected[3], expected[5]), (sort, descending)
        # It is still in place for a filter it matches.
        assert store.sessions.neighbours("d", pk, sort=sort, descending=descending).index is not None
        as_user(store, "ann").sessions.set_status(pk, "todo", base_version=version + 1)
    first = _all(store, "d", todo)[0]
    as_user(store, "ann").sessions.set_status(first, "approved", base_version=store.sessions.get(first).version)
    n = store.sessions.neighbours("d", first, todo)
    assert n.index is None and n.previous is None and n.next == _all(store, "d", todo)[0]
    with pytest.raises(UsageError, match="unknown sort"):
        store.sessions.neighbours("d", first, sort="nope")


# -- bulk changes ------------------------------------------------------------------------


def test_bulk_status_and_tags_on_chosen_sessions(store: Store, tmp_path: Path) -> None:
    _import(store, tmp_path, "d", [_native(f"s{i}", tags=["old"] if i < 2 else None) for i in range(5)])
    _import(store, tmp_path, "other", [_native("s0")], name="o.jsonl")
    pks = store.sessions.pks("d")
    other = store.sessions.pks("other")[0]
    v = as_user(store, "ann").sessions.save(pks[0], {"reference": "first"}, base_version=1)
    assert v == 2
    assert as_user(store, "bob").sessions.set_status_many([pks[0], pks[1], pks[0]], "flagged", reason="look again") == 2
    assert as_user(store, "bob").sessions.set_status_many(pks[:3], "flagged") == 1  # two were flagged already
    assert as_user(store, "cy").sessions.tag_many(pks[:3], add=["hard", " hard ", "x"], remove=["old"]) == 3
    assert as_user(store, "cy").sessions.tag_many(pks[:3], add=["hard"]) == 0  # nothing to change
    assert [store.sessions.get(pk).session.tags for pk in pks[:3]] == [["hard", "x"], ["hard", "x"], ["hard", "x"]]
    assert (
        store.sessions.get(pks[0]).version == 4
        and store.sessions.get(pks[1]).version == 3
        and store.sessions.get(pks[3]).version == 1
    )
    stored = store.sessions.get(pks[1])
    assert stored.status_by == "bob" and stored.updated_by == "cy" and stored.n_edits == 2
    assert store.sessions.get(other).version == 1 and store.sessions.get(other).session.status == "todo"

    history = store.sessions.history(pks[0])
    assert [(e.author, e.field, e.old, e.new, e.version) for e in history] == [
        ("ann", "reference", None, "first", 2),
        ("bob", "status", "todo", "flagged", 3),
        ("cy", "tags", ["old"], ["hard", "x"], 4),
    ]
    assert history[1].reason == "look again"
    assert [e.old for e in store.sessions.history(pks[1]) if e.field == "tags"] == [["old"]]
    # The state after each edit, and a restore, see the bulk changes as any other edit.
    after_reference = store.sessions.state_at(pks[0], history[0].id)
    assert (after_reference.reference, after_reference.status, after_reference.tags) == ("first", "todo", ["old"])
    after_status = store.sessions.state_at(pks[0], history[1].id)
    assert (after_status.status, after_status.tags) == ("flagged", ["old"])
    as_user(store, "dee").sessions.restore(pks[0], history[0].id, base_version=4)
    restored = store.sessions.get(pks[0])
    assert (restored.version, restored.session.status, restored.session.tags) == (5, "todo", ["old"])
    assert restored.session.reference == "first"
    status_only = store.sessions.state_at(pks[1], store.sessions.history(pks[1])[0].id)
    assert status_only.tags == ["old"] and status_only.status == "flagged"

    f = store.sessions.facets("d")
    assert list(f.tags.items()) == [("hard", 2), ("x", 2), ("old", 1)]
    assert f.statuses["flagged"] == 2 and f.statuses["todo"] == 3
    assert store.sessions.browse("d", SessionFilter(tags=["hard", "x"])).total == 2
    assert [s.pk for s in store.sessions.browse("d", SessionFilter(tags=["old"])).items] == [pks[0]]

    with pytest.raises(UsageError, match="unknown status 'done'"):
        as_user(store, "bob").sessions.set_status_many(pks, "done")
    with pytest.raises(UsageError, match="name a tag"):
        as_user(store, "bob").sessions.tag_many(pks, add=[" ", ""], remove=[])
    with pytest.raises(UsageError, match="name a tag"):
        as_user(store, "bob").sessions.tag_many(pks)
    with pytest.raises(PermissionDeniedError, match="viewer"):
        as_user(store, "vic", "viewer").sessions.set_status_many(pks, "approved")
    with pytest.raises(PermissionDeniedError, match="viewer"):
        as_user(store, "vic", "viewer").sessions.tag_many(pks, add=["t"])
    assert as_user(store, "bob").sessions.set_status_many([], "approved") == 0
    assert as_user(store, "bob").sessions.set_status_many([999999], "approved") == 0
    assert store.sessions.get(pks[0]).version == 5


def test_a_save_based_on_the_version_before_a_bulk_change_is_refused(store: Store, tmp_path: Path) -> None:
    _import(store, tmp_path, "d", [_native("a"), _native("b")])
    pk = _pk(store, "d", "a")
    base = store.sessions.get(pk).version
    as_user(store, "bob").sessions.set_status_many([pk], "approved")
    with pytest.raises(ConflictError) as caught:
        as_user(store, "ann").sessions.save(pk, {"reference": "mine"}, base_version=base)
    assert "bob" in str(caught.value) and "status" in str(caught.value) and caught.value.current_version == 2
    as_user(store, "cy").sessions.tag_many([pk], add=["t"])
    with pytest.raises(ConflictError, match="cy .* changed tags"):
        as_user(store, "ann").sessions.save(pk, {"reference": "mine"}, base_version=2)
    assert as_user(store, "ann").sessions.save(pk, {"reference": "mine"}, base_version=3) == 4


def test_bulk_changes_on_everything_a_filter_matches(store: Store, tmp_path: Path) -> None:
    records = [_native(f"s{i:04d}", assistant="bot-a" if i % 3 else "bot-b") for i in range(1150)]
    _import(store, tmp_path, "d", records)
    _import(store, tmp_path, "other", [_native("s0000", assistant="bot-a")], name="o.jsonl")
    bot_a = SessionFilter(assistant="bot-a")
    pks = store.sessions.matching("d", bot_a)
    assert len(pks) == store.sessions.count("d", bot_a) == 766 and pks == sorted(pks)
    assert as_user(store, "ann").sessions.set_status_many(pks, "in_progress") == 766
    assert as_user(store, "bob").sessions.set_status_many(store.sessions.matching("d"), "in_progress") == 1150 - 766
    assert store.sessions.facets("d").statuses["in_progress"] == 1150
    assert store.sessions.get(store.sessions.pks("other")[0]).session.status == "todo"

    assert as_user(store, "ann").sessions.tag_many(store.sessions.matching("d", bot_a), add=["a-side"]) == 766
    assert as_user(store, "bob").sessions.tag_many(store.sessions.matching("d"), add=["all"], remove=["a-side"]) == 1150
    f = store.sessions.facets("d")
    assert f.tags == {"all": 1150}
    assert store.sessions.get(pks[-1]).version == 4 and store.sessions.get(pks[-1]).session.tags == ["all"]
    versions = dict(query(store, "SELECT version, count(*) FROM sessions GROUP BY version"))
    assert versions == {4: 766, 3: 1150 - 766, 1: 1}
    by_author = dict(query(store, "SELECT author, count(*) FROM edits GROUP BY author"))
    assert by_author == {"ann": 766 * 2, "bob": (1150 - 766) + 1150}
    assert query(store, "SELECT count(*) FROM session_tags") == [(1150,)]
    assert [(e.author, e.field) for e in store.sessions.history(pks[0])] == [
        ("ann", "status"),
        ("ann", "tags"),
        ("bob", "tags"),
    ]
    assert store.sessions.browse("d", SessionFilter(tags=["all"], status=["in_progress"])).total == 1150


# -- datasets ----------------------------------------------------------------------------


def test_overviews_and_rename(store: Store, tmp_path: Path) -> None:
    _import(store, tmp_path, "b", [_native("x", reference="r"), _native("y"), _native("z")], name="b.jsonl")
    ragas = {"user_input": [{"content": "hi", "type": "human"}, {"content": "yo", "type": "ai"}], "reference": "yo"}
    import_file(store, write_jsonl(tmp_path / "r.jsonl", [ragas]), "b")
    store.datasets.get("a-empty", create=True)
    as_user(store, "ann").sessions.set_status(_pk(store, "b", "x"), "approved", base_version=1)
    as_user(store, "ann").sessions.set_status(_pk(store, "b", "y"), "rejected", base_version=1)
    as_user(store, "ann").sessions.set_status(_pk(store, "b", "z"), "flagged", base_version=1)
    empty, b = store.datasets.overviews()
    assert (empty.name, empty.sessions, empty.formats, empty.progress, empty.last_import_at) == (
        "a-empty",
        0,
        [],
        0.0,
        None,
    )
    assert set(empty.statuses.values()) == {0} and empty.created_at
    assert b.name == "b" and b.sessions == 4 and b.formats == ["evalcore", "ragas"]
    assert b.statuses == {"todo": 1, "in_progress": 0, "approved": 1, "rejected": 1, "flagged": 1}
    assert b.reviewed == 2 and b.progress == 0.5 and b.with_truth == 2
    assert b.last_import_source == "r.jsonl" and b.last_import_at and b.last_import_at >= b.created_at

    job = as_user(store, "ann").jobs.create("import", "b", "import b.jsonl", unit="bytes")
    with pytest.raises(UsageError, match="exists already"):
        store.datasets.rename("b", "a-empty")
    with pytest.raises(UsageError, match="needs a name"):
        store.datasets.rename("b", "   ")
    with pytest.raises(UsageError, match="at most 200"):
        store.datasets.rename("b", "n" * 201)
    with pytest.raises(NotFoundError):
        store.datasets.rename("nope", "c")
    assert store.datasets.rename("b", "b") == "b"
    assert store.datasets.rename("b", "  c  ") == "c"
    assert store.datasets.names() == ["a-empty", "c"]
    assert store.datasets.get("c").sessions == 4 and store.sessions.browse("c").total == 4
    assert store.jobs.get(job).dataset == "c"
    with pytest.raises(NotFoundError):
        store.datasets.get("b")


def _table_counts(store: Store) -> dict[str, int]:
    tables = ("sessions", "edits", "comments", "verdicts", "runs", "scores", "jobs", "session_tags", "datasets")
    return {t: query(store, f"SELECT count(*) FROM {t}")[0][0] for t in tables}


def _fill(store: Store, tmp_path: Path, dataset: str, word: str) -> None:
    records = [_native(f"{dataset}-{i}", words=word, tags=["t"], turns=2) for i in range(3)]
    _import(store, tmp_path, dataset, records, name=f"{dataset}.jsonl")
    for pk in store.sessions.pks(dataset):
        as_user(store, "ann").sessions.save(pk, {"reference": f"{word} reference"}, base_version=1)
        as_user(store, "ann").labels.add_comment(pk, f"about {word}", turn=0)
        as_user(store, "ann").labels.set_verdict(pk, LABEL, 1)
    score_dataset(store, dataset, ["turn_count", "exact_match"])
    as_user(store, "ann").jobs.create("score", dataset, "score turn_count", unit="items")


def test_delete_dataset_removes_everything_of_it_and_nothing_else(store: Store, tmp_path: Path) -> None:
    _fill(store, tmp_path, "gone", "zebra")
    _fill(store, tmp_path, "kept", "walrus")
    before = _table_counts(store)
    kept_pks = store.sessions.pks("kept")
    assert store.sessions.browse("gone", SessionFilter(search="zebra")).total == 3

    with pytest.raises(UsageError, match="type the dataset's name"):
        store.datasets.delete("gone", confirm="Gone")
    with pytest.raises(NotFoundError):
        store.datasets.delete("nope", confirm="nope")
    assert _table_counts(store) == before
    if store.kind == "sqlite":
        assert own_connection(store).execute("PRAGMA foreign_keys").fetchone() == (1,)  # on after a refused delete
    assert store.datasets.delete("gone", confirm="gone") == 3
    if store.kind == "sqlite":
        assert own_connection(store).execute("PRAGMA foreign_keys").fetchone() == (1,)  # (off for its transaction)

    after = _table_counts(store)
    assert after == {k: (v // 2 if k != "datasets" else 1) for k, v in before.items()}
    assert store.datasets.names() == ["kept"]
    assert [o.name for o in store.datasets.overviews()] == ["kept"]
    assert [r.dataset for r in store.runs.recent()] == ["kept"]
    assert [j.dataset for j in store.jobs.recent()] == ["kept"]
    assert store.sessions.browse("kept", SessionFilter(search="walrus")).total == 3
    if store.kind == "sqlite":  # the search index and the references, checked by SQLite itself
        conn = sqlite3.connect(store.url, isolation_level=None)
        assert conn.execute("SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH 'zebra'").fetchall() == []
        assert len(conn.execute("SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH 'walrus'").fetchall()) == 3
        conn.execute("INSERT INTO sessions_fts (sessions_fts) VALUES ('integrity-check')")
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        conn.close()
    for pk in kept_pks:
        assert (
            store.sessions.get(pk).version == 2
            and len(store.sessions.history(pk)) == 1
            and len(store.labels.comments(pk)) == 1
        )
        assert [v.value for v in store.labels.verdicts(pk)] == [1.0]
    with pytest.raises(NotFoundError):
        store.datasets.get("gone")
    # The name is free again, for a fresh dataset.
    _import(store, tmp_path, "gone", [_native("new")], name="new.jsonl")
    assert (
        store.datasets.get("gone").sessions == 1
        and store.sessions.browse("gone", SessionFilter(search="zebra")).total == 0
    )


# -- verdicts ----------------------------------------------------------------------------


def test_verdicts_set_replace_withdraw(store: Store, tmp_path: Path) -> None:
    _import(store, tmp_path, "d", [_native("a"), _native("b")])
    _import(store, tmp_path, "e", [_native("c")], name="e.jsonl")
    a, b = store.sessions.pks("d")
    (c,) = store.sessions.pks("e")
    clarity = rubric_verdict("clarity")
    assert clarity == "rubric:clarity"
    as_user(store, "ann").labels.set_verdict(a, LABEL, 1)
    as_user(store, "ann").labels.set_verdict(a, LABEL, 0.0)  # replaces
    as_user(store, "bob").labels.set_verdict(a, LABEL, 1.0)
    as_user(store, "ann").labels.set_verdict(a, clarity, 4)
    as_user(store, "bob").labels.set_verdict(b, clarity, 5.0)
    as_user(store, "ann").labels.set_verdict(c, LABEL, 1)
    assert [(v.author, v.name, v.value) for v in store.labels.verdicts(a)] == [
        ("ann", "label", 0.0),
        ("bob", "label", 1.0),
        ("ann", "rubric:clarity", 4.0),
    ]
    assert all(isinstance(v.value, float) and v.at for v in store.labels.verdicts(a))
    assert [(v.session_pk, v.author, v.name) for v in store.labels.human_verdicts("d")] == [
        (a, "ann", "label"),
        (a, "bob", "label"),
        (a, "ann", "rubric:clarity"),
        (b, "bob", "rubric:clarity"),
    ]
    as_user(store, "ann").labels.set_verdict(a, LABEL, None)  # withdrawn
    as_user(store, "cy").labels.set_verdict(a, LABEL, None)  # nothing to withdraw: fine
    assert [(v.author, v.name) for v in store.labels.verdicts(a)] == [("bob", "label"), ("ann", "rubric:clarity")]
    assert len(store.labels.human_verdicts("d")) == 3 and len(store.labels.human_verdicts("e")) == 1
    assert store.sessions.get(a).version == 1  # a verdict is not an edit of the session

    bad = [
        (LABEL, 0.5),
        (LABEL, 2),
        (LABEL, -1),
        (LABEL, math.nan),
        (clarity, 0),
        (clarity, 6),
        (clarity, 2.5),
        (clarity, math.nan),
        (clarity, math.inf),
        ("score", 1),
        ("rubric:", 3),
        ("", 1),
    ]
    for name, value in bad:
        with pytest.raises(UsageError):
            as_user(store, "ann").labels.set_verdict(a, name, value)
    with pytest.raises(PermissionDeniedError, match="viewer"):
        as_user(store, "vic", "viewer").labels.set_verdict(a, LABEL, 1)
    with pytest.raises(NotFoundError):
        as_user(store, "ann").labels.set_verdict(999999, LABEL, 1)
    with pytest.raises(NotFoundError):
        store.labels.human_verdicts("nope")
    assert len(store.labels.human_verdicts("d")) == 3


# -- scores across runs ------------------------------------------------------------------


def test_scores_of_a_session_across_runs(store: Store, tmp_path: Path) -> None:
    records = [_native("a", turns=2, turn_truth=[{"ground_truth": "answer 0"}], words="alpha"), _native("b")]
    source = write_jsonl(tmp_path / "s.jsonl", records)
    import_file(store, source, "d")
    a, b = store.sessions.pks("d")
    first = score_dataset(store, "d", ["turn_count", "exact_match"]).run.id
    records[0] = _native("a", turns=3, turn_truth=[{"ground_truth": "answer 0"}], words="alpha")  # a turn more
    records[1] = _native("b", turns=4)
    write_jsonl(source, records)
    assert import_file(store, source, "d").updated == 2
    second = score_dataset(store, "d", ["turn_count"], filters=SessionFilter(search="alpha"), resume=False)
    assert second.sessions == 1 and second.run.id > first
    third = score_dataset(store, "d", ["tool_call_count"]).run.id

    latest = store.runs.latest_values([a, b, 999_999])
    assert latest[a] == {"turn_count": 3.0, "exact_match": 1.0, "tool_call_count": 0.0}
    assert latest[b] == {"turn_count": 1.0, "exact_match": None, "tool_call_count": 0.0}  # b: only the first run
    assert latest[999_999] == {}
    assert store.runs.latest_values([]) == {}

    scores = store.runs.for_session(a)
    assert [(s.run_id, s.metric, s.turn) for s in scores] == [
        (third, "tool_call_count", None),
        (second.run.id, "turn_count", None),
        (first, "exact_match", None),
        (first, "exact_match", 0),
        (first, "exact_match", 1),
        (first, "turn_count", None),
    ]
    assert [s.value for s in scores if s.metric == "turn_count"] == [3.0, 2.0]
    assert scores[0].run_started_at and all(s.model is None for s in scores)
    statuses = {(s.metric, s.turn): s.status for s in scores if s.run_id == first}
    assert statuses[("exact_match", 0)] == "ok" and statuses[("exact_match", 1)] == "not_applicable"
    session_only = store.runs.for_session(a, turns=False)
    assert [s.turn for s in session_only] == [None] * 4
    assert store.runs.for_session(999_999) == []
    assert store.runs.metrics_of("d") == ["exact_match", "tool_call_count", "turn_count"]
    assert store.runs.metrics_of("nope") == []


# -- imports from a stream --------------------------------------------------------------


def test_import_stream_reports_bad_lines_and_is_idempotent(store: Store) -> None:
    lines = [json.dumps(_native("a")), json.dumps(_native("b")), "{oops", json.dumps(_native(None)), ""]
    data = "\n".join(lines).encode()
    progress: list[tuple[int, int]] = []
    report = import_stream(
        store,
        io.BytesIO(data),
        "uploads/up.jsonl",
        "d",
        size=len(data),
        on_progress=lambda d, t: progress.append((d, t)),
    )
    assert (report.new, report.updated, report.unchanged, report.failed, report.format) == (3, 0, 0, 1, "evalcore")
    assert [(p.path, p.line, p.level) for p in report.problems] == [("up.jsonl", 3, "error")]
    assert str(report.problems[0]).startswith("up.jsonl:3: ")
    assert progress[-1] == (len(data), len(data))
    (overview,) = store.datasets.overviews()
    assert overview.last_import_source == "up.jsonl" and overview.last_import_at
    assert [s.ref for s in store.sessions.browse("d").items] == [
        "a",
        "b",
        "pos:up.jsonl:3",
    ]  # positions count bad lines
    first_at = overview.last_import_at

    again = import_stream(store, io.BytesIO(data), "uploads/up.jsonl", "d")
    assert (again.new, again.updated, again.unchanged, again.failed) == (0, 0, 3, 1)
    assert store.datasets.get("d").sessions == 3 and all(
        store.sessions.get(pk).version == 1 for pk in store.sessions.pks("d")
    )
    (overview,) = store.datasets.overviews()
    assert first_at is not None and overview.last_import_at is not None and overview.last_import_at > first_at

    # The same records from a file: the same sessions (by session_id); the unnamed one is a new one.
    with pytest.raises(NotFoundError):
        store.sessions.find_ref("d", "pos:other.jsonl:3")
    third = import_stream(store, io.BytesIO(data), "other.jsonl", "d")
    assert (third.new, third.unchanged) == (1, 2)
    (overview,) = store.datasets.overviews()
    assert overview.last_import_source == "other.jsonl"

"""What full-text search sees (issue 24, item 7b), on both engines: tool names and arguments are found; the
system prompt (and context) only when asked; a store made before this (SQLite to migration 0012, PostgreSQL
to 0004) is upgraded and its sessions indexed anew, the reviewers' edits included."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user, execute, query
from formats_util import write_jsonl

from evalcore.importing import import_file
from evalcore.store import Store, open_store
from evalcore.store.copy import copy_store
from evalcore.store.migrations import MIGRATIONS, SEARCH_REINDEX
from evalcore.store.queries import SessionFilter
from evalcore.store.rows import ROW_COLUMNS, row_for
from evalcore.store.search import documents, words

POLICY = "You are the Skylark agent. Policy: a cancelled flight is rebooked free; vouchers after three hours."


def _session(n: int, *, tool: str = "lookup_booking", code: str = "QX7P2M") -> dict[str, Any]:
    return {
        "schema_version": 1,
        "session_id": f"s{n}",
        "context": "Gaussia context mentions a lighthouse",
        "messages": [
            {"role": "system", "content": POLICY},
            {"role": "user", "content": f"Question {n}: my flight was cancelled."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{n}", "name": tool, "args": {"confirmation_code": code, "seat": "aisle"}}],
            },
            {"role": "tool", "tool_call_id": f"c{n}", "content": "booking found"},
            {"role": "assistant", "content": "You are rebooked on the next flight."},
        ],
    }


def _hits(store: Store, text: str, system: bool = False) -> list[str]:
    page = store.sessions.browse("d", SessionFilter(search=text, search_system_prompt=system), limit=100)
    return sorted(s.session_id or "" for s in page.items)


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        yield s


@pytest.fixture
def searched(store: Store, tmp_path: Path) -> Store:
    rows = [_session(1), _session(2, tool="cancel_reservation", code="ZZ9ABC"), _session(3)]
    import_file(store, write_jsonl(tmp_path / "s.jsonl", rows), "d")
    return store


def test_tool_names_and_arguments_are_searched(searched: Store) -> None:
    assert _hits(searched, "lookup_booking") == ["s1", "s3"]  # a tool's name (cut in two words, both there)
    assert _hits(searched, "cancel_reservation") == ["s2"]
    assert _hits(searched, "ZZ9ABC") == ["s2"]  # an argument's value
    assert _hits(searched, "confirmation_code aisle") == ["s1", "s2", "s3"]  # an argument's name and value
    assert _hits(searched, "zz9*") == ["s2"]


def test_the_system_prompt_is_searched_only_when_asked(searched: Store) -> None:
    assert _hits(searched, "vouchers") == []  # a word of the system prompt only
    assert _hits(searched, "lighthouse") == []  # of the context
    assert _hits(searched, "vouchers", system=True) == ["s1", "s2", "s3"]
    assert _hits(searched, "lighthouse", system=True) == ["s1", "s2", "s3"]
    # every word must appear, each in the conversation or the system prompt
    assert _hits(searched, "vouchers ZZ9ABC", system=True) == ["s2"]
    assert _hits(searched, "vouch* cancel_reservation", system=True) == ["s2"]
    assert _hits(searched, "vouchers ZZ9ABC") == []
    # a word of both is found either way
    assert _hits(searched, "flight") == ["s1", "s2", "s3"]
    assert SessionFilter(search="x").as_dict() == {"search": "x"}  # left out of a manifest unless set
    assert SessionFilter(search="x", search_system_prompt=True).as_dict()["search_system_prompt"] is True


def test_a_save_and_a_reimport_index_the_new_texts(searched: Store, tmp_path: Path) -> None:
    pk = searched.sessions.find("d", "s1")
    as_user(searched, "ann").sessions.save(pk, {"reference": "A quokka is noted"}, base_version=1)
    assert _hits(searched, "quokka") == ["s1"]
    assert _hits(searched, "vouchers") == []  # the save keeps the system prompt apart
    changed = _session(1, tool="refund_ticket")
    changed["messages"][0]["content"] = "A new policy about penguins"
    import_file(searched, write_jsonl(tmp_path / "again.jsonl", [changed]), "d")
    assert _hits(searched, "refund_ticket") == ["s1"]
    assert _hits(searched, "penguins") == []
    assert _hits(searched, "penguins", system=True) == ["s1"]
    assert _hits(searched, "quokka") == ["s1"]  # the reviewer's reference is still laid over it
    _same_words(searched)


def _same_words(store: Store) -> None:
    """PostgreSQL: its search table holds every session's words as its texts say them, no more, no less."""
    if store.kind != "postgresql":
        return
    kept = query(store, "SELECT session_pk, dataset_id, search_tsv, system_tsv FROM session_search ORDER BY 1")
    texts = query(
        store,
        "SELECT id, dataset_id, array_to_tsvector(string_to_array(search_text, ' ')), "
        "array_to_tsvector(string_to_array(system_text, ' ')) FROM sessions ORDER BY 1",
    )
    assert kept == texts and kept


def test_the_search_table_follows_every_change(store: Store, tmp_path: Path, pg_cluster: Any) -> None:
    """Imports, saves, bulk changes, a deleted dataset, a copy: what is searched is what the sessions say."""
    ann = as_user(store, "ann")
    import_file(ann, write_jsonl(tmp_path / "a.jsonl", [_session(n) for n in range(6)]), "d")
    import_file(ann, write_jsonl(tmp_path / "b.jsonl", [_session(9)]), "other")
    _same_words(store)
    pks = store.sessions.pks("d")
    ann.sessions.save(pks[0], {"reference": "an albatross"}, base_version=1)
    ann.sessions.set_status_many(pks[1:4], "approved")
    assert _hits(store, "albatross") == ["s0"]
    _same_words(store)
    ann.datasets.delete("other", confirm="other")
    _same_words(store)
    other = str(tmp_path / "copy.db") if store.kind == "postgresql" else pg_cluster.new_database()
    with open_store(other) as copied:
        copy_store(store, copied)
        assert _hits(copied, "albatross") == ["s0"]
        _same_words(copied)


def test_postgresql_keeps_the_two_documents_apart_and_within_a_tsvector() -> None:
    search, system = documents("Flight flight vouchers", "Vouchers policy flight lighthouse")
    assert search.split() == ["flight", "vouchers"]
    assert system.split() == ["policy", "lighthouse"]  # only the words the other lacks
    big = " ".join(f"w{i:06d}" * 20 for i in range(8000))  # about 1.1 MB of distinct words
    first, second = documents(big, big.upper() + " extra")
    assert len(first.encode()) + len(second.encode()) <= 900_001
    assert second == ""  # no room left (and its words were the other's anyway)
    assert words("lookup_booking") == ["lookup", "booking"]


# -- a store made before the change: migrated, then indexed anew -------------------------------------------------


def _old_row_values(session_json: dict[str, Any]) -> tuple[list[str], list[Any], str]:
    """An import's row as evalcore wrote it before: no system_text, every message (the system's too) searched,
    no tool names or arguments."""
    from evalcore.schema import Session

    session = Session.model_validate({k: v for k, v in session_json.items() if k != "schema_version"})
    row = row_for(1, "old.jsonl", session)
    columns = [c for c in ROW_COLUMNS if c != "system_text"]
    old_text = "\n".join(m.text for m in session.messages if m.text)
    values = [old_text if c == "search_text" else getattr(row, c) for c in columns]
    return columns, values, old_text


def _sqlite_before(path: Path, sessions: list[dict[str, Any]]) -> None:
    from sqlite_utils import Database, Migrations

    migrations = Migrations("evalcore")
    for name, fn in MIGRATIONS[:12]:
        migrations(name=name)(fn)
    assert MIGRATIONS[12][0] == "0013_search_system_text"
    db = Database(sqlite3.connect(path))
    migrations.apply(db)
    db.execute("INSERT INTO datasets (id, name, created_at) VALUES (1, 'd', 'now')")
    for session in sessions:
        columns, values, text = _old_row_values(session)
        cursor = db.execute(
            f"INSERT INTO sessions ({', '.join(columns)}, created_at, updated_at) "
            f"VALUES ({', '.join('?' * len(columns))}, 'now', 'now')",
            values,
        )
        db.execute("INSERT INTO sessions_fts (rowid, search_text) VALUES (?, ?)", [cursor.lastrowid, text])
    db.conn.commit()
    db.conn.close()


def _postgresql_before(url: str, sessions: list[dict[str, Any]]) -> None:
    from evalcore.store.pg_migrations import MIGRATIONS as PG

    assert PG[4][0] == "0005_search_system_text"
    with Store(url, check=False) as store:
        execute(store, "CREATE TABLE evalcore_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
        for name, statements in PG[:4]:
            for statement in statements:
                execute(store, statement)
            execute(store, "INSERT INTO evalcore_migrations (name, applied_at) VALUES (?, 'now')", [name])
        execute(store, "INSERT INTO datasets (id, name, created_at) VALUES (1, 'd', 'now')")
        for session in sessions:
            columns, values, text = _old_row_values(session)
            values[columns.index("search_text")] = documents(text, "")[0]
            execute(
                store,
                f"INSERT INTO sessions ({', '.join(columns)}, created_at, updated_at) "
                f"VALUES ({', '.join('?' * len(columns))}, 'now', 'now')",
                values,
            )


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_a_store_from_before_is_upgraded_and_indexed_anew(engine: str, tmp_path: Path, request: Any) -> None:
    sessions = [_session(1), _session(2, tool="cancel_reservation", code="ZZ9ABC")]
    if engine == "sqlite":
        url: str = str(tmp_path / "old.db")
        _sqlite_before(Path(url), sessions)
        with sqlite3.connect(url) as conn:  # as it was: the policy found, no tool name
            hits = "SELECT count(*) FROM sessions_fts WHERE sessions_fts MATCH ?"
            assert conn.execute(hits, ['"vouchers"']).fetchone()[0] == 2
            assert conn.execute(hits, ['"cancel" "reservation"']).fetchone()[0] == 0
        conn.close()
        store = open_store(url)  # migrated on opening, then indexed anew
    else:
        url = str(request.getfixturevalue("pg_cluster").new_database(migrated=False))
        _postgresql_before(url, sessions)
        with Store(url, check=False) as old:
            assert [name for (name,) in query(old, "SELECT name FROM evalcore_migrations")][-1] == "0004_sort_indexes"
            assert query(old, "SELECT count(*) FROM sessions WHERE search_tsv @@ CAST('vouchers' AS tsquery)") == [(2,)]
            assert old.upgrade()[0] == "0005_search_system_text"  # (it indexes anew too)
        store = open_store(url)
    with store:
        assert query(store, "SELECT count(*) FROM meta WHERE key = ?", [SEARCH_REINDEX]) == [(0,)]
        assert _hits(store, "cancel_reservation") == ["s2"]
        assert _hits(store, "ZZ9ABC") == ["s2"]
        assert _hits(store, "vouchers") == []
        assert _hits(store, "vouchers", system=True) == ["s1", "s2"]
        assert _hits(store, "lighthouse", system=True) == ["s1", "s2"]
        assert store.sessions.reindex_search() == 0  # done: the note is gone
        assert store.sessions.reindex_search(only_if_pending=False) == 2
        versions = query(store, "SELECT version FROM sessions ORDER BY id")
        assert versions == [(1,), (1,)]  # indexing is no change of the sessions


def test_the_reindex_lays_the_reviewers_edits_over(store: Store, tmp_path: Path) -> None:
    import_file(store, write_jsonl(tmp_path / "s.jsonl", [_session(1)]), "d")
    pk = store.sessions.find("d", "s1")
    as_user(store, "ann").sessions.save(pk, {"goal": "find the wombat"}, base_version=1)
    execute(store, "UPDATE sessions SET search_text = 'stale', system_text = ''")
    assert _hits(store, "wombat") == []
    execute(store, "INSERT INTO meta (key, value) VALUES (?, 'pending')", [SEARCH_REINDEX])
    with open_store(store.url) as again:  # a store opened with nothing to migrate does not look for the note
        assert _hits(again, "wombat") == []
        assert again.upgrade() == []  # evalcore db upgrade: nothing to migrate, the note found
        assert _hits(again, "wombat") == ["s1"]
        assert _hits(again, "lookup_booking") == ["s1"]
        assert _hits(again, "vouchers", system=True) == ["s1"]
    assert json.loads(json.dumps(query(store, "SELECT count(*) FROM meta WHERE key = ?", [SEARCH_REINDEX]))) == [[0]]

"""SQLite's file layout (issue 19: as fast and small as before the two engines): a new file's 8 KiB pages and its WAL
checkpoint, the full-text index without word positions, and the cyclic collector paused only while a chunk of an
import or export is at hand."""

from __future__ import annotations

import gc
import json
import sqlite3
from pathlib import Path

import pytest
from dbutil import as_user, own_connection, query

from evalcore.exporting import ExportStream, export_dataset
from evalcore.importing import import_file
from evalcore.store import open_store
from evalcore.store.queries import SessionFilter
from evalcore.store.sqlite import PAGE_SIZE


def _sessions(n: int) -> list[dict[str, object]]:
    return [
        {
            "session_id": f"s{i}",
            "messages": [
                {"role": "system", "content": "You answer about lighthouses."},
                {"role": "user", "content": f"Where is booking {i}? It was for Zürich"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {
                    "name": "find_booking", "arguments": json.dumps({"ref": f"AB{i:04d}", "city": "Zürich"})}}]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": "found"},
                {"role": "assistant", "content": "It is confirmed." + (" wombat" if i % 2 else "")},
            ],
        }
        for i in range(n)
    ]  # fmt: skip


def _write(path: Path, sessions: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(s) + "\n" for s in sessions), encoding="utf-8")
    return path


def test_a_new_file_has_8k_pages_and_checkpoints_its_wal_at_4_mb(tmp_path: Path) -> None:
    with open_store(tmp_path / "new.db") as store:
        assert PAGE_SIZE == 8192
        assert query(store, "PRAGMA page_size") == [(8192,)]
        assert query(store, "PRAGMA journal_mode") == [("wal",)]
        # (a setting of each connection: the store's own)
        assert own_connection(store).execute("PRAGMA wal_autocheckpoint").fetchone() == (500,)  # 4 MB of 8 KiB pages


def test_a_file_made_before_keeps_its_pages_and_sqlites_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:  # a file made with SQLite's defaults
        conn.execute("CREATE TABLE other (x INTEGER)")
    conn.close()
    with open_store(path) as store:  # migrated on opening: its tables made beside the one it had
        assert query(store, "PRAGMA page_size") == [(4096,)]
        assert own_connection(store).execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)
        import_file(store, _write(tmp_path / "s.jsonl", _sessions(3)), "d")
        assert len(store.sessions.pks("d")) == 3


def test_the_index_keeps_no_word_positions_and_finds_words_prefixes_and_the_system_prompt(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.db") as store:
        import_file(store, _write(tmp_path / "s.jsonl", _sessions(4)), "d")
        (sql,) = query(store, "SELECT sql FROM sqlite_master WHERE name = 'sessions_fts'")[0]
        assert "detail=column" in sql
        with pytest.raises(Exception, match="phrase"):  # a phrase needs positions: none are kept
            query(store, "SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH ?", ['"it is"'])

        def found(text: str, *, system: bool = False) -> list[str]:
            page = store.sessions.browse("d", SessionFilter(search=text, search_system_prompt=system), limit=50)
            return sorted(f"s{s.position}" for s in page.items)  # (the i-th line's session: s<i>)

        assert found("wombat confirmed") == ["s1", "s3"]
        assert found("zurich") == ["s0", "s1", "s2", "s3"]  # (accents folded)
        assert found("ab0002") == ["s2"]  # a tool call's argument
        assert found("find_booking") == ["s0", "s1", "s2", "s3"]
        assert found("wom*") == ["s1", "s3"]
        assert found("lighthouses") == []
        assert found("lighthouses", system=True) == ["s0", "s1", "s2", "s3"]
        pk = store.sessions.pks("d")[0]
        as_user(store, "ann").sessions.save(pk, {"reference": "a wombat after all"}, base_version=1)
        assert found("wombat") == ["s0", "s1", "s3"]  # the triggers keep the index in step
        as_user(store, "ann").datasets.delete("d", confirm="d")
        assert query(store, "SELECT count(*) FROM sessions_fts WHERE sessions_fts MATCH 'wombat'") == [(0,)]


def test_the_cyclic_collector_is_on_between_an_exports_chunks_and_after_an_import(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.db") as store:
        assert gc.isenabled()
        import_file(store, _write(tmp_path / "s.jsonl", _sessions(1200)), "d")
        assert gc.isenabled()
        stream = ExportStream(store, "d", "evalcore")
        chunks = 0
        for _ in stream:  # (a caller may stop between chunks, or keep the stream: the collector is on)
            assert gc.isenabled()
            chunks += 1
        assert chunks > 3 and stream.count == 1200
        limited = ExportStream(store, "d", "ragas", limit=501)
        assert b"".join(limited).count(b"\n") == 501 and gc.isenabled()
        assert export_dataset(store, "d", tmp_path / "out.jsonl", "ragas").count == 1200
        assert gc.isenabled()

        def stop(done: int, total: int) -> None:
            assert not gc.isenabled()  # (paused while the import's batches are at hand)
            raise RuntimeError("stopped")

        with pytest.raises(RuntimeError, match="stopped"):
            import_file(store, tmp_path / "s.jsonl", "e", on_progress=stop)
        assert gc.isenabled()

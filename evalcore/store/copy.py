"""``evalcore db copy SRC DST``: a whole store moved to another database, between engines or on one.

Every table is copied row for row with its ids (datasets, sessions, their tags and full edit history, comments,
verdicts, the labeling programmes' questions, answers, gold and queues, runs, scores, the judge cache, jobs, the
database's notes), so that links, history and runs stay
whole and an export of any dataset is byte for byte the same from either side. The search index is made anew
for the destination's engine. The whole copy is one transaction of the destination: it is there entirely, or
(interrupted, failed) not at all.

Running it again is safe: a row already there (the same key) is brought up to date with the source's, the
others are added; nothing is copied twice. The destination must be empty or a copy of the same source (it keeps
a note of its source); a store of other data is refused, never merged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore.errors import UsageError
from evalcore.store.engine import Conn

if TYPE_CHECKING:
    from evalcore.store.store import Store

__all__ = ["TABLES", "CopyReport", "copy_store"]


@dataclass(frozen=True)
class _Table:
    name: str
    key: tuple[str, ...]  # the primary key: what a row already there is found by
    columns: tuple[str, ...]  # every column, the key's first


def _table(name: str, key: str, columns: str) -> _Table:
    return _Table(name, tuple(key.split()), tuple(columns.split()))


#: Every table of the store, parents before children, with its columns (the same on both engines; PostgreSQL's
#: ``session_search``, ``session_counts`` and ``tag_counts`` are kept by its triggers and ``after_copy``).
TABLES: tuple[_Table, ...] = (
    _table("users", "id", "id iss sub email name role disabled provider created_at created_by last_seen_at"),
    _table("datasets", "id", "id name description created_at last_import_at last_import_source guidelines"),
    _table(
        "sessions", "id",
        "id dataset_id key session_id assistant_id title status status_by status_at tags n_turns n_messages "
        "n_tool_calls source format position line data content_hash n_edits version search_text system_text created_at "
        "updated_at updated_by has_truth",
    ),
    _table("session_tags", "session_pk tag", "session_pk tag"),
    _table("session_parts", "session_pk part", "session_pk part turn_lo turn_hi data truth"),
    _table("edits", "id", "id session_pk turn field old new author at reason version author_id"),
    _table("comments", "id", "id session_pk turn author body at author_id"),
    _table("verdicts", "id", "id session_pk author name value at author_id"),
    _table(
        "questions", "id",
        "id dataset_id name level kind help spec required position version retired created_at updated_at created_by_id",
    ),
    _table("question_versions", "question_id version", "question_id version definition at by_id"),
    _table(
        "answers", "id",
        "id session_pk turn question_id user_id author value question_version submitted_at draft draft_version "
        "updated_at",
    ),
    _table("submissions", "session_pk user_id", "session_pk user_id author queue_id at"),
    _table("gold", "id", "id session_pk turn question_id value question_version note author author_id at"),
    _table(
        "queues", "id",
        "id dataset_id name filters min_reviews lease_seconds blind created_at updated_at created_by_id",
    ),
    _table("queue_members", "queue_id user_id", "queue_id user_id"),
    _table("queue_items", "queue_id session_pk", "queue_id session_pk position"),
    _table("queue_leases", "queue_id session_pk user_id", "queue_id session_pk user_id expires_at"),
    _table("queue_skips", "queue_id session_pk user_id", "queue_id session_pk user_id at"),
    _table("drafts", "session_pk user_id field turn", "session_pk user_id field turn value base_version at"),
    _table(
        "runs", "id",
        "id dataset_id metrics params judge_model judge_base_url status started_at finished_at n_items n_done "
        "n_failed n_not_applicable filters updated_at error created_by created_by_id",
    ),
    _table(
        "scores", "id",
        "id run_id session_pk turn metric status value reason error sub warnings calls cached input_tokens "
        "output_tokens cost latency_ms created_at",
    ),
    _table("judge_cache", "key", "key model request response input_tokens output_tokens created_at"),
    _table(
        "jobs", "id",
        "id kind dataset label author status done total unit result error started_at updated_at finished_at run_id "
        "cancel_by owner author_id",
    ),
    _table("meta", "key", "key value"),
)  # fmt: skip
_SOURCE_NOTE = "copied_from"  # the destination's note of where its copy came from
_CHUNK = 2000


@dataclass
class CopyReport:
    """How many rows of each table the copy wrote (new or brought up to date)."""

    source: str
    destination: str
    rows: dict[str, int]

    def describe(self) -> str:
        counts = ", ".join(f"{n:,} {table}" for table, n in self.rows.items())
        return f"copied {self.source} to {self.destination}: {counts}"


def _rows(conn: Conn, table: _Table) -> Iterator[list[tuple[Any, ...]]]:
    """The table's rows in key order, ``_CHUNK`` at a time (memory stays flat)."""
    columns = ", ".join(table.columns)
    order = ", ".join(table.key)
    last: tuple[Any, ...] | None = None
    while True:
        if last is None:
            sql, args = f"SELECT {columns} FROM {table.name} ORDER BY {order} LIMIT ?", [_CHUNK]
        elif len(table.key) == 1:
            sql = f"SELECT {columns} FROM {table.name} WHERE {table.key[0]} > ? ORDER BY {order} LIMIT ?"
            args = [last[0], _CHUNK]
        else:
            a, b = table.key
            sql = f"SELECT {columns} FROM {table.name} WHERE {a} > ? OR ({a} = ? AND {b} > ?) ORDER BY {order} LIMIT ?"
            args = [last[0], last[0], last[1], _CHUNK]
        rows = [tuple(r) for r in conn.execute(sql, args).fetchall()]
        if not rows:
            return
        yield rows
        last = rows[-1][: len(table.key)]


def _upsert(table: _Table) -> str:
    columns = ", ".join(table.columns)
    marks = ", ".join("?" * len(table.columns))
    sets = ", ".join(f"{c} = excluded.{c}" for c in table.columns if c not in table.key)
    action = f"DO UPDATE SET {sets}" if sets else "DO NOTHING"
    return f"INSERT INTO {table.name} ({columns}) VALUES ({marks}) ON CONFLICT ({', '.join(table.key)}) {action}"


def copy_store(
    source: Store, destination: Store, *, on_progress: Callable[[str, int], None] | None = None
) -> CopyReport:
    """Copy every row of ``source`` into ``destination`` (see the module's docstring); ``on_progress(table, rows
    copied of it so far)`` as it goes."""
    if source.identity == destination.identity:
        raise UsageError(f"{source.where} is both the source and the destination of the copy")
    src_engine, dst_engine = source._engine, destination._engine
    origin = source.where
    copied_from = destination.meta.get(_SOURCE_NOTE)
    if destination.datasets.names() and copied_from != origin:
        where = f"a copy of {copied_from}" if copied_from else "a store of its own"
        raise UsageError(
            f"{destination.where} holds datasets already ({where}); copy into an empty database "
            f"(or into an earlier copy of {origin})"
        )
    counts: dict[str, int] = {}
    with dst_engine.write() as out:
        for table in TABLES:
            written = 0
            upsert = _upsert(table)
            search_at = table.columns.index("search_text") if table.name == "sessions" else None
            with src_engine.read() as conn:
                for rows in _rows(conn, table):
                    if table.name == "meta":
                        rows = [r for r in rows if r[0] != _SOURCE_NOTE]
                    if search_at is not None:  # search_text, then system_text
                        documents = dst_engine.search_documents
                        rows = [
                            (*r[:search_at], *documents(r[search_at], r[search_at + 1]), *r[search_at + 2 :])
                            for r in rows
                        ]
                    out.executemany(upsert, rows)
                    written += len(rows)
                    if on_progress:
                        on_progress(table.name, written)
            counts[table.name] = written
        out.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [_SOURCE_NOTE, origin],
        )
        dst_engine.after_copy(out)
    return CopyReport(source.where, destination.where, counts)

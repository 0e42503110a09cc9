"""The SQLite engine: one file in WAL mode, no server, for one person (or a few on one machine).

Durability. In WAL mode SQLite's ``synchronous`` setting decides what a power cut (or an OS crash) may take;
a crash of the process alone (kill -9) loses nothing committed in any mode:

* ``NORMAL``: the WAL is synced to disk only at checkpoints, so a power cut can roll the database back by the
  last transactions committed before it (never corrupt it);
* ``FULL``: the WAL is synced at every commit, so a committed transaction survives a power cut;
* ``EXTRA`` is ``FULL`` in WAL mode; ``OFF`` can corrupt the file on a power cut.

Every connection uses ``FULL``: a reviewer's accepted save (and everything else committed: bulk status and tag
changes, comments, imports, scores) is on disk when ``save`` returns. Measured on this project's shared 2-CPU
VM (median of 200 saves, five rounds), a save takes 0.5-0.6 ms with ``NORMAL`` and 0.9-3.8 ms with ``FULL``:
one fsync of the WAL more. A 20,000-session import commits 11 transactions (batches of 2,000), so ``FULL`` adds
11 fsyncs: within 2% either way.

Pages. A new file is made with pages of 8 KiB (``PAGE_SIZE``; SQLite's default is 4 KiB, and a file made before
keeps its own): a session's row is 1-3 KB (its JSON, its search text), and a 4 KiB page holds two such rows at
most, leaving a quarter of the sessions table empty. With 8 KiB pages a 20,000-session import makes a file about
10% smaller and writes fewer pages, and the WAL is checkpointed at the same 4 MB as with SQLite's defaults.

Writers. ``write`` begins with ``BEGIN IMMEDIATE``: it takes the file's one write lock at once, so writers
queue (for up to the busy timeout) instead of deadlocking, and a transaction sees nothing change under it.

Faults. The file's own failures (a full disk, a read-only file or folder, a write lock held by another process
past the busy timeout, a damaged file, an I/O error) are raised as ``DatabaseFaultError`` with a message a
person can act on, never as raw ``sqlite3`` errors: every statement goes through a connection that translates
them, and ``write`` rolls back, so the file holds what it held before the failed transaction.

Forks. A process that forks while it has a connection open to the file passes its in-memory lock state to the
child, where a connection to the same file believes it holds locks it does not: SQLite's "How To Corrupt An
SQLite Database File", section 2.6. ``before_fork`` closes every connection of the engine first.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from evalcore.errors import DatabaseFaultError, SchemaVersionError, UsageError
from evalcore.store import search
from evalcore.store.engine import Conn, Engine
from evalcore.store.migrations import MIGRATIONS, applied, migration_set
from evalcore.store.rows import ROW_COLUMNS, Row

__all__ = ["SqliteEngine"]

# SQLite's primary result codes that say the database file failed: what kind of failure, what to tell a person.
_FAULTS: dict[int, tuple[str, str, str]] = {
    3: ("denied", "permission to it was denied", "check the permissions of the file and of its folder"),
    5: (
        "busy",
        "another process has held its write lock for more than {timeout} s",
        "wait for that process (an import or a scoring run?) to finish, then try again",
    ),
    6: (
        "busy",
        "another process has held its write lock for more than {timeout} s",
        "wait for that process (an import or a scoring run?) to finish, then try again",
    ),
    7: ("memory", "SQLite ran out of memory", "close other programs and try again"),
    8: (
        "readonly",
        "it is read-only: the file, or the folder SQLite keeps its -wal and -shm files in, cannot be written",
        "check the permissions of the file and of its folder, or work on a copy",
    ),
    10: ("io", "the disk failed to read or write it", "check the disk and its free space, then try again"),
    11: (
        "damaged",
        "the file is damaged",
        "restore it from a backup, or recover what it holds with: sqlite3 {path} .recover",
    ),
    13: (
        "full",
        "the disk holding it is full",
        "nothing of the failed change was saved; free some space and try again",
    ),
    14: (
        "unreachable",
        "the file cannot be opened",
        "check that its folder exists and that this user may read and write there",
    ),
    15: ("locking", "another program broke SQLite's locking protocol", "try again"),
    18: ("too_big", "a value is larger than SQLite accepts", "make the record smaller"),
    22: ("too_big", "the file is larger than this system supports", "use a file system with large-file support"),
    23: ("denied", "access was refused", "check the file's permissions"),
    26: ("not_a_database", "the file is not an SQLite database", "check the path given to --db or $EVALCORE_DB"),
}
#: The page size of a new file (SQLite's default is 4096; a file keeps the size it was made with).
PAGE_SIZE = 8192
#: The WAL is copied into the file (a checkpoint) once it holds this much: SQLite's default of 1,000 pages of its
#: default size, whatever the file's page size.
_CHECKPOINT_BYTES = 1000 * 4096
_SQL_ERRORS = {1, 19}  # SQLITE_ERROR (an SQL mistake), SQLITE_CONSTRAINT: errors of the SQL, not of the file


def _fault(exc: sqlite3.Error, path: str, timeout: float, *, opening: bool = False) -> DatabaseFaultError:
    """``exc`` as a ``DatabaseFaultError`` naming the file, what happened and what to do."""
    code = getattr(exc, "sqlite_errorcode", None)
    name = getattr(exc, "sqlite_errorname", None)
    kind, what, advice = _FAULTS.get(code & 0xFF if isinstance(code, int) else -1, ("other", "it failed", ""))
    details = {"timeout": f"{timeout:g}", "path": path}
    head = f"cannot open the database {path}" if opening else f"the database {path} failed"
    message = f"{head}: {what.format(**details)} (SQLite: {exc})"
    if advice:
        message += f"; {advice.format(**details)}"
    return DatabaseFaultError(message, name, kind=kind)


def _is_fault(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite saying the database file failed (not an SQL mistake, not API misuse)."""
    if not isinstance(exc, sqlite3.DatabaseError) or isinstance(exc, sqlite3.ProgrammingError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF not in _SQL_ERRORS


class _Cursor(sqlite3.Cursor):
    """A cursor that raises the database's own failures as ``DatabaseFaultError``, wherever they surface."""

    connection: _Connection

    def execute(self, sql: str, parameters: Any = (), /) -> _Cursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.DatabaseError as exc:
            raise self.connection.translated(exc) from exc

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> _Cursor:
        try:
            return super().executemany(sql, seq_of_parameters)
        except sqlite3.DatabaseError as exc:
            raise self.connection.translated(exc) from exc

    def executescript(self, sql_script: str, /) -> Any:
        try:
            return super().executescript(sql_script)
        except sqlite3.DatabaseError as exc:
            raise self.connection.translated(exc) from exc

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.DatabaseError as exc:
            raise self.connection.translated(exc) from exc

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        try:
            return super().fetchmany(size if size is not None else self.arraysize)
        except sqlite3.DatabaseError as exc:
            raise self.connection.translated(exc) from exc

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.DatabaseError as exc:
            raise self.connection.translated(exc) from exc

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.DatabaseError as exc:
            raise self.connection.translated(exc) from exc


class _Connection(sqlite3.Connection):
    """The engine's connection: every statement runs on a ``_Cursor``. SQL mistakes (SQLITE_ERROR,
    constraints) stay ``sqlite3`` errors here, for sqlite-utils' own handling; ``write`` and the
    command line translate those too."""

    path = ""
    busy_timeout = 0.0

    def translated(self, exc: sqlite3.DatabaseError) -> BaseException:
        return _fault(exc, self.path, self.busy_timeout) if _is_fault(exc) else exc

    def cursor(self, factory: Any = None) -> Any:
        return super().cursor(factory or _Cursor)

    def execute(self, sql: str, parameters: Any = (), /) -> _Cursor:
        cursor: _Cursor = self.cursor()
        return cursor.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> _Cursor:
        cursor: _Cursor = self.cursor()
        return cursor.executemany(sql, parameters)

    def executescript(self, sql_script: str, /) -> Any:
        return self.cursor().executescript(sql_script)

    def commit(self) -> None:
        try:
            super().commit()
        except sqlite3.DatabaseError as exc:
            raise self.translated(exc) from exc

    def rollback(self) -> None:
        try:
            super().rollback()
        except sqlite3.DatabaseError as exc:
            raise self.translated(exc) from exc


_INSERT_SESSIONS = (
    f"INSERT INTO sessions ({', '.join((*ROW_COLUMNS, 'created_at', 'updated_at'))}) "
    f"VALUES ({', '.join('?' * (len(ROW_COLUMNS) + 2))})"
)


class SqliteEngine(Engine):
    """A connection per thread to one SQLite file; creates and migrates it as needed."""

    kind = "sqlite"

    def __init__(self, path: str, *, busy_timeout: float = 30.0) -> None:
        super().__init__()
        self.path = path
        self.where = path
        self.identity = os.path.realpath(path)
        self.busy_timeout = busy_timeout
        # One connection per thread: Streamlit runs every browser session on threads of its own, and a
        # connection shared between them lets one see another's uncommitted writes.
        self._open_lock = threading.Lock()
        self._connections: list[tuple[weakref.ref[threading.Thread], _Connection]] = []
        self._applied: list[str] = []
        try:
            self.applied_on_open = tuple(self.migrate())
        except DatabaseFaultError as exc:
            self.close()
            cause = exc.__cause__
            if isinstance(cause, sqlite3.Error):
                raise _fault(cause, self.path, busy_timeout, opening=True) from cause
            raise
        except sqlite3.DatabaseError as exc:
            self.close()
            raise _fault(exc, self.path, busy_timeout, opening=True) from exc
        except BaseException:
            self.close()
            raise

    # -- connections ---------------------------------------------------------------------------------

    def connection(self) -> _Connection:
        """This thread's connection to the file (opened on first use in each thread)."""
        db: _Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = self._connect()
            self._local.db = db
        return db

    def _connect(self) -> _Connection:
        try:
            db = sqlite3.connect(self.path, timeout=self.busy_timeout, check_same_thread=False, factory=_Connection)
        except sqlite3.DatabaseError as exc:
            raise _fault(exc, self.path, self.busy_timeout, opening=True) from exc
        db.path = self.path
        db.busy_timeout = self.busy_timeout
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            if db.execute("PRAGMA page_count").fetchone()[0] == 0:  # a new file: see "Pages" in the module's doc
                db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            self._retry_locked(lambda: db.execute("PRAGMA journal_mode = WAL"))
            page_size = db.execute("PRAGMA page_size").fetchone()[0]
            db.execute(f"PRAGMA wal_autocheckpoint = {max(1, _CHECKPOINT_BYTES // page_size)}")
            db.execute("PRAGMA synchronous = FULL")  # see "Durability" in the module's docstring
            db.execute("PRAGMA foreign_keys = ON")
            # 16 MB of pages (SQLite's default is 2 MB): writing a run's scores checks each row's session
            # (a key lookup) and inserts into two indexes all over their range; with the default, most of
            # those pages are read again from the OS for every batch.
            db.execute("PRAGMA cache_size = -16384")
            db.execute("PRAGMA recursive_triggers = ON")  # a REPLACE fires the delete triggers (full-text search)
        except (sqlite3.DatabaseError, DatabaseFaultError) as exc:
            db.close()
            cause = exc.__cause__ if isinstance(exc, DatabaseFaultError) else exc
            if isinstance(cause, sqlite3.Error):
                raise _fault(cause, self.path, self.busy_timeout, opening=True) from cause
            raise
        with self._open_lock:
            # Connections of threads that have ended are closed here (Streamlit starts a thread per run).
            alive = []
            for thread, other in self._connections:
                owner = thread()
                if owner is None or not owner.is_alive():
                    other.close()
                else:
                    alive.append((thread, other))
            alive.append((weakref.ref(threading.current_thread()), db))
            self._connections = alive
        return db

    def _retry_locked(self, action: Callable[[], object]) -> None:
        # Some steps of opening a brand-new file (the journal mode) are refused, not queued, while
        # another process sets the same file up: try again until the busy timeout has passed.
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                action()
                return
            except DatabaseFaultError as exc:
                if exc.kind != "busy" or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @contextmanager
    def _reading(self) -> Iterator[Conn]:
        yield self.connection()

    @contextmanager
    def _transaction(self) -> Iterator[Conn]:
        conn = self.connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")  # a failed COMMIT (a full disk, say) leaves the transaction open
            except BaseException:
                _rollback(conn)
                raise
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.ProgrammingError):
                raise
            raise _fault(exc, self.path, self.busy_timeout) from exc

    def close(self) -> None:
        with self._open_lock:
            for _thread, db in self._connections:
                db.close()
            self._connections = []
        self._local = threading.local()

    def before_fork(self) -> None:
        self.close()

    def open_connections(self) -> int:
        with self._open_lock:
            return len(self._connections)

    # -- migrations ----------------------------------------------------------------------------------

    def migrate(self) -> list[str]:
        """Apply the migrations the file lacks (one process at a time: the others wait on the write lock,
        then find nothing pending). A file written by a newer evalcore is refused."""
        known = [name for name, _ in MIGRATIONS]
        done = applied(self.connection())
        self._refuse_newer(done, known)
        if set(known) <= set(done):
            return self._applied
        from sqlite_utils import Database

        with self.write():
            migrations = migration_set()
            db = Database(self.connection())
            pending = [m.name for m in migrations.pending(db)]
            if pending:
                migrations.apply(db)  # its own transactions become savepoints inside this one
        self._applied += pending
        return self._applied

    def check_schema(self) -> None:
        self._refuse_newer(applied(self.connection()), [name for name, _ in MIGRATIONS])

    def _refuse_newer(self, done: list[str], known: list[str]) -> None:
        unknown = [name for name in done if name not in known]
        if unknown:
            raise SchemaVersionError(
                f"{self.path} was written by a newer evalcore (migrations {', '.join(unknown)}); upgrade evalcore"
            )

    # -- what SQLite says its own way ----------------------------------------------------------------

    def search_clause(self, text: str, *, system: bool = False) -> tuple[str, list[Any]]:
        found = search.terms(text)
        if not found:
            raise UsageError(f"the search {text!r} has no word to look for")
        query = search.fts5_query(found, system=system)
        return "s.id IN (SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH ?)", [query]

    def search_documents(self, search_text: str, system_text: str) -> tuple[str, str]:
        return search_text, system_text  # FTS5 cuts and folds them itself

    def insert_sessions(self, conn: Conn, rows: list[Row], stamp: str) -> None:
        # The write lock is held (BEGIN IMMEDIATE): the new rows are the ids from here on. Entering the
        # full-text index in bulk costs a tenth of what a trigger would, row by row.
        first = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM sessions").fetchone()[0]
        conn.executemany(_INSERT_SESSIONS, [(*r.values(), stamp, stamp) for r in rows])
        conn.execute(
            "INSERT INTO sessions_fts (rowid, search_text, system_text) "
            "SELECT id, search_text, system_text FROM sessions WHERE id >= ?",
            [first],
        )

    def id_set(self, ids: list[int]) -> tuple[str, list[Any]]:
        return "(SELECT value FROM json_each(?))", [json.dumps(ids)]

    def metadata_values(self, conn: Conn, sql_from: str, args: list[Any], key: str) -> Iterator[tuple[Any, Any]]:
        path = "$.metadata." + json.dumps(key)  # a quoted label: any key, no JSON path syntax in it
        rows = conn.execute(
            f"SELECT s.session_id, json_extract(s.data, ?), json_type(s.data, ?) {sql_from} ORDER BY s.id",
            [path, path, *args],
        )
        for session_id, value, kind in rows:
            yield session_id, json.loads(value) if kind in ("object", "array") else value

    def after_copy(self, conn: Conn) -> None:
        conn.execute("INSERT INTO sessions_fts (sessions_fts) VALUES ('rebuild')")

    @contextmanager
    def references_checked_by_caller(self) -> Iterator[None]:
        conn = self.connection()
        conn.execute("PRAGMA foreign_keys = OFF")
        try:
            yield
        finally:
            conn.execute("PRAGMA foreign_keys = ON")


def _rollback(conn: Conn) -> None:
    """Roll back the open transaction, if SQLite has not already (a full disk, say); a failure to roll
    back is left to SQLite's own recovery (the journal), so that the first error is the one raised."""
    if isinstance(conn, sqlite3.Connection) and conn.in_transaction:
        with suppress(sqlite3.Error, DatabaseFaultError):
            conn.execute("ROLLBACK")

"""The store: one SQLite file (WAL mode) holding datasets, sessions, their edit history and scores.

This module and its siblings are the only code that speaks SQL. Every save carries the
version it was based on; a stale one is refused with a ``ConflictError`` naming who
changed what. Writers wait for each other (busy timeout) instead of failing.

Durability. In WAL mode SQLite's ``synchronous`` setting decides what a power cut (or an OS
crash) may take; a crash of the process alone (kill -9) loses nothing committed in any mode:

* ``NORMAL``: the WAL is synced to disk only at checkpoints, so a power cut can roll the database
  back by the last transactions committed before it (never corrupt it);
* ``FULL``: the WAL is synced at every commit, so a committed transaction survives a power cut;
* ``EXTRA`` is ``FULL`` in WAL mode; ``OFF`` can corrupt the file on a power cut.

Every connection of the store uses ``FULL``: a reviewer's accepted save (and everything else
committed: bulk status and tag changes, comments, imports, scores) is on disk when ``save``
returns. Measured on this project's shared 2-CPU VM (median of 200 saves, five rounds), a save
takes 0.5-0.6 ms with ``NORMAL`` and 0.9-3.8 ms with ``FULL``: one fsync of the WAL more, whose
latency is the disk's. A 20,000-session import commits 11 transactions (batches of 2,000), so
``FULL`` adds 11 fsyncs: 3.3-5.3 s either way, the two within 2% of each other in every round.
Splitting (``NORMAL`` for imports and scores, ``FULL`` for edits) would save nothing measurable
and add a second durability rule, one that every new write path would have to choose right.

Faults. The database's own failures (a full disk, a read-only file or folder, a write lock held by
another process past the busy timeout, a damaged file, an I/O error) are raised as
``DatabaseFaultError`` with a message a person can act on, never as raw ``sqlite3`` errors: every
statement goes through a connection that translates them, and ``write()`` translates any other SQL
error and rolls back, so the file holds what it held before the failed transaction.
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

from pydantic import ValidationError

from evalcore import config
from evalcore._infra.gcpause import paused_gc
from evalcore.errors import (
    ConflictError,
    DatabaseFaultError,
    NotFoundError,
    SchemaVersionError,
    UsageError,
)
from evalcore.schema import Provenance, Session, TurnTruth, validate_session
from evalcore.store.jsontext import loads
from evalcore.store.migrations import MIGRATIONS, applied, migration_set
from evalcore.store.records import SESSION_FIELDS, TURN_FIELDS, Dataset, Edit, StoredSession, now
from evalcore.store.rows import search_text

__all__ = ["Store", "default_db_path"]

_JSON_NULL = "null"


def default_db_path() -> str:
    """``$EVALCORE_DB``, else ``./evalcore.db``."""
    return config.database()


# SQLite's primary result codes that say the database file failed, with what to tell a person.
_FAULTS: dict[int, tuple[str, str]] = {
    3: ("permission to it was denied", "check the permissions of the file and of its folder"),
    5: (
        "another process has held its write lock for more than {timeout} s",
        "wait for that process (an import or a scoring run?) to finish, then try again",
    ),
    6: (
        "another process has held its write lock for more than {timeout} s",
        "wait for that process (an import or a scoring run?) to finish, then try again",
    ),
    7: ("SQLite ran out of memory", "close other programs and try again"),
    8: (
        "it is read-only: the file, or the folder SQLite keeps its -wal and -shm files in, cannot be written",
        "check the permissions of the file and of its folder, or work on a copy",
    ),
    10: ("the disk failed to read or write it", "check the disk and its free space, then try again"),
    11: (
        "the file is damaged",
        "restore it from a backup, or recover what it holds with: sqlite3 {path} .recover",
    ),
    13: ("the disk holding it is full", "nothing of the failed change was saved; free some space and try again"),
    14: (
        "the file cannot be opened",
        "check that its folder exists and that this user may read and write there",
    ),
    15: ("another program broke SQLite's locking protocol", "try again"),
    18: ("a value is larger than SQLite accepts", "make the record smaller"),
    22: ("the file is larger than this system supports", "use a file system with large-file support"),
    23: ("access was refused", "check the file's permissions"),
    26: ("the file is not an SQLite database", "check the path given to --db or $EVALCORE_DB"),
}
_SQL_ERRORS = {1, 19}  # SQLITE_ERROR (an SQL mistake), SQLITE_CONSTRAINT: errors of the SQL, not of the file
_BUSY = {5, 6}


def _fault(exc: sqlite3.Error, path: str, timeout: float, *, opening: bool = False) -> DatabaseFaultError:
    """``exc`` as a ``DatabaseFaultError`` naming the file, what happened and what to do."""
    code = getattr(exc, "sqlite_errorcode", None)
    name = getattr(exc, "sqlite_errorname", None)
    what, advice = _FAULTS.get(code & 0xFF if isinstance(code, int) else -1, ("it failed", ""))
    details = {"timeout": f"{timeout:g}", "path": path}
    head = f"cannot open the database {path}" if opening else f"the database {path} failed"
    message = f"{head}: {what.format(**details)} (SQLite: {exc})"
    if advice:
        message += f"; {advice.format(**details)}"
    return DatabaseFaultError(message, name)


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
    """The store's connection: every statement runs on a ``_Cursor``. SQL mistakes (SQLITE_ERROR,
    constraints) stay ``sqlite3`` errors here, for sqlite-utils' own handling; ``Store.write`` and the
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


class Store:
    """A connection to one evalcore database file; creates and migrates it as needed."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, busy_timeout: float = 30.0) -> None:
        self.path = str(path or default_db_path())
        self.busy_timeout = busy_timeout
        # One connection per thread: Streamlit runs every browser session on threads of its own, and
        # a connection shared between them lets one see another's uncommitted writes.
        self._local = threading.local()
        self._open_lock = threading.Lock()
        self._connections: list[tuple[weakref.ref[threading.Thread], _Connection]] = []
        try:
            self._migrate()
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

    @property
    def db(self) -> _Connection:
        """This thread's connection to the database (opened on first use in each thread)."""
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
            self._retry_locked(lambda: db.execute("PRAGMA journal_mode = WAL"))
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
                if exc.code not in ("SQLITE_BUSY", "SQLITE_LOCKED") or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _migrate(self) -> None:
        known = [name for name, _ in MIGRATIONS]
        done = applied(self.db)
        unknown = [name for name in done if name not in known]
        if unknown:
            raise SchemaVersionError(
                f"{self.path} was written by a newer evalcore (migrations {', '.join(unknown)}); upgrade evalcore"
            )
        if set(known) <= set(done):
            return
        # One process migrates at a time: the others wait on the write lock, then find nothing pending.
        from sqlite_utils import Database

        with self.write():
            migrations = migration_set()
            db = Database(self.db)
            if migrations.pending(db):
                migrations.apply(db)  # its own transactions become savepoints inside this one

    def close(self) -> None:
        """Close every connection this store opened, in any thread."""
        with self._open_lock:
            for _thread, db in self._connections:
                db.close()
            self._connections = []
        self._local = threading.local()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the write lock at once (so it waits, never deadlocks).

        Anything that fails inside rolls the whole transaction back. A failure of SQLite itself is
        raised as ``DatabaseFaultError`` (see the module's docstring), whatever statement met it.
        """
        conn = self.db
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

    # -- datasets ---------------------------------------------------------------------------

    def dataset(self, name: str, *, create: bool = False, description: str | None = None) -> Dataset:
        """The dataset called ``name``; created when ``create`` and missing."""
        row = self.db.execute(
            "SELECT id, name, description, created_at FROM datasets WHERE name = ?", [name]
        ).fetchone()
        if row is None:
            if not create:
                raise NotFoundError(f"no dataset named {name!r}; known: {', '.join(self.dataset_names()) or 'none'}")
            if not name.strip():
                raise UsageError("a dataset needs a name (got an empty one)")
            with self.write() as conn:
                conn.execute(
                    "INSERT OR IGNORE INTO datasets (name, description, created_at) VALUES (?, ?, ?)",
                    [name, description, now()],
                )
            return self.dataset(name)
        count = self.db.execute("SELECT count(*) FROM sessions WHERE dataset_id = ?", [row[0]]).fetchone()[0]
        return Dataset(row[0], row[1], row[2], row[3], count)

    def dataset_id(self, name: str) -> int:
        """The id of the dataset called ``name`` (raises ``NotFoundError`` when there is none)."""
        row = self.db.execute("SELECT id FROM datasets WHERE name = ?", [name]).fetchone()
        if row is None:
            raise NotFoundError(f"no dataset named {name!r}; known: {', '.join(self.dataset_names()) or 'none'}")
        return int(row[0])

    def dataset_names(self) -> list[str]:
        """Every dataset's name, sorted."""
        return [r[0] for r in self.db.execute("SELECT name FROM datasets ORDER BY name")]

    def datasets(self) -> list[Dataset]:
        """Every dataset with its number of sessions."""
        rows = self.db.execute(
            "SELECT d.id, d.name, d.description, d.created_at, count(s.id) FROM datasets d "
            "LEFT JOIN sessions s ON s.dataset_id = d.id GROUP BY d.id ORDER BY d.name"
        ).fetchall()
        return [Dataset(*row) for row in rows]

    # -- sessions ---------------------------------------------------------------------------

    _SELECT = (
        "SELECT s.id, d.name, s.key, s.version, s.data, s.status, s.status_by, s.status_at, s.tags, "
        "s.updated_at, s.updated_by, s.n_edits, s.source, s.format, s.position, s.line, "
        "s.key LIKE 'ida:%' AND EXISTS (SELECT 1 FROM sessions o WHERE o.dataset_id = s.dataset_id "
        "AND o.session_id = s.session_id AND o.id != s.id) "
        "FROM sessions s JOIN datasets d ON d.id = s.dataset_id"
    )

    def get(self, pk: int) -> StoredSession:
        """The session stored under ``pk``, with reviewers' edits applied."""
        return self._get(self.db, pk)

    def _get(self, conn: sqlite3.Connection, pk: int) -> StoredSession:
        if not -(2**63) <= pk < 2**63:  # beyond SQLite's integers: no such row
            raise NotFoundError(f"no session #{pk}")
        row = conn.execute(f"{self._SELECT} WHERE s.id = ?", [pk]).fetchone()
        if row is None:
            raise NotFoundError(f"no session #{pk}")
        return self._stored(row)

    def get_many(self, pks: list[int]) -> list[StoredSession]:
        """The sessions stored under ``pks``, in that order (missing ones left out)."""
        found: dict[int, StoredSession] = {}
        with paused_gc():
            self._load_many(pks, found)
        return [found[pk] for pk in pks if pk in found]

    def _load_many(self, pks: list[int], found: dict[int, StoredSession]) -> None:
        for start in range(0, len(pks), 500):
            chunk = pks[start : start + 500]
            rows = self.db.execute(f"{self._SELECT} WHERE s.id IN ({','.join('?' * len(chunk))})", chunk).fetchall()
            for row in rows:
                found[row[0]] = self._stored(row)

    def find(self, dataset: str, session_id: str) -> int:
        """The ``pk`` of the session with ``session_id`` in ``dataset``."""
        row = self.db.execute(
            "SELECT s.id FROM sessions s JOIN datasets d ON d.id = s.dataset_id WHERE d.name = ? AND s.session_id = ? "
            "ORDER BY s.id LIMIT 1",
            [dataset, session_id],
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no session {session_id!r} in dataset {dataset!r}")
        return int(row[0])

    def find_ref(self, dataset: str, ref: str) -> int:
        """The ``pk`` of the session whose id as exported is ``ref``: its ``session_id``, else the
        identity evalcore gave it (``SessionSummary.ref``)."""
        dataset_id = self.dataset_id(dataset)
        # Its key first; then the session of that session_id no assistant answered; then the first of them.
        row = self.db.execute(
            "SELECT id FROM sessions WHERE dataset_id = ? AND (session_id = ? OR key = ?) "
            "ORDER BY key = ? DESC, key = ? DESC, session_id IS NULL, id LIMIT 1",
            [dataset_id, ref, ref, ref, f"id:{ref}"],
        ).fetchone()
        if row is None:
            raise NotFoundError(f"no session {ref!r} in dataset {dataset!r}")
        return int(row[0])

    def pks(self, dataset: str) -> list[int]:
        """Every session's ``pk`` in ``dataset``, in file order."""
        ds = self.dataset(dataset)
        return [
            r[0] for r in self.db.execute("SELECT id FROM sessions WHERE dataset_id = ? ORDER BY position, id", [ds.id])
        ]

    def _stored(self, row: tuple[Any, ...]) -> StoredSession:
        pk, dataset, key, version, data, status, status_by, status_at, tags, updated_at, updated_by, n_edits = row[:12]
        session = Session.model_validate(loads(data))  # orjson, or the stdlib for NaN / big integers
        source, fmt, position, line = row[12:16]
        session.provenance = Provenance.model_construct(source=source, format=fmt, position=position, line=line)
        if n_edits:
            session = _apply(session, self._edits(pk))
        session.status = status
        session.tags = json.loads(tags)
        return StoredSession(
            pk, dataset, key, version, session, status_by, status_at, updated_at, updated_by, n_edits, bool(row[16])
        )

    def _edits(self, pk: int, *, until: int | None = None) -> list[Edit]:
        sql = (
            "SELECT id, session_pk, turn, field, old, new, author, at, reason, version FROM edits WHERE session_pk = ?"
        )
        args: list[Any] = [pk]
        if until is not None:
            sql += " AND id <= ?"
            args.append(until)
        rows = self.db.execute(sql + " ORDER BY id", args).fetchall()
        return [Edit(r[0], r[1], r[2], r[3], _loads(r[4]), _loads(r[5]), r[6], r[7], r[8], r[9]) for r in rows]

    def history(self, pk: int) -> list[Edit]:
        """Every edit of the session, oldest first."""
        self.get(pk)  # raises when missing
        return self._edits(pk)

    def state_at(self, pk: int, edit_id: int) -> Session:
        """The session as it was right after edit ``edit_id``."""
        stored = self.get(pk)
        every = self._edits(pk)
        if not any(e.id == edit_id for e in every):
            raise NotFoundError(f"session #{pk} has no edit #{edit_id}")
        edits = [e for e in every if e.id <= edit_id]
        row = self.db.execute("SELECT data FROM sessions WHERE id = ?", [pk]).fetchone()
        session = _apply(Session.model_validate_json(row[0]), edits)
        # Status and tags start where their first edit found them (else they never changed).
        for name in ("status", "tags"):
            first = next((e for e in every if e.field == name), None)
            value = first.old if first is not None else getattr(stored.session, name)
            for edit in edits:
                if edit.field == name:
                    value = edit.new
            setattr(session, name, value)
        return session

    # -- saving -----------------------------------------------------------------------------

    def save(
        self,
        pk: int,
        changes: dict[str, Any],
        *,
        base_version: int,
        author: str,
        turn: int | None = None,
        reason: str | None = None,
    ) -> int:
        """Save reviewers' changes to the session (``turn`` given: to that turn's ground truth).

        Returns the new version. Refused with ``ConflictError`` when the session changed
        since ``base_version``, and with ``UsageError`` when a value is invalid; either way
        nothing is written.
        """
        allowed = TURN_FIELDS if turn is not None else (*SESSION_FIELDS, "status", "tags")
        unknown = [f for f in changes if f not in allowed]
        if unknown:
            where = "a turn" if turn is not None else "a session"
            raise UsageError(f"cannot edit {', '.join(unknown)} of {where}; editable: {', '.join(allowed)}")
        return self._save_all(pk, [(turn, changes)], base_version=base_version, author=author, reason=reason)

    def set_status(self, pk: int, status: str, *, base_version: int, author: str, reason: str | None = None) -> int:
        """Set the review status (``todo``, ``in_progress``, ``approved``, ``rejected``, ``flagged``)."""
        return self.save(pk, {"status": status}, base_version=base_version, author=author, reason=reason)

    def restore(self, pk: int, edit_id: int, *, base_version: int, author: str) -> int:
        """Bring every edited field back to its value right after edit ``edit_id``, in one save."""
        target = self.state_at(pk, edit_id)
        current = self.get(pk).session
        groups: list[tuple[int | None, dict[str, Any]]] = []
        session_changes = {
            f: _jsonable(getattr(target, f))
            for f in (*SESSION_FIELDS, "status", "tags")
            if getattr(target, f) != getattr(current, f)
        }
        if session_changes:
            groups.append((None, session_changes))
        for index in range(max(len(target.turn_truth), len(current.turn_truth))):
            old = current.turn_truth[index] if index < len(current.turn_truth) else TurnTruth()
            new = target.turn_truth[index] if index < len(target.turn_truth) else TurnTruth()
            turn_changes = {f: getattr(new, f) for f in TURN_FIELDS if getattr(new, f) != getattr(old, f)}
            if turn_changes:
                groups.append((index, turn_changes))
        reason = f"restored to the state after edit #{edit_id}"
        return self._save_all(pk, groups, base_version=base_version, author=author, reason=reason)

    def _save_all(
        self,
        pk: int,
        groups: list[tuple[int | None, dict[str, Any]]],
        *,
        base_version: int,
        author: str,
        reason: str | None,
    ) -> int:
        """Apply every group of changes (per turn, or ``None`` for the session) as one new version.

        Only the final state is checked, so that changes which are valid together (two qa_ids
        swapped, say) are accepted; a problem the session already had does not block a save.
        """
        if not author:
            raise UsageError("every edit needs an author")
        with self.write() as conn:
            stored = self._get(conn, pk)
            if stored.version != base_version:
                raise self._conflict(conn, stored, base_version)
            session = stored.session.model_copy(deep=True)
            edits: list[tuple[int | None, str, Any, Any]] = []
            for turn, changes in groups:
                for name, value in changes.items():
                    old = _get(session, name, turn)
                    value = _set(session, name, turn, value)
                    if old != value:
                        edits.append((turn, name, old, value))
            if not edits:
                return stored.version
            _trim_turns(session)
            _check(session, before=stored.session)
            version = stored.version + 1
            stamp = now()
            conn.executemany(
                "INSERT INTO edits (session_pk, turn, field, old, new, author, at, reason, version) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (pk, t, name, _dumps(old), _dumps(new), author, stamp, reason, version)
                    for t, name, old, new in edits
                ],
            )
            self._update_row(conn, pk, session, version, stamp, author, len(edits), [e[1] for e in edits])
            return version

    def _conflict(self, conn: sqlite3.Connection, stored: StoredSession, base_version: int) -> ConflictError:
        rows = conn.execute(
            "SELECT author, at, field, turn FROM edits WHERE session_pk = ? AND version > ? ORDER BY id",
            [stored.pk, base_version],
        ).fetchall()
        by_author: dict[tuple[str, str], list[str]] = {}
        for author, at, name, turn in rows:
            by_author.setdefault((author, at[:19].replace("T", " ")), []).append(
                name if turn is None else f"turns[{turn}].{name}"
            )
        changes = "; ".join(
            f"{who} at {at} changed {', '.join(dict.fromkeys(f))}" for (who, at), f in by_author.items()
        )
        label = stored.session.session_id or f"#{stored.pk}"
        return ConflictError(
            f"session {label} was changed since version {base_version} (now {stored.version}): "
            f"{changes or 'changed'}. Nothing was saved; reload to see their changes.",
            stored.version,
        )

    def _update_row(
        self,
        conn: sqlite3.Connection,
        pk: int,
        session: Session,
        version: int,
        stamp: str,
        author: str,
        n_edits: int,
        fields: list[str],
    ) -> None:
        sets = ["version = ?", "updated_at = ?", "updated_by = ?", "n_edits = n_edits + ?", "search_text = ?"]
        sets.append("has_truth = ?")
        args: list[Any] = [version, stamp, author, n_edits, search_text(session), int(session.has_ground_truth())]
        if "status" in fields:
            sets += ["status = ?", "status_by = ?", "status_at = ?"]
            args += [session.status, author, stamp]
        if "tags" in fields:
            sets.append("tags = ?")
            args.append(json.dumps(session.tags))
            conn.execute("DELETE FROM session_tags WHERE session_pk = ?", [pk])
            conn.executemany("INSERT OR IGNORE INTO session_tags VALUES (?, ?)", [(pk, t) for t in session.tags])
        conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", [*args, pk])

    # -- the database's own notes ------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        """A note the database keeps about itself (``None`` when unset)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Keep a note about the database."""
        with self.write() as conn:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", [key, value])

    # -- comments ---------------------------------------------------------------------------

    def add_comment(self, pk: int, body: str, *, author: str, turn: int | None = None) -> int:
        """Add a comment to the session (or one of its turns); returns its id."""
        if not body.strip():
            raise UsageError("a comment needs some text")
        self.get(pk)
        with self.write() as conn:
            cursor = conn.execute(
                "INSERT INTO comments (session_pk, turn, author, body, at) VALUES (?, ?, ?, ?, ?)",
                [pk, turn, author, body, now()],
            )
            return int(cursor.lastrowid or 0)

    def comments(self, pk: int) -> list[dict[str, Any]]:
        """The session's comments, oldest first."""
        rows = self.db.execute(
            "SELECT id, turn, author, body, at FROM comments WHERE session_pk = ? ORDER BY id", [pk]
        ).fetchall()
        return [{"id": r[0], "turn": r[1], "author": r[2], "body": r[3], "at": r[4]} for r in rows]


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite has not already (a full disk, say); a failure to roll
    back is left to SQLite's own recovery (the journal), so that the first error is the one raised."""
    if conn.in_transaction:
        with suppress(sqlite3.Error, DatabaseFaultError):
            conn.execute("ROLLBACK")


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _dumps(value: Any) -> str:
    return json.dumps(_jsonable(value), ensure_ascii=False)


def _jsonable(value: Any) -> Any:
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_defaults=True)
    return value


def _get(session: Session, name: str, turn: int | None) -> Any:
    if turn is None:
        return _jsonable(getattr(session, name))
    return _jsonable(getattr(session.turn_truth[turn], name)) if turn < len(session.turn_truth) else None


def _set(session: Session, name: str, turn: int | None, value: Any) -> Any:
    """Set a field, validated by the model; returns the value as stored (JSON-able)."""
    try:
        if turn is None:
            checked = Session.model_validate({**session.model_dump(), name: value})
            setattr(session, name, getattr(checked, name))
            return _jsonable(getattr(session, name))
        n_user = sum(1 for m in session.messages if m.role == "user")
        # A turn beyond the conversation (left by a re-import that dropped turns) can still be edited, to clear it.
        if not 0 <= turn < max(n_user, len(session.turn_truth)):
            raise UsageError(f"turn {turn} does not exist; the session has {n_user} turns")
        while len(session.turn_truth) <= turn:
            session.turn_truth.append(TurnTruth())
        current = session.turn_truth[turn]
        session.turn_truth[turn] = TurnTruth.model_validate({**current.model_dump(), name: value})
        return _jsonable(getattr(session.turn_truth[turn], name))
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = name if turn is None else f"turns[{turn}].{name}"
        raise UsageError(f"{where}: {error['msg']}") from exc


def _check(session: Session, *, before: Session) -> None:
    """Refuse a save that brings a new error; errors the session had before do not block it."""
    had = {str(p) for p in validate_session(before) if p.level == "error"}
    errors = [str(p) for p in validate_session(session) if p.level == "error" and str(p) not in had]
    if errors:
        raise UsageError("; ".join(errors))


def _apply(session: Session, edits: list[Edit]) -> Session:
    """The imported session with the reviewers' edits laid over it, in order."""
    for edit in edits:
        if edit.field in ("conversation", "status", "tags"):
            continue  # the conversation is the file's; status and tags live in their columns
        if edit.turn is None:
            setattr(session, edit.field, getattr(Session.model_validate({edit.field: edit.new}), edit.field))
        else:
            while len(session.turn_truth) <= edit.turn:
                session.turn_truth.append(TurnTruth())
            truth = session.turn_truth[edit.turn]
            session.turn_truth[edit.turn] = TurnTruth.model_validate({**truth.model_dump(), edit.field: edit.new})
    _trim_turns(session)
    return session


def _trim_turns(session: Session) -> None:
    """Drop empty ground-truth entries at the end (left when a reviewer clears a turn's last field)."""
    empty = TurnTruth()
    while session.turn_truth and session.turn_truth[-1] == empty:
        session.turn_truth.pop()

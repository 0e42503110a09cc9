"""What the store asks of a database engine: connections for reading, transactions for writing, and the few
statements that differ between SQLite and PostgreSQL.

The repositories (``store.sessions``, ``store.runs``...) write their SQL once, in the subset both engines speak
(``?`` placeholders, ``INSERT ... ON CONFLICT``, ``RETURNING``, explicit ``NULLS FIRST``); what cannot be said
the same way on both is a method of the engine, here, so that every difference lives in ``sqlite.py`` and
``postgres.py`` and nowhere else.

A thread that opened a transaction (``write``) reads through it too: ``read`` inside ``write`` is the same
connection, so a repository method called inside a transaction sees what the transaction has written; and a
``write`` inside a ``write`` joins the outer transaction (one commit, or one rollback, for both).
"""

from __future__ import annotations

import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal, Protocol

from evalcore.store.rows import Row

__all__ = ["Conn", "Cursor", "Engine", "EngineKind", "connections_open"]

#: Every engine of this process (its connections may be open), to tell whether a fork is safe.
_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()


def connections_open(identity: str) -> int:
    """How many connections to the database ``identity`` (``Engine.identity``) this process holds open, through any
    store: a child forked to work on it must inherit none (SQLite keeps a file's locks per process, so the child
    would believe it held locks it does not; a PostgreSQL session is its parent's)."""
    return sum(engine.open_connections() for engine in list(_ENGINES) if engine.identity == identity)


EngineKind = Literal["sqlite", "postgresql"]


class Cursor(Protocol):
    """The result of a statement: its rows (tuples), and how many rows it changed."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Conn(Protocol):
    """A connection as the repositories use it: statements with ``?`` placeholders."""

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor: ...


class Engine(ABC):
    """One database: where it is, how to read and write it, and what its SQL says differently."""

    kind: EngineKind
    #: The database as a person reads it in a message: a file's path, or a URL without its password.
    where: str
    #: The database, however it was named: a SQLite file's real path, a PostgreSQL URL.
    identity: str

    def __init__(self) -> None:
        self._local = threading.local()
        #: Each dataset's id by name, as this process last read it (``datasets.id_of(name, fresh=False)``).
        self.dataset_ids: dict[str, int] = {}
        _ENGINES.add(self)

    # -- connections ---------------------------------------------------------------------------

    @contextmanager
    def read(self) -> Iterator[Conn]:
        """A connection to read with (inside a ``write`` of this thread: that transaction's)."""
        current: Conn | None = getattr(self._local, "tx", None)
        if current is not None:
            yield current
            return
        with self._reading() as conn:
            yield conn

    @contextmanager
    def write(self) -> Iterator[Conn]:
        """A transaction: committed when the block ends, rolled back (wholly) when it raises. Writers of one
        SQLite file wait for each other; on PostgreSQL rows are locked as they are changed."""
        current: Conn | None = getattr(self._local, "tx", None)
        if current is not None:  # inside a transaction of this thread: part of it
            yield current
            return
        with self._transaction() as conn:
            self._local.tx = conn
            try:
                yield conn
            finally:
                self._local.tx = None

    @abstractmethod
    def _reading(self) -> Any:
        """A context manager giving a connection outside any transaction (each statement on its own)."""

    @abstractmethod
    def _transaction(self) -> Any:
        """A context manager giving a connection inside a new transaction."""

    @abstractmethod
    def close(self) -> None:
        """Close every connection this engine opened."""

    @abstractmethod
    def open_connections(self) -> int:
        """How many connections this engine holds open now."""

    @abstractmethod
    def before_fork(self) -> None:
        """Close what a forked child must not inherit (connections, a pool): the engine opens new ones on
        its next use. Called with no transaction open."""

    # -- what the two engines say differently ----------------------------------------------------

    #: Appended to a SELECT whose rows the transaction is about to change, so that no other writer changes
    #: them in between (SQLite's writers already wait for each other).
    for_update: str = ""
    #: Whether the database keeps how many sessions of each dataset have each status, assistant and ground-truth
    #: mark (``session_counts``, PostgreSQL's: its ``count(*)`` is slower than SQLite's).
    keeps_counts: bool = False

    #: Whether a statement that may be needed is better sent with others at once than asked for after (a round
    #: trip to a server costs more than a small statement; SQLite has none).
    speculates: bool = False

    def run_all(self, conn: Conn, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Any]]:
        """The rows of each statement (PostgreSQL: all sent at once, in one round trip)."""
        return [conn.execute(sql, parameters).fetchall() for sql, parameters in statements]

    def defer(self, conn: Conn, sql: str, parameters: Sequence[Any]) -> Cursor:
        """Run ``sql`` in ``conn``'s transaction: PostgreSQL sends it with the next statement or the COMMIT (a round
        trip fewer; a failure fails the transaction there). Its cursor says how many rows it changed once the
        transaction is over."""
        return conn.execute(sql, parameters)

    def logged_update(self, update: str, columns: str, rows: int) -> str | None:
        """One statement running ``update`` (an UPDATE of one row) and, only when it changed the row, inserting
        ``rows`` edits (``columns``, then ``update``'s parameters and the edits' values); None where the engine has
        none (SQLite: its writers wait for each other, and a round trip costs nothing)."""
        return None

    def page(self, columns: str, body: str, order: str, *, deep: bool = False) -> str:
        """A page of sessions: ``SELECT columns body ORDER BY order``, then ``LIMIT ? OFFSET ?`` (its two last
        parameters). ``body`` is ``FROM sessions s ... WHERE ...``; ``order`` ends with ``s.id``, so the order is
        total. ``deep``: the offset is large (PostgreSQL then finds the page's ids first, an index-only walk past
        the offset, then reads their rows)."""
        return f"SELECT {columns} {body} ORDER BY {order} LIMIT ? OFFSET ?"

    def page_counted(self, columns: str, matches: str, order: str) -> str | None:
        """A page of the sessions ``matches`` selects (a SELECT of their ``id`` and every column ``order`` reads,
        read as ``s``), its rows ending with how many it selects in all: the matches found once for both. Its
        parameters: ``matches``' then ``LIMIT ? OFFSET ?``'s. None where the engine has no such statement (SQLite:
        its full-text index gives a search's matches in order, a page reads the first of them). PostgreSQL's index
        gives them unordered: a page and its count each read every match, and the page of a rare search walks the
        sort's index past thousands that do not match."""
        return None

    def search_matches(self, dataset_id: int, text: str, *, system: bool = False) -> tuple[str, list[Any]] | None:
        """A statement selecting the ids (as ``id``) of the sessions of dataset ``dataset_id`` a search (and nothing
        else) matches, in no order, and its parameters; None where the engine finds them as any filter's (SQLite:
        its full-text index joined)."""
        return None

    @abstractmethod
    def search_clause(self, text: str, *, system: bool = False) -> tuple[str, list[Any]]:
        """SQL (over ``sessions s``) true for the sessions whose text has every word of ``text``
        (``evalcore.store.search``), and its parameters; a ``UsageError`` when ``text`` has no word. The
        system prompt (``system_text``) is searched too only with ``system``."""

    @abstractmethod
    def search_documents(self, search_text: str, system_text: str) -> tuple[str, str]:
        """``search_text`` and ``system_text`` as this engine stores them (PostgreSQL: the words its index takes)."""

    @abstractmethod
    def insert_sessions(self, conn: Conn, rows: list[Row], stamp: str) -> None:
        """Insert new sessions (``Row``, keys new to their dataset), their search index entries included."""

    def lock_dataset(self, conn: Conn, dataset_id: int) -> None:  # noqa: B027 (SQLite: nothing to do)
        """Hold the dataset's import lock until the transaction ends: two imports into one dataset take turns."""

    def lock_users(self, conn: Conn) -> None:  # noqa: B027 (SQLite: a write transaction is alone already)
        """Hold the users' lock until the transaction ends: two first sign-ins take turns (one owner, not two)."""

    @abstractmethod
    def id_set(self, ids: list[int]) -> tuple[str, list[Any]]:
        """SQL for the set of ``ids`` (``x IN <it>``), with its parameters: one parameter, whatever the count."""

    @abstractmethod
    def metadata_values(self, conn: Conn, sql_from: str, args: list[Any], key: str) -> Iterator[tuple[Any, Any]]:
        """``(session_id, metadata[key])`` of the sessions ``sql_from`` (``FROM sessions s ... WHERE ...``)
        selects, in import order (None where a session's metadata has no such key)."""

    @contextmanager
    def references_checked_by_caller(self) -> Iterator[None]:
        """Around ``write`` blocks that delete (or write) many rows whose references the caller deletes or checks
        itself: the database's own foreign-key checks left out where each costs a scan (SQLite's, of the scores
        of a deleted session: they have no index by session). Nothing changes on PostgreSQL, which checks by
        index and cascades. Not inside a transaction (SQLite cannot switch the checks there)."""
        yield

    @abstractmethod
    def after_copy(self, conn: Conn) -> None:
        """Make what ``evalcore db copy`` wrote whole, in its transaction: SQLite's search index built from the
        sessions, PostgreSQL's id sequences moved past the ids copied in and its counts of sessions made again."""

    #: The migrations applied as this engine opened its database (SQLite migrates a file on opening it).
    applied_on_open: tuple[str, ...] = ()

    @abstractmethod
    def migrate(self) -> list[str]:
        """Bring the database's schema up to date (SQLite: on open; PostgreSQL: ``evalcore db upgrade``); the names
        of the migrations applied (a SQLite file's: those applied since it was opened)."""

    @abstractmethod
    def check_schema(self) -> None:
        """Refuse a database whose schema is behind or ahead of this evalcore, saying what to run."""

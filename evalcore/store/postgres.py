"""The PostgreSQL engine: one database a team shares, on psycopg 3 (no ORM, no server code of our own).

Connections come from a pool (``psycopg_pool``): the app's threads borrow one per operation and give it back;
a connection the server dropped (a restart) is noticed when it is lent (its socket says so) and replaced.
Statements are the repositories' own, their ``?`` placeholders turned into psycopg's; the few that PostgreSQL says
differently are this class's methods (``engine.py`` lists them).

Writers. A transaction runs at READ COMMITTED: every save is a conditional ``UPDATE ... WHERE version = ?``
(a stale one changes nothing and is refused), rows about to change are locked first (``SELECT ... FOR UPDATE``),
and two imports into one dataset take turns on an advisory lock, so no update is lost and no session stored
twice, whatever runs at once.

Search. ``search_text`` holds the session's distinct words as SQLite's FTS5 cuts and folds them
(``evalcore.store.search``), and a generated column makes them a ``tsvector`` (GIN-indexed) without a parser
of PostgreSQL's own in between: the same sessions match the same query on both engines.

Schema. ``evalcore db upgrade URL`` applies the migrations (``pg_migrations``), under an advisory lock; opening
a database whose schema is behind or ahead of this evalcore is refused with the command that fixes it.

Faults (the server down or unreachable, a wrong password, a missing database, a full disk, a statement timeout,
a connection lost mid-transaction) are ``DatabaseFaultError`` with what to do; the transaction that met one
was rolled back by the server.
"""

from __future__ import annotations

import re
import select
import threading
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from decimal import Decimal
from functools import lru_cache
from typing import Any

from evalcore.errors import DatabaseFaultError, SchemaVersionError, UsageError
from evalcore.store import search
from evalcore.store.engine import Conn, Cursor, Engine
from evalcore.store.jsontext import loads
from evalcore.store.pg_migrations import COUNT_ADD, MIGRATIONS, RECOUNT, RECOUNT_TAGS, TAG_ADD
from evalcore.store.rows import ROW_COLUMNS, Row

__all__ = ["PostgresEngine", "public_url"]

#: Advisory lock keys (one 64-bit space per database): migrations, and imports into a dataset (plus its id).
_MIGRATION_LOCK = 0x6576616C636F7265  # "evalcore"
_IMPORT_LOCK = 0x696D706F72740000
_USERS_LOCK = 0x7573657273  # "users"
_CONNECT_TIMEOUT = 10  # seconds to reach the server before saying it cannot be reached

# SQLSTATE classes and codes that say the database failed (not an SQL mistake): kind, what, what to do.
_STATES: dict[str, tuple[str, str, str]] = {
    "28P01": (
        "auth",
        "it refused the user name or password",
        "check the user and password in the URL, PGPASSWORD or ~/.pgpass",
    ),
    "28000": ("auth", "it refused the user", "check the user in the URL and the server's pg_hba.conf"),
    "3D000": ("missing", "the database does not exist", "create it (createdb NAME), then run: evalcore db upgrade URL"),
    "53100": (
        "full",
        "the server's disk is full",
        "nothing of the failed change was saved; free some space on the server and try again",
    ),
    "53200": ("memory", "the server ran out of memory", "try again, or ask the database's administrator"),
    "53300": ("busy", "the server has no connection left for us", "close other clients or raise max_connections"),
    "57014": (
        "timeout",
        "a statement took longer than the server allows (statement_timeout)",
        "nothing of it was saved; try again, or raise the timeout",
    ),
    "57P01": (
        "lost",
        "the server is shutting down",
        "nothing of the failed change was saved; try again once it is back",
    ),
    "57P02": ("lost", "the server is restarting", "try again in a moment"),
    "57P03": ("unreachable", "the server is starting up or shutting down", "try again in a moment"),
    "25006": ("readonly", "it is read-only (a standby, or default_transaction_read_only)", "use the primary"),
    "42501": ("denied", "the user lacks a permission", "grant the user rights on the database's tables"),
    "54000": ("too_big", "a value is larger than PostgreSQL accepts", "make the record smaller"),
    "22021": ("value", "a text holds a character PostgreSQL cannot store (a NUL)", "remove it from the record"),
    "40001": ("busy", "another transaction changed the same rows", "try again"),
    "40P01": ("busy", "two transactions waited for each other (a deadlock)", "try again"),
}
_UNREACHABLE = re.compile(
    r"connection refused|no such file or directory|could not connect|timeout expired|could not translate host|"
    r"name or service not known|connection to server .* failed|network is unreachable",
    re.IGNORECASE,
)
_SAID = (  # what the server says when it refuses a connection (no SQLSTATE reaches the client then)
    (re.compile(r"password authentication failed", re.IGNORECASE), "28P01"),
    (re.compile(r"no pg_hba\.conf entry|role \"[^\"]*\" does not exist", re.IGNORECASE), "28000"),
    (re.compile(r"database \"[^\"]*\" does not exist", re.IGNORECASE), "3D000"),
    (re.compile(r"the database system is (starting up|shutting down|in recovery mode)", re.IGNORECASE), "57P03"),
    (re.compile(r"too many clients|remaining connection slots", re.IGNORECASE), "53300"),
)
_LOST = re.compile(
    r"server closed the connection|consuming input failed|connection is (closed|lost|bad)|terminating connection|"
    r"the connection is lost|ssl syscall|eof detected|broken pipe",
    re.IGNORECASE,
)


def public_url(url: str) -> str:
    """``url`` without its password (``postgresql://ann:***@host/db``), for messages and the app's sidebar."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "postgresql://(a URL that cannot be read)"
    host = parts.netloc
    if "@" in host:
        user, _, rest = host.rpartition("@")
        name = user.split(":", 1)[0]
        host = f"{name}:***@{rest}" if ":" in user else f"{name}@{rest}"
    query = urllib.parse.urlencode(
        [(k, "***" if k.lower() in ("password", "sslpassword") else v) for k, v in urllib.parse.parse_qsl(parts.query)],
        safe="/*",
    )
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, query, ""))


def _fault(exc: BaseException, where: str, *, opening: bool = False) -> DatabaseFaultError | None:
    """``exc`` as a ``DatabaseFaultError`` naming the database, what happened and what to do; None when it is not
    the database failing (an SQL mistake, a constraint: the caller's to handle)."""
    import psycopg

    if not isinstance(exc, psycopg.Error):
        return None
    state = getattr(exc, "sqlstate", None) or ""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    found = _STATES.get(state)
    if found is None and isinstance(exc, psycopg.DataError) and "NUL" in text:  # (refused before it is sent)
        state, found = "22021", _STATES["22021"]
    if found is None and state[:2] == "08":
        found = ("lost", "the connection to the server failed", "nothing of the failed change was saved; try again")
    if found is None and not state and isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        said = next((code for pattern, code in _SAID if pattern.search(str(exc))), None)
        if said is not None:  # (a refused connection carries the server's words, not its SQLSTATE)
            state, found = said, _STATES[said]
    if found is None and not state and isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        if opening or _UNREACHABLE.search(text):
            found = ("unreachable", "the server cannot be reached", "check that it runs and that the host, port or "
                     "socket folder in the URL are right")  # fmt: skip
        elif _LOST.search(text) or isinstance(exc, psycopg.InterfaceError):
            found = ("lost", "the connection to the server was lost", "nothing of the failed change was saved "
                     "(the server rolls back what was not committed); try again")  # fmt: skip
        else:
            found = ("other", "it failed", "")
    if found is None:
        return None
    kind, what, advice = found
    head = f"cannot open the database {where}" if opening else f"the database {where} failed"
    message = f"{head}: {what} (PostgreSQL: {text})" + (f"; {advice}" if advice else "")
    return DatabaseFaultError(message, state or None, kind=kind)


@lru_cache(maxsize=2048)
def _translate(sql: str) -> str:
    """A statement in psycopg's placeholders: ``?`` becomes ``%s``, a literal ``%`` ``%%``."""
    return sql.replace("%", "%%").replace("?", "%s")


class _PgCursor:
    """A psycopg cursor as the repositories use one (faults raised as ``DatabaseFaultError``)."""

    def __init__(self, cursor: Any, engine: PostgresEngine) -> None:
        self._cursor = cursor
        self._engine = engine

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)

    def fetchone(self) -> Any:
        with self._engine.translating():
            return self._cursor.fetchone()

    def fetchall(self) -> list[Any]:
        with self._engine.translating():
            return list(self._cursor.fetchall())

    def __iter__(self) -> Iterator[Any]:
        with self._engine.translating():
            yield from self._cursor


class _PgConn:
    """A pooled psycopg connection speaking the repositories' SQL.

    In a transaction (``opening``), its BEGIN goes with the first statement, and statements whose result is not
    read (``defer``) go with the next one or with the COMMIT: in one round trip each (psycopg's pipeline mode),
    for every round trip is a wait for the server, and a longer one on a busy machine."""

    def __init__(self, conn: Any, engine: PostgresEngine, *, opening: bool = False) -> None:
        self.raw = conn
        self._engine = engine
        self._opening = opening  # BEGIN not sent yet
        self.begun = False
        self._deferred: list[tuple[Any, str, Sequence[Any]]] = []

    def _send(self, cursor: Any, sql: str, parameters: Sequence[Any]) -> None:
        if parameters:
            cursor.execute(_translate(sql), list(parameters))
        else:  # no parameter: psycopg sends the statement as it is (a % stays a %)
            cursor.execute(sql)

    def _pending(self) -> bool:
        return self._opening or bool(self._deferred)

    def _flush_into(self) -> None:
        """Queue BEGIN and the deferred statements (in pipeline mode)."""
        if self._opening:
            self.raw.execute("BEGIN")
            self._opening, self.begun = False, True
        deferred, self._deferred = self._deferred, []
        for cursor, sql, parameters in deferred:
            self._send(cursor, sql, parameters)

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        cursor = self.raw.cursor()
        with self._engine.translating():
            if self._pending():
                with self.raw.pipeline() as pipeline:
                    self._flush_into()
                    self._send(cursor, sql, parameters)
                    pipeline.sync()
            else:
                self._send(cursor, sql, parameters)
        return _PgCursor(cursor, self._engine)

    def run_all(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Any]]:
        """The rows of each statement, all sent at once (one round trip)."""
        cursors = [self.raw.cursor() for _ in statements]
        with self._engine.translating():
            with self.raw.pipeline() as pipeline:
                self._flush_into()
                for cursor, (sql, parameters) in zip(cursors, statements, strict=True):
                    self._send(cursor, sql, parameters)
                pipeline.sync()
            return [list(cursor.fetchall()) for cursor in cursors]

    def defer(self, sql: str, parameters: Sequence[Any] = (), /) -> Cursor:
        """Run ``sql`` with the next statement or the COMMIT (a failure fails the transaction there); its cursor
        has its result then."""
        cursor = self.raw.cursor()
        self._deferred.append((cursor, sql, parameters))
        return _PgCursor(cursor, self._engine)

    def ready(self) -> None:
        """Send what waits (BEGIN, deferred statements) now: before a COPY or a named cursor, which pipeline mode
        does not take."""
        if self._pending():
            with self._engine.translating(), self.raw.pipeline():
                self._flush_into()

    def finish(self, command: str) -> None:
        """End the transaction with ``command`` (COMMIT or ROLLBACK), what waits sent with it."""
        if command == "ROLLBACK":
            self._opening, self._deferred = False, []
            if self.begun:
                self.begun = False
                self.raw.execute("ROLLBACK")
            return
        if not self.begun and not self._deferred:  # nothing was asked: no transaction to end
            self._opening = False
            return
        with self._engine.translating(), self.raw.pipeline():
            self._flush_into()
            self.raw.execute(command)
        self.begun = False

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor:
        self.ready()
        cursor = self.raw.cursor()
        with self._engine.translating():
            cursor.executemany(_translate(sql), [list(p) for p in parameters])
        return _PgCursor(cursor, self._engine)

    def stream(self, sql: str, parameters: Sequence[Any], *, size: int = 500) -> Iterator[Any]:
        """The rows of a big result, ``size`` at a time from the server (a named cursor in a transaction)."""
        self.ready()
        with self._engine.translating(), self.raw.transaction(), self.raw.cursor(name="evalcore_stream") as cursor:
            cursor.itersize = size
            cursor.execute(_translate(sql), list(parameters))
            yield from cursor


def _check_lent(conn: Any) -> None:
    """The pool's check of a connection it is about to lend (raising makes it take another): a round trip to the
    server (``ConnectionPool.check_connection``) only when the idle connection's socket has something to read —
    the server closed it (a restart, a terminated backend: end of file) or said something unasked — else none (an
    idle connection the server keeps says nothing). A page or a save is then not one round trip longer."""
    from psycopg_pool import ConnectionPool

    if conn.closed or conn.broken:
        raise DatabaseFaultError("the connection is closed", kind="lost")
    try:
        readable = bool(select.select([conn.fileno()], [], [], 0)[0])
    except (OSError, ValueError):  # no socket to look at: let the round trip say
        readable = True
    if readable:
        ConnectionPool.check_connection(conn)


def _numbers(conn: Any) -> None:
    """A connection's set-up: ``numeric`` results (``sum`` of integers) read as ``int`` when whole, else ``float``,
    as SQLite gives them."""
    from psycopg.adapt import Loader

    class _Number(Loader):
        def load(self, data: Any) -> Any:
            value = Decimal(bytes(data).decode())
            return int(value) if value == value.to_integral_value() and value.is_finite() else float(value)

    conn.adapters.register_loader("numeric", _Number)


_INSERT_COLUMNS = (*ROW_COLUMNS, "created_at", "updated_at")
_EDIT_TYPES = {"session_pk": "bigint", "turn": "bigint", "version": "bigint", "author_id": "bigint"}  # (else text)
_SEARCH_AT = ROW_COLUMNS.index("search_text")
_SYSTEM_AT = ROW_COLUMNS.index("system_text")
_TITLE_AT = ROW_COLUMNS.index("title")
_TAGS_AT_ONCE = 5000  # (tags counted a statement: 3 parameters each, of the 65,535 a statement may have)


class PostgresEngine(Engine):
    """A pool of connections to one PostgreSQL database (``postgresql://user:password@host:port/db``, or a
    unix socket: ``postgresql://user@/db?host=/socket/folder``)."""

    kind = "postgresql"
    for_update = " FOR UPDATE"
    keeps_counts = True
    speculates = True

    def __init__(self, url: str, *, pool_size: int = 10, check: bool = True) -> None:
        super().__init__()
        try:
            import psycopg  # noqa: F401  (installed with evalcore)
            from psycopg_pool import ConnectionPool
        except ImportError as exc:  # pragma: no cover  (a dependency of evalcore)
            raise UsageError(f"PostgreSQL needs psycopg and psycopg_pool: pip install evalcore ({exc})") from exc
        self.url = url
        self.where = public_url(url)
        self.identity = url
        self._pool_size = pool_size
        self._pool_lock = threading.Lock()
        self._pool: ConnectionPool[Any] | None = None
        self._reach()
        if check:
            try:
                self.check_schema()
            except BaseException:
                self.close()
                raise

    # -- connections ---------------------------------------------------------------------------------

    def _reach(self) -> None:
        """Connect once, now: a server that is down, a wrong password or a missing database is said at once."""
        import psycopg

        try:
            psycopg.connect(self.url, connect_timeout=_CONNECT_TIMEOUT, autocommit=True).close()
        except psycopg.Error as exc:
            raise _fault(exc, self.where, opening=True) or DatabaseFaultError(
                f"cannot open the database {self.where}: {exc}", kind="other"
            ) from exc

    def _the_pool(self) -> Any:
        pool = self._pool
        if pool is None:
            from psycopg_pool import ConnectionPool

            with self._pool_lock:
                if self._pool is None:
                    self._pool = ConnectionPool(
                        self.url, min_size=1, max_size=self._pool_size, open=True, name="evalcore",
                        kwargs={"autocommit": True, "connect_timeout": _CONNECT_TIMEOUT}, configure=_numbers,
                        check=_check_lent, timeout=30,
                    )  # fmt: skip
                pool = self._pool
        return pool

    @contextmanager
    def translating(self) -> Iterator[None]:
        """Raise what psycopg raises for a failing database as ``DatabaseFaultError``."""
        try:
            yield
        except DatabaseFaultError:
            raise
        except Exception as exc:
            fault = _fault(exc, self.where)
            if fault is None:
                raise
            raise fault from exc

    @contextmanager
    def _borrowed(self) -> Iterator[Any]:
        from psycopg_pool import PoolTimeout

        try:
            with self._the_pool().connection() as conn:
                yield conn
        except PoolTimeout as exc:
            raise DatabaseFaultError(
                f"the database {self.where} failed: no connection could be had in 30 s (the server is down, or "
                "every connection is busy); try again",
                kind="unreachable",
            ) from exc

    @contextmanager
    def _reading(self) -> Iterator[Conn]:
        with self._borrowed() as conn:
            yield _PgConn(conn, self)

    @contextmanager
    def _transaction(self) -> Iterator[Conn]:
        with self._borrowed() as raw, self.translating():
            conn = _PgConn(raw, self, opening=True)
            try:
                yield conn
                conn.finish("COMMIT")
            except BaseException:
                with suppress(Exception):  # (a lost connection: the server rolled back; the pool drops it)
                    conn.finish("ROLLBACK")
                raise

    def close(self) -> None:
        with self._pool_lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def before_fork(self) -> None:
        self.close()

    def open_connections(self) -> int:
        pool = self._pool
        return 0 if pool is None else max(1, int(pool.get_stats().get("pool_size", 1)))

    # -- migrations ----------------------------------------------------------------------------------

    def _applied(self, conn: Conn) -> list[str]:
        exists = conn.execute("SELECT to_regclass('evalcore_migrations') IS NOT NULL").fetchone()[0]
        if not exists:
            return []
        return [row[0] for row in conn.execute("SELECT name FROM evalcore_migrations ORDER BY applied_at, name")]

    def migrate(self) -> list[str]:
        """Apply the pending migrations, all in one transaction, under an advisory lock (two upgrades at once:
        the second waits, then finds nothing to do)."""
        known = [name for name, _ in MIGRATIONS]
        applied: list[str] = []
        with self.write() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(?)", [_MIGRATION_LOCK])
            conn.execute(
                "CREATE TABLE IF NOT EXISTS evalcore_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
            )
            done = self._applied(conn)
            self._refuse_newer(done, known)
            from evalcore.store.records import now

            for name, statements in MIGRATIONS:
                if name in done:
                    continue
                for statement in statements:
                    conn.execute(statement)
                conn.execute("INSERT INTO evalcore_migrations (name, applied_at) VALUES (?, ?)", [name, now()])
                applied.append(name)
        return applied

    def pending(self) -> list[str]:
        """The migrations this database lacks."""
        with self.read() as conn:
            done = self._applied(conn)
        return [name for name, _ in MIGRATIONS if name not in done]

    def check_schema(self) -> None:
        known = [name for name, _ in MIGRATIONS]
        with self.read() as conn:
            done = self._applied(conn)
        self._refuse_newer(done, known)
        missing = [name for name in known if name not in done]
        if missing:
            what = "has no evalcore tables yet" if not done else f"lacks migrations {', '.join(missing)}"
            raise SchemaVersionError(
                f"the database {self.where} {what}: run  evalcore db upgrade {self.where}  (with the password) first"
            )

    def _refuse_newer(self, done: list[str], known: list[str]) -> None:
        unknown = [name for name in done if name not in known]
        if unknown:
            raise SchemaVersionError(
                f"the database {self.where} was upgraded by a newer evalcore (migrations {', '.join(unknown)}); "
                "upgrade evalcore"
            )

    # -- what PostgreSQL says its own way ------------------------------------------------------------

    def search_clause(self, text: str, *, system: bool = False) -> tuple[str, list[Any]]:
        words, values = self._search_words(text, system=system)
        return f"EXISTS (SELECT 1 FROM session_search x WHERE x.session_pk = s.id AND {words})", values

    @staticmethod
    def _search_words(text: str, *, system: bool) -> tuple[str, list[Any]]:
        """The search's condition on ``session_search x`` (migration 0011), and its parameters."""
        found = search.terms(text)
        if not found:
            raise UsageError(f"the search {text!r} has no word to look for")
        if not system:
            return "x.search_tsv @@ CAST(? AS tsquery)", [search.tsquery(found)]
        # Each word in the conversation's words or the system prompt's (the two documents hold different words):
        # both GIN indexes answer it, combined word by word.
        either = "(x.search_tsv @@ CAST(? AS tsquery) OR x.system_tsv @@ CAST(? AS tsquery))"
        words = [search.tsquery([term]) for term in found]
        return "(" + " AND ".join([either] * len(words)) + ")", [w for word in words for w in (word, word)]

    def search_matches(self, dataset_id: int, text: str, *, system: bool = False) -> tuple[str, list[Any]] | None:
        # (the narrow table alone: counted, or a page in import order found, without a row of ``sessions`` read)
        words, values = self._search_words(text, system=system)
        matches = f"SELECT x.session_pk AS id FROM session_search x WHERE x.dataset_id = ? AND {words}"
        return matches, [dataset_id, *values]

    def search_documents(self, search_text: str, system_text: str) -> tuple[str, str]:
        return search.documents(search_text, system_text)

    def page(self, columns: str, body: str, order: str, *, deep: bool = False) -> str:
        # Deep: the ids first, then their rows: walking past the offset in the sort's index, PostgreSQL reads only
        # the index (a row read for each session skipped made a deep page many times slower than SQLite's). The
        # same rows come, in the same order: ``order`` is total (it ends with ``s.id``), and orders the page again.
        # Not deep: one SELECT (the two levels took PostgreSQL twice as long to plan: 0.3 ms of a 1 ms page).
        if not deep or not body.startswith("FROM sessions s WHERE "):  # (a score joined: a column of the page)
            return super().page(columns, body, order)
        return (
            f"SELECT {columns} FROM sessions s WHERE s.id IN (SELECT s.id {body} ORDER BY {order} LIMIT ? OFFSET ?) "
            f"ORDER BY {order}"
        )

    def page_counted(self, columns: str, matches: str, order: str) -> str | None:
        return (
            f"WITH m AS MATERIALIZED ({matches}) SELECT {columns}, (SELECT count(*) FROM m) "
            f"FROM sessions s WHERE s.id IN (SELECT s.id FROM m s ORDER BY {order} LIMIT ? OFFSET ?) ORDER BY {order}"
        )

    def run_all(self, conn: Conn, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[Any]]:
        assert isinstance(conn, _PgConn)
        return conn.run_all(statements)

    def defer(self, conn: Conn, sql: str, parameters: Sequence[Any]) -> Cursor:
        assert isinstance(conn, _PgConn)
        return conn.defer(sql, parameters)

    def logged_update(self, update: str, columns: str, rows: int) -> str | None:
        if rows < 1:
            return None
        cast = "(" + ", ".join(f"CAST(? AS {_EDIT_TYPES.get(c.strip(), 'text')})" for c in columns.split(",")) + ")"
        plain = "(" + ", ".join("?" * len(columns.split(","))) + ")"
        return (
            f"WITH changed AS ({update} RETURNING id) INSERT INTO edits ({columns}) SELECT * FROM (VALUES "
            f"{', '.join([cast] + [plain] * (rows - 1))}) AS v ({columns}) WHERE EXISTS (SELECT 1 FROM changed)"
        )

    def insert_sessions(self, conn: Conn, rows: list[Row], stamp: str) -> None:
        assert isinstance(conn, _PgConn)
        conn.ready()
        columns = ", ".join(_INSERT_COLUMNS)
        with (
            self.translating(),
            conn.raw.cursor() as cursor,
            cursor.copy(f"COPY sessions ({columns}) FROM STDIN") as copy,
        ):
            for row in rows:
                values = list(row.values())
                values[_SEARCH_AT], values[_SYSTEM_AT] = search.documents(values[_SEARCH_AT], values[_SYSTEM_AT])
                values[_TITLE_AT] = values[_TITLE_AT].replace("\x00", "")
                copy.write_row((*values, stamp, stamp))
        counted: dict[tuple[int, str, str, int], int] = {}  # (the counts it keeps: see pg_migrations)
        tagged: dict[tuple[int, str], int] = {}
        for row in rows:
            key = (
                row.dataset_id,
                row.status,
                "" if row.assistant_id is None else "=" + row.assistant_id,
                row.has_truth,
            )
            counted[key] = counted.get(key, 0) + 1
            for tag in set(row.tag_list):
                tagged[row.dataset_id, tag] = tagged.get((row.dataset_id, tag), 0) + 1
        if counted:
            conn.defer(
                COUNT_ADD.format(rows="VALUES " + ", ".join(["(?, ?, ?, ?, ?)"] * len(counted))),
                [value for key, n in sorted(counted.items()) for value in (*key, n)],
            )
        ordered = sorted(tagged.items())
        for at in range(0, len(ordered), _TAGS_AT_ONCE):
            part = ordered[at : at + _TAGS_AT_ONCE]
            conn.defer(
                TAG_ADD.format(rows="VALUES " + ", ".join(["(?, ?, ?)"] * len(part))),
                [value for key, n in part for value in (*key, n)],
            )

    def lock_dataset(self, conn: Conn, dataset_id: int) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(?)", [_IMPORT_LOCK + dataset_id])

    def lock_users(self, conn: Conn) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(?)", [_USERS_LOCK])

    def id_set(self, ids: list[int]) -> tuple[str, list[Any]]:
        return "(SELECT unnest(CAST(? AS bigint[])))", [ids]

    def after_copy(self, conn: Conn) -> None:
        for statement in (*RECOUNT, *RECOUNT_TAGS):
            conn.execute(statement)
        for table in (
            "users",
            "datasets",
            "sessions",
            "edits",
            "comments",
            "verdicts",
            "runs",
            "scores",
            "jobs",
            "questions",
            "answers",
            "gold",
            "queues",
        ):
            conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), coalesce(max(id), 1), max(id) IS NOT NULL) "
                f"FROM {table}"
            )

    def metadata_values(self, conn: Conn, sql_from: str, args: list[Any], key: str) -> Iterator[tuple[Any, Any]]:
        # Read in Python: a session's JSON may hold NaN or big integers, which PostgreSQL's json type refuses.
        assert isinstance(conn, _PgConn)
        for session_id, data in conn.stream(f"SELECT s.session_id, s.data {sql_from} ORDER BY s.id", args):
            metadata = loads(data).get("metadata")
            yield session_id, metadata.get(key) if isinstance(metadata, dict) else None

"""The store: one contract over two engines, SQLite (a file, for one person) and PostgreSQL (a server, for a team).

``open_store(url)`` opens one: a plain path or ``sqlite:///path`` is a SQLite file (created and migrated on first
use), ``postgresql://...`` a PostgreSQL database (any libpq URL, a unix socket included:
``postgresql://user@/db?host=/socket/folder``; its schema applied by ``evalcore db upgrade URL``). Everything is
reached through the repositories hanging off the store::

    store.users      the people who use it, their roles, who may come in
    store.datasets   datasets: create, list, overview, rename, delete
    store.sessions   sessions: read, save (versioned), history, browse and search, bulk changes, imports
    store.runs       scoring runs and their scores
    store.jobs       background jobs and their progress
    store.labels     reviewers' verdicts and comments
    store.cache      the judge's answers
    store.meta       notes the database keeps about itself

A store is used by someone (``store.user``): opened, by the machine's local user, its owner; ``as_user(user)``
gives the same store used by another (the person signed in to the app). Every change is checked against that
user's role (``evalcore.store.access``) and carries their id and name. Every save carries the version it was
based on; a stale one is refused with a ``ConflictError`` naming who changed what, on either engine. The database's
own failures are ``DatabaseFaultError``. No raw connection is handed out: the SQL lives in this package
(``engine.py`` says what differs between the engines).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from evalcore import config
from evalcore.errors import PermissionDeniedError, UsageError
from evalcore.store.engine import Engine

if TYPE_CHECKING:
    from evalcore.store.access import Action, User
    from evalcore.store.cache import JudgeCacheTable
    from evalcore.store.datasets import Datasets
    from evalcore.store.engine import Conn
    from evalcore.store.jobs import Jobs
    from evalcore.store.labels import Labels
    from evalcore.store.runs import Runs
    from evalcore.store.sessions import Sessions
    from evalcore.store.users import Users

__all__ = [
    "SIGN_IN_NOTES",
    "Meta",
    "Store",
    "default_db_path",
    "is_database_file",
    "is_postgres",
    "open_store",
    "refuse_database_file",
    "sqlite_path",
]


def default_db_path() -> str:
    """``$EVALCORE_DB``, else ``./evalcore.db``."""
    return config.database()


def is_postgres(url: str) -> bool:
    """Whether ``url`` names a PostgreSQL database (else it is a SQLite file)."""
    return url.startswith(("postgresql://", "postgres://"))


def sqlite_path(url: str) -> str:
    """The file of a SQLite ``url``: a plain path, or ``sqlite:///relative`` / ``sqlite:////absolute``."""
    return url[len("sqlite:///") :] if url.startswith("sqlite:///") else url


def is_database_file(path: str | os.PathLike[str], url: str) -> bool:
    """Whether writing ``path`` would write the SQLite database ``url`` or one of its files (``-wal``, ``-shm``,
    ``-journal``), however it is named: the same file through a symbolic link, a hard link or another spelling.
    Nothing is opened or created. (A PostgreSQL database has no file here.)"""
    if is_postgres(url):
        return False
    database = sqlite_path(url)
    target = os.path.realpath(path)
    try:
        found = os.stat(path)
    except OSError:
        found = None
    for suffix in ("", "-wal", "-shm", "-journal"):
        name = database + suffix
        if os.path.realpath(name) == target:
            return True
        if found is not None:
            try:
                mine = os.stat(name)
            except OSError:
                continue
            if (mine.st_dev, mine.st_ino) == (found.st_dev, found.st_ino):
                return True
    return False


def refuse_database_file(path: str | os.PathLike[str], url: str) -> None:
    """A ``UsageError`` when ``path`` is the database ``url`` or one of its files (``is_database_file``): no output
    ever overwrites the store."""
    if is_database_file(path, url):
        raise UsageError(f"{path} is the database {sqlite_path(url)} (or one of its files): choose another output")


def _engine(url: str, *, busy_timeout: float, check: bool) -> Engine:
    if is_postgres(url):
        from evalcore.store.postgres import PostgresEngine

        return PostgresEngine(url, check=check)
    from evalcore.store.sqlite import SqliteEngine

    return SqliteEngine(sqlite_path(url), busy_timeout=busy_timeout)


#: The prefix of the notes that say who may sign in: written by ``store.users`` only.
SIGN_IN_NOTES = "signin:"


class Meta:
    """Notes the database keeps about itself (a key and a text each)."""

    def __init__(self, store: Store) -> None:
        self._engine = store._engine

    def get(self, key: str) -> str | None:
        """The note ``key`` (None when unset)."""
        with self._engine.read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        return None if row is None else str(row[0])

    def set(self, key: str, value: str) -> None:
        """Keep the note ``key`` (a cache's, a sample's: anyone's). The sign-in's notes (``signin:``) change only
        through ``store.users``, which checks the acting user's role."""
        if key.startswith(SIGN_IN_NOTES):
            raise PermissionDeniedError(f"the note {key!r} is the sign-in's: it changes through store.users")
        with self._engine.write() as conn:
            set_note(conn, key, value)


def set_note(conn: Conn, key: str, value: str) -> None:
    """Keep the note ``key`` inside the caller's transaction."""
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [key, value],
    )


class Store:
    """One evalcore database (see the module's docstring). Usable from any thread; close it when done."""

    def __init__(
        self, url: str | os.PathLike[str] | None = None, *, busy_timeout: float = 30.0, check: bool = True
    ) -> None:
        self.url = os.fspath(url) if url is not None else default_db_path()
        self.busy_timeout = busy_timeout
        self._engine = _engine(self.url, busy_timeout=busy_timeout, check=check)
        self._owns_engine = True
        self._user: User | None = None  # (None: the local user, read when first needed)
        self._repositories()
        if check and self._engine.applied_on_open:
            self.sessions.reindex_search()  # after a migration that changed what search indexes
            self.labels.adopt_pending()  # after the migration that made verdicts answers

    def _repositories(self) -> None:
        from evalcore.store.answers import Answers
        from evalcore.store.cache import JudgeCacheTable
        from evalcore.store.datasets import Datasets
        from evalcore.store.drafts import Drafts
        from evalcore.store.jobs import Jobs
        from evalcore.store.labels import Labels
        from evalcore.store.questions import Questions
        from evalcore.store.queues import Queues
        from evalcore.store.runs import Runs
        from evalcore.store.sessions import Sessions
        from evalcore.store.users import Users

        self.users: Users = Users(self)
        self.datasets: Datasets = Datasets(self)
        self.sessions: Sessions = Sessions(self)
        self.runs: Runs = Runs(self)
        self.jobs: Jobs = Jobs(self)
        self.labels: Labels = Labels(self)
        self.questions: Questions = Questions(self)
        self.answers: Answers = Answers(self)
        self.queues: Queues = Queues(self)
        self.drafts: Drafts = Drafts(self)
        self.cache: JudgeCacheTable = JudgeCacheTable(self)
        self.meta = Meta(self)

    # -- who uses it ----------------------------------------------------------------------------------------

    @property
    def user(self) -> User:
        """Who uses the store: every change it makes is checked against their role and carries their name."""
        if self._user is None:
            self._user = self.users.local()
        return self._user

    def as_user(self, user: User) -> Store:
        """This store, used by ``user`` (the same database and connections; closing it closes nothing)."""
        bound = object.__new__(Store)
        bound.url = self.url
        bound.busy_timeout = self.busy_timeout
        bound._engine = self._engine
        bound._owns_engine = False
        bound._user = user
        bound._repositories()
        return bound

    def require(self, action: Action, what: str, *, read: list[Any] | None = None) -> None:
        """A ``PermissionDeniedError`` unless the store's user may ``action`` (``what``: the change, in words). Their
        role is read again from the database first: a user disabled or lowered while they work is refused at once.
        ``read``: the rows of ``user_statement()``, read already (with other statements: one round trip)."""
        from evalcore.store.access import require
        from evalcore.store.users import LOCAL

        user = self.user
        if read is not None:
            self._user = user = self.users.of_rows(user, read)
        elif user.iss == LOCAL:  # (its row may have gone with a transaction rolled back since: read it again)
            self._user = user = self.users.local()
        elif user.id:
            self._user = user = self.users.get(user.id)
        require(user, action, what)

    def user_statement(self) -> tuple[str, list[Any]]:
        """The statement ``require`` reads the store's user again with."""
        return self.users.statement_of(self.user)

    def author(self, conn: Conn) -> tuple[str, int]:
        """The name and id a change made now is signed with (inside its transaction: the local user gets its row
        the first time it changes something)."""
        from evalcore.store.users import LOCAL

        user = self.user
        if user.iss == LOCAL:  # its row, made in this transaction if it has none (a rolled-back one took it away)
            self._user = user = self.users.local_row(conn)
        return user.name, user.id

    @property
    def kind(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self._engine.kind

    @property
    def identity(self) -> str:
        """The database, however it was named (a SQLite file's real path, a PostgreSQL URL): for telling whether two
        stores are one."""
        return self._engine.identity

    @property
    def where(self) -> str:
        """The database as a person reads it: a file's path, or a URL without its password."""
        return self._engine.where

    def refuse_as_output(self, path: str | os.PathLike[str]) -> None:
        """A ``UsageError`` when writing ``path`` would write this store's database (``is_database_file``)."""
        refuse_database_file(path, self.url)

    def upgrade(self) -> list[str]:
        """Apply the schema's pending migrations (``evalcore db upgrade``), then index the sessions' search texts anew
        if a migration asked for it (and an earlier try did not finish), and make the verdicts given so far answers
        (``Labels.adopt_pending``) likewise; the names of the migrations applied."""
        applied = self._engine.migrate()
        self.sessions.reindex_search()
        self.labels.adopt_pending()
        return applied

    def before_fork(self) -> None:
        """Close every connection before this process forks (a child must not inherit one; see ``sqlite.py``).
        The store opens new ones on its next use."""
        self._engine.before_fork()

    def close(self) -> None:
        """Close every connection this store opened, in any thread (a store ``as_user`` gave closes nothing: its
        connections are the store's it came from)."""
        if self._owns_engine:
            self._engine.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(url: str | os.PathLike[str] | None = None, *, busy_timeout: float = 30.0) -> Store:
    """The store at ``url``: a SQLite file's path (or ``sqlite:///path``), or a ``postgresql://`` URL; by default
    ``$EVALCORE_DB``, else ``./evalcore.db``. A SQLite file is created and migrated on first use; a PostgreSQL
    database must have been upgraded (``evalcore db upgrade URL``)."""
    return Store(url, busy_timeout=busy_timeout)

"""The store's schema, as sqlite-utils migrations: each applied once, in order, safe to run twice.

sqlite-utils applies them and records each in its ``_sqlite_migrations`` table. It is imported only when a
file has migrations to apply: opening an up-to-date store reads that table with one query (``applied``), so
a command such as ``evalcore score`` does not pay sqlite-utils' import (a third of its start-up's imports).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlite_utils import Database, Migrations

__all__ = [
    "MIGRATION_SET",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SEARCH_REINDEX",
    "VERDICTS_ADOPT",
    "applied",
    "migration_set",
]

#: The name of evalcore's set in sqlite-utils' ``_sqlite_migrations`` table.
MIGRATION_SET = "evalcore"
#: Every migration, in the order they apply: (name, function).
MIGRATIONS: list[tuple[str, Callable[[Database], None]]] = []


def _migration(name: str) -> Callable[[Callable[[Database], None]], Callable[[Database], None]]:
    def register(fn: Callable[[Database], None]) -> Callable[[Database], None]:
        MIGRATIONS.append((name, fn))
        return fn

    return register


@cache
def migration_set() -> Migrations:
    """The migrations as sqlite-utils' ``Migrations`` (importing sqlite-utils): what applies them."""
    from sqlite_utils import Migrations

    migrations = Migrations(MIGRATION_SET)
    for name, fn in MIGRATIONS:
        migrations(name=name)(fn)
    return migrations


def applied(conn: sqlite3.Connection) -> list[str]:
    """The names of the migrations applied to the file, in the order they were (as sqlite-utils' ``applied``)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlite_migrations'").fetchone():
        return []
    rows = conn.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = ? ORDER BY rowid", [MIGRATION_SET])
    return [row[0] for row in rows.fetchall()]


@_migration("0001_initial")
def initial(db: Database) -> None:
    """Datasets, sessions, edit history, comments, runs, scores, the judge cache, full-text search."""
    db.execute(
        """
        CREATE TABLE datasets (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            description TEXT,
            created_at TEXT NOT NULL
        )"""
    )
    db.execute(
        """
        CREATE TABLE sessions (
            id INTEGER PRIMARY KEY,
            dataset_id INTEGER NOT NULL REFERENCES datasets(id),
            key TEXT NOT NULL,
            session_id TEXT,
            assistant_id TEXT,
            title TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT 'todo',
            status_by TEXT,
            status_at TEXT,
            tags TEXT NOT NULL DEFAULT '[]',
            n_turns INTEGER NOT NULL DEFAULT 0,
            n_messages INTEGER NOT NULL DEFAULT 0,
            n_tool_calls INTEGER NOT NULL DEFAULT 0,
            source TEXT,
            format TEXT,
            position INTEGER,
            line INTEGER,
            data TEXT NOT NULL,
            content_hash TEXT NOT NULL,
            n_edits INTEGER NOT NULL DEFAULT 0,
            version INTEGER NOT NULL DEFAULT 1,
            search_text TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            updated_by TEXT,
            UNIQUE (dataset_id, key)
        )"""
    )
    db.execute("CREATE INDEX idx_sessions_dataset ON sessions (dataset_id)")  # file order: by id
    for columns in ("status", "assistant_id", "session_id", "n_turns", "n_tool_calls", "updated_at"):
        name = "idx_sessions_" + columns.replace(", ", "_")
        db.execute(f"CREATE INDEX {name} ON sessions (dataset_id, {columns})")
    db.execute(
        """
        CREATE TABLE session_tags (
            session_pk INTEGER NOT NULL REFERENCES sessions(id),
            tag TEXT NOT NULL,
            PRIMARY KEY (tag, session_pk)
        ) WITHOUT ROWID"""
    )
    db.execute(
        """
        CREATE TABLE edits (
            id INTEGER PRIMARY KEY,
            session_pk INTEGER NOT NULL REFERENCES sessions(id),
            turn INTEGER,
            field TEXT NOT NULL,
            old TEXT,
            new TEXT,
            author TEXT NOT NULL,
            at TEXT NOT NULL,
            reason TEXT,
            version INTEGER NOT NULL
        )"""
    )
    db.execute("CREATE INDEX idx_edits_session ON edits (session_pk, id)")
    db.execute(
        """
        CREATE TABLE comments (
            id INTEGER PRIMARY KEY,
            session_pk INTEGER NOT NULL REFERENCES sessions(id),
            turn INTEGER,
            author TEXT NOT NULL,
            body TEXT NOT NULL,
            at TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX idx_comments_session ON comments (session_pk, id)")
    db.execute(
        """
        CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            dataset_id INTEGER NOT NULL REFERENCES datasets(id),
            metrics TEXT NOT NULL,
            params TEXT NOT NULL DEFAULT '{}',
            judge_model TEXT,
            judge_base_url TEXT,
            status TEXT NOT NULL DEFAULT 'running',
            started_at TEXT NOT NULL,
            finished_at TEXT,
            n_items INTEGER NOT NULL DEFAULT 0,
            n_done INTEGER NOT NULL DEFAULT 0,
            n_failed INTEGER NOT NULL DEFAULT 0,
            n_not_applicable INTEGER NOT NULL DEFAULT 0
        )"""
    )
    db.execute(
        """
        CREATE TABLE scores (
            id INTEGER PRIMARY KEY,
            run_id INTEGER NOT NULL REFERENCES runs(id),
            session_pk INTEGER NOT NULL REFERENCES sessions(id),
            turn INTEGER NOT NULL DEFAULT -1,
            metric TEXT NOT NULL,
            status TEXT NOT NULL,
            value REAL,
            reason TEXT,
            error TEXT,
            sub TEXT,
            warnings TEXT,
            calls INTEGER,
            cached INTEGER,
            input_tokens INTEGER,
            output_tokens INTEGER,
            cost REAL,
            latency_ms REAL,
            created_at TEXT NOT NULL,
            UNIQUE (run_id, session_pk, turn, metric)
        )"""
    )
    db.execute("CREATE INDEX idx_scores_metric ON scores (run_id, metric, value)")
    db.execute(
        """
        CREATE TABLE judge_cache (
            key TEXT PRIMARY KEY,
            model TEXT NOT NULL,
            request TEXT NOT NULL,
            response TEXT NOT NULL,
            input_tokens INTEGER,
            output_tokens INTEGER,
            created_at TEXT NOT NULL
        )"""
    )
    # Full-text search over search_text. Rows enter the index in bulk, right after each import
    # batch (store/imports.py): an insert trigger would cost 10x as much, row by row.
    db.execute(
        "CREATE VIRTUAL TABLE sessions_fts USING fts5(search_text, content='sessions', content_rowid='id', "
        "tokenize='unicode61 remove_diacritics 2')"
    )
    db.execute(
        """
        CREATE TRIGGER sessions_fts_update AFTER UPDATE OF search_text ON sessions BEGIN
            INSERT INTO sessions_fts (sessions_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text);
            INSERT INTO sessions_fts (rowid, search_text) VALUES (new.id, new.search_text);
        END"""
    )
    db.execute(
        """
        CREATE TRIGGER sessions_fts_delete AFTER DELETE ON sessions BEGIN
            INSERT INTO sessions_fts (sessions_fts, rowid, search_text) VALUES ('delete', old.id, old.search_text);
        END"""
    )


@_migration("0002_review")
def review(db: Database) -> None:
    """What the review app needs: ground truth present, last import, human verdicts, background jobs."""
    db.execute("ALTER TABLE sessions ADD COLUMN has_truth INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE datasets ADD COLUMN last_import_at TEXT")
    db.execute("ALTER TABLE datasets ADD COLUMN last_import_source TEXT")
    rows = db.execute("SELECT id, data, n_edits FROM sessions").fetchall()
    if rows:
        # Sessions stored before this migration: ground truth from the file with the reviewers' edits laid
        # over it, as the store loads them (an edit may have cleared a field, or set only a qa_id).
        from evalcore.schema import Session

        flags, renamed = [], []
        for pk, data, n_edits in rows:
            session = Session.model_validate_json(data)
            if '"turns":' in data:
                # Stored under the old name of turn_truth: stored (and hashed) again as an import now does,
                # so that importing the same file again finds the session unchanged.
                fresh = session.model_dump_json(exclude={"provenance"}, exclude_defaults=True)
                if fresh != data:
                    renamed.append((fresh, hashlib.sha256(fresh.encode()).hexdigest(), pk))
            if n_edits:
                edits = db.execute(
                    "SELECT id, session_pk, turn, field, old, new, author, at, reason, version FROM edits "
                    "WHERE session_pk = ? ORDER BY id",
                    [pk],
                ).fetchall()
                session = _laid_over(session, [(e[2], e[3], None if e[5] is None else json.loads(e[5])) for e in edits])
            flags.append((int(session.has_ground_truth()), pk))
        db.conn.executemany("UPDATE sessions SET has_truth = ? WHERE id = ?", flags)
        db.conn.executemany("UPDATE sessions SET data = ?, content_hash = ? WHERE id = ?", renamed)
        db.execute(
            "UPDATE datasets SET last_import_at = "
            "(SELECT max(created_at) FROM sessions s WHERE s.dataset_id = datasets.id)"
        )
    db.execute("CREATE INDEX idx_sessions_has_truth ON sessions (dataset_id, has_truth)")
    db.execute("CREATE INDEX idx_scores_session ON scores (session_pk, metric, run_id)")
    db.execute(
        """
        CREATE TABLE verdicts (
            id INTEGER PRIMARY KEY,
            session_pk INTEGER NOT NULL REFERENCES sessions(id),
            author TEXT NOT NULL,
            name TEXT NOT NULL,
            value REAL,
            at TEXT NOT NULL,
            UNIQUE (session_pk, author, name)
        )"""
    )
    db.execute(
        """
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY,
            kind TEXT NOT NULL,
            dataset TEXT NOT NULL,
            label TEXT NOT NULL,
            author TEXT,
            status TEXT NOT NULL DEFAULT 'running',
            done INTEGER NOT NULL DEFAULT 0,
            total INTEGER NOT NULL DEFAULT 0,
            unit TEXT NOT NULL DEFAULT 'items',
            result TEXT,
            error TEXT,
            started_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            finished_at TEXT
        )"""
    )
    db.execute("CREATE INDEX idx_jobs_dataset ON jobs (dataset, id)")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


def _laid_over(session: Any, edits: list[tuple[int | None, str, Any]]) -> Any:
    """The session with reviewers' edits ``(turn, field, new value)`` laid over it, as the store did when 0002 was
    written (a frozen copy: what the store does today may change, this migration's result may not)."""
    from evalcore.schema import Session, TurnTruth

    for turn, name, new in edits:
        if name in ("conversation", "status", "tags"):
            continue
        if turn is None:
            setattr(session, name, getattr(Session.model_validate({name: new}), name))
        else:
            while len(session.turn_truth) <= turn:
                session.turn_truth.append(TurnTruth())
            truth = session.turn_truth[turn]
            session.turn_truth[turn] = TurnTruth.model_validate({**truth.model_dump(), name: new})
    while session.turn_truth and session.turn_truth[-1] == TurnTruth():
        session.turn_truth.pop()
    return session


@_migration("0003_run_progress")
def run_progress(db: Database) -> None:
    """Runs: their filters as a column of their own (they rode in ``params["__filters__"]``), when the
    scorer last wrote progress, and why a failed run failed."""
    db.execute("ALTER TABLE runs ADD COLUMN filters TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN updated_at TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN error TEXT")


@_migration("0004_scores_by_value")
def scores_by_value(db: Database) -> None:
    """The scores' index by run and metric now holds all the Dashboard and the score filter read: a
    metric's values by status (its distribution), a page of sessions in the order of a metric, every
    session's value — without touching the table. It replaces the narrower one (no extra index to
    keep up on every score written)."""
    db.execute("DROP INDEX IF EXISTS idx_scores_metric")
    db.execute("CREATE INDEX idx_scores_run ON scores (run_id, metric, turn, status, value, session_pk)")


@_migration("0005_assistant_identity")
def assistant_identity(db: Database) -> None:
    """A session is its ``session_id`` and ``assistant_id`` (``evalcore.identity``): the keys of sessions
    that name an assistant gain it, so that another assistant's session of the same id is a new one."""

    def identity_key(session_id: str, assistant_id: str) -> str:  # (as evalcore.identity said it then: frozen)
        return "ida:" + json.dumps([session_id, assistant_id], ensure_ascii=False, separators=(",", ":"))

    rows = db.execute(
        "SELECT id, session_id, assistant_id FROM sessions "
        "WHERE session_id IS NOT NULL AND assistant_id IS NOT NULL AND assistant_id != ''"
    ).fetchall()
    db.conn.executemany(
        "UPDATE sessions SET key = ? WHERE id = ?", [(identity_key(sid, aid), pk) for pk, sid, aid in rows]
    )


@_migration("0006_scores_warned")
def scores_warned(db: Database) -> None:
    """The session-level scores that carry warnings, by run and metric: a run's summary counts them without
    reading the table (its values come from ``idx_scores_run`` alone). Few scores have warnings, so the index
    is small and costs a score written without one nothing but the check."""
    db.execute("CREATE INDEX idx_scores_warned ON scores (run_id, metric) WHERE warnings IS NOT NULL AND turn = -1")


@_migration("0007_jobs_run_and_cancel")
def jobs_run_and_cancel(db: Database) -> None:
    """A job's run and who asked it to stop are columns of its own row (they were notes in ``meta``, never cleaned
    up), and a job stopped on request is ``cancelled``, not ``failed`` with a telling error."""
    db.execute("ALTER TABLE jobs ADD COLUMN run_id INTEGER")
    db.execute("ALTER TABLE jobs ADD COLUMN cancel_by TEXT")
    notes = db.execute("SELECT key, value FROM meta WHERE key LIKE 'job:%'").fetchall()
    for key, value in notes:
        parts = key.split(":")
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        job_id, what = int(parts[1]), parts[2]
        if what == "run" and value.isdigit():
            db.execute("UPDATE jobs SET run_id = ? WHERE id = ?", [int(value), job_id])
        elif what == "cancel":
            db.execute("UPDATE jobs SET cancel_by = ? WHERE id = ?", [value, job_id])
    db.execute("UPDATE jobs SET status = 'cancelled' WHERE status = 'failed' AND cancel_by IS NOT NULL")
    db.execute("DELETE FROM meta WHERE key LIKE 'job:%'")


@_migration("0008_scores_judged")
def scores_judged(db: Database) -> None:
    """The session-level scores that carry a judge's calls or cost, by run: the Metrics page sums a run's judge
    spend from them without reading the run's other scores (a deterministic run has none)."""
    db.execute(
        "CREATE INDEX idx_scores_judged ON scores (run_id) WHERE turn = -1 AND (calls IS NOT NULL OR cost IS NOT NULL)"
    )


@_migration("0009_sessions_by_format")
def sessions_by_format(db: Database) -> None:
    """Each dataset's sessions by the format they were read as: the Datasets page lists a dataset's formats from
    this index alone, not from every session's row (190 ms to 30 ms for its counts on 100,000 sessions)."""
    db.execute("CREATE INDEX idx_sessions_format ON sessions (dataset_id, format)")


@_migration("0010_scores_not_by_session")
def scores_not_by_session(db: Database) -> None:
    """No index of scores by session: each new run added an entry next to every earlier run's entries of each
    session, rewriting the whole index (pages all over the file) at every run, so scoring got slower with each
    run a dataset had (a 20,000-session run: 1.1 s on a fresh store, 1.2 s after six runs). A session's scores
    are found through its dataset's runs (``(run_id, session_pk)``, the unique index), and deleting a dataset
    deletes its scores by run before its sessions, with SQLite's foreign-key checks of the deleted sessions
    (a scan of the scores for each, without this index) left off."""
    db.execute("DROP INDEX IF EXISTS idx_scores_session")


@_migration("0011_jobs_owner")
def jobs_owner(db: Database) -> None:
    """Which process runs a job (``host:pid:start``): a job whose process on this machine is gone is failed when
    it is read, instead of staying "running" (and polled) until it looks stalled."""
    db.execute("ALTER TABLE jobs ADD COLUMN owner TEXT")


@_migration("0012_users")
def users(db: Database) -> None:
    """Users and their roles (``evalcore.store.access``); every change names the user who made it: edits, comments
    and verdicts carry their author's id beside the name, runs who started them, jobs who asked for them."""
    db.execute(
        """
        CREATE TABLE users (
            id INTEGER PRIMARY KEY,
            iss TEXT,
            sub TEXT,
            email TEXT,
            name TEXT NOT NULL,
            role TEXT NOT NULL,
            disabled INTEGER NOT NULL DEFAULT 0,
            provider TEXT,
            created_at TEXT NOT NULL,
            created_by TEXT,
            last_seen_at TEXT,
            UNIQUE (iss, sub)
        )"""
    )
    db.execute("CREATE UNIQUE INDEX idx_users_name ON users (name)")
    db.execute("CREATE INDEX idx_users_email ON users (email)")
    for table in ("edits", "comments", "verdicts", "jobs"):
        db.execute(f"ALTER TABLE {table} ADD COLUMN author_id INTEGER REFERENCES users(id)")
    db.execute("ALTER TABLE runs ADD COLUMN created_by TEXT")
    db.execute("ALTER TABLE runs ADD COLUMN created_by_id INTEGER REFERENCES users(id)")


#: The meta note a migration that changes what search indexes leaves: the store computes every session's search
#: texts anew when it is next opened (``Sessions.reindex_search``: the reviewers' edits laid over the file's).
SEARCH_REINDEX = "search_reindex"


@_migration("0013_search_system_text")
def search_system_text(db: Database) -> None:
    """Search sees the tools' names and arguments, and the system prompt only when asked: the system prompt and
    context move to a column of their own, ``system_text``, the full-text index's second column."""
    db.execute("ALTER TABLE sessions ADD COLUMN system_text TEXT NOT NULL DEFAULT ''")
    db.execute("DROP TRIGGER sessions_fts_update")
    db.execute("DROP TRIGGER sessions_fts_delete")
    db.execute("DROP TABLE sessions_fts")
    db.execute(
        "CREATE VIRTUAL TABLE sessions_fts USING fts5(search_text, system_text, content='sessions', "
        "content_rowid='id', tokenize='unicode61 remove_diacritics 2')"
    )
    db.execute(
        """
        CREATE TRIGGER sessions_fts_update AFTER UPDATE OF search_text, system_text ON sessions BEGIN
            INSERT INTO sessions_fts (sessions_fts, rowid, search_text, system_text)
                VALUES ('delete', old.id, old.search_text, old.system_text);
            INSERT INTO sessions_fts (rowid, search_text, system_text)
                VALUES (new.id, new.search_text, new.system_text);
        END"""
    )
    db.execute(
        """
        CREATE TRIGGER sessions_fts_delete AFTER DELETE ON sessions BEGIN
            INSERT INTO sessions_fts (sessions_fts, rowid, search_text, system_text)
                VALUES ('delete', old.id, old.search_text, old.system_text);
        END"""
    )
    db.execute("INSERT INTO sessions_fts (sessions_fts) VALUES ('rebuild')")  # searchable at once, as it was
    if db.execute("SELECT 1 FROM sessions LIMIT 1").fetchone():
        db.execute("INSERT INTO meta (key, value) VALUES (?, 'pending') ON CONFLICT (key) DO NOTHING", [SEARCH_REINDEX])


@_migration("0014_labeling")
def labeling(db: Database) -> None:
    """Labeling programmes (``evalcore.store.questions``, ``answers``, ``queues``): a dataset's questions (each
    version kept) and guidelines; each person's answer per session (or turn) and question, a draft until submitted;
    who submitted each session; the adjudicated gold answer; queues with members, items, leases and skips; and the
    ground-truth editors' drafts."""
    for statement in LABELING_TABLES:
        db.execute(statement.replace("BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", "INTEGER PRIMARY KEY"))


#: The meta note ``0015_verdicts_answers`` leaves when reviewers gave verdicts: the store makes every dataset's
#: verdicts questions and answers when it is next opened (``Labels.adopt_pending``).
VERDICTS_ADOPT = "verdicts_adopt"


@_migration("0015_verdicts_answers")
def verdicts_answers(db: Database) -> None:
    """Reviewers' pass / fail and rubric verdicts are answers to the questions they stand for, on every dataset: the
    verdicts given so far move into answers when the store is next opened (the questions are made then)."""
    if db.execute("SELECT 1 FROM verdicts LIMIT 1").fetchone():
        db.execute("INSERT INTO meta (key, value) VALUES (?, 'pending') ON CONFLICT (key) DO NOTHING", [VERDICTS_ADOPT])


@_migration("0016_session_parts")
def session_parts(db: Database) -> None:
    """A large session's page index (``evalcore.store.parts``): what Review reads of it, a page of turns at a time.
    Sessions stored before are read whole, as before (a re-import of their file writes their index)."""
    for statement in SESSION_PARTS_TABLES:
        db.execute(statement)


@_migration("0017_search_by_column")
def search_by_column(db: Database) -> None:
    """The full-text index keeps which column each word is in, not where in it (FTS5's ``detail=column``): a search
    asks for words (``"word"``, ``"pre"*``) in a column, never a phrase of several or words near each other
    (``evalcore.store.search``), so the positions were never read. The index is smaller, quicker to fill, and a
    search of the conversation alone (a column filter) reads less. The same sessions match every query."""
    db.execute("DROP TABLE sessions_fts")  # (the triggers name the table, not its layout: they stay)
    db.execute(
        "CREATE VIRTUAL TABLE sessions_fts USING fts5(search_text, system_text, content='sessions', "
        "content_rowid='id', tokenize='unicode61 remove_diacritics 2', detail=column)"
    )
    db.execute("INSERT INTO sessions_fts (sessions_fts) VALUES ('rebuild')")


#: The table of ``0016_session_parts``, as PostgreSQL's ``0008_session_parts`` says it.
SESSION_PARTS_TABLES: tuple[str, ...] = (
    """CREATE TABLE session_parts (
        session_pk BIGINT NOT NULL REFERENCES sessions(id),
        part BIGINT NOT NULL,
        turn_lo BIGINT NOT NULL,
        turn_hi BIGINT NOT NULL,
        data TEXT NOT NULL,
        truth TEXT NOT NULL,
        PRIMARY KEY (session_pk, part)
    )""",
)


#: The tables of ``0014_labeling``, as PostgreSQL's ``0006_labeling`` says them (SQLite takes ``INTEGER PRIMARY KEY``
#: for the identity columns; every other type means the same to both).
LABELING_TABLES: tuple[str, ...] = (
    "ALTER TABLE datasets ADD COLUMN guidelines TEXT",
    """CREATE TABLE questions (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        dataset_id BIGINT NOT NULL REFERENCES datasets(id),
        name TEXT NOT NULL,
        level TEXT NOT NULL,
        kind TEXT NOT NULL,
        help TEXT NOT NULL DEFAULT '',
        spec TEXT NOT NULL,
        required BIGINT NOT NULL DEFAULT 0,
        position BIGINT NOT NULL,
        version BIGINT NOT NULL DEFAULT 1,
        retired BIGINT NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        created_by_id BIGINT REFERENCES users(id),
        UNIQUE (dataset_id, name)
    )""",
    """CREATE TABLE question_versions (
        question_id BIGINT NOT NULL REFERENCES questions(id),
        version BIGINT NOT NULL,
        definition TEXT NOT NULL,
        at TEXT NOT NULL,
        by_id BIGINT REFERENCES users(id),
        PRIMARY KEY (question_id, version)
    )""",
    """CREATE TABLE answers (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        session_pk BIGINT NOT NULL REFERENCES sessions(id),
        turn BIGINT NOT NULL DEFAULT -1,
        question_id BIGINT NOT NULL REFERENCES questions(id),
        user_id BIGINT NOT NULL REFERENCES users(id),
        author TEXT NOT NULL,
        value TEXT,
        question_version BIGINT,
        submitted_at TEXT,
        draft TEXT,
        draft_version BIGINT,
        updated_at TEXT NOT NULL,
        UNIQUE (session_pk, turn, question_id, user_id)
    )""",
    "CREATE INDEX idx_answers_question ON answers (question_id, session_pk)",
    """CREATE TABLE submissions (
        session_pk BIGINT NOT NULL REFERENCES sessions(id),
        user_id BIGINT NOT NULL REFERENCES users(id),
        author TEXT NOT NULL,
        queue_id BIGINT,
        at TEXT NOT NULL,
        PRIMARY KEY (session_pk, user_id)
    )""",
    """CREATE TABLE gold (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        session_pk BIGINT NOT NULL REFERENCES sessions(id),
        turn BIGINT NOT NULL DEFAULT -1,
        question_id BIGINT NOT NULL REFERENCES questions(id),
        value TEXT NOT NULL,
        question_version BIGINT NOT NULL,
        note TEXT,
        author TEXT NOT NULL,
        author_id BIGINT REFERENCES users(id),
        at TEXT NOT NULL,
        UNIQUE (session_pk, turn, question_id)
    )""",
    "CREATE INDEX idx_gold_question ON gold (question_id, session_pk)",
    """CREATE TABLE queues (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        dataset_id BIGINT NOT NULL REFERENCES datasets(id),
        name TEXT NOT NULL,
        filters TEXT NOT NULL,
        min_reviews BIGINT NOT NULL,
        lease_seconds BIGINT NOT NULL,
        blind BIGINT NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        created_by_id BIGINT REFERENCES users(id),
        UNIQUE (dataset_id, name)
    )""",
    """CREATE TABLE queue_members (
        queue_id BIGINT NOT NULL REFERENCES queues(id),
        user_id BIGINT NOT NULL REFERENCES users(id),
        PRIMARY KEY (queue_id, user_id)
    )""",
    """CREATE TABLE queue_items (
        queue_id BIGINT NOT NULL REFERENCES queues(id),
        session_pk BIGINT NOT NULL REFERENCES sessions(id),
        position BIGINT NOT NULL,
        PRIMARY KEY (queue_id, session_pk)
    )""",
    "CREATE INDEX idx_queue_items_position ON queue_items (queue_id, position)",
    "CREATE INDEX idx_queue_items_session ON queue_items (session_pk)",
    """CREATE TABLE queue_leases (
        queue_id BIGINT NOT NULL REFERENCES queues(id),
        session_pk BIGINT NOT NULL REFERENCES sessions(id),
        user_id BIGINT NOT NULL REFERENCES users(id),
        expires_at TEXT NOT NULL,
        PRIMARY KEY (queue_id, session_pk, user_id)
    )""",
    """CREATE TABLE queue_skips (
        queue_id BIGINT NOT NULL REFERENCES queues(id),
        session_pk BIGINT NOT NULL REFERENCES sessions(id),
        user_id BIGINT NOT NULL REFERENCES users(id),
        at TEXT NOT NULL,
        PRIMARY KEY (queue_id, session_pk, user_id)
    )""",
    """CREATE TABLE drafts (
        session_pk BIGINT NOT NULL REFERENCES sessions(id),
        user_id BIGINT NOT NULL REFERENCES users(id),
        field TEXT NOT NULL,
        turn BIGINT NOT NULL DEFAULT -1,
        value TEXT NOT NULL,
        base_version BIGINT NOT NULL,
        at TEXT NOT NULL,
        PRIMARY KEY (session_pk, user_id, field, turn)
    )""",
)

#: The store's schema version: the number of migrations.
SCHEMA_VERSION = len(MIGRATIONS)

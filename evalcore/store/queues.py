"""Queues of work for labelers (``store.queues``): a saved filter over a dataset, who works it, how many people
must submit each item (its overlap, ``min_reviews``), how long an item handed out stays someone's (its lease), and
whether reviewers see each other's answers (``blind``: they do not; an adjudicator always does).

``next`` hands the person the item to do: the one they hold (a live lease of theirs they have not submitted, while
it still needs submissions), else
the first, in the queue's order, they have neither submitted nor skipped and that has fewer submissions plus
others' live leases than the overlap. It is decided in one transaction that holds the queue's row (PostgreSQL) or
the file's write lock (SQLite), so people asking at once never push an item past its overlap; submitting through the
queue (``answers.submit(pk, queue_id=...)``) takes the same lock. A lease that expires returns the item; a skip is
the person's alone and is not an answer. An item's state is computed when asked, so changing the overlap or the
filter after work started recomputes every item (the filter's sessions are taken again; submissions stay).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from evalcore.errors import NotFoundError, PermissionDeniedError, UsageError
from evalcore.store.queries import SessionFilter
from evalcore.store.records import now

if TYPE_CHECKING:
    from evalcore.store.engine import Conn, Engine
    from evalcore.store.store import Store

__all__ = ["Queue", "QueueProgress", "Queues", "ReviewerProgress", "lock_queue"]

MAX_LEASE = 7 * 24 * 3600
MAX_OVERLAP = 50


@dataclass(frozen=True)
class Queue:
    """A queue of a dataset's sessions (see the module's docstring)."""

    id: int
    dataset_id: int
    name: str
    filters: SessionFilter
    min_reviews: int
    lease_seconds: int
    blind: bool
    members: tuple[str, ...]  # the members' names (none: every reviewer may work it)
    member_ids: tuple[int, ...]


@dataclass(frozen=True)
class ReviewerProgress:
    """One person's work in a queue: items submitted, skipped, and held now."""

    name: str
    submitted: int
    skipped: int
    holding: int


@dataclass(frozen=True)
class QueueProgress:
    """Where a queue stands: its items, those with all the submissions they need, those begun, every submission
    made to its items, and each person's part."""

    items: int
    complete: int
    started: int
    submissions: int
    reviewers: list[ReviewerProgress]

    @property
    def share(self) -> float:
        return self.complete / self.items if self.items else 0.0


_COLUMNS = "id, dataset_id, name, filters, min_reviews, lease_seconds, blind"


def _filters(text: str) -> SessionFilter:
    return SessionFilter(**json.loads(text))


def _queue(conn: Conn, row: Any) -> Queue:
    members = conn.execute(
        "SELECT u.id, u.name FROM queue_members m JOIN users u ON u.id = m.user_id WHERE m.queue_id = ? "
        "ORDER BY u.name",
        [row[0]],
    ).fetchall()
    return Queue(int(row[0]), int(row[1]), row[2], _filters(row[3]), int(row[4]), int(row[5]), bool(row[6]),
                 tuple(m[1] for m in members), tuple(int(m[0]) for m in members))  # fmt: skip


def lock_queue(conn: Conn, engine: Engine, queue_id: int) -> Queue:
    """Queue ``queue_id``, its row held until the transaction ends (Next and submissions through it take turns)."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM queues WHERE id = ?" + engine.for_update, [queue_id]).fetchone()
    if row is None:
        raise NotFoundError(f"no queue #{queue_id}")
    return _queue(conn, row)


def _check(min_reviews: int, lease_seconds: int) -> None:
    if isinstance(min_reviews, bool) or not isinstance(min_reviews, int) or not 1 <= min_reviews <= MAX_OVERLAP:
        raise UsageError(f"a queue's overlap (people per item) is a whole number from 1 to {MAX_OVERLAP}")
    if isinstance(lease_seconds, bool) or not isinstance(lease_seconds, int) or not 1 <= lease_seconds <= MAX_LEASE:
        raise UsageError(f"a queue's lease is a whole number of seconds from 1 to {MAX_LEASE:,} (a week)")


def _later(seconds: int) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat(timespec="microseconds")


class Queues:
    """The queues of one store (``store.queues``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._engine = store._engine

    # -- reading -------------------------------------------------------------------------------------

    def get(self, queue_id: int) -> Queue:
        with self._engine.read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM queues WHERE id = ?", [queue_id]).fetchone()
            if row is None:
                raise NotFoundError(f"no queue #{queue_id}")
            return _queue(conn, row)

    def of(self, dataset: str) -> list[Queue]:
        """The dataset's queues, by name."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM queues WHERE dataset_id = ? ORDER BY name",
                                [dataset_id]).fetchall()  # fmt: skip
            return [_queue(conn, r) for r in rows]

    def find(self, dataset: str, name: str) -> Queue:
        for queue in self.of(dataset):
            if queue.name == name:
                return queue
        raise NotFoundError(f"dataset {dataset!r} has no queue named {name!r}")

    def items(self, queue_id: int) -> list[int]:
        """The queue's sessions, in its order."""
        with self._engine.read() as conn:
            return [int(r[0]) for r in conn.execute(
                "SELECT session_pk FROM queue_items WHERE queue_id = ? ORDER BY position", [queue_id])]  # fmt: skip

    # -- defining ------------------------------------------------------------------------------------

    def create(
        self,
        dataset: str,
        name: str,
        *,
        filters: SessionFilter | None = None,
        min_reviews: int = 1,
        lease_seconds: int = 300,
        blind: bool = False,
        members: list[str] | None = None,
    ) -> Queue:
        """A new queue over the sessions of ``dataset`` that ``filters`` match, worked by ``members`` (names or
        e-mails of users; none: every reviewer)."""
        name = name.strip()
        if not name or len(name) > 100 or "\n" in name:
            raise UsageError(f"a queue's name is one line of 1 to 100 characters (got {name!r})")
        _check(min_reviews, lease_seconds)
        self._store.require("manage_datasets", f"make the queue {name!r}")
        dataset_id = self._store.datasets.id_of(dataset)
        filters = filters or SessionFilter()
        sessions = self._store.sessions.matching(dataset, filters)  # (a bad filter is refused here, before writing)
        member_ids = self._member_ids(members or [])
        stamp = now()
        with self._engine.write() as conn:
            _, author_id = self._store.author(conn)
            if conn.execute("SELECT 1 FROM queues WHERE dataset_id = ? AND name = ?", [dataset_id, name]).fetchone():
                raise UsageError(f"dataset {dataset!r} has a queue named {name!r} already")
            queue_id = int(conn.execute(
                "INSERT INTO queues (dataset_id, name, filters, min_reviews, lease_seconds, blind, created_at, "
                "updated_at, created_by_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                [dataset_id, name, json.dumps(filters.as_dict()), min_reviews, lease_seconds, int(blind), stamp, stamp,
                 author_id]).fetchone()[0])  # fmt: skip
            self._fill(conn, queue_id, sessions)
            conn.executemany("INSERT INTO queue_members (queue_id, user_id) VALUES (?, ?)",
                             [(queue_id, uid) for uid in member_ids])  # fmt: skip
        return self.get(queue_id)

    def update(
        self,
        queue_id: int,
        *,
        filters: SessionFilter | None = None,
        min_reviews: int | None = None,
        lease_seconds: int | None = None,
        blind: bool | None = None,
        members: list[str] | None = None,
    ) -> Queue:
        """Change the queue's settings (those given) while work goes on: a new filter takes its sessions again (in
        their order; submissions, which belong to the sessions, stay), and every item's state follows."""
        old = self.get(queue_id)
        min_reviews = old.min_reviews if min_reviews is None else min_reviews
        lease_seconds = old.lease_seconds if lease_seconds is None else lease_seconds
        _check(min_reviews, lease_seconds)
        self._store.require("manage_datasets", f"change the queue {old.name!r}")
        with self._engine.read() as conn:
            dataset = conn.execute("SELECT name FROM datasets WHERE id = ?", [old.dataset_id]).fetchone()[0]
        sessions = None if filters is None else self._store.sessions.matching(dataset, filters)
        member_ids = None if members is None else self._member_ids(members)
        with self._engine.write() as conn:
            lock_queue(conn, self._engine, queue_id)
            conn.execute(
                "UPDATE queues SET filters = ?, min_reviews = ?, lease_seconds = ?, blind = ?, updated_at = ? "
                "WHERE id = ?",
                [json.dumps((filters or old.filters).as_dict()), min_reviews, lease_seconds,
                 int(old.blind if blind is None else blind), now(), queue_id],
            )  # fmt: skip
            if sessions is not None:
                conn.execute("DELETE FROM queue_items WHERE queue_id = ?", [queue_id])
                self._fill(conn, queue_id, sessions)
            if member_ids is not None:
                conn.execute("DELETE FROM queue_members WHERE queue_id = ?", [queue_id])
                conn.executemany("INSERT INTO queue_members (queue_id, user_id) VALUES (?, ?)",
                                 [(queue_id, uid) for uid in member_ids])  # fmt: skip
        return self.get(queue_id)

    def delete(self, queue_id: int) -> None:
        """Delete the queue (the answers and submissions made through it stay with their sessions)."""
        queue = self.get(queue_id)
        self._store.require("manage_datasets", f"delete the queue {queue.name!r}")
        with self._engine.write() as conn:
            for table in ("queue_items", "queue_leases", "queue_skips", "queue_members"):
                conn.execute(f"DELETE FROM {table} WHERE queue_id = ?", [queue_id])
            conn.execute("UPDATE submissions SET queue_id = NULL WHERE queue_id = ?", [queue_id])
            conn.execute("DELETE FROM queues WHERE id = ?", [queue_id])

    def _fill(self, conn: Conn, queue_id: int, sessions: list[int]) -> None:
        conn.executemany("INSERT INTO queue_items (queue_id, session_pk, position) VALUES (?, ?, ?)",
                         [(queue_id, pk, n) for n, pk in enumerate(sessions, 1)])  # fmt: skip

    def _member_ids(self, members: list[str]) -> list[int]:
        ids: list[int] = []
        for member in members:
            user = self._store.users.find(member.strip())
            if user.id not in ids:
                ids.append(user.id)
        return ids

    # -- working -------------------------------------------------------------------------------------

    def next(self, queue_id: int) -> int | None:
        """The session the store's user should do now in the queue (see the module's docstring), leased to them for
        the queue's lease time; None when nothing is left for them."""
        self._store.require("review", "take an item of a queue")
        with self._engine.write() as conn:
            queue = lock_queue(conn, self._engine, queue_id)
            _, user_id = self._store.author(conn)
            if queue.member_ids and user_id not in queue.member_ids:
                raise PermissionDeniedError(f"you are not a member of the queue {queue.name!r}: ask an admin")
            stamp = now()
            held = conn.execute(
                "SELECT l.session_pk FROM queue_leases l JOIN queue_items qi ON qi.queue_id = l.queue_id "
                "AND qi.session_pk = l.session_pk WHERE l.queue_id = ? AND l.user_id = ? AND l.expires_at > ? "
                "AND NOT EXISTS (SELECT 1 FROM submissions s WHERE s.session_pk = l.session_pk AND s.user_id = ?) "
                "AND (SELECT count(*) FROM submissions s WHERE s.session_pk = l.session_pk) < ? "
                "ORDER BY qi.position LIMIT 1",
                [queue_id, user_id, stamp, user_id, queue.min_reviews],
            ).fetchone()
            if held is not None:
                pk = int(held[0])
            else:
                row = conn.execute(
                    "SELECT qi.session_pk FROM queue_items qi WHERE qi.queue_id = ? "
                    "AND NOT EXISTS (SELECT 1 FROM submissions s WHERE s.session_pk = qi.session_pk AND s.user_id = ?) "
                    "AND NOT EXISTS (SELECT 1 FROM queue_skips k WHERE k.queue_id = qi.queue_id "
                    "AND k.session_pk = qi.session_pk AND k.user_id = ?) "
                    "AND (SELECT count(*) FROM submissions s WHERE s.session_pk = qi.session_pk) "
                    "+ (SELECT count(*) FROM queue_leases l WHERE l.queue_id = qi.queue_id "
                    "AND l.session_pk = qi.session_pk AND l.user_id <> ? AND l.expires_at > ?) < ? "
                    "ORDER BY qi.position LIMIT 1",
                    [queue_id, user_id, user_id, user_id, stamp, queue.min_reviews],
                ).fetchone()
                if row is None:
                    return None
                pk = int(row[0])
            conn.execute(
                "INSERT INTO queue_leases (queue_id, session_pk, user_id, expires_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (queue_id, session_pk, user_id) DO UPDATE SET expires_at = excluded.expires_at",
                [queue_id, pk, user_id, _later(queue.lease_seconds)],
            )
            return pk

    def skip(self, queue_id: int, pk: int) -> None:
        """The store's user passes on session ``pk`` of the queue: it is not handed to them again (and is not an
        answer); their lease on it ends."""
        self._store.require("review", "skip an item of a queue")
        with self._engine.write() as conn:
            lock_queue(conn, self._engine, queue_id)
            _, user_id = self._store.author(conn)
            if not conn.execute("SELECT 1 FROM queue_items WHERE queue_id = ? AND session_pk = ?",
                                [queue_id, pk]).fetchone():  # fmt: skip
                raise NotFoundError(f"session #{pk} is not an item of queue #{queue_id}")
            conn.execute("DELETE FROM queue_leases WHERE queue_id = ? AND session_pk = ? AND user_id = ?",
                         [queue_id, pk, user_id])  # fmt: skip
            conn.execute(
                "INSERT INTO queue_skips (queue_id, session_pk, user_id, at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (queue_id, session_pk, user_id) DO UPDATE SET at = excluded.at",
                [queue_id, pk, user_id, now()],
            )

    def release(self, queue_id: int, pk: int) -> None:
        """The store's user gives session ``pk`` back to the queue (it may be handed to them again later)."""
        user_id = self._store.user.id
        with self._engine.write() as conn:
            conn.execute("DELETE FROM queue_leases WHERE queue_id = ? AND session_pk = ? AND user_id = ?",
                         [queue_id, pk, user_id])  # fmt: skip

    # -- where it stands -----------------------------------------------------------------------------

    def progress(self, queue_id: int) -> QueueProgress:
        """Where the queue stands (items with as many submissions as the overlap asks are complete)."""
        queue = self.get(queue_id)
        stamp = now()
        with self._engine.read() as conn:
            items, complete, started, submissions = conn.execute(
                "SELECT count(*), coalesce(sum(CASE WHEN n >= ? THEN 1 ELSE 0 END), 0), "
                "coalesce(sum(CASE WHEN n > 0 THEN 1 ELSE 0 END), 0), coalesce(sum(n), 0) FROM "
                "(SELECT (SELECT count(*) FROM submissions s WHERE s.session_pk = qi.session_pk) AS n "
                "FROM queue_items qi WHERE qi.queue_id = ?) AS counted",
                [queue.min_reviews, queue_id],
            ).fetchone()
            people: dict[str, list[int]] = {}
            for sql, at in (
                ("SELECT s.author, count(*) FROM submissions s JOIN queue_items qi ON qi.session_pk = s.session_pk "
                 "WHERE qi.queue_id = ? GROUP BY s.author", 0),
                ("SELECT u.name, count(*) FROM queue_skips k JOIN users u ON u.id = k.user_id WHERE k.queue_id = ? "
                 "GROUP BY u.name", 1),
            ):  # fmt: skip
                for name, n in conn.execute(sql, [queue_id]):
                    people.setdefault(name, [0, 0, 0])[at] = int(n)
            for name, n in conn.execute(
                "SELECT u.name, count(*) FROM queue_leases l JOIN users u ON u.id = l.user_id WHERE l.queue_id = ? "
                "AND l.expires_at > ? GROUP BY u.name",
                [queue_id, stamp],
            ):
                people.setdefault(name, [0, 0, 0])[2] = int(n)
        reviewers = [ReviewerProgress(name, *counts) for name, counts in sorted(people.items())]
        return QueueProgress(int(items), int(complete), int(started), int(submissions), reviewers)

    def place(self, queue_id: int, pk: int) -> tuple[int, int, int] | None:
        """Where session ``pk`` stands in the queue for the store's user: (its place, from 1; the queue's items;
        how many of them the user has submitted); None when it is not an item of the queue."""
        user_id = self._store.user.id
        with self._engine.read() as conn:
            row = conn.execute("SELECT position FROM queue_items WHERE queue_id = ? AND session_pk = ?",
                               [queue_id, pk]).fetchone()  # fmt: skip
            if row is None:
                return None
            before, total = conn.execute(
                "SELECT sum(CASE WHEN position <= ? THEN 1 ELSE 0 END), count(*) FROM queue_items WHERE queue_id = ?",
                [row[0], queue_id],
            ).fetchone()
            done = conn.execute(
                "SELECT count(*) FROM submissions s JOIN queue_items qi ON qi.session_pk = s.session_pk "
                "WHERE qi.queue_id = ? AND s.user_id = ?",
                [queue_id, user_id],
            ).fetchone()[0]
        return int(before), int(total), int(done)

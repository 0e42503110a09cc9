"""What labelers answer (``store.answers``): one answer per (session, turn or the session itself, question, person),
a draft while they work and submitted when they are done, and the gold answer an adjudicator settles on.

A draft is kept as the person types and given back when they return; it never replaces what they submitted until
they submit again (``Answer.value`` is what they submitted, ``Answer.draft`` what they are writing now). Submitting
a session submits every draft of theirs on it at once — refused, with nothing changed, while a required question
is unanswered — and records that they submitted it (``submissions``: what a queue's overlap counts). Submitted
through a queue, it is refused when enough others have submitted the session already (their work stays a draft).

Gold is one answer per (session, turn, question), written by an adjudicator (the ``adjudicate`` action) with who and
when: what agreement with the judges and every export take as the truth.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalcore.errors import NotFoundError, OverlapReachedError, UsageError
from evalcore.schema.labels import Labels
from evalcore.store.questions import Question, check_value, is_empty, load_question
from evalcore.store.records import now

if TYPE_CHECKING:
    from evalcore.store.engine import Conn
    from evalcore.store.store import Store

__all__ = ["SESSION", "Answer", "Answers", "Gold", "Submission"]

#: The turn of an answer to a session-level question.
SESSION = -1


@dataclass(frozen=True)
class Answer:
    """One person's answer to one question on one session (``turn`` None) or one of its turns."""

    session_pk: int
    turn: int | None
    question_id: int
    user_id: int
    author: str
    value: Any  # what they submitted (None: not yet)
    question_version: int | None  # the version of the question ``value`` answered
    submitted_at: str | None
    draft: Any  # what they are writing now (None: nothing beyond what they submitted)
    draft_version: int | None
    updated_at: str

    @property
    def submitted(self) -> bool:
        return self.submitted_at is not None

    @property
    def current(self) -> Any:
        """What the person sees in the form: their draft, else what they submitted."""
        return self.draft if self.draft is not None else self.value


@dataclass(frozen=True)
class Gold:
    """The settled answer to one question on one session (``turn`` None) or turn."""

    session_pk: int
    turn: int | None
    question_id: int
    value: Any
    question_version: int
    note: str | None
    author: str
    at: str


@dataclass(frozen=True)
class Submission:
    """Who submitted a session, when, and through which queue (None: outside any)."""

    session_pk: int
    user_id: int
    author: str
    queue_id: int | None
    at: str


def _turn(turn: int | None) -> int:
    if turn is None:
        return SESSION
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
        raise UsageError(f"a turn is a whole number from 0 (got {turn!r})")
    return turn


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


_ANSWER = ("session_pk, turn, question_id, user_id, author, value, question_version, submitted_at, draft, "
           "draft_version, updated_at")  # fmt: skip


def _qualified(columns: str, alias: str) -> str:
    """``columns`` (a comma-separated list) as columns of the table called ``alias`` in a join."""
    return ", ".join(f"{alias}.{c.strip()}" for c in columns.split(","))


def _answer(row: Any) -> Answer:
    return Answer(int(row[0]), None if row[1] == SESSION else int(row[1]), int(row[2]), int(row[3]), row[4],
                  _loads(row[5]), row[6], row[7], _loads(row[8]), row[9], row[10])  # fmt: skip


_GOLD = "session_pk, turn, question_id, value, question_version, note, author, at"


def _gold(row: Any) -> Gold:
    return Gold(int(row[0]), None if row[1] == SESSION else int(row[1]), int(row[2]), json.loads(row[3]),
                int(row[4]), row[5], row[6], row[7])  # fmt: skip


class Answers:
    """The answers, submissions and gold of one store (``store.answers``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._engine = store._engine

    def _session(self, conn: Conn, pk: int) -> tuple[int, int]:
        row = conn.execute("SELECT dataset_id, n_turns FROM sessions WHERE id = ?", [pk]).fetchone()
        if row is None:
            raise NotFoundError(f"no session #{pk}")
        return int(row[0]), int(row[1])

    def _question_for(self, conn: Conn, pk: int, question_id: int, turn: int) -> Question:
        dataset_id, n_turns = self._session(conn, pk)
        question = load_question(conn, question_id)
        if question.dataset_id != dataset_id:
            raise UsageError(f"question {question.name!r} is not a question of this session's dataset")
        if question.retired:
            raise UsageError(f"question {question.name!r} is retired: it takes no more answers")
        if (question.level == "turn") != (turn != SESSION):
            raise UsageError(f"{question.name}: a question of each {question.level} is answered "
                             + ("on a turn" if question.level == "turn" else "on the session"))  # fmt: skip
        if turn != SESSION and turn >= n_turns:
            raise UsageError(f"{question.name}: the session has {n_turns} turns (no turn {turn})")
        return question

    # -- a person's work -----------------------------------------------------------------------------

    def save_draft(self, pk: int, question_id: int, value: Any, *, turn: int | None = None) -> None:
        """Keep ``value`` as the store's user's draft answer (``None``, blank text or no label: their draft is
        dropped, and what they submitted stays). A value the question cannot take is refused as it is typed."""
        where = _turn(turn)
        self._store.require("review", "answer a question")
        with self._engine.write() as conn:
            question = self._question_for(conn, pk, question_id, where)
            author, user_id = self._store.author(conn)
            if is_empty(value):
                conn.execute(
                    "UPDATE answers SET draft = NULL, draft_version = NULL, updated_at = ? "
                    "WHERE session_pk = ? AND turn = ? AND question_id = ? AND user_id = ?",
                    [now(), pk, where, question_id, user_id],
                )
                conn.execute(
                    "DELETE FROM answers WHERE session_pk = ? AND turn = ? AND question_id = ? AND user_id = ? "
                    "AND value IS NULL",
                    [pk, where, question_id, user_id],
                )
                return
            checked = check_value(question, value)
            conn.execute(
                "INSERT INTO answers (session_pk, turn, question_id, user_id, author, draft, draft_version, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_pk, turn, question_id, user_id) "
                "DO UPDATE SET draft = excluded.draft, draft_version = excluded.draft_version, "
                "author = excluded.author, updated_at = excluded.updated_at",
                [pk, where, question_id, user_id, author, json.dumps(checked), question.version, now()],
            )

    def submit(self, pk: int, *, queue_id: int | None = None) -> Submission:
        """Submit the store's user's answers on session ``pk``: each draft becomes what they submitted, and the
        session counts as submitted by them. Refused (nothing changed) while a required question is unanswered,
        and — through queue ``queue_id`` — when enough others have submitted it already."""
        self._store.require("review", "submit answers")
        stamp = now()
        with self._engine.write() as conn:
            author, user_id = self._store.author(conn)
            if queue_id is not None:
                from evalcore.store.queues import lock_queue

                queue = lock_queue(conn, self._engine, queue_id)
                others = conn.execute(
                    "SELECT count(*) FROM submissions WHERE session_pk = ? AND user_id <> ?", [pk, user_id]
                ).fetchone()[0]
                if others >= queue.min_reviews:
                    raise OverlapReachedError(
                        f"{others} people have submitted this session already, as many as queue {queue.name!r} "
                        "asks for: your answers are kept as drafts"
                    )
            dataset_id, n_turns = self._session(conn, pk)
            conn.execute(
                "UPDATE answers SET value = draft, question_version = draft_version, submitted_at = ?, draft = NULL, "
                "draft_version = NULL, updated_at = ? WHERE session_pk = ? AND user_id = ? AND draft IS NOT NULL",
                [stamp, stamp, pk, user_id],
            )
            missing = self._missing(conn, pk, dataset_id, n_turns, user_id)
            if missing:
                raise UsageError("answer the required question" + ("s " if len(missing) > 1 else " ")
                                 + ", ".join(missing) + " before submitting")  # fmt: skip
            conn.execute(
                "INSERT INTO submissions (session_pk, user_id, author, queue_id, at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (session_pk, user_id) DO UPDATE SET at = excluded.at, author = excluded.author, "
                "queue_id = coalesce(excluded.queue_id, submissions.queue_id)",
                [pk, user_id, author, queue_id, stamp],
            )
            conn.execute("DELETE FROM queue_leases WHERE session_pk = ? AND user_id = ?", [pk, user_id])
        return Submission(pk, user_id, author, queue_id, stamp)

    def _missing(self, conn: Conn, pk: int, dataset_id: int, n_turns: int, user_id: int) -> list[str]:
        """The required questions the user has not answered on the session (a turn's: on every turn), named."""
        required = conn.execute(
            "SELECT id, name, level FROM questions WHERE dataset_id = ? AND required = 1 AND retired = 0 "
            "ORDER BY position, id",
            [dataset_id],
        ).fetchall()
        if not required:
            return []
        answered: dict[int, int] = {}
        for question_id, count in conn.execute(
            "SELECT question_id, count(*) FROM answers WHERE session_pk = ? AND user_id = ? AND value IS NOT NULL "
            "GROUP BY question_id",
            [pk, user_id],
        ):
            answered[int(question_id)] = int(count)
        return [repr(name) for qid, name, level in required
                if answered.get(int(qid), 0) < (n_turns if level == "turn" else 1)]  # fmt: skip

    def mine(self, pk: int) -> list[Answer]:
        """The store's user's answers on session ``pk`` (drafts included): what their form shows."""
        user_id = self._store.user.id
        with self._engine.read() as conn:
            rows = conn.execute(
                f"SELECT {_ANSWER} FROM answers WHERE session_pk = ? AND user_id = ? ORDER BY question_id, turn",
                [pk, user_id],
            ).fetchall()
        return [_answer(r) for r in rows]

    # -- everyone's ----------------------------------------------------------------------------------

    def of_session(self, pk: int) -> list[Answer]:
        """Every submitted answer on session ``pk`` (drafts are their writers' own), by question, turn and person."""
        with self._engine.read() as conn:
            rows = conn.execute(
                f"SELECT {_ANSWER} FROM answers WHERE session_pk = ? AND value IS NOT NULL "
                "ORDER BY question_id, turn, author",
                [pk],
            ).fetchall()
        return [_answer(r) for r in rows]

    def of_dataset(self, dataset: str) -> list[Answer]:
        """Every submitted answer on the dataset's sessions, by session, question, turn and person."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            rows = conn.execute(
                f"SELECT {_qualified(_ANSWER, 'a')} FROM answers a "
                "JOIN sessions s ON s.id = a.session_pk WHERE s.dataset_id = ? AND a.value IS NOT NULL "
                "ORDER BY a.session_pk, a.question_id, a.turn, a.author",
                [dataset_id],
            ).fetchall()
        return [_answer(r) for r in rows]

    def submissions(self, pk: int) -> list[Submission]:
        """Who submitted session ``pk``, first first."""
        with self._engine.read() as conn:
            rows = conn.execute(
                "SELECT session_pk, user_id, author, queue_id, at FROM submissions WHERE session_pk = ? ORDER BY at",
                [pk],
            ).fetchall()
        return [Submission(int(r[0]), int(r[1]), r[2], r[3], r[4]) for r in rows]

    # -- gold ----------------------------------------------------------------------------------------

    def set_gold(
        self, pk: int, question_id: int, value: Any, *, turn: int | None = None, note: str | None = None
    ) -> None:
        """Settle the answer to the question on session ``pk`` (or its ``turn``): ``value`` (one of the submitted
        answers, or another the adjudicator writes); ``None`` unsettles it."""
        where = _turn(turn)
        self._store.require("adjudicate", "settle an answer")
        with self._engine.write() as conn:
            question = self._question_for(conn, pk, question_id, where)
            author, user_id = self._store.author(conn)
            if is_empty(value):
                conn.execute("DELETE FROM gold WHERE session_pk = ? AND turn = ? AND question_id = ?",
                             [pk, where, question_id])  # fmt: skip
                return
            checked = check_value(question, value)
            conn.execute(
                "INSERT INTO gold (session_pk, turn, question_id, value, question_version, note, author, author_id, "
                "at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_pk, turn, question_id) DO UPDATE SET "
                "value = excluded.value, question_version = excluded.question_version, note = excluded.note, "
                "author = excluded.author, author_id = excluded.author_id, at = excluded.at",
                [pk, where, question_id, json.dumps(checked), question.version, (note or "").strip() or None, author,
                 user_id, now()],
            )  # fmt: skip

    def gold(self, pk: int) -> list[Gold]:
        """The settled answers of session ``pk``."""
        with self._engine.read() as conn:
            rows = conn.execute(
                f"SELECT {_GOLD} FROM gold WHERE session_pk = ? ORDER BY question_id, turn", [pk]
            ).fetchall()
        return [_gold(r) for r in rows]

    def gold_of_dataset(self, dataset: str) -> list[Gold]:
        """Every settled answer on the dataset's sessions, by session, question and turn."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            rows = conn.execute(
                f"SELECT {_qualified(_GOLD, 'g')} FROM gold g "
                "JOIN sessions s ON s.id = g.session_pk WHERE s.dataset_id = ? ORDER BY g.session_pk, g.question_id, "
                "g.turn",
                [dataset_id],
            ).fetchall()
        return [_gold(r) for r in rows]

    # -- for an export -------------------------------------------------------------------------------

    def has_labels(self, dataset: str) -> bool:
        """Whether anyone submitted an answer, an adjudicator settled one, or a reviewer commented on the dataset's
        sessions: what the evalcore format carries with them (``carried``)."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            return any(
                conn.execute(
                    f"SELECT 1 FROM {table} x JOIN sessions s ON s.id = x.session_pk WHERE s.dataset_id = ? {where} "
                    "LIMIT 1",
                    [dataset_id],
                ).fetchone()
                for table, where in (("answers", "AND x.value IS NOT NULL"), ("gold", ""), ("comments", ""))
            )

    def carried(self, pks: list[int]) -> dict[int, Labels]:
        """The labels of the sessions ``pks`` that have any, as the evalcore format carries them with each
        (``evalcore.store.carried``)."""
        from evalcore.store.carried import read_carried

        with self._engine.read() as conn:
            return read_carried(conn, pks)

    def label_rows(self, dataset: str) -> Iterator[tuple[Any, ...]]:
        """Every submitted answer, then the gold, of the dataset's sessions as rows ``(session_id, assistant_id, turn,
        question, value, user, status, at, question_version)`` — ``status`` ``submitted`` or ``gold``, ``turn``
        None for a session's question — by session (in import order), question (in its order), turn, status and
        person."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            rows = conn.execute(
                "SELECT coalesce(s.session_id, s.key), s.assistant_id, x.turn, q.name, x.value, x.author, x.status, "
                "x.at, x.version FROM (SELECT session_pk, turn, question_id, value, author, 'submitted' AS status, "
                "submitted_at AS at, question_version AS version FROM answers WHERE value IS NOT NULL "
                "UNION ALL SELECT session_pk, turn, question_id, value, author, 'gold', at, question_version "
                "FROM gold) AS x JOIN sessions s ON s.id = x.session_pk JOIN questions q ON q.id = x.question_id "
                "WHERE s.dataset_id = ? ORDER BY s.position, s.id, q.position, q.id, x.turn, x.status DESC, x.author",
                [dataset_id],
            ).fetchall()
        for ref, assistant, turn, question, value, author, status, at, version in rows:
            yield (ref, assistant, None if turn == SESSION else int(turn), question, json.loads(value), author, status,
                   at, int(version))  # fmt: skip

"""What reviewers say about a session besides its ground truth (``store.labels``): their verdicts — pass / fail,
and 1-5 per rubric, kept beside the judges' scores — and their comments.

Each reviewer has one current verdict per name (``label``, or ``rubric:NAME``); giving it again replaces it,
and clearing it deletes it. The Dashboard compares them with the judges' scores.

A verdict is an answer to the question it stands for in the dataset's labeling programme: a "Pass / fail" choice,
and a 1-5 rating per rubric reviewers scored, each made when first needed and marked with the verdict it stands for
(``questions.VERDICT_KEY``). ``set_verdict`` submits the reviewer's answer, and what the Dashboard compares with the
judges (``verdict_values``) is each question's gold where an adjudicator settled it, else everyone's submitted
answers. Verdicts given before this (the ``verdicts`` table) move into answers of their reviewers when the store is
next opened after its upgrade (``adopt_pending``; ``adopt`` does one dataset): a name without a user of the store
gets a disabled one of its own, so that the answer keeps who gave it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from evalcore.errors import UsageError
from evalcore.store.answers import SESSION
from evalcore.store.migrations import VERDICTS_ADOPT
from evalcore.store.questions import MAX_NAME, VERDICT_KEY, QuestionDef, insert_question
from evalcore.store.records import now
from evalcore.store.users import named_user

if TYPE_CHECKING:
    from evalcore.store.engine import Conn
    from evalcore.store.store import Store

__all__ = ["LABEL", "Comment", "Labels", "Verdict", "rubric_verdict"]

#: The name of the session-level verdict: 1.0 pass, 0.0 fail.
LABEL = "label"


def rubric_verdict(rubric: str) -> str:
    """The verdict name of a 1-5 score for ``rubric``."""
    return f"rubric:{rubric}"


@dataclass(frozen=True)
class Verdict:
    """One reviewer's current verdict on one session."""

    session_pk: int
    author: str
    name: str
    value: float
    at: str


@dataclass(frozen=True)
class Comment:
    """A reviewer's comment on a session (``turn`` None) or one of its turns."""

    id: int
    turn: int | None
    author: str
    body: str
    at: str


#: The issuer of the users made for verdicts given under a name before the store had users (``Labels.adopt``).
_LEGACY = "evalcore:verdicts"


def _as_answer(name: str, value: float) -> Any:
    """A verdict's value as its question's answer: ``pass`` / ``fail``, or the 1-5 score as a whole number."""
    return ("pass" if value >= 0.5 else "fail") if name == LABEL else int(value)


def _as_verdict(name: str, answer: Any) -> float:
    """An answer to a verdict's question as the verdict's value: 1.0 / 0.0 for pass / fail, the score as a float."""
    if name == LABEL:
        return 1.0 if answer == "pass" else 0.0
    return float(answer)


def _check(name: str, value: float | None) -> None:
    if name == LABEL:
        if value not in (None, 0.0, 1.0):
            raise UsageError("a pass / fail label is 1 (pass) or 0 (fail)")
    elif name.startswith("rubric:") and len(name) > len("rubric:"):
        if value is not None and (not math.isfinite(value) or value != int(value) or not 1 <= value <= 5):
            raise UsageError(f"{name[7:]}: a rubric score is a whole number from 1 to 5")
    else:
        raise UsageError(f"unknown verdict {name!r}: use {LABEL!r} or 'rubric:NAME'")


class Labels:
    """Verdicts and comments of one store (``store.labels``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._engine = store._engine

    # -- verdicts -----------------------------------------------------------------------------------

    def set_verdict(self, pk: int, name: str, value: float | None) -> None:
        """Give (or with ``None`` withdraw) the store's user's verdict ``name`` on session ``pk``."""
        _check(name, value)
        self._store.require("review", "give a verdict")
        self._store.sessions.get(pk)  # raises when missing
        with self._engine.write() as conn:
            author, author_id = self._store.author(conn)
            dataset_id = int(conn.execute("SELECT dataset_id FROM sessions WHERE id = ?", [pk]).fetchone()[0])
            if has_verdicts(conn, dataset_id):  # given before verdicts were answers (a store not yet reopened)
                adopt_verdicts(conn, dataset_id, author_id)
            question_id = verdict_question(conn, dataset_id, name, author_id)
            if value is None:
                conn.execute(
                    "DELETE FROM answers WHERE session_pk = ? AND turn = ? AND question_id = ? AND user_id = ?",
                    [pk, SESSION, question_id, author_id],
                )
                return
            stamp = now()
            conn.execute(
                "INSERT INTO answers (session_pk, turn, question_id, user_id, author, value, question_version, "
                "submitted_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, "
                "(SELECT version FROM questions WHERE id = ?), ?, ?) "
                "ON CONFLICT (session_pk, turn, question_id, user_id) DO UPDATE SET value = excluded.value, "
                "question_version = excluded.question_version, submitted_at = excluded.submitted_at, "
                "draft = NULL, draft_version = NULL, updated_at = excluded.updated_at",
                [pk, SESSION, question_id, author_id, author, json.dumps(_as_answer(name, value)), question_id,
                 stamp, stamp],
            )  # fmt: skip

    def verdicts(self, pk: int) -> list[Verdict]:
        """Every reviewer's verdicts on session ``pk`` (those given as answers too, the gold alone where settled)."""
        with self._engine.read() as conn:
            rows = conn.execute(
                "SELECT session_pk, author, name, value, at FROM verdicts WHERE session_pk = ? ORDER BY name, author",
                [pk],
            ).fetchall()
            answered = self._answered(conn, "a.session_pk = ?", [pk])
        found = [Verdict(*r) for r in rows] + [Verdict(r[0], r[4], r[2], r[3], r[5]) for r in answered]
        return sorted(found, key=lambda v: (v.name, v.author))

    def human_verdicts(self, dataset: str) -> list[Verdict]:
        """Every verdict given on the sessions of ``dataset`` (as answers too, the gold alone where settled)."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            rows = conn.execute(
                "SELECT v.session_pk, v.author, v.name, v.value, v.at FROM verdicts v "
                "JOIN sessions s ON s.id = v.session_pk WHERE s.dataset_id = ? ORDER BY v.session_pk, v.name, v.author",
                [dataset_id],
            ).fetchall()
            answered = self._answered(conn, "s.dataset_id = ?", [dataset_id])
        found = [Verdict(*r) for r in rows] + [Verdict(r[0], r[4], r[2], r[3], r[5]) for r in answered]
        return sorted(found, key=lambda v: (v.session_pk, v.name, v.author))

    def verdict_values(self, dataset: str) -> list[tuple[int, str, str, float]]:
        """``(session pk, its ref, verdict name, value)`` of every pass/fail and rubric verdict given on the
        sessions of ``dataset``, by session (a ref is the session's ``session_id``, else its key)."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            rows = conn.execute(
                "SELECT v.session_pk, coalesce(s.session_id, s.key), v.name, v.value FROM verdicts v "
                "JOIN sessions s ON s.id = v.session_pk WHERE s.dataset_id = ? AND v.value IS NOT NULL "
                "AND (v.name = ? OR v.name LIKE 'rubric:_%') ORDER BY v.session_pk",
                [dataset_id, LABEL],
            ).fetchall()
            answered = self._answered(conn, "s.dataset_id = ?", [dataset_id])
        found = [tuple(r) for r in rows] + [(r[0], r[1], r[2], r[3]) for r in answered]
        return sorted(found, key=lambda r: r[0])

    def mark(self, dataset: str) -> tuple[Any, ...]:
        """What changes when a verdict on ``dataset`` is given or withdrawn, or a run made: a cache key."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            verdicts = conn.execute(
                "SELECT count(*), max(v.id), max(v.at) FROM verdicts v JOIN sessions s ON s.id = v.session_pk "
                "WHERE s.dataset_id = ?",
                [dataset_id],
            ).fetchone()
            answers = conn.execute(
                "SELECT count(*), max(a.updated_at), (SELECT count(*) FROM gold g JOIN sessions t ON t.id = "
                "g.session_pk WHERE t.dataset_id = ?), (SELECT max(g.at) FROM gold g JOIN sessions t ON t.id = "
                "g.session_pk WHERE t.dataset_id = ?) FROM answers a JOIN sessions s ON s.id = a.session_pk "
                "WHERE s.dataset_id = ?",
                [dataset_id, dataset_id, dataset_id],
            ).fetchone()
        return (*verdicts, *answers, *self._store.runs.mark(dataset_id))

    # -- verdicts as questions -----------------------------------------------------------------------

    def adopt_pending(self) -> int:
        """Make every dataset's verdicts questions and answers (``adopt``) when the migration that made verdicts
        answers left its note (``migrations.VERDICTS_ADOPT``), in one transaction; how many verdicts moved."""
        note = "SELECT 1 FROM meta WHERE key = ?"
        with self._engine.read() as conn:
            if conn.execute(note, [VERDICTS_ADOPT]).fetchone() is None:
                return 0
        moved = 0
        with self._engine.write() as conn:
            if conn.execute(note, [VERDICTS_ADOPT]).fetchone() is None:  # (another process did it meanwhile)
                return 0
            datasets = conn.execute(
                "SELECT DISTINCT s.dataset_id FROM verdicts v JOIN sessions s ON s.id = v.session_pk ORDER BY 1"
            ).fetchall()
            for (dataset_id,) in datasets:
                moved += adopt_verdicts(conn, int(dataset_id), None)
            conn.execute("DELETE FROM meta WHERE key = ?", [VERDICTS_ADOPT])
        return moved

    def adopt(self, dataset: str) -> int:
        """Make the dataset's verdicts questions of its labeling programme and move every verdict given so far into
        an answer (see the module's docstring); returns how many moved. Asking again changes nothing."""
        self._store.require("manage_datasets", f"make the verdicts of {dataset!r} questions")
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.write() as conn:
            _, me = self._store.author(conn)
            return adopt_verdicts(conn, dataset_id, me)

    def _answered(self, conn: Conn, where: str, args: list[Any]) -> list[tuple[Any, ...]]:
        """Verdicts given as answers: (session pk, ref, verdict name, value, author, at) — the gold alone where a
        question is settled."""
        answered = conn.execute(
            "SELECT a.session_pk, coalesce(s.session_id, s.key), a.question_id, q.spec, a.value, a.author, "
            "a.submitted_at, g.value, g.author, g.at FROM answers a JOIN questions q ON q.id = a.question_id "
            "JOIN sessions s ON s.id = a.session_pk LEFT JOIN gold g ON g.session_pk = a.session_pk "
            "AND g.turn = a.turn AND g.question_id = a.question_id "
            f"WHERE a.value IS NOT NULL AND a.turn = -1 AND {where} "
            "ORDER BY a.session_pk, a.author",
            args,
        ).fetchall()
        names: dict[int, Any] = {}  # question -> the verdict it stands for (its spec read once)
        out, settled = [], set()
        for pk, ref, question_id, spec, value, author, at, gold, gold_by, gold_at in answered:
            if question_id not in names:
                names[question_id] = json.loads(spec).get(VERDICT_KEY)
            name = names[question_id]
            if not isinstance(name, str):
                continue
            if gold is None:
                out.append((pk, ref, name, _as_verdict(name, json.loads(value)), author, at))
            elif (pk, name) not in settled:
                settled.add((pk, name))
                out.append((pk, ref, name, _as_verdict(name, json.loads(gold)), f"{gold_by} (gold)", gold_at))
        return out

    # -- comments -----------------------------------------------------------------------------------

    def add_comment(self, pk: int, body: str, *, turn: int | None = None) -> int:
        """Add the store's user's comment to the session (or one of its turns); returns its id."""
        if not body.strip():
            raise UsageError("a comment needs some text")
        self._store.require("review", "comment")
        self._store.sessions.get(pk)
        with self._engine.write() as conn:
            author, author_id = self._store.author(conn)
            return int(
                conn.execute(
                    "INSERT INTO comments (session_pk, turn, author, body, at, author_id) VALUES (?, ?, ?, ?, ?, ?) "
                    "RETURNING id",
                    [pk, turn, author, body, now(), author_id],
                ).fetchone()[0]
            )

    def comments(self, pk: int) -> list[Comment]:
        """The session's comments, oldest first."""
        with self._engine.read() as conn:
            rows = conn.execute(
                "SELECT id, turn, author, body, at FROM comments WHERE session_pk = ? ORDER BY id", [pk]
            ).fetchall()
        return [Comment(*r) for r in rows]


def linked_questions(conn: Conn, dataset_id: int) -> dict[str, int]:
    """The dataset's questions that stand for verdicts: verdict name -> question id."""
    linked: dict[str, int] = {}
    for question_id, spec in conn.execute("SELECT id, spec FROM questions WHERE dataset_id = ?", [dataset_id]):
        name = json.loads(spec).get(VERDICT_KEY)
        if isinstance(name, str):
            linked[name] = int(question_id)
    return linked


def verdict_question(conn: Conn, dataset_id: int, name: str, author_id: int | None) -> int:
    """The question standing for verdict ``name`` in the dataset, made when there is none yet."""
    linked = linked_questions(conn, dataset_id)
    if name in linked:
        return linked[name]
    taken = {r[0] for r in conn.execute("SELECT name FROM questions WHERE dataset_id = ?", [dataset_id])}
    if name == LABEL:
        title, question = "Pass / fail", QuestionDef("", "choice", options=("pass", "fail"),
                                                     help="Does the assistant pass?")  # fmt: skip
    else:
        title, question = name[len("rubric:") :], QuestionDef("", "rating", help="A 1-5 score of the rubric")
    return insert_question(conn, dataset_id, replace(question, name=_free_title(title, taken)), author_id,
                           verdict=name).id  # fmt: skip


def _free_title(title: str, taken: set[str]) -> str:
    """A question's name for a verdict called ``title`` (a rubric's name may be any text): on one line, short enough,
    and — taken by another question — with `` (verdict)``, then a number, after it."""
    base = " ".join(title.split())[: MAX_NAME - 20] or "rubric"
    candidate, n = base, 1
    while candidate in taken:
        candidate = f"{base} (verdict)" if n == 1 else f"{base} (verdict {n})"
        n += 1
    return candidate


def has_verdicts(conn: Conn, dataset_id: int) -> bool:
    """Whether reviewers gave verdicts on the dataset's sessions that are not answers yet."""
    return (
        conn.execute(
            "SELECT 1 FROM verdicts v JOIN sessions s ON s.id = v.session_pk WHERE s.dataset_id = ? LIMIT 1",
            [dataset_id],
        ).fetchone()
        is not None
    )


def adopt_verdicts(conn: Conn, dataset_id: int, me: int | None) -> int:
    """Make the dataset's verdicts questions and move every verdict into an answer (``Labels.adopt``), inside the
    caller's transaction, by user ``me``: how many verdicts moved."""
    rows = conn.execute(
        "SELECT v.id, v.session_pk, v.author, v.name, v.value, v.at, v.author_id FROM verdicts v "
        "JOIN sessions s ON s.id = v.session_pk WHERE s.dataset_id = ? ORDER BY v.id",
        [dataset_id],
    ).fetchall()
    names = [LABEL, *sorted({r[3] for r in rows} - {LABEL})]
    questions = {name: verdict_question(conn, dataset_id, name, me) for name in names}
    for _, pk, author, name, value, at, author_id in rows:
        if value is None:
            continue
        user_id = (
            author_id if author_id is not None else named_user(conn, author, at, issuer=_LEGACY, made_by="verdicts")
        )
        conn.execute(
            "INSERT INTO answers (session_pk, turn, question_id, user_id, author, value, question_version, "
            "submitted_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?) "
            "ON CONFLICT (session_pk, turn, question_id, user_id) DO NOTHING",
            [pk, SESSION, questions[name], user_id, author, json.dumps(_as_answer(name, value)), at, at],
        )
    conn.execute(
        "DELETE FROM verdicts WHERE session_pk IN (SELECT id FROM sessions WHERE dataset_id = ?)", [dataset_id]
    )
    return len(rows)

"""The labels that travel with sessions in the evalcore format (``LabelledSession.labels``, ``evalcore.schema.labels``):
read from the store for an export (``read_carried``), stored back by an import (``store_carried``).

What travels with a session is every submitted answer and every gold answer given on it or its turns (the reviewers'
verdicts among them), the definition of each version of a question they answered, and the reviewers' comments. An
import into another store (or dataset) makes what is missing: a question the dataset lacks is defined with the
versions the file brings (at the version numbers it brings, so every answer still says which version it answered); a
person the store does not know by name gets a disabled user of their own, who cannot sign in, so the answer keeps who
gave it. An answer or a gold answer already there is replaced only by a later one (``at``); a person's drafts are
never touched; a comment already there (the same person, turn, text and time) is not added twice. The person's
submission of the session is recorded too (what a queue's overlap counts).

What cannot be stored is said, never silently dropped, and costs only itself: a question whose version differs from
the dataset's own version of that number, or whose level or kind differs; an answer its question cannot take, or on
a turn the session does not have. Each is a note on the record's line; the session and its other labels are kept.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from evalcore.errors import UsageError
from evalcore.schema.labels import Label, LabelComment, LabelQuestion, Labels
from evalcore.store.answers import SESSION
from evalcore.store.questions import VERDICT_KEY, Question, QuestionDef, check_value
from evalcore.store.users import named_user

if TYPE_CHECKING:
    from evalcore.store.engine import Conn

__all__ = ["IMPORTED", "read_carried", "store_carried"]

#: The issuer of the users made for the people an import's labels name (``users.named_user``).
IMPORTED = "evalcore:import"
_CHUNK = 500


def read_carried(conn: Conn, pks: Sequence[int]) -> dict[int, Labels]:
    """The labels of the sessions ``pks`` that have any: answers by question (in the dataset's order), turn, then
    submitted before gold, by person; the questions they answered, each version, in the same order."""
    rows: list[tuple[Any, ...]] = []
    for start in range(0, len(pks), _CHUNK):
        chunk = list(pks[start : start + _CHUNK])
        marks = ",".join("?" * len(chunk))
        rows += conn.execute(
            "SELECT x.session_pk, x.turn, x.question_id, q.name, x.value, x.author, x.status, x.at, x.version, x.note "
            "FROM (SELECT session_pk, turn, question_id, value, author, 'submitted' AS status, submitted_at AS at, "
            f"question_version AS version, CAST(NULL AS TEXT) AS note FROM answers WHERE session_pk IN ({marks}) "
            "AND value IS NOT NULL UNION ALL SELECT session_pk, turn, question_id, value, author, 'gold', at, "
            f"question_version, note FROM gold WHERE session_pk IN ({marks})) AS x "
            "JOIN questions q ON q.id = x.question_id "
            "ORDER BY x.session_pk, q.position, q.id, x.turn, x.status DESC, x.author",
            [*chunk, *chunk],
        ).fetchall()
    comments: dict[int, list[LabelComment]] = defaultdict(list)
    for start in range(0, len(pks), _CHUNK):
        chunk = list(pks[start : start + _CHUNK])
        for pk, turn, author, body, at in conn.execute(
            "SELECT session_pk, turn, author, body, at FROM comments "
            f"WHERE session_pk IN ({','.join('?' * len(chunk))}) ORDER BY session_pk, id",
            chunk,
        ):
            comments[int(pk)].append(LabelComment(turn=turn, user=author, body=body, at=at))
    out = {pk: Labels(comments=said) for pk, said in comments.items()}
    if not rows:
        return out
    names = {int(r[2]): r[3] for r in rows}
    wanted = {(int(r[2]), int(r[8])) for r in rows}
    definitions = _definitions(conn, sorted(names), wanted)
    order = {qid: i for i, qid in enumerate(dict.fromkeys(int(r[2]) for r in rows))}
    answers: dict[int, list[Label]] = defaultdict(list)
    used: dict[int, set[tuple[int, int]]] = defaultdict(set)
    for pk, turn, qid, name, value, author, status, at, version, note in rows:
        answers[int(pk)].append(Label(
            question=name, question_version=int(version), turn=None if turn == SESSION else int(turn),
            value=json.loads(value), user=author, status=status, at=at, note=note,
        ))  # fmt: skip
        used[int(pk)].add((int(qid), int(version)))
    for pk, labels in answers.items():
        asked = sorted(used[pk], key=lambda qv: (order[qv[0]], qv[1]))
        questions = [_carried_question(names[qid], version, definitions[qid, version]) for qid, version in asked]
        out[pk] = Labels(questions=questions, answers=labels, comments=comments.get(pk, []))
    return out


def _definitions(conn: Conn, question_ids: list[int], wanted: set[tuple[int, int]]) -> dict[tuple[int, int], Any]:
    marks = ",".join("?" * len(question_ids))
    return {
        (int(qid), int(version)): json.loads(definition)
        for qid, version, definition in conn.execute(
            f"SELECT question_id, version, definition FROM question_versions WHERE question_id IN ({marks})",
            question_ids,
        )
        if (int(qid), int(version)) in wanted
    }


def _carried_question(name: str, version: int, definition: dict[str, Any]) -> LabelQuestion:
    asked_as = definition.get("name")
    return LabelQuestion(
        name=name, version=version, asked_as=asked_as if asked_as != name else None, level=definition["level"],
        kind=definition["kind"], help=definition.get("help", ""), spec=definition.get("spec", {}),
        required=bool(definition.get("required", False)),
    )  # fmt: skip


class _Dataset:
    """The questions of one dataset as an import goes (read once; grows with what it defines)."""

    def __init__(self, conn: Conn, dataset_id: int, author_id: int | None, stamp: str) -> None:
        self.conn, self.dataset_id, self.author_id, self.stamp = conn, dataset_id, author_id, stamp
        self.questions: dict[str, Question] = {}
        self.versions: dict[tuple[int, int], dict[str, Any]] = {}
        for row in conn.execute(
            "SELECT id, dataset_id, name, level, kind, help, spec, required, position, version, retired "
            "FROM questions WHERE dataset_id = ?",
            [dataset_id],
        ):
            self.questions[row[2]] = Question(int(row[0]), int(row[1]), row[2], row[3], row[4], row[5],
                                              json.loads(row[6]), bool(row[7]), int(row[8]), int(row[9]),
                                              bool(row[10]))  # fmt: skip
        if self.questions:
            ids = [q.id for q in self.questions.values()]
            for qid, version, definition in conn.execute(
                f"SELECT question_id, version, definition FROM question_versions WHERE question_id IN "
                f"({','.join('?' * len(ids))})",
                ids,
            ):
                self.versions[int(qid), int(version)] = json.loads(definition)

    def version(self, carried: LabelQuestion) -> Question:
        """The dataset's question version ``carried`` is, defined when the dataset lacks it: a ``UsageError`` says why
        it cannot be."""
        asked_as = carried.asked_as or carried.name
        spec = _checked_spec(carried, asked_as)
        definition = {"name": asked_as, "level": carried.level, "kind": carried.kind, "help": carried.help.strip(),
                      "spec": spec, "required": carried.required}  # fmt: skip
        question = self.questions.get(carried.name)
        if question is None:
            return self._define(carried, definition)
        if (question.level, question.kind) != (carried.level, carried.kind):
            raise UsageError(f"question {carried.name!r} asks of each {carried.level} ({carried.kind}) in the file, "
                             f"of each {question.level} ({question.kind}) in this dataset")  # fmt: skip
        known = self.versions.get((question.id, carried.version))
        if known is not None:
            if known != definition:
                raise UsageError(f"question {carried.name!r} version {carried.version} differs from this dataset's "
                                 "version of that number")  # fmt: skip
            return _as_question(question, carried.version, definition)
        self.conn.execute(
            "INSERT INTO question_versions (question_id, version, definition, at, by_id) VALUES (?, ?, ?, ?, ?)",
            [question.id, carried.version, json.dumps(definition), self.stamp, self.author_id],
        )
        self.versions[question.id, carried.version] = definition
        if carried.version > question.version:  # a later version than the dataset's: what it asks now
            self.conn.execute(
                "UPDATE questions SET help = ?, spec = ?, required = ?, version = ?, updated_at = ? WHERE id = ?",
                [definition["help"], json.dumps(spec), int(carried.required), carried.version, self.stamp,
                 question.id],
            )  # fmt: skip
            self.questions[carried.name] = _as_question(question, carried.version, definition)
        return _as_question(question, carried.version, definition)

    def _define(self, carried: LabelQuestion, definition: dict[str, Any]) -> Question:
        position = self.conn.execute(
            "SELECT coalesce(max(position), 0) + 1 FROM questions WHERE dataset_id = ?", [self.dataset_id]
        ).fetchone()[0]
        question_id = int(
            self.conn.execute(
                "INSERT INTO questions (dataset_id, name, level, kind, help, spec, required, position, version, "
                "retired, created_at, updated_at, created_by_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?) "
                "RETURNING id",
                [self.dataset_id, carried.name, carried.level, carried.kind, definition["help"],
                 json.dumps(definition["spec"]), int(carried.required), position, carried.version, self.stamp,
                 self.stamp, self.author_id],
            ).fetchone()[0]
        )  # fmt: skip
        self.conn.execute(
            "INSERT INTO question_versions (question_id, version, definition, at, by_id) VALUES (?, ?, ?, ?, ?)",
            [question_id, carried.version, json.dumps(definition), self.stamp, self.author_id],
        )
        made = Question(question_id, self.dataset_id, carried.name, carried.level, carried.kind, definition["help"],
                        definition["spec"], carried.required, int(position), carried.version, False)  # fmt: skip
        self.questions[carried.name] = made
        self.versions[question_id, carried.version] = definition
        return made


def _checked_spec(carried: LabelQuestion, asked_as: str) -> dict[str, Any]:
    """The spec of ``carried`` checked as an admin's definition is (``QuestionDef``), with the verdict it stands for."""
    spec = carried.spec
    try:
        low, high = spec.get("min"), spec.get("max")
        labels = spec.get("labels") or {}
        options = spec.get("options") or ()
        question = QuestionDef(
            asked_as, carried.kind, carried.level, carried.help, carried.required,
            options=tuple(options) if isinstance(options, list) else ("",), min=low, max=high,
            labels=dict(labels) if isinstance(labels, dict) else {"": ""},
            max_length=int(spec.get("max_length", 5_000)),
        )  # fmt: skip
        _, _, checked = question.checked()
    except (TypeError, ValueError) as exc:
        raise UsageError(f"question {carried.name!r}: its definition is not one evalcore can ask ({exc})") from exc
    if isinstance(spec.get(VERDICT_KEY), str):
        checked[VERDICT_KEY] = spec[VERDICT_KEY]
    return checked


def _as_question(question: Question, version: int, definition: dict[str, Any]) -> Question:
    """``question`` as its version ``version`` asked it (what an answer to that version is checked against)."""
    return Question(question.id, question.dataset_id, question.name, question.level, question.kind,
                    definition["help"], definition["spec"], definition["required"], question.position, version,
                    False)  # fmt: skip


def store_carried(
    conn: Conn, dataset_id: int, items: Sequence[tuple[int, int | None, str]], stamp: str, author_id: int | None
) -> list[tuple[int | None, str]]:
    """Store the labels of imported sessions — ``(session pk, line, Labels as JSON)`` each — into the dataset, inside
    the import's transaction (see the module's docstring); what was not stored, as ``(line, why)``."""
    dataset = _Dataset(conn, dataset_id, author_id, stamp)
    notes: list[tuple[int | None, str]] = []
    for pk, line, text in items:
        try:
            labels = Labels.model_validate_json(text)
        except ValidationError as exc:  # (made by ``Labels`` itself: never expected)
            notes.append((line, f"labels: not stored ({exc.errors(include_url=False)[0]['msg']})"))
            continue
        notes += [(line, f"labels: {why}; not imported") for why in _store_one(conn, dataset, pk, labels, stamp)]
    return notes


def _store_one(conn: Conn, dataset: _Dataset, pk: int, labels: Labels, stamp: str) -> list[str]:
    problems: list[str] = []
    asked: dict[tuple[str, int], Question | None] = {}
    for carried in sorted(labels.questions, key=lambda q: q.version):
        try:
            asked[carried.name, carried.version] = dataset.version(carried)
        except UsageError as exc:
            asked[carried.name, carried.version] = None
            problems.append(str(exc))
    n_turns = int(conn.execute("SELECT n_turns FROM sessions WHERE id = ?", [pk]).fetchone()[0])
    submitted: dict[int, tuple[str, str]] = {}  # user -> (name, their last answer's time)
    for label in labels.answers:
        key = (label.question, label.question_version)
        if key not in asked:
            asked[key] = _known(dataset, *key)
            if asked[key] is None:
                problems.append(f"question {label.question!r} version {label.question_version} is not defined")
        question = asked[key]
        if question is None:
            continue
        who = "the gold" if label.status == "gold" else f"{label.user!r}'s answer"
        what = f"{who} to {label.question!r}" + ("" if label.turn is None else f" on turn {label.turn}")
        try:
            value = _checked(question, label, n_turns)
        except UsageError as exc:
            problems.append(f"{what}: {exc}")
            continue
        at = label.at or stamp
        user_id = named_user(conn, label.user, at, issuer=IMPORTED, made_by="import")
        turn = SESSION if label.turn is None else label.turn
        if label.status == "gold":
            conn.execute(
                "INSERT INTO gold (session_pk, turn, question_id, value, question_version, note, author, author_id, "
                "at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_pk, turn, question_id) DO UPDATE SET "
                "value = excluded.value, question_version = excluded.question_version, note = excluded.note, "
                "author = excluded.author, author_id = excluded.author_id, at = excluded.at "
                "WHERE gold.at < excluded.at",
                [pk, turn, question.id, json.dumps(value), label.question_version, label.note, label.user, user_id,
                 at],
            )  # fmt: skip
            continue
        conn.execute(
            "INSERT INTO answers (session_pk, turn, question_id, user_id, author, value, question_version, "
            "submitted_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (session_pk, turn, question_id, user_id) DO UPDATE SET value = excluded.value, "
            "question_version = excluded.question_version, submitted_at = excluded.submitted_at, "
            "updated_at = excluded.updated_at "
            "WHERE answers.submitted_at IS NULL OR answers.submitted_at < excluded.submitted_at",
            [pk, turn, question.id, user_id, label.user, json.dumps(value), label.question_version, at, at],
        )
        if user_id not in submitted or submitted[user_id][1] < at:
            submitted[user_id] = (label.user, at)
    for comment in labels.comments:
        if comment.turn is not None and comment.turn >= n_turns:
            problems.append(f"{comment.user!r}'s comment on turn {comment.turn}: the session has {n_turns} turns")
            continue
        at = comment.at or stamp
        turn_is = "turn IS NULL" if comment.turn is None else "turn = ?"
        same = [pk, *([] if comment.turn is None else [comment.turn]), comment.user, comment.body, at]
        if conn.execute(f"SELECT 1 FROM comments WHERE session_pk = ? AND {turn_is} AND author = ? AND body = ? "
                        "AND at = ?", same).fetchone() is None:  # fmt: skip
            user_id = named_user(conn, comment.user, at, issuer=IMPORTED, made_by="import")
            conn.execute(
                "INSERT INTO comments (session_pk, turn, author, body, at, author_id) VALUES (?, ?, ?, ?, ?, ?)",
                [pk, comment.turn, comment.user, comment.body, at, user_id],
            )
    for user_id, (name, at) in submitted.items():
        conn.execute(
            "INSERT INTO submissions (session_pk, user_id, author, queue_id, at) VALUES (?, ?, ?, NULL, ?) "
            "ON CONFLICT (session_pk, user_id) DO NOTHING",
            [pk, user_id, name, at],
        )
    return problems


def _known(dataset: _Dataset, name: str, version: int) -> Question | None:
    """The dataset's own version ``version`` of question ``name`` (an answer whose file did not define it)."""
    question = dataset.questions.get(name)
    definition = None if question is None else dataset.versions.get((question.id, version))
    return None if question is None or definition is None else _as_question(question, version, definition)


def _checked(question: Question, label: Label, n_turns: int) -> Any:
    if (question.level == "turn") != (label.turn is not None):
        raise UsageError(f"a question of each {question.level} is answered "
                         + ("on a turn" if question.level == "turn" else "on the session"))  # fmt: skip
    if label.turn is not None and label.turn >= n_turns:
        raise UsageError(f"the session has {n_turns} turns (no turn {label.turn})")
    return check_value(question, label.value)

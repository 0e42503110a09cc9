"""What a dataset's labelers are asked (``store.questions``): its questions, each version of them, and its guidelines.

A question has a name (unique in its dataset), a level (``session``: asked once per session; ``turn``: asked of every
turn), a kind and what the kind needs (its ``spec``), help text, and whether it must be answered before a session is
submitted:

| kind | spec | an answer |
|---|---|---|
| ``choice`` | ``options``: two or more labels | one of the labels |
| ``multi`` | ``options``: one or more labels | a list of distinct labels, in the options' order |
| ``rating`` | ``min``, ``max`` (whole, default 1-5), ``labels`` of some points (``{"1": "poor"}``) | a point of it |
| ``number`` | ``min``, ``max`` (either may be None) | a finite number within the bounds |
| ``text`` | ``max_length`` (default 5,000 characters) | text |

Editing a question that changed what it asks gives it a new version; each version's definition is kept, and every
answer says which version it answered, so answers given before an edit stay readable as they were given. A question
retired keeps its answers (and is asked no more). The guidelines are Markdown, shown to labelers as safe text.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, get_args

from evalcore.errors import NotFoundError, UsageError
from evalcore.store.records import now

if TYPE_CHECKING:
    from evalcore.store.engine import Conn
    from evalcore.store.store import Store

__all__ = [
    "KINDS",
    "LEVELS",
    "Kind",
    "Level",
    "Question",
    "QuestionDef",
    "Questions",
    "VERDICT_KEY",
    "check_value",
    "insert_question",
    "is_empty",
    "load_question",
]

Kind = Literal["choice", "multi", "rating", "number", "text"]
KINDS: tuple[Kind, ...] = get_args(Kind)
Level = Literal["session", "turn"]
LEVELS: tuple[Level, ...] = get_args(Level)

MAX_NAME = 100
MAX_HELP = 2_000
MAX_OPTIONS = 50
MAX_OPTION = 200
MAX_TEXT = 5_000
MAX_GUIDELINES = 100_000
_MAX_SCALE = 100
#: In a question's spec: the reviewers' verdict it stands for (``label``, ``rubric:NAME``; ``evalcore.store.labels``).
VERDICT_KEY = "verdict"


@dataclass(frozen=True)
class QuestionDef:
    """What a question asks, as an admin defines it (``Questions.define`` and ``edit`` check it)."""

    name: str
    kind: Kind
    level: Level = "session"
    help: str = ""
    required: bool = False
    options: tuple[str, ...] = ()  # choice, multi
    min: float | None = None  # rating (default 1), number
    max: float | None = None  # rating (default 5), number
    labels: dict[str, str] = field(default_factory=dict)  # rating: a label for some points of the scale
    max_length: int = MAX_TEXT  # text

    def spec(self) -> dict[str, Any]:
        """What the kind needs, checked: the question's ``spec``."""
        where = f"question {self.name!r}"
        if self.kind in ("choice", "multi"):
            options = [str(o).strip() for o in self.options]
            least = 2 if self.kind == "choice" else 1
            if len(options) < least or any(not o for o in options):
                raise UsageError(f"{where}: give at least {least} option{'s' if least > 1 else ''}, none empty")
            if len(set(options)) != len(options):
                raise UsageError(f"{where}: an option is given twice")
            if len(options) > MAX_OPTIONS or any(len(o) > MAX_OPTION for o in options):
                raise UsageError(f"{where}: at most {MAX_OPTIONS} options of at most {MAX_OPTION} characters")
            return {"options": options}
        if self.kind == "rating":
            return self._rating(where)
        if self.kind == "number":
            for bound in (self.min, self.max):
                if bound is not None and not (isinstance(bound, int | float) and math.isfinite(bound)):
                    raise UsageError(f"{where}: a bound is a finite number")
            if self.min is not None and self.max is not None and self.min > self.max:
                raise UsageError(f"{where}: the lowest value is above the highest")
            return {"min": self.min, "max": self.max}
        if self.kind == "text":
            if not 1 <= self.max_length <= MAX_TEXT * 20:
                raise UsageError(f"{where}: a text answer's length is 1 to {MAX_TEXT * 20:,} characters")
            return {"max_length": int(self.max_length)}
        raise UsageError(f"{where}: unknown kind {self.kind!r}; use one of {', '.join(KINDS)}")

    def _rating(self, where: str) -> dict[str, Any]:
        low, high = (1 if self.min is None else self.min), (5 if self.max is None else self.max)
        if not all(isinstance(x, int | float) and math.isfinite(x) and x == int(x) for x in (low, high)):
            raise UsageError(f"{where}: a rating's scale runs between whole numbers")
        low, high = int(low), int(high)
        if not low < high <= low + _MAX_SCALE:
            raise UsageError(f"{where}: a rating's scale needs its lowest point below its highest, at most "
                             f"{_MAX_SCALE} apart (got {low} to {high})")  # fmt: skip
        labels = {}
        for point, label in self.labels.items():
            if not str(point).lstrip("-").isdigit() or not low <= int(point) <= high:
                raise UsageError(f"{where}: a label is for a point of the scale {low}-{high} (got {point!r})")
            if str(label).strip():
                labels[str(int(point))] = str(label).strip()[:MAX_OPTION]
        return {"min": low, "max": high, "labels": labels}

    def checked(self) -> tuple[str, str, dict[str, Any]]:
        """The name and help text trimmed, and the spec: a ``UsageError`` naming what is wrong."""
        name = self.name.strip()
        if not name or len(name) > MAX_NAME or any(c in name for c in "\n\r\t"):
            raise UsageError(f"a question's name is one line of 1 to {MAX_NAME} characters (got {self.name!r})")
        if self.level not in LEVELS:
            raise UsageError(f"question {name!r}: unknown level {self.level!r}; use one of {', '.join(LEVELS)}")
        if len(self.help) > MAX_HELP:
            raise UsageError(f"question {name!r}: the help text is at most {MAX_HELP:,} characters")
        return name, self.help.strip(), self.spec()


@dataclass(frozen=True)
class Question:
    """A question of a dataset as it is now (its ``version``); ``retired`` ones are asked no more."""

    id: int
    dataset_id: int
    name: str
    level: Level
    kind: Kind
    help: str
    spec: dict[str, Any]
    required: bool
    position: int
    version: int
    retired: bool

    @property
    def options(self) -> list[str]:
        return list(self.spec.get("options", []))

    def definition(self) -> dict[str, Any]:
        """What this version asks (kept for every version: ``Questions.version``)."""
        return {"name": self.name, "level": self.level, "kind": self.kind, "help": self.help, "spec": self.spec,
                "required": self.required}  # fmt: skip


def check_value(question: Question, value: Any) -> Any:
    """``value`` as an answer to ``question`` (a rating as an int, a number as a float, a multi-label answer in the
    options' order); a ``UsageError`` naming the question and what it takes otherwise."""
    where = f"{question.name}:"
    spec = question.spec
    if question.kind == "choice":
        if value not in spec["options"]:
            raise UsageError(f"{where} choose one of {', '.join(map(repr, spec['options']))} (got {value!r})")
        return value
    if question.kind == "multi":
        if not isinstance(value, list | tuple) or any(v not in spec["options"] for v in value):
            raise UsageError(f"{where} choose among {', '.join(map(repr, spec['options']))} (got {value!r})")
        return [o for o in spec["options"] if o in value]
    if question.kind in ("rating", "number"):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise UsageError(f"{where} give a number (got {value!r})")
        low, high = spec.get("min"), spec.get("max")
        if question.kind == "rating" and value != int(value):
            raise UsageError(f"{where} a rating is a whole number from {low} to {high} (got {value!r})")
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"from {low} to {high}" if low is not None and high is not None else (
                f"at least {low}" if low is not None else f"at most {high}")  # fmt: skip
            raise UsageError(f"{where} the answer is {bounds} (got {value!r})")
        return int(value) if question.kind == "rating" else float(value)
    if not isinstance(value, str):
        raise UsageError(f"{where} give text (got {type(value).__name__})")
    if len(value) > spec["max_length"]:
        raise UsageError(f"{where} at most {spec['max_length']:,} characters (got {len(value):,})")
    return value


def is_empty(value: Any) -> bool:
    """Whether ``value`` answers nothing (None, blank text, no label chosen)."""
    return value is None or (isinstance(value, str) and not value.strip()) or value == []


_COLUMNS = "id, dataset_id, name, level, kind, help, spec, required, position, version, retired"


def _question(row: Any) -> Question:
    return Question(int(row[0]), int(row[1]), row[2], row[3], row[4], row[5], json.loads(row[6]), bool(row[7]),
                    int(row[8]), int(row[9]), bool(row[10]))  # fmt: skip


def load_question(conn: Conn, question_id: int) -> Question:
    """Question ``question_id`` read inside a transaction; ``NotFoundError`` when there is none."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM questions WHERE id = ?", [question_id]).fetchone()
    if row is None:
        raise NotFoundError(f"no question #{question_id}")
    return _question(row)


def insert_question(
    conn: Conn, dataset_id: int, question: QuestionDef, author_id: int | None, *, verdict: str | None = None
) -> Question:
    """Add ``question`` to dataset ``dataset_id`` (last in its order) inside the caller's transaction; ``verdict``:
    the reviewers' verdict it stands for (``evalcore.store.labels``). A name taken is a ``UsageError``."""
    name, help_text, spec = question.checked()
    if verdict is not None:
        spec[VERDICT_KEY] = verdict
    if conn.execute("SELECT 1 FROM questions WHERE dataset_id = ? AND name = ?", [dataset_id, name]).fetchone():
        raise UsageError(f"the dataset has a question named {name!r} already")
    stamp = now()
    position = conn.execute(
        "SELECT coalesce(max(position), 0) + 1 FROM questions WHERE dataset_id = ?", [dataset_id]
    ).fetchone()[0]
    question_id = int(
        conn.execute(
            "INSERT INTO questions (dataset_id, name, level, kind, help, spec, required, position, version, "
            "retired, created_at, updated_at, created_by_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?, ?, ?) "
            "RETURNING id",
            [dataset_id, name, question.level, question.kind, help_text, json.dumps(spec),
             int(question.required), position, stamp, stamp, author_id],
        ).fetchone()[0]
    )  # fmt: skip
    made = load_question(conn, question_id)
    conn.execute(
        "INSERT INTO question_versions (question_id, version, definition, at, by_id) VALUES (?, 1, ?, ?, ?)",
        [question_id, json.dumps(made.definition()), stamp, author_id],
    )
    return made


class Questions:
    """The questions and guidelines of one store's datasets (``store.questions``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._engine = store._engine

    # -- reading ---------------------------------------------------------------------------------------

    def of(self, dataset: str, *, retired: bool = False) -> list[Question]:
        """The dataset's questions in their order (the retired ones too when ``retired``)."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM questions WHERE dataset_id = ?" + ("" if retired else " AND retired = 0")
                + " ORDER BY position, id",
                [dataset_id],
            ).fetchall()  # fmt: skip
        return [_question(r) for r in rows]

    def get(self, question_id: int) -> Question:
        """Question ``question_id``; ``NotFoundError`` when there is none."""
        with self._engine.read() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM questions WHERE id = ?", [question_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no question #{question_id}")
        return _question(row)

    def find(self, dataset: str, name: str) -> Question:
        """The dataset's question named ``name``."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            row = conn.execute(
                f"SELECT {_COLUMNS} FROM questions WHERE dataset_id = ? AND name = ?", [dataset_id, name]
            ).fetchone()
        if row is None:
            raise NotFoundError(f"dataset {dataset!r} has no question named {name!r}")
        return _question(row)

    def versions(self, question_id: int) -> dict[int, dict[str, Any]]:
        """Every version of the question: its definition (name, level, kind, help, spec, required) by number."""
        with self._engine.read() as conn:
            rows = conn.execute(
                "SELECT version, definition FROM question_versions WHERE question_id = ? ORDER BY version",
                [question_id],
            ).fetchall()
        if not rows:
            self.get(question_id)  # raises when missing
        return {int(v): json.loads(d) for v, d in rows}

    # -- defining --------------------------------------------------------------------------------------

    def define(self, dataset: str, question: QuestionDef) -> Question:
        """Add ``question`` to the dataset (last in its order); verdicts still kept as they were before verdicts were
        answers move into answers first (``labels.adopt``), so that they stay in sight on Review's Questions tab."""
        question.checked()
        self._store.require("manage_datasets", f"define a question of {dataset!r}")
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.write() as conn:
            _, author_id = self._store.author(conn)
            from evalcore.store.labels import adopt_verdicts, has_verdicts

            if has_verdicts(conn, dataset_id):  # given before verdicts were answers (a store not yet reopened)
                adopt_verdicts(conn, dataset_id, author_id)
            return insert_question(conn, dataset_id, question, author_id)

    def edit(self, question_id: int, question: QuestionDef) -> Question:
        """Change what question ``question_id`` asks; a new version when its definition changed (answers given
        before keep the version they answered). Its level and kind stay: define a new question for another."""
        name, help_text, spec = question.checked()
        old = self.get(question_id)
        if (question.level, question.kind) != (old.level, old.kind):
            raise UsageError(f"question {old.name!r}: its level and kind stay as they are; define a new question")
        self._store.require("manage_datasets", f"edit the question {old.name!r}")
        stamp = now()
        with self._engine.write() as conn:
            _, author_id = self._store.author(conn)
            row = conn.execute(f"SELECT {_COLUMNS} FROM questions WHERE id = ?" + self._engine.for_update,
                               [question_id]).fetchone()  # fmt: skip
            current = _question(row)
            if VERDICT_KEY in current.spec:  # (what the question stands for stays with it)
                spec[VERDICT_KEY] = current.spec[VERDICT_KEY]
            if (
                name != current.name
                and conn.execute(
                    "SELECT 1 FROM questions WHERE dataset_id = ? AND name = ?", [current.dataset_id, name]
                ).fetchone()
            ):
                raise UsageError(f"the dataset has a question named {name!r} already")
            new = Question(current.id, current.dataset_id, name, current.level, current.kind, help_text, spec,
                           question.required, current.position, current.version, current.retired)  # fmt: skip
            if new.definition() == current.definition():
                return current
            version = current.version + 1
            conn.execute(
                "UPDATE questions SET name = ?, help = ?, spec = ?, required = ?, version = ?, updated_at = ? "
                "WHERE id = ?",
                [name, help_text, json.dumps(spec), int(question.required), version, stamp, question_id],
            )
            conn.execute(
                "INSERT INTO question_versions (question_id, version, definition, at, by_id) VALUES (?, ?, ?, ?, ?)",
                [question_id, version, json.dumps(new.definition()), stamp, author_id],
            )
        return self.get(question_id)

    def retire(self, question_id: int, retired: bool = True) -> None:
        """Ask question ``question_id`` no more (``retired`` False: again); its answers stay."""
        question = self.get(question_id)
        self._store.require("manage_datasets", f"retire the question {question.name!r}")
        with self._engine.write() as conn:
            conn.execute("UPDATE questions SET retired = ?, updated_at = ? WHERE id = ?",
                         [int(retired), now(), question_id])  # fmt: skip

    def move(self, question_id: int, offset: int) -> None:
        """Move the question ``offset`` places up (negative) or down in its dataset's order."""
        question = self.get(question_id)
        self._store.require("manage_datasets", f"reorder the question {question.name!r}")
        with self._engine.write() as conn:
            ids = [r[0] for r in conn.execute(
                "SELECT id FROM questions WHERE dataset_id = ? ORDER BY position, id" + self._engine.for_update,
                [question.dataset_id]).fetchall()]  # fmt: skip
            at = ids.index(question_id)
            ids.insert(max(0, min(len(ids) - 1, at + offset)), ids.pop(at))
            for position, qid in enumerate(ids, 1):
                conn.execute("UPDATE questions SET position = ? WHERE id = ?", [position, qid])

    # -- guidelines ------------------------------------------------------------------------------------

    def guidelines(self, dataset: str) -> str:
        """The dataset's guidelines (Markdown; empty when it has none)."""
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.read() as conn:
            row = conn.execute("SELECT guidelines FROM datasets WHERE id = ?", [dataset_id]).fetchone()
        return (row[0] if row else None) or ""

    def set_guidelines(self, dataset: str, text: str) -> None:
        """Replace the dataset's guidelines (``""``: none)."""
        if len(text) > MAX_GUIDELINES:
            raise UsageError(f"the guidelines are at most {MAX_GUIDELINES:,} characters (got {len(text):,})")
        self._store.require("manage_datasets", f"write the guidelines of {dataset!r}")
        dataset_id = self._store.datasets.id_of(dataset)
        with self._engine.write() as conn:
            conn.execute("UPDATE datasets SET guidelines = ? WHERE id = ?", [text.strip() or None, dataset_id])

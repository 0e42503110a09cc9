"""What the store hands out: plain records, no SQL."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, get_args

from evalcore.errors import UsageError
from evalcore.identity import link_of, ref_of
from evalcore.schema import TRUTH_FIELDS, Session, TurnTruth

__all__ = [
    "RUN_STATUSES",
    "SESSION_FIELDS",
    "TURN_FIELDS",
    "Dataset",
    "Edit",
    "RunStatus",
    "SessionPage",
    "SessionSummary",
    "StoredSession",
    "now",
    "run_status",
]

#: Session-level fields reviewers edit (besides ``status`` and ``tags``).
SESSION_FIELDS = TRUTH_FIELDS
#: Per-turn fields reviewers edit.
TURN_FIELDS = ("qa_id", "ground_truth", "observation", "weight", "expected_tool_usage")


#: What a run is doing: scoring, finished, stopped on request (resumable), or stopped by an error (resumable).
RunStatus = Literal["running", "done", "cancelled", "failed"]
RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)


def run_status(value: str) -> RunStatus:
    """``value`` as a run status; an unknown one is an error naming the known ones."""
    for status in RUN_STATUSES:
        if value == status:
            return status
    raise UsageError(f"unknown run status {value!r}; use one of {', '.join(RUN_STATUSES)}")


def now() -> str:
    """The current UTC time as ISO 8601 with microseconds (sorts as text)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Dataset:
    """A named collection of sessions."""

    id: int
    name: str
    description: str | None
    created_at: str
    sessions: int = 0


@dataclass(frozen=True)
class Edit:
    """One entry of a session's append-only history."""

    id: int
    session_pk: int
    turn: int | None
    field: str
    old: Any
    new: Any
    author: str
    at: str
    reason: str | None
    version: int

    @property
    def where(self) -> str:
        """The edited field as a reviewer reads it: ``reference`` or ``turns[2].observation``."""
        return self.field if self.turn is None else f"turns[{self.turn}].{self.field}"


@dataclass
class StoredSession:
    """A session as stored: its effective content (file data plus reviewers' edits) and bookkeeping."""

    pk: int
    dataset: str
    key: str
    version: int
    session: Session
    status_by: str | None = None
    status_at: str | None = None
    updated_at: str | None = None
    updated_by: str | None = None
    n_edits: int = 0

    @property
    def ref(self) -> str:
        """The session's id as exported: its ``session_id``, else the identity evalcore gave it."""
        return ref_of(self.key, self.session.session_id)

    shared: bool = False  # other assistants' sessions of the dataset have its session_id

    @property
    def link(self) -> str:
        """The session's id in a link (``evalcore.identity.link_of``): unique in its dataset."""
        return link_of(self.key, self.session.session_id, self.shared)


@dataclass
class SessionPage:
    """What Review reads of a session: a page of its turns (``Sessions.page``).

    ``stored.session`` holds the session's own fields and ground truth (reviewers' edits laid over them) and, of
    its conversation, only the messages of the page: before the first turn (on the first page) and of turns
    ``first_turn`` to ``first_turn + len(truth)``, with their ground truth (``turn_truth[0]`` is turn
    ``first_turn``'s). A small session (``whole``) is read whole: every message and turn, ``first_turn`` 0.
    The counts and ``weights`` (every turn's, as edited) are the whole session's.
    """

    stored: StoredSession
    first_turn: int
    n_turns: int
    n_messages: int
    n_tool_calls: int
    truth: dict[int, TurnTruth]  # the ground truth of each turn read (its index in the session)
    weights: list[float | None]  # every turn's weight (None: not set)
    final_answer: str | None
    whole: bool


@dataclass(frozen=True)
class SessionSummary:
    """One row of a page of sessions."""

    pk: int
    session_id: str | None
    assistant_id: str | None
    title: str
    status: str
    tags: list[str] = field(default_factory=list)
    n_turns: int = 0
    n_messages: int = 0
    n_tool_calls: int = 0
    position: int | None = None
    version: int = 1
    updated_at: str | None = None
    score: float | None = None
    key: str = ""
    has_truth: bool = False
    updated_by: str | None = None

    @property
    def ref(self) -> str:
        """The session's id as exported: its ``session_id``, else the identity evalcore gave it."""
        return ref_of(self.key, self.session_id)

    shared: bool = False  # other assistants' sessions of the dataset have its session_id

    @property
    def link(self) -> str:
        """The session's id in a link (``evalcore.identity.link_of``): unique in its dataset."""
        return link_of(self.key, self.session_id, self.shared)

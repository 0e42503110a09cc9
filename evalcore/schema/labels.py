"""The labels a session carries in the evalcore format: what people answered about it, the gold, the questions (each
version answered) and the reviewers' comments — so that an export and an import into another store lose nothing of a
labeling programme.

In the store they live apart from the session (``evalcore.store.answers``, ``questions``, ``labels``): an export
in the evalcore format lays them on each session (``LabelledSession.labels``), an import stores them back
(``evalcore.store.carried``). Drafts are their writers' own and never travel.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Label", "LabelComment", "LabelQuestion", "Labels"]


class LabelQuestion(BaseModel):
    """One version of a question, as the dataset's admin defined it (``evalcore.store.questions``)."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    name: str = Field(min_length=1)
    version: int = Field(default=1, ge=1)
    asked_as: str | None = None  # the name this version had, when the question has been renamed since
    level: Literal["session", "turn"] = "session"
    kind: Literal["choice", "multi", "rating", "number", "text"]
    help: str = ""
    spec: dict[str, Any] = Field(default_factory=dict)
    required: bool = False


class Label(BaseModel):
    """One person's submitted answer to a question on the session (``turn`` None) or one of its turns (counted from
    0), or — ``status`` ``gold`` — the answer an adjudicator settled on (``user``: who settled it)."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    question: str = Field(min_length=1)
    question_version: int = Field(default=1, ge=1)
    turn: int | None = Field(default=None, ge=0)
    value: Any
    user: str = Field(min_length=1)
    status: Literal["submitted", "gold"] = "submitted"
    at: str | None = None
    note: str | None = None  # gold: the adjudicator's note


class LabelComment(BaseModel):
    """A reviewer's comment on the session (``turn`` None) or one of its turns (counted from 0)."""

    model_config = ConfigDict(extra="forbid")

    turn: int | None = Field(default=None, ge=0)
    user: str = Field(min_length=1)
    body: str = Field(min_length=1)
    at: str | None = None


class Labels(BaseModel):
    """A session's labels: the questions its answers answered (each version), the answers and gold, and the
    reviewers' comments."""

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    questions: list[LabelQuestion] = Field(default_factory=list)
    answers: list[Label] = Field(default_factory=list)
    comments: list[LabelComment] = Field(default_factory=list)

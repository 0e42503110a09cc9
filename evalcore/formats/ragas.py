"""``ragas``: ``MultiTurnSample`` rows as ``EvaluationDataset.to_jsonl`` writes them.

Written lines are byte-identical to ragas' own: ``json.dumps(row, ensure_ascii=False)``
with ragas' key order. System messages stay in our model but are left out of
``user_input`` (ragas has no system message); so is anything ragas cannot hold.

An evaluation result's rows (``EvaluationResult.to_pandas()`` saved as JSON Lines) carry ragas' scores
next to the sample: ``tool_call_accuracy``, ``faithfulness``, ``topic_adherence(mode=f1)``... Every column that
is no sample field, holds a number and is not named like a row number (``index``, ``id``, ``sample_id``) is read
as a score (``Session.scores``); ``null`` or ``NaN`` (a metric that failed) is none. Columns other than the
sample's are kept as they came (``metadata["ragas"]``) and written back where they were; a session's scores are
written as columns (a score it no longer has is left out, one it gained is added at the end).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._records import build_session, expect_dict, expect_list, expect_str, memo, named_call_in
from evalcore.formats._scores import is_id_name, number
from evalcore.formats.base import Format, register
from evalcore.schema import Message, Session, ToolCall

_TYPES = {"human": "user", "ai": "assistant", "tool": "tool"}
_ROLES = {v: k for k, v in _TYPES.items()}
_FIELDS = ("user_input", "reference", "reference_tool_calls", "rubrics", "reference_topics")
# A SingleTurnSample's fields and those ragas' test-set generator adds: never scores, whatever they hold.
_SAMPLE_FIELDS = frozenset(
    {*_FIELDS, "retrieved_contexts", "reference_contexts", "response", "multi_responses", "persona_name",
     "query_style", "query_length", "synthesizer_name"}
)  # fmt: skip


@register
class RagasFormat(Format):
    """ragas ``MultiTurnSample`` JSONL."""

    name = "ragas"
    description = "ragas MultiTurnSample JSONL (EvaluationDataset.to_jsonl)"
    writable = True
    keeps_truth = frozenset({"reference", "reference_tool_calls", "reference_topics", "rubrics"})
    priority = 10

    def sniff(self, value: Any) -> bool:
        return isinstance(value, dict) and isinstance(value.get("user_input"), list)

    def parse(self, value: Any) -> Session:
        try:
            data = _fast_data(value)
        except Exception:  # anything unusual: the careful path below names the bad field
            data = None
        if data is not None:
            try:
                return build_session(data)
            except RecordError:
                pass
        return self._parse_carefully(value)

    def _parse_carefully(self, value: Any) -> Session:
        row = expect_dict(value, "record")
        if "user_input" not in row:
            raise RecordError("missing (a MultiTurnSample needs its messages)", "user_input")
        messages = [
            _message_in(m, f"user_input[{i}]") for i, m in enumerate(expect_list(row["user_input"], "user_input"))
        ]
        data: dict[str, Any] = {"messages": messages}
        reference = expect_str(row.get("reference"), "reference", optional=True)
        if reference is not None:
            data["reference"] = reference
        if row.get("reference_tool_calls") is not None:
            calls = expect_list(row["reference_tool_calls"], "reference_tool_calls")
            data["reference_tool_calls"] = [_call_in(c, f"reference_tool_calls[{i}]") for i, c in enumerate(calls)]
        for key in ("rubrics", "reference_topics"):
            if row.get(key) is not None:
                data[key] = row[key]
        extras = {k: v for k, v in row.items() if k not in _FIELDS}
        if extras:
            data["metadata"] = {"ragas": extras}
            _scores_in(extras, data)
        return build_session(data)

    def write(self, session: Session) -> Iterable[Any]:
        row: dict[str, Any] = {"user_input": [_message_out(m) for m in session.messages if m.role != "system"]}
        reference = session.reference_answer()
        if reference is not None:
            row["reference"] = reference
        if session.reference_tool_calls is not None:
            row["reference_tool_calls"] = [_call_out(c) for c in session.reference_tool_calls]
        if session.rubrics is not None:
            row["rubrics"] = session.rubrics
        if session.reference_topics is not None:
            row["reference_topics"] = session.reference_topics
        row.update(memo(session.metadata, "ragas"))
        _scores_out(session.scores, row)
        return [row]

    def dumps(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)


def _fast_data(row: dict[str, Any]) -> dict[str, Any] | None:
    """Canonical data for a well-formed row, with no per-field checks (most rows are well-formed): whatever is
    wrong, pydantic's validation of it, or the careful path, finds. (This runs for every row read.)"""
    messages: list[dict[str, Any]] = []
    append = messages.append
    for m in row["user_input"]:
        content = m["content"]
        if content.__class__ is not str:
            return None
        role = _TYPES[m["type"]]
        if len(m) == 2:  # content and type alone: most messages
            append({"role": role, "content": content})
            continue
        out: dict[str, Any] = {"role": role, "content": content}
        if (meta := m.get("metadata")) is not None:
            out["metadata"] = {"ragas": meta}
        if role == "assistant" and (calls := m.get("tool_calls")) is not None:
            out["tool_calls"] = [{"name": c["name"], "args": c.get("args", {})} for c in calls]
        append(out)
    data: dict[str, Any] = {"messages": messages}
    for key in ("reference", "rubrics", "reference_topics"):
        if (item := row.get(key)) is not None:
            data[key] = item
    if (calls := row.get("reference_tool_calls")) is not None:
        data["reference_tool_calls"] = [{"name": c["name"], "args": c.get("args", {})} for c in calls]
    if len(row) > len(data):
        extras = {k: v for k, v in row.items() if k not in _FIELDS}
        if extras:
            data["metadata"] = {"ragas": extras}
            _scores_in(extras, data)
    return data


def _is_score(name: str, value: Any) -> bool:
    """Whether a column of a ragas row is one of ragas' scores (see the module's docstring)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and name not in _SAMPLE_FIELDS
        and not is_id_name(name)
        and bool(name.strip())
    )


def _scores_in(extras: dict[str, Any], data: dict[str, Any]) -> None:
    scores = {k: v for k, v in extras.items() if _is_score(k, v) and number(v) is not None}
    if scores:
        data["scores"] = scores


def _scores_out(scores: dict[str, Any], row: dict[str, Any]) -> None:
    """The session's scores as columns: a kept score column it no longer has is dropped (a NaN one, no score,
    stays), its scores are written in place or added."""
    for name in [k for k, v in row.items() if k not in _FIELDS and _is_score(k, v)]:
        if name not in scores and number(row[name]) is not None:
            del row[name]
    for name, value in scores.items():
        if name not in _FIELDS and _is_score(name, value) and number(value) is not None:
            row[name] = value


def _message_in(value: Any, field: str) -> dict[str, Any]:
    m = expect_dict(value, field)
    kind = m.get("type")
    if not isinstance(kind, str) or kind not in _TYPES:
        raise RecordError(f"unknown message type {kind!r}; expected human, ai or tool", f"{field}.type")
    content = expect_str(m.get("content"), f"{field}.content")
    out: dict[str, Any] = {"role": _TYPES[kind], "content": content}
    if m.get("metadata") is not None:
        out["metadata"] = {"ragas": expect_dict(m["metadata"], f"{field}.metadata")}
    if kind == "ai" and m.get("tool_calls") is not None:
        calls = expect_list(m["tool_calls"], f"{field}.tool_calls")
        out["tool_calls"] = [_call_in(c, f"{field}.tool_calls[{i}]") for i, c in enumerate(calls)]
    return out


def _call_in(value: Any, field: str) -> dict[str, Any]:
    call, _ = named_call_in(value, field)
    return {"name": call["name"], "args": call["args"]}  # (ragas calls have no id)


def _message_out(message: Message) -> dict[str, Any]:
    # ragas' field order: content, metadata, type, tool_calls (None fields left out).
    out: dict[str, Any] = {"content": message.text}
    meta = message.metadata.get("ragas")
    if meta is not None:
        out["metadata"] = meta
    out["type"] = _ROLES[message.role]
    if message.role == "assistant" and message.tool_calls is not None:
        out["tool_calls"] = [_call_out(c) for c in message.tool_calls]
    return out


def _call_out(call: ToolCall) -> dict[str, Any]:
    return {"name": call.name, "args": call.args}

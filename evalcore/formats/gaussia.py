"""``gaussia``: lists of Gaussia ``Dataset`` (JSON array or JSONL) and ``StreamedBatch`` JSONL.

A ``Batch`` becomes a turn: the user's ``query``, the tools in ``agentic.tools_used``
(an assistant message with the calls, then their results), and the ``assistant``
answer; its reference side (``ground_truth_assistant``, ``observation``, ``weight``,
``ground_truth_agentic``, ``logprobs``) becomes the turn's ground truth.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._records import build_session, expect_dict, expect_list, expect_str, memo
from evalcore.formats.base import Format, Reader, register
from evalcore.schema import Session, Turn

NS = "gaussia"
_SESSION_KEYS = ("session_id", "assistant_id", "language", "context")
_BATCH_KEYS = {
    "qa_id", "query", "assistant", "ground_truth_assistant", "observation",
    "weight", "agentic", "ground_truth_agentic", "logprobs",
}  # fmt: skip


def _is_dataset(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("conversation"), list)


def _is_streamed(value: Any) -> bool:
    return isinstance(value, dict) and "batch" in value and isinstance(value.get("metadata"), dict)


@register
class GaussiaFormat(Format):
    """Gaussia sessions; a file of ``StreamedBatch`` lines is regrouped into sessions."""

    name = "gaussia"
    description = "Gaussia Dataset list (JSON array or JSONL) and StreamedBatch JSONL"
    writable = True
    keeps_truth = frozenset({"turn_truth", "reference"})  # the reference as the last turn's ground truth
    priority = 10

    def sniff(self, value: Any) -> bool:
        return _is_dataset(value) or _is_streamed(value)

    def parse(self, value: Any) -> Session:
        return _dataset_in(expect_dict(value, "record"))

    def reader(self) -> Reader:
        return _GaussiaReader(self.parse)

    def write(self, session: Session) -> Iterable[Any]:
        header = _header_out(session)
        turns = session.turns()
        calls = {
            id(c): f"messages[{i}].tool_calls[{j}]"
            for i, m in enumerate(session.messages)
            for j, c in enumerate(m.calls)
        }
        batches = [_batch_out(session, turn, calls, last=turn.index == len(turns) - 1) for turn in turns]
        extras = dict(memo(session.metadata, NS))
        if extras.pop("streamed", False):
            header |= expect_dict(extras.pop("header", None) or {}, f"metadata.{NS}.header")
            return [{"metadata": header, "batch": b} for b in batches]
        return [{**header, "conversation": batches, **extras}]


class _GaussiaReader(Reader):
    """Groups consecutive ``StreamedBatch`` lines of one session into one session. A session is its
    ``session_id`` and ``assistant_id``: a BestOf dataset (one session, several assistants) is several.

    Each line is checked whole before anything held is touched, so a bad line never costs the
    good batches before it, and a problem is reported on the line that has it.
    """

    def __init__(self, parse: Any) -> None:
        super().__init__(parse)
        self._open: tuple[int, tuple[str, str | None], dict[str, Any], list[dict[str, Any]]] | None = None
        self._done: set[tuple[str, str | None]] = set()

    def feed(self, value: Any, line: int) -> list[tuple[int, Session]]:
        if not _is_streamed(value):
            parsed = self._parse(value)  # raises before the open session is flushed
            return self._flush() + [(line, parsed)]
        header = _header_in(value["metadata"])
        batch = _batch_in(value["batch"], "batch")
        _check_batch(header, batch)  # whole, before it joins the others
        identity = (header["session_id"], header.get("assistant_id"))
        out: list[tuple[int, Session]] = []
        if self._open is None or self._open[1] != identity:
            out = self._flush()
            if identity in self._done:
                self.warnings.append(
                    (line, f"batches of session {identity[0]!r} resume after other sessions; "
                     "they are read as a separate session")
                )  # fmt: skip
            self._open = (line, identity, header, [])
        self._open[3].append(batch)
        return out

    def close(self) -> list[tuple[int, Session]]:
        return self._flush()

    def _flush(self) -> list[tuple[int, Session]]:
        if self._open is None:
            return []
        line, identity, header, batches = self._open
        self._open = None
        self._done.add(identity)
        extras = header.pop("extras")
        data: dict[str, Any] = dict(header)
        data["metadata"] = {NS: {"streamed": True, **({"header": extras} if extras else {})}}
        _add_turns(data, batches)
        try:
            return [(line, build_session(data))]
        except RecordError as exc:  # reported on the session's first line; the line being read goes on
            self.failures.append((line, exc))
            return []


# The line's names of what a batch becomes in the model.
_BATCH_FIELDS = {
    "qa_id": "qa_id", "ground_truth": "ground_truth_assistant", "observation": "observation",
    "weight": "weight", "expected_tool_usage": "ground_truth_agentic", "logprobs": "logprobs",
}  # fmt: skip


def _check_batch(header: dict[str, Any], batch: dict[str, Any]) -> None:
    """Raise the ``RecordError`` that one streamed batch would cause in its session, naming its field."""
    probe = {k: v for k, v in header.items() if k != "extras"}
    _add_turns(probe, [batch])
    try:
        build_session(probe)
    except RecordError as exc:
        field = exc.field or ""
        if field.startswith("turn_truth[0]."):
            name = field.removeprefix("turn_truth[0].").split(".", 1)[0]
            field = f"batch.{_BATCH_FIELDS.get(name, name)}"
        elif field.startswith("messages"):
            field = "batch"
        raise RecordError(exc.reason, field or None) from exc


def _header_in(value: Any) -> dict[str, Any]:
    header = expect_dict(value, "metadata")
    data = _session_fields(header, "metadata")
    if "session_id" not in data:
        raise RecordError("missing (a StreamedBatch's metadata names its session)", "metadata.session_id")
    data["extras"] = {k: v for k, v in header.items() if k not in _SESSION_KEYS}
    return data


def _session_fields(row: dict[str, Any], where: str) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key in _SESSION_KEYS:
        if row.get(key) is not None:
            data[key] = expect_str(row[key], f"{where}.{key}".lstrip("."))
    return data


def _dataset_in(row: dict[str, Any]) -> Session:
    data = _session_fields(row, "")
    batches = [
        _batch_in(b, f"conversation[{i}]") for i, b in enumerate(expect_list(row.get("conversation"), "conversation"))
    ]
    _add_turns(data, batches)
    extras = {k: v for k, v in row.items() if k not in _SESSION_KEYS and k != "conversation"}
    if extras:
        data["metadata"] = {NS: extras}
    return build_session(data)


def _batch_in(value: Any, field: str) -> dict[str, Any]:
    b = expect_dict(value, field)
    for key in ("qa_id", "query", "assistant", "ground_truth_assistant"):
        if key not in b:
            raise RecordError("missing (a Gaussia Batch requires it)", f"{field}.{key}")
        expect_str(b[key], f"{field}.{key}")
    weight = b.get("weight")
    if weight is not None and (not isinstance(weight, int | float) or isinstance(weight, bool) or weight < 0):
        raise RecordError(f"must be a number >= 0, got {weight!r}", f"{field}.weight")
    if isinstance(weight, float) and not math.isfinite(weight):  # (NaN is not below 0: it is no number at all)
        what = "not a number" if math.isnan(weight) else "infinite"
        raise RecordError(f"must be a finite number >= 0, got {weight!r} ({what})", f"{field}.weight")
    agentic = b.get("agentic")
    tools = []
    if isinstance(agentic, dict) and agentic.get("tools_used"):
        for i, t in enumerate(expect_list(agentic["tools_used"], f"{field}.agentic.tools_used")):
            t = expect_dict(t, f"{field}.agentic.tools_used[{i}]")
            expect_str(t.get("tool_name"), f"{field}.agentic.tools_used[{i}].tool_name")
            expect_dict(t.get("parameters", {}), f"{field}.agentic.tools_used[{i}].parameters")
            tools.append(t)
    return {"batch": b, "tools": tools}


def _add_turns(data: dict[str, Any], batches: list[dict[str, Any]]) -> None:
    messages: list[dict[str, Any]] = []
    turns: list[dict[str, Any]] = []
    for item in batches:
        b, tools = item["batch"], item["tools"]
        messages.append({"role": "user", "content": b["query"]})
        if tools:
            # Ids link each result to its own call (a tool without a result must not take the next one's).
            ids = [f"{b['qa_id']}:{i + 1}" for i in range(len(tools))]
            calls = [
                {"id": call_id, "name": t["tool_name"], "args": t.get("parameters") or {}, "metadata": _step(t)}
                for call_id, t in zip(ids, tools, strict=True)
            ]
            messages.append({"role": "assistant", "tool_calls": calls})
            for call_id, t in zip(ids, tools, strict=True):
                if "result" in t:
                    result = t["result"]
                    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
                    messages.append({"role": "tool", "name": t["tool_name"], "tool_call_id": call_id, "content": text})
        messages.append({"role": "assistant", "content": b["assistant"]})
        truth: dict[str, Any] = {"qa_id": b["qa_id"], "ground_truth": b["ground_truth_assistant"]}
        for key, target in (("observation", "observation"), ("weight", "weight"),
                            ("ground_truth_agentic", "expected_tool_usage"), ("logprobs", "logprobs")):  # fmt: skip
            if b.get(key) is not None:
                truth[target] = b[key]
        meta = {k: v for k, v in b.items() if k not in _BATCH_KEYS}
        if "agentic" in b:
            meta["agentic"] = b["agentic"]  # kept whole; written back while the calls still match
        if meta:
            truth["metadata"] = {NS: meta}
        turns.append(truth)
    data["messages"] = messages
    data["turn_truth"] = turns


def _step(tool: dict[str, Any]) -> dict[str, Any]:
    return {NS: {"step": tool["step"]}} if "step" in tool else {}


def _header_out(session: Session) -> dict[str, Any]:
    context = session.context
    if context is None:
        system = [m.text for m in session.preamble() if m.role == "system"]
        context = "\n\n".join(system)
    session_id = session.session_id
    if session_id is None:
        position = session.provenance.position if session.provenance else None
        session_id = f"session-{position}" if position is not None else ""
    header: dict[str, Any] = {"session_id": session_id, "assistant_id": session.assistant_id or ""}
    if session.language is not None:
        header["language"] = session.language
    header["context"] = context
    return header


def _batch_out(session: Session, turn: Turn, calls: dict[int, str], *, last: bool) -> dict[str, Any]:
    truth = turn.truth
    ground_truth = truth.ground_truth
    if ground_truth is None and last:
        ground_truth = session.reference
    batch: dict[str, Any] = {
        "qa_id": truth.qa_id or f"q{turn.index + 1}",
        "query": turn.query,
        "assistant": turn.answer or "",
        "ground_truth_assistant": ground_truth or "",
    }
    extras = dict(memo(truth.metadata, NS, f"turns[{turn.index}].metadata"))
    raw_agentic = extras.pop("agentic", None)
    agentic = _agentic_out(turn, raw_agentic, calls)
    if agentic is not None:
        batch["agentic"] = agentic
    for key, value in (("observation", truth.observation), ("weight", truth.weight),
                       ("ground_truth_agentic", truth.expected_tool_usage), ("logprobs", truth.logprobs)):  # fmt: skip
        if value is not None:
            batch[key] = value
    batch.update(extras)
    return batch


def _agentic_out(turn: Turn, raw: Any, calls: dict[int, str]) -> Any:
    pairs = turn.tool_results()
    used = []
    for i, (call, result) in enumerate(pairs):
        entry: dict[str, Any] = {"tool_name": call.name, "parameters": call.args}
        if result is not None:
            entry["result"] = result.text
        entry["step"] = memo(call.metadata, NS, f"{calls.get(id(call), 'tool_call')}.metadata").get("step", i + 1)
        used.append(entry)
    if isinstance(raw, dict):
        # The agentic object read is given back while its tools still say what the calls say;
        # otherwise (the calls changed, or the kept list is not one of tools) it is written anew.
        old = raw.get("tools_used") or []
        old = old if isinstance(old, list) else [old]
        kept = [(t.get("tool_name"), t.get("parameters") or {}) for t in old if isinstance(t, dict)]
        if len(kept) == len(old) and kept == [(u["tool_name"], u["parameters"]) for u in used]:
            return raw
        return {**raw, "tools_used": used}
    return {"tools_used": used} if used else raw

"""``mlflow-trace``: MLflow trace JSON (``{"info": ..., "data": {"spans": [...]}}``, v2 or v3), and
MLflow's on-disk trace artifact ``traces.json`` (``{"spans": [...]}`` or a list of spans, no ``info``).

Spans become a conversation: the root span's inputs are the request and its outputs the
response (chat messages, ``{query, history}``, a ``ResponsesAgent`` request and Responses
object, ...; see ``_mlflow_wire``); tool calls come from the last chat-model span's messages
(MLflow's ``{"messages": [...]}``, OpenInference's ``llm.input_messages.*``, the GenAI
conventions' ``gen_ai.prompt.*`` / ``gen_ai.input.messages``), else from TOOL spans; the last
top-level RETRIEVER span gives the retrieved context. A span with status ERROR and its
``exception`` event become ``metadata["error"]`` (``type``, ``message``, ``span``). MLflow 3
assessments on the trace (``info.assessments``: feedback with a name and a value) are its scores
(``Session.scores``; see ``_scores``). The whole trace is kept.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalcore.errors import RecordError
from evalcore.formats import _otel_spans as otel
from evalcore.formats._chat import chat_messages_in
from evalcore.formats._mlflow_wire import chat_list, request_in, response_in, tool_call
from evalcore.formats._records import build_session, expect_dict, expect_list
from evalcore.formats._scores import assessment_scores
from evalcore.formats.base import Format, Reader, register
from evalcore.formats.jsonio import loads
from evalcore.schema import Session

__all__ = ["session_fields_from_trace"]

Messages = list[dict[str, Any]]


@register
class MlflowTraceFormat(Format):
    """One MLflow trace a line (or one pretty-printed trace document), or the spans of one."""

    name = "mlflow-trace"
    description = "MLflow trace JSON and traces.json span lists (spans to messages, tool calls, context, error)"
    priority = 20

    def sniff(self, value: Any) -> bool:
        if isinstance(value, dict) and isinstance(value.get("info"), dict) and isinstance(value.get("data"), dict):
            return "spans" in value["data"]
        if isinstance(value, dict) and isinstance(value.get("spans"), list):
            return bool(value["spans"]) and is_span(value["spans"][0])  # traces.json
        if isinstance(value, list):
            return bool(value) and is_span(value[0])
        return is_span(value)

    def parse(self, value: Any) -> Session:
        if isinstance(value, list) or is_span(value):
            spans = value if isinstance(value, list) else [value]
            trace: dict[str, Any] = {"spans": spans}
        else:
            trace = expect_dict(value, "record")
        data = session_fields_from_trace(trace)
        data["trace"] = value
        return build_session(data)

    def reader(self) -> Reader:
        return _SpansReader(self.parse)


def is_span(value: Any) -> bool:
    """Whether ``value`` is one span of MLflow's span JSON (v3: ``span_id``; v2: ``context.span_id``)."""
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return False
    context = value.get("context")
    has_id = "span_id" in value or (isinstance(context, dict) and "span_id" in context)
    return has_id and ("attributes" in value or "parent_span_id" in value or "parent_id" in value)


class _SpansReader(Reader):
    """Reads a file of spans (one a line, or one JSON array of them) as one trace per trace id."""

    def __init__(self, parse: Callable[[Any], Session]) -> None:
        super().__init__(parse)
        self._spans: list[tuple[int, Any]] = []

    def feed(self, value: Any, line: int) -> list[tuple[int, Session]]:
        if is_span(value):
            self._spans.append((line, value))
            return []
        parsed = self._parse(value)  # raises before the held spans are touched
        return [*self.close(), (line, parsed)]

    def close(self) -> list[tuple[int, Session]]:
        groups: dict[Any, list[tuple[int, Any]]] = {}
        for line, span in self._spans:
            groups.setdefault(_trace_id_of(span), []).append((line, span))
        self._spans = []
        done = []
        for group in groups.values():
            try:
                done.append((group[0][0], self._parse([span for _, span in group])))
            except RecordError as exc:  # reported on the first span's line; the other traces go on
                self.failures.append((group[0][0], exc))
        return done


def _trace_id_of(span: dict[str, Any]) -> Any:
    context = span.get("context")
    found = span.get("trace_id") or (context.get("trace_id") if isinstance(context, dict) else None)
    return found if isinstance(found, str | int) else None


def _decoded(attributes: dict[str, Any], key: str) -> Any:
    raw = attributes.get(key)
    if isinstance(raw, str):
        try:
            return loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


@dataclass
class _Span:
    """One span, its MLflow attributes decoded once."""

    raw: dict[str, Any]
    attributes: dict[str, Any]
    id: Any
    parent: Any
    name: str
    start: int
    kind: str | None
    inputs: Any
    outputs: Any


def _span(raw: dict[str, Any]) -> _Span:
    attributes = raw.get("attributes")
    attributes = attributes if isinstance(attributes, dict) else {}
    kind = _decoded(attributes, "mlflow.spanType")
    if not isinstance(kind, str) or kind == "UNKNOWN":
        kind = otel.span_kind(attributes)
    inputs = _decoded(attributes, "mlflow.spanInputs") if "mlflow.spanInputs" in attributes else None
    outputs = _decoded(attributes, "mlflow.spanOutputs") if "mlflow.spanOutputs" in attributes else None
    return _Span(
        raw=raw,
        attributes=attributes,
        id=_span_id(raw),
        parent=_parent_id(raw),
        name=str(raw.get("name")),
        start=_start(raw),
        kind=kind,
        inputs=otel.io_value(attributes, "input") if inputs is None else inputs,
        outputs=otel.io_value(attributes, "output") if outputs is None else outputs,
    )


def _span_id(span: dict[str, Any]) -> Any:
    """The span's id, when it is one (a string or a number): spans are linked by it."""
    context = span.get("context")
    found = span.get("span_id") or (context.get("span_id") if isinstance(context, dict) else None)
    return found if isinstance(found, str | int | float) and not isinstance(found, bool) else None


def _parent_id(span: dict[str, Any]) -> Any:
    """The id of the span's parent: ``None`` for a root; a parent that is not an id links to no span."""
    found = span.get("parent_span_id", span.get("parent_id"))
    if not found:
        return None
    return found if isinstance(found, str | int | float) and not isinstance(found, bool) else "(not a span id)"


def _start(span: dict[str, Any]) -> int:
    value = span.get("start_time_unix_nano", span.get("start_time", 0))
    return int(value) if isinstance(value, int | float | str) and str(value).lstrip("-").isdigit() else 0


def _spans(trace: dict[str, Any]) -> list[_Span]:
    if "data" not in trace and "spans" in trace:  # traces.json: the spans alone
        raw, field = trace["spans"], "spans"
    else:
        raw, field = expect_dict(trace.get("data") or {}, "data").get("spans"), "data.spans"
    spans = [_span(expect_dict(s, f"{field}[{i}]")) for i, s in enumerate(expect_list(raw, field))]
    spans.sort(key=lambda s: s.start)
    return spans


def session_fields_from_trace(trace: dict[str, Any], *, messages: bool = True) -> dict[str, Any]:
    """Canonical session fields (messages, retrieved context, ids, usage, error, scores) derived from a trace.

    ``messages=False`` leaves the conversation out (a reader that has it from elsewhere).
    """
    info = expect_dict(trace.get("info") or {}, "info")
    spans = _spans(trace)
    roots = [s for s in spans if not s.parent]
    if not roots:
        raise RecordError("no root span (a span whose parent is null)", "data.spans" if "data" in trace else "spans")
    data: dict[str, Any] = {}
    request_id = otel.text(roots[0].attributes.get("mlflow.traceRequestId"))  # spans alone: MLflow's id is here
    trace_id = info.get("trace_id") or info.get("request_id") or request_id or _trace_id_of(roots[0].raw)
    if trace_id is not None:
        data["session_id"] = str(trace_id)
    tags = info.get("tags")
    if isinstance(tags, dict):
        data["tags"] = [
            k if v in ("true", True) else f"{k}={v}" for k, v in tags.items() if not k.startswith("mlflow.")
        ]
    if messages:
        data["messages"] = _messages(roots[0], spans)
    context = _retrieved(spans)
    if context is not None:
        data["retrieved_context"] = context
    meta = _trace_meta(info, spans)
    if meta:
        data["metadata"] = meta
    scores = assessment_scores(info.get("assessments"))
    if scores:
        data["scores"] = scores
    return data


def _trace_meta(info: dict[str, Any], spans: list[_Span]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    duration = info.get("execution_duration_ms", info.get("execution_time_ms"))
    if isinstance(duration, int | float):
        meta["latency_ms"] = duration
    usage = _usage(spans)
    if usage:
        meta["usage"] = usage
    trace_meta = info.get("trace_metadata") or info.get("request_metadata") or {}
    if isinstance(trace_meta, dict) and isinstance(trace_meta.get("mlflow.trace.session"), str):
        meta["conversation_id"] = trace_meta["mlflow.trace.session"]
    models = [m for s in spans if isinstance(m := _decoded(s.attributes, "mlflow.llm.model"), str)]
    models = models or [m for s in spans if (m := otel.model_name(s.attributes)) is not None]
    if models:
        meta["model"] = models[-1]
    error = _error(spans)
    if error:
        meta["error"] = error
    return meta


def _messages(root: _Span, spans: list[_Span]) -> Messages:
    response = _response(root.outputs)
    if _has_calls(response):  # the response holds the whole exchange (a ResponsesAgent's or ChatAgent's)
        return _request(root) + response
    chat = _last_chat(spans)
    if chat is not None:
        span, before, after = chat
        if _has_calls(before) or root.inputs is None:
            answer = after if span is root or root.outputs is None else response
            return before + (answer or _response(span.outputs))
    messages = _request(root)
    for span in spans:
        if span.kind == "TOOL":
            messages += _tool_span(span)
    return messages + response


def _has_calls(messages: Messages) -> bool:
    return any(m.get("tool_calls") or m.get("role") == "tool" for m in messages)


def _request(root: _Span) -> Messages:
    return [] if root.inputs is None else request_in(root.inputs, "spanInputs")[0]


def _response(outputs: Any) -> Messages:
    return [] if outputs is None else response_in(outputs, "spanOutputs")[0]


def _tool_span(span: _Span) -> Messages:
    call_id = str(otel.tool_call_id(span.attributes) or span.id)
    name = otel.tool_name(span.attributes) or span.name
    result = span.outputs  # none when the tool failed (the error says why)
    text = result if isinstance(result, str) or result is None else json.dumps(result, ensure_ascii=False)
    return [
        {"role": "assistant", "tool_calls": [tool_call(call_id, name, span.inputs)]},
        {"role": "tool", "tool_call_id": call_id, "name": name, "content": text},
    ]


def _last_chat(spans: list[_Span]) -> tuple[_Span, Messages, Messages] | None:
    """The last chat-model span that shows its messages (it saw the whole conversation): the span,
    the messages it was given, and the ones it gave."""
    for span in reversed(spans):
        if span.kind not in ("CHAT_MODEL", "LLM"):
            continue
        before = _chat_input(span)
        if before:
            return span, before, _chat_output(span)
    return None


def _chat_input(span: _Span) -> Messages | None:
    attributes = span.attributes
    found = otel.flat_messages(attributes, "llm.input_messages") or otel.flat_messages(attributes, "gen_ai.prompt")
    found = found or otel.parts_messages(attributes.get("gen_ai.input.messages"))
    found = found or otel.parts_messages(attributes.get("gen_ai.prompt"))
    if found:
        return found
    messages = chat_list(span.inputs)
    if messages is not None and all(isinstance(m, dict) and "parts" not in m for m in messages):
        return chat_messages_in(messages, "spanInputs.messages")
    return None


def _chat_output(span: _Span) -> Messages:
    attributes = span.attributes
    found = otel.flat_messages(attributes, "llm.output_messages") or otel.flat_messages(attributes, "gen_ai.completion")
    found = found or otel.parts_messages(attributes.get("gen_ai.output.messages"))
    if found:
        return found
    completion = _decoded(attributes, "gen_ai.completion")
    if isinstance(completion, dict) and isinstance(completion.get("text"), str):
        return [{"role": "assistant", "content": completion["text"]}]
    return []


_ERROR_CODES = ("STATUS_CODE_ERROR", "ERROR", 2)


def _error(spans: list[_Span]) -> dict[str, Any] | None:
    """Where the trace failed: the last span (by start) with status ERROR, with its exception event."""
    failed = [s for s in spans if _status(s.raw)[0] in _ERROR_CODES]
    if not failed:
        return None
    span = failed[-1]
    error: dict[str, Any] = {"type": None, "message": _status(span.raw)[1] or None, "span": span.name}
    events = span.raw.get("events")
    for event in events if isinstance(events, list) else []:
        attributes = event.get("attributes") if isinstance(event, dict) else None
        if isinstance(attributes, dict) and event.get("name") == "exception":
            error["type"] = otel.text(attributes.get("exception.type")) or error["type"]
            error["message"] = otel.text(attributes.get("exception.message")) or error["message"]
    return {k: v if isinstance(v, str) or v is None else str(v) for k, v in error.items()}


def _status(span: dict[str, Any]) -> tuple[Any, Any]:
    status = span.get("status")
    if isinstance(status, dict):  # v3 (OpenTelemetry)
        return status.get("code"), status.get("message")
    return span.get("status_code", status), span.get("status_message")  # v2


def _retrieved(spans: list[_Span]) -> list[dict[str, Any]] | None:
    by_id = {s.id: s for s in spans}
    top: list[_Span] = []
    for span in spans:
        if span.kind != "RETRIEVER":
            continue
        parent, nested, seen = (by_id.get(span.parent) if span.parent else None), False, {id(span)}
        while parent is not None and id(parent) not in seen:  # a cycle in the span tree ends the walk
            seen.add(id(parent))
            if parent.kind == "RETRIEVER":
                nested = True
                break
            parent = by_id.get(parent.parent) if parent.parent else None
        if not nested:
            top.append(span)
    if not top:
        return None
    documents = top[-1].outputs
    chunks = []
    for doc in documents if isinstance(documents, list) else []:
        if isinstance(doc, dict):
            meta = doc.get("metadata")
            chunks.append({"content": doc.get("page_content"),
                           "doc_uri": meta.get("doc_uri") if isinstance(meta, dict) else None})  # fmt: skip
    return chunks


def _usage(spans: list[_Span]) -> dict[str, int]:
    total: dict[str, int] = {}
    for span in spans:
        usage = _decoded(span.attributes, "mlflow.chat.tokenUsage")
        counts = usage if isinstance(usage, dict) else otel.usage(span.attributes)
        for key in ("input_tokens", "output_tokens", "total_tokens"):
            if isinstance(counts.get(key), int):
                total[key] = total.get(key, 0) + counts[key]
    return total

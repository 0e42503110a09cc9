"""``mlflow-trace``: MLflow trace JSON (``{"info": ..., "data": {"spans": [...]}}``, v2 or v3).

Spans become a conversation: the root span's inputs are the request and its outputs the
response; tool calls come from chat-model spans' messages, else from TOOL spans; the last
top-level RETRIEVER span gives the retrieved context. The whole trace is kept.
"""

from __future__ import annotations

import json
from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._chat import chat_message_in, chat_messages_in
from evalcore.formats._records import build_session, expect_dict, expect_list
from evalcore.formats.base import Format, register
from evalcore.formats.jsonio import loads
from evalcore.schema import Session

__all__ = ["session_fields_from_trace"]


@register
class MlflowTraceFormat(Format):
    """One MLflow trace a line (or one pretty-printed trace document)."""

    name = "mlflow-trace"
    description = "MLflow trace JSON (spans to request, response, tool calls, retrieved context)"
    priority = 20

    def sniff(self, value: Any) -> bool:
        return (
            isinstance(value, dict)
            and isinstance(value.get("info"), dict)
            and isinstance(value.get("data"), dict)
            and "spans" in value["data"]
        )

    def parse(self, value: Any) -> Session:
        trace = expect_dict(value, "record")
        data = session_fields_from_trace(trace)
        data["trace"] = trace
        return build_session(data)


def _attr(span: dict[str, Any], key: str) -> Any:
    attributes = span.get("attributes")
    raw = attributes.get(key) if isinstance(attributes, dict) else None
    if isinstance(raw, str):
        try:
            return loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


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


def session_fields_from_trace(trace: dict[str, Any]) -> dict[str, Any]:
    """Canonical session fields (messages, retrieved context, ids, usage) derived from a trace."""
    info = expect_dict(trace.get("info", {}), "info")
    data_field = expect_dict(trace.get("data") or {}, "data")
    spans = [
        expect_dict(s, f"data.spans[{i}]") for i, s in enumerate(expect_list(data_field.get("spans"), "data.spans"))
    ]
    spans.sort(key=_start)
    roots = [s for s in spans if not _parent_id(s)]
    if not roots:
        raise RecordError("no root span (a span whose parent is null)", "data.spans")
    root = roots[0]
    data: dict[str, Any] = {}
    trace_id = info.get("trace_id") or info.get("request_id")
    if trace_id is not None:
        data["session_id"] = str(trace_id)
    tags = info.get("tags")
    if isinstance(tags, dict):
        data["tags"] = [
            k if v in ("true", True) else f"{k}={v}" for k, v in tags.items() if not k.startswith("mlflow.")
        ]
    data["messages"] = _messages(root, spans)
    context = _retrieved(spans)
    if context is not None:
        data["retrieved_context"] = context
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
    models = [m for s in spans if isinstance(m := _attr(s, "mlflow.llm.model"), str)]
    if models:
        meta["model"] = models[-1]
    if meta:
        data["metadata"] = meta
    return data


def _messages(root: dict[str, Any], spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    request = _attr(root, "mlflow.spanInputs")
    response = _attr(root, "mlflow.spanOutputs")
    chat = [s for s in spans if _attr(s, "mlflow.spanType") in ("CHAT_MODEL", "LLM")]
    for span in reversed(chat):  # the last chat call saw the whole conversation
        inputs = _attr(span, "mlflow.spanInputs")
        if (
            isinstance(inputs, dict)
            and isinstance(inputs.get("messages"), list)
            and any(isinstance(m, dict) and m.get("tool_calls") for m in inputs["messages"])
        ):
            messages = chat_messages_in(inputs["messages"], "spanInputs.messages")
            return messages + _response_messages(response)
    messages = _request_messages(request)
    for span in spans:
        if _attr(span, "mlflow.spanType") != "TOOL":
            continue
        call_id = str(_span_id(span))
        args = _attr(span, "mlflow.spanInputs")
        result = _attr(span, "mlflow.spanOutputs")
        messages.append(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": call_id,
                        "name": str(span.get("name")),
                        "args": args if isinstance(args, dict) else {"input": args},
                    }
                ],
            }
        )
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        messages.append({"role": "tool", "tool_call_id": call_id, "name": str(span.get("name")), "content": text})
    return messages + _response_messages(response)


def _request_messages(request: Any) -> list[dict[str, Any]]:
    if request is None:
        return []
    if isinstance(request, str):
        return [{"role": "user", "content": request}]
    if isinstance(request, dict) and isinstance(request.get("messages"), list):
        return chat_messages_in(request["messages"], "spanInputs.messages")
    if isinstance(request, dict) and isinstance(request.get("query"), str):
        history = chat_messages_in(request.get("history") or [], "spanInputs.history")
        return [*history, {"role": "user", "content": request["query"]}]
    if isinstance(request, dict) and len(request) == 1 and isinstance(next(iter(request.values())), str):
        return [{"role": "user", "content": next(iter(request.values()))}]
    return [{"role": "user", "content": json.dumps(request, ensure_ascii=False)}]


def _response_messages(response: Any) -> list[dict[str, Any]]:
    if response is None:
        return []
    if isinstance(response, str):
        return [{"role": "assistant", "content": response}]
    if isinstance(response, dict):
        choices = response.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            return [chat_message_in(choices[0].get("message"), "spanOutputs.choices[0].message")]
        if isinstance(response.get("messages"), list) and response["messages"]:
            # A ChatAgent response: every message, tool calls included (the third source of calls).
            return chat_messages_in(response["messages"], "spanOutputs.messages")
        if isinstance(response.get("content"), str):
            return [{"role": "assistant", "content": response["content"]}]
    if isinstance(response, list) and response:
        return _response_messages(response[0])
    return [{"role": "assistant", "content": json.dumps(response, ensure_ascii=False)}]


def _retrieved(spans: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    by_id = {_span_id(s): s for s in spans}
    top: list[dict[str, Any]] = []
    for span in spans:
        if _attr(span, "mlflow.spanType") != "RETRIEVER":
            continue
        parent_id = _parent_id(span)
        parent, nested, seen = (by_id.get(parent_id) if parent_id else None), False, {id(span)}
        while parent is not None and id(parent) not in seen:  # a cycle in the span tree ends the walk
            seen.add(id(parent))
            if _attr(parent, "mlflow.spanType") == "RETRIEVER":
                nested = True
                break
            parent_id = _parent_id(parent)
            parent = by_id.get(parent_id) if parent_id else None
        if not nested:
            top.append(span)
    if not top:
        return None
    documents = _attr(top[-1], "mlflow.spanOutputs")
    chunks = []
    for doc in documents if isinstance(documents, list) else []:
        if isinstance(doc, dict):
            meta = doc.get("metadata")
            chunks.append({"content": doc.get("page_content"),
                           "doc_uri": meta.get("doc_uri") if isinstance(meta, dict) else None})  # fmt: skip
    return chunks


def _usage(spans: list[dict[str, Any]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for span in spans:
        usage = _attr(span, "mlflow.chat.tokenUsage")
        if isinstance(usage, dict):
            for key in ("input_tokens", "output_tokens", "total_tokens"):
                if isinstance(usage.get(key), int):
                    total[key] = total.get(key, 0) + usage[key]
    return total

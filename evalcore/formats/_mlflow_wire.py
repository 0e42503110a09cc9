"""The request and response shapes of MLflow and Databricks, each decoded in one place.

Evaluation rows (``request`` / ``response``, ``inputs`` / ``outputs``) and the root spans of
MLflow traces (``mlflow.spanInputs`` / ``mlflow.spanOutputs``) carry the same shapes: a string,
chat messages (a bare list or ``{"messages": [...]}``), ``{query, history}``, a one-key object,
a chat completion (``choices``), a ``ResponsesAgent`` request (``{"input": [items]}``, or as MLflow 3 traces
``ResponsesAgent.predict``: the argument by name, ``{"request": {"input": [items], ...}}``) or
response (``{"output": [items]}``), or anything else (kept as JSON text). :func:`request_in` and
:func:`response_in` read them into canonical message dicts, with the *form* they had, so that a
writer can give a value back in the shape it came in.
"""

from __future__ import annotations

import json
from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._chat import chat_message_in, chat_messages_in
from evalcore.formats._records import expect_str, load_args, wrapped_list
from evalcore.formats.open_responses import ITEM_TYPES
from evalcore.formats.open_responses import _items_in as _responses_items_in

__all__ = ["call_args", "chat_list", "request_in", "response_in", "responses_items_in", "tool_call"]

Messages = list[dict[str, Any]]
Form = dict[str, Any]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def chat_list(value: Any) -> list[Any] | None:
    """The chat messages ``value`` holds, as given: a bare list of messages (objects with a
    ``role``) or ``{"messages": [...]}``; ``None`` when it holds none."""
    messages = wrapped_list(value)
    if messages is None or isinstance(value, dict) or all(isinstance(m, dict) and "role" in m for m in messages):
        return messages
    return None


def _items(value: Any, key: str) -> list[Any] | None:
    """The Responses items of ``{"input": [...]}`` / ``{"output": [...]}`` (``ResponsesAgent``)."""
    items = value.get(key) if isinstance(value, dict) else None
    if not isinstance(items, list) or not items:
        return None
    first = items[0]
    if not isinstance(first, dict):
        return None
    kind = first.get("type")
    return items if (isinstance(kind, str) and kind in ITEM_TYPES) or "role" in first else None


def responses_items_in(items: list[Any], field: str) -> Messages:
    """Canonical messages from Responses items (calls and results linked by ``call_id``), read by
    the ``open-responses`` format's reader; problems are named from ``field``."""
    try:
        messages, trailing = _responses_items_in(items)
    except RecordError as exc:
        where = exc.field or ""
        raise RecordError(exc.reason, field + where.removeprefix("items")) from exc
    if trailing and messages:  # items it does not model, after the last message: kept with it
        messages[-1].setdefault("metadata", {}).setdefault("open_responses", {})["after"] = trailing
    return messages


def call_args(value: Any) -> dict[str, Any]:
    """A tool's arguments as an object: an object as given, JSON text of one parsed, anything
    else as ``{"input": value}``."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        parsed, raw = load_args(value, "arguments")
        if raw is None or parsed:
            return parsed
    return {} if value is None else {"input": value}


def tool_call(call_id: Any, name: Any, args: Any) -> dict[str, Any]:
    """A canonical tool call (``id`` only when there is one)."""
    call: dict[str, Any] = {"name": str(name), "args": call_args(args)}
    if call_id is not None:
        call["id"] = str(call_id)
    return call


def request_in(request: Any, field: str) -> tuple[Messages, Form]:
    """The messages a request holds, and the form it had."""
    if isinstance(request, str):
        return [{"role": "user", "content": request}], {"form": "string"}
    found = _request_object(request, field) if isinstance(request, dict) else None
    if found is not None:
        return found
    messages = chat_list(request)
    if messages is not None:  # a bare list of chat messages
        return chat_messages_in(messages, field), {"form": "raw", "raw": request}
    return [{"role": "user", "content": _dumps(request)}], {"form": "raw", "raw": request}


def _request_object(request: dict[str, Any], field: str, depth: int = 0) -> tuple[Messages, Form] | None:
    if "messages" in request:
        extras = {k: v for k, v in request.items() if k != "messages"}
        return chat_messages_in(request["messages"], f"{field}.messages"), {"form": "messages", "extra": extras}
    if "query" in request:
        query = expect_str(request["query"], f"{field}.query")
        history = chat_messages_in(request.get("history") or [], f"{field}.history")
        extras = {k: v for k, v in request.items() if k not in ("query", "history")}
        return [*history, {"role": "user", "content": query}], {
            "form": "query", "extra": extras, "history": "history" in request}  # fmt: skip
    items = _items(request, "input")
    if items is not None:  # a ResponsesAgent request
        return responses_items_in(items, f"{field}.input"), {"form": "raw", "raw": request}
    if len(request) == 1 and isinstance(next(iter(request.values())), str):
        key, text = next(iter(request.items()))
        return [{"role": "user", "content": text}], {"form": "key", "key": key}
    if len(request) == 1 and depth < 8:  # the arguments of a traced function: ``{"request": {"input": [...]}}``
        key, inner = next(iter(request.items()))
        found = _request_object(inner, f"{field}.{key}", depth + 1) if isinstance(inner, dict) else None
        if found is not None and found[1].get("form") != "key":  # a request inside: given back as it came
            return found[0], {"form": "raw", "raw": request}
    return None


def response_in(response: Any, field: str) -> tuple[Messages, Form]:
    """The messages a response holds, and the form it had (``string``, or ``raw``: kept as it came)."""
    if isinstance(response, str):
        return [{"role": "assistant", "content": response}], {"form": "string"}
    return _response_messages(response, field, 0), {"form": "raw", "raw": response}


def _response_messages(response: Any, field: str, depth: int) -> Messages:
    if isinstance(response, str):
        return [{"role": "assistant", "content": response}]
    if isinstance(response, dict):
        found = _response_object(response, field, depth)
        if found is not None:
            return found
    if isinstance(response, list) and response and depth < 8:  # Databricks reads the first element
        messages = chat_list(response)
        if messages is not None:
            return chat_messages_in(messages, field)
        return _response_messages(response[0], f"{field}[0]", depth + 1)
    return [{"role": "assistant", "content": _dumps(response)}]


def _response_object(response: dict[str, Any], field: str, depth: int) -> Messages | None:
    choices = response.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return [chat_message_in(choices[0].get("message"), f"{field}.choices[0].message")]
    messages = chat_list(response)
    if messages is not None:  # a ChatAgent response: every message, tool calls included
        return chat_messages_in(messages, f"{field}.messages")
    items = _items(response, "output")
    if items is not None:  # a Responses object (ResponsesAgent)
        return responses_items_in(items, f"{field}.output")
    if isinstance(response.get("content"), str):
        return [{"role": "assistant", "content": response["content"]}]
    if len(response) == 1 and depth < 8:  # {"output": "..."}, {"response": {...}}: unwrapped like inputs
        key, inner = next(iter(response.items()))
        if isinstance(inner, str | dict) or (isinstance(inner, list) and inner):
            return _response_messages(inner, f"{field}.{key}", depth + 1)
    return None

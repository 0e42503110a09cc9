"""``langchain``: LangChain / LangGraph messages as ``messages_to_dict`` or ``model_dump`` write them.

Tool calls are read from ``tool_calls`` first, then ``additional_kwargs.tool_calls``
(OpenAI wire form), then ``tool_use`` content blocks, so Anthropic-style messages keep
their calls (ragas' own converter loses them). Content-block lists are kept as blocks;
their text is what metrics read. System messages are kept.
"""

from __future__ import annotations

from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._records import build_session, expect_dict, expect_list, load_args, named_call_in, wrapped_list
from evalcore.formats.base import Format, register
from evalcore.schema import Session

_TYPES = {
    "human": "user",
    "HumanMessageChunk": "user",
    "ai": "assistant",
    "AIMessageChunk": "assistant",
    "system": "system",
    "SystemMessageChunk": "system",
    "tool": "tool",
    "ToolMessageChunk": "tool",
    "function": "tool",
    "FunctionMessageChunk": "tool",
}
_CHAT_ROLES = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
}
_HANDLED = {"content", "type", "tool_calls", "tool_call_id", "name", "role"}


_message_dicts = wrapped_list


def is_langchain_message(m: Any) -> bool:
    """Whether ``m`` is one LangChain message as ``messages_to_dict`` or ``model_dump`` writes it
    (``{type, content}`` at least, with a LangChain type and no ``role``)."""
    return _is_lc_message(m)


def _is_lc_message(m: Any) -> bool:
    if not isinstance(m, dict):
        return False
    if isinstance(m.get("data"), dict) and "type" in m:
        return True  # messages_to_dict
    kind = m.get("type")
    return isinstance(kind, str) and kind in _TYPES and "content" in m and "role" not in m  # model_dump


@register
class LangChainFormat(Format):
    """A LangChain conversation: a message list, or ``{"messages": [...], ...}``."""

    name = "langchain"
    description = "LangChain / LangGraph messages (messages_to_dict and model_dump dicts)"
    priority = 60

    def sniff(self, value: Any) -> bool:
        messages = _message_dicts(value)
        return messages is not None and _is_lc_message(messages[0])

    def parse(self, value: Any) -> Session:
        if isinstance(value, list):
            value = {"messages": value}
        row = expect_dict(value, "record")
        items = expect_list(row.get("messages"), "messages")
        data: dict[str, Any] = {"messages": [_message_in(m, f"messages[{i}]") for i, m in enumerate(items)]}
        extras = {k: v for k, v in row.items() if k != "messages"}
        if extras:
            data["metadata"] = {"langchain": extras}
        return build_session(data)


def _message_in(value: Any, field: str) -> dict[str, Any]:
    m = expect_dict(value, field)
    kind = m.get("type")
    kind = kind if isinstance(kind, str) else None
    if isinstance(m.get("data"), dict):
        m, field = m["data"], f"{field}.data"
        kind = m.get("type", kind)
    if kind == "chat" or kind == "ChatMessageChunk":
        role = _CHAT_ROLES.get(str(m.get("role")))
    else:
        role = _TYPES.get(str(kind))
    if role is None:
        raise RecordError(f"unsupported message type {kind!r}", f"{field}.type")
    content = m.get("content", "")
    if not isinstance(content, str | list):
        raise RecordError("expected a string or a list of content blocks", f"{field}.content")
    out: dict[str, Any] = {"role": role, "content": content}
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    thinking = [b.get("thinking") or b.get("text") for b in blocks if b.get("type") in ("thinking", "reasoning")]
    if thinking:
        out["reasoning"] = "\n".join(t for t in thinking if isinstance(t, str))
    if role == "assistant":
        out["tool_calls"] = _tool_calls(m, blocks, field)
    if m.get("name") is not None:
        out["name"] = m["name"]
    if m.get("tool_call_id") is not None:
        out["tool_call_id"] = m["tool_call_id"]
    out["metadata"] = _metadata(m)
    return out


def _tool_calls(m: dict[str, Any], blocks: list[dict[str, Any]], field: str) -> list[dict[str, Any]]:
    calls = m.get("tool_calls")
    if calls:
        out = []
        for i, c in enumerate(expect_list(calls, f"{field}.tool_calls")):
            out.append(named_call_in(c, f"{field}.tool_calls[{i}]")[0])
        return out
    kwargs = m.get("additional_kwargs")
    wire = kwargs.get("tool_calls") if isinstance(kwargs, dict) else None
    if wire:
        out = []
        for i, c in enumerate(expect_list(wire, f"{field}.additional_kwargs.tool_calls")):
            where = f"{field}.additional_kwargs.tool_calls[{i}]"
            function = expect_dict(expect_dict(c, where).get("function"), f"{where}.function")
            args, raw = load_args(function.get("arguments"), f"{where}.function.arguments")
            call: dict[str, Any] = {"id": c.get("id"), "name": str(function.get("name")), "args": args}
            if raw is not None:
                call["metadata"] = {"arguments": raw}
            out.append(call)
        return out
    return [
        {"id": b.get("id"), "name": str(b.get("name")), "args": b.get("input") or {}}
        for b in blocks
        if b.get("type") == "tool_use"
    ]


def _metadata(m: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    response = m.get("response_metadata")
    response = response if isinstance(response, dict) else {}
    model = response.get("model_name") or response.get("model")
    if isinstance(model, str):
        meta["model"] = model
    usage = m.get("usage_metadata")
    if isinstance(usage, dict):
        meta["usage"] = {k: usage[k] for k in ("input_tokens", "output_tokens", "total_tokens") if k in usage}
    kept = {k: v for k, v in m.items() if k not in _HANDLED and v not in (None, {}, [])}
    if kept:
        meta["langchain"] = kept
    return meta

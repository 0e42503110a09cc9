"""OpenAI chat-completions messages, shared by the openai, swarm, databricks, tau-bench
and mlflow-trace formats.

What the canonical model has no field for is kept under ``metadata["openai"]`` and put
back by :func:`chat_message_out`, so a message read from and written to this shape is
unchanged.

Legacy function calling (an assistant's ``function_call``, results in role ``function``) is
read as tool calls: the call and its result get an id made up here (``legacy-call-N``) that
links them, marked ``synthetic_id`` so that the writer gives back the legacy form, without ids.
"""

from __future__ import annotations

from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._blocks import image_url_of, is_text_block
from evalcore.formats._records import dump_args, expect_dict, expect_list, expect_str, load_args, memo
from evalcore.schema import Message

__all__ = [
    "OPENAI_PART_TYPES",
    "chat_message_in",
    "chat_message_out",
    "chat_messages_in",
    "link_legacy_calls",
    "message_names",
]

NS = "openai"
_ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "function": "tool",
}
_KNOWN = {"role", "content", "name", "tool_calls", "tool_call_id", "reasoning_content"}
#: Made-up ids of legacy function calls start with this.
LEGACY_ID = "legacy-call-"
#: Content-part types the chat-completions API accepts.
OPENAI_PART_TYPES = {"text", "image_url", "input_audio", "file", "refusal"}


def message_names(messages: list[Message]) -> dict[int, str]:
    """Each message's name in problems (``messages[i]``), by ``id()`` (writers work on lists that
    may hold a message made up for the session's context, which has none)."""
    return {id(m): f"messages[{i}]" for i, m in enumerate(messages)}


def chat_messages_in(value: Any, field: str) -> list[dict[str, Any]]:
    """Canonical message dicts from a list of chat messages at ``field``."""
    items = expect_list(value, field)
    return link_legacy_calls([chat_message_in(m, f"{field}[{i}]") for i, m in enumerate(items)])


def link_legacy_calls(messages: list[dict[str, Any]], ns: str = NS) -> list[dict[str, Any]]:
    """Give legacy function calls (read by :func:`chat_message_in`) and their results linking ids.

    A result (role ``function``, no ``tool_call_id``) answers the latest call of its name still
    unanswered (or the latest unanswered, when it has no name). Both ids are marked
    ``synthetic_id`` so that writers leave them out. ``messages`` is changed in place and returned.
    """
    waiting: list[dict[str, Any]] = []
    made = 0
    for message in messages:
        for call in message.get("tool_calls") or []:
            kept = call.get("metadata", {}).get(ns, {})
            if kept.get("legacy") and call.get("id") is None:
                call["id"] = f"{LEGACY_ID}{made}"
                kept["synthetic_id"] = True
                made += 1
                waiting.append(call)
        extras = message.get("metadata", {}).get(ns, {})
        if message["role"] == "tool" and extras.get("role") == "function" and message.get("tool_call_id") is None:
            named = [c for c in waiting if c["name"] == message.get("name")] or waiting
            if named:
                call = named[-1]
                waiting.remove(call)
                message["tool_call_id"] = call["id"]
                extras["synthetic_id"] = True
    return messages


def chat_message_in(value: Any, field: str, *, name_key: str = "name", ns: str = NS) -> dict[str, Any]:
    """One chat message as a canonical message dict (validated later with the session).

    Keys the model has no field for are kept under ``metadata[ns]``; only the ``openai``
    namespace is written back by :func:`chat_message_out`.
    """
    m = expect_dict(value, field)
    role = m.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        if role is None:
            raise RecordError("missing 'role'", f"{field}.role")
        raise RecordError(f"unknown role {role!r}; expected one of {', '.join(_ROLES)}", f"{field}.role")
    extras = {k: v for k, v in m.items() if k not in _KNOWN}
    if role != _ROLES[role]:
        extras["role"] = role
    out: dict[str, Any] = {"role": _ROLES[role], "content": m.get("content")}
    if "content" not in m:
        extras["no_content"] = True  # (an assistant's call often has none): not written back as null
    content = out["content"]
    if content is not None and not isinstance(content, str | list):
        raise RecordError("expected a string, an array of parts or null", f"{field}.content")
    name = m.get(name_key)
    if name is not None:
        out["name"] = name
        extras.pop(name_key, None)
        if name_key != "name":
            extras["name_key"] = name_key
    if m.get("tool_call_id") is not None:
        out["tool_call_id"] = m["tool_call_id"]
    if m.get("reasoning_content") is not None:
        out["reasoning"] = m["reasoning_content"]
    if "tool_calls" in m and m["tool_calls"] is not None:
        calls = expect_list(m["tool_calls"], f"{field}.tool_calls")
        out["tool_calls"] = [_call_in(c, f"{field}.tool_calls[{i}]", ns) for i, c in enumerate(calls)]
    elif "tool_calls" in m:
        extras["tool_calls"] = None  # an explicit null, as Swarm writes
    if isinstance(m.get("function_call"), dict):  # legacy function calling
        extras.pop("function_call")
        legacy = _call_in({"function": m["function_call"]}, f"{field}.function_call", ns, path="")
        legacy["metadata"][ns]["legacy"] = True
        out["tool_calls"] = [*out.get("tool_calls", []), legacy]
    if extras:
        out["metadata"] = {ns: extras}
    return out


def _call_in(value: Any, field: str, ns: str, path: str = ".function") -> dict[str, Any]:
    c = expect_dict(value, field)
    function = expect_dict(c.get("function"), f"{field}{path}")
    name = function.get("name")
    if not isinstance(name, str):
        raise RecordError("missing tool name", f"{field}{path}.name")
    args, raw = load_args(function.get("arguments"), f"{field}{path}.arguments")
    extras = {k: v for k, v in c.items() if k not in ("id", "function")}
    extras.update({f"function.{k}": v for k, v in function.items() if k not in ("name", "arguments")})
    if raw is not None:
        extras["arguments"] = raw
    if "arguments" not in function:
        extras["no_arguments"] = True
    call: dict[str, Any] = {"name": name, "args": args, "metadata": {ns: extras}}
    if c.get("id") is not None:
        call["id"] = c["id"]
    return call


def chat_message_out(
    message: Message, ids: tuple[dict[int, str], dict[int, str]] | None = None, where: str = "message"
) -> dict[str, Any]:
    """One canonical message as an OpenAI chat message.

    ``ids`` (from :func:`evalcore.schema.call_ids`) fills in call ids the session lacks,
    which the chat-completions API requires. ``where`` names the message in problems.
    """
    calls_ids, result_ids = ids or ({}, {})
    extras = dict(memo(message.metadata, NS, f"{where}.metadata"))
    out: dict[str, Any] = {"role": extras.pop("role", message.role)}
    content = message.content
    if isinstance(content, list) and not all(_part_type(b) in OPENAI_PART_TYPES for b in content):
        content = _parts_out(content) or message.text  # other formats' images as image_url parts, else the text
    if content is not None or (message.role == "assistant" and not extras.pop("no_content", False)):
        out["content"] = content
    extras.pop("no_content", None)
    if message.name is not None:
        out[expect_str(extras.pop("name_key", "name"), f"{where}.metadata.{NS}.name_key")] = message.name
    if message.reasoning is not None:
        out["reasoning_content"] = message.reasoning
    if message.tool_calls is not None:
        calls = []
        for i, c in enumerate(message.tool_calls):
            kept = memo(c.metadata, NS, f"{where}.tool_calls[{i}].metadata")
            calls.append(_call_out(c.id or calls_ids.get(id(c)), c.name, c.args, kept))
        if len(calls) == 1 and memo(message.tool_calls[0].metadata, NS).get("legacy"):
            out["function_call"] = calls[0]["function"]  # legacy function calling, as it came
        else:
            out["tool_calls"] = calls
    tool_call_id = message.tool_call_id or result_ids.get(id(message))
    if extras.pop("synthetic_id", False):
        tool_call_id = None  # a legacy function result: linked by us, written without an id
    if tool_call_id is not None:
        out["tool_call_id"] = tool_call_id
    extras.pop("name_key", None)
    out.update(extras)
    return out


def carries(block: dict[str, Any]) -> bool:
    """Whether a chat message can carry ``block`` (an OpenAI part, or an image in another format's terms)."""
    return _part_type(block) in OPENAI_PART_TYPES or image_url_of(block) is not None


def _parts_out(content: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Content parts for blocks of other formats when some is an image (text blocks as text parts; what has no
    part is left out, and counted by the conversion); ``None`` when none is, so the text is written alone."""
    urls = [image_url_of(b) for b in content]
    if not any(urls):
        return None
    parts: list[dict[str, Any]] = []
    for block, url in zip(content, urls, strict=True):
        if url is not None:
            parts.append({"type": "image_url", "image_url": {"url": url}})
        elif _part_type(block) in OPENAI_PART_TYPES:
            parts.append(block)
        elif is_text_block(block) and isinstance(block.get("text"), str):
            parts.append({"type": "text", "text": block["text"]})
    return parts


def _part_type(block: dict[str, Any]) -> str | None:
    kind = block.get("type")
    return kind if isinstance(kind, str) else None


def _call_out(call_id: str | None, name: str, args: dict[str, Any], extras: dict[str, Any]) -> dict[str, Any]:
    extras = dict(extras or {"type": "function"})
    extras.pop("legacy", None)
    extras.pop("synthetic_id", None)
    raw = extras.pop("arguments", None)
    function: dict[str, Any] = {"name": name}
    if not (extras.pop("no_arguments", False) and not args):
        function["arguments"] = dump_args(args, raw)
    for key in [k for k in extras if k.startswith("function.")]:
        function[key.removeprefix("function.")] = extras.pop(key)
    out: dict[str, Any] = {}
    if call_id is not None:
        out["id"] = call_id
    out.update(extras)
    out["function"] = function
    return out

"""OpenTelemetry span attributes of LLM apps, as MLflow 3 keeps them: OpenInference
(``input.value``, ``llm.input_messages.N.message.*``, ``tool.name``, ``openinference.span.kind``)
and the GenAI semantic conventions (``gen_ai.prompt.N.*``, ``gen_ai.completion.N.*``,
``gen_ai.input.messages``, ``gen_ai.usage.*``, ``gen_ai.operation.name``).

MLflow stores every attribute as JSON text (``"\\"user\\""``); exporters that write them straight
give the bare value. :func:`text` reads either.
"""

from __future__ import annotations

import json
from typing import Any

from evalcore.formats._mlflow_wire import tool_call
from evalcore.formats.jsonio import loads

__all__ = [
    "flat_messages",
    "io_value",
    "model_name",
    "parts_messages",
    "span_kind",
    "text",
    "tool_call_id",
    "tool_name",
    "usage",
]

Messages = list[dict[str, Any]]

_ROLES = {"system": "system", "developer": "system", "user": "user", "human": "user", "assistant": "assistant",
          "ai": "assistant", "model": "assistant", "tool": "tool", "function": "tool"}  # fmt: skip
# openinference.span.kind and gen_ai.operation.name, as MLflow's span types.
_KINDS = {"LLM": "LLM", "CHAIN": "CHAIN", "AGENT": "AGENT", "TOOL": "TOOL", "RETRIEVER": "RETRIEVER",
          "chat": "CHAT_MODEL", "text_completion": "LLM", "generate_content": "LLM", "execute_tool": "TOOL",
          "invoke_agent": "AGENT", "create_agent": "AGENT"}  # fmt: skip


def text(value: Any) -> Any:
    """An attribute's value: JSON text of a string decoded (MLflow's encoding), anything else as given."""
    if isinstance(value, str) and value.startswith('"'):
        try:
            decoded = loads(value)
        except json.JSONDecodeError:
            return value
        return decoded if isinstance(decoded, str) else value
    return value


def _json(value: Any) -> Any:
    """An attribute holding JSON (``input.value``, ``gen_ai.input.messages``), decoded when it is JSON."""
    value = text(value)
    if isinstance(value, str):
        try:
            return loads(value)
        except json.JSONDecodeError:
            return value
    return value


def span_kind(attributes: dict[str, Any]) -> str | None:
    """The span's kind in MLflow's terms (``LLM``, ``CHAT_MODEL``, ``TOOL``, ...), from OTel attributes."""
    for key in ("openinference.span.kind", "gen_ai.operation.name"):
        kind = text(attributes.get(key))
        if isinstance(kind, str) and kind in _KINDS:
            return _KINDS[kind]
    return None


def io_value(attributes: dict[str, Any], side: str) -> Any:
    """A span's input (``side="input"``) or output, from OpenInference or GenAI attributes."""
    keys: tuple[str, ...] = ("input.value", "tool_call.function.arguments", "gen_ai.tool.call.arguments", "input")
    if side == "output":
        keys = ("output.value", "gen_ai.tool.call.result", "output")
    for key in keys:
        if key in attributes:
            return _json(attributes[key])
    return None


def tool_name(attributes: dict[str, Any]) -> str | None:
    for key in ("tool.name", "tool_call.function.name", "gen_ai.tool.name"):
        name = text(attributes.get(key))
        if isinstance(name, str):
            return name
    return None


def tool_call_id(attributes: dict[str, Any]) -> str | None:
    found = text(attributes.get("tool_call.id", attributes.get("gen_ai.tool.call.id")))
    return found if isinstance(found, str) else None


def model_name(attributes: dict[str, Any]) -> str | None:
    for key in ("llm.model_name", "gen_ai.response.model", "gen_ai.request.model"):
        name = text(attributes.get(key))
        if isinstance(name, str):
            return name
    return None


def _count(value: Any) -> int | None:
    value = text(value)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def usage(attributes: dict[str, Any]) -> dict[str, int]:
    """Token counts (``input_tokens``, ``output_tokens``, ``total_tokens``) from OTel attributes."""
    keys = {"input_tokens": ("gen_ai.usage.input_tokens", "llm.token_count.prompt"),
            "output_tokens": ("gen_ai.usage.output_tokens", "llm.token_count.completion"),
            "total_tokens": ("llm.token_count.total",)}  # fmt: skip
    out: dict[str, int] = {}
    for name, candidates in keys.items():
        for key in candidates:
            count = _count(attributes.get(key))
            if count is not None:
                out[name] = count
                break
    if "total_tokens" not in out and "input_tokens" in out and "output_tokens" in out:
        out["total_tokens"] = out["input_tokens"] + out["output_tokens"]
    return out


def _unflatten(attributes: dict[str, Any], prefix: str) -> dict[str, Any]:
    """``{prefix}.0.message.role: x`` as ``{"0": {"message": {"role": x}}}``."""
    tree: dict[str, Any] = {}
    start = prefix + "."
    for key, value in attributes.items():
        if not key.startswith(start):
            continue
        node = tree
        *path, leaf = key[len(start) :].split(".")
        for part in path:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[leaf] = value
    return tree


def _indexed(tree: dict[str, Any]) -> list[Any]:
    """The values of ``{"0": a, "1": b}`` in the order of their indexes."""
    return [tree[k] for k in sorted((k for k in tree if k.isascii() and k.isdigit()), key=int)]


def flat_messages(attributes: dict[str, Any], prefix: str) -> Messages | None:
    """Messages flattened into attributes: OpenInference's ``llm.input_messages.N.message.*``
    (``prefix="llm.input_messages"``) or the older GenAI ``gen_ai.prompt.N.*``."""
    entries = _indexed(_unflatten(attributes, prefix))
    messages = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        message = entry.get("message", entry)
        if isinstance(message, dict):
            messages.append(_flat_message(message))
    return messages or None


def _flat_message(message: dict[str, Any]) -> dict[str, Any]:
    role = text(message.get("role"))
    out: dict[str, Any] = {"role": _ROLES.get(str(role).lower(), "assistant"), "content": None}
    content = text(message.get("content"))
    if isinstance(content, str):
        out["content"] = content
    elif isinstance(message.get("contents"), dict):
        out["content"] = _flat_contents(message["contents"])
    calls = message.get("tool_calls")
    if isinstance(calls, dict):
        out["tool_calls"] = [_flat_call(c) for c in _indexed(calls) if isinstance(c, dict)]
    call_id = text(message.get("tool_call_id"))
    if isinstance(call_id, str):
        out["tool_call_id"] = call_id
    name = text(message.get("name"))
    if isinstance(name, str):
        out["name"] = name
    return out


def _flat_contents(contents: dict[str, Any]) -> str | list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for entry in _indexed(contents):
        part = entry.get("message_content", entry) if isinstance(entry, dict) else None
        if not isinstance(part, dict):
            continue
        kind = text(part.get("type"))
        if kind == "image" or isinstance(part.get("image"), dict):
            image = part.get("image")
            url = text(image.get("url")) if isinstance(image, dict) else None
            blocks.append({"type": "image_url", "image_url": {"url": url}})
        else:
            blocks.append({"type": "text", "text": str(text(part.get("text")) or "")})
    if all(b["type"] == "text" for b in blocks):
        return "\n".join(b["text"] for b in blocks)
    return blocks


def _flat_call(entry: dict[str, Any]) -> dict[str, Any]:
    call = entry.get("tool_call", entry)
    call = call if isinstance(call, dict) else {}
    function = call.get("function")
    function = function if isinstance(function, dict) else call
    return tool_call(text(call.get("id")), text(function.get("name")), text(function.get("arguments")))


def parts_messages(value: Any) -> Messages | None:
    """Messages of the GenAI conventions' JSON form (``gen_ai.input.messages``): ``role`` and
    ``parts`` (``text``, ``tool_call``, ``tool_call_response``)."""
    value = _json(value)
    if not (isinstance(value, list) and value and all(isinstance(m, dict) and "parts" in m for m in value)):
        return None
    messages: Messages = []
    for entry in value:
        role = _ROLES.get(str(entry.get("role")).lower(), "assistant")
        parts = entry.get("parts") if isinstance(entry.get("parts"), list) else []
        texts, calls = [], []
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "tool_call":
                calls.append(tool_call(part.get("id"), part.get("name"), part.get("arguments")))
            elif kind == "tool_call_response":
                result = part.get("response")
                content = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
                messages.append({"role": "tool", "tool_call_id": part.get("id"), "content": content})
            elif isinstance(part.get("content"), str):
                texts.append(part["content"])
        if texts or calls:
            message: dict[str, Any] = {"role": role, "content": "\n".join(texts) if texts else None}
            if calls:
                message["tool_calls"] = calls
            messages.append(message)
    return messages or None

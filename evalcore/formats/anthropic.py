"""``anthropic``: Anthropic Messages API requests, responses and transcripts.

A record is a request (``{"model", "max_tokens", "system", "messages", "tools", ...}``), a
response (``{"id", "type": "message", "role": "assistant", "content", "stop_reason", "usage",
"model"}``) or a transcript: a list of messages, where an assistant turn may be a whole response.
Content blocks:

* ``text``, ``image``, ``document`` and every other block stay in the message's content as given;
* ``tool_use`` becomes a tool call (``id``, ``name``, ``input`` as its arguments);
* ``tool_result`` becomes a tool message linked by ``tool_call_id``. The tool results of one user
  message come first, then its other blocks as a user message; the writer puts them back together
  as one message, in their order;
* ``thinking`` / ``redacted_thinking`` become the message's ``reasoning`` (signatures kept).

``system`` is a first system message. What the model has no field for (model, usage,
stop_reason, tools, block order, signatures, ``is_error``) is kept under
``metadata["anthropic"]`` and written back. A session is written in the shape it was read in,
and as a request when it came from another format; OpenAI ``image_url`` parts and Responses
``input_text`` / ``input_image`` parts become Anthropic blocks.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalcore.errors import RecordError
from evalcore.formats._blocks import image_url_of
from evalcore.formats._chat import message_names
from evalcore.formats._records import (
    CallNames,
    build_session,
    dump_args,
    expect_dict,
    expect_list,
    expect_str,
    load_args,
    memo,
)
from evalcore.formats.base import Format, register
from evalcore.schema import Message, Session, ToolCall, call_ids

NS = "anthropic"
#: Block types only the Anthropic Messages API has (server tools included).
_ANTHROPIC_ONLY = frozenset({
    "tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result",
    "web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result",
    "text_editor_code_execution_tool_result", "mcp_tool_use", "mcp_tool_result", "container_upload",
    "search_result",
})  # fmt: skip
_SOURCED = frozenset({"image", "document"})  # Anthropic when they carry a ``source``
_THINKING = ("thinking", "redacted_thinking")
_SNIFF_LIMIT = 100  # messages (and blocks) looked at when sniffing


# -- detection --------------------------------------------------------------------------------


def _anthropic_block(block: Any) -> bool:
    if not isinstance(block, dict):
        return False
    kind = block.get("type")
    if not isinstance(kind, str):
        return False
    return kind in _ANTHROPIC_ONLY or (kind in _SOURCED and isinstance(block.get("source"), dict))


def _has_anthropic_blocks(messages: list[Any]) -> bool:
    for m in messages[:_SNIFF_LIMIT]:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list) and any(_anthropic_block(b) for b in content[:_SNIFF_LIMIT]):
            return True
    return False


def _is_response(value: Any) -> bool:
    if not (
        isinstance(value, dict)
        and value.get("type") == "message"
        and value.get("role") == "assistant"
        and isinstance(value.get("content"), list)
    ):
        return False
    usage = value.get("usage")  # (loggers that drop nulls drop a null stop_reason)
    return "stop_reason" in value or (isinstance(usage, dict) and "output_tokens" in usage)


def _all_messages(value: list[Any]) -> bool:
    return bool(value) and all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in value[:3])


def _is_request(value: dict[str, Any]) -> bool:
    messages = value.get("messages")
    if not isinstance(messages, list) or not _all_messages(messages):
        return False
    if isinstance(value.get("system"), str | list) or "anthropic_version" in value:
        return True  # chat-completions requests say system in a message, never beside them
    tools = value.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools[:_SNIFF_LIMIT]):
        return True
    return _has_anthropic_blocks(messages)


def _is_transcript(value: list[Any]) -> bool:
    return _all_messages(value) and (any(_is_response(m) for m in value[:_SNIFF_LIMIT]) or _has_anthropic_blocks(value))


# -- reading ----------------------------------------------------------------------------------


def _at(field: str, key: str) -> str:
    return f"{field}.{key}" if field else key


def _note(message: dict[str, Any]) -> dict[str, Any]:
    """The ``anthropic`` memo of a canonical message (or call) dict being built."""
    kept: dict[str, Any] = message.setdefault("metadata", {}).setdefault(NS, {})
    return kept


def _blocks(value: Any, field: str) -> list[dict[str, Any]]:
    """A list of content blocks, each an object with a string ``type``."""
    blocks = expect_list(value, field)
    for j, block in enumerate(blocks):
        if not isinstance(expect_dict(block, f"{field}[{j}]").get("type"), str):
            raise RecordError("expected a content block with a string 'type'", f"{field}[{j}].type")
    return blocks


def _content(value: Any, field: str) -> str | list[dict[str, Any]] | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return _blocks(value, field)
    raise RecordError("expected a string or an array of content blocks", field)


class _Reader:
    """Anthropic messages in, canonical message dicts out, one message at a time."""

    def __init__(self) -> None:
        self.out: list[dict[str, Any]] = []
        self.names = CallNames()  # tool_use ids -> tool names, to name the results
        self.after_results = False  # whether the last message read held tool results only

    def system(self, value: Any) -> None:
        if value is not None:
            self.out.append({"role": "system", "content": _content(value, "system")})

    def add(self, value: Any, field: str) -> None:
        m = expect_dict(value, field or "record")
        role = m.get("role")
        content = _content(m.get("content"), _at(field, "content"))
        start = len(self.out)
        only_results = False
        if role == "assistant":
            self._assistant(content, _at(field, "content"))
        elif role == "user":
            only_results = self._user(content, _at(field, "content"))
        elif role == "system":  # not in the API, but transcripts log it
            self.out.append({"role": "system", "content": content, "metadata": {NS: {"inline": True}}})
        elif role is None:
            raise RecordError("missing 'role'", _at(field, "role"))
        else:
            raise RecordError(f"unknown role {role!r}; expected user or assistant", _at(field, "role"))
        extras = {k: v for k, v in m.items() if k not in ("role", "content")}
        if extras:
            _note(self.out[start])["keys"] = extras
        self.after_results = only_results

    def _user(self, content: str | list[dict[str, Any]] | None, field: str) -> bool:
        """Tool results first (as tool messages), then the other blocks as one user message."""
        if not isinstance(content, list):
            self.out.append({"role": "user", "content": content})
            return False
        results: list[dict[str, Any]] = []
        others: list[dict[str, Any]] = []
        order = ""
        for j, block in enumerate(content):
            if block["type"] == "tool_result":
                results.append(self._result(block, f"{field}[{j}]"))
                order += "r"
            else:
                others.append(block)
                order += "o"
        if results and self.after_results:
            _note(results[0])["separate"] = True  # two messages of results in a row stay two
        self.out += results
        if others or not results:
            user: dict[str, Any] = {"role": "user", "content": others}
            if results:
                kept = _note(user)
                kept["joined"] = True
                if order != "r" * len(results) + "o" * len(others):
                    kept["order"] = order
            self.out.append(user)
        return bool(results) and not others

    def _result(self, block: dict[str, Any], field: str) -> dict[str, Any]:
        call_id = expect_str(block.get("tool_use_id"), f"{field}.tool_use_id", optional=True)
        message: dict[str, Any] = {"role": "tool", "content": _content(block.get("content"), f"{field}.content")}
        if call_id is not None:
            message["tool_call_id"] = call_id
            name = self.names.result(call_id)
            if name is not None:
                message["name"] = name
        elif "tool_use_id" not in block:
            _note(message)["no_id"] = True
        rest = {k: v for k, v in block.items() if k not in ("type", "tool_use_id", "content")}
        if rest:
            _note(message)["result"] = rest  # is_error, cache_control
        return message

    def _assistant(self, content: str | list[dict[str, Any]] | None, field: str) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        self.out.append(message)
        if not isinstance(content, list):
            return
        kept: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        thinking: list[dict[str, Any]] = []
        order = ""
        for j, block in enumerate(content):
            if block["type"] == "tool_use":
                calls.append(self._call(block, f"{field}[{j}]"))
                order += "c"
            elif block["type"] in _THINKING:
                thinking.append(block)
                order += "r"
            else:
                kept.append(block)
                order += "t"
        message["content"] = kept if kept or not (calls or thinking) else None
        if calls:
            message["tool_calls"] = calls
        if thinking:
            _thinking_in(message, thinking)
        if order != "r" * len(thinking) + "t" * len(kept) + "c" * len(calls):
            _note(message)["order"] = order

    def _call(self, block: dict[str, Any], field: str) -> dict[str, Any]:
        name = block.get("name")
        if not isinstance(name, str):
            raise RecordError("missing tool name", f"{field}.name")
        call_id = expect_str(block.get("id"), f"{field}.id", optional=True)
        raw = block.get("input")
        args, _ = load_args(raw, f"{field}.input")
        call: dict[str, Any] = {"name": name, "args": args}
        if call_id is not None:
            call["id"] = call_id
            self.names.call(call_id, name)
        elif "id" not in block:
            _note(call)["no_id"] = True
        if isinstance(raw, str):
            _note(call)["input"] = raw  # arguments given as JSON text: written back as that text
        elif "input" not in block:
            _note(call)["no_input"] = True
        rest = {k: v for k, v in block.items() if k not in ("type", "id", "name", "input")}
        if rest:
            _note(call)["block"] = rest  # cache_control, caller
        return call


def _thinking_in(message: dict[str, Any], blocks: list[dict[str, Any]]) -> None:
    """Thinking blocks: their text is the reasoning; the blocks (signatures, redacted data) are kept."""
    texts = [b.get("thinking") for b in blocks if b["type"] == "thinking"]
    kept = _note(message)
    if len(texts) == 1 and isinstance(texts[0], str):
        at = next(i for i, b in enumerate(blocks) if b["type"] == "thinking")
        message["reasoning"] = texts[0]
        kept["thinking"] = [{**b, "thinking": None} if i == at else b for i, b in enumerate(blocks)]
        kept["reasoning_at"] = at  # the one block whose text is ``reasoning``
        return
    joined = _joined(texts)
    if joined is not None:
        message["reasoning"] = joined
    kept["thinking"] = blocks


def _joined(texts: list[Any]) -> str | None:
    strings = [t for t in texts if isinstance(t, str)]
    return "\n\n".join(strings) if strings else None


# -- writing ----------------------------------------------------------------------------------


def _image(url: str, rest: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic image block for an image URL (a base64 ``data:`` URL becomes a base64 source)."""
    head, sep, data = url.partition(",")
    if url.startswith("data:") and sep and head.endswith(";base64"):
        source = {"type": "base64", "media_type": head[5:].removesuffix(";base64"), "data": data}
    else:
        source = {"type": "url", "url": url}
    return {"type": "image", "source": source, **rest}


def _block_out(block: dict[str, Any]) -> dict[str, Any]:
    """A content block in Anthropic's terms: OpenAI and Responses parts translated, others as given."""
    kind = block.get("type")
    if kind in ("input_text", "output_text") and isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}
    if kind in ("image_url", "input_image") and (url := image_url_of(block)) is not None:
        return _image(url, {})
    return block


def _content_out(content: str | list[dict[str, Any]] | None) -> str | list[dict[str, Any]] | None:
    if isinstance(content, list):  # a block with no string type cannot be sent (nor read back): left out, counted
        return [_block_out(b) for b in content if isinstance(b.get("type"), str)]
    return content


def _as_blocks(content: str | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content


def _interleave(order: Any, parts: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The blocks of ``parts`` in the ``order`` they came in (one letter a block), when it still fits."""
    fits = isinstance(order, str) and all(order.count(k) == len(v) for k, v in parts.items())
    if not fits or len(order) != sum(len(v) for v in parts.values()):
        return [b for blocks in parts.values() for b in blocks]
    queues = {k: iter(v) for k, v in parts.items()}
    return [next(queues[k]) for k in order]


def _thinking_out(reasoning: str | None, kept: dict[str, Any], where: str) -> list[dict[str, Any]]:
    field = f"{where}.metadata.{NS}.thinking"
    blocks = [expect_dict(b, f"{field}[{i}]") for i, b in enumerate(expect_list(kept.get("thinking") or [], field))]
    at = kept.get("reasoning_at")
    if isinstance(at, int) and 0 <= at < len(blocks):
        if reasoning is None:
            return blocks[:at] + blocks[at + 1 :]
        return [*blocks[:at], {**blocks[at], "thinking": reasoning}, *blocks[at + 1 :]]
    if _joined([b.get("thinking") for b in blocks if b.get("type") == "thinking"]) == reasoning:
        return blocks
    fresh = [] if reasoning is None else [{"type": "thinking", "thinking": reasoning}]
    return fresh + [b for b in blocks if b.get("type") != "thinking"]


def _split_system(messages: list[Message], names: dict[int, str]) -> tuple[Any, list[Message]]:
    """The request's ``system`` (from the leading system messages) and the messages after them."""
    n = 0
    while n < len(messages) and messages[n].role == "system":
        if memo(messages[n].metadata, NS, f"{names.get(id(messages[n]), 'context')}.metadata").get("inline"):
            break
        n += 1
    contents = [_content_out(m.content) for m in messages[:n] if m.content is not None]
    if not contents:
        return None, messages[n:]
    if len(contents) == 1:
        return contents[0], messages[n:]
    return [b for c in contents for b in _as_blocks(c)], messages[n:]


class _Writer:
    """Canonical messages in, Anthropic messages out: tool results gathered into user messages."""

    def __init__(self, messages: list[Message]) -> None:
        self.ids = call_ids(messages)
        self.names = message_names(messages)
        self.out: list[dict[str, Any]] = []
        self.group: dict[str, Any] | None = None  # the last message written, while it holds only tool results

    def add(self, message: Message) -> None:
        where = self.names.get(id(message), "context")
        kept = memo(message.metadata, NS, f"{where}.metadata")
        if message.role == "tool":
            block = self._result(message, kept, where)
            if self.group is not None and not kept.get("separate"):
                self.group["content"].append(block)
            else:
                self.group = self._new({"role": "user", "content": [block]}, kept, where)
            return
        group, self.group = self.group, None
        if message.role == "user" and kept.get("joined") and group is not None:
            others = _as_blocks(_content_out(message.content))
            group["content"] = _interleave(kept.get("order"), {"r": group["content"], "o": others})
            group.update(self._keys(kept, where))
            return
        out: dict[str, Any] = {"role": message.role}
        content = self._assistant(message, kept, where) if message.role == "assistant" else message.content
        if content is not None:
            out["content"] = _content_out(content)
        self._new(out, kept, where)

    def _keys(self, kept: dict[str, Any], where: str) -> dict[str, Any]:
        keys = expect_dict(kept.get("keys") or {}, f"{where}.metadata.{NS}.keys")
        return {k: v for k, v in keys.items() if k not in ("role", "content")}

    def _new(self, out: dict[str, Any], kept: dict[str, Any], where: str) -> dict[str, Any]:
        out.update(self._keys(kept, where))
        self.out.append(out)
        return out

    def _result(self, message: Message, kept: dict[str, Any], where: str) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "tool_result"}
        call_id = message.tool_call_id or self.ids[1].get(id(message))
        if call_id is not None and not (message.tool_call_id is None and kept.get("no_id")):
            block["tool_use_id"] = call_id
        if message.content is not None:
            block["content"] = _content_out(message.content)
        block.update(expect_dict(kept.get("result") or {}, f"{where}.metadata.{NS}.result"))
        return block

    def _assistant(self, message: Message, kept: dict[str, Any], where: str) -> Any:
        thinking = _thinking_out(message.reasoning, kept, where)
        calls = [self._call(c, i, where) for i, c in enumerate(message.calls)]
        if not thinking and not calls:
            return message.content
        parts = {"r": thinking, "t": _as_blocks(_content_out(message.content)), "c": calls}
        return _interleave(kept.get("order"), parts)

    def _call(self, call: ToolCall, i: int, where: str) -> dict[str, Any]:
        kept = memo(call.metadata, NS, f"{where}.tool_calls[{i}].metadata")
        block: dict[str, Any] = {"type": "tool_use"}
        if call.id is not None or not kept.get("no_id"):
            block["id"] = call.id or self.ids[0].get(id(call))
        block["name"] = call.name
        raw = kept.get("input")
        if isinstance(raw, str) and dump_args(call.args, raw) == raw:
            block["input"] = raw
        elif call.args or not kept.get("no_input"):
            block["input"] = call.args
        block.update(expect_dict(kept.get("block") or {}, f"{where}.tool_calls[{i}].metadata.{NS}.block"))
        return block


def _messages_out(messages: list[Message]) -> list[dict[str, Any]]:
    writer = _Writer(messages)
    for message in messages:
        writer.add(message)
    return writer.out


def _openai_tools(session: Session) -> list[dict[str, Any]] | None:
    """The tools of a session read from chat completions (``tools`` or legacy ``functions``), in
    Anthropic's terms (``name``, ``description``, ``input_schema``); ``None`` when there are none."""
    kept = session.metadata.get("openai")
    if not isinstance(kept, dict):
        return None
    tools, functions = kept.get("tools"), kept.get("functions")
    if isinstance(tools, list):
        functions = [t.get("function") if isinstance(t, dict) else None for t in tools]
    if not isinstance(functions, list) or not functions:
        return None
    out = []
    for function in functions:
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            return None  # not a function tool (a built-in one): nothing Anthropic would take
        tool: dict[str, Any] = {"name": function["name"]}
        if isinstance(function.get("description"), str):
            tool["description"] = function["description"]
        parameters = function.get("parameters")
        tool["input_schema"] = parameters if isinstance(parameters, dict) else {"type": "object"}
        out.append(tool)
    return out


def _request_out(session: Session, kept: dict[str, Any]) -> dict[str, Any]:
    messages = session.messages_with_context()
    system, rest = _split_system(messages, message_names(messages))
    request = dict(expect_dict(kept.get("request") or {}, f"metadata.{NS}.request"))
    tools = None if kept else _openai_tools(session)
    if tools is not None:
        request["tools"] = tools
    if system is not None:
        request["system"] = system
    request["messages"] = _messages_out(rest)
    keys = kept.get("keys")
    if isinstance(keys, list):  # the order the keys came in
        request = {k: request[k] for k in keys if isinstance(k, str) and k in request} | request
    return request


# -- the format -------------------------------------------------------------------------------


@register
class AnthropicFormat(Format):
    """Anthropic Messages API requests, responses and transcripts, one a line."""

    name = "anthropic"
    description = "Anthropic Messages API requests, responses and transcripts (text, image, tool_use, thinking blocks)"
    writable = True

    def carries(self, block: dict[str, Any]) -> bool:
        return isinstance(block.get("type"), str)  # images become image blocks; other typed blocks go as given

    #: Before open-responses (a response is ``"type": "message"``) and the chat formats; sniffs
    #: only on what Anthropic alone says (its block types, ``system`` beside ``messages``, ``stop_reason``).
    priority = 12

    def sniff(self, value: Any) -> bool:
        if isinstance(value, list):
            return _is_transcript(value)
        return isinstance(value, dict) and (_is_response(value) or _is_request(value))

    def parse(self, value: Any) -> Session:
        reader = _Reader()
        if isinstance(value, list):
            if not value:
                raise RecordError("expected a list of messages, got an empty one", "messages")
            for i, m in enumerate(value):
                reader.add(m, f"messages[{i}]")
            return build_session({"messages": reader.out, "metadata": {NS: {"shape": "transcript"}}})
        row = expect_dict(value, "record")
        if "messages" not in row and "role" in row:  # a response (or one message)
            reader.add(row, "")
            return build_session({"messages": reader.out, "metadata": {NS: {"shape": "response"}}})
        if "messages" not in row:
            raise RecordError(
                "expected an Anthropic request (with messages), a response (type message) or a list of messages",
                "messages",
            )
        reader.system(row.get("system"))
        for i, m in enumerate(expect_list(row["messages"], "messages")):
            reader.add(m, f"messages[{i}]")
        data: dict[str, Any] = {"messages": reader.out}
        kept: dict[str, Any] = {}
        extras = {k: v for k, v in row.items() if k not in ("system", "messages")}
        if extras:
            kept["request"] = extras
        if list(row) != [*extras, *(["system"] if "system" in row else []), "messages"]:
            kept["keys"] = list(row)
        if kept:
            data["metadata"] = {NS: kept}
        return build_session(data)

    def write(self, session: Session) -> Iterable[Any]:
        kept = memo(session.metadata, NS)
        shape = kept.get("shape")
        if shape == "response" and len(session.messages) == 1 and not session.context:
            return _messages_out(session.messages)
        if shape == "transcript":
            return [_messages_out(session.messages_with_context())]
        return [_request_out(session, kept)]

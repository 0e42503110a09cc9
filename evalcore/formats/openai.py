"""``openai``: chat-completions ``{"messages": [...]}`` JSONL, the fine-tuning form.

Read: ``{"messages": [...], ...}`` rows (other keys, ``tools`` or legacy ``functions``, kept),
a bare message list on a line, or a file that is one JSON array of messages. Written: always
``{"messages": [...]}`` rows, the only form the fine-tuning API accepts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalcore.formats._chat import carries as chat_carries
from evalcore.formats._chat import chat_message_out, chat_messages_in, message_names
from evalcore.formats._records import build_session, expect_dict, memo
from evalcore.formats.base import Format, register
from evalcore.schema import Session, call_ids


def _looks_like_chat(messages: Any) -> bool:
    return (
        isinstance(messages, list) and bool(messages) and all(isinstance(m, dict) and "role" in m for m in messages[:3])
    )


@register
class OpenAIFormat(Format):
    """One conversation a line: ``messages`` plus optional ``tools`` and other keys."""

    name = "openai"
    description = "OpenAI chat-completions {messages} JSONL with tool_calls (fine-tuning form)"
    writable = True

    def carries(self, block: dict[str, Any]) -> bool:
        return chat_carries(block)

    priority = 80

    def sniff(self, value: Any) -> bool:
        if isinstance(value, list):
            return _looks_like_chat(value)
        return isinstance(value, dict) and _looks_like_chat(value.get("messages"))

    def parse(self, value: Any) -> Session:
        if isinstance(value, list):  # a bare message list on a line, or a whole file's array
            return build_session({"messages": chat_messages_in(value, "messages")})
        row = expect_dict(value, "record")
        data: dict[str, Any] = {"messages": chat_messages_in(row.get("messages"), "messages")}
        extras = {k: v for k, v in row.items() if k != "messages"}
        if extras:
            data["metadata"] = {"openai": extras}
        return build_session(data)

    def write(self, session: Session) -> Iterable[Any]:
        ids = call_ids(session.messages)
        names = message_names(session.messages)
        messages = [chat_message_out(m, ids, names.get(id(m), "context")) for m in session.messages_with_context()]
        extras = dict(memo(session.metadata, "openai"))
        extras.pop("bare", None)  # (older versions kept bare lists bare: the API wants rows)
        return [{"messages": messages, **extras}]

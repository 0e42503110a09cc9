"""``swarm``: OpenAI Swarm message lists (chat messages with ``sender``, tool results with ``tool_name``)."""

from __future__ import annotations

from typing import Any

from evalcore.formats._chat import chat_message_in
from evalcore.formats._records import build_session, expect_dict, expect_list
from evalcore.formats.base import Format, register
from evalcore.schema import Session


def _swarm_messages(value: Any) -> list[Any] | None:
    if isinstance(value, dict):
        value = value.get("messages")
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        return value
    return None


@register
class SwarmFormat(Format):
    """A Swarm conversation: a bare message list, or ``{"messages": [...], ...}``."""

    name = "swarm"
    description = "OpenAI Swarm message dicts (sender, tool_name)"
    priority = 70

    def sniff(self, value: Any) -> bool:
        messages = _swarm_messages(value)
        return messages is not None and any("sender" in m or "tool_name" in m for m in messages)

    def parse(self, value: Any) -> Session:
        if isinstance(value, list):
            value = {"messages": value}
        row = expect_dict(value, "record")
        items = expect_list(row.get("messages"), "messages")
        messages = []
        for i, m in enumerate(items):
            key = "tool_name" if isinstance(m, dict) and m.get("role") == "tool" and "tool_name" in m else "name"
            messages.append(chat_message_in(m, f"messages[{i}]", name_key=key, ns="swarm"))
        data: dict[str, Any] = {"messages": messages}
        extras = {k: v for k, v in row.items() if k != "messages"}
        if extras:
            data["metadata"] = {"swarm": extras}
        return build_session(data)

"""Messages and tool calls: the atoms of a conversation."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Content", "Message", "Role", "ToolCall", "block_text"]

Role = Literal["system", "user", "assistant", "tool"]

#: Text content, structured content blocks (kept as given), or nothing.
Content = str | list[dict[str, Any]] | None

# Content-block types whose text a reader should see, and the key holding it.
_TEXT_KEYS = {
    "text": "text",
    "input_text": "text",
    "output_text": "text",
    "summary_text": "text",
    "reasoning_text": "text",
    "refusal": "refusal",
}


def block_text(content: Content) -> str:
    """Return the plain text of ``content``: the string, or its text blocks joined by newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):  # (raw items a reader passes may hold anything)
            continue
        key = _TEXT_KEYS.get(str(block.get("type", "text")))
        value = block.get(key) if key else None
        if isinstance(value, str):
            parts.append(value)
    return "\n".join(parts)


class ToolCall(BaseModel):
    """One call of a tool by the assistant.

    ``args`` is the parsed argument object. ``metadata`` keeps what a format says
    beyond that (the call's wire type, an item id, the original argument string).
    """

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    id: str | None = None
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


class Message(BaseModel):
    """One message of a conversation.

    ``content`` is text, or a list of structured content blocks kept as the source
    gave them (``text`` gives their text). ``tool_calls`` is ``None`` when the source
    said nothing and ``[]`` when it said "no calls": ragas tells the two apart.
    """

    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    role: Role
    content: Content = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def text(self) -> str:
        """The message's plain text (empty when it has none)."""
        return block_text(self.content)

    @property
    def calls(self) -> list[ToolCall]:
        """The tool calls, as a list even when the source gave none."""
        return self.tool_calls or []

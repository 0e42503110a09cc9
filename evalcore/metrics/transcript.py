"""Conversations as judges read them: ragas' ``pretty_repr`` lines (system messages left out)."""

from __future__ import annotations

from evalcore.schema import ContextChunk, Message

__all__ = ["chunks_text", "transcript"]


def transcript(messages: list[Message]) -> str:
    """``Human: ...`` / ``AI: ...`` / ``Tools:`` / ``  name: {args}`` / ``ToolOutput: ...``, one per line."""
    lines: list[str] = []
    for message in messages:
        if message.role == "user":
            lines.append(f"Human: {message.text}")
        elif message.role == "tool":
            lines.append(f"ToolOutput: {message.text}")
        elif message.role == "assistant":
            parts = [f"AI: {message.text}"] if message.text else []
            if message.tool_calls is not None:
                parts.append("Tools:")
                parts += [f"  {call.name}: {call.args}" for call in message.tool_calls]
            lines.append("\n".join(parts))
    return "\n".join(lines)


def chunks_text(chunks: list[ContextChunk]) -> str:
    """Retrieved chunks, numbered, with their document."""
    return "\n\n".join(f"[{i + 1}] ({c.doc_uri or 'no uri'})\n{c.content or ''}".rstrip() for i, c in enumerate(chunks))

"""Content blocks across formats: what is an image in each format's terms, and how it is written in another's.

An image is kept in a message's content as its format gave it (OpenAI ``image_url`` parts, Responses
``input_image`` parts, Anthropic ``image`` blocks with a ``source``); a writer whose format carries
images writes it in its own terms (``image_url_of`` gives the one thing they share: a URL, ``data:``
for embedded bytes). Formats that carry only text drop such blocks, and the conversion counts each
(``Format.carries``, ``evalcore.convert``).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

__all__ = ["TEXT_TYPES", "image_url_of", "is_text_block", "media_of", "non_text_blocks"]

#: Block types whose content is text (every format's names for it).
TEXT_TYPES = frozenset({"text", "input_text", "output_text", "summary_text", "reasoning_text", "refusal"})


def is_text_block(block: Any) -> bool:
    """Whether ``block`` is a block of text (any format's kind)."""
    return isinstance(block, dict) and block.get("type", "text") in TEXT_TYPES


def non_text_blocks(content: Any) -> list[dict[str, Any]]:
    """The blocks of ``content`` that are not text (images, files, audio, ...)."""
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and not is_text_block(b)]


def image_url_of(block: Any) -> str | None:
    """The URL of an image block in any format's terms (``data:<type>;base64,...`` for embedded bytes), or
    ``None`` when ``block`` is not an image this module knows."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "image_url":  # OpenAI chat completions
        image = block.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        return url if isinstance(url, str) else None
    if kind == "input_image":  # OpenAI Responses / Open Responses
        url = block.get("image_url")
        return url if isinstance(url, str) else None
    if kind == "image":  # Anthropic
        source = block.get("source")
        if not isinstance(source, dict):
            return None
        if source.get("type") == "base64" and isinstance(source.get("data"), str):
            return f"data:{source.get('media_type') or 'image/png'};base64,{source['data']}"
        if source.get("type") == "url" and isinstance(source.get("url"), str):
            return str(source["url"])
    return None


def media_of(url: str, limit: int) -> tuple[str, bytes] | None:
    """An embedded image's media type and bytes, from a ``data:...;base64,`` URL of at most ``limit`` decoded
    bytes; ``None`` for any other URL, bad base64, or a larger image."""
    head, sep, data = url.partition(",")
    if not (url.startswith("data:") and sep and head.endswith(";base64")) or len(data) > limit * 4 // 3 + 4:
        return None
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return head[5:].removesuffix(";base64") or "image/png", raw

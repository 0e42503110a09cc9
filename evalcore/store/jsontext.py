"""Reading back the JSON the store wrote, exactly: orjson where it gives the same value, else the stdlib.

A session's JSON may hold what orjson refuses or changes: ``NaN`` and ``Infinity`` (which ragas writes and
pydantic keeps), and integers of 19 digits and more (beyond 64 bits orjson refuses them; near the limit the
stdlib is the one that keeps every digit). Those few go through ``json.loads``, which keeps them exact.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["loads"]

_MARKS = bytes.maketrans(b"0123456789", b"9999999999")
_NINETEEN = b"9" * 19


def loads(text: str | bytes) -> Any:
    """The value of JSON text the store wrote (valid UTF-8 JSON, perhaps with NaN or big integers)."""
    data = text.encode() if isinstance(text, str) else text
    if _NINETEEN not in data.translate(_MARKS):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return json.loads(data)

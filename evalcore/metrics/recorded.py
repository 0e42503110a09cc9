"""What the data itself records of a session's cost and speed: token usage and latency (``metadata.usage``,
``metadata.latency_ms``, on the session or its messages). Read by the ``token_usage`` and ``latency`` metrics and by
what they need (``REQUIREMENTS``), so that a session counts as having them exactly when the metric can score it."""

from __future__ import annotations

import math
from typing import Any, TypeGuard

from evalcore.schema import Session

__all__ = ["recorded_latency", "usage_totals"]


def _finite(value: Any) -> TypeGuard[int | float]:
    """A number a count can use: NaN and infinities (JSON files may hold them) are not data."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _usage(metadata: dict[str, Any]) -> dict[str, int]:
    usage = metadata.get("usage")
    if not isinstance(usage, dict):
        return {}
    return {
        k: int(v) for k, v in usage.items() if k in ("input_tokens", "output_tokens", "total_tokens") and _finite(v)
    }


def usage_totals(session: Session) -> dict[str, int]:
    """The session's recorded tokens (``input_tokens``, ``output_tokens``, ``total_tokens``, those it has): its own
    ``metadata.usage``, else its messages' summed; empty when it records none."""
    totals = _usage(session.metadata)
    if not totals:
        for message in session.messages:
            for key, value in _usage(message.metadata).items():
                totals[key] = totals.get(key, 0) + value
    return totals


def recorded_latency(session: Session) -> float | None:
    """The session's recorded milliseconds: its own ``metadata.latency_ms``, else its messages' summed; ``None``
    when it records none."""
    latency = session.metadata.get("latency_ms")
    if _finite(latency):
        return float(latency)
    numbers = [p for p in (m.metadata.get("latency_ms") for m in session.messages) if _finite(p)]
    return float(sum(numbers)) if numbers else None

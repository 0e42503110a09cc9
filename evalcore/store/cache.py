"""The judge's answers kept in the store (``store.cache``): one row per call, found again by its key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcore.store.records import now

if TYPE_CHECKING:
    from evalcore.store.store import Store

__all__ = ["CacheEntry", "JudgeCacheTable"]


@dataclass(frozen=True)
class CacheEntry:
    """One judge call kept in the store: its key, model, request (JSON text), raw answer and tokens."""

    key: str
    model: str
    request: str
    response: str
    input_tokens: int | None
    output_tokens: int | None


class JudgeCacheTable:
    """The ``judge_cache`` table (``evalcore.judge.StoreJudgeCache`` reads and writes it for the judge)."""

    def __init__(self, store: Store) -> None:
        self._engine = store._engine

    def get(self, key: str) -> CacheEntry | None:
        """The call kept under ``key``, if any."""
        with self._engine.read() as conn:
            row = conn.execute(
                "SELECT key, model, request, response, input_tokens, output_tokens FROM judge_cache WHERE key = ?",
                [key],
            ).fetchone()
        return None if row is None else CacheEntry(*row)

    def put(self, entry: CacheEntry) -> None:
        """Keep a call (the first kept under its key stays)."""
        with self._engine.write() as conn:
            conn.execute(
                "INSERT INTO judge_cache (key, model, request, response, input_tokens, output_tokens, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [entry.key, entry.model, entry.request, entry.response, entry.input_tokens, entry.output_tokens,
                 now()],
            )  # fmt: skip

"""The judge's cache kept in the store: every call's request, answer and tokens, found again by its key."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from evalcore.judge.client import CachedCall
from evalcore.store.cache import CacheEntry

if TYPE_CHECKING:
    from evalcore.store import Store

__all__ = ["StoreJudgeCache"]


class StoreJudgeCache:
    """A ``JudgeCache`` in the store's ``judge_cache`` table: an identical call is answered from it, for free."""

    def __init__(self, store: Store) -> None:
        self.table = store.cache

    def get(self, key: str) -> CachedCall | None:
        entry = self.table.get(key)
        if entry is None:
            return None
        return CachedCall(
            entry.key, entry.model, json.loads(entry.request), entry.response, entry.input_tokens or 0,
            entry.output_tokens or 0,
        )  # fmt: skip

    def put(self, call: CachedCall) -> None:
        request = json.dumps(call.request, ensure_ascii=False)
        self.table.put(CacheEntry(call.key, call.model, request, call.response, call.input_tokens, call.output_tokens))

"""The LLM judge: one client for any OpenAI-compatible endpoint."""

from evalcore.judge.client import CachedCall, Judge, JudgeCache, JudgeError, MemoryCache, Verdict
from evalcore.judge.config import DEFAULT_PRICES, JudgeConfig, load_prices

__all__ = [
    "DEFAULT_PRICES",
    "CachedCall",
    "Judge",
    "JudgeCache",
    "JudgeConfig",
    "JudgeError",
    "MemoryCache",
    "Verdict",
    "load_prices",
]

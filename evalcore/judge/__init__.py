"""The LLM judge: one client for any OpenAI-compatible endpoint."""

from typing import TYPE_CHECKING

from evalcore.judge.config import DEFAULT_PRICES, JudgeConfig, load_prices
from evalcore.lazy import lazy_names

if TYPE_CHECKING:
    from evalcore.judge.client import CachedCall, Judge, JudgeCache, JudgeError, MemoryCache, Verdict

# The client (asyncio, ssl, the model client) on first use: configuring a judge, or scoring without one,
# never pays for it.
__getattr__ = lazy_names(
    __name__,
    globals(),
    dict.fromkeys(
        ["CachedCall", "Judge", "JudgeCache", "JudgeError", "MemoryCache", "Verdict"], "evalcore.judge.client"
    ),
)

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

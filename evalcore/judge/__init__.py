"""The LLM judge: one client for any OpenAI-compatible endpoint."""

from typing import TYPE_CHECKING

from evalcore._infra.lazy import lazy_names
from evalcore.judge.config import DEFAULT_PRICES, JudgeConfig, load_prices

if TYPE_CHECKING:
    from evalcore.judge.cache import StoreJudgeCache
    from evalcore.judge.client import CachedCall, Judge, JudgeCache, JudgeError, MemoryCache, Verdict

# The client (asyncio, ssl, the model client) on first use: configuring a judge, or scoring without one,
# never pays for it.
__getattr__ = lazy_names(
    __name__,
    globals(),
    {
        **dict.fromkeys(
            ["CachedCall", "Judge", "JudgeCache", "JudgeError", "MemoryCache", "Verdict"], "evalcore.judge.client"
        ),
        "StoreJudgeCache": "evalcore.judge.cache",
    },
)

__all__ = [
    "DEFAULT_PRICES",
    "CachedCall",
    "Judge",
    "JudgeCache",
    "JudgeConfig",
    "JudgeError",
    "MemoryCache",
    "StoreJudgeCache",
    "Verdict",
    "load_prices",
]

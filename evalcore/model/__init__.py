"""Models on any OpenAI-compatible endpoint: one client (retries, deadlines, size caps, tokens, cost, redaction)
for the judge and the solver."""

from typing import TYPE_CHECKING

from evalcore._infra.lazy import lazy_names
from evalcore.model.config import DEFAULT_PRICES, ModelConfig, load_prices

if TYPE_CHECKING:
    from evalcore.model.client import Completion, ModelClient, ModelError, request_key

# The client (asyncio, ssl) on first use: reading a model's configuration never pays for it.
__getattr__ = lazy_names(
    __name__,
    globals(),
    dict.fromkeys(["Completion", "ModelClient", "ModelError", "request_key"], "evalcore.model.client"),
)

__all__ = ["DEFAULT_PRICES", "Completion", "ModelClient", "ModelConfig", "ModelError", "load_prices", "request_key"]

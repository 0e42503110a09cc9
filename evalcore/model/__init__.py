"""Models on any OpenAI-compatible endpoint: one client (retries, deadlines, size caps, tokens, cost, redaction)
for the judge and the solver."""

from evalcore.model.client import Completion, ModelClient, ModelError, request_key
from evalcore.model.config import DEFAULT_PRICES, ModelConfig, load_prices

__all__ = ["DEFAULT_PRICES", "Completion", "ModelClient", "ModelConfig", "ModelError", "load_prices", "request_key"]

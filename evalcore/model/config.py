"""Where a model is and how to talk to it: the endpoint, the key (never shown), limits and prices.

One OpenAI-compatible endpoint serves every model evalcore calls: the judge (``evalcore.judge``) and the
models the solver converses with (``evalcore.solver``) both go through ``evalcore.model.ModelClient``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from evalcore import config
from evalcore._infra.jsonopt import json_option
from evalcore.errors import UsageError
from evalcore.model.redact import public_url

__all__ = ["DEFAULT_PRICES", "ModelConfig", "endpoint_from_env", "load_prices"]

#: US dollars per million tokens (input, output). Extend with ``EVALCORE_PRICES`` (a JSON file
#: ``{"model": [input, output]}``) or ``--prices``; a model with no price has no cost.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o4-mini": (1.10, 4.40),
}


#: The largest price file read: a price table is a few hundred bytes; past this, it is not one (``/dev/zero``).
MAX_PRICES_BYTES = 1 << 20


def load_prices(path: str | os.PathLike[str] | None = None) -> dict[str, tuple[float, float]]:
    """The default price table, extended (and overridden) by a JSON file of at most ``MAX_PRICES_BYTES``."""
    prices = dict(DEFAULT_PRICES)
    source = path or config.prices_file()
    if source:
        try:
            with Path(source).open("rb") as file:
                data = file.read(MAX_PRICES_BYTES + 1)
            if len(data) > MAX_PRICES_BYTES:
                raise ValueError(f"the file is larger than {MAX_PRICES_BYTES >> 20} MiB: not a price table")
            extra = json_option(data.decode("utf-8"), "the file")
            for model, pair in extra.items():
                prices[model] = (float(pair[0]), float(pair[1]))
        except (OSError, ValueError, TypeError, IndexError, KeyError, AttributeError, UsageError) as exc:
            raise UsageError(
                f'cannot read prices from {source}: expected {{"model": [input, output]}} ({exc})'
            ) from exc
    return prices


def endpoint_from_env(
    base_url: str | None = None, api_key: str | None = None, url_env: tuple[str, ...] = (config.BASE_URL,)
) -> tuple[str, str | None]:
    """The endpoint and key: the options given, else the first of ``url_env`` set (else OpenAI's), and
    ``EVALCORE_API_KEY`` / ``OPENAI_API_KEY``."""
    url = base_url or config.first_set(url_env) or ModelConfig.base_url
    key = api_key or config.api_key()
    return url.rstrip("/"), key


@dataclass
class ModelConfig:
    """Everything the client needs to reach a model. ``from_env`` fills it the way the CLI does.

    ``timeout`` bounds each attempt at a call as a whole (connecting, sending, every byte of the
    answer), not each read; ``max_response_bytes`` bounds an answer's size, both as sent and once
    decompressed. The API key and any credentials in ``base_url`` are never shown: ``repr`` and
    ``public_url`` leave them out. ``model`` is the model a call names when it names none.
    """

    model: str
    base_url: str = "https://api.openai.com/v1"
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 1.0  # seconds before the first retry; doubles each time
    max_wait: float = 60.0  # never wait longer than this between tries
    concurrency: int = 8
    prices: dict[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    max_response_bytes: int = 4 * 1024 * 1024  # an answer larger than this (sent or decoded) fails its call

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, base_url={self.public_url!r}, "
            f"api_key={'[REDACTED]' if self.api_key else None}, timeout={self.timeout!r}, "
            f"max_retries={self.max_retries!r}, concurrency={self.concurrency!r})"
        )

    @property
    def public_url(self) -> str:
        """The base URL without credentials (user, password, secret query parameters): what may be stored or shown."""
        return public_url(self.base_url)

    @classmethod
    def for_models(
        cls,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        prices: str | None = None,
        url_env: tuple[str, ...] = (config.BASE_URL,),
        **options: object,
    ) -> Self:
        """The endpoint of the models evalcore converses with (``endpoint_from_env``), ``model`` on it, the prices
        (``--prices``, else ``EVALCORE_PRICES``) and ``options`` (``None``: the default)."""
        url, key = endpoint_from_env(base_url, api_key, url_env)
        config = cls(model=model, base_url=url, api_key=key, prices=load_prices(prices))
        config.set_options(options)
        return config

    def set_options(self, options: dict[str, object]) -> None:
        """Set the options given (``None``: left as it is)."""
        for option, value in options.items():
            if value is not None:
                setattr(self, option, value)

    def cost(self, input_tokens: int, output_tokens: int, model: str | None = None) -> float | None:
        """The price of a call to ``model`` (default: ``self.model``), or ``None`` when it has no price."""
        price = self.prices.get(model or self.model)
        if price is None:
            return None
        return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000

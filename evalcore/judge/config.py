"""Where the judge model is and how to talk to it: ``EVALCORE_JUDGE_*`` over the endpoint of every model."""

from __future__ import annotations

import os
from dataclasses import dataclass

from evalcore.model.config import DEFAULT_PRICES, ModelConfig, load_prices

__all__ = ["DEFAULT_PRICES", "JudgeConfig", "load_prices"]


@dataclass(repr=False)
class JudgeConfig(ModelConfig):
    """The judge's model and endpoint (a ``ModelConfig``), and whether to ask for a JSON object."""

    json_mode: bool = True  # ask for response_format json_object

    @classmethod
    def from_env(
        cls,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        prices: str | None = None,
        **options: object,
    ) -> JudgeConfig | None:
        """The judge configured by options, else ``EVALCORE_JUDGE_*`` / ``EVALCORE_*`` / ``OPENAI_API_KEY``.

        Returns ``None`` when no judge model is named.
        """
        name = model or os.environ.get("EVALCORE_JUDGE_MODEL")
        if not name:
            return None
        urls = ("EVALCORE_JUDGE_BASE_URL", "EVALCORE_BASE_URL")
        return cls.for_models(name, base_url=base_url, api_key=api_key, prices=prices, url_env=urls, **options)

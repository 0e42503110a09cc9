"""Where the judge model is and how to talk to it: ``EVALCORE_JUDGE_*`` over the endpoint of every model."""

from __future__ import annotations

from dataclasses import dataclass

from evalcore import config
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
        name = model or config.judge_model()
        if not name:
            return None
        urls = (config.JUDGE_BASE_URL, config.BASE_URL)
        return cls.for_models(name, base_url=base_url, api_key=api_key, prices=prices, url_env=urls, **options)

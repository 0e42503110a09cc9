"""Every environment variable evalcore reads, in one place: its name, what it sets, and its default.

| variable | what it sets |
|---|---|
| ``EVALCORE_DB`` | the store: a SQLite file or a database URL (default ``./evalcore.db``) |
| ``EVALCORE_BASE_URL`` | the OpenAI-compatible endpoint of models and judges (default OpenAI's) |
| ``EVALCORE_JUDGE_BASE_URL`` | the judge's endpoint, when it is not ``EVALCORE_BASE_URL`` |
| ``EVALCORE_API_KEY``, else ``OPENAI_API_KEY`` | the endpoint's API key |
| ``EVALCORE_JUDGE_MODEL`` | the judge model |
| ``EVALCORE_MODEL`` | the model the Simulate page proposes |
| ``EVALCORE_PRICES`` | a JSON file of prices per million tokens, over the built-in table |
| ``EVALCORE_TASKS`` | the folder of solver tasks the Simulate page lists (default: the sample data's ``tasks/``) |
| ``EVALCORE_SAMPLE_DATA`` | the folder of sample files the app loads on a first start |
| ``EVALCORE_PLUGINS`` | metric plug-ins to load besides the installed ones: ``MODULE[:CLASS]``, comma-separated |

Nothing else in evalcore reads the environment: every other module asks here.
"""

from __future__ import annotations

import os

__all__ = [
    "API_KEYS",
    "BASE_URL",
    "DB",
    "JUDGE_BASE_URL",
    "JUDGE_MODEL",
    "MODEL",
    "PLUGINS",
    "PRICES",
    "SAMPLE_DATA",
    "TASKS",
    "api_key",
    "database",
    "first_set",
    "get",
    "judge_model",
    "model",
    "plugins",
    "prices_file",
    "sample_data_folder",
    "set_database",
    "set_plugins",
    "tasks_folder",
]

DB = "EVALCORE_DB"
BASE_URL = "EVALCORE_BASE_URL"
JUDGE_BASE_URL = "EVALCORE_JUDGE_BASE_URL"
API_KEYS = ("EVALCORE_API_KEY", "OPENAI_API_KEY")
JUDGE_MODEL = "EVALCORE_JUDGE_MODEL"
MODEL = "EVALCORE_MODEL"
PRICES = "EVALCORE_PRICES"
TASKS = "EVALCORE_TASKS"
SAMPLE_DATA = "EVALCORE_SAMPLE_DATA"
PLUGINS = "EVALCORE_PLUGINS"

#: The store when ``EVALCORE_DB`` is not set.
DEFAULT_DB = "evalcore.db"


def get(name: str) -> str | None:
    """The variable ``name``, or None when it is unset or empty."""
    return os.environ.get(name) or None


def first_set(names: tuple[str, ...]) -> str | None:
    """The value of the first of ``names`` that is set (not empty)."""
    return next((value for name in names if (value := get(name))), None)


def database() -> str:
    """The store: ``$EVALCORE_DB``, else ``./evalcore.db``."""
    return get(DB) or DEFAULT_DB


def set_database(where: str) -> None:
    """Make ``where`` the store of this process and of the programs it starts (``evalcore app --db``)."""
    os.environ[DB] = where


def api_key() -> str | None:
    """The API key: ``$EVALCORE_API_KEY``, else ``$OPENAI_API_KEY``."""
    return first_set(API_KEYS)


def judge_model() -> str | None:
    """``$EVALCORE_JUDGE_MODEL``."""
    return get(JUDGE_MODEL)


def model() -> str:
    """``$EVALCORE_MODEL`` (empty when unset)."""
    return get(MODEL) or ""


def prices_file() -> str | None:
    """``$EVALCORE_PRICES``."""
    return get(PRICES)


def tasks_folder() -> str | None:
    """``$EVALCORE_TASKS``."""
    return get(TASKS)


def sample_data_folder() -> str | None:
    """``$EVALCORE_SAMPLE_DATA``."""
    return get(SAMPLE_DATA)


def plugins() -> list[str]:
    """``$EVALCORE_PLUGINS``: the metric plug-ins named there (``MODULE[:CLASS]``, comma-separated), in order."""
    return [part.strip() for part in (get(PLUGINS) or "").split(",") if part.strip()]


def set_plugins(targets: list[str]) -> None:
    """Make ``targets`` the plug-ins of this process and of the programs it starts (``evalcore app --plugin``)."""
    os.environ[PLUGINS] = ",".join(targets)

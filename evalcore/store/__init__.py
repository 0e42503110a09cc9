"""The SQLite store: the system of record for datasets, sessions, ground truth, history, runs and scores."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from evalcore.store.migrations import SCHEMA_VERSION
from evalcore.store.records import SESSION_FIELDS, TURN_FIELDS, Dataset, Edit, SessionSummary, StoredSession
from evalcore.store.store import Store, default_db_path

if TYPE_CHECKING:
    from evalcore.store.imports import ImportReport, import_file, import_stream, store_sessions

_IMPORTS = ("ImportReport", "import_file", "import_stream", "store_sessions")


def __getattr__(name: str) -> Any:
    """Importing files (and with it every format) on first use: scoring or reviewing never pays for it."""
    if name not in _IMPORTS:
        raise AttributeError(f"module 'evalcore.store' has no attribute {name!r}")
    value = getattr(import_module("evalcore.store.imports"), name)
    globals()[name] = value
    return value


__all__ = [
    "SCHEMA_VERSION",
    "SESSION_FIELDS",
    "TURN_FIELDS",
    "Dataset",
    "Edit",
    "ImportReport",
    "SessionSummary",
    "Store",
    "StoredSession",
    "default_db_path",
    "import_file",
    "import_stream",
    "store_sessions",
]

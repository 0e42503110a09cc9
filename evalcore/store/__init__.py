"""The SQLite store: the system of record for datasets, sessions, ground truth, history, runs and scores."""

from typing import TYPE_CHECKING

from evalcore.lazy import lazy_names
from evalcore.store.migrations import SCHEMA_VERSION
from evalcore.store.records import SESSION_FIELDS, TURN_FIELDS, Dataset, Edit, SessionSummary, StoredSession
from evalcore.store.store import Store, default_db_path

if TYPE_CHECKING:
    from evalcore.store.imports import ImportReport, import_file, import_stream, store_sessions

# Importing files (and with it every format) on first use: scoring or reviewing never pays for it.
__getattr__ = lazy_names(
    __name__,
    globals(),
    dict.fromkeys(["ImportReport", "import_file", "import_stream", "store_sessions"], "evalcore.store.imports"),
)


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

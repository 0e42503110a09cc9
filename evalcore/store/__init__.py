"""The SQLite store: the system of record for datasets, sessions, ground truth, history, runs and scores."""

from evalcore.store.imports import ImportReport, import_file, import_stream
from evalcore.store.migrations import SCHEMA_VERSION
from evalcore.store.records import SESSION_FIELDS, TURN_FIELDS, Dataset, Edit, SessionSummary, StoredSession
from evalcore.store.store import Store, default_db_path

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
]

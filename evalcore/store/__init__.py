"""The store: the system of record for datasets, sessions, ground truth, history, runs and scores — one contract
over two engines, SQLite and PostgreSQL (see ``evalcore.store.store``).

Everything that speaks SQL lives in this package, and it imports nothing above it (no formats, metrics, judge or
model): what it needs from them is passed in. Its names are imported on first use, so that the reader process of
a big import (which needs only ``evalcore.store.rows``) starts without database code.
"""

from typing import TYPE_CHECKING

from evalcore._infra.lazy import lazy_names

if TYPE_CHECKING:
    from evalcore.store.migrations import SCHEMA_VERSION
    from evalcore.store.queries import SORTS, Facets, Neighbours, Page, SessionFilter
    from evalcore.store.records import SESSION_FIELDS, TURN_FIELDS, Dataset, Edit, SessionSummary, StoredSession
    from evalcore.store.store import Store, default_db_path, open_store

__getattr__ = lazy_names(
    __name__,
    globals(),
    {
        "SCHEMA_VERSION": "evalcore.store.migrations",
        **dict.fromkeys(["SORTS", "Facets", "Neighbours", "Page", "SessionFilter"], "evalcore.store.queries"),
        **dict.fromkeys(
            ["SESSION_FIELDS", "TURN_FIELDS", "Dataset", "Edit", "SessionSummary", "StoredSession"],
            "evalcore.store.records",
        ),
        **dict.fromkeys(["Store", "default_db_path", "open_store"], "evalcore.store.store"),
    },
)


__all__ = [
    "SCHEMA_VERSION",
    "SESSION_FIELDS",
    "SORTS",
    "TURN_FIELDS",
    "Dataset",
    "Edit",
    "Facets",
    "Neighbours",
    "Page",
    "SessionFilter",
    "SessionSummary",
    "Store",
    "StoredSession",
    "default_db_path",
    "open_store",
]

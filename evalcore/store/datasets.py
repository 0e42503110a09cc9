"""Datasets as a whole: what each holds and how far its review has come; renaming and deleting."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalcore.errors import NotFoundError, UsageError
from evalcore.schema import STATUSES
from evalcore.store.store import Store

__all__ = ["DatasetOverview", "delete_dataset", "overviews", "rename_dataset"]


@dataclass(frozen=True)
class DatasetOverview:
    """One dataset's size, source formats, review progress and last import."""

    name: str
    sessions: int
    formats: list[str]
    statuses: dict[str, int] = field(default_factory=dict)
    with_truth: int = 0
    last_import_at: str | None = None
    last_import_source: str | None = None
    created_at: str = ""

    @property
    def reviewed(self) -> int:
        """Sessions whose review has ended: approved or rejected."""
        return self.statuses.get("approved", 0) + self.statuses.get("rejected", 0)

    @property
    def progress(self) -> float:
        """The share of sessions reviewed (0 for an empty dataset)."""
        return self.reviewed / self.sessions if self.sessions else 0.0


def overviews(store: Store) -> list[DatasetOverview]:
    """Every dataset with its counts, sorted by name."""
    db = store.db
    per: dict[int, dict[str, int]] = {}
    truth: dict[int, int] = {}
    formats: dict[int, list[str]] = {}
    # Each count from one index alone (idx_sessions_status, idx_sessions_has_truth, idx_sessions_format), not
    # from the sessions' rows: this runs on every visit of the Datasets page.
    counts = db.execute("SELECT dataset_id, status, count(*) FROM sessions GROUP BY dataset_id, status")
    for dataset_id, status, n in counts:
        per.setdefault(dataset_id, dict.fromkeys(STATUSES, 0))[status] = n
    truth.update(db.execute("SELECT dataset_id, count(*) FROM sessions WHERE has_truth = 1 GROUP BY dataset_id"))
    for dataset_id, fmt in db.execute(
        "SELECT dataset_id, format FROM sessions WHERE format IS NOT NULL GROUP BY dataset_id, format"
    ):
        formats.setdefault(dataset_id, []).append(fmt)
    rows = db.execute(
        "SELECT id, name, created_at, last_import_at, last_import_source FROM datasets ORDER BY name"
    ).fetchall()
    result = []
    for dataset_id, name, created_at, last_at, last_source in rows:
        statuses = per.get(dataset_id, dict.fromkeys(STATUSES, 0))
        result.append(
            DatasetOverview(
                name, sum(statuses.values()), formats.get(dataset_id, []), statuses, truth.get(dataset_id, 0),
                last_at, last_source, created_at,
            )
        )  # fmt: skip
    return result


def _check_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise UsageError("a dataset needs a name")
    if len(name) > 200:
        raise UsageError("a dataset name has at most 200 characters")
    return name


def rename_dataset(store: Store, old: str, new: str) -> str:
    """Rename dataset ``old`` to ``new`` (refused when ``new`` is taken); returns the new name."""
    new = _check_name(new)
    dataset_id = store.dataset_id(old)
    if new == old:
        return new
    with store.write() as conn:
        if conn.execute("SELECT 1 FROM datasets WHERE name = ?", [new]).fetchone():
            raise UsageError(f"a dataset named {new!r} exists already")
        conn.execute("UPDATE datasets SET name = ? WHERE id = ?", [new, dataset_id])
        conn.execute("UPDATE jobs SET dataset = ? WHERE dataset = ?", [new, old])
    return new


def delete_dataset(store: Store, name: str, *, confirm: str) -> int:
    """Delete dataset ``name`` with its sessions, history, comments, verdicts, runs and scores, in one
    transaction. ``confirm`` must repeat the name. Returns how many sessions were deleted."""
    if confirm != name:
        raise UsageError(f"type the dataset's name ({name!r}) to delete it")
    dataset_id = store.dataset_id(name)
    # Every row pointing at the dataset's sessions and runs is deleted here, before them: SQLite's own checks of
    # the deleted sessions would scan the scores once for each (scores have no index by session), so they are off
    # for this transaction (the setting cannot change inside one).
    store.db.execute("PRAGMA foreign_keys = OFF")
    try:
        with store.write() as conn:
            if conn.execute("SELECT 1 FROM datasets WHERE id = ?", [dataset_id]).fetchone() is None:
                raise NotFoundError(f"no dataset named {name!r}")
            mine = "SELECT id FROM sessions WHERE dataset_id = ?"
            # (A run scores only its dataset's sessions: its scores are all a session has.)
            conn.execute("DELETE FROM scores WHERE run_id IN (SELECT id FROM runs WHERE dataset_id = ?)", [dataset_id])
            for table in ("edits", "comments", "verdicts", "session_tags"):
                conn.execute(f"DELETE FROM {table} WHERE session_pk IN ({mine})", [dataset_id])
            conn.execute("DELETE FROM runs WHERE dataset_id = ?", [dataset_id])
            n = conn.execute("DELETE FROM sessions WHERE dataset_id = ?", [dataset_id]).rowcount
            conn.execute("DELETE FROM jobs WHERE dataset = ?", [name])
            conn.execute("DELETE FROM datasets WHERE id = ?", [dataset_id])
    finally:
        store.db.execute("PRAGMA foreign_keys = ON")
    return int(n)

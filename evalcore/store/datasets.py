"""Datasets: creating and finding them, what each holds and how far its review has come; renaming and deleting."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalcore.errors import NotFoundError, UsageError
from evalcore.schema import STATUSES
from evalcore.store.records import Dataset, now

if TYPE_CHECKING:
    from evalcore.store.store import Store

__all__ = ["DatasetOverview", "Datasets"]


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


def _check_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise UsageError("a dataset needs a name")
    if len(name) > 200:
        raise UsageError("a dataset name has at most 200 characters")
    return name


class Datasets:
    """The datasets of one store (``store.datasets``)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._engine = store._engine

    def get(self, name: str, *, create: bool = False, description: str | None = None) -> Dataset:
        """The dataset called ``name`` with its number of sessions; created when ``create`` and missing."""
        with self._engine.read() as conn:
            row = conn.execute(
                "SELECT id, name, description, created_at FROM datasets WHERE name = ?", [name]
            ).fetchone()
            if row is not None:
                counting = (  # (PostgreSQL: the counts it keeps)
                    "SELECT coalesce(sum(n), 0) FROM session_counts WHERE dataset_id = ?"
                    if self._engine.keeps_counts
                    else "SELECT count(*) FROM sessions WHERE dataset_id = ?"
                )
                count = conn.execute(counting, [row[0]]).fetchone()[0]
                return Dataset(row[0], row[1], row[2], row[3], int(count))
        if not create:
            raise NotFoundError(f"no dataset named {name!r}; known: {', '.join(self.names()) or 'none'}")
        if not name.strip():
            raise UsageError("a dataset needs a name (got an empty one)")
        self._store.require("import", f"make the dataset {name!r}")
        with self._engine.write() as conn:
            conn.execute(
                "INSERT INTO datasets (name, description, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                [name, description, now()],
            )
        return self.get(name)

    def id_of(self, name: str, *, fresh: bool = True) -> int:
        """The id of the dataset called ``name`` (raises ``NotFoundError`` when there is none). Not ``fresh``: the id
        this process last read for the name, which a rename or a deletion since may have made wrong (the caller
        checks it, in the statement that uses it)."""
        known = self._engine.dataset_ids
        if not fresh and name in known:
            return known[name]
        with self._engine.read() as conn:
            row = conn.execute("SELECT id FROM datasets WHERE name = ?", [name]).fetchone()
        if row is None:
            known.pop(name, None)
            raise NotFoundError(f"no dataset named {name!r}; known: {', '.join(self.names()) or 'none'}")
        known[name] = int(row[0])
        return int(row[0])

    def names(self) -> list[str]:
        """Every dataset's name, sorted."""
        with self._engine.read() as conn:
            return [r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY name")]

    def all(self) -> list[Dataset]:
        """Every dataset with its number of sessions."""
        with self._engine.read() as conn:
            sizes = (  # (PostgreSQL: the counts it keeps)
                "SELECT dataset_id, sum(n) AS n FROM session_counts GROUP BY dataset_id"
                if self._engine.keeps_counts
                else "SELECT dataset_id, count(*) AS n FROM sessions GROUP BY dataset_id"
            )
            rows = conn.execute(
                f"SELECT d.id, d.name, d.description, d.created_at, coalesce(c.n, 0) FROM datasets d "
                f"LEFT JOIN ({sizes}) c ON c.dataset_id = d.id ORDER BY d.name"
            ).fetchall()
        return [Dataset(r[0], r[1], r[2], r[3], int(r[4])) for r in rows]

    def overviews(self) -> list[DatasetOverview]:
        """Every dataset with its counts, sorted by name."""
        per: dict[int, dict[str, int]] = {}
        truth: dict[int, int] = {}
        formats: dict[int, list[str]] = {}
        # Each count from one index alone (idx_sessions_status, idx_sessions_has_truth, idx_sessions_format), not
        # from the sessions' rows: this runs on every visit of the Datasets page.
        with self._engine.read() as conn:
            if self._engine.keeps_counts:  # (PostgreSQL: the counts it keeps)
                counts = conn.execute(
                    "SELECT dataset_id, status, sum(n) FROM session_counts WHERE n > 0 GROUP BY dataset_id, status"
                )
                with_truth = "SELECT dataset_id, sum(n) FROM session_counts WHERE has_truth = 1 GROUP BY dataset_id"
            else:
                counts = conn.execute("SELECT dataset_id, status, count(*) FROM sessions GROUP BY dataset_id, status")
                with_truth = "SELECT dataset_id, count(*) FROM sessions WHERE has_truth = 1 GROUP BY dataset_id"
            for dataset_id, status, n in counts:
                per.setdefault(dataset_id, dict.fromkeys(STATUSES, 0))[status] = n
            truth.update(conn.execute(with_truth))
            for dataset_id, fmt in conn.execute(
                "SELECT dataset_id, format FROM sessions WHERE format IS NOT NULL GROUP BY dataset_id, format "
                "ORDER BY dataset_id, format"
            ):
                formats.setdefault(dataset_id, []).append(fmt)
            rows = conn.execute(
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

    def mark_imported(self, dataset_id: int, source: str) -> None:
        """Record that ``source`` was just imported into the dataset (the Datasets page's "last import")."""
        self._store.require("import", "import sessions")
        with self._engine.write() as conn:
            conn.execute(
                "UPDATE datasets SET last_import_at = ?, last_import_source = ? WHERE id = ?",
                [now(), source, dataset_id],
            )

    def rename(self, old: str, new: str) -> str:
        """Rename dataset ``old`` to ``new`` (refused when ``new`` is taken); returns the new name."""
        new = _check_name(new)
        self._store.require("manage_datasets", f"rename the dataset {old!r}")
        dataset_id = self.id_of(old)
        if new == old:
            return new
        with self._engine.write() as conn:
            if conn.execute("SELECT 1 FROM datasets WHERE name = ?" + self._engine.for_update, [new]).fetchone():
                raise UsageError(f"a dataset named {new!r} exists already")
            conn.execute("UPDATE datasets SET name = ? WHERE id = ?", [new, dataset_id])
            conn.execute("UPDATE jobs SET dataset = ? WHERE dataset = ?", [new, old])
        return new

    def delete(self, name: str, *, confirm: str) -> int:
        """Delete dataset ``name`` with its sessions, history, comments, verdicts, questions, answers, queues, runs and
        scores, in one
        transaction. ``confirm`` must repeat the name. Returns how many sessions were deleted."""
        if confirm != name:
            raise UsageError(f"type the dataset's name ({name!r}) to delete it")
        self._store.require("manage_datasets", f"delete the dataset {name!r}")
        dataset_id = self.id_of(name)
        # Every row pointing at the dataset's sessions and runs is deleted here, before them (SQLite's own checks
        # of the deleted sessions would scan the scores once for each: they are left to this code).
        with self._engine.references_checked_by_caller(), self._engine.write() as conn:
            if (
                conn.execute("SELECT 1 FROM datasets WHERE id = ?" + self._engine.for_update, [dataset_id]).fetchone()
                is None
            ):
                raise NotFoundError(f"no dataset named {name!r}")
            mine = "SELECT id FROM sessions WHERE dataset_id = ?"
            # (A run scores only its dataset's sessions: its scores are all a session has.)
            conn.execute("DELETE FROM scores WHERE run_id IN (SELECT id FROM runs WHERE dataset_id = ?)", [dataset_id])
            queues = "SELECT id FROM queues WHERE dataset_id = ?"
            for table in ("queue_items", "queue_leases", "queue_skips", "queue_members"):
                conn.execute(f"DELETE FROM {table} WHERE queue_id IN ({queues})", [dataset_id])
            conn.execute("DELETE FROM queues WHERE dataset_id = ?", [dataset_id])
            for table in (
                "edits",
                "comments",
                "verdicts",
                "session_tags",
                "answers",
                "submissions",
                "gold",
                "drafts",
                "session_parts",
            ):
                conn.execute(f"DELETE FROM {table} WHERE session_pk IN ({mine})", [dataset_id])
            conn.execute(
                "DELETE FROM question_versions WHERE question_id IN (SELECT id FROM questions WHERE dataset_id = ?)",
                [dataset_id],
            )
            conn.execute("DELETE FROM questions WHERE dataset_id = ?", [dataset_id])
            conn.execute("DELETE FROM runs WHERE dataset_id = ?", [dataset_id])
            n = conn.execute("DELETE FROM sessions WHERE dataset_id = ?", [dataset_id]).rowcount
            conn.execute("DELETE FROM jobs WHERE dataset = ?", [name])
            conn.execute("DELETE FROM datasets WHERE id = ?", [dataset_id])
        return int(n)

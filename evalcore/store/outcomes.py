"""The outcomes that came with the data (τ-bench's ``reward``, a file's own scores: ``Session.scores``) kept as
metrics of one run per dataset, its *imported run*, so that Sessions, Review, the Dashboard, comparisons and score
exports show them as they show any run's. No table of their own: a row of ``runs`` marked in its parameters
(``IMPORTED``) and its rows of ``scores``.

An import keeps the run in step, in the transaction that stores each batch (``store_outcomes``): a new session's
outcomes are added, a changed session's replaced (a score changed or gone in the file changes or goes), an
unchanged one's added if missing (a dataset imported before the run existed gets it on its next import). The run's
metrics and counts are set from its scores; a run left with none is deleted. Deleting the dataset deletes it with
its other runs; ``evalcore db copy`` copies it as any run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalcore.store.engine import Conn, Engine

__all__ = ["IMPORTED", "imported_run_id", "is_imported", "store_outcomes"]

#: The key of a run's parameters that marks it the imported run of its dataset.
IMPORTED = "__imported__"


def is_imported(params: str | dict[str, Any] | None) -> bool:
    """Whether a run's stored parameters (its JSON text, or read) mark it its dataset's imported run."""
    if isinstance(params, str):
        if IMPORTED not in params:  # (most runs: no JSON to read)
            return False
        try:
            params = json.loads(params)
        except ValueError:
            return False
    return isinstance(params, dict) and params.get(IMPORTED) is True


def imported_run_id(conn: Conn, dataset_id: int) -> int | None:
    """The dataset's imported run, if it has one (its first, should a copy have brought two)."""
    for run_id, params in conn.execute("SELECT id, params FROM runs WHERE dataset_id = ? ORDER BY id", [dataset_id]):
        if is_imported(params):
            return int(run_id)
    return None


def store_outcomes(
    conn: Conn,
    engine: Engine,
    dataset_id: int,
    found: Sequence[tuple[int, tuple[tuple[str, float], ...]]],
    replaced: Sequence[int],
    stamp: str,
    author: tuple[str, int],
) -> None:
    """Keep the dataset's imported run in step with a stored batch, in its transaction: ``found`` the batch's
    sessions ``(pk, outcomes)`` (those with any), ``replaced`` the sessions whose conversation the batch changed
    (their earlier outcomes are dropped first)."""
    run_id = imported_run_id(conn, dataset_id)
    if run_id is None:
        if not found:
            return
        run_id = conn.execute(
            "INSERT INTO runs (dataset_id, metrics, params, status, started_at, finished_at, updated_at, created_by, "
            "created_by_id) VALUES (?, '[]', ?, 'done', ?, ?, ?, ?, ?) RETURNING id",
            [dataset_id, json.dumps({IMPORTED: True}), stamp, stamp, stamp, *author],
        ).fetchone()[0]
    elif replaced:
        ids, args = engine.id_set(sorted(set(replaced)))
        conn.execute(f"DELETE FROM scores WHERE run_id = ? AND session_pk IN {ids}", [run_id, *args])
    if found:  # an unchanged session's outcomes are there already (or missing, from before the run): kept or added
        conn.executemany(
            "INSERT INTO scores (run_id, session_pk, turn, metric, status, value, created_at) "
            "VALUES (?, ?, -1, ?, 'ok', ?, ?) ON CONFLICT (run_id, session_pk, turn, metric) DO NOTHING",
            [(run_id, pk, metric, value, stamp) for pk, pairs in found for metric, value in pairs],
        )
    elif not replaced:
        return
    metrics = [
        r[0] for r in conn.execute("SELECT DISTINCT metric FROM scores WHERE run_id = ? ORDER BY metric", [run_id])
    ]
    if not metrics:  # every outcome gone from the data: no run to show
        conn.execute("DELETE FROM runs WHERE id = ?", [run_id])
        return
    n = conn.execute("SELECT count(*) FROM scores WHERE run_id = ? AND turn = -1", [run_id]).fetchone()[0]
    conn.execute(
        "UPDATE runs SET metrics = ?, n_items = ?, n_done = ?, n_failed = 0, n_not_applicable = 0, finished_at = ?, "
        "updated_at = ? WHERE id = ?",
        [json.dumps(metrics), n, n, stamp, stamp, run_id],
    )

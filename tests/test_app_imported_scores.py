"""The scores a Databricks results table came with, in the app (AppTest on a real SQLite file; issue 21, item 1):
the rows of tests/data/made/databricks_eval_results_rows.jsonl imported, their judges' ratings are columns
of Sessions and what the Dashboard shows first (the values read off the file by hand)."""

from __future__ import annotations

from pathlib import Path

from apptest_util import (  # noqa: F401 (fixtures)
    app,
    db_fixture,
    open_page,
    run,
    store_fixture,
    template_db_fixture,
)
from dbutil import as_user

from evalcore.importing import import_file
from evalcore.store import Store

ROWS = Path(__file__).resolve().parent / "data" / "made" / "databricks_eval_results_rows.jsonl"


def test_databricks_judges_ratings_in_sessions_and_on_the_dashboard(db: Path, store: Store) -> None:
    import_file(as_user(store, "ann"), ROWS, "dbx", workers=1)
    at = open_page(run(app(dataset="dbx")), "sessions")
    frame = at.dataframe(key="sessions_table").value
    by_id = frame.set_index("id")
    assert by_id.loc["eval-1", "correctness"] == 1.0 and by_id.loc["eval-2", "correctness"] == 0.0
    assert by_id.loc["eval-2", "safety"] == 1.0
    assert by_id["toxicity"].dropna().tolist() == [0.00021]  # the mlflow.evaluate row's toxicity/v1/score
    assert "agent/latency_seconds" not in frame.columns  # a measurement, not a judgement
    at = open_page(run(app(dataset="dbx")), "dashboard")
    chosen = at.selectbox(key="dash_run").value
    assert chosen.imported and "correctness" in chosen.metrics
    at.selectbox(key="dash_metric").set_value("correctness")
    run(at)
    shown = {m.label: m.value for m in at.metric}
    assert shown["Mean"] == "0.667" and shown["Scored"] == "3"  # yes, no, yes

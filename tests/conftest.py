"""Fixtures for every test: paths to the reference data in tests/data/ (see its README.md) and to sample_data/."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
RAGAS_REFERENCE = DATA / "ragas_reference"
TAU_BENCH = DATA / "tau_bench" / "gpt-4o-airline-first40.json"
SAMPLE_DATA = ROOT / "sample_data"


@pytest.fixture(scope="session")
def ragas_reference() -> Path:
    assert RAGAS_REFERENCE.is_dir(), f"reference data missing: {RAGAS_REFERENCE}"
    return RAGAS_REFERENCE


@pytest.fixture(scope="session")
def tau_bench_file() -> Path:
    assert TAU_BENCH.is_file(), f"τ-bench data missing: {TAU_BENCH}"
    return TAU_BENCH


# The app's pages import ``app_pages._shared`` the way Streamlit runs them: from the repository root.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Any]:
    """A throwaway PostgreSQL server for the session (``tests/pgcluster.py``)."""
    from pgcluster import Cluster

    cluster = Cluster()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a contract test's store lives: a SQLite file, then a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "store.db")
    cluster = request.getfixturevalue("pg_cluster")
    return str(cluster.new_database())

"""The sample data, loaded into a database so that a newcomer sees real work on every page.

Each sample file becomes a dataset ``sample-NAME`` scored with the deterministic metrics.
Loading is idempotent: files already imported are found unchanged and datasets already
scored are not scored again. ``ensure_samples`` does it once per database, on first start.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from evalcore.importing import ImportReport, import_file
from evalcore.scoring import score_dataset
from evalcore.store import Store

__all__ = [
    "SAMPLE_METRICS",
    "SampleLoad",
    "ensure_samples",
    "load_samples",
    "sample_dataset_name",
    "sample_datasets",
    "sample_files",
]

#: What the samples are scored with: every deterministic metric that needs no parameters to be useful.
SAMPLE_METRICS = (
    "tool_call_accuracy",
    "tool_call_f1",
    "agentic_tool_correctness",
    "string_similarity",
    "document_recall",
    "tool_call_count",
    "turn_count",
)
_MARK = "samples_loaded"


def sample_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The data files of a sample folder (JSON and JSONL), sorted by name."""
    root = Path(folder)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.suffix in (".json", ".jsonl") and p.is_file())


@dataclass(frozen=True)
class SampleLoad:
    """What loading one sample file did."""

    dataset: str
    report: ImportReport
    scored: bool


def sample_dataset_name(path: str | os.PathLike[str]) -> str:
    """The dataset a sample file goes to: ``sample-`` and its name (``ragas.jsonl`` -> ``sample-ragas``)."""
    return "sample-" + Path(path).stem.replace("_", "-")


def sample_datasets(folder: str | os.PathLike[str]) -> frozenset[str]:
    """The datasets the sample files of ``folder`` go to (whether loaded or not)."""
    return frozenset(sample_dataset_name(path) for path in sample_files(folder))


def load_samples(store: Store, folder: str | os.PathLike[str], *, score: bool = True) -> list[SampleLoad]:
    """Import every sample file of ``folder`` into its dataset and score it (what is done already is kept)."""
    loads = []
    runs = store.runs
    for path in sample_files(folder):
        dataset = sample_dataset_name(path)
        report = import_file(store, path, dataset, workers=1)
        scored = False
        if score and not any(set(r.metrics) == set(SAMPLE_METRICS) for r in runs.recent(dataset)):
            score_dataset(store, dataset, list(SAMPLE_METRICS))
            scored = True
        loads.append(SampleLoad(dataset, report, scored))
    return loads


def ensure_samples(store: Store, folder: str | os.PathLike[str]) -> list[SampleLoad]:
    """``load_samples`` the first time a database is started with a sample folder; nothing afterwards
    (a reviewer who deleted a sample dataset does not see it come back)."""
    if store.meta.get(_MARK) is not None:
        return []
    loads = load_samples(store, folder)
    store.meta.set(_MARK, ",".join(load.dataset for load in loads))
    return loads

"""Exporting a dataset, filtered, to any writable format, with the curated ground truth merged in.

The file is streamed in import order; a manifest beside it records the filters, the count,
the format, the schema version and the file's SHA-256.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from evalcore.formats import get_format, writer_for
from evalcore.schema import SCHEMA_VERSION as MODEL_SCHEMA_VERSION
from evalcore.store.migrations import SCHEMA_VERSION
from evalcore.store.queries import SessionFilter, iter_pks
from evalcore.store.records import StoredSession, now
from evalcore.store.store import Store

__all__ = ["ExportReport", "export_dataset", "iter_sessions", "manifest_path"]


@dataclass
class ExportReport:
    """What an export wrote."""

    dataset: str
    format: str
    path: str
    manifest: str
    count: int
    sha256: str


def manifest_path(path: str | os.PathLike[str]) -> Path:
    """Where the manifest of an export to ``path`` goes: ``OUT.manifest.json``."""
    target = Path(path)
    return target.with_name(target.name + ".manifest.json")


def iter_sessions(
    store: Store, dataset: str, filters: SessionFilter | None = None, *, chunk: int = 500
) -> Iterator[StoredSession]:
    """The matching sessions with reviewers' edits applied, in import order."""
    pks: list[int] = []
    for pk in iter_pks(store, dataset, filters):
        pks.append(pk)
        if len(pks) == chunk:
            yield from store.get_many(pks)
            pks = []
    if pks:
        yield from store.get_many(pks)


def export_dataset(
    store: Store,
    dataset: str,
    path: str | os.PathLike[str],
    to: str,
    filters: SessionFilter | None = None,
    *,
    on_progress: Callable[[int], None] | None = None,
) -> ExportReport:
    """Write ``dataset`` (filtered) to ``path`` in format ``to``; return what was written."""
    fmt = get_format(to)
    f = filters or SessionFilter()
    store.dataset_id(dataset)  # raises for an unknown dataset before any file is made
    if f.run_id is not None:
        from evalcore.store.runs import Runs

        Runs(store).get(f.run_id)  # an unknown run is an error, not an empty export
    count = 0
    with writer_for(path, fmt) as writer:
        for stored in iter_sessions(store, dataset, f):
            writer.write(stored.session)
            count += 1
            if on_progress and count % 500 == 0:
                on_progress(count)
    if on_progress:
        on_progress(count)
    digest = hashlib.sha256()
    with open(path, "rb") as written:
        for block in iter(lambda: written.read(1 << 20), b""):
            digest.update(block)
    manifest = {
        "dataset": dataset,
        "format": to,
        "file": Path(path).name,
        "filters": f.as_dict(),
        "count": count,
        "sha256": digest.hexdigest(),
        "store_schema_version": SCHEMA_VERSION,
        "session_schema_version": MODEL_SCHEMA_VERSION,
        "exported_at": now(),
    }
    target = manifest_path(path)
    target.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return ExportReport(dataset, to, str(path), str(target), count, digest.hexdigest())

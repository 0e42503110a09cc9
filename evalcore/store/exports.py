"""Exporting a dataset, filtered, to any writable format, with the curated ground truth merged in.

The file is streamed in import order; a manifest beside it (``OUT.manifest.json``) records the
filters, the count, the format, the schema versions and the file's SHA-256.

The guarantee: *a manifest present describes the data file beside it.* The data and the manifest
are written to partial files, then put in place together (``evalcore.outputs.publish``): the old
manifest is removed first, the data renamed into place, the new manifest renamed last, each step
synced to disk. A kill or a power cut at any moment leaves the previous export with its manifest,
or the new data without a manifest (an export that did not finish: run it again), or the new
export with its manifest. ``check_export`` verifies a file against its manifest (the SHA-256).

An export to a stream (a FIFO, ``/dev/stdout``, a character device) has no manifest: there is no
file to describe, and a file beside ``/dev/stdout`` would land in ``/dev``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from evalcore.errors import UsageError
from evalcore.formats import get_format
from evalcore.formats.files import SessionWriter
from evalcore.outputs import PendingOutput, publish
from evalcore.schema import SCHEMA_VERSION as MODEL_SCHEMA_VERSION
from evalcore.store.migrations import SCHEMA_VERSION
from evalcore.store.queries import SessionFilter, iter_pks
from evalcore.store.records import StoredSession, now
from evalcore.store.store import Store

__all__ = ["ExportReport", "check_export", "export_dataset", "iter_sessions", "manifest_path"]


@dataclass
class ExportReport:
    """What an export wrote."""

    dataset: str
    format: str
    path: str
    manifest: str | None  # None for an export to a stream (no manifest)
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
    """Write ``dataset`` (filtered) to ``path`` in format ``to``; return what was written.

    The file and its manifest appear together or not at all (see the module's docstring).
    """
    fmt = get_format(to)
    f = filters or SessionFilter()
    store.dataset_id(dataset)  # raises for an unknown dataset before any file is made
    if f.run_id is not None:
        from evalcore.store.runs import Runs

        Runs(store).get(f.run_id)  # an unknown run is an error, not an empty export
    outputs: list[PendingOutput] = []
    try:
        data = PendingOutput(path)
        outputs.append(data)
        manifest = None
        if not data.target.stream:
            manifest = PendingOutput(manifest_path(path))
            outputs.append(manifest)
            if manifest.target.path == data.target.path:
                raise UsageError(f"{path} and its manifest {manifest_path(path)} are the same file")
        # A JSON array when the name ends in .json, as writer_for writes.
        writer = SessionWriter(data.file, fmt, array=Path(path).suffix.lower() == ".json")
        count = 0
        for stored in iter_sessions(store, dataset, f):
            writer.write(stored.session)
            count += 1
            if on_progress and count % 500 == 0:
                on_progress(count)
        writer.close()
        data.close()
        if on_progress:
            on_progress(count)
        if manifest is not None:
            record = {
                "dataset": dataset,
                "format": to,
                "file": Path(path).name,
                "filters": f.as_dict(),
                "count": count,
                "bytes": data.size,
                "sha256": data.sha256,
                "store_schema_version": SCHEMA_VERSION,
                "session_schema_version": MODEL_SCHEMA_VERSION,
                "exported_at": now(),
            }
            manifest.file.write(json.dumps(record, indent=2) + "\n")
        publish(*outputs)  # the manifest last: present only beside the data it describes
    finally:
        for out in outputs:
            out.discard()
    where = str(manifest_path(path)) if manifest is not None else None
    return ExportReport(dataset, to, str(path), where, count, data.sha256)


def check_export(path: str | os.PathLike[str]) -> str | None:
    """Whether the file at ``path`` is the export its manifest describes: ``None`` when it is, else
    what is wrong (no manifest: the export did not finish; a different SHA-256: the file changed)."""
    where = manifest_path(path)
    try:
        manifest = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return f"{path} has no manifest ({where.name}): its export did not finish"
    except (OSError, ValueError) as exc:
        return f"cannot read the manifest {where}: {exc}"
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as data:
            for block in iter(lambda: data.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    if not isinstance(manifest, dict) or manifest.get("sha256") != digest.hexdigest():
        return f"{path} is not the file its manifest describes (SHA-256 differs)"
    return None

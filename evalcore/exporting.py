"""Exporting a dataset, filtered, to any writable format, with the curated ground truth merged in.

One code path makes an export's bytes: ``ExportStream`` serialises the matching sessions, in import
order, into UTF-8 chunks, counting and hashing them as they go. Everything else consumes it: a file
(``export_dataset``), any binary stream (``ExportStream.write_to``), or bytes in memory for a
download (``ExportStream.read_all``) — the same bytes in each, for the same dataset, format and filters.

A file export gets a manifest beside it (``OUT.manifest.json``) recording the filters, the count,
the format, the schema versions and the file's SHA-256 (``manifest_bytes`` makes it, for a file or
for a download).

The guarantee: *a manifest present describes the data file beside it.* The data and the manifest
are written to partial files, then put in place together (``evalcore._infra.outputs.publish``): the old
manifest is removed first, the data renamed into place, the new manifest renamed last, each step
synced to disk. A kill or a power cut at any moment leaves the previous export with its manifest,
or the new data without a manifest (an export that did not finish: run it again), or the new
export with its manifest. ``check_export`` verifies a file against its manifest (the SHA-256).

An export to a stream (a FIFO, ``/dev/stdout``, a character device) has no manifest: there is no
file to describe, and a file beside ``/dev/stdout`` would land in ``/dev``.

A run's scores are exported too, one row per (session, metric): ``score_records`` gives the rows,
``scores_jsonl`` and ``scores_csv`` their bytes.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from evalcore._infra.gcpause import paused_gc
from evalcore._infra.outputs import PendingOutput, publish
from evalcore.errors import UsageError
from evalcore.formats import get_format
from evalcore.formats.base import Format, formats
from evalcore.formats.files import SessionWriter
from evalcore.schema import SCHEMA_VERSION as MODEL_SCHEMA_VERSION
from evalcore.schema import LabelledSession, Session
from evalcore.store.access import User
from evalcore.store.migrations import SCHEMA_VERSION
from evalcore.store.queries import SessionFilter
from evalcore.store.records import StoredSession, now
from evalcore.store.store import Store

__all__ = [
    "SCORE_COLUMNS",
    "ExportReport",
    "ExportStream",
    "check_export",
    "export_dataset",
    "iter_sessions",
    "manifest_bytes",
    "manifest_path",
    "write_with_manifest",
    "score_records",
    "scores_csv",
    "scores_jsonl",
]

#: The columns of a run's scores, in order: every JSON line has the first eight, and ``parts`` and
#: ``not_applicable`` when they apply; a CSV file has all ten. ``assistant_id`` (null when the session names none)
#: and ``dataset`` tell two assistants' rows for one task apart, and two datasets' files.
SCORE_COLUMNS = (
    "session_id", "assistant_id", "dataset", "position", "metric", "value", "reason", "error", "parts",
    "not_applicable",
)  # fmt: skip
_CHUNK = 1 << 16  # bytes an export gathers before it hands them on


@dataclass
class ExportReport:
    """What an export wrote."""

    dataset: str
    format: str
    path: str
    manifest: str | None  # None for an export to a stream (no manifest)
    count: int
    sha256: str
    labels_left: int = 0  # sessions whose labels (answers, gold, comments) the format does not carry


def manifest_path(path: str | os.PathLike[str]) -> Path:
    """Where the manifest of an export to ``path`` goes: ``OUT.manifest.json``."""
    target = Path(path)
    return target.with_name(target.name + ".manifest.json")


def iter_sessions(
    store: Store, dataset: str, filters: SessionFilter | None = None, *, chunk: int = 500
) -> Iterator[StoredSession]:
    """The matching sessions with reviewers' edits applied, in import order."""
    for sessions in _session_chunks(store, dataset, filters, chunk):
        yield from sessions


def _session_chunks(
    store: Store, dataset: str, filters: SessionFilter | None, chunk: int
) -> Iterator[list[StoredSession]]:
    for pks in _pk_chunks(store, dataset, filters, chunk):
        yield store.sessions.get_many(pks)


def _pk_chunks(store: Store, dataset: str, filters: SessionFilter | None, chunk: int) -> Iterator[list[int]]:
    """The ``pk`` of the matching sessions, in import order, ``chunk`` at a time."""
    pks: list[int] = []
    for pk in store.sessions.iter_pks(dataset, filters):
        pks.append(pk)
        if len(pks) == chunk:
            yield pks
            pks = []
    if pks:
        yield pks


def writable_format(name: str) -> Format:
    """The format ``name``, which must be writable (a ``UsageError`` names the writable ones if not)."""
    fmt = get_format(name)
    if not fmt.writable:
        writable = ", ".join(f.name for f in formats() if f.writable)
        raise UsageError(f"{fmt.name} is read-only; write one of: {writable}")
    return fmt


class ExportStream:
    """The bytes of one export of ``dataset`` (filtered) in format ``to``, made as they are read.

    Iterate it (once) for UTF-8 chunks of about 64 KiB; ``count``, ``size`` and ``sha256`` describe
    what has been made so far (the whole export once the iteration has ended). ``array`` writes one
    JSON array (as a file named ``.json`` gets) instead of JSON Lines; ``limit`` stops after that
    many sessions. The dataset, the format and a filter's run are checked when it is made, before
    any byte: an unknown one is an error, not an empty export.
    """

    def __init__(
        self,
        store: Store,
        dataset: str,
        to: str,
        filters: SessionFilter | None = None,
        *,
        array: bool = False,
        limit: int | None = None,
        on_progress: Callable[[int], None] | None = None,
    ) -> None:
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise UsageError(f"the limit must be a whole number from 0, got {limit!r}")
        self.format = writable_format(to)
        self.filters = filters or SessionFilter()
        store.require("export", f"export the dataset {dataset!r}")
        store.datasets.id_of(dataset)  # raises for an unknown dataset
        if self.filters.run_id is not None:
            store.runs.get(self.filters.run_id)  # an unknown run is an error, not an empty export
        self.store = store
        self.dataset = dataset
        self.array = array
        self.limit = limit
        self.on_progress = on_progress
        self.count = 0
        self.size = 0
        self.labels_left = 0  # sessions whose labels the format does not carry (made so far)
        self._digest = hashlib.sha256()
        self._started = False

    @property
    def sha256(self) -> str:
        """The SHA-256 of the bytes made so far."""
        return self._digest.hexdigest()

    def __iter__(self) -> Iterator[bytes]:
        if self._started:
            raise UsageError("an export stream can be read once; make another for the same export")
        self._started = True
        return self._chunks()

    def _chunks(self) -> Iterator[bytes]:
        text = io.StringIO()
        writer = SessionWriter(text, self.format, array=self.array)
        labelled = self.store.answers.has_labels(self.dataset)
        left = self.limit
        for pks in _pk_chunks(self.store, self.dataset, self.filters, min(500, left or 500)):
            if left is not None:
                pks = pks[:left]
                left -= len(pks)
                if not pks:
                    break
            # A chunk's sessions are read, written and let go with the cyclic collector paused (they form no cycles):
            # back on, it finds them gone, not half a million objects still held to walk through.
            with paused_gc():
                ready = []
                for session in self._sessions(pks, labelled):
                    writer.write(session)
                    self.count += 1
                    if self.on_progress and self.count % 500 == 0:
                        self.on_progress(self.count)
                    if text.tell() >= _CHUNK:
                        ready.append(self._take(text))
            yield from ready
            if left == 0:
                break
        writer.close()
        if self.on_progress:
            self.on_progress(self.count)
        if text.tell():
            yield self._take(text)

    def _sessions(self, pks: list[int], labelled: bool) -> Iterator[Session]:
        """The sessions of ``pks`` to write; in a lossless format (evalcore's) each with its labels — the answers and
        gold given on it, the comments (``LabelledSession.labels``); in another, the sessions that have some are
        counted (``labels_left``). (``labelled``: whether the dataset has labels at all.)"""
        sessions = self.store.sessions.get_many(pks)
        labels = self.store.answers.carried([s.pk for s in sessions]) if labelled else {}
        if not self.format.lossless:
            self.labels_left += len(labels)
            labels = {}
        if not labels:  # (most exports: the sessions as they are)
            for stored in sessions:
                yield stored.session
            return
        for stored in sessions:
            found = labels.get(stored.pk)
            yield stored.session if found is None else LabelledSession(**stored.session.__dict__, labels=found)

    def _take(self, text: io.StringIO) -> bytes:
        chunk = text.getvalue().encode("utf-8")
        text.seek(0)
        text.truncate()
        self._digest.update(chunk)
        self.size += len(chunk)
        return chunk

    def write_to(self, out: IO[bytes]) -> int:
        """Write the whole export into the binary stream ``out``; return how many sessions it holds."""
        for chunk in self:
            out.write(chunk)
        return self.count

    def read_all(self) -> bytes:
        """The whole export as bytes (held in memory: for a download). Gathered in a ``BytesIO``,
        whose ``getvalue`` hands over its buffer: the peak is about the export's size, not twice it."""
        out = io.BytesIO()
        self.write_to(out)
        return out.getvalue()


def manifest_record(
    dataset: str,
    to: str,
    file_name: str,
    filters: SessionFilter,
    *,
    count: int,
    size: int,
    sha256: str,
    by: User | None = None,
) -> dict[str, Any]:
    """What a manifest says about an export: its dataset, format, file, filters, count, size and
    SHA-256, the schema versions, when it was made and by whom (their user id — None for the machine's local user
    before its first change — and display name)."""
    record: dict[str, Any] = {
        "dataset": dataset,
        "format": to,
        "file": file_name,
        "filters": filters.as_dict(),
        "count": count,
        "bytes": size,
        "sha256": sha256,
        "store_schema_version": SCHEMA_VERSION,
        "session_schema_version": MODEL_SCHEMA_VERSION,
        "exported_at": now(),
    }
    if by is not None:
        record["exported_by"] = {"id": by.id or None, "name": by.name, "email": by.email}
    return record


def manifest_bytes(export: ExportStream, file_name: str) -> bytes:
    """The manifest of ``export`` (read to its end) for a data file called ``file_name``, as UTF-8."""
    record = manifest_record(
        export.dataset, export.format.name, file_name, export.filters,
        count=export.count, size=export.size, sha256=export.sha256, by=export.store.user,
    )  # fmt: skip
    return (json.dumps(record, indent=2) + "\n").encode("utf-8")


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

    A JSON array when the name ends in ``.json`` (as ``writer_for`` writes), else JSON Lines.
    The file and its manifest appear together or not at all (see the module's docstring).
    """
    store.refuse_as_output(path)
    store.refuse_as_output(manifest_path(path))
    export = ExportStream(
        store, dataset, to, filters, array=Path(path).suffix.lower() == ".json", on_progress=on_progress
    )  # checks the dataset, the format and the run before any file is made
    where, sha256 = write_with_manifest(path, export.write_to, lambda: manifest_bytes(export, Path(path).name))
    return ExportReport(dataset, to, str(path), where, export.count, sha256, export.labels_left)


def write_with_manifest(
    path: str | os.PathLike[str], write: Callable[[IO[bytes]], Any], manifest: Callable[[], bytes]
) -> tuple[str | None, str]:
    """Write an export to ``path`` (``write`` gets the file) and its manifest beside it (``manifest()``, asked once
    the data is written): both appear together or not at all (see the module's docstring); a stream gets no
    manifest. Returns where the manifest went (None: nowhere) and the data's SHA-256."""
    outputs: list[PendingOutput] = []
    try:
        data = PendingOutput(path)
        outputs.append(data)
        pending = None
        if not data.target.stream:
            pending = PendingOutput(manifest_path(path))
            outputs.append(pending)
            if pending.target.path == data.target.path:
                raise UsageError(f"{path} and its manifest {manifest_path(path)} are the same file")
        write(data.file.buffer)
        data.close()
        if pending is not None:
            pending.file.buffer.write(manifest())
        publish(*outputs)  # the manifest last: present only beside the data it describes
    finally:
        for out in outputs:
            out.discard()
    return (str(manifest_path(path)) if pending is not None else None), data.sha256


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


# -- a run's scores -----------------------------------------------------------------------------


def score_records(store: Store, run_id: int) -> Iterator[dict[str, Any]]:
    """One record per (session, metric) of run ``run_id``, in session order: session_id, assistant_id, dataset,
    position, metric, value, reason, error, with ``parts`` (a metric's sub-scores) and ``not_applicable: true``
    only when they apply. An unknown run is a ``NotFoundError``."""

    store.require("export", "export a run's scores")
    runs = store.runs
    dataset = runs.get(run_id).dataset
    for row in runs.scores(run_id):
        record: dict[str, Any] = {
            "session_id": row.session_id,
            "assistant_id": row.assistant_id,
            "dataset": dataset,
            "position": row.position,
            "metric": row.metric,
            "value": row.value,
            "reason": row.reason,
            "error": row.error,
        }
        if row.sub:
            record["parts"] = row.sub
        if row.status == "not_applicable":
            record["not_applicable"] = True
        yield record


def scores_jsonl(store: Store, run_id: int) -> bytes:
    """Run ``run_id``'s scores as JSON Lines (UTF-8), one line per ``score_records`` record."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in score_records(store, run_id)).encode("utf-8")


def scores_csv(store: Store, run_id: int) -> bytes:
    """Run ``run_id``'s scores as CSV (UTF-8, a header row, RFC 4180 quoting and line ends): the
    ``SCORE_COLUMNS``; ``parts`` as JSON, ``not_applicable`` as ``true`` or empty, a missing value empty.

    A CSV is opened in a spreadsheet, which takes a cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a
    carriage return for a formula: such a text cell (a judge's reason, say, which a session's text can steer)
    starts with ``'`` here, so that it opens as the text it is (OWASP's advice on CSV injection). The JSON
    Lines download keeps every text exactly.
    """
    text = io.StringIO()
    out = csv.writer(text)
    out.writerow(SCORE_COLUMNS)
    for r in score_records(store, run_id):
        parts = r.get("parts")
        out.writerow([
            _as_text(r["session_id"]), _as_text(r["assistant_id"]), _as_text(r["dataset"]), r["position"],
            _as_text(r["metric"]), r["value"], _as_text(r["reason"]),
            _as_text(r["error"]), json.dumps(parts, ensure_ascii=False) if parts else None,
            "true" if r.get("not_applicable") else None,
        ])  # fmt: skip
    return text.getvalue().encode("utf-8")


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _as_text(value: Any) -> Any:
    """A text cell a spreadsheet opens as text, not as a formula (see ``scores_csv``)."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value

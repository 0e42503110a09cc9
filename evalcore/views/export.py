"""What the app's Export page shows and hands out, computed: the filter, the preview, the file names,
the equivalent command line, and the downloads (an export with its manifest, a run's scores).

A download's bytes are made by the same code as ``evalcore export`` (``ExportStream``): the file a
person downloads is, byte for byte, the one the command line writes for the same filters.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field

from evalcore._infra.printable import visible_json
from evalcore.errors import UsageError
from evalcore.exporting import ExportStream, manifest_bytes, scores_csv, scores_jsonl
from evalcore.formats.base import formats
from evalcore.store.queries import SessionFilter
from evalcore.store.runs import Run
from evalcore.store.store import Store

__all__ = [
    "SCORE_KINDS",
    "ExportDownload",
    "ExportPreview",
    "LabelsDownload",
    "ScoresDownload",
    "cli_command",
    "download_name",
    "export_preview",
    "layout_caption",
    "writable_formats",
]

#: How a run's scores can be downloaded: kind -> (label, MIME type).
SCORE_KINDS = {"csv": ("CSV", "text/csv"), "jsonl": ("JSON Lines", "application/jsonl")}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def writable_formats() -> dict[str, str]:
    """Every format evalcore can write, by name, with what it is."""
    return {f.name: f.description for f in formats() if f.writable}


def layout_caption(to: str, *, array: bool) -> str:
    """What the export will write, in a line (plain text): the format's records and how they are laid out in the
    file. (What each format is stays in the format's help: its own description speaks of the files it reads.)"""
    if array:
        return f"Writes {to} records as one JSON array (a .json file)."
    return f"Writes {to} records as JSON Lines: one record a line (a .jsonl file)."


def _slug(text: str) -> str:
    return _UNSAFE.sub("-", text).strip("-.") or "export"


def download_name(dataset: str, to: str, *, array: bool = False) -> str:
    """The file name of a download: ``DATASET.FORMAT.jsonl`` (``.json`` for one JSON array), with
    anything but letters, digits, ``.``, ``_`` and ``-`` in the dataset's name made a ``-``."""
    return f"{_slug(dataset)}.{_slug(to)}.{'json' if array else 'jsonl'}"


def cli_command(dataset: str, to: str, filters: SessionFilter, file_name: str) -> str | None:
    """The ``evalcore export`` command that writes the same file, or ``None`` when the filter has a
    part the command line has no option for (ground truth present or missing)."""
    if filters.has_truth is not None:
        return None
    words = ["evalcore", "export", "--dataset", dataset, "--to", to, "-o", file_name]
    if filters.status:
        words += ["--status", ",".join(filters.status)]
    for tag in filters.tags:
        words += ["--tag", tag]
    if filters.assistant:
        words += ["--assistant", filters.assistant]
    if filters.search:
        words += ["--search", filters.search]
        if filters.search_system_prompt:
            words.append("--search-system-prompt")
    if filters.run_id is not None and filters.metric is not None:
        words += ["--run", str(filters.run_id), "--metric", filters.metric]
    if filters.min_score is not None:
        words += ["--min-score", repr(filters.min_score)]
    if filters.max_score is not None:
        words += ["--max-score", repr(filters.max_score)]
    return " ".join(shlex.quote(w) for w in words)


@dataclass(frozen=True)
class ExportPreview:
    """How many sessions an export holds and its first records, each pretty-printed (or as written
    when it is not JSON), cut to ``max_lines`` lines."""

    count: int
    records: list[str] = field(default_factory=list)

    @property
    def tallest(self) -> int:
        """The most lines any record shown has (0 when none)."""
        return max((record.count("\n") + 1 for record in self.records), default=0)

    @property
    def caption(self) -> str:
        """One sentence: what the preview shows of what."""
        if not self.count:
            return "No session matches: the file would be empty."
        records = "record" if len(self.records) == 1 else f"{len(self.records)} records"
        sessions = f"{self.count:,} session" + ("" if self.count == 1 else "s")
        return f"The first {records} of the file ({sessions}), pretty-printed: the file has one per line."


def export_preview(
    store: Store, dataset: str, to: str, filters: SessionFilter | None = None, *, limit: int = 3, max_lines: int = 80
) -> ExportPreview:
    """The count of the export of ``dataset`` in format ``to`` and its first ``limit`` records, made
    by the export itself (a session some formats write as several records gives several)."""
    f = filters or SessionFilter()
    total = store.sessions.count(dataset, f)
    head = ExportStream(store, dataset, to, f, limit=limit).read_all().decode("utf-8")
    lines = [line for line in head.split("\n") if line]  # not splitlines: a record may hold U+2028
    records = [_pretty(line, max_lines) for line in lines[:limit]]
    return ExportPreview(total, records)


def _pretty(line: str, max_lines: int) -> str:
    try:
        text = json.dumps(json.loads(line), indent=2, ensure_ascii=False)
    except ValueError:
        text = line
    lines = text.split("\n")
    if len(lines) > max_lines:
        more = len(lines) - max_lines
        lines = [*lines[:max_lines], f"… {more:,} more line{'' if more == 1 else 's'} in the file"]
    # A right-to-left override or an invisible character in a value is shown as JSON's escape of it (``\u202e``:
    # the same JSON), never applied: it would reorder or hide what the preview shows.
    return visible_json("\n".join(lines))


class ExportDownload:
    """An export to download with its manifest, made only when asked for (``data``, ``manifest``:
    callables for a download button; each runs the export anew, so it is what the store holds then).

    The manifest describes the file last downloaded through ``data``; before any, it describes the
    export as it is when the manifest is asked for (the export is run to hash it, and not kept).
    """

    def __init__(
        self, store: Store, dataset: str, to: str, filters: SessionFilter | None = None, *, array: bool = False
    ) -> None:
        self.store = store
        self.dataset = dataset
        self.to = to
        self.filters = filters or SessionFilter()
        self.array = array
        self.file_name = download_name(dataset, to, array=array)
        self.manifest_name = self.file_name + ".manifest.json"
        self._manifest: bytes | None = None
        ExportStream(store, dataset, to, self.filters)  # an unknown dataset, format or run: an error now

    @property
    def key(self) -> tuple[str, str, str, str, bool, int]:
        """What makes two downloads the same export: the database, the dataset, format, filters and layout, and
        who exports it (the manifest names them)."""
        return (self.store.identity, self.dataset, self.to, json.dumps(self.filters.as_dict(), sort_keys=True),
                self.array, self.store.user.id)  # fmt: skip

    def _stream(self) -> ExportStream:
        return ExportStream(self.store, self.dataset, self.to, self.filters, array=self.array)

    def data(self) -> bytes:
        """The export's bytes (remembering their manifest)."""
        export = self._stream()
        body = export.read_all()
        self._manifest = manifest_bytes(export, self.file_name)
        return body

    def manifest(self) -> bytes:
        """The manifest of the file last downloaded, else of the export as it is now."""
        if self._manifest is not None:
            return self._manifest
        export = self._stream()
        for _ in export:  # hashed as it goes, kept nowhere
            pass
        return manifest_bytes(export, self.file_name)


class ScoresDownload:
    """A run's scores to download as CSV or JSON Lines, made only when asked for (``data``)."""

    def __init__(self, store: Store, run: Run, kind: str) -> None:
        if kind not in SCORE_KINDS:
            raise UsageError(f"unknown scores format {kind!r}; use one of {', '.join(SCORE_KINDS)}")
        self.store = store
        self.run = run
        self.kind = kind
        self.file_name = f"{_slug(run.dataset)}.run-{run.id}.scores.{kind}"
        self.mime = SCORE_KINDS[kind][1]
        #: The button's label (plain text): the file's type first, so a long name cut short still shows it.
        self.label = f"Download {SCORE_KINDS[kind][0]} · {self.file_name}"

    def data(self) -> bytes:
        """The run's scores, one row per (session, metric)."""
        make = scores_csv if self.kind == "csv" else scores_jsonl
        return make(self.store, self.run.id)


class LabelsDownload:
    """What people answered on a dataset, and the gold, to download as CSV or JSON Lines: ``evalcore export-labels``'
    bytes, made only when asked for (``data``)."""

    def __init__(self, store: Store, dataset: str, kind: str) -> None:
        if kind not in SCORE_KINDS:
            raise UsageError(f"unknown labels format {kind!r}; use one of {', '.join(SCORE_KINDS)}")
        self.store = store
        self.dataset = dataset
        self.kind = kind
        self.file_name = f"{_slug(dataset)}.labels.{kind}"
        self.mime = SCORE_KINDS[kind][1]
        #: The button's label (plain text): the file's type first, so a long name cut short still shows it.
        self.label = f"Download {SCORE_KINDS[kind][0]} · {self.file_name}"

    def data(self) -> bytes:
        from evalcore.label_export import label_bytes

        return label_bytes(self.store, self.dataset, as_csv=self.kind == "csv")[0]

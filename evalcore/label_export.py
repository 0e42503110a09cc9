"""``evalcore export-labels``: what people answered on a dataset, and the gold, as a file of its own.

One row per submitted answer and one per gold answer, with the fields ``LABEL_COLUMNS``: the session's
``session_id`` (else the identity evalcore gave it) and ``assistant_id``, the ``turn`` (empty for a question about
the whole session), the ``question``'s name, the ``value``, the ``user`` who gave it (for gold: who settled it), its
``status`` (``submitted`` or ``gold``), when (``at``), and the ``question_version`` it answered. Drafts are their
writers' own and are not exported.

JSON Lines, or CSV when the file's name ends in ``.csv`` (a list of labels, a multi-label answer, as JSON in its
cell; text that a spreadsheet would take for a formula starts with ``'``, as in the scores' CSV). The file gets a
manifest beside it as every export does, and appears with it or not at all. ``label_bytes`` gives the same bytes
for the app's download.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evalcore.exporting import ExportReport, manifest_path, manifest_record, write_with_manifest
from evalcore.exporting import _as_text as spreadsheet_text
from evalcore.store.queries import SessionFilter
from evalcore.store.store import Store

__all__ = ["LABEL_COLUMNS", "export_labels", "label_bytes", "label_records"]

LABEL_COLUMNS = ("session_id", "assistant_id", "turn", "question", "value", "user", "status", "at", "question_version")


def label_records(store: Store, dataset: str) -> Iterator[dict[str, Any]]:
    """The dataset's submitted and gold answers, one record each (see the module's docstring)."""
    store.require("export", f"export the labels of {dataset!r}")
    for row in store.answers.label_rows(dataset):
        yield dict(zip(LABEL_COLUMNS, row, strict=True))


def label_bytes(store: Store, dataset: str, *, as_csv: bool = False) -> tuple[bytes, int]:
    """The labels export of ``dataset`` (JSON Lines, or CSV) as UTF-8, and how many rows it has."""
    count = 0
    if not as_csv:
        lines = []
        for record in label_records(store, dataset):
            lines.append(json.dumps(record, ensure_ascii=False))
            count += 1
        return "".join(line + "\n" for line in lines).encode("utf-8"), count
    text = io.StringIO()
    out = csv.writer(text)
    out.writerow(LABEL_COLUMNS)
    for record in label_records(store, dataset):
        value = record["value"]
        cell = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        out.writerow([
            spreadsheet_text(record["session_id"]), spreadsheet_text(record["assistant_id"]), record["turn"],
            spreadsheet_text(record["question"]), spreadsheet_text(cell), spreadsheet_text(record["user"]),
            record["status"], record["at"], record["question_version"],
        ])  # fmt: skip
        count += 1
    return text.getvalue().encode("utf-8"), count


def manifest_bytes_of(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, indent=2) + "\n").encode("utf-8")


def export_labels(store: Store, dataset: str, path: str | os.PathLike[str]) -> ExportReport:
    """Write the labels export of ``dataset`` to ``path`` (CSV when it ends in ``.csv``) with its manifest."""
    store.refuse_as_output(path)
    store.refuse_as_output(manifest_path(path))
    kind = "labels-csv" if Path(path).suffix.lower() == ".csv" else "labels-jsonl"
    data_bytes, count = label_bytes(store, dataset, as_csv=kind == "labels-csv")
    where, sha256 = write_with_manifest(
        path,
        lambda out: out.write(data_bytes),
        lambda: manifest_bytes_of(
            manifest_record(
                dataset,
                kind,
                Path(path).name,
                SessionFilter(),
                count=count,
                size=len(data_bytes),
                sha256=hashlib.sha256(data_bytes).hexdigest(),
                by=store.user,
            )  # fmt: skip
        ),
    )
    return ExportReport(dataset, kind, str(path), where, count, sha256)

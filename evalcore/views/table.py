"""Table rows as typed objects: each page's rows are frozen dataclasses whose fields are the table's columns.

A page reads a row's values by attribute, never by a column's heading; ``records`` turns rows into what a table
widget draws (one dict per row, keyed by field name), and ``labels`` gives each column's heading, from the
field's ``column`` label (else its name with spaces). A field made with ``spread()`` (a dict) becomes one
column per key, headed by the key: the Sessions page's metrics, which differ from one dataset to another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field, fields, is_dataclass
from functools import cache
from typing import Any

__all__ = ["column", "labels", "records", "spread"]


def column(label: str, **options: Any) -> Any:
    """A field shown under the heading ``label`` (``options`` as for ``dataclasses.field``)."""
    return field(metadata={"label": label}, **options)


def spread(**options: Any) -> Any:
    """A dict field shown as one column per key, headed by the key."""
    return field(metadata={"spread": True}, **options)


@cache
def _columns(row_type: type) -> tuple[tuple[str, str, bool], ...]:
    if not is_dataclass(row_type):
        raise TypeError(f"{row_type.__name__} is not a dataclass of table rows")
    return tuple(
        (f.name, f.metadata.get("label", f.name.replace("_", " ")), bool(f.metadata.get("spread")))
        for f in fields(row_type)
    )


def labels(row_type: type, rows: Sequence[Any] = ()) -> dict[str, str]:
    """Each column's heading, by the key ``records`` gives it (a spread field's keys: themselves)."""
    result: dict[str, str] = {}
    for name, label, spreads in _columns(row_type):
        if spreads:
            for row in rows:
                result.update((key, key) for key in getattr(row, name))
        else:
            result[name] = label
    return result


def records(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """The rows as a table widget takes them: one dict per row, keyed by field name (a spread field's keys
    in its place)."""
    if not rows:
        return []
    columns = _columns(type(rows[0]))  # type: ignore[arg-type]
    result = []
    for row in rows:
        record: dict[str, Any] = {}
        for name, _, spreads in columns:
            value = getattr(row, name)
            if spreads:
                record.update(value)
            else:
                record[name] = value
        result.append(record)
    return result

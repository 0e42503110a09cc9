"""The fuzz cases: every sample file, one field at a time replaced by a hostile value, and the
whole file damaged, framed anew (a one-line array with an element nested past the parser among them),
duplicated or truncated, or replaced by what holds no JSON text at all (NUL bytes, UTF-16, gzip).
Deterministic: the same seed gives the same cases in the same order, each with a name that says what it is.

A case knows its records ("units", the values a reader sees) when its damage keeps them whole,
so the oracle (``harness.py``) can read each one on its own; when bytes are damaged anywhere in
a file of records on lines, each line is a unit; elsewhere (a pretty-printed array cut short,
say) only the units wholly before the damage are known good.
"""

from __future__ import annotations

import gzip
import itertools
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DATA = ROOT / "sample_data"

#: Hostile values as JSON text, of every JSON type; each replaces one field at a time.
HOSTILE_VALUES: list[tuple[str, str]] = [
    ("null", "null"),
    ("true", "true"),
    ("false", "false"),
    ("zero", "0"),
    ("minus-one", "-1"),
    ("max-float", "1e308"),
    ("float-overflowing-to-infinity", "1e999"),
    ("minus-zero", "-0.0"),
    ("NaN", "NaN"),
    ("int-2^64", "18446744073709551616"),
    ("int-below-int64", "-9223372036854775809"),
    ("int-4301-digits", "9" * 4301),
    ("int-5000-digits", "-" + "1" * 5000),
    ("empty-string", '""'),
    ("long-string-200k", json.dumps("x" * 200_000)),
    ("lone-high-surrogate", '"\\ud800"'),
    ("lone-low-surrogate-in-text", '"ab\\udc00cd"'),
    ("reversed-surrogate-pair", '"\\udc00\\ud800"'),
    ("escaped-NUL", '"a\\u0000b"'),
    ("RTL-override-and-arabic", json.dumps("\u202eevil\u202c مرحبا", ensure_ascii=False)),
    ("combining-marks", json.dumps("e" + "\u0301" * 60, ensure_ascii=False)),
    ("script-tag", json.dumps("<script>alert(1)</script><img src=x onerror=alert(2)>")),
    ("emoji-as-surrogate-pair", '"\\ud83d\\ude00"'),
    ("json-text-in-string", json.dumps(json.dumps({"a": [1, {"b": None}], "c": "d"}))),
    ("deep-json-text-in-string", json.dumps('{"a":' * 300 + "1" + "}" * 300)),
    ("deep-array-text-in-string", json.dumps("[" * 1100 + "]" * 1100)),
    ("empty-array", "[]"),
    ("empty-object", "{}"),
    ("array-of-null", "[null]"),
    ("array-of-empty-object", "[{}]"),
    ("object-with-empty-key", '{"": null}'),
    ("nested-lists-130", "[" * 130 + "]" * 130),
    ("nested-objects-300", '{"a":' * 300 + "1" + "}" * 300),
    ("nested-lists-1100", "[" * 1100 + "]" * 1100),
    ("nested-objects-2000", '{"a":' * 2000 + "null" + "}" * 2000),
]

_SENTINEL = "\x00fuzz-hostile\x00"
_LONE = re.compile("[\ud800-\udfff]")
_SENTINEL_JSON = json.dumps(_SENTINEL)


@dataclass(frozen=True)
class Sample:
    """A sample file as the units a reader sees, each with its text (one line) and its value."""

    name: str
    framing: str  # "lines", "array" (one JSON array) or "document" (one pretty-printed value)
    texts: list[str]
    values: list[Any]
    paths: list[list[tuple[int, tuple[Any, ...]]]] = field(default_factory=list)  # per unit: (unit, path)

    @property
    def suffix(self) -> str:
        return Path(self.name).suffix


@dataclass
class Case:
    """One fuzz case: the bytes of a file, and what is known of its units."""

    name: str
    sample: Sample
    data: bytes
    # The units, one JSON text each, when the case keeps them whole; ``None`` when bytes are damaged.
    units: list[str] | None
    # When bytes are damaged: the byte offset of the first damage (units wholly before it are known),
    # the units' byte spans in the file before the damage, and the one unit damaged (when only one is).
    damage_at: int | None = None
    kind: str = "field"
    spans: list[tuple[int, int]] = field(default_factory=list)
    damaged_unit: int | None = None
    framing: str | None = None  # when not the sample's


def load_samples() -> list[Sample]:
    """Every sample file (``sample_data/*.json*``) as units."""
    samples = []
    for path in sorted(SAMPLE_DATA.glob("*.json*")):
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            texts = [line for line in text.split("\n") if line.strip()]
            values = [json.loads(t) for t in texts]
            framing = "lines"
        else:
            whole = json.loads(text)
            if isinstance(whole, list):
                values, framing = whole, "array"
            else:
                values, framing = [whole], "document"
            texts = [json.dumps(v, ensure_ascii=False) for v in values]
        sample = Sample(path.name, framing, texts, values)
        for i, value in enumerate(values):
            sample.paths.append([(i, p) for p in _paths(value, ())])
        samples.append(sample)
    return samples


def _paths(value: Any, prefix: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    """Every field of ``value`` (every node below the root), as a path of keys and indexes."""
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        path = (*prefix, key)
        yield path
        yield from _paths(child, path)


def path_name(path: tuple[Any, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "(root)"


def _replaced(value: Any, path: tuple[Any, ...]) -> Any:
    """A copy of ``value`` with the field at ``path`` replaced by the sentinel."""
    if not path:
        return _SENTINEL
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {k: _replaced(v, rest) if k == head else v for k, v in value.items()}
    return [_replaced(v, rest) if i == head else v for i, v in enumerate(value)]


def hostile_text(value: Any, path: tuple[Any, ...], hostile: str, *, indent: int | None = None) -> str:
    """JSON text of ``value`` with the field at ``path`` replaced by the JSON text ``hostile``."""
    text = json.dumps(_replaced(value, path), ensure_ascii=False, indent=indent)
    assert text.count(_SENTINEL_JSON) == 1
    return text.replace(_SENTINEL_JSON, hostile)


def frame(sample: Sample, units: list[str], framing: str | None = None) -> bytes:
    """File bytes holding ``units`` (one JSON text each) framed as ``framing`` (default: the sample's)."""
    return framed(sample, units, framing)[0]


def framed(sample: Sample, units: list[str], framing: str | None = None) -> tuple[bytes, list[tuple[int, int]]]:
    """``frame``, and the byte span of each unit in it."""
    framing = framing or sample.framing
    if framing == "document" and len(units) != 1:
        framing = "documents"
    opening, pieces, between, closing = {
        "lines": ("", units, "\n", "\n"),
        "array": ("[\n", [_indent(u) for u in units], ",\n", "\n]\n"),
        "one-line-array": ("[", units, ",", "]"),
        "documents": ("", [_pretty(u) for u in units], "\n", "\n"),
        "document": ("", [_pretty(u) for u in units], "", "\n"),
    }[framing]
    spans, at = [], len(opening.encode())
    for piece in pieces:
        size = len(piece.encode())
        spans.append((at, at + size))
        at += size + len(between.encode())
    return (opening + between.join(pieces) + closing).encode("utf-8"), spans


def _pretty(unit: str) -> str:
    try:
        text = json.dumps(json.loads(unit), ensure_ascii=False, indent=2)
    except (ValueError, RecursionError):  # hostile text the stdlib cannot write back: kept on its line
        return unit
    # A lone surrogate (a hostile value) is written back as the escape it came as.
    return _LONE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def _indent(unit: str) -> str:
    return "  " + _pretty(unit).replace("\n", "\n  ")


def field_cases(samples: list[Sample], seed: int) -> Iterator[Case]:
    """One field of one unit replaced by one hostile value, round-robin over samples and values, so
    that any prefix of the sequence covers every sample and, soon, every value on each."""
    rng = random.Random(seed)
    for round_ in itertools.count():
        for s, sample in enumerate(samples):
            label, hostile = HOSTILE_VALUES[(round_ + 5 * s) % len(HOSTILE_VALUES)]
            unit, path = rng.choice([p for paths in sample.paths for p in paths])
            units = list(sample.texts)
            units[unit] = hostile_text(sample.values[unit], path, hostile)
            name = f"field:{sample.name}#{unit}:{path_name(path)}={label}"
            yield Case(name, sample, frame(sample, units), units, kind="field")


def _insert(data: bytes, rng: random.Random, what: bytes) -> tuple[bytes, int]:
    at = rng.randrange(1, max(2, len(data) - 1))
    return data[:at] + what + data[at:], at


def byte_cases(samples: list[Sample], seed: int) -> Iterator[Case]:
    """Damaged bytes, new framings, duplicates and truncations of whole files, round-robin."""
    rng = random.Random(seed + 1)
    kinds = [
        "bom", "crlf", "invalid-utf8-byte", "cesu-surrogate-bytes", "overlong-utf8", "cut-utf8-sequence",
        "nul-byte", "nul-line", "truncated", "truncated-at-a-newline", "duplicate-record", "every-record-twice",
        "empty-array-first-line", "message-list-first-line", "blank-lines", "whitespace-prefix-70k",
        "trailing-garbage", "one-line-array", "pretty-array", "documents", "lines", "cr-line-ends",
        "char-deleted", "char-deleted-in-documents", "nul-file", "deep-one-line-array", "utf-16", "gzip",
    ]  # fmt: skip
    for round_ in itertools.count():
        for s, sample in enumerate(samples):
            kind = kinds[(round_ + 3 * s) % len(kinds)]
            case = _byte_case(sample, kind, rng)
            if case is not None:
                yield case


#: What the oracle reads for a file that holds no JSON at all (NUL bytes, UTF-16, gzip): one unit that is bad.
_NO_JSON = "<not JSON>"


def _byte_case(sample: Sample, kind: str, rng: random.Random) -> Case | None:
    units = list(sample.texts)
    data = frame(sample, units)
    name = f"bytes:{sample.name}:{kind}"
    if kind == "nul-file":  # what a crash leaves: zeros, no line end (one problem, decided from the first bytes)
        return Case(name, sample, b"\0" * rng.randrange(1, 3 << 20), [_NO_JSON], kind="bytes")
    if kind == "utf-16":  # one problem on line 1, naming the encoding
        return Case(name, sample, data.decode("utf-8").encode("utf-16"), [_NO_JSON], kind="bytes")
    if kind == "gzip":
        return Case(name, sample, gzip.compress(data), [_NO_JSON], kind="bytes")
    if kind == "deep-one-line-array":  # what json.dump(list) writes, with an element nested past the parser
        deep = "[" * 5000 + "]" * 5000
        units.insert(rng.randrange(len(units) + 1), deep)
        return Case(f"{name}#{units.index(deep)}", sample, frame(sample, units, "one-line-array"), units, kind="bytes")
    if kind == "bom":
        return Case(name, sample, b"\xef\xbb\xbf" + data, units, kind="bytes")
    if kind == "crlf":
        return Case(name, sample, data.replace(b"\n", b"\r\n"), units, kind="bytes")
    if kind == "cr-line-ends":  # one line by the JSON Lines rule: values one after another all the same
        return Case(name, sample, data.replace(b"\n", b"\r"), units, kind="bytes")
    if kind == "blank-lines":
        return Case(name, sample, data.replace(b"\n", b"\n\n \t\n", 3), units, kind="bytes")
    if kind == "whitespace-prefix-70k":
        return Case(name, sample, b" " * 70_000 + b"\n\n" + data, units, kind="bytes")
    if kind == "duplicate-record":
        i = rng.randrange(len(units))
        units.insert(i + 1 if rng.random() < 0.5 else len(units), units[i])
        return Case(f"{name}#{i}", sample, frame(sample, units), units, kind="bytes")
    if kind == "every-record-twice":
        units = units + units
        return Case(name, sample, frame(sample, units), units, kind="bytes")
    if kind in ("empty-array-first-line", "message-list-first-line"):
        first = "[]" if kind == "empty-array-first-line" else '[{"role": "user", "content": "hi"}]'
        units = [first, *units]
        return Case(name, sample, frame(sample, units, "lines"), units, kind="bytes")
    if kind in ("one-line-array", "pretty-array", "documents", "lines"):
        framing = {"pretty-array": "array"}.get(kind, kind)
        if framing in ("one-line-array", "array") and len(units) == 1 and sample.framing == "document":
            return None  # one document in an array is an array of one: the same file
        return Case(name, sample, frame(sample, units, framing), units, kind="bytes")
    return _damaged(sample, kind, rng, data, name)


def _damaged(sample: Sample, kind: str, rng: random.Random, data: bytes, name: str) -> Case | None:
    """Bytes damaged at one place: what is known is the units before it (or all but the one damaged)."""
    damaged: tuple[bytes, int] | None = None
    data, spans = framed(sample, sample.texts, "documents" if kind == "char-deleted-in-documents" else None)
    if kind.startswith("char-deleted"):  # one character (not a newline) of one unit: a syntax error, likely
        unit = rng.randrange(len(spans))
        start, end = spans[unit]
        at = rng.randrange(start, end)
        while data[at : at + 1] in (b"\n", b"") or (data[at] & 0xC0) == 0x80:
            at = start + (at - start + 1) % (end - start)
        size = 1
        while at + size < len(data) and (data[at + size] & 0xC0) == 0x80:  # a whole UTF-8 character
            size += 1
        case = Case(f"{name}#{unit}", sample, data[:at] + data[at + size :], None, damage_at=at, kind="bytes")
        case.spans, case.damaged_unit = spans, unit
        case.framing = "documents" if kind == "char-deleted-in-documents" else None
        return case
    if kind == "invalid-utf8-byte":
        damaged = _insert(data, rng, b"\xff")
    elif kind == "cesu-surrogate-bytes":
        damaged = _insert(data, rng, b"\xed\xa0\x80")
    elif kind == "overlong-utf8":
        damaged = _insert(data, rng, b"\xc0\xaf")
    elif kind == "cut-utf8-sequence":
        damaged = _insert(data, rng, b"\xe2\x82")
    elif kind == "nul-byte":
        damaged = _insert(data, rng, b"\x00")
    elif kind == "nul-line":
        starts = [m.end() for m in re.finditer(b"\n", data)][:-1] or [0]
        at = rng.choice(starts)
        damaged = data[:at] + b"\x00\x00\x00\n" + data[at:], at
    elif kind == "truncated":
        at = rng.randrange(1, len(data) - 2)
        damaged = data[:at], at
    elif kind == "truncated-at-a-newline":
        newlines = [m.start() for m in re.finditer(b"\n", data)][:-1]
        if not newlines:
            return None
        at = rng.choice(newlines)
        damaged = data[:at], at
    elif kind == "trailing-garbage":
        damaged = data + b"\n}{ not json\n", len(data)
    assert damaged is not None, kind
    case = Case(name, sample, damaged[0], None, damage_at=damaged[1], kind="bytes")
    case.spans = spans
    return case

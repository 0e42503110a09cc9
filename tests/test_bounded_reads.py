"""Reading is bounded, whatever the input (issue 23, item 3): no record is held past the maximum record size
(``--max-record-mb``, 64 MiB by default), a line that is no JSON from its first bytes (NUL bytes) is known at
once and never held, an endless input (``/dev/zero``) is stopped by the limit, and a one-line JSON array (what
``json.dump(list)`` writes) is streamed element by element. Checked on streams that count what is read, on real
files through the command line, and for memory in real processes (``tests/bench/bench_bounded_reads.py`` does
the same at 1 GiB and 300 MB)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalcore import convert_file, validate_file
from evalcore.cli import main
from evalcore.errors import UsageError
from evalcore.formats import read
from evalcore.formats.jsonio import MAX_RECORD, PIECE, iter_records
from evalcore.importing import import_file, import_stream
from evalcore.model.config import load_prices
from evalcore.store import open_store

MIB = 1 << 20
CHAT = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
GOOD = json.dumps(CHAT)


class Endless(io.TextIOBase):
    """A text stream of one character, without end (``/dev/zero`` read as text), that counts what is read."""

    def __init__(self, char: str = "\0") -> None:
        self.char = char
        self.taken = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        assert size is not None and size >= 0, "an endless stream read whole"
        self.taken += size
        return self.char * size

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        return self.read(size)


class LazyArray(io.TextIOBase):
    """A one-line JSON array of ``count`` copies of ``element``, made as it is read; counts what is read."""

    def __init__(self, element: str, count: int) -> None:
        self.parts: Iterator[str] = iter(["[", *(f"{element}, " for _ in range(count - 1)), element, "]"])
        self.buffer = ""
        self.taken = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        assert size is not None and size >= 0, "a one-line array read whole"
        while len(self.buffer) < size and (part := next(self.parts, None)) is not None:
            self.buffer += part
        text, self.buffer = self.buffer[:size], self.buffer[size:]
        self.taken += len(text)
        return text

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        return self.read(size)  # (one line: no newline in it)


def test_nul_bytes_are_refused_from_their_first_bytes_and_an_endless_input_is_stopped() -> None:
    for limit in (2 * MIB, 5 * MIB):
        stream = Endless()
        (record,) = iter_records(stream, max_record=limit)
        assert record.line == 1 and record.error is not None
        assert record.error.startswith("not valid JSON (NUL bytes, as in a file a crash left zero-filled)")
        assert f"on a line of more than {limit // MIB} MiB (the maximum record size, --max-record-mb)" in record.error
        assert record.error.endswith("reading stops here: the rest of the file is not read")
        assert stream.taken <= limit + 2 * PIECE  # the end of the line looked for that far, no further
    # An endless value that may be JSON is stopped the same way, as a record too large.
    (record,) = iter_records(_Prefixed('{"a": "', Endless("x")), max_record=2 * MIB)
    assert record.error == (
        "a record of more than 2 MiB: larger than the maximum record size (--max-record-mb); "
        "reading stops here: the rest of the file is not read"
    )


class _Prefixed(io.TextIOBase):
    """``head``, then ``rest``."""

    def __init__(self, head: str, rest: io.TextIOBase) -> None:
        self.head, self.rest = head, rest

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        assert size is not None and size >= 0
        text, self.head = self.head[:size], self.head[size:]
        return text + (self.rest.read(size - len(text)) if len(text) < size else "")

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        return self.read(size)


def test_a_line_of_nul_bytes_that_ends_costs_only_itself() -> None:
    text = f"{GOOD}\n" + "\0" * (3 * MIB) + f"\n{GOOD}\n\0\0\0\n{GOOD}\n"
    records = [(r.line, r.error) for r in iter_records(io.StringIO(text))]
    nul = "not valid JSON (NUL bytes, as in a file a crash left zero-filled)"
    assert records == [(1, None), (2, nul), (3, None), (4, nul), (5, None)]


def test_a_record_past_the_maximum_is_reported_where_it_is_and_reading_stops() -> None:
    big = json.dumps({"messages": [{"role": "user", "content": "x" * (3 * MIB)}]})
    too_large = "a record of more than 2 MiB: larger than the maximum record size (--max-record-mb)"
    stops = "reading stops here: the rest of the file is not read"
    # JSON Lines: the records before it are read, it is reported on its line, nothing after it is read.
    lines = [
        (r.line, r.error) for r in iter_records(io.StringIO(f"{GOOD}\n{GOOD}\n{big}\n{GOOD}\n"), max_record=2 * MIB)
    ]
    assert lines == [(1, None), (2, None), (3, f"{too_large}; {stops}")]
    # A one-line array: on its element.
    array = f"[{GOOD}, {GOOD}, {big}, {GOOD}]"
    records = list(iter_records(io.StringIO(array), max_record=2 * MIB))
    assert [(r.line, r.element, r.error) for r in records] == [
        (1, 1, None),
        (1, 2, None),
        (1, 3, f"{too_large}; {stops}"),
    ]
    # A pretty-printed document, and a pretty-printed array.
    document = json.dumps(json.loads(big), indent=1)
    records = list(iter_records(io.StringIO(f"{GOOD}\n{document}\n{GOOD}\n"), max_record=2 * MIB))
    assert [(r.line, r.error) for r in records] == [(1, None), (2, f"{too_large}; {stops}")]
    pretty = json.dumps([CHAT, json.loads(big), CHAT], indent=1)
    records = list(iter_records(io.StringIO(pretty), max_record=2 * MIB))
    assert [(r.element, r.error) for r in records] == [(1, None), (2, f"{too_large}; {stops}")]
    # A file that is one JSON array of messages is one conversation: one record, under the same limit.
    messages = json.dumps([{"role": "user", "content": "x" * MIB}] * 3)
    results = list(read(io.StringIO(messages), max_record=2 * MIB))
    assert [(r.line, [p.message for p in r.problems]) for r in results] == [
        (1, [f"a conversation (a JSON array of messages) of more than 2 MiB: larger than the maximum record size "
             f"(--max-record-mb); {stops}"])
    ]  # fmt: skip
    # Under the default limit, the same records are read.
    assert MAX_RECORD == 64 * MIB
    assert [r.error for r in iter_records(io.StringIO(array))] == [None] * 4
    assert len(list(read(io.StringIO(messages)))) == 1


def test_a_one_line_array_is_streamed_element_by_element() -> None:
    element = json.dumps({"messages": [{"role": "user", "content": "y" * 1000}]})
    stream = LazyArray(element, 40_000)  # about 40 MB
    records = iter_records(stream, max_record=8 * MIB)
    for n, record in enumerate(records, 1):
        assert record.error is None and record.element == n
        if n == 10_000:  # 10 MB of elements read: far less held back
            assert stream.taken < 10_000 * len(element) + 2 * MIB
    assert n == 40_000


def test_the_command_line_takes_the_maximum_record_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = json.dumps(
        {"messages": [{"role": "user", "content": "x" * (2 * MIB)}, {"role": "assistant", "content": "ok"}]}
    )
    source = tmp_path / "in.jsonl"
    source.write_text(f"{GOOD}\n{big}\n{GOOD}\n")
    db = str(tmp_path / "e.db")
    for workers in ("1", "2"):
        assert main(["validate", str(source), "--workers", workers]) == 0
        assert main(["validate", str(source), "--workers", workers, "--max-record-mb", "1"]) == 1
        err = capsys.readouterr().err
        assert f"{source}:2: a record of more than 1 MiB: larger than the maximum record size (--max-record-mb)" in err
        assert ": 1 sessions read as openai; 1 records with errors" in err
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(source), "-o", str(out), "--to", "openai", "--max-record-mb", "1.5"]) == 1
    assert len(out.read_text().splitlines()) == 1
    assert main(["convert", str(source), "-o", str(out), "--to", "openai", "--max-record-mb", "3"]) == 0
    assert len(out.read_text().splitlines()) == 3
    assert main(["import", str(source), "--dataset", "d", "--db", db, "--max-record-mb", "1"]) == 1
    assert "1 new, 0 updated, 0 unchanged, 1 failed" in capsys.readouterr().err
    for bad in ("0", "-1", "nan", "inf", "many", "99999999"):
        with pytest.raises(SystemExit) as exit_:
            main(["validate", str(source), "--max-record-mb", bad])
        assert exit_.value.code == 2
        assert "--max-record-mb" in capsys.readouterr().err


def test_import_in_a_second_process_and_an_upload_keep_the_limit(tmp_path: Path) -> None:
    big = json.dumps({"messages": [{"role": "user", "content": "x" * (2 * MIB)}]})
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join([GOOD] * 3000 + [big, GOOD]) + "\n")  # over 4 MB: read by a second process
    with open_store(tmp_path / "e.db") as store:
        report = import_file(store, source, "file", workers=2, max_record=MIB)
        assert (report.new, report.failed) == (3000, 1)
        assert report.problems[0].line == 3001 and "a record of more than 1 MiB" in report.problems[0].message
        with source.open("rb") as upload:
            report = import_stream(store, upload, "in.jsonl", "upload", max_record=MIB)
        assert (report.new, report.failed) == (3000, 1)
        assert report.problems[0].line == 3001 and "a record of more than 1 MiB" in report.problems[0].message


def test_a_prices_file_is_read_bounded() -> None:
    with pytest.raises(UsageError, match="larger than 1 MiB: not a price table"):
        load_prices("/dev/zero")


# -- memory, in real processes -----------------------------------------------------------------------------------

# Run in a fresh interpreter: the command line on the arguments given, then its peak RSS in kB.
_PEAK = """
import sys
from evalcore.cli import main
code = main(sys.argv[1:])
try:
    with open("/proc/self/status") as status:
        peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
except OSError:
    import resource
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("PEAK", peak, code)
"""


def _peak_kb(*args: str) -> tuple[int, int]:
    proc = subprocess.run([sys.executable, "-c", _PEAK, *args], capture_output=True, text=True, timeout=600)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    _mark, peak, code = proc.stdout.split()[-3:]
    return int(peak), int(code)


@pytest.fixture(scope="module")
def baseline_kb(tmp_path_factory: pytest.TempPathFactory) -> int:
    """The peak RSS of validating a one-line file: the interpreter and evalcore, imported."""
    small = tmp_path_factory.mktemp("small") / "small.json"
    small.write_text(json.dumps([CHAT, CHAT]))
    return _peak_kb("validate", str(small))[0]


def test_memory_follows_the_record_not_the_file(tmp_path: Path, baseline_kb: int) -> None:
    """40 MB inputs, each read in a real process: what the process holds past the interpreter is a small part of
    the file (before, a one-line array or a NUL file was held whole, several times over)."""
    element = json.dumps({"messages": [{"role": "user", "content": "z" * 900}, {"role": "assistant", "content": "k"}]})
    array = tmp_path / "array.json"
    with array.open("w") as out:  # what json.dump(list) writes: one line
        out.write("[" + ", ".join([element] * 40_000) + "]")
    nul = tmp_path / "zeros.jsonl"
    nul.write_bytes(b"\0" * (40 * MIB))
    size_kb = array.stat().st_size // 1024
    for args, code in (
        (["validate", str(array)], 0),  # (the default workers: a big file's first line is looked at bounded)
        (["validate", str(array), "--workers", "1"], 0),
        (["convert", str(array), "-o", str(tmp_path / "out.jsonl"), "--to", "evalcore"], 0),
        (["validate", str(nul)], 1),
        (["validate", "/dev/zero", "--max-record-mb", "8"], 1),
    ):
        peak, exit_code = _peak_kb(*args)
        assert exit_code == code, args
        assert peak - baseline_kb < size_kb / 4, f"{args}: {peak - baseline_kb} kB past the interpreter's"


def test_convert_and_validate_of_a_nul_file_agree_on_one_problem(tmp_path: Path) -> None:
    nul = tmp_path / "zeros.jsonl"
    nul.write_bytes(b"\0" * (3 * MIB))
    report = validate_file(nul, workers=2)
    assert (report.sessions, report.errors) == (0, 1)
    assert report.problems[0].message == "not valid JSON (NUL bytes, as in a file a crash left zero-filled)"
    converted = convert_file(nul, tmp_path / "out.jsonl", to="openai", workers=2)
    assert [str(p) for p in converted.problems] == [str(p) for p in report.problems]

"""Reading a big file on several processes (``evalcore.formats.parallel``): the same sessions, problems, lines and
positions as reading it in one process, bad lines and all; files it cannot cut into blocks read in one process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalcore import convert_file, validate_file
from evalcore.convert import ConvertReport
from evalcore.formats import parallel
from evalcore.formats.files import ReadResult
from evalcore.formats.parallel import map_read
from evalcore.store import open_store

EVALCORE = str(Path(sys.executable).parent / "evalcore")


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of about 4 kB and no least size: the test files are cut into dozens of blocks."""
    monkeypatch.setattr(parallel, "BLOCK_CHARS", 4096)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)


def _ragas_rows(ragas_reference: Path, n: int) -> list[str]:
    rows = [json.loads(line) for line in (ragas_reference / "ragas_samples.jsonl").read_text().splitlines()]
    out = []
    for i in range(n):
        row = json.loads(json.dumps(rows[i % len(rows)]))
        row["user_input"][0]["content"] += f" (session {i})"
        out.append(json.dumps(row, ensure_ascii=False))
    return out


def _hostile(lines: list[str]) -> bytes:
    """``lines`` with bad lines among them, each kind several times, and mixed line ends."""
    bad = [
        "",  # blank
        "   \t",  # blank
        "not json at all",
        '{"user_input": [}]',  # broken, and closed on its line: no document
        json.dumps({"user_input": "one string"}),  # the wrong shape
        json.dumps({"user_input": [{"content": "x", "type": "robot"}]}),  # unknown message type
        json.dumps({"user_input": [{"content": "hi", "type": "human"}], "big": 123456789012345678901234567890}),
        json.dumps({"user_input": [], "reference": "empty"}),  # an empty conversation: a warning
        json.dumps({"user_input": [{"content": "tool first", "type": "tool"}]}),  # ragas' order rule
    ]
    out = bytearray()
    for i, line in enumerate(lines):
        end = "\r\n" if i % 7 == 0 else ("\r" if i % 53 == 0 else "\n")
        out += (line + end).encode()
        if i % 37 == 5:
            out += (bad[(i // 37) % len(bad)] + "\n").encode()
        if i % 211 == 100:
            out += b'{"user_input": [{"content": "\xff\xfe bad bytes", "type": "human"}]}\n'
    return bytes(out)


def _report(report: ConvertReport) -> tuple[Any, ...]:
    return report.format, report.sessions, report.errors, report.warnings, [str(p) for p in report.problems]


def _convert_both(source: Path, tmp_path: Path, to: str, **options: Any) -> tuple[Any, ...]:
    """Convert ``source`` in one process and on two; assert the same target bytes and report, and return it."""
    one, two = tmp_path / f"one.{to}.jsonl", tmp_path / f"two.{to}.jsonl"
    report_one = _report(convert_file(source, one, to=to, workers=1, **options))
    report_two = _report(convert_file(source, two, to=to, workers=2, **options))
    assert one.read_bytes() == two.read_bytes()
    assert report_two == report_one
    return report_one


def test_a_big_file_with_bad_lines_converts_the_same_on_two_processes(tmp_path: Path, ragas_reference: Path) -> None:
    source = tmp_path / "big.ragas.jsonl"
    source.write_bytes(_hostile(_ragas_rows(ragas_reference, 1500)))
    for to in ("evalcore", "ragas", "openai", "gaussia"):  # gaussia's writer numbers by the record's position
        fmt, sessions, errors, warnings, problems = _convert_both(source, tmp_path, to)
        assert fmt == "ragas"
        assert sessions > 1500 and errors > 20 and warnings > 3
        assert any("not valid JSON" in p for p in problems) and any("UTF-8" in p for p in problems)
    # Every problem names its line, as a reader of the file counts them (CR, CRLF and LF all end one).
    text = source.read_bytes().decode("utf-8", "surrogateescape")
    numbered = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    report = validate_file(source, workers=2)
    assert report.errors > 20
    for problem in report.problems:
        line = numbered[problem.line - 1]
        assert line.strip() and not line.startswith('{"user_input": [{"content": "Request'), (problem, line[:80])


def test_the_work_runs_in_worker_processes_in_the_file_order(tmp_path: Path, ragas_reference: Path) -> None:
    source = tmp_path / "big.ragas.jsonl"
    source.write_text("\n".join(_ragas_rows(ragas_reference, 600)) + "\n", encoding="utf-8")

    def where(result: ReadResult) -> tuple[int, int, int]:
        return result.line, result.position, os.getpid()

    done = list(map_read(source, None, where, workers=2))
    assert [(line, position) for line, position, _ in done] == [(i + 1, i) for i in range(600)]
    pids = {pid for _, _, pid in done}
    assert 1 <= len(pids) <= 2 and os.getpid() not in pids  # the workers (two, unless one took every block)
    alone = list(map_read(source, None, where, workers=1))
    assert {pid for _, _, pid in alone} == {os.getpid()}


def test_files_that_cannot_be_cut_into_blocks_are_read_in_one_process(tmp_path: Path, ragas_reference: Path) -> None:
    rows = [json.loads(line) for line in _ragas_rows(ragas_reference, 300)]
    as_array = tmp_path / "array.json"
    as_array.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    with_bom = tmp_path / "bom.jsonl"
    with_bom.write_text("\ufeff" + "\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    broken_first = tmp_path / "broken-first.jsonl"
    broken_first.write_text("not json\n" + "\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    gaussia = tmp_path / "batches.gaussia.jsonl"  # Gaussia's reader holds a session's batches back
    convert_file(with_bom, gaussia, to="gaussia")
    for path in (as_array, with_bom, broken_first, gaussia):
        pids = set(map_read(path, None, lambda _result: os.getpid(), workers=2))
        assert pids == {os.getpid()}, path.name
        report = _convert_both(path, tmp_path, "evalcore")
        assert report[1] == 300, path.name


def test_a_document_spanning_lines_in_the_middle_is_read_in_this_process_from_its_block_on(
    tmp_path: Path, ragas_reference: Path
) -> None:
    lines = _ragas_rows(ragas_reference, 900)
    document = json.dumps(json.loads(lines[450]), indent=2).splitlines()  # a pretty-printed record
    broken = ['{"user_input": [', '  {"content": "never closed", "type": "human"}']  # a broken document
    source = tmp_path / "mixed.ragas.jsonl"
    source.write_text("\n".join([*lines[:450], *document, *lines[450:700], *broken, *lines[700:]]) + "\n")

    def where(result: ReadResult) -> tuple[int, int]:
        return result.line, os.getpid()

    done = list(map_read(source, None, where, workers=2))
    assert [line for line, _ in done] == [line for line, _ in map_read(source, None, where, workers=1)]
    # The workers read the blocks before the document's; this process, from the document's block to the end.
    here = [line for line, pid in done if pid == os.getpid()]
    assert 300 < here[0] <= 451 and here == [line for line, _ in done][-len(here) :]
    fmt, sessions, errors, _, problems = _convert_both(source, tmp_path, "evalcore")
    assert (fmt, sessions, errors) == ("ragas", 901, 1)
    assert problems[0].startswith(f"{source}:{450 + len(document) + 250 + 1}:")


def test_validate_finds_repeated_sessions_across_blocks(tmp_path: Path, ragas_reference: Path) -> None:
    source = tmp_path / "ids.ragas.jsonl"
    source.write_text("\n".join(_ragas_rows(ragas_reference, 400)) + "\n", encoding="utf-8")
    native = tmp_path / "ids.evalcore.jsonl"
    convert_file(source, native, to="evalcore", workers=2)
    rows = [json.loads(line) for line in native.read_text().splitlines()]
    for i, row in enumerate(rows):
        row["session_id"] = f"s{i % 350}"  # the last 50 repeat the first 50
    native.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    one, two = validate_file(native, workers=1), validate_file(native, workers=2)
    assert _report(two) == _report(one)
    assert (two.format, two.sessions, two.errors, two.warnings) == ("evalcore", 400, 0, 50)
    repeat = "session 's0' appears again (first on line 1): an import keeps the first, not this one"
    assert str(two.problems[0]).endswith(f":351: warning: {repeat}")


def test_the_command_line_converts_with_workers(tmp_path: Path, ragas_reference: Path) -> None:
    source = tmp_path / "big.ragas.jsonl"
    source.write_bytes(_hostile(_ragas_rows(ragas_reference, 3000)))  # over 2 MB: the workers' least size
    assert source.stat().st_size > 2 << 20
    outputs = {}
    for workers in ("1", "2"):
        (tmp_path / workers).mkdir()
        target = tmp_path / workers / "out.jsonl"
        proc = subprocess.run(
            [EVALCORE, "convert", str(source), "-o", str(target), "--to", "evalcore", "--workers", workers],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 1 and "Traceback" not in proc.stderr  # bad records: exit 1, every good one kept
        outputs[workers] = (target.read_bytes(), proc.stderr.replace(str(target), "OUT"))
    assert outputs["1"] == outputs["2"]
    assert " sessions written to " in outputs["2"][1] and "records with errors" in outputs["2"][1]


def test_a_big_import_reads_on_worker_processes_and_stores_the_same(tmp_path: Path, ragas_reference: Path) -> None:
    """``import_file`` with workers: a reader process, itself reading on forked workers (the file is over the
    least size of the reader process' blocks), stores and reports exactly what one process does."""
    import sqlite3

    from evalcore.importing import import_file

    source = tmp_path / "big.ragas.jsonl"
    source.write_bytes(_hostile(_ragas_rows(ragas_reference, 3000)))
    assert source.stat().st_size > 2 << 20
    stored, reports = {}, {}
    for workers in (1, 2):
        db = tmp_path / f"w{workers}.db"
        with open_store(db) as store:
            report = import_file(store, source, "d", workers=workers)
        reports[workers] = (
            report.format,
            report.new,
            report.failed,
            report.warnings,
            [str(p) for p in report.problems],
        )
        with sqlite3.connect(db) as conn:
            stored[workers] = conn.execute(
                "SELECT key, session_id, source, format, position, line, data, content_hash, search_text "
                "FROM sessions ORDER BY id"
            ).fetchall()
    assert reports[2] == reports[1] and stored[2] == stored[1]
    fmt, new, failed, warnings, problems = reports[2]
    assert (fmt, new) == ("ragas", len(stored[2])) and new > 3000 and failed > 40 and warnings > 5
    assert any("not valid UTF-8" in p for p in problems)


def test_a_worker_that_dies_is_a_clear_error(tmp_path: Path, ragas_reference: Path) -> None:
    from evalcore.errors import WorkerError

    source = tmp_path / "big.ragas.jsonl"
    source.write_text("\n".join(_ragas_rows(ragas_reference, 600)) + "\n", encoding="utf-8")
    parent = os.getpid()

    def dies_at_line_300(result: ReadResult) -> int:
        if os.getpid() != parent and result.line == 300:
            os._exit(3)  # as a worker killed, or out of memory
        return result.line

    with pytest.raises(WorkerError, match="run again with --workers 1"):
        list(map_read(source, None, dies_at_line_300, workers=2))
    assert list(map_read(source, None, dies_at_line_300, workers=1)) == list(range(1, 601))

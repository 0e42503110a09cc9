"""Hostile input, record by record: what JSON allows but nothing downstream can hold is a problem on
its own line, validate, convert and import agree on it (in one process and in two), writers meet
odd memos with a clear problem, detection meets odd shapes quietly, and a read-only format is
refused before any file is made. The fuzz suite (tests/fuzz/) tries the same at random."""

from __future__ import annotations

import gzip
import io
import json
import math
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from formats_util import load_output

from evalcore import convert_file, validate_file
from evalcore.errors import RecordError, StoreError, UsageError
from evalcore.exporting import export_dataset
from evalcore.formats import get_format, read, writer_for
from evalcore.formats.jsonio import iter_records
from evalcore.importing import import_file, import_stream
from evalcore.reading import BatchEvent, CountsEvent, FailedEvent, ProblemEvent, events, stream_events
from evalcore.schema import MAX_DEPTH, Session, validate_session
from evalcore.store import open_store
from evalcore.store.rows import ROW_COLUMNS, Row

GOOD = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def _call(arguments: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    return {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [call]},
                         {"role": "tool", "tool_call_id": "c1", "content": "ok"}]}  # fmt: skip


# Each hostile line (as text, for what json.dumps cannot write) with the problem it must get.
HOSTILE_LINES = [
    (json.dumps(_call(json.dumps(_deep(256)))), "messages[1].tool_calls[0].args: nested more than 128 levels deep"),
    ('{"messages": [{"role": "user", "content": "a\\ud800b"}]}', "messages[0].content: a lone surrogate \\ud800"),
    ('{"messages": [{"role": "user", "content": "x", "n": ' + "7" * 5000 + "}]}",
     "an integer of 5000 digits: more than the 4300 digits Python reads"),
    ('{"messages": [{"role": "user", "content": "x"}], "m": ' + "[" * 1100 + "]" * 1100 + "}",
     "nested 1101 levels deep (arrays and objects): deeper than the JSON reader goes"),
]  # fmt: skip


def _hostile_file(path: Path) -> tuple[Path, list[tuple[int, str]]]:
    """Good records around every hostile one; the lines of the hostile ones with their problems."""
    lines, bad = [json.dumps(GOOD)], []
    for text, problem in HOSTILE_LINES:
        lines.append(text)
        bad.append((len(lines), problem))
        lines.append(json.dumps({**GOOD, "n": len(lines)}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, bad


def test_parser_limits_are_problems_on_their_lines_and_every_other_record_is_read(tmp_path: Path) -> None:
    source, bad = _hostile_file(tmp_path / "in.jsonl")
    problems: list[str] = []
    report = validate_file(source, on_problem=lambda p: problems.append(str(p)))
    assert report.sessions == 5 and report.errors == 4
    for (line, expected), got in zip(bad, problems, strict=True):
        assert got.startswith(f"{source}:{line}: {expected}"), got


@pytest.mark.parametrize("workers", [1, 2])
def test_what_validate_accepts_import_stores_in_one_process_and_in_two(tmp_path: Path, workers: int) -> None:
    source, bad = _hostile_file(tmp_path / "in.jsonl")
    with open_store(tmp_path / "s.db") as store:
        report = import_file(store, source, "d", workers=workers)
        assert (report.new, report.failed) == (5, 4)
        assert [(p.line, p.message.split(":")[0]) for p in report.problems] == [
            (line, problem.split(":")[0]) for line, problem in bad
        ]
        assert len(store.sessions.pks("d")) == 5
    out = tmp_path / "out.jsonl"
    converted = convert_file(source, out, to="ragas")
    assert (converted.sessions, converted.errors) == (5, 4) and len(load_output(out)) == 5


def test_a_lone_surrogate_inside_tool_call_arguments_is_kept_as_the_arguments_text(tmp_path: Path) -> None:
    # Arguments are JSON text: text that does not read as an object is kept as it came (here, the
    # escape itself, which is valid text), so the record is fine and written back unchanged.
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(_call('{"city": "\\ud800"}')) + "\n", encoding="utf-8")
    assert validate_file(source).errors == 0
    out = tmp_path / "out.jsonl"
    assert convert_file(source, out, to="openai").sessions == 1
    (row,) = load_output(out)
    assert row["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"city": "\\ud800"}'
    with open_store(tmp_path / "s.db") as store:
        assert import_file(store, source, "d").new == 1


def test_nesting_is_measured_where_it_sits_in_the_session() -> None:
    at_limit = Session(messages=[{"role": "assistant", "tool_calls": [{"name": "f", "args": _deep(MAX_DEPTH - 5)}]}])
    assert validate_session(at_limit) == []
    json.loads(at_limit.model_dump_json())  # and it is written and read back
    Session.model_validate_json(at_limit.model_dump_json())
    over = Session(messages=[{"role": "user", "content": "hi"}], metadata={"x": _deep(MAX_DEPTH - 1)})
    (problem,) = validate_session(over)
    assert problem.field == "metadata" and "evalcore keeps at most 128" in problem.message
    # ``shallow`` (the reader's bound says the session cannot be deep) skips the measuring only.
    assert validate_session(over, shallow=True) == []


def test_the_reader_measures_a_session_whose_text_could_nest_deep(tmp_path: Path) -> None:
    # 200 levels spelt with escapes inside a string: no bracket in the text, all of them in the arguments.
    escaped = "".join('\\u007b\\"a\\":' for _ in range(200)) + "1" + "}" * 200
    line = '{"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function", ' \
        f'"function": {{"name": "f", "arguments": "{escaped}"}}}}]}}]}}'  # fmt: skip
    (result,) = read(io.StringIO(line + "\n"), "openai")
    assert [p.field for p in result.problems] == ["messages[0].tool_calls[0].args"]


def test_typed_events_and_rows_are_picklable_and_name_their_columns(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(GOOD) + "\n{broken\n" + json.dumps({**GOOD, "n": 2}) + "\n", encoding="utf-8")
    got = list(events(str(source), None, 7, 1))
    assert [type(e) for e in got] == [BatchEvent, ProblemEvent, BatchEvent, CountsEvent]
    assert got[1] == ProblemEvent(2, "error", got[1].message) and got[1].message.startswith("not valid JSON")
    assert got[-1] == CountsEvent(1, 0, "openai")
    row = got[0].rows[0]  # type: ignore[union-attr]
    assert isinstance(row, Row) and row.dataset_id == 7 and row.line == 1 and row.n_messages == 2
    besides = ("tag_list", "outcomes", "parts", "labels")  # (what comes with a row besides its columns)
    assert tuple(f for f in Row.__dataclass_fields__ if f not in besides) == ROW_COLUMNS
    assert dict(zip(ROW_COLUMNS, row.values(), strict=True))["title"] == "hi"
    for event in got:
        assert pickle.loads(pickle.dumps(event, protocol=pickle.HIGHEST_PROTOCOL)) == event


class _FailingStream(io.RawIOBase):
    """A file whose disk fails after ``good`` bytes: what an I/O error mid-file looks like."""

    def __init__(self, data: bytes, good: int) -> None:
        self.data, self.good, self.at = data, good, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.at >= self.good:
            raise OSError(5, "Input/output error")
        chunk = self.data[self.at : min(self.good, self.at + len(buffer))]
        buffer[: len(chunk)] = chunk
        self.at += len(chunk)
        return len(chunk)


def test_a_read_that_fails_midway_hands_over_what_it_read_then_names_the_line(tmp_path: Path) -> None:
    lines = [json.dumps({**GOOD, "n": i}) for i in range(2000)]
    data = ("\n".join(lines) + "\n").encode()
    good = len(data) // 2
    got = list(stream_events(_FailingStream(data, good), "in.jsonl", None, 1, 100_000))  # type: ignore[arg-type]
    assert [type(e) for e in got] == [BatchEvent, FailedEvent]
    failed = got[-1]
    assert isinstance(failed, FailedEvent) and "Input/output error" in failed.reason
    stored = len(got[0].rows)  # type: ignore[union-attr]
    assert failed.line == stored and stored > 500  # every whole line before the failure
    with (
        open_store(tmp_path / "s.db") as store,
        pytest.raises(StoreError, match=rf"stopped after line {stored}: OSError"),
    ):
        import_stream(store, _FailingStream(data, good), "in.jsonl", "d")  # type: ignore[arg-type]
    with open_store(tmp_path / "s.db") as store:
        assert len(store.sessions.pks("d")) == stored


def _session(**metadata: Any) -> Session:
    return Session.model_validate(
        {
            "session_id": "s1",
            "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "tool_calls": [{"id": "c", "name": "f", "args": {"x": 1}}]},
                {"role": "tool", "tool_call_id": "c", "content": "r"},
                {"role": "assistant", "content": "a"},
            ],
            "metadata": metadata,
        }
    )


@pytest.mark.parametrize(
    ("fmt", "memo", "field"),
    [
        ("gaussia", {"gaussia": "a string"}, "metadata.gaussia"),
        ("gaussia", {"gaussia": {"streamed": True, "header": [1]}}, "metadata.gaussia.header"),
        ("openai", {"openai": [1, 2]}, "metadata.openai"),
        ("ragas", {"ragas": 5}, "metadata.ragas"),
        ("databricks", {"databricks": True}, "metadata.databricks"),
        ("databricks", {"databricks": {"response": {"count": "two"}}}, "metadata.databricks.response.count"),
        ("databricks", {"databricks": {"response": {"count": 1e308}}}, "metadata.databricks.response.count"),
        ("databricks", {"databricks": {"request": "text"}}, "metadata.databricks.request"),
        ("databricks", {"databricks": {"mlflow3": True, "expectation_keys": [[]]}},
         "metadata.databricks.expectation_keys[0]"),
        ("open-responses", {"open_responses": "x"}, "metadata.open_responses"),
        ("open-responses", {"open_responses": {"trailing": "x"}}, "metadata.open_responses.trailing"),
    ],
)  # fmt: skip
def test_a_memo_that_is_not_what_the_writer_kept_is_a_problem_naming_it(fmt: str, memo: Any, field: str) -> None:
    with pytest.raises(RecordError) as caught:
        get_format(fmt).write_lines(_session(**memo))
    assert caught.value.field == field


@pytest.mark.parametrize("fmt", ["openai", "databricks", "open-responses"])
def test_a_message_memo_that_is_not_an_object_is_a_problem_naming_the_message(fmt: str) -> None:
    ns = fmt.replace("-", "_") if fmt == "open-responses" else "openai"
    session = _session()
    session.messages[1].metadata[ns] = "odd"
    with pytest.raises(RecordError) as caught:
        get_format(fmt).write_lines(session)
    assert caught.value.field == f"messages[1].metadata.{ns}"


def test_odd_values_in_memos_the_writer_only_compares_are_written_anew() -> None:
    # Gaussia keeps the agentic object read, to give it back while the calls are unchanged; one whose
    # tools_used holds a null (or is not a list) is not that: the calls are written from the session.
    session = _session()
    session.turn_truth = []
    for kept in ([None], "x", 5, [{"tool_name": "f"}, None]):
        session.metadata = {}
        from evalcore.schema import TurnTruth

        session.turn_truth = [TurnTruth(metadata={"gaussia": {"agentic": {"tools_used": kept, "k": 1}}})]
        (line,) = get_format("gaussia").write_lines(session)
        agentic = json.loads(line)["conversation"][0]["agentic"]
        assert agentic == {"tools_used": [{"tool_name": "f", "parameters": {"x": 1}, "result": "r", "step": 1}], "k": 1}
    session.messages[1].metadata["openai"] = {"name_key": []}
    session.messages[1].name = "n"
    with pytest.raises(RecordError, match="name_key"):
        get_format("openai").write_lines(session)


def test_convert_reports_an_unwritable_session_and_writes_the_others(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    rows = [
        {"schema_version": 1, "messages": [{"role": "user", "content": "a"}]},
        {"schema_version": 1, "messages": [{"role": "user", "content": "b"}], "metadata": {"gaussia": "odd"}},
        {"schema_version": 1, "messages": [{"role": "user", "content": "c"}]},
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    problems: list[str] = []
    out = tmp_path / "out.json"
    report = convert_file(source, out, to="gaussia", on_problem=lambda p: problems.append(str(p)))
    assert (report.sessions, report.errors) == (2, 1)
    assert problems == [f"{source}:2: cannot write as gaussia: metadata.gaussia: expected an object "
                        "(what the gaussia format keeps to write it back), got a string"]  # fmt: skip
    assert len(load_output(out)) == 2


@pytest.mark.parametrize(
    "record",
    [
        {"type": [], "role": "user", "content": "x"},
        {"type": {}, "content": "x"},
        {"messages": [{"type": ["human"], "content": "x"}]},
        {"items": [{"type": []}]},
        [{"type": []}],
        {"info": {}, "data": {"spans": [{"span_id": [], "parent_span_id": {}, "context": "x"}]}},
    ],
)
def test_detection_and_readers_meeting_unhashable_values_report_problems(tmp_path: Path, record: Any) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(record) + "\n" + json.dumps(GOOD) + "\n", encoding="utf-8")
    problems: list[str] = []
    report = validate_file(source, on_problem=lambda p: problems.append(str(p)))
    assert not any("unhashable" in p or "Error" in p for p in problems), problems
    assert report.sessions + report.errors == 2


def test_bare_items_after_items_meeting_an_unhashable_type(tmp_path: Path) -> None:
    items = [{"type": "message", "role": "user", "content": "q"}, {"type": [], "role": "assistant", "content": "a"}]
    source = tmp_path / "in.json"
    source.write_text(json.dumps(items), encoding="utf-8")
    problems: list[str] = []
    validate_file(source, on_problem=lambda p: problems.append(str(p)))
    assert not any("unhashable" in p for p in problems), problems


def test_a_read_only_format_is_refused_before_any_file_is_made(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(GOOD) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    for fmt in ("swarm", "langchain", "mlflow-trace", "tau-bench"):
        with pytest.raises(UsageError, match=f"{fmt} is read-only; write one of: "):
            convert_file(source, out, to=fmt)
        with pytest.raises(UsageError, match="is read-only"), writer_for(out, fmt):
            pass
    with open_store(tmp_path / "s.db") as store:
        import_file(store, source, "d")
        with pytest.raises(UsageError, match="swarm is read-only"):
            export_dataset(store, "d", out, "swarm")
    assert [p.name for p in tmp_path.iterdir() if "out" in p.name] == []  # no file, no partial file


def test_a_stored_session_holding_nan_can_be_replaced_by_a_new_import(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    row = {"user_input": [{"content": "q", "type": "human"}, {"content": "a", "type": "ai",
           "tool_calls": [{"name": "f", "args": {"x": float("nan"), "y": float("inf")}}]}]}  # fmt: skip
    source.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with open_store(tmp_path / "s.db") as store:
        assert import_file(store, source, "d").new == 1
        row["user_input"][0]["content"] = "changed"
        source.write_text(json.dumps(row) + "\n", encoding="utf-8")
        assert import_file(store, source, "d").updated == 1


def _records(text: str) -> Iterator[tuple[int, Any, str | None]]:
    return ((r.line, r.value, r.error) for r in iter_records(io.StringIO(text)))


def test_a_first_line_array_of_json_lines_costs_no_later_line(tmp_path: Path) -> None:
    ragas = {"user_input": [{"content": "hi", "type": "human"}, {"content": "yo", "type": "ai"}]}
    source = tmp_path / "in.jsonl"
    source.write_text("[]\n" + json.dumps(ragas) + "\n" + json.dumps(ragas) + "\n", encoding="utf-8")
    problems: list[str] = []
    report = validate_file(source, on_problem=lambda p: problems.append(str(p)))
    assert (report.sessions, report.errors, report.format) == (2, 1, "ragas")
    assert problems[0].startswith(f"{source}:1: no format recognises this record")
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    source.write_text("".join(json.dumps(messages) + "\n" for _ in range(3)), encoding="utf-8")
    assert (validate_file(source).sessions, validate_file(source).errors) == (3, 0)
    with open_store(tmp_path / "s.db") as store:
        assert import_file(store, source, "d").new == 3


def _problems(report: Any) -> list[str]:
    return [str(p) for p in report.problems]


def test_problems_in_a_one_line_array_name_their_element_everywhere(tmp_path: Path) -> None:
    """What ``json.dump(list)`` writes is one line: each problem names its element, the same in validate, convert
    and import (in one process and through the reader process), and on the app's list of problems."""
    bad_role = {"messages": [{"role": "bogus", "content": "x"}]}
    source = tmp_path / "rows.json"
    text = json.dumps([GOOD, bad_role, GOOD, GOOD]).replace('"hello"}]}]', '"hello"}], "s": "\\ud800"}]', 1)
    source.write_text(text, encoding="utf-8")
    expected = [
        f"{source}:1: element 2: messages[0].role: unknown role 'bogus'; expected one of system, developer, user, "
        "assistant, tool, function",
        f"{source}:1: element 4: s: a lone surrogate \\ud800: half of a UTF-16 pair, not a character",
    ]
    assert _problems(validate_file(source)) == expected
    assert _problems(convert_file(source, tmp_path / "out.jsonl", to="openai")) == expected
    for workers in (1, 2):
        with open_store(tmp_path / f"s{workers}.db") as store:
            report = import_file(store, source, "d", workers=workers)
        assert (report.new, report.failed) == (2, 2)
        assert _problems(report) == expected


def test_a_gaussia_weight_that_is_not_a_number_is_said_to_be_none(tmp_path: Path) -> None:
    datasets = json.loads((Path(__file__).parent.parent / "sample_data" / "gaussia.json").read_text())
    datasets[0]["conversation"][0]["weight"] = float("nan")
    datasets[1]["conversation"][0]["weight"] = float("inf")
    source = tmp_path / "gaussia.json"
    source.write_text(json.dumps(datasets), encoding="utf-8")
    problems = [p.message for p in validate_file(source).problems if p.level == "error"]
    assert problems == [
        "element 1: conversation[0].weight: must be a finite number >= 0, got nan (not a number)",
        "element 2: conversation[0].weight: must be a finite number >= 0, got inf (infinite)",
    ]
    # Our own format: the canonical model says it too (NaN is no number below 0).
    row = {"schema_version": 1, "messages": [{"role": "user", "content": "q"}], "turn_truth": [{"weight": math.nan}]}
    source = tmp_path / "evalcore.jsonl"
    source.write_text(json.dumps(row) + "\n", encoding="utf-8")
    (problem,) = validate_file(source).problems
    assert problem.message == "turn_truth[0].weight: Input should be a finite number"


def test_a_number_that_overflows_is_a_warning_in_validate_convert_and_import(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"messages": [{"role": "user", "content": "q"}], "score": 1e999}\n' + json.dumps(GOOD) + "\n")
    warning = (
        f"{source}:1: warning: score: the number 1e999 is too large for a float (beyond 1.8e308): read as infinity, "
        "which JSON cannot write (the evalcore and ragas formats write it as Infinity, the others as null)"
    )
    assert _problems(validate_file(source)) == [warning]
    for fmt in ("evalcore", "openai"):
        report = convert_file(source, tmp_path / f"out-{fmt}.jsonl", to=fmt)
        assert (report.sessions, report.errors, _problems(report)) == (2, 0, [warning])
    with open_store(tmp_path / "s.db") as store:
        report = import_file(store, source, "d")
    assert (report.new, report.failed, report.warnings, _problems(report)) == (2, 0, 1, [warning])
    # NaN as ragas writes it is no overflow: nothing is said.
    ragas = tmp_path / "ragas.jsonl"
    ragas.write_text('{"user_input": [{"content": "q", "type": "human"}], "score": NaN}\n', encoding="utf-8")
    assert validate_file(ragas).problems == []


@pytest.mark.parametrize(
    ("data", "what"),
    [
        ((json.dumps(GOOD) + "\n").encode("utf-16"), "the file looks UTF-16"),
        (gzip.compress((json.dumps(GOOD) + "\n").encode() * 3000), "the file looks gzip-compressed"),
    ],
)
def test_utf16_and_gzip_files_get_one_problem_that_says_what_to_do(tmp_path: Path, data: bytes, what: str) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(data)
    (problem,) = validate_file(source, workers=2).problems
    assert problem.line == 1 and problem.message.startswith(what) and "first" in problem.message
    with open_store(tmp_path / "s.db") as store:
        report = import_stream(store, io.BytesIO(data), "upload.jsonl", "d")
    assert (report.new, report.failed, [p.message for p in report.problems]) == (0, 1, [problem.message])

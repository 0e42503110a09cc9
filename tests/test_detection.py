"""Detection weighs its candidates (issue 23, item 5): a format that recognises one key of a record (a request id,
an empty ``items``, ``user_input`` or ``traj``, a ``schema_version`` of another's) no longer wins over the format
that reads the conversation beside it; the choice is said when it is not the plain one, and a record two formats
read differently and equally well asks for ``--from``. Every sample file and every real file keeps its format."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from evalcore import convert_file, validate_file
from evalcore.cli import main
from evalcore.errors import FormatDetectionError
from evalcore.formats import detect_format, read_path
from evalcore.formats.detection import detect
from evalcore.formats.jsonio import iter_records

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DATA, REAL = ROOT / "sample_data", ROOT / "tests" / "data" / "real"
CALL = {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}
CHAT = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    {"role": "assistant", "content": "It is sunny."},
]


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("key", "value", "other"),
    [
        ("request", "req-8812", "databricks"),
        ("items", [], "open-responses"),
        ("user_input", [], "ragas"),
        ("traj", [], "tau-bench"),
    ],
)
def test_a_key_of_another_format_beside_a_chat_does_not_take_the_file(
    tmp_path: Path, key: str, value: Any, other: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _write(tmp_path / "chat.jsonl", [{"messages": CHAT, key: value}] * 3)
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(source), "-o", str(out), "--to", "openai"]) == 0
    err = capsys.readouterr().err
    assert f"{source}:1: warning: read as openai, not {other}: as {other} it gives " in err
    assert "as openai 4 messages and 1 tool call; --from names the format to read it as" in err
    assert "3 sessions written" in err and "1 warnings" in err
    for row in map(json.loads, out.read_text().splitlines()):  # every message and the call kept, the key too
        assert [m["role"] for m in row["messages"]] == ["user", "assistant", "tool", "assistant"]
        assert row["messages"][1]["tool_calls"][0]["function"]["name"] == "weather"
        assert row[key] == value
    # --from reads it as the other format, as asked, and says nothing.
    assert main(["validate", str(source), "--from", other]) in (0, 1)
    assert "warning: read as" not in capsys.readouterr().err


def test_a_schema_version_of_another_kind_is_not_taken_for_evalcore(tmp_path: Path) -> None:
    source = _write(tmp_path / "chat.jsonl", [{"messages": CHAT, "schema_version": "1.0"}])
    report = validate_file(source)
    assert (report.format, report.sessions, report.errors, report.warnings) == ("openai", 1, 0, 0)
    # Our own rows (a whole-number version) are still ours, and a newer one is still refused as newer.
    assert detect_format({"schema_version": 1, "messages": [{"role": "user", "content": "hi"}]}).name == "evalcore"
    newer = _write(tmp_path / "newer.jsonl", [{"schema_version": 99, "messages": [{"role": "user", "content": "hi"}],
                                               "reference": "x"}])  # fmt: skip
    report = validate_file(newer)
    assert (report.sessions, report.errors) == (0, 1)
    assert [p.message for p in report.problems] == [
        "schema_version: schema_version 99 is newer than this evalcore understands (1); upgrade evalcore",
    ]


def test_formats_that_read_the_same_conversation_are_one_answer_and_nothing_is_said() -> None:
    evalcore_row = json.loads((SAMPLE_DATA / "evalcore.jsonl").read_text().splitlines()[-1])
    swarm_row = json.loads((SAMPLE_DATA / "swarm.jsonl").read_text().splitlines()[0])
    for row, name in ((evalcore_row, "evalcore"), (swarm_row, "swarm")):
        assert detect_format(row).name != "openai"  # (each is an OpenAI chat too)
        detection = detect(row)
        assert (detection.format.name, detection.warning) == (name, None)


def test_two_formats_reading_differently_and_equally_well_ask_for_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    row = {"messages": [{"role": "user", "content": "Hi"}], "request": "Hello"}  # one user message either way
    with pytest.raises(FormatDetectionError) as raised:
        detect(row)
    message = str(raised.value)
    assert "reads as databricks (1 message and 0 tool calls) and as openai (1 message and 0 tool calls)" in message
    assert message.endswith("differently and equally well: name its format with --from")
    source = _write(tmp_path / "ambiguous.jsonl", [row])
    assert main(["validate", str(source)]) == 1
    assert f"{source}:1: this record reads as databricks" in capsys.readouterr().err
    assert main(["validate", str(source), "--from", "openai"]) == 0


def test_a_first_candidate_that_cannot_read_the_record_keeps_it_and_reports_why(tmp_path: Path) -> None:
    """A bad first record of a file in a format must not turn the file into another format's: the first reader
    reports what is wrong (and the rest of an evalcore file is still read as evalcore)."""
    bad = {"schema_version": 1, "messages": [{"role": "user", "content": "q"}], "turn_truth": [{"weight": -1}]}
    good = {"schema_version": 1, "messages": [{"role": "user", "content": "q"}], "reference": "r"}
    assert detect(bad).format.name == "evalcore" and detect(bad).warning is None
    report = validate_file(_write(tmp_path / "rows.jsonl", [bad, good]))
    assert (report.format, report.sessions, report.errors, report.warnings) == ("evalcore", 1, 1, 0)
    row = {"messages": CHAT, "request": {"messages": 5}}  # Databricks cannot read this request
    assert detect(row).format.name == "databricks"
    source = _write(tmp_path / "chat.jsonl", [row, row])
    assert (validate_file(source).errors, validate_file(source, source_format="openai").sessions) == (2, 2)


def test_when_no_candidate_reads_the_record_the_first_reports_why() -> None:
    row = {"messages": [{"role": "bogus", "content": "x"}], "request": {"messages": 5}}
    assert detect(row).format.name == "databricks" and detect(row).warning is None
    with pytest.raises(FormatDetectionError, match="no format recognises this record"):
        detect({"nothing": "here"})


def test_a_detection_warning_is_said_once_with_one_process_or_several(tmp_path: Path) -> None:
    rows = [{"messages": CHAT, "request": f"req-{i}"} for i in range(8000)]  # over 2 MB: read by workers
    source = _write(tmp_path / "big.jsonl", rows)
    assert source.stat().st_size > 2 << 20
    one, two = validate_file(source, workers=1), validate_file(source, workers=2)
    assert [str(p) for p in one.problems] == [str(p) for p in two.problems]
    assert (two.format, two.sessions, two.warnings) == ("openai", 8000, 1)
    converted = convert_file(source, tmp_path / "out.jsonl", to="openai", workers=2)
    assert (converted.sessions, converted.warnings) == (8000, 1)


def _first_values(path: Path) -> list[Any]:
    with path.open(encoding="utf-8", errors="surrogateescape", newline="") as stream:
        return [r.value for r in iter_records(stream) if r.error is None and r.warning is None][:3]


@pytest.mark.parametrize(
    "path",
    sorted({*SAMPLE_DATA.glob("*.json*"), *REAL.rglob("*.json*"), *(REAL.parent / "made").glob("*.json*")}),
    ids=lambda p: p.name,
)
def test_sample_and_real_files_are_read_as_before_with_nothing_to_say(path: Path) -> None:
    with read_path(path) as results:
        read = list(results)
    said = [p.message for r in read for p in r.problems if p.message.startswith(("read as ", "this record reads as"))]
    assert not said, said
    for value in _first_values(path):
        with contextlib.suppress(FormatDetectionError):  # (an element of an array of messages, alone: no record)
            assert detect(value).warning is None

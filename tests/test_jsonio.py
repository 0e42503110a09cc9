from __future__ import annotations

import io
import json

from evalcore.formats import jsonio
from evalcore.formats.jsonio import iter_records


def _records(text: str) -> list[tuple[int, object, str | None]]:
    return [(r.line, r.value, r.error) for r in iter_records(io.StringIO(text))]


def test_json_lines_with_blank_lines_crlf_and_bom() -> None:
    text = '\ufeff{"a": 1}\r\n\r\n{"a": 2}\r\nnot json\n{"a": 3}'
    records = _records(text)
    assert [(line, value) for line, value, _ in records] == [(1, {"a": 1}), (3, {"a": 2}), (4, None), (5, {"a": 3})]
    assert records[2][2] is not None and records[2][2].startswith("not valid JSON")


def test_json_array_is_streamed_with_line_numbers() -> None:
    text = '[\n  {"a": 1},\n  {\n    "a": 2\n  }, 3\n]\n'
    assert _records(text) == [(2, {"a": 1}, None), (3, {"a": 2}, None), (5, 3, None)]


def test_pretty_printed_documents() -> None:
    text = '{\n  "a": 1\n}\n{\n  "b": [\n    2\n  ]\n}\n'
    assert _records(text) == [(1, {"a": 1}, None), (4, {"b": [2]}, None)]


def test_broken_first_line_of_json_lines_does_not_hide_the_rest() -> None:
    assert _records('{"a": \n{"b": 1}\n') == [(1, None, _records('{"a": \n')[0][2]), (2, {"b": 1}, None)]


def test_broken_array_reports_where_it_broke() -> None:
    records = _records('[{"a": 1},\n {"b": ]\n')
    assert records[0] == (1, {"a": 1}, None)
    line, value, error = records[1]
    assert (line, value) == (2, None) and error and "the rest of the array is unreadable" in error
    assert _records("[1, 2")[-1][2] == "not valid JSON (the array is not closed)"


def test_values_larger_than_a_chunk() -> None:
    big = {"text": "x" * 200_000, "n": 123456789}
    assert _records(json.dumps([big, big])) == [(1, big, None), (1, big, None)]
    assert _records(json.dumps(big, indent=1)) == [(1, big, None)]
    assert _records(json.dumps(big) + "\n" + json.dumps(big)) == [(1, big, None), (2, big, None)]


def test_number_split_across_chunks() -> None:
    pad = " " * (jsonio._CHUNK - 3)
    assert _records("[" + pad + "12345]") == [(1, 12345, None)]


def test_bytes_that_are_not_utf8_are_reported() -> None:
    data = b'{"a": "ok"}\n{"a": "\xff\xfe"}\n{"a": "fine"}\n'
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape")
    records = [(r.line, r.value, r.error) for r in iter_records(stream)]
    assert records == [(1, {"a": "ok"}, None), (2, None, "not valid UTF-8 text"), (3, {"a": "fine"}, None)]
    stream = io.TextIOWrapper(io.BytesIO(b'[{"a": "\xff"}]'), encoding="utf-8", errors="surrogateescape")
    (record,) = iter_records(stream)
    assert record.error and "not valid UTF-8" in record.error


def test_empty_input() -> None:
    assert _records("") == [] and _records("  \n\n") == []


def test_nan_infinity_and_big_integers_are_read_as_ragas_writes_them() -> None:
    text = '{"a": 1}\n{"n": NaN, "i": -Infinity}\n{"big": 18446744073709551616, "s": "12345678901234567890"}\n'
    records = _records(text)
    assert [r[2] for r in records] == [None, None, None]
    nan = records[1][1]
    assert isinstance(nan, dict) and nan["n"] != nan["n"] and nan["i"] == float("-inf")
    assert records[2][1] == {"big": 18446744073709551616, "s": "12345678901234567890"}
    assert jsonio.dumps_compact(records[2][1]) == '{"big":18446744073709551616,"s":"12345678901234567890"}'


def test_integers_beyond_64_bits_of_either_sign_stay_exact() -> None:
    text = '{"a": -9223372036854775809, "b": 18446744073709551615}\n'
    assert _records(text) == [(1, {"a": -9223372036854775809, "b": 18446744073709551615}, None)]

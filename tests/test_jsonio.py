from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
    broken = "not valid JSON (Expecting value: line 1 column 7 (char 6))"  # the parser's words for '{"a": '
    assert _records('{"a": \n{"b": 1}\n') == [(1, None, broken), (2, {"b": 1}, None)]
    # A first line that opens an array and breaks is one broken line too, not an array hiding the rest.
    assert _records('[{"a": 1}, {"b": \n{"c": 1}\n[2]\n') == [
        (1, None, "not valid JSON (Expecting value: line 1 column 18 (char 17))"),
        (2, {"c": 1}, None),
        (3, [2], None),
    ]


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


def test_a_first_line_array_is_one_record_of_json_lines() -> None:
    # Decided on the whole input: an array is the file's records only when nothing follows it.
    assert _records('[]\n{"a": 1}\n{"b": 2}\n') == [(1, [], None), (2, {"a": 1}, None), (3, {"b": 2}, None)]
    messages = '[{"role": "user", "content": "hi"}]'
    assert _records(f"{messages}\n{messages}\n") == [(1, [{"role": "user", "content": "hi"}], None)] * 1 + [
        (2, [{"role": "user", "content": "hi"}], None)
    ]
    assert [r.in_array for r in iter_records(io.StringIO(f"{messages}\n"))] == [True]
    assert _records('[\n  {"a": 1}\n]\n{"b": 2}\n') == [(1, [{"a": 1}], None), (4, {"b": 2}, None)]
    assert _records("[1] [2]\n") == [(1, [1], None), (1, [2], None)]


def test_junk_after_an_array_is_reported_and_the_array_read() -> None:
    assert _records('[{"a": 1}, {"b": 2}]\n}{ junk\n') == [
        (1, {"a": 1}, None),
        (1, {"b": 2}, None),
        (2, None, "not valid JSON (Expecting value: line 1 column 1 (char 0))"),
    ]


def test_an_array_too_long_to_hold_back_is_streamed_and_what_follows_read_with_a_warning() -> None:
    element = {"text": "x" * 1000}
    text = json.dumps([element] * (2 * jsonio._LOOKAHEAD // 1000)) + '\n{"after": 1}\n'
    records = list(iter_records(io.StringIO(text)))
    assert all(r.in_array and r.value == element for r in records[:-2])
    warning, after = records[-2:]
    assert (
        warning.line == 2 and warning.warning and "more JSON follows the array that starts on line 1" in warning.warning
    )
    assert (after.line, after.value) == (2, {"after": 1})


def test_parser_limits_are_problems_on_their_record_and_the_others_are_read() -> None:
    deep = "[" * 1500 + "]" * 1500
    big = "9" * 5000
    lines = f'{{"a": 1}}\n{{"d": {deep}}}\n{{"n": {big}}}\n{{"s": ["ok", "\\udc00"]}}\n{{"b": 2}}\n'
    records = list(iter_records(io.StringIO(lines)))
    assert [(r.line, r.value, r.error, r.field) for r in records] == [
        (1, {"a": 1}, None, None),
        (2, None, "nested 1501 levels deep (arrays and objects): deeper than the JSON reader goes", None),
        (3, None, "an integer of 5000 digits: more than the 4300 digits Python reads", None),
        (4, None, "a lone surrogate \\udc00: half of a UTF-16 pair, not a character", "s[1]"),
        (5, {"b": 2}, None, None),
    ]
    # The same in one JSON array, and in pretty-printed documents: the element is skipped, the next read.
    array = f'[{{"a": 1}},\n{deep},\n{big},\n"\\ud800",\n{{"b": 2}}]'
    assert [(r.line, r.value, r.error is None) for r in iter_records(io.StringIO(array))] == [
        (1, {"a": 1}, True), (2, None, False), (3, None, False), (4, None, False), (5, {"b": 2}, True)
    ]  # fmt: skip
    documents = '{\n "x": "\\ud800"\n}\n{\n "y": ' + deep + '\n}\n{\n "z": 1\n}\n'
    assert [(r.line, r.value, r.error is None) for r in iter_records(io.StringIO(documents))] == [
        (1, None, False), (4, None, False), (7, {"z": 1}, True)
    ]  # fmt: skip


def test_loads_refuses_what_evalcore_cannot_hold_as_json_errors() -> None:
    for text in ('"\\ud800"', '{"a": "x\\udfff"}', "[" * 1200 + "]" * 1200, "1" * 4400):
        with pytest.raises(jsonio.Unreadable):
            jsonio.loads(text)
        with pytest.raises(json.JSONDecodeError):  # what callers of loads catch
            jsonio.loads(text)
    assert jsonio.loads('"\\ud83d\\ude00"') == "\U0001f600" and jsonio.loads("NaN") != jsonio.loads("NaN")


def test_a_long_run_of_whitespace_before_the_first_record_hides_nothing() -> None:
    assert _records(" " * (3 * jsonio._CHUNK) + '\n\n{"a": 1}\n') == [(3, {"a": 1}, None)]
    assert _records("\n" * (3 * jsonio._CHUNK) + '[{"a": 1}]') == [(3 * jsonio._CHUNK + 1, {"a": 1}, None)]


def test_bytes_that_are_not_utf8_in_an_array_element_skip_that_element_only() -> None:
    data = b'[{"a": "ok"},\n{"a": "\xff"},\n{"a": "fine"}]'
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape")
    assert [(r.line, r.value, r.error) for r in iter_records(stream)] == [
        (1, {"a": "ok"}, None),
        (2, None, "not valid UTF-8 text"),
        (3, {"a": "fine"}, None),
    ]


@given(st.recursive(st.none() | st.integers() | st.text(max_size=5), lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=30),
       st.integers(min_value=0, max_value=3), st.booleans())  # fmt: skip
def test_the_nesting_bound_holds_through_json_text_inside_strings(value: object, layers: int, ascii_only: bool) -> None:
    def depth(v: object) -> int:
        if isinstance(v, dict):
            return 1 + max((depth(x) for x in v.values()), default=0)
        if isinstance(v, list):
            return 1 + max((depth(x) for x in v), default=0)
        return 0

    text = json.dumps(value, ensure_ascii=ascii_only)
    for _ in range(layers):  # JSON text inside a string, inside a string...
        text = json.dumps({"arguments": text}, ensure_ascii=ascii_only)
    assert jsonio.nesting_bound(text) >= depth(value) + (1 if layers else 0)


def test_lone_carriage_returns_end_lines_as_the_file_reader_sees_them() -> None:
    text = '{"a": 1}\r{"b": 2}\r\n\r\n{"c": 3}\r'
    assert _records(text) == [(1, {"a": 1}, None), (2, {"b": 2}, None), (4, {"c": 3}, None)]
    # A CRLF cut between the first read's CR and the LF after it is still one line end.
    first = '{"a": "' + "x" * (jsonio._CHUNK - 10) + '"}\r'
    first = first[: jsonio._CHUNK - 3] + '"}\r'
    assert len(first) == jsonio._CHUNK
    stream = io.TextIOWrapper(io.BytesIO((first + '\n{"b": 2}\r\n').encode()), newline="")
    assert [(r.line, r.error) for r in iter_records(stream)] == [(1, None), (2, None)]


def test_a_broken_element_of_a_pretty_printed_array_costs_only_itself() -> None:
    elements = [{"n": i, "tags": ["a", "b"]} for i in range(5)]
    text = json.dumps(elements, indent=2)
    broken = text.replace('"n": 2,', '"n": 2,,')  # a syntax error inside the third element
    records = list(iter_records(io.StringIO(broken)))
    assert [r.value["n"] for r in records if r.error is None] == [0, 1, 3, 4]
    (error,) = [r for r in records if r.error is not None]
    assert error.line == 16 and error.error and error.error.endswith("read on from line 23")


def test_a_broken_pretty_printed_document_costs_only_itself() -> None:
    docs = [json.dumps({"n": i, "tags": ["a", "b"]}, indent=2) for i in range(4)]
    docs[1] = docs[1].replace('"n": 1,', '"n": 1,,')
    records = list(iter_records(io.StringIO("\n".join(docs) + "\n")))
    assert [r.value["n"] for r in records if r.error is None] == [0, 2, 3]
    assert [r.line for r in records if r.error is not None] == [8]


def test_the_elements_of_a_file_that_is_one_array_are_numbered() -> None:
    records = list(iter_records(io.StringIO('[{"a": 1}, {"b": "\\ud800"}, 3]')))
    assert [(r.line, r.element, r.error is None) for r in records] == [(1, 1, True), (1, 2, False), (1, 3, True)]
    pretty = list(iter_records(io.StringIO('[\n  {"a": 1},\n  ,\n  {"c": 3}\n]')))
    assert [(r.line, r.element) for r in pretty] == [(2, 1), (3, 2), (4, 3)]
    assert [r.element for r in iter_records(io.StringIO('{"a": 1}\n{"b": 2}\n'))] == [None, None]


def test_a_number_too_large_for_a_float_is_read_as_infinity_with_a_remark_naming_the_field() -> None:
    remark = (
        "the number 1e999 is too large for a float (beyond 1.8e308): read as infinity, which JSON cannot write "
        "(the evalcore and ragas formats write it as Infinity, the others as null)"
    )
    for text in ('{"a": {"b": [1, 1e999]}}\n', '[{"a": {"b": [1, 1e999]}}]', '{\n "a": {"b": [1, 1e999]}\n}\n'):
        (record,) = iter_records(io.StringIO(text))
        assert record.value == {"a": {"b": [1, float("inf")]}} and record.error is None, text
        assert (record.remark, record.field) == (remark, "a.b[1]"), text
    (record,) = iter_records(io.StringIO("-" + "9" * 400 + ".5\n"))
    assert record.value == float("-inf") and record.field is None and record.remark is not None
    assert "the number -99999999999...999999.5 is too large" in record.remark
    # NaN and Infinity written as such are what ragas writes: read as they are, with no remark.
    (record,) = iter_records(io.StringIO('{"n": NaN, "i": Infinity, "x": 1e308}\n'))
    assert record.remark is None and record.value["i"] == float("inf")


@pytest.mark.parametrize(
    ("data", "what"),
    [
        ('{"a": 1}\n'.encode("utf-16"), "the file looks UTF-16 (it starts with a UTF-16 byte-order mark)"),
        ('{"a": 1}\n'.encode("utf-16-be"), "the file looks UTF-16 (NUL bytes between its characters)"),
        ('[{"a": 1}]'.encode("utf-16-le"), "the file looks UTF-16 (NUL bytes between its characters)"),
        ('{"a": 1}\n'.encode("utf-32"), "the file looks UTF-32 (it starts with a UTF-32 byte-order mark)"),
        ('{"a": 1}\n'.encode("utf-32-be"), "the file looks UTF-32 (NUL bytes between its characters)"),
        (gzip.compress(b'{"a": 1}\n'), "the file looks gzip-compressed (it starts with the bytes that mark one)"),
        (bz2.compress(b'{"a": 1}\n'), "the file looks bzip2-compressed"),
        (lzma.compress(b'{"a": 1}\n'), "the file looks xz-compressed"),
        (b"PK\x03\x04" + b"\0" * 40, "the file looks a zip archive"),
    ],
)
def test_utf16_utf32_and_compressed_files_are_named_from_their_first_bytes(data: bytes, what: str) -> None:
    stream = io.TextIOWrapper(io.BytesIO(data * 50), encoding="utf-8", errors="surrogateescape", newline="")
    (record,) = iter_records(stream)  # one problem, on line 1: the file is not read
    assert record.line == 1 and record.error is not None and record.error.startswith(what)
    assert record.error.endswith(("convert it to UTF-8 first", "gunzip it first", "bunzip2 it first", "unxz it first",
                                  "unzip it first"))  # fmt: skip


def test_nul_bytes_and_utf8_text_are_not_taken_for_other_encodings() -> None:
    assert [(r.line, r.error) for r in iter_records(io.StringIO('\0\0\0\n{"a": 1}\n'))] == [
        (1, "not valid JSON (NUL bytes, as in a file a crash left zero-filled)"),
        (2, None),
    ]
    assert [r.value for r in iter_records(io.StringIO('{"PK": "BZh1"}\n'))] == [{"PK": "BZh1"}]

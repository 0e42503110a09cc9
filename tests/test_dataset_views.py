"""The Datasets page's texts worked out: an import problem's JSON error said plainly with the file's line and
column, and the sample card with or without sample files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcore.formats.json_problems import plain_json_problem
from evalcore.views.datasets import sample_card


def parser_words(text: str) -> str:
    """What the importer writes for a record that is not JSON (Python's message in brackets)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc})"
    raise AssertionError("valid JSON")


def test_the_screenshots_problem() -> None:
    message = "not valid JSON (Expecting ',' delimiter: line 1 column 61 (char 60))"
    assert plain_json_problem(message, 3) == (
        "not valid JSON at line 3, column 61: a comma or a closing bracket was expected"
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"a": 1 "b": 2}', "line 7, column 9: a comma or a closing bracket was expected"),
        ('{"a" 1}', "line 7, column 6: a colon was expected after the key"),
        ('{"a": tru}', "line 7, column 7: a value was expected"),
        ('{"a": 1,}', "line 7, column 9: a key in double quotes was expected"),
        ('{"a": 1} x', "line 7, column 10: more text follows the end of the JSON value"),
        ('{"a": "x', "line 7, column 7: a text in double quotes starts here and is never closed"),
        ('{"a": "x\ty"}', "line 7, column 9: a control character"),
        ('{"a": "\\q"}', "line 7, column 8: a backslash escape that JSON does not know"),
        ('\n\n  {"a": 1 "b"}', "line 9, column 11: a comma or a closing bracket was expected"),  # the record's 3rd
    ],
)
def test_each_parser_message_plainly_at_the_files_line(text: str, said: str) -> None:
    shown = plain_json_problem(parser_words(text), 7)
    assert shown is not None and shown.startswith("not valid JSON at " + said)
    assert "(char " not in shown and "Expecting" not in shown


def test_what_follows_is_kept_and_other_messages_are_left_alone() -> None:
    message = "not valid JSON (Expecting value: line 1 column 3 (char 2)); read on from line 12"
    assert plain_json_problem(message, 4) == (
        "not valid JSON at line 4, column 3: a value was expected (text in double quotes, a number, an object, a "
        "list, true, false or null); read on from line 12"
    )
    assert plain_json_problem(message, None, ).startswith("not valid JSON at column 3: ")  # fmt: skip
    for other in ("missing field 'messages'", "not valid JSON (NUL bytes: a binary file?)", "", None):
        assert plain_json_problem(other, 2) == other


def test_the_sample_card(tmp_path: Path) -> None:
    none = sample_card(tmp_path / "no-samples")
    assert not none.can_load and none.files == 0
    assert none.caption.startswith("No sample data here: the folder ` ") and "0 small files" not in none.caption
    (tmp_path / "a.jsonl").write_text("{}\n")
    (tmp_path / "b.json").write_text("[]")
    (tmp_path / "README.md").write_text("x")
    two = sample_card(tmp_path)
    assert two.can_load and two.caption.startswith("2 small files, at least one per format")


def test_the_real_sample_folder_has_its_files() -> None:
    """The "0 small files" of the screenshots came from the browser tests' empty folder: the app's own has files."""
    card = sample_card(Path(__file__).parents[1] / "sample_data")
    assert card.files >= 10 and card.can_load

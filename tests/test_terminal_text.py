"""What reaches a screen or a terminal (issue 23, item 11): invisible, reordering and control characters in ids,
names and file names are shown as escapes — on the pages (``evalcore.views.text``) and in everything the
command line prints (``FILE:LINE:`` problems, summaries, errors, argparse's usage errors, the progress bar)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalcore._infra.printable import _BLANK, visible
from evalcore._infra.progress import ProgressBar
from evalcore.convert import FileProblem
from evalcore.views.review.tables import session_label
from evalcore.views.text import chart_text, literal_message, literal_name

EVALCORE = str(Path(sys.executable).parent / "evalcore")
ESC = "\x1b"
#: What a hostile file name does to a terminal: clears the screen, sets the window's title, rings, moves back.
ATTACK = f"{ESC}[2J{ESC}]0;pwned\x07\x08\r"


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVALCORE, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


# -- visible ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("gnp\u202eexe.png", "gnp\\u202eexe.png"),  # read as "gnpgnp.exe" when the override acts
        ("\u200b\u200b", "\\u200b\\u200b"),  # an id that shows as nothing
        ("a\u2066b\u2069c\u200ed\u200f\u061c", "a\\u2066b\\u2069c\\u200ed\\u200f\\u061c"),  # isolates, marks
        ("\ufeffbom\u00ad\u2060", "\\ufeffbom\\xad\\u2060"),  # BOM, soft hyphen, word joiner
        ("\u3164\u115f\u2800\u034f\ufe0f", "\\u3164\\u115f\\u2800\\u034f\\ufe0f"),  # printable, yet blank
        ("tag\U000e0041\U000e007f", "tag\\U000e0041\\U000e007f"),  # tag characters
        ("a\u00a0b\u2003c\u3000d", "a\\xa0b\\u2003c\\u3000d"),  # spaces that are not a space
        (f"x{ATTACK}y", "x\\x1b[2J\\x1b]0;pwned\\x07\\x08\\ry"),
        ("line\nbreak\ttab", "line\\nbreak\\ttab"),
        ("u\u2028v\u2029w\x85", "u\\u2028v\\u2029w\\x85"),
        ("café 日本 😀 naïve ü", "café 日本 😀 naïve ü"),  # printable text is left alone
        ("", ""),
    ],
)
def test_visible(text: str, shown: str) -> None:
    assert visible(text) == shown


def test_visible_keeps_line_breaks_when_asked() -> None:
    assert visible("one\ntwo\u202e", lines=True) == "one\ntwo\\u202e"


@given(st.text())
def test_visible_leaves_nothing_invisible_or_controlling(text: str) -> None:
    shown = visible(text)
    assert shown.isprintable()  # no control, format, separator or unassigned character is left
    bidi = {"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI", "LRM", "RLM", "ALM"}
    assert not any(unicodedata.bidirectional(c) in bidi for c in shown)
    assert visible(shown) == shown  # an escape is printable text: shown once, it stays as it is
    if text.isprintable() and not _BLANK.search(text):
        assert shown == text  # text with nothing to hide comes back unchanged


def test_ids_and_names_on_the_pages() -> None:
    assert session_label("gnp\u202eexe.png") == "gnp\\u202eexe.png"
    assert session_label("\u200b") == "\\u200b"
    assert session_label('ida:["s\u202e1","bot\u200b"]') == "s\\u202e1 · bot\\u200b"
    assert literal_name("gnp\u202eexe.png") == "gnp\\\\u202eexe\\.png"  # Markdown, showing the escape's backslash
    assert "\u202e" not in literal_message("no session 'a\u202eb' in dataset 'x'")
    assert literal_message("two\nlines\u200b") == "two  \nlines\\\\u200b"
    assert chart_text("<b>x</b> & y\u202e") == "&lt;b&gt;x&lt;/b&gt; &amp; y\\u202e"


# -- the command line ---------------------------------------------------------------------------------------------


def test_file_problem_prints_as_one_line_of_text() -> None:
    problem = FileProblem(f"in{ATTACK}\n.jsonl", 3, "warning", f"tool_call_id: 'x{ESC}[31m' names no tool call")
    assert str(problem) == (
        "in\\x1b[2J\\x1b]0;pwned\\x07\\x08\\r\\n.jsonl:3: warning: tool_call_id: 'x\\x1b[31m' names no tool call"
    )


def test_the_progress_bar_shows_its_label_and_notes_as_text() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    bar = ProgressBar(f"importing a{ESC}[2Jb\u202e.jsonl", out)
    bar.update(1, 2)
    bar.note(f"note {ESC}]0;x\x07")
    bar.close()
    written = out.getvalue()
    # The bar's own controls (carriage return, clear line) are there; nothing from the label or the note is.
    assert written.count(ESC) == 1 and "\r\x1b[K" in written
    assert "importing a\\x1b[2Jb\\u202e.jsonl" in written and "note \\x1b]0;x\\x07\n" in written


@pytest.fixture
def evil_file(tmp_path: Path) -> Path:
    """A JSON Lines file whose name holds terminal escapes, a line break and a right-to-left override; one bad
    line and one good."""
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    path = tmp_path / f"evil{ATTACK}\n\u202eexe.jsonl"
    path.write_text('{"messages": [{"role": "robot", "content": "x"}]}\n' + json.dumps(good) + "\n")
    return path


def _no_raw_controls(text: str) -> None:
    assert ESC not in text and "\x07" not in text and "\x08" not in text and "\r" not in text
    assert "\u202e" not in text


def test_validate_and_convert_print_file_names_as_text(evil_file: Path, tmp_path: Path) -> None:
    shown = visible(str(evil_file))
    proc = run("validate", str(evil_file), "--from", "openai")
    assert proc.returncode == 1
    _no_raw_controls(proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 2  # the problem and the summary, each on its own line (the name's break is escaped)
    assert lines[0].startswith(f"{shown}:1: ") and "robot" in lines[0]
    assert lines[1].startswith(f"{shown}: 1 sessions read")
    out = tmp_path / f"out{ESC}[2J.jsonl"
    proc = run("convert", str(evil_file), "-o", str(out), "--to", "openai", "--from", "openai")
    assert proc.returncode == 1
    _no_raw_controls(proc.stderr)
    assert proc.stderr.splitlines()[-1].startswith(f"1 sessions written to {visible(str(out))} (openai)")


def test_import_and_export_print_names_as_text(evil_file: Path, tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    dataset = f"ds{ESC}[31m\u202e"
    proc = run("import", str(evil_file), "--dataset", dataset, "--db", str(db), "--from", "openai")
    assert proc.returncode == 1
    _no_raw_controls(proc.stderr)
    assert "1 new" in proc.stderr and visible(str(evil_file)) in proc.stderr
    out = tmp_path / f"x{ESC}]0;t\x07.jsonl"
    proc = run("export", "--dataset", dataset, "--to", "openai", "-o", str(out), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    _no_raw_controls(proc.stderr)
    assert f"written to {visible(str(out))}" in proc.stderr


def test_errors_and_usage_errors_print_what_was_typed_as_text(tmp_path: Path) -> None:
    missing = tmp_path / f"gone{ESC}[2J\u202e.jsonl"
    proc = run("validate", str(missing))
    assert proc.returncode == 2
    _no_raw_controls(proc.stderr)
    assert visible(str(missing)) in proc.stderr
    proc = run("convert", "a.jsonl", "-o", "b.jsonl", "--to", f"nope{ESC}[31m\u202e")  # argparse's own message
    assert proc.returncode == 2
    _no_raw_controls(proc.stderr)
    assert "nope" in proc.stderr
    proc = run("import", "a.jsonl", "--dataset", f" {ESC}[2J\u202e", "--db", str(tmp_path / "x.db"))
    _no_raw_controls(proc.stderr)


def test_json_shown_with_its_invisible_characters_escaped() -> None:
    import json

    from evalcore._infra.printable import visible_json

    value = {"session_id": "gnp\u202eexe.png", "z": "\u200b\u200b", "astral": "\U000e0001", "ok": "é ✓\n"}
    text = json.dumps(value, indent=2, ensure_ascii=False)
    shown = visible_json(text)
    assert "\u202e" not in shown and "\\u202e" in shown and "\\u200b\\u200b" in shown and "\\udb40\\udc01" in shown
    assert json.loads(shown) == value and "é ✓" in shown and shown.count("\n") == text.count("\n")
    assert visible_json(text.replace("\u202e", "")) != text  # (the zero-width ones)
    assert visible_json('{"a": "plain"}') == '{"a": "plain"}'

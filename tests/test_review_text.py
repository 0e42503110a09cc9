"""Text shown literally by st.markdown: every escape, hard-worked examples, properties, and Streamlit itself."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from evalcore.views.review import WORD_JOINER, code_span, escape_inline, literal_markdown

WJ = WORD_JOINER

NASTY = [
    "![x](http://127.0.0.1:9/a.png)",
    "<img src=x onerror=alert(1)>",
    "<script>alert(1)</script>",
    "[click](javascript:alert(1))",
    "$x^2$ and $$\\int$$",
    ":red[hi] :blue-background[x] :material/home: :streamlit: :smile:",
    "# heading\n> quote\n- item\n1. one\n| a | b |\n|---|---|",
    "```\ncode\n```\n    indented\n\ttabbed",
    "a -> b <- c <-> d -- e >= f <= g ~= h",
    "<http://x.y> www.example.com mail@example.com https://e.com/a?b=c",
    "&amp; &lt; &#58; &nbsp; \\ \\\\ \\*",
    "**b** _i_ `c` ~~s~~ ==m== ^sup^ [^1]",
]


def decode(markdown: str) -> str:
    """Undo literal_markdown's encoding (what a reader sees, with the invisible joiners removed)."""
    text = markdown.replace("  \n", "\n").replace("&nbsp;", "\u00a0").replace("&#58;", ":")
    text = re.sub(r"\\(.)", r"\1", text)
    return text.replace(WJ, "")


def expected_reading(text: str) -> str:
    """What literal_markdown should show for ``text``: its lines, indentation as non-breaking spaces."""
    if not text:
        return ""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if text.endswith("\n"):
        lines = lines[:-1]
    out = []
    for line in lines:
        body = line.lstrip(" \t")
        lead = line[: len(line) - len(body)].replace("\t", "    ")
        body = re.sub("  +", lambda m: " " + "\u00a0" * (len(m.group()) - 1), body)
        out.append("\u00a0" * len(lead) + body or "\u00a0")
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def unescaped_punctuation(markdown: str) -> str:
    """The ASCII punctuation left once escapes, our entities and hard breaks are taken out."""
    rest = re.sub(r"\\.", "", markdown.replace("&nbsp;", "").replace("&#58;", ""))
    return "".join(c for c in rest if c in string.punctuation)


# -- hand-worked -------------------------------------------------------------------------------


def test_the_brief_s_attacks_become_plain_escaped_text() -> None:
    assert literal_markdown("![x](http://127.0.0.1:9/a.png)") == (
        f"\\!\\[x\\]\\(http{WJ}&#58;\\/\\/127\\.0\\.0\\.1&#58;9\\/a\\.png\\)"
    )
    assert literal_markdown("<img src=x onerror=alert(1)>") == "\\<img src\\=x onerror\\=alert\\(1\\)\\>"
    assert literal_markdown("<script>") == "\\<script\\>"
    assert literal_markdown("[click](javascript:alert(1))") == "\\[click\\]\\(javascript&#58;alert\\(1\\)\\)"


@pytest.mark.parametrize("char", list(string.punctuation))
def test_every_ascii_punctuation_character_is_escaped(char: str) -> None:
    expected = "&#58;" if char == ":" else "\\" + char
    assert literal_markdown(f"a{char}b").replace(WJ, "") == f"a{expected}b"


def test_directives_latex_and_shortcodes() -> None:
    assert literal_markdown(":red[hi]") == "&#58;red\\[hi\\]"
    assert literal_markdown("$x$") == "\\$x\\$"
    # Rewritten by Streamlit in parsed text: a joiner goes inside.
    assert literal_markdown(":streamlit:") == f"&#58;{WJ}streamlit&#58;"
    assert literal_markdown(":material_home:") == f"&#58;{WJ}material\\_home&#58;"
    assert literal_markdown(":material/home:") == "&#58;material\\/home&#58;"
    # Plain colons get no joiner.
    assert literal_markdown("at 10:30:00") == "at 10&#58;30&#58;00"


def test_typographic_pairs_between_spaces_get_a_joiner_and_nothing_else_does() -> None:
    assert literal_markdown("a -> b") == f"a \\-{WJ}\\> b"
    assert literal_markdown("<-> x") == f"\\<{WJ}\\-\\> x"
    assert literal_markdown("x --") == f"x \\-{WJ}\\-"
    assert literal_markdown("a->b x>=1 i-- <=") == f"a\\-\\>b x\\>\\=1 i\\-\\- \\<{WJ}\\="
    assert WJ not in literal_markdown("a-b <br> ~/x")


def test_autolink_literals_are_broken() -> None:
    out = literal_markdown("see https://e.com, HTTP://x.io, www.a.org or me@ex.com")
    assert f"https{WJ}&#58;" in out and f"HTTP{WJ}&#58;" in out
    assert f"www{WJ}\\." in out and f"me\\@{WJ}ex" in out
    assert decode(out) == "see https://e.com, HTTP://x.io, www.a.org or me@ex.com"


def test_lines_blank_lines_and_indentation() -> None:
    assert literal_markdown("a\nb") == "a  \nb"
    assert literal_markdown("a\n\n\nb") == "a  \n&nbsp;  \n&nbsp;  \nb"
    assert literal_markdown("a\n") == "a  \n"  # a final newline adds no blank line
    assert literal_markdown("a\n\n") == "a  \n&nbsp;  \n"
    assert literal_markdown("a\r\nb\rc") == "a  \nb  \nc"
    assert literal_markdown("    code") == "&nbsp;&nbsp;&nbsp;&nbsp;code"  # never an indented code block
    assert literal_markdown("\tx") == "&nbsp;" * 4 + "x"
    assert literal_markdown("a   b") == "a &nbsp;&nbsp;b"
    assert literal_markdown("") == ""
    assert literal_markdown("\n") == "&nbsp;  \n"


def test_escape_inline_keeps_a_single_leading_space_mid_line() -> None:
    assert escape_inline(" x", line_start=False) == " x"
    assert escape_inline(" x") == "&nbsp;x"


NASTY_EXPECTED = {
    "# heading": "\\# heading",
    "1. one": "1\\. one",
    "- item": "\\- item",
    "> quote": "\\> quote",
    "| a |": "\\| a \\|",
    "***": "\\*\\*\\*",
    "&amp;": "\\&amp\\;",
    "\\*": "\\\\\\*",
    "~~s~~": "\\~\\~s\\~\\~",
}


@pytest.mark.parametrize(("text", "expected"), NASTY_EXPECTED.items())
def test_block_markup_is_escaped(text: str, expected: str) -> None:
    assert literal_markdown(text) == expected


# -- properties --------------------------------------------------------------------------------

TEXT = st.lists(
    st.sampled_from(list(string.printable) + ["é", "\u00a0", "\u2028", "日", "\r\n", " -> ", ":x:", "@a.", "www."]),
    max_size=60,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_literal_markdown_reads_back_as_the_text(text: str) -> None:
    out = literal_markdown(text)
    assert decode(out) == expected_reading(text)


@settings(max_examples=400, deadline=None)
@given(TEXT)
def test_no_markup_survives(text: str) -> None:
    out = literal_markdown(text)
    assert unescaped_punctuation(out) == ""
    lines = out.split("  \n")
    # One paragraph: no line is blank (that would end it) and none starts with whitespace
    # (4 spaces would open a code block); the last one may be empty after a final newline.
    assert all(line and line[0] not in " \t" for line in lines[:-1])
    assert lines[-1][:1] not in (" ", "\t")
    assert "\n" not in "".join(lines)


# -- code spans --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("get_order", "` get_order `"),
        ("a`b", "`` a`b ``"),
        ("a``b`", "``` a``b` ```"),
        ("`", "`` ` ``"),
        ("x\ny", "` x y `"),
        ("", "` `"),
        ("  ", "`  `"),
        (" x ", "`  x  `"),
        (":smile: ok", f"` :{WJ}smile: ok `"),
        (":material/home:", f"` :{WJ}material/home: `"),
        ("call:12", "` call:12 `"),
    ],
)
def test_code_span(text: str, expected: str) -> None:
    assert code_span(text) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab `\n:$*_[]<>\\")), max_size=30))
def test_code_span_fence_is_longer_than_any_backtick_run_inside(text: str) -> None:
    span = code_span(text)
    fence = re.match(r"`+", span)
    assert fence is not None
    inner = span[len(fence.group()) : len(span) - len(fence.group())]
    assert span.endswith(fence.group())
    assert all(len(run) < len(fence.group()) for run in re.findall(r"`+", inner))
    assert "\n" not in span
    # CommonMark strips one space from each side of the padded content: the text comes back.
    shown, want = inner.replace(WJ, ""), text.replace("\n", " ")
    if want.strip(" "):
        assert shown[1:-1] == want
    else:
        assert shown == (want or " ")


# -- through Streamlit -------------------------------------------------------------------------


def _rendered(markdown: str) -> str:
    script = f"import streamlit as st\nst.markdown({markdown!r})\n"
    app = AppTest.from_string(script, default_timeout=30).run()
    assert not app.exception
    assert len(app.markdown) == 1
    return str(app.markdown[0].value)


@pytest.mark.parametrize("text", NASTY)
def test_streamlit_receives_the_escaped_text_unchanged(text: str) -> None:
    assert _rendered(literal_markdown(text)) == literal_markdown(text)


def test_streamlit_receives_a_code_span_unchanged() -> None:
    span = code_span("weird`name`:smile:")
    assert _rendered(f"tool {span}") == f"tool {span}"

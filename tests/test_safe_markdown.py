"""safe_markdown: what a user or an assistant wrote, with bold, italic, code, lists and headings shown as such and
nothing else active — hand-worked examples, the hostile strings of the other tests, and properties (nothing
active for any text; every letter of the text shown, in order, none added)."""

from __future__ import annotations

import re
import string

import pytest
from apptest_util import XSS, hostile
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from evalcore.views.text import WORD_JOINER, RichBlock, safe_markdown

WJ = WORD_JOINER

# Code spans as code_span writes them (a fence of backticks, the same fence closing it).
_SPAN = re.compile(r"(?<![\\`])(`+)(.+?)(?<!`)\1(?!`)")
_LIST_MARKER = re.compile(r"^ *(?:-|\d{1,9}\.) ", re.M)


def markdown_of(text: str) -> str:
    """The Markdown blocks of ``text`` joined (the code blocks left out)."""
    return "\n\n".join(b.text for b in safe_markdown(text) if b.kind == "markdown")


def active(markdown: str) -> list[str]:
    """What in ``markdown`` would be more than bold, italic, a code span, a list or a line break."""
    markdown = re.sub(r"\\\\", "\x00", markdown)  # (an escaped backslash: a backtick after it may open a span)
    found = []
    for _fence, code in _SPAN.findall(markdown):
        if re.search(r":(?=material/|[\w+-]+:)", code):
            found.append(f"a shortcode in a code span: {code!r}")
        if "$" in code and "`" in code:
            found.append(f"LaTeX could load for {code!r}")
    rest = _SPAN.sub("", markdown)
    rest = _LIST_MARKER.sub("", rest.replace("  \n", "\n"))
    rest = rest.replace("&nbsp;", "").replace("&#58;", "")
    rest = re.sub(r"\\.", "", rest)
    rest = re.sub(r"\*+", "", rest)  # bold and italic (escaped asterisks are gone already)
    found += [f"unescaped {c!r}" for c in rest if c in string.punctuation]
    reading = re.sub(r"\\(.)", r"\1", _SPAN.sub("", markdown)).replace("&#58;", ":")
    for pattern in (r"https?://", r"www\.", r"\w@\w", r":(?=streamlit:|material_)"):
        if re.search(pattern, reading, re.I | re.A):  # GFM makes ASCII addresses links
            found.append(f"{pattern} left for Streamlit to rewrite")
    return found


def letters(text: str) -> str:
    return "".join(c for c in text if c.isalpha())


def shown_letters(blocks: tuple[RichBlock, ...]) -> str:
    """The letters a reader sees, in order (entities decoded first: their letters are not shown)."""
    out = []
    for block in blocks:
        text = block.text
        if block.kind == "markdown":
            text = text.replace("&nbsp;", " ").replace("&#58;", ":")
        out.append(letters(text))
    return "".join(out)


# -- hand-worked -------------------------------------------------------------------------------------------------


def test_an_airline_answer_shows_bold_and_a_list() -> None:
    text = "Here is your booking:\n- **Trip Type:** One Way\n- **Payment:** credit card\n\nAnything else?"
    assert safe_markdown(text) == (
        RichBlock(
            "markdown",
            "Here is your booking&#58;\n\n- **Trip Type&#58;** One Way\n- **Payment&#58;** credit card\n\n"
            "Anything else?".replace("?", "\\?"),
        ),
    )


@pytest.mark.parametrize(
    ("text", "markdown"),
    [
        ("**b** and __b__", "**b** and **b**"),
        ("*i* and _i_", "*i* and *i*"),
        ("***both***", "***both***"),
        ("*a **b** c*", "*a **b** c*"),
        ("use `get_order` now", "use ` get_order ` now"),
        ("``a`b``", "`` a`b ``"),
        ("snake_case_name", "snake\\_case\\_name"),  # no italic inside a word
        ("2 * 3 * 4", "2 \\* 3 \\* 4"),  # an asterisk with a space after it opens nothing
        ("**never closed", "\\*\\*never closed"),
        ("a**(b)**c", "a\\*\\*\\(b\\)\\*\\*c"),  # CommonMark would not make this bold: shown as written
        ("`unclosed", "\\`unclosed"),
        ("line one\nline two", "line one  \nline two"),
        ("  indented", "&nbsp;&nbsp;indented"),
    ],
)
def test_inline(text: str, markdown: str) -> None:
    assert markdown_of(text) == markdown


def test_lists_nest_by_indentation_and_keep_their_numbers() -> None:
    text = "1. one\n   - a\n   - b\n     - deep\n2) two\n   still two\n10. ten\n    - under ten\n* star"
    assert markdown_of(text) == (
        "1. one\n   - a\n   - b\n     - deep\n2. two  \n   still two\n10. ten\n    - under ten\n- star"
    )


def test_headings_become_a_bold_line() -> None:
    assert markdown_of("# Title\ntext") == "**Title**\n\ntext"
    assert markdown_of("### **Already** bold ###") == "**Already bold**"
    assert markdown_of("#hashtag") == "\\#hashtag"  # no space: not a heading
    assert markdown_of("#") == "\\#"


def test_fenced_code_is_a_block_of_its_own_shown_verbatim() -> None:
    text = "Run:\n```python\nprint('**x**')  # :red[no] $x$\n```\nDone ~~~\n~~~\n<b>\n"
    assert safe_markdown(text) == (
        RichBlock("markdown", "Run&#58;"),
        RichBlock("code", "print('**x**')  # :red[no] $x$"),
        RichBlock("markdown", "Done \\~\\~\\~"),
        RichBlock("code", "<b>\n"),  # never closed: to the end
    )


def test_what_is_not_in_the_subset_shows_as_written() -> None:
    assert markdown_of("[site](http://e.com)") == f"\\[site\\]\\(http{WJ}&#58;\\/\\/e\\.com\\)"
    assert markdown_of("![x](http://e.com/a.png)").startswith("\\!\\[x\\]")
    assert markdown_of("> quote") == "\\> quote"
    assert markdown_of("| a | b |") == "\\| a \\| b \\|"
    assert markdown_of(":red[x] $y$") == "&#58;red\\[x\\] \\$y\\$"
    assert markdown_of("<b>bold</b>") == "\\<b\\>bold\\<\\/b\\>"
    assert markdown_of("`$x$ and ``y`` `") == "\\`\\$x\\$ and ` y ` \\`"  # a span Streamlit would load LaTeX for


def test_emphasis_and_code_hold_no_active_markup() -> None:
    out = markdown_of("**[x](http://e.com) :smile:** `:smile: :material/home:`")
    assert out == (f"**\\[x\\]\\(http{WJ}&#58;\\/\\/e\\.com\\) &#58;smile&#58;** ` :{WJ}smile: :{WJ}material/home: `")
    assert active(out) == []


# -- hostile input -----------------------------------------------------------------------------------------------


def _e2e_hostile(port: int = 9) -> str:
    """The conversation text of tests/e2e/test_hostile.py."""
    pixel = f"![p](http://127.0.0.1:{port}/pixel.png)"
    return (
        f'<script>window.__xss=1</script> <img src=x onerror="window.__xss=2"> {pixel} '
        f'[click](javascript:window.__xss=3) <img src="http://127.0.0.1:{port}/html.png">'
    )


HOSTILE = [
    *XSS,
    "\n".join(XSS),
    _e2e_hostile(),
    f"**Bold {_e2e_hostile()}**\n- *{hostile('item')}*\n# {hostile('head')}\n`{hostile('code')}`",
    hostile("x"),
    ":red[hi] :blue-background[x] :material/home: :streamlit: :smile: :material_home:",
    "**:smile:** *:material/home:* `:smile:` ``:x:`y``",
    "$x^2$ and $$\\int$$ **$x$** `$x$` ``$`$``",
    "<http://x.y> www.example.com mail@example.com https://e.com/a?b=c",
    "- [x](javascript:alert(1))\n1. ![i](http://h/i.png)\n## <img src=x>",
    "a -> b <- c <-> d -- e >= f <= g ~= h\n- -> x\n**--**",
    "&amp; &lt; &#58; &nbsp; \\ \\\\ \\* \\`",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_renders_nothing_active(text: str) -> None:
    blocks = safe_markdown(text)
    assert blocks
    for block in blocks:
        if block.kind == "markdown":
            assert active(block.text) == [], block.text
    assert shown_letters(blocks) == letters(text)


def test_the_checker_finds_active_markup() -> None:
    """``active`` is what the properties rest on: it must see each kind of markup left live."""
    for live in ("[a](http://x)", "![i](x.png)", "<b>", ":red[x]", "$x$", "` :smile: `", "`` $`$ ``", "www\\.x"):
        assert active(live), live


# -- properties --------------------------------------------------------------------------------------------------

PIECES = [
    *list(string.printable),
    "**", "__", "```", "~~~", "\n- ", "\n1. ", "\n  * ", "\n# ", "é", "\u00a0", "日", "\r\n",
    " -> ", ":x:", ":material/home:", "@a.", "www.", "http://", "$x$", "](", "![", "<img ", "`` ",
]  # fmt: skip
TEXT = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)


@settings(max_examples=600, deadline=None)
@given(TEXT)
def test_no_text_makes_anything_active(text: str) -> None:
    for block in safe_markdown(text):
        if block.kind == "markdown":
            assert active(block.text) == [], block.text


@settings(max_examples=600, deadline=None)
@given(TEXT)
def test_every_letter_is_shown_once_in_order(text: str) -> None:
    assume(not re.search(r"^ {0,3}(`{3,}|~{3,})", text.replace("\r", "\n"), re.M))  # a fence's language is dropped
    assert shown_letters(safe_markdown(text)) == letters(text)


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_a_code_block_is_the_text_between_its_fences(text: str) -> None:
    normal = text.replace("\r\n", "\n").replace("\r", "\n")
    for block in safe_markdown(text):
        if block.kind == "code":
            assert block.text in normal


def test_a_long_line_of_openers_is_quick() -> None:
    import time

    start = time.perf_counter()
    safe_markdown("*a _b `c " * 20_000)
    assert time.perf_counter() - start < 5


# -- through Streamlit -------------------------------------------------------------------------------------------


def test_streamlit_receives_the_blocks_unchanged() -> None:
    text = "**Trip Type:** One Way\n- a `b`\n```\ncode\n```"
    blocks = [b.text for b in safe_markdown(text) if b.kind == "markdown"]
    script = "import streamlit as st\n" + "".join(f"st.markdown({b!r})\n" for b in blocks)
    app = AppTest.from_string(script, default_timeout=30).run()
    assert not app.exception
    assert [m.value for m in app.markdown] == blocks

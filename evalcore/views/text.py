"""Markdown that shows text as it is: for putting conversation text into ``st.markdown`` safely.

Conversation text is data, not markup. Rendered as Markdown, an answer holding
``![x](http://host/a.png)`` would load an image, ``$x$`` would switch on LaTeX,
``:red[...]`` would colour text and ``<img onerror=...>`` is HTML. :func:`literal_markdown`
turns any text into Markdown that Streamlit shows character for character and that loads
nothing; :func:`code_span` does the same for a short name shown as inline code.

How, and why each step is needed (Streamlit 1.67's Markdown pipeline: react-markdown with
GFM, directives, KaTeX and its own plugins):

- every ASCII punctuation character is backslash-escaped (CommonMark lets any of them be
  escaped, and an escaped character is never markup): links, images, emphasis, code,
  headings, lists, tables, block quotes, HTML, autolinks, ``$`` (LaTeX is never switched on:
  Streamlit ignores ``\\$`` when it decides whether to load KaTeX), ``~`` (strikethrough);
- ``:`` is written as the character reference ``&#58;`` instead of ``\\:``: the text then
  holds no colon at all, so no directive (``:red[...]``, ``:material/...:``) starts in it and
  Streamlit's check for emoji shortcodes (made on the raw source, before parsing) never
  fires, even when the text is put next to other Markdown;
- some rewrites work on *parsed* text, after escapes are undone: GFM's autolink literals
  (``http://...``, ``https://...``, ``www.x...``, ``a@b.c`` become links), and Streamlit's
  ``:streamlit:`` (its logo), ``:material_name:`` (an icon) and typographic pairs ``->``,
  ``<-``, ``<->``, ``--``, ``>=``, ``<=``, ``~=`` standing between spaces (arrows, dashes).
  Escaping cannot stop these, so an invisible WORD JOINER (U+2060) is put inside each such
  pattern, and only there (``http\u2060://``, ``www\u2060.``, ``@\u2060``). Copying the
  rendered text keeps that invisible character;
- a newline becomes a hard break (``"  \\n"``); a blank line becomes a line holding a
  non-breaking space, so runs of blank lines are kept instead of ending the paragraph;
- spaces and tabs at the start of a line become non-breaking spaces (four for a tab), so
  indentation shows and never makes an indented code block; inside a line, the second and
  later spaces of a run become non-breaking spaces, so runs of spaces show too.
"""

from __future__ import annotations

import bisect
import html
import re
import string
import unicodedata
from dataclasses import dataclass
from typing import Literal

from evalcore._infra.printable import visible

__all__ = [
    "WORD_JOINER",
    "RichBlock",
    "chart_text",
    "code_span",
    "escape_inline",
    "literal_markdown",
    "literal_message",
    "literal_name",
    "plural",
    "safe_markdown",
    "visible",
]

#: The invisible character put inside patterns Streamlit would rewrite after parsing.
WORD_JOINER = "\u2060"

_NBSP = "&nbsp;"

# Every ASCII punctuation character escaped; the colon as a character reference (see above).
_ESCAPES = str.maketrans({c: "\\" + c for c in string.punctuation} | {":": "&#58;"})

# Streamlit's typographic replacements apply to these pairs between whitespace (or a text's ends).
_TYPOGRAPHY = re.compile(r"(?:(?<=[\s\ufeff])|^)(?:<->|->|<-|--|>=|<=|~=)(?=[\s\ufeff]|$)")
# ``:streamlit:`` and ``:material_icon:`` are replaced in parsed text.
_SHORTCODES = re.compile(r":(?=streamlit:|material_[A-Za-z0-9_]+:)")
# GFM's autolink literals are made in parsed text too: http(s)://..., www.x..., a@b.c.
_AUTOLINKS = re.compile(r"https?(?=://)|www(?=\.)|(?<=[-.\w+])@(?=[-\w])", re.I | re.A)
# In a code span (no escapes possible): what Streamlit would rewrite in the raw source (emoji
# shortcodes, ``:material/`` icons).
_CODE_SHORTCODES = re.compile(r":(?=material/|[A-Za-z0-9_+-]+:)")

_LEADING = re.compile(r"[ \t]+")
_SPACE_RUN = re.compile(r"  +")


def _guard(text: str) -> str:
    """Put a word joiner inside every pattern Streamlit rewrites after parsing."""
    if ":" in text:
        text = _SHORTCODES.sub(":" + WORD_JOINER, text)
    if "://" in text or "@" in text or "." in text:
        text = _AUTOLINKS.sub(_join_autolink, text)
    if any(c in text for c in "-<>~"):
        text = _TYPOGRAPHY.sub(lambda m: m.group()[0] + WORD_JOINER + m.group()[1:], text)
    return text


def _join_autolink(match: re.Match[str]) -> str:
    return match.group() + WORD_JOINER  # "http\u2060://", "www\u2060.", "@\u2060"


def _spaces(line: str, line_start: bool) -> str:
    """Leading spaces and tabs (at a line's start), and runs of spaces, as non-breaking spaces."""
    lead = _LEADING.match(line) if line_start else None
    if lead:
        indent = lead.group().replace("\t", "    ")
        line = _NBSP * len(indent) + line[lead.end() :]
    if "  " in line:
        line = _SPACE_RUN.sub(lambda m: " " + _NBSP * (len(m.group()) - 1), line)
    return line


def escape_inline(text: str, *, line_start: bool = True) -> str:
    """One line of text (no line break in it) as Markdown that shows it literally.

    The building block of :func:`literal_markdown`, for code that lays out its own lines.
    ``line_start``: the text starts a line, so its leading whitespace is made non-breaking
    (else a single leading space stays a plain space).
    """
    return _spaces(_guard(text).translate(_ESCAPES), line_start)


def literal_markdown(text: str) -> str:
    """``text`` as Markdown that ``st.markdown`` shows literally and that loads nothing.

    Line breaks are kept as hard breaks and blank lines are kept; a single newline at the
    very end adds no blank line. See the module's docstring for every step.
    """
    if not text:
        return ""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [escape_inline(line) or _NBSP for line in text.split("\n")]
    if text.endswith("\n"):
        lines[-1] = ""  # the break before it already ends the last line
    return "  \n".join(lines)


def code_span(text: str) -> str:
    """``text`` (a tool name, a call id) as an inline code span that nothing can break out of.

    The fence is one backtick longer than the longest run of backticks in the text, and the
    text is padded with a space on each side (CommonMark strips one from each side again),
    so text that starts or ends with a backtick is safe too. Line breaks become spaces (a
    code span cannot hold a blank line). Inside a code span nothing can be escaped, so
    Streamlit's rewrites of the raw source (``:material/icon:``, emoji shortcodes like
    ``:smile:``) are stopped with a word joiner after the colon. Meant for a paragraph,
    not for a table cell. (Text like ``$a$`` inside a span that also holds backticks can make
    Streamlit load its own KaTeX script; the span still shows as code, nothing else loads.)
    """
    text = text.replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    if ":" in text:
        text = _CODE_SHORTCODES.sub(":" + WORD_JOINER, text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    if not text.strip(" "):
        # Text of spaces only is shown as it is (CommonMark strips nothing from it).
        return f"{fence}{text or ' '}{fence}"
    return f"{fence} {text} {fence}"


def literal_name(text: str) -> str:
    """A name or an id (a dataset, a session, a reviewer, a tag, a tool, a run) as inline Markdown that shows it
    literally, every invisible or reordering character in it written as its escape (:func:`visible`): a session
    ``gnp\u202eexe.png`` never reads as ``gnpgnp.exe``, an id of zero-width spaces never as nothing. One line:
    a line break in a name is shown as ``\\n``."""
    return escape_inline(visible(text))


def literal_message(text: str) -> str:
    """A message that may quote what a person typed or a file held (an error naming a session, a file, a
    reviewer) as Markdown that shows it literally: :func:`literal_markdown` of it, its lines kept, every other
    invisible or reordering character written as its escape."""
    return literal_markdown(visible(text.replace("\r\n", "\n"), lines=True))


def chart_text(text: str) -> str:
    """A name or an id as a Plotly chart shows it literally (an axis label, a hover): Plotly reads a subset of
    HTML in its texts (``<b>``, ``<br>``, ``<a href>``), so ``&``, ``<`` and ``>`` are written as entities,
    which it shows as the characters; invisible and reordering characters are escaped (:func:`visible`)."""
    return html.escape(visible(text), quote=False)


def plural(n: int, word: str) -> str:
    """``1 chunk``, ``3 chunks``, ``1,200 chunks``."""
    return f"{n:,} {word}" + ("" if n == 1 else "s")


# -- a safe subset of Markdown, for what a user or an assistant wrote ---------------------------------------------


@dataclass(frozen=True, slots=True)
class RichBlock:
    """A piece of a message for the page: ``markdown`` (for ``st.markdown``, only the safe subset active in it) or
    ``code`` (a fenced block's text, to be shown verbatim with ``st.text``)."""

    kind: Literal["markdown", "code"]
    text: str


_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))??(?:[ \t]+#+)?[ \t]*$")
_ITEM = re.compile(r"([ \t]*)(?:([-*+])|(\d{1,9})[.)])[ \t]+(?=\S)")
_DELIMS = re.compile(r"\*+|_+|`+")
_MAX_DEPTH = 4


def _kind(c: str) -> str:
    """CommonMark's class of a character beside a delimiter: ``s`` (whitespace, or a text's edge), ``p``
    (punctuation or symbol), ``o`` (other)."""
    if not c or c.isspace():
        return "s"
    return "p" if unicodedata.category(c)[0] in "PS" else "o"


def _plain(text: str) -> str:
    return escape_inline(text, line_start=False) if text else ""


def _closers(text: str, runs: list[tuple[int, int]]) -> dict[tuple[str, int], list[int]]:
    """Where each kind of delimiter can close: (character, size) -> sorted start positions of the closing delimiter
    (a run of backticks closes a span opened by as many; ``*`` and ``_`` close after a non-space, ``_`` not
    inside a word)."""
    closers: dict[tuple[str, int], list[int]] = {}
    for pos, length in runs:
        char, before, after = text[pos], text[pos - 1 : pos], text[pos + length : pos + length + 1]
        if char == "`":
            closers.setdefault(("`", length), []).append(pos)
        elif _kind(before) != "s" and not (char == "_" and after.isalnum()):
            for size in (1, 2):
                if length == size or length >= 3:
                    closers.setdefault((char, size), []).append(pos + length - size)
    return closers


def _code_at(text: str, pos: int, length: int, found: list[int]) -> tuple[str, int] | None:
    """The code span opened at ``pos`` by ``length`` backticks, and where it ends; ``None``: it is text."""
    at = bisect.bisect_right(found, pos)
    if at == len(found):
        return None  # no closing run: the backticks are text
    end = found[at]
    code = text[pos + length : end]
    if len(code) >= 2 and code[0] == code[-1] == " " and code.strip(" "):
        code = code[1:-1]
    if "$" in code and "`" in code:  # Streamlit would load its LaTeX script for it: shown as text instead
        return None
    return code_span(code), end + length


def _emphasis_at(
    text: str, pos: int, length: int, found: list[int], strong: bool, depth: int
) -> tuple[str, int] | None:
    """The bold or italic text opened at ``pos`` by a run of ``length`` delimiters, and where it ends; ``None``: the
    delimiters are text."""
    char, size = text[pos], 2 if length >= 2 else 1
    inner_at, before = pos + size, text[pos - 1 : pos]
    if _kind(text[inner_at : inner_at + 1]) == "s" or (char == "_" and before.isalnum()):
        return None
    at = bisect.bisect_right(found, inner_at)
    if at == len(found):
        return None
    end = found[at]
    inner, after = text[inner_at:end], text[end + size : end + size + 1]
    # The delimiters written must open and close by CommonMark's flanking rules, else they would show as text.
    if (_kind(inner[0]) == "p" and _kind(before) == "o") or (_kind(inner[-1]) == "p" and _kind(after) == "o"):
        return None
    mark = "" if size == 2 and not strong else "*" * size
    return mark + _inline(inner, strong=strong, depth=depth + 1) + mark, end + size


def _inline(text: str, *, strong: bool = True, depth: int = 0) -> str:
    """One line of text as Markdown in which only bold, italic and code spans are active; everything else is escaped
    (:func:`escape_inline`) and shows as written. ``strong=False``: ``**x**`` shows as ``x`` (in a heading, which
    is bold already)."""
    runs = [(m.start(), m.end() - m.start()) for m in _DELIMS.finditer(text)]
    if not runs or depth > _MAX_DEPTH:
        return _plain(text)
    closers = _closers(text, runs)
    out: list[str] = []
    done = 0  # text[:done] is in out
    for pos, length in runs:
        if pos < done:
            continue
        char = text[pos]
        if char == "`":
            made = _code_at(text, pos, length, closers.get(("`", length), []))
        else:
            found = closers.get((char, 2 if length >= 2 else 1), [])
            made = _emphasis_at(text, pos, length, found, strong, depth)
        if made is not None:
            out += [_plain(text[done:pos]), made[0]]
            done = made[1]
    out.append(_plain(text[done:]))
    return "".join(out)


def _line(text: str) -> str:
    """A paragraph's line: its indentation as non-breaking spaces, then :func:`_inline`."""
    body = text.lstrip(" \t")
    lead = text[: len(text) - len(body)].replace("\t", "    ")
    return _NBSP * len(lead) + _inline(body)


def safe_markdown(text: str) -> tuple[RichBlock, ...]:
    """A message's text with a safe subset of Markdown shown as formatting, everything else shown as written.

    Shown as formatting: bold and italic (``**b**``, ``*i*``, ``__b__``, ``_i_``), inline code, fenced code blocks
    (a ``code`` block, shown verbatim), bullet and numbered lists (nested by indentation), headings (as a bold line),
    and every line break. Shown as written: everything else — links and images (their text and URL), raw HTML,
    block quotes, tables, Streamlit's directives (``:red[...]``, ``:material/x:``, emoji shortcodes) and LaTeX
    (``$x$``). Built so by construction: every character of the text is either escaped (:func:`escape_inline`),
    inside a code span (:func:`code_span`) or a code block, and the only markup written is ``*``, ``**``, list
    markers, indentation and hard breaks.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    blocks: list[RichBlock] = []
    chunk: list[str] = []  # the Markdown blocks since the last code block
    para: list[str] = []
    items: list[str] = []
    stack: list[tuple[int, int]] = []  # the open list items: (their indentation in the text, their content column)

    def end_para() -> None:
        if para:
            chunk.append("  \n".join(para))
            para.clear()

    def end_list() -> None:
        if items:
            chunk.append("\n".join(items))
            items.clear()
            stack.clear()

    def end_markdown() -> None:
        end_para()
        end_list()
        if chunk:
            blocks.append(RichBlock("markdown", "\n\n".join(chunk)))
            chunk.clear()

    n = 0
    while n < len(lines):
        line = lines[n]
        n += 1
        fence = _FENCE.match(line)
        if fence:
            mark = fence.group(1)
            closing = re.compile(rf" {{0,3}}{re.escape(mark[0])}{{{len(mark)},}}[ \t]*$")
            body: list[str] = []
            while n < len(lines) and not closing.match(lines[n]):
                body.append(lines[n])
                n += 1
            n += 1  # the closing fence (or the end of the text)
            end_markdown()
            blocks.append(RichBlock("code", "\n".join(body)))
            continue
        if not line.strip():
            end_para()
            end_list()
            continue
        heading = _HEADING.match(line)
        if heading and heading.group(2):
            end_para()
            end_list()
            chunk.append(f"**{_inline(heading.group(2), strong=False)}**")
            continue
        item = _ITEM.match(line)
        if item:
            end_para()
            indent = len(item.group(1).replace("\t", "    "))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            column = stack[-1][1] if stack else 0
            marker = "-" if item.group(2) else f"{int(item.group(3))}."
            items.append(" " * column + f"{marker} {_inline(line[item.end() :].rstrip())}")
            stack.append((indent, column + len(marker) + 1))
            continue
        if items and line[:1] in (" ", "\t"):  # a line that goes on with a list item
            items[-1] += "  \n" + " " * stack[-1][1] + _inline(line.strip())
            continue
        end_list()
        para.append(_line(line.rstrip()))
    end_markdown()
    return tuple(blocks)

"""A word diff of an answer against its reference, and its Markdown for the Review page.

Words are compared without their whitespace and carry it with them, so nothing is lost:
joining the ``equal`` and ``delete`` parts gives the answer back exactly, and joining the
``equal`` and ``insert`` parts gives the reference. Nothing is truncated.

The alignment is a longest common subsequence of words (rapidfuzz's bit-parallel Indel
opcodes: about 0.1 s for two 20,000-word texts, where ``difflib.SequenceMatcher`` takes
seconds), then cleaned up for reading as diff-match-patch's semantic clean-up does: a short
run of common words between two larger changes (a lone "the") is folded into the changes,
so the diff reads as whole phrases replaced rather than confetti.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, NamedTuple

from rapidfuzz.distance import Indel

from evalcore.views.text import escape_inline

__all__ = ["DiffPart", "Op", "WordDiff", "diff_markdown", "word_diff"]

Op = Literal["equal", "delete", "insert"]

_TOKEN = re.compile(r"^\s+|\S+\s*")


class DiffPart(NamedTuple):
    """Text both sides share (``equal``), only the answer has (``delete``) or only the reference has (``insert``)."""

    op: Op
    text: str


@dataclass(frozen=True)
class WordDiff:
    """The diff of an answer against a reference.

    ``similarity`` is 2 × (words in their longest common subsequence) / (words in the answer +
    words in the reference), from 0 (no word shared) to 1 (the same words in the same order;
    whitespace may differ); two empty texts are similar (1.0). It is measured before the
    clean-up for reading, so it does not depend on how the diff is shown. The word counts
    are those of the parts as shown: ``words_removed`` in ``delete`` parts, ``words_added``
    in ``insert`` parts, ``words_kept`` in ``equal`` parts.
    """

    parts: tuple[DiffPart, ...]
    similarity: float
    words_added: int
    words_removed: int
    words_kept: int

    @property
    def answer(self) -> str:
        """The answer, rebuilt from the parts."""
        return "".join(p.text for p in self.parts if p.op != "insert")

    @property
    def reference(self) -> str:
        """The reference, rebuilt from the parts."""
        return "".join(p.text for p in self.parts if p.op != "delete")

    @property
    def identical(self) -> bool:
        """Whether the two texts are the same, whitespace included."""
        return all(p.op == "equal" for p in self.parts)


def _tokens(text: str) -> list[str]:
    """Words with the whitespace after them (and any leading whitespace as a token of its own)."""
    return _TOKEN.findall(text)


def _word(token: str) -> str:
    """A token without its trailing whitespace (whitespace-only tokens stay as they are)."""
    word = token.rstrip()
    return word or token


# A hunk: (kind, i1, i2, j1, j2) with kind "equal" or "change"; a change deletes a[i1:i2], inserts b[j1:j2].
_Hunk = tuple[str, int, int, int, int]


def _hunks(a_keys: list[int], b_keys: list[int]) -> list[_Hunk]:
    """Alternating equal and change hunks from the longest common subsequence."""
    hunks: list[_Hunk] = []
    for op in Indel.opcodes(a_keys, b_keys):
        kind = "equal" if op.tag == "equal" else "change"
        i1, i2, j1, j2 = op.src_start, op.src_end, op.dest_start, op.dest_end
        if hunks and hunks[-1][0] == kind == "change":
            previous = hunks[-1]
            hunks[-1] = ("change", previous[1], i2, previous[3], j2)
        else:
            hunks.append((kind, i1, i2, j1, j2))
    return hunks


def _cleanup(hunks: list[_Hunk], a_len: list[int], b_len: list[int]) -> list[_Hunk]:
    """Fold every equal hunk no longer than the changes on both sides of it into them.

    Lengths are in characters (``a_len``/``b_len`` are prefix sums over the tokens).
    """

    def size(h: _Hunk) -> int:
        return max(a_len[h[2]] - a_len[h[1]], b_len[h[4]] - b_len[h[3]])

    out: list[_Hunk] = []
    for hunk in hunks:
        out.append(hunk)
        # While the last three are change, equal, change with a small equal: merge them.
        while len(out) >= 3 and out[-1][0] == "change" and out[-2][0] == "equal" and out[-3][0] == "change":
            before, middle, after = out[-3], out[-2], out[-1]
            if size(middle) > size(before) or size(middle) > size(after):
                break
            del out[-3:]
            out.append(("change", before[1], after[2], before[3], after[4]))
    return out


def _prefix_sums(tokens: list[str]) -> list[int]:
    sums = [0]
    total = 0
    for token in tokens:
        total += len(token)
        sums.append(total)
    return sums


def _common_space_suffix(x: str, y: str) -> int:
    """The length of the whitespace both ``x`` and ``y`` end with."""
    n = 0
    while n < min(len(x), len(y)) and x[-1 - n] == y[-1 - n] and x[-1 - n].isspace():
        n += 1
    return n


def _count_words(text: str) -> int:
    return len(text.split())


def word_diff(answer: str, reference: str) -> WordDiff:
    """The word diff of ``answer`` against ``reference`` (see the module's docstring)."""
    a, b = _tokens(answer), _tokens(reference)
    ids: dict[str, int] = {}
    a_keys = [ids.setdefault(_word(t), len(ids)) for t in a]
    b_keys = [ids.setdefault(_word(t), len(ids)) for t in b]
    similarity = Indel.normalized_similarity(a_keys, b_keys) if a_keys or b_keys else 1.0
    hunks = _cleanup(_hunks(a_keys, b_keys), _prefix_sums(a), _prefix_sums(b))
    ops: list[Op] = []
    texts: list[list[str]] = []  # the pieces of each part, joined at the end (no quadratic concatenation)

    def add(op: Op, text: str) -> None:
        if not text:
            return
        if ops and ops[-1] == op:
            texts[-1].append(text)
        else:
            ops.append(op)
            texts.append([text])

    for kind, i1, i2, j1, j2 in hunks:
        if kind == "change":
            deleted, inserted = "".join(a[i1:i2]), "".join(b[j1:j2])
            # Whitespace both sides end with is shared (a changed word before the same line break).
            common = _common_space_suffix(deleted, inserted)
            add("delete", deleted[: len(deleted) - common])
            add("insert", inserted[: len(inserted) - common])
            add("equal", inserted[len(inserted) - common :] if common else "")
            continue
        if a[i1:i2] == b[j1:j2]:
            add("equal", "".join(a[i1:i2]))
            continue
        for x, y in zip(a[i1:i2], b[j1:j2], strict=True):
            if x == y:
                add("equal", x)
                continue
            # Same word, different whitespace after it: the word and the common whitespace are
            # equal, the rest of each side's whitespace is deleted / inserted.
            word = _word(x)  # (whitespace-only tokens match only when identical: never here)
            x_space, y_space = x[len(word) :], y[len(word) :]
            common = 0
            while common < min(len(x_space), len(y_space)) and x_space[common] == y_space[common]:
                common += 1
            add("equal", word + x_space[:common])
            add("delete", x_space[common:])
            add("insert", y_space[common:])
    parts = tuple(DiffPart(op, "".join(pieces)) for op, pieces in zip(ops, texts, strict=True))
    return WordDiff(
        parts,
        similarity,
        words_added=sum(_count_words(p.text) for p in parts if p.op == "insert"),
        words_removed=sum(_count_words(p.text) for p in parts if p.op == "delete"),
        words_kept=sum(_count_words(p.text) for p in parts if p.op == "equal"),
    )


# -- Markdown -------------------------------------------------------------------------------

#: At most this many characters of text go into one coloured span: Streamlit's directive
#: parser gives up on labels over 999 characters of source, and one character can take six
#: (``&nbsp;``) once escaped.
_CHUNK = 120
_CHUNK_TOKEN = re.compile(r"\S+\s*|\s+")


def _chunks(text: str) -> list[str]:
    """``text`` cut into pieces of at most ``_CHUNK`` characters, between words where it can."""
    pieces: list[str] = []
    current = ""
    for token in _CHUNK_TOKEN.findall(text):
        while len(token) > _CHUNK:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(token[:_CHUNK])
            token = token[_CHUNK:]
        if len(current) + len(token) > _CHUNK:
            pieces.append(current)
            current = ""
        current += token
    if current:
        pieces.append(current)
    return pieces


# What Markdown takes for whitespace next to ``~~`` (Python's whitespace and the BOM, as JavaScript's ``\s``).
_SPACES = "".join(c for c in map(chr, range(0x3001)) if c.isspace()) + "\ufeff"


def _changed(line: str, op: Op, line_start: bool) -> str:
    """One line of a change as coloured spans: the words inside, the whitespace around them outside."""
    colour = "red" if op == "delete" else "green"
    out: list[str] = []
    for n, piece in enumerate(_chunks(line)):
        core = piece.strip(_SPACES)
        if not core:
            out.append(escape_inline(piece, line_start=line_start and not n))
            continue
        lead = piece[: piece.index(core)]
        if lead:
            out.append(escape_inline(lead, line_start=line_start and not n))
        label = escape_inline(core)
        if op == "delete":
            label = f"~~{label}~~"  # core starts and ends with no whitespace: the ~~ pair always strikes
        out.append(f":{colour}-background[{label}]")
        trail = piece[len(lead) + len(core) :]
        if trail:
            out.append(escape_inline(trail, line_start=False))
    return "".join(out)


def diff_markdown(diff: WordDiff) -> str:
    """The diff as Markdown for ``st.markdown``: deleted words struck through on red, inserted ones on green.

    Uses Streamlit's ``:red-background[...]`` and ``:green-background[...]`` directives. All text
    is escaped (see :mod:`evalcore.views.text`), so nothing in it can end a span early, start
    markup or load anything. The layout shown is the reference's: its line breaks are hard
    breaks kept outside the spans (a span never holds one), a deletion's line breaks show
    as spaces and whitespace-only deletions are left out. Long changes are cut into
    several spans. A deletion directly followed by an insertion is set apart by a space.
    """
    lines: list[list[str]] = [[]]
    previous: Op | None = None
    for op, text in diff.parts:
        if op == "delete" and text.isspace():
            continue
        if op == "insert" and previous == "delete" and lines[-1] and not text[:1].isspace():
            lines[-1].append(" ")  # a replacement: keep the struck words apart from the new ones
        previous = op
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if op == "delete":
            text = text.replace("\n", " ")  # deleted line breaks are not laid out
        for n, line in enumerate(text.split("\n")):
            if n:
                lines.append([])
            if not line:
                continue
            start = not lines[-1]
            if op == "equal" or line.isspace():
                lines[-1].append(escape_inline(line, line_start=start))
            else:
                lines[-1].append(_changed(line, op, start))
    rendered = ["".join(line) or "&nbsp;" for line in lines]
    if not lines[-1]:
        rendered[-1] = ""
    if rendered == [""]:
        return ""
    return "  \n".join(rendered)

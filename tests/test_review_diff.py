"""Word diff of an answer against its reference, and its Markdown."""

from __future__ import annotations

import random
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalcore.views.review import WORD_JOINER, DiffPart, diff_markdown, word_diff


def _parts(answer: str, reference: str) -> list[tuple[str, str]]:
    return [(p.op, p.text) for p in word_diff(answer, reference).parts]


def test_a_word_replaced() -> None:
    diff = word_diff("The cat sat on the mat.", "The dog sat on the mat.")
    assert [(p.op, p.text) for p in diff.parts] == [
        ("equal", "The "),
        ("delete", "cat"),
        ("insert", "dog"),
        ("equal", " sat on the mat."),
    ]
    assert (diff.words_removed, diff.words_added, diff.words_kept) == (1, 1, 5)
    assert diff.similarity == pytest.approx(10 / 12)
    assert not diff.identical
    assert isinstance(diff.parts[0], DiffPart) and diff.parts[0].op == "equal"


def test_identical_and_empty_texts() -> None:
    same = word_diff("a b  c\n", "a b  c\n")
    assert same.identical and same.similarity == 1.0 and same.parts == (DiffPart("equal", "a b  c\n"),)
    empty = word_diff("", "")
    assert empty.parts == () and empty.similarity == 1.0 and empty.identical
    assert _parts("", "new text") == [("insert", "new text")]
    assert _parts("old text", "") == [("delete", "old text")]
    assert word_diff("", "x").similarity == 0.0


def test_whitespace_differences_keep_both_texts_exact() -> None:
    assert _parts("a  b", "a b") == [("equal", "a "), ("delete", " "), ("equal", "b")]
    assert _parts("a b", "a\nb") == [("equal", "a"), ("delete", " "), ("insert", "\n"), ("equal", "b")]
    assert _parts("  x", " x") == [("delete", " "), ("equal", " x")]
    assert word_diff("a b", "a\nb").similarity == 1.0


def test_a_changed_word_before_a_line_break_keeps_the_break_equal() -> None:
    assert _parts("one\ntwo", "one\nthree") == [("equal", "one\n"), ("delete", "two"), ("insert", "three")]
    assert _parts("x y\nz", "x q\nz") == [("equal", "x "), ("delete", "y"), ("insert", "q"), ("equal", "\nz")]


def test_a_lone_common_word_between_changes_is_folded_into_them() -> None:
    # "the" is common, but keeping it would cut one rewrite in two.
    parts = _parts("I really like the red apples", "We never wanted the blue pears")
    assert parts == [
        ("delete", "I really like the red apples"),
        ("insert", "We never wanted the blue pears"),
    ]
    # A long common run between small changes is kept.
    assert _parts("a quick brown fox jumps b", "c quick brown fox jumps d") == [
        ("delete", "a"),
        ("insert", "c"),
        ("equal", " quick brown fox jumps "),
        ("delete", "b"),
        ("insert", "d"),
    ]


def test_counts_and_similarity() -> None:
    diff = word_diff("one two three four", "one two five six seven")
    assert (diff.words_kept, diff.words_removed, diff.words_added) == (2, 2, 3)
    assert diff.similarity == pytest.approx(2 * 2 / 9)


WORDS = st.lists(
    st.sampled_from(["a", "b", "the", "cat", "é", "x.", "\n", " ", "  ", "\t", "\r\n", "[y]", "**", "->"]),
    max_size=40,
).map(lambda ws: "".join(w if w.isspace() else w + " " for w in ws).rstrip(" ") if ws else "")


@settings(max_examples=500, deadline=None)
@given(WORDS, WORDS)
def test_the_parts_give_both_texts_back(answer: str, reference: str) -> None:
    diff = word_diff(answer, reference)
    assert diff.answer == answer
    assert diff.reference == reference
    assert "".join(p.text for p in diff.parts if p.op != "insert") == answer
    assert "".join(p.text for p in diff.parts if p.op != "delete") == reference
    assert all(p.text for p in diff.parts)
    assert all(a.op != b.op for a, b in zip(diff.parts, diff.parts[1:], strict=False))
    assert 0.0 <= diff.similarity <= 1.0
    assert diff.identical == (answer == reference)


def _zipf_text(rng: random.Random, n: int) -> list[str]:
    vocab = [f"w{i}" for i in range(5000)]
    return rng.choices(vocab, [1 / (i + 1) for i in range(5000)], k=n)


def test_20000_words_diff_fast_without_truncation() -> None:
    rng = random.Random(3)
    words = _zipf_text(rng, 20_000)
    edited = list(words)
    for _ in range(1000):
        i = rng.randrange(len(edited))
        edited[i] = "CHANGED"
    answer, reference = " ".join(words), " ".join(edited)
    start = time.perf_counter()
    diff = word_diff(answer, reference)
    elapsed = time.perf_counter() - start
    assert diff.answer == answer and diff.reference == reference
    assert diff.words_added >= 900 and diff.words_added == diff.words_removed
    # About 0.1 s on the development machine (difflib.SequenceMatcher: seconds).
    assert elapsed < 3
    markdown = diff_markdown(diff)
    assert markdown.count(":green-background[") >= 500


# -- Markdown ----------------------------------------------------------------------------------


def test_markdown_of_a_replacement() -> None:
    markdown = diff_markdown(word_diff("The cat sat.", "The dog sat."))
    assert markdown == "The :red-background[~~cat~~] :green-background[dog] sat\\."


def test_markdown_escapes_text_inside_the_spans() -> None:
    markdown = diff_markdown(word_diff("see [x](http://a.b/c.png)", "see ![x](javascript:alert(1)) $y$"))
    assert markdown == (
        "see :red-background[~~\\[x\\]\\(http" + WORD_JOINER + "&#58;\\/\\/a\\.b\\/c\\.png\\)~~] "
        ":green-background[\\!\\[x\\]\\(javascript&#58;alert\\(1\\)\\) \\$y\\$]"
    )
    # A "]" in the text cannot close a span early.
    assert diff_markdown(word_diff("a", "b] :red[x]")) == (
        ":red-background[~~a~~] :green-background[b\\] &#58;red\\[x\\]]"
    )


def test_line_breaks_never_fall_inside_a_span() -> None:
    markdown = diff_markdown(word_diff("start end", "start one\ntwo\n\nthree end"))
    assert markdown == (
        "start :green-background[one]  \n:green-background[two]  \n&nbsp;  \n:green-background[three] end"
    )
    # A deletion's line breaks are shown as spaces: the layout is the reference's.
    assert diff_markdown(word_diff("x\nfoo\nbar\ny", "x\ny")) == "x  \n:red-background[~~foo bar~~] y"


def test_whitespace_only_changes_show_the_reference_layout() -> None:
    assert diff_markdown(word_diff("a  b", "a b")) == "a b"
    assert diff_markdown(word_diff("a b", "a\nb")) == "a  \nb"
    assert diff_markdown(word_diff("", "")) == ""


def test_long_changes_are_cut_into_spans_streamlit_accepts() -> None:
    answer = "keep " + "x" * 1000 + " " + " ".join(["word"] * 300) + " keep"
    markdown = diff_markdown(word_diff(answer, "keep keep"))
    labels = re.findall(r":red-background\[(.*?)\](?=:|\s|$)", markdown)
    assert len(labels) > 10
    # Streamlit's directive parser gives up on labels over 999 characters.
    assert all(len(label) < 999 and label.startswith("~~") and label.endswith("~~") for label in labels)
    shown = "".join(label[2:-2] for label in labels).replace(" ", "")
    assert shown == ("x" * 1000 + "word" * 300)


SPAN = re.compile(r":(red|green)-background\[((?:\\.|&nbsp;|&#58;|[^\\\]])*)\]")


@settings(max_examples=300, deadline=None)
@given(WORDS, WORDS)
def test_markdown_spans_hold_no_line_break_and_no_raw_markup(answer: str, reference: str) -> None:
    markdown = diff_markdown(word_diff(answer, reference))
    for _colour, label in SPAN.findall(markdown):
        assert "\n" not in label
    # Outside our spans and strikes, every ASCII punctuation character is escaped.
    rest = SPAN.sub(lambda m: m.group(2).removeprefix("~~").removesuffix("~~"), markdown)
    rest = re.sub(r"\\.", "", rest.replace("&nbsp;", "").replace("&#58;", ""))
    assert not re.search(r"[!-/:-@\[-`{-~]", rest)


def test_streamlit_receives_the_diff_markdown_unchanged() -> None:
    from streamlit.testing.v1 import AppTest

    markdown = diff_markdown(word_diff("The <b>cat</b> sat.\nOK", "The ![dog](http://x/y.png) sat.\n\nOK $1"))
    script = f"import streamlit as st\nst.markdown({markdown!r})\n"
    app = AppTest.from_string(script, default_timeout=30).run()
    assert not app.exception and app.markdown[0].value == markdown

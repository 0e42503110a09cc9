"""What a conversion keeps and drops, never silently: images in content blocks (kept in the canonical model,
written by the formats that carry them, each in its own terms, counted when dropped, laid out for the Review
page) and ground truth a format has no place for."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from formats_util import load_output, write_jsonl

from evalcore import convert_file, read_path, validate_file
from evalcore.convert import ConvertReport
from evalcore.formats import formats
from evalcore.formats._blocks import image_url_of, media_of
from evalcore.schema import Message, Session
from evalcore.schema.session import TRUTH_FIELDS
from evalcore.views.review.transcript import IMAGE_BYTES, attachments, transcript

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"  # 1x1 pixel
DATA_URL = f"data:image/png;base64,{PNG}"
REMOTE = "https://images.example/receipt.png"


def _anthropic_request() -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 512,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Is this receipt paid?"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                    {"type": "image", "source": {"type": "url", "url": REMOTE}},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Yes, it shows PAID."}]},
        ],
    }


def _convert(tmp_path: Path, source: Path, to: str) -> tuple[Any, list[Any]]:
    target = tmp_path / f"out.{to}.jsonl"
    report = convert_file(source, target, to=to)
    assert report.errors == 0 and report.sessions == 1, [str(p) for p in report.problems]
    return report, load_output(target)


def test_an_anthropic_image_is_written_by_every_format_that_carries_images(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "a.jsonl", [_anthropic_request()])
    report, (row,) = _convert(tmp_path, source, "openai")
    assert report.warnings == 0
    assert row["messages"][0]["content"] == [
        {"type": "text", "text": "Is this receipt paid?"},
        {"type": "image_url", "image_url": {"url": DATA_URL}},
        {"type": "image_url", "image_url": {"url": REMOTE}},
    ]
    report, (trace,) = _convert(tmp_path, source, "open-responses")
    items = trace["items"] if isinstance(trace, dict) else trace
    assert items[0]["content"] == [
        {"type": "input_text", "text": "Is this receipt paid?"},
        {"type": "input_image", "image_url": DATA_URL},
        {"type": "input_image", "image_url": REMOTE},
    ]
    # And back: the OpenAI row written as Anthropic gives the blocks it came from.
    openai_file = tmp_path / "out.openai.jsonl"
    back = tmp_path / "back.jsonl"
    assert convert_file(openai_file, back, to="anthropic").errors == 0
    (request,) = load_output(back)
    assert request["messages"][0]["content"] == _anthropic_request()["messages"][0]["content"]


def test_a_conversion_that_cannot_carry_an_image_counts_it(tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "a.jsonl", [_anthropic_request()])
    seen: list[str] = []
    for to in ("ragas", "gaussia"):
        target = tmp_path / f"out.{to}.jsonl"
        report = convert_file(source, target, to=to, on_problem=lambda p: seen.append(str(p)))
        assert (report.sessions, report.errors, report.warnings) == (1, 0, 1)
        assert str(report.problems[0]) == (
            f"{source}:1: warning: messages[0].content: 2 image blocks not carried by {to}: dropped"
        )
        assert "Is this receipt paid?" in target.read_text(encoding="utf-8")  # the text is written
    assert len(seen) == 2
    # Formats that carry them say nothing.
    for to in ("evalcore", "anthropic", "databricks"):
        assert convert_file(source, tmp_path / f"o.{to}.jsonl", to=to).warnings == 0


def test_image_blocks_of_every_format_have_one_url() -> None:
    assert image_url_of({"type": "image_url", "image_url": {"url": REMOTE}}) == REMOTE
    assert image_url_of({"type": "image_url", "image_url": REMOTE}) == REMOTE
    assert image_url_of({"type": "input_image", "image_url": DATA_URL}) == DATA_URL
    assert image_url_of({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}) == (
        DATA_URL
    )
    assert image_url_of({"type": "image", "source": {"type": "file", "file_id": "f"}}) is None
    assert image_url_of({"type": "text", "text": "x"}) is None
    assert media_of(DATA_URL, IMAGE_BYTES) == ("image/png", base64.b64decode(PNG))
    assert media_of(REMOTE, IMAGE_BYTES) is None
    assert media_of("data:image/png;base64,@@not base64@@", IMAGE_BYTES) is None
    assert media_of(DATA_URL, 10) is None  # larger than the limit: named, not decoded


def test_the_review_layout_shows_embedded_images_and_names_remote_ones() -> None:
    content = _anthropic_request()["messages"][0]["content"] + [{"type": "file", "file": {"file_id": "f-1"}}]
    session = Session(
        messages=[
            Message(role="user", content=content),
            Message(role="assistant", content=[{"type": "image_url", "image_url": {"url": DATA_URL}}]),
        ]
    )
    images, others = attachments(session.messages[0])
    assert [(i.url, i.media_type, i.data) for i in images] == [
        (DATA_URL, "image/png", base64.b64decode(PNG)),
        (REMOTE, None, None),
    ]
    assert others == ({"type": "file", "file": {"file_id": "f-1"}},)
    (turn,) = transcript(session).turns
    assert turn.user_images == images and turn.user_blocks == others and turn.query == "Is this receipt paid?"
    (answer,) = turn.items
    assert answer.kind == "assistant" and [i.data for i in answer.images] == [base64.b64decode(PNG)]
    assert json.dumps(session.model_dump(mode="json"))  # kept in the canonical model as given


SAMPLE = Path(__file__).parent.parent / "sample_data" / "evalcore.jsonl"


@pytest.mark.parametrize("fmt", [f.name for f in formats() if f.writable], ids=str)
def test_ground_truth_a_format_has_no_place_for_is_named_and_nothing_else(tmp_path: Path, fmt: str) -> None:
    """Every ground-truth field the sample has and the format does not bring back is named in a warning on its
    record; every field named is indeed gone (no false alarm)."""
    _losses_are_named(SAMPLE, tmp_path, fmt)


@pytest.mark.parametrize("fmt", [f.name for f in formats() if f.writable], ids=str)
def test_a_reference_beside_expected_facts_is_kept_or_named(tmp_path: Path, fmt: str) -> None:
    """A session may hold a reference answer and expected facts both; a format that holds only one of them
    (databricks: a row with both is refused by Databricks) writes the facts and names the reference dropped."""
    first = json.loads(SAMPLE.read_text().splitlines()[0])
    assert first["expected_facts"] and "reference" not in first
    both = {**first, "reference": "You are rebooked free on the 18:40 flight, with a $15 meal voucher."}
    source = write_jsonl(tmp_path / "both.jsonl", [both])
    assert validate_file(source).errors == 0
    report = _losses_are_named(source, tmp_path, fmt)
    if fmt == "databricks":
        (row,) = load_output(tmp_path / f"o.{fmt}.jsonl")
        assert row["expected_facts"] == first["expected_facts"] and "expected_response" not in row
        assert "reference" in report.problems[0].message.split(" not carried")[0].split(", ")


def _losses_are_named(source: Path, tmp_path: Path, fmt: str) -> ConvertReport:
    out, back = tmp_path / f"o.{fmt}.jsonl", tmp_path / "back.jsonl"
    report = convert_file(source, out, to=fmt)
    assert report.errors == 0
    assert convert_file(out, back, to="evalcore").errors == 0
    with read_path(source) as results:
        before = [r.session for r in results]
    with read_path(back) as results:
        after = [r.session for r in results]
    named: dict[int, set[str]] = {}
    for p in report.problems:
        assert p.level == "warning" and p.message.endswith(f" not carried by {fmt}: dropped"), str(p)
        named[p.line] = set(p.message.removesuffix(f" not carried by {fmt}: dropped").split(", "))
    for line, (a, b) in enumerate(zip(before, after, strict=True), 1):
        had = {f for f in (*TRUTH_FIELDS, "turn_truth") if getattr(a, f)}
        gone = {f for f in had if not getattr(b, f)}
        if fmt == "gaussia":  # the reference goes into the last turn's ground truth
            gone.discard("reference")
        assert named.get(line, set()) == gone, (line, named.get(line), gone)
    return report

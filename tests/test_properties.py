"""Property-based tests: random sessions survive every writable format; garbage never crashes a reader."""

from __future__ import annotations

import io
import json
import os
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.formats import formats, get_format, read
from evalcore.schema import ContextChunk, Message, Session, ToolCall, TurnTruth

WRITABLE = [f.name for f in formats() if f.writable]
SETTINGS = settings(
    max_examples=int(os.environ.get("EVALCORE_HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

text = st.text(max_size=30)
names = st.text(alphabet="abcdefghij_", min_size=1, max_size=8)
scalars = (
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False, allow_infinity=False) | text
)
json_values = st.recursive(
    scalars, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(names, kids, max_size=3), max_leaves=8
)
args = st.dictionaries(names, json_values, max_size=4)


@st.composite
def tool_calls(draw: st.DrawFn, with_id: bool) -> ToolCall:
    call_id = draw(st.text(alphabet="abc123_", min_size=1, max_size=6)) if with_id else None
    return ToolCall(id=call_id, name=draw(names), args=draw(args))


@st.composite
def turns(draw: st.DrawFn, with_ids: bool) -> list[Message]:
    """One user turn: a question, maybe tool rounds with their results, then maybe an answer."""
    out = [Message(role="user", content=draw(text))]
    for _ in range(draw(st.integers(0, 2))):
        calls = draw(st.lists(tool_calls(with_ids), min_size=1, max_size=3, unique_by=lambda c: c.id))
        out.append(Message(role="assistant", content=draw(st.none() | text), tool_calls=calls))
        for call in calls:
            out.append(Message(role="tool", content=draw(text), tool_call_id=call.id, name=call.name))
    if draw(st.booleans()):
        out.append(Message(role="assistant", content=draw(text)))
    return out


@st.composite
def sessions(draw: st.DrawFn) -> Session:
    with_ids = draw(st.booleans())
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(Message(role="system", content=draw(text)))
    n_turns = draw(st.integers(1, 3))
    for _ in range(n_turns):
        messages += draw(turns(with_ids))
    qa_ids = draw(st.lists(names, min_size=n_turns, max_size=n_turns, unique=True))
    truths = [
        TurnTruth(
            qa_id=qa,
            ground_truth=draw(st.none() | text),
            observation=draw(st.none() | text),
            weight=draw(st.none() | st.floats(0, 1)),
        )
        for qa in qa_ids
    ]
    chunks = st.lists(st.builds(ContextChunk, content=st.none() | text, doc_uri=names), max_size=2)
    facts_or_ref = draw(st.sampled_from(["facts", "reference", "neither"]))
    return Session(
        session_id=draw(st.none() | names),
        assistant_id=draw(st.none() | names),
        context=draw(st.none() | text),
        messages=messages,
        reference=draw(text) if facts_or_ref == "reference" else None,
        expected_facts=draw(st.lists(text, max_size=3)) if facts_or_ref == "facts" else None,
        reference_tool_calls=draw(st.none() | st.lists(tool_calls(False), max_size=3)),
        rubrics=draw(st.none() | st.dictionaries(names, text, max_size=2)),
        reference_topics=draw(st.none() | st.lists(text, max_size=2)),
        guidelines=draw(st.none() | st.lists(text, max_size=2)),
        retrieved_context=draw(st.none() | chunks),
        expected_retrieved_context=draw(st.none() | chunks),
        turns=truths if draw(st.booleans()) else [],
        tags=draw(st.lists(names, max_size=2, unique=True)),
    )


def _write(fmt: str, session: Session) -> list[Any]:
    f = get_format(fmt)
    return [orjson.loads(f.dumps(v)) for v in f.write(session)]


def _read(fmt: str, values: list[Any]) -> list[Session]:
    stream = io.StringIO("".join(json.dumps(v) + "\n" for v in values))
    results = list(read(stream, fmt, validate=False))
    assert all(r.session is not None for r in results), [str(p) for r in results for p in r.problems]
    return [r.session for r in results if r.session is not None]


@SETTINGS
@given(sessions())
def test_evalcore_format_is_lossless(session: Session) -> None:
    (back,) = _read("evalcore", _write("evalcore", session))
    back.provenance = None
    assert back == session


@SETTINGS
@given(sessions(), st.sampled_from(WRITABLE))
def test_every_writable_format_gives_back_what_it_wrote(session: Session, fmt: str) -> None:
    """X -> evalcore -> X is the identity on anything X holds."""
    written = _write(fmt, session)
    again = [v for s in _read(fmt, written) for v in _write(fmt, s)]
    assert again == written


def _conversation(session: Session, *, system: bool) -> list[tuple[str, str, list[tuple[str, Any]]]]:
    return [
        (m.role, m.text, [(c.name, c.args) for c in m.calls]) for m in session.messages if system or m.role != "system"
    ]


@SETTINGS
@given(sessions(), st.sampled_from(["openai", "open-responses", "ragas", "databricks"]))
def test_conversions_keep_the_conversation(session: Session, fmt: str) -> None:
    (back,) = _read(fmt, _write(fmt, session))
    keeps_system = fmt != "ragas"
    got = _conversation(back, system=keeps_system)
    if fmt in ("openai", "open-responses"):  # the session's context travels as a first system message
        session = session.model_copy(update={"messages": session.messages_with_context()})
    want = _conversation(session, system=keeps_system)
    assert got == want


@SETTINGS
@given(sessions())
def test_gaussia_keeps_turns_and_their_ground_truth(session: Session) -> None:
    (back,) = _read("gaussia", _write("gaussia", session))
    before, after = session.split_turns(), back.split_turns()
    assert [t.query for t in after] == [t.query for t in before]
    assert [t.answer or "" for t in after] == [t.answer or "" for t in before]
    assert [[(c.name, c.args) for c in t.tool_calls] for t in after] == [
        [(c.name, c.args) for c in t.tool_calls] for t in before
    ]
    for old, new in zip(before, after, strict=True):
        assert new.truth.observation == old.truth.observation
        assert new.truth.weight == old.truth.weight
        if old.truth.qa_id is not None:
            assert new.truth.qa_id == old.truth.qa_id


@SETTINGS
@given(st.binary(max_size=400), st.sampled_from([None, *[f.name for f in formats()]]))
def test_random_bytes_never_crash_a_reader(data: bytes, fmt: str | None) -> None:
    stream = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="surrogateescape", newline="")
    for result in read(stream, fmt):
        assert result.session is not None or result.problems
        for problem in result.problems:
            assert "unreadable record" not in problem.message, problem  # a reader bug, not bad input


@SETTINGS
@given(sessions(), st.sampled_from(WRITABLE), st.data())
def test_truncated_json_is_reported_per_record(session: Session, fmt: str, data: st.DataObject) -> None:
    lines = [get_format(fmt).dumps(v) for v in get_format(fmt).write(session)]
    good = "\n".join(lines) + "\n"
    cut = data.draw(st.integers(1, max(1, len(lines[0]) - 1)))
    text = lines[0][:cut] + "\n" + good
    results = list(read(io.StringIO(text), fmt))
    assert results[0].session is None and results[0].line == 1
    assert any(r.ok for r in results[1:]) or any(r.session is not None for r in results[1:])


@SETTINGS
@given(st.lists(json_values, max_size=4), st.sampled_from([f.name for f in formats()]))
def test_random_json_records_get_an_error_each_not_a_crash(values: list[Any], fmt: str) -> None:
    stream = io.StringIO("".join(json.dumps(v) + "\n" for v in values))
    for result in read(stream, fmt):
        for problem in result.problems:
            assert "unreadable record" not in problem.message, problem

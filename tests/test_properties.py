"""Property-based tests: random sessions survive every writable format; garbage never crashes a reader."""

from __future__ import annotations

import io
import json
import os
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcore.formats import detect_format, formats, get_format, read
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
        turn_truth=truths if draw(st.booleans()) else [],
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
@given(sessions(), st.sampled_from(["openai", "open-responses", "ragas", "databricks", "anthropic"]))
def test_conversions_keep_the_conversation(session: Session, fmt: str) -> None:
    (back,) = _read(fmt, _write(fmt, session))
    keeps_system = fmt != "ragas"
    got = _conversation(back, system=keeps_system)
    if fmt in ("openai", "open-responses", "anthropic"):  # the context travels as a first system message
        session = session.model_copy(update={"messages": session.messages_with_context()})
    want = _conversation(session, system=keeps_system)
    assert got == want


# -- Anthropic Messages API records, generated in Anthropic's own terms ----------------------------

anthropic_ids = st.text(alphabet="abcdef0123456789", min_size=1, max_size=6).map(lambda s: f"toolu_{s}")
cache = st.sampled_from([{}, {"cache_control": {"type": "ephemeral"}}])
text_blocks = st.builds(lambda t, c: {"type": "text", "text": t, **c}, text, cache)
image_blocks = st.builds(
    lambda url, data, base64: {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": data}
        if base64
        else {"type": "url", "url": url},
    },
    names.map(lambda n: f"https://img.test/{n}.png"),
    names,
    st.booleans(),
)
user_blocks = st.lists(text_blocks | image_blocks, max_size=3)
thinking_blocks = st.builds(lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, text, names) | st.builds(
    lambda d: {"type": "redacted_thinking", "data": d}, names
)


@st.composite
def anthropic_rounds(draw: st.DrawFn) -> list[dict[str, Any]]:
    """One assistant message with tool_use blocks (in any order among its text and thinking), then
    the user message(s) with their results, mixed with other blocks in any order."""
    call_ids = draw(st.lists(anthropic_ids, min_size=1, max_size=3, unique=True))
    uses = [{"type": "tool_use", "id": i, "name": draw(names), "input": draw(args)} for i in call_ids]
    others = draw(st.lists(thinking_blocks, max_size=2)) + draw(st.lists(text_blocks, max_size=2))
    assistant = {"role": "assistant", "content": draw(st.permutations(uses + others))}
    results = []
    for call_id in call_ids:
        result: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
        content = draw(st.none() | text | st.lists(text_blocks | image_blocks, max_size=2))
        if content is not None:
            result["content"] = content
        if draw(st.booleans()):
            result["is_error"] = draw(st.booleans())
        results.append(result)
    if len(results) > 1 and draw(st.booleans()):  # results split over two user messages
        return [assistant, {"role": "user", "content": results[:1]}, {"role": "user", "content": results[1:]}]
    blocks = draw(st.permutations(results + draw(user_blocks)))
    return [assistant, {"role": "user", "content": blocks}]


@st.composite
def anthropic_records(draw: st.DrawFn) -> Any:
    """A request, a transcript (whose assistant turns may be whole responses) or a response."""
    messages: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 3))):
        messages.append({"role": "user", "content": draw(text | st.lists(text_blocks | image_blocks, max_size=3))})
        for _ in range(draw(st.integers(0, 2))):
            messages += draw(anthropic_rounds())
        if draw(st.booleans()):
            content = draw(text | st.lists(text_blocks | thinking_blocks, min_size=1, max_size=3))
            messages.append({"role": "assistant", "content": content})
    response = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "stop_reason": "end_turn",
                "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 5},
                "content": draw(st.lists(text_blocks | thinking_blocks, max_size=2))}  # fmt: skip
    shape = draw(st.sampled_from(["request", "transcript", "response"]))
    if shape == "response":
        return response
    if shape == "transcript":
        return [*messages, response] if draw(st.booleans()) else messages
    request: dict[str, Any] = {"model": "claude-x", "max_tokens": draw(st.integers(1, 4096)), "messages": messages}
    system = draw(st.none() | text | st.lists(text_blocks, min_size=1, max_size=2))
    if system is not None:
        request["system"] = system
    if draw(st.booleans()):
        request["tools"] = [{"name": "f", "input_schema": {"type": "object"}}]
    return request


@SETTINGS
@given(anthropic_records())
def test_anthropic_records_come_back_as_they_were(record: Any) -> None:
    """anthropic -> evalcore -> anthropic is the identity, and every result is linked to its call."""
    (session,) = _read("anthropic", [record])
    assert _write("anthropic", session) == [record]
    (again,) = _read("evalcore", _write("evalcore", session))  # through the evalcore format too
    assert _write("anthropic", again) == [record]
    calls: dict[str | None, str] = {}  # the calls so far, by id (a later round may reuse an id)
    for message in session.messages:
        calls.update((c.id, c.name) for c in message.calls)
        if message.role == "tool":
            assert message.tool_call_id in calls and message.name == calls[message.tool_call_id]


@SETTINGS
@given(anthropic_records())
def test_anthropic_records_with_anthropic_evidence_are_detected(record: Any) -> None:
    """Whatever says Anthropic (system beside messages, tools, a response, a block of its own) is detected."""
    messages = record if isinstance(record, list) else record.get("messages", [])
    evidence = (
        isinstance(record, dict) and ("system" in record or "tools" in record or record.get("type") == "message")
    ) or any(
        isinstance(m.get("content"), list) and any(b["type"] != "text" for b in m["content"]) for m in messages
    ) or any(m.get("type") == "message" for m in messages)  # fmt: skip
    if evidence:
        assert detect_format(record).name == "anthropic"


@SETTINGS
@given(sessions())
def test_gaussia_keeps_turns_and_their_ground_truth(session: Session) -> None:
    (back,) = _read("gaussia", _write("gaussia", session))
    before, after = session.turns(), back.turns()
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


# -- tool-call metrics against a literal transcription of ragas 0.4.3 ---------------------------
# evalcore takes shortcuts (it stops at the first misaligned name; it finds distinct calls by
# equality rather than by hashing); these oracles are ragas' code as it is, so any shortcut that
# changed a number would show here.


def _ragas_accuracy(pred: list[ToolCall], ref: list[ToolCall], strict_order: bool) -> float:
    def arg_score(preds: dict[str, Any], refs: dict[str, Any]) -> float:
        if not refs and not preds:
            return 1.0
        if not refs:
            return 0.0
        score = 0.0
        for arg in refs:
            if arg in preds:
                score += float(str(refs[arg]) == str(preds[arg]))
        return score / len(refs.keys())

    def sort_key(tc: ToolCall) -> tuple[str, ...]:
        key_list = [tc.name]
        for name in sorted(tc.args):
            key_list += [name, str(tc.args[name])]
        return tuple(key_list)

    if not pred and not ref:
        return 1.0
    if not pred or not ref:
        return 0.0
    if not strict_order:
        pred, ref = sorted(pred, key=sort_key), sorted(ref, key=sort_key)
    pred_names, ref_names = [c.name for c in pred], [c.name for c in ref]
    aligned = int(pred_names == ref_names if strict_order else sorted(pred_names) == sorted(ref_names))
    score = 0.0
    compared = min(len(pred), len(ref))
    for r, p in zip(ref, pred, strict=False):
        if r.name == p.name:
            score += arg_score(p.args, r.args)
    score /= len(ref)
    if compared < len(ref):
        score *= compared / len(ref)
    return score * aligned


def _ragas_f1(pred: list[ToolCall], ref: list[ToolCall]) -> float:
    def hashable(obj: Any) -> Any:
        if isinstance(obj, dict):
            return frozenset((k, hashable(v)) for k, v in obj.items())
        if isinstance(obj, list | tuple):
            return tuple(hashable(item) for item in obj)
        if isinstance(obj, set):
            return frozenset(hashable(item) for item in obj)
        return obj

    expected = {(c.name, hashable(c.args)) for c in ref}
    actual = {(c.name, hashable(c.args)) for c in pred}
    tp, fp, fn = len(actual & expected), len(actual - expected), len(expected - actual)
    precision = tp / (tp + fp) if (tp + fp) > 0 else 0.0
    recall = tp / (tp + fn) if (tp + fn) > 0 else 0.0
    return round(2 * precision * recall / (precision + recall) if (precision + recall) > 0 else 0.0, 4)


# Few names, keys and values, with 1 / 1.0 / True / "1" among them: calls often match, partly
# match, or differ only in how a number is written.
close_values = st.recursive(
    st.sampled_from([1, 1.0, True, "1", 0, False, None, "a", -0.0, 0.0]),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.sampled_from("xy"), kids, max_size=2),
    max_leaves=4,
)
close_calls = st.builds(
    lambda name, args: ToolCall(name=name, args=args),
    st.sampled_from("abc"),
    st.dictionaries(st.sampled_from("xyz"), close_values, max_size=3),
)


ALIASES: dict[Any, list[Any]] = {1: [1, 1.0, True, "1"], 0: [0, 0.0, -0.0, False, "0"]}


@st.composite
def aliased(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with numbers now and then written another way (1 -> 1.0, True, "1"), lists and dicts kept."""
    if isinstance(value, dict):
        return {k: draw(aliased(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [draw(aliased(v)) for v in value]
    if type(value) in (int, float, bool) and value in ALIASES:
        return draw(st.sampled_from(ALIASES[value]))
    return value


@st.composite
def call_lists(draw: st.DrawFn) -> tuple[list[ToolCall], list[ToolCall]]:
    big = draw(st.booleans()) and draw(st.booleans())  # now and then past 64 calls (evalcore hashes there)
    reference = draw(st.lists(close_calls, min_size=65 if big else 0, max_size=80 if big else 6))
    if reference and draw(st.booleans()):  # the reference again, values equal (==) but not always alike (str)
        predicted = [ToolCall(name=c.name, args=draw(aliased(c.args))) for c in reference]
        if draw(st.booleans()):
            predicted = draw(st.permutations(predicted))
    else:
        pool = st.sampled_from(reference) | close_calls if reference else close_calls
        predicted = draw(st.lists(pool, max_size=80 if big else 6))
    return predicted, reference


@SETTINGS
@given(call_lists())
def test_tool_call_metrics_equal_ragas_code(calls: tuple[list[ToolCall], list[ToolCall]]) -> None:
    from evalcore.metrics.tool_calls import tool_call_accuracy, tool_call_f1

    predicted, reference = calls
    for strict in (True, False):
        ours = tool_call_accuracy(predicted, reference, strict_order=strict)
        assert repr(ours) == repr(_ragas_accuracy(predicted, reference, strict)), strict
    assert repr(tool_call_f1(predicted, reference)[0]) == repr(_ragas_f1(predicted, reference))

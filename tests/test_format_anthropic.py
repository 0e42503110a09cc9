"""The ``anthropic`` format on real logged Messages API requests, responses and transcripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from formats_util import assert_round_trip, load_output, sessions_of, write_jsonl

from evalcore import convert_file
from evalcore.formats import detect_format, get_format
from evalcore.schema import Session

REAL = Path(__file__).resolve().parent / "data" / "real" / "anthropic"
ANTHROPIC = get_format("anthropic")


def _records(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return [json.loads(text)]
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _through_evalcore(tmp_path: Path, source: Path) -> list[Any]:
    """anthropic -> evalcore (a file) -> anthropic (a file); what came back."""
    middle = tmp_path / "middle.jsonl"
    report = convert_file(source, middle, to="evalcore")
    assert report.errors == 0 and report.format == "anthropic", [str(p) for p in report.problems]
    back = tmp_path / "back.jsonl"
    report = convert_file(middle, back, to="anthropic", source_format="evalcore")
    assert report.errors == 0, [str(p) for p in report.problems]
    return load_output(back)


def _shape(session: Session) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in session.messages]


# -- real files --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(REAL.glob("*.json*")), ids=lambda p: p.name)
def test_real_files_are_detected_and_come_back_unchanged(path: Path, tmp_path: Path) -> None:
    assert detect_format(_records(path)[0]).name == "anthropic"
    assert _through_evalcore(tmp_path, path) == _records(path)


def test_request_with_an_image_tools_and_a_tool_result() -> None:
    (session,) = sessions_of(REAL / "request_image_tools.json")
    assert session.provenance is not None and session.provenance.format == "anthropic"
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "user"]
    ask, call_turn, result, image = session.messages
    assert ask.text.startswith("Use the get_file tool now")
    assert [(c.id, c.name, c.args) for c in call_turn.calls] == [("toolu_01YahAUKrWFRUmEJzzQKC8o8", "get_file", {})]
    assert call_turn.text == "I'll retrieve the file for you and describe what I receive."
    # The tool result is linked to its call by id, and keeps its blocks and is_error.
    assert result.tool_call_id == "toolu_01YahAUKrWFRUmEJzzQKC8o8" and result.name == "get_file"
    assert result.content == [{"text": "File attached", "type": "text"}]
    assert result.metadata["anthropic"]["result"] == {"is_error": False}
    assert session.turns()[0].tool_results() == [(call_turn.calls[0], result)]
    # The image that came with the result (same Anthropic message) is kept as given.
    assert image.content == [{"source": {"type": "url", "url": "https://www.gstatic.com/webp/gallery3/1.png"},
                              "type": "image"}]  # fmt: skip
    request = session.metadata["anthropic"]["request"]
    assert request["model"] == "claude-sonnet-4-5" and request["tools"][0]["name"] == "get_file"
    (written,) = ANTHROPIC.write(session)
    assert len(written["messages"]) == 3  # the result and the image are one user message again
    assert [b["type"] for b in written["messages"][2]["content"]] == ["tool_result", "image"]


def test_parallel_calls_system_and_four_results_in_one_message() -> None:
    request, _redacted, _response = sessions_of(REAL / "requests_parallel_redacted.jsonl")
    assert [m.role for m in request.messages] == ["system", "user", "assistant", "tool", "tool", "tool", "tool"]
    assert request.messages[0].text.strip().startswith("Use the `retrieve_entity_info` tool")
    calls = request.messages[2].calls
    assert [c.args["name"] for c in calls] == ["Alice", "Bob", "Charlie", "Daisy"]
    pairs = request.turns()[0].tool_results()
    assert [(c.args["name"], r.text if r else None) for c, r in pairs] == [
        ("Alice", "alice is bob's wife"),
        ("Bob", "bob is alice's husband"),
        ("Charlie", "charlie is alice's son"),
        ("Daisy", "daisy is bob's daughter and charlie's younger sister"),
    ]
    assert all(r is not None and r.tool_call_id == c.id and r.name == "retrieve_entity_info" for c, r in pairs)


def test_redacted_thinking_is_kept_and_written_back() -> None:
    _request, session, _response = sessions_of(REAL / "requests_parallel_redacted.jsonl")
    assert [m.role for m in session.messages] == ["user", "assistant", "user"]
    answer = session.messages[1]
    assert answer.reasoning is None and answer.text.startswith("I notice that your message")
    (kept,) = answer.metadata["anthropic"]["thinking"]
    assert kept["type"] == "redacted_thinking" and kept["data"].startswith("EvgFCkYIBxgCKkBmxKtC")
    (written,) = ANTHROPIC.write(session)
    assert written["messages"][1]["content"][0] == kept
    assert session.metadata["anthropic"]["request"]["thinking"] == {"budget_tokens": 1024, "type": "enabled"}


def test_a_response_keeps_usage_model_and_stop_reason_and_is_written_as_a_response() -> None:
    (session,) = sessions_of(REAL / "response_tool_use.json")
    (message,) = session.messages
    assert message.role == "assistant" and message.text.startswith("I'll help you find out who is the youngest")
    assert [c.args for c in message.calls] == [{"name": n} for n in ("Alice", "Bob", "Charlie", "Daisy")]
    keys = message.metadata["anthropic"]["keys"]
    assert keys["stop_reason"] == "tool_use" and keys["model"] == "claude-haiku-4-5-20251001"
    assert keys["usage"]["output_tokens"] == 202 and keys["id"] == "msg_011S3wxtqL5CVescWqS3zeg2"
    assert list(ANTHROPIC.write(session)) == _records(REAL / "response_tool_use.json")


def test_transcript_with_thinking_and_a_tool_result() -> None:
    (session,) = sessions_of(REAL / "transcript_thinking_tool_result.json")
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    thinker, result, answer = session.messages[1:]
    assert thinker.reasoning is not None and thinker.reasoning.startswith("The user is asking about the largest city")
    signature = thinker.metadata["anthropic"]["thinking"][0]["signature"]
    assert signature.startswith("EqEECkYICxgCKkAo3UA4")
    assert [(c.id, c.name) for c in thinker.calls] == [("toolu_01YGzqpRE16Vricda3Aqcejo", "get_user_country")]
    assert (result.tool_call_id, result.name, result.text) == (thinker.calls[0].id, "get_user_country", "Mexico")
    assert answer.text.startswith("Based on the information that you're from Mexico")
    assert answer.metadata["anthropic"]["keys"]["stop_reason"] == "end_turn"
    (written,) = ANTHROPIC.write(session)
    assert written == json.loads((REAL / "transcript_thinking_tool_result.json").read_text())
    assert written[1]["content"][0]["signature"] == signature


# -- shapes, order and conversions --------------------------------------------------------------

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
MIXED = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 512,
    "system": [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and Rome?"}, IMAGE]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Checking."},
            {"type": "thinking", "thinking": "Two cities.", "signature": "sig1"},
            {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "t2", "name": "weather", "input": '{"city": "Rome"}'},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "18C"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "is_error": True,
                                      "content": [{"type": "text", "text": "down"}]}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t3", "name": "weather", "input": {}}]},
        {"role": "user", "content": [
            {"type": "text", "text": "Here:"},
            {"type": "tool_result", "tool_use_id": "t3", "content": "24C"},
            IMAGE,
        ]},
        {"role": "assistant", "content": "Paris 18C, Rome 24C."},
    ],
    "tools": [{"name": "weather", "input_schema": {"type": "object"}}],
}  # fmt: skip


def test_results_come_first_and_are_written_back_in_their_order(tmp_path: Path) -> None:
    (session,) = sessions_of(write_jsonl(tmp_path / "a.jsonl", [MIXED]))
    assert [m.role for m in session.messages] == ["system", "user", "assistant", "tool", "tool", "assistant", "tool",
                                                  "user", "assistant"]  # fmt: skip
    assert session.messages[0].content == MIXED["system"]
    thinker = session.messages[2]
    assert thinker.reasoning == "Two cities." and thinker.text == "Checking."
    assert [(c.id, c.args) for c in thinker.calls] == [("t1", {"city": "Paris"}), ("t2", {"city": "Rome"})]
    assert [(m.tool_call_id, m.text) for m in session.messages if m.role == "tool"] == [
        ("t1", "18C"), ("t2", "down"), ("t3", "24C")]  # fmt: skip
    assert session.messages[4].metadata["anthropic"] == {"separate": True, "result": {"is_error": True}}
    assert session.messages[7].content == [{"type": "text", "text": "Here:"}, IMAGE]
    assert session.messages[7].metadata["anthropic"] == {"joined": True, "order": "oro"}
    assert_round_trip(tmp_path, "anthropic", [MIXED])


def test_another_format_s_session_is_written_as_a_request(tmp_path: Path) -> None:
    chat = {"messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                     {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
                                     {"type": "image_url", "image_url": {"url": "https://x.test/a.png"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "look", "arguments": '{"zoom": 2}'}},
            {"id": "c2", "type": "function", "function": {"name": "look", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a cat"},
        {"role": "tool", "tool_call_id": "c2", "content": "still a cat"},
        {"role": "user", "content": "Sure?"},
        {"role": "assistant", "content": "A cat.", "reasoning_content": "Both looks agree."},
    ], "tools": [{"type": "function", "function": {"name": "look", "description": "Look closer.",
                                                   "parameters": {"type": "object"}}}]}  # fmt: skip
    out = tmp_path / "a.jsonl"
    report = convert_file(write_jsonl(tmp_path / "o.jsonl", [chat]), out, to="anthropic")
    assert report.errors == 0 and report.format == "openai"
    (request,) = load_output(out)
    assert request == {"tools": [{"name": "look", "description": "Look closer.", "input_schema": {"type": "object"}}],
                       "system": "Be brief.", "messages": [
        {"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}},
            {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "c1", "name": "look", "input": {"zoom": 2}},
            {"type": "tool_use", "id": "c2", "name": "look", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "a cat"},
                                     {"type": "tool_result", "tool_use_id": "c2", "content": "still a cat"}]},
        {"role": "user", "content": "Sure?"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "Both looks agree."},
                                          {"type": "text", "text": "A cat."}]},
    ]}  # fmt: skip
    # ... and read back as the same conversation.
    (back,) = sessions_of(out)
    assert back.provenance is not None and back.provenance.format == "anthropic"
    assert [(m.role, m.text, [(c.name, c.args) for c in m.calls]) for m in back.messages] == [
        ("system", "Be brief.", []), ("user", "What is this?", []),
        ("assistant", "", [("look", {"zoom": 2}), ("look", {})]),
        ("tool", "a cat", []), ("tool", "still a cat", []), ("user", "Sure?", []), ("assistant", "A cat.", []),
    ]  # fmt: skip


def test_anthropic_to_openai_keeps_the_conversation(tmp_path: Path) -> None:
    out = tmp_path / "o.jsonl"
    report = convert_file(REAL / "transcript_thinking_tool_result.json", out, to="openai")
    assert report.errors == 0
    (row,) = load_output(out)
    assert [m["role"] for m in row["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert row["messages"][1]["tool_calls"][0]["id"] == "toolu_01YGzqpRE16Vricda3Aqcejo"
    assert row["messages"][2]["tool_call_id"] == "toolu_01YGzqpRE16Vricda3Aqcejo"


# -- detection ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        {"system": "Be brief.", "messages": [{"role": "user", "content": "Hi"}]},
        {"messages": [{"role": "user", "content": "Hi"}], "tools": [{"name": "f", "input_schema": {}}]},
        {"messages": [{"role": "user", "content": [IMAGE]}]},
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": [{"type": "thinking", "thinking": "h"}]}],
        {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "stop_reason": "end_turn"},
        {"type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 1, "output_tokens": 2}},
    ],
    ids=["system", "tools", "image", "transcript", "response", "response-without-nulls"],
)
def test_anthropic_shapes_are_detected(value: Any) -> None:
    assert detect_format(value).name == "anthropic"


@pytest.mark.parametrize(
    ("value", "fmt"),
    [
        ({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]}, "openai"),
        ({"model": "gpt-4o", "max_tokens": 9, "messages": [{"role": "user", "content": "Hi"}]}, "openai"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}]}, "openai"),
        ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}], "openai"),
        ({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]},
         "open-responses"),
        ({"items": [{"type": "message", "role": "user", "content": "hi"}]}, "open-responses"),
    ],
    ids=["chat", "chat-request", "chat-image", "bare-chat", "responses-item", "trace"],
)  # fmt: skip
def test_other_shapes_are_not_taken_for_anthropic(value: Any, fmt: str) -> None:
    assert detect_format(value).name == fmt


def test_langchain_messages_with_anthropic_blocks_stay_langchain(ragas_reference: Path) -> None:
    with (ragas_reference / "langchain_msgs.jsonl").open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    row = next(r for r in rows if r["style"] == "anthropic")
    assert detect_format(row["messages"]).name == "langchain"


# -- bad input ----------------------------------------------------------------------------------


def test_bad_records_name_the_field_and_good_ones_are_kept(tmp_path: Path) -> None:
    no_name = {"system": "s", "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "x"}]}]}
    tool_role = {"system": "s", "messages": [{"role": "tool", "content": "x"}]}
    bad_block = {"system": "s", "messages": [{"role": "user", "content": ["just text"]}]}
    neither = {"model": "claude"}
    path = write_jsonl(tmp_path / "a.jsonl", [MIXED, no_name, tool_role, bad_block, neither, MIXED])
    report = convert_file(path, tmp_path / "o.jsonl", to="evalcore", source_format="anthropic")
    assert report.sessions == 2 and report.errors == 4
    messages = [str(p) for p in report.problems]
    assert messages[0].endswith(":2: messages[0].content[0].name: missing tool name")
    assert messages[1].endswith(":3: messages[0].role: unknown role 'tool'; expected user or assistant")
    assert messages[2].endswith(":4: messages[0].content[0]: expected an object, got a string")
    assert ":5: messages: expected an Anthropic request" in messages[3]

"""The Review page's transcript: turns, calls paired with their results, folding flags, paging."""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from evalcore.schema import Session
from evalcore.views.review import LONG_CHARS, LONG_LINES, CallView, MessageView, is_long, transcript, turn_count


def _session(messages: list[dict[str, Any]], **fields: Any) -> Session:
    return Session.model_validate({"messages": messages, **fields})


def _kinds(items: list[Any]) -> list[str]:
    return [f"call:{i.name}" if isinstance(i, CallView) else i.kind for i in items]


def test_empty_session() -> None:
    view = transcript(Session())
    assert view.preamble == [] and view.turns == []
    assert view.n_tool_calls == 0 and not view.calls_lack_results
    assert view.turn_count == 0 == turn_count(Session())
    assert view.page(0, 10) == [] and view.page_count(10) == 1


def test_preamble_turns_answer_and_truth() -> None:
    session = _session(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "assistant", "content": "Hello! How can I help?"},
            {"role": "user", "content": "Where is order 7?"},
            {"role": "assistant", "content": "Let me check.", "reasoning": "need the order",
             "tool_calls": [{"id": "c1", "name": "get_order", "args": {"id": 7}}]},
            {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
            {"role": "system", "content": "Tool budget: 1 call left."},
            {"role": "assistant", "content": "It shipped."},
            {"role": "user", "content": "Thanks"},
        ],
        turn_truth=[{"ground_truth": "Shipped.", "weight": 0.5}],
        retrieved_context=[{"content": "orders ship in 2 days", "doc_uri": "kb://1"}],
    )  # fmt: skip
    view = transcript(session)
    assert _kinds(view.preamble) == ["system", "assistant"]
    assert [t.index for t in view.turns] == [0, 1] and view.turn_count == 2 == turn_count(session)
    first, second = view.turns
    assert first.query == "Where is order 7?" and first.user.role == "user"
    assert _kinds(first.items) == ["assistant", "call:get_order", "system", "assistant"]
    assistant = first.items[0]
    assert isinstance(assistant, MessageView)
    assert assistant.text == "Let me check." and assistant.reasoning == "need the order"
    assert first.answer == "It shipped."
    assert first.truth.ground_truth == "Shipped." and first.truth.weight == 0.5
    assert first.n_tool_calls == 1 and first.n_missing_results == 0
    assert second.items == [] and second.answer is None and second.truth.ground_truth is None
    assert view.retrieved_context is not None and view.retrieved_context[0].doc_uri == "kb://1"
    assert view.n_messages == 8


def test_call_view_pretty_prints_arguments_and_json_results() -> None:
    session = _session(
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"id": "a", "name": "find", "args": {"z": 1, "a": "é", "m": [1]}}]},
            {"role": "tool", "tool_call_id": "a", "content": '{"hits": [{"title": "Café"}], "total": 1}'},
        ]
    )
    (call,) = transcript(session).turns[0].calls
    # Keys in the given order, non-ASCII kept, indent 2.
    assert call.args_text == '{\n  "z": 1,\n  "a": "é",\n  "m": [\n    1\n  ]\n}'
    assert call.name == "find" and call.id == "a" and call.has_result
    assert call.result is not None and call.result.tool_call_id == "a"
    assert call.result_is_json
    assert call.result_text == json.dumps({"hits": [{"title": "Café"}], "total": 1}, indent=2, ensure_ascii=False)
    assert not call.args_is_long and not call.result_is_long


def test_non_json_results_stay_as_they_are() -> None:
    for content in ["plain text", "42", '"a string"', "{not json}", "[1, 2", "  "]:
        session = _session(
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "tool_calls": [{"name": "t"}]},
                {"role": "tool", "content": content},
            ]
        )
        (call,) = transcript(session).turns[0].calls
        assert call.result_text == content and not call.result_is_json


def test_json_results_orjson_refuses_still_pretty_print() -> None:
    session = _session(
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [{"name": "t"}]},
            {"role": "tool", "content": '{"x": NaN, "big": 123456789012345678901234567890}'},
        ]
    )
    (call,) = transcript(session).turns[0].calls
    assert call.result_is_json
    assert call.result_text == '{\n  "x": NaN,\n  "big": 123456789012345678901234567890\n}'


def test_parallel_calls_with_results_out_of_order_are_paired_by_id() -> None:
    session = _session(
        [
            {"role": "user", "content": "compare"},
            {"role": "assistant", "tool_calls": [
                {"id": "p1", "name": "price", "args": {"sku": 1}},
                {"id": "p2", "name": "price", "args": {"sku": 2}},
                {"id": "p3", "name": "stock", "args": {"sku": 1}},
            ]},
            {"role": "tool", "tool_call_id": "p3", "content": "in stock"},
            {"role": "tool", "tool_call_id": "p1", "content": "9.99"},
            {"role": "tool", "tool_call_id": "p2", "content": "19.99"},
            {"role": "assistant", "content": "Item 1 is cheaper."},
        ]
    )  # fmt: skip
    turn = transcript(session).turns[0]
    assert _kinds(turn.items) == ["assistant", "call:price", "call:price", "call:stock", "assistant"]
    assert [(c.id, c.result_text) for c in turn.calls] == [("p1", "9.99"), ("p2", "19.99"), ("p3", "in stock")]
    assert turn.n_tool_calls == 3 and turn.n_missing_results == 0


def test_calls_without_ids_are_paired_in_order() -> None:
    session = _session(
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [{"name": "a"}, {"name": "b"}]},
            {"role": "tool", "content": "ra"},
            {"role": "tool", "content": "rb"},
        ]
    )
    turn = transcript(session).turns[0]
    assert [(c.name, c.result_text) for c in turn.calls] == [("a", "ra"), ("b", "rb")]


def test_unclaimed_tool_messages_stand_alone_and_missing_results_are_counted() -> None:
    session = _session(
        [
            {"role": "tool", "content": "orphan before anything"},
            {"role": "user", "content": "q"},
            {"role": "assistant", "tool_calls": [{"id": "x", "name": "a"}, {"id": "y", "name": "b"}]},
            {"role": "tool", "tool_call_id": "y", "content": "rb"},
            {"role": "assistant", "content": "partial"},
            {"role": "user", "content": "q2"},
            {"role": "tool", "tool_call_id": "zzz", "name": "c", "content": "names a call that does not exist"},
            {"role": "tool", "content": "names no call: the first call waiting takes it"},
            {"role": "tool", "tool_call_id": "y", "content": "a second result of y"},
        ]
    )
    view = transcript(session)
    assert _kinds(view.preamble) == ["tool"]
    assert isinstance(view.preamble[0], MessageView) and view.preamble[0].unlinked == "unclaimed"
    first, second = view.turns
    # The result naming "zzz" is never put under another call (it used to go to the first call waiting, "a").
    assert [(c.name, c.result_text) for c in first.calls] == [
        ("a", "names no call: the first call waiting takes it"),
        ("b", "rb"),
    ]
    assert _kinds(second.items) == ["tool", "tool"]
    unknown, again = second.items
    assert isinstance(unknown, MessageView) and unknown.text == "names a call that does not exist"
    assert unknown.unlinked == "unknown"
    assert unknown.unlinked_note == ":material/link_off: result of an unknown call ` zzz ` · tool ` c `"
    assert isinstance(again, MessageView) and again.unlinked == "answered"
    assert again.unlinked_note == ":material/link_off: another result of call ` y `, which has one"
    assert view.n_tool_calls == 2 and view.n_missing_results == 0


def test_a_call_with_no_result() -> None:
    session = _session([{"role": "user", "content": "q"}, {"role": "assistant", "tool_calls": [{"name": "a"}]}])
    view = transcript(session)
    (call,) = view.turns[0].calls
    assert call.result is None and not call.has_result and call.result_text == "" and not call.result_is_json
    assert view.calls_lack_results and view.n_missing_results == 1 and view.turns[0].n_missing_results == 1


def test_structured_content_blocks_and_reasoning() -> None:
    session = _session(
        [
            {"role": "user", "content": [{"type": "input_text", "text": "What is in"},
                                         {"type": "input_image", "image_url": "http://x/a.png"}]},
            {"role": "assistant", "content": [{"type": "output_text", "text": "A cat."},
                                              {"type": "refusal", "refusal": "No faces."}],
             "reasoning": "looked at the image"},
            {"role": "assistant", "content": [{"type": "output_text", "text": ""}]},
        ]
    )  # fmt: skip
    turn = transcript(session).turns[0]
    assert turn.query == "What is in"
    answer, empty = turn.items
    assert isinstance(answer, MessageView) and isinstance(empty, MessageView)
    assert answer.text == "A cat.\nNo faces." and answer.reasoning == "looked at the image"
    assert answer.extra_blocks == () and empty.extra_blocks == () and empty.text == ""
    assert turn.answer == "A cat.\nNo faces."


def test_extra_blocks_are_the_ones_without_text() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    session = _session(
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "text", "text": "see"}, image, audio]},
        ]
    )
    item = transcript(session).turns[0].items[0]
    assert isinstance(item, MessageView) and item.text == "see"
    assert item.extra_blocks == (audio,)  # images apart, drawn (their bytes decoded)
    assert [(i.url, i.media_type, i.data) for i in item.images] == [(image["image_url"]["url"], "image/png", b"\0\0\0")]


def test_long_outputs_are_flagged() -> None:
    assert not is_long("x" * LONG_CHARS) and is_long("x" * (LONG_CHARS + 1))
    assert not is_long("\n".join(["x"] * LONG_LINES)) and is_long("\n".join(["x"] * (LONG_LINES + 1)))
    rows = [{"n": i} for i in range(30)]
    session = _session(
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "y" * 2000, "tool_calls": [{"name": "t", "args": {"rows": rows}}]},
            {"role": "tool", "content": json.dumps(rows)},
        ]
    )
    turn = transcript(session).turns[0]
    message, call = turn.items
    assert isinstance(message, MessageView) and message.is_long
    assert isinstance(call, CallView) and call.args_is_long and call.result_is_long and call.result_is_json


def test_truth_beyond_the_conversation_is_kept_apart() -> None:
    session = _session([{"role": "user", "content": "q"}], turn_truth=[{"qa_id": "a"}, {"qa_id": "b"}])
    view = transcript(session)
    assert view.turns[0].truth.qa_id == "a" and [t.qa_id for t in view.extra_truth] == ["b"]


def test_paging() -> None:
    messages = []
    for i in range(25):
        messages += [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]
    view = transcript(_session(messages))
    assert view.turn_count == 25 and view.page_count(10) == 3 and view.page_count(25) == 1
    assert [t.index for t in view.page(0, 10)] == list(range(10))
    assert [t.index for t in view.page(20, 10)] == [20, 21, 22, 23, 24]
    assert view.page(30, 10) == [] and view.page(-5, 2)[0].index == 0 and view.page(0, 0) == []


def big_session() -> Session:
    """300 messages, 40 tool calls (parallel pairs answered in reverse order), 3 KB JSON results."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a helpful agent. " * 20}]
    calls = 0
    while len(messages) < 300:
        messages.append({"role": "user", "content": f"Please check order {len(messages)}."})
        if calls < 40:
            ids = [f"c{calls}", f"c{calls + 1}"]
            messages.append(
                {
                    "role": "assistant",
                    "content": "Checking.",
                    "reasoning": "think " * 30,
                    "tool_calls": [
                        {"id": i, "name": "get_order", "args": {"id": i, "fields": ["a", "b"]}} for i in ids
                    ],
                }
            )
            for i in reversed(ids):
                result = {"order": i, "items": [{"sku": k, "title": "Widget " * 5} for k in range(30)]}
                messages.append({"role": "tool", "tool_call_id": i, "content": json.dumps(result)})
            calls += 2
        messages.append({"role": "assistant", "content": "Here is what I found: " + "lorem ipsum " * 40})
    return _session(messages[:300])


def test_a_300_message_session_builds_in_milliseconds() -> None:
    session = big_session()
    assert len(session.messages) == 300 and len(session.tool_calls()) == 40
    times = []
    for _ in range(15):
        start = time.perf_counter()
        view = transcript(session)
        times.append(time.perf_counter() - start)
    assert view.n_tool_calls == 40 and not view.calls_lack_results
    assert all(c.result_is_json for t in view.turns for c in t.calls)
    # About 3 ms on the development machine; generous for a loaded CI machine.
    assert statistics.median(times) < 0.05


def test_the_runs_recorded_error_is_one_line() -> None:
    from evalcore.views.review.transcript import run_error

    message = [{"role": "user", "content": "hi"}]
    assert run_error(Session(messages=message)) is None
    failed = Session(messages=message, metadata={"error": {"type": "TimeoutError", "message": "slow", "span": "f"}})
    assert run_error(failed) == transcript(failed).error == "TimeoutError: slow (in span f)"
    assert run_error(Session(metadata={"error": {"message": "boom"}})) == "boom"
    assert run_error(Session(metadata={"error": {"type": "E", "span": ""}})) == "E"
    assert run_error(Session(metadata={"error": "plain text"})) == "plain text"

"""evalcore against the reference data made with the real ragas and LangChain, and real τ-bench sessions."""

from __future__ import annotations

import json
from pathlib import Path

from formats_util import drop_none

from evalcore import convert_file, read_path
from evalcore.schema import Message, Session
from evalcore.views.review.transcript import attachments


def _sessions(path: Path, fmt: str | None = None) -> list[Session]:
    with read_path(path, fmt) as results:
        out = []
        for result in results:
            assert result.ok, (result.line, result.problems)
            assert result.session is not None
            out.append(result.session)
        return out


def _normalised(session: Session) -> list[dict[str, object]]:
    """The shape of the reference files' ``expected``: system dropped, calls as {name, args}."""
    return [
        {"role": m.role, "content": m.text, "tool_calls": [{"name": c.name, "args": c.args} for c in m.calls]}
        for m in session.messages
        if m.role != "system"
    ]


def test_ragas_jsonl_round_trips_byte_for_byte(ragas_reference: Path, tmp_path: Path) -> None:
    source = ragas_reference / "ragas_samples.jsonl"
    out = tmp_path / "out.jsonl"
    report = convert_file(source, out, to="ragas")
    assert (report.sessions, report.errors) == (300, 0)
    assert out.read_bytes() == source.read_bytes()


def test_ragas_through_evalcore_and_back_is_identical(ragas_reference: Path, tmp_path: Path) -> None:
    source = ragas_reference / "ragas_samples.jsonl"
    convert_file(source, tmp_path / "mid.jsonl", to="evalcore")
    convert_file(tmp_path / "mid.jsonl", tmp_path / "back.jsonl", to="ragas")
    assert (tmp_path / "back.jsonl").read_bytes() == source.read_bytes()


def test_ragas_fields_are_read(ragas_reference: Path) -> None:
    sessions = _sessions(ragas_reference / "ragas_samples.jsonl")
    rows = [json.loads(line) for line in (ragas_reference / "ragas_samples.jsonl").read_text().splitlines()]
    for session, row in zip(sessions, rows, strict=True):
        assert session.reference == row["reference"]
        assert session.reference_topics == row["reference_topics"]
        assert [c.model_dump(include={"name", "args"}) for c in session.reference_tool_calls or []] == row[
            "reference_tool_calls"
        ]
        assert [m.text for m in session.messages] == [m["content"] for m in row["user_input"]]
    assert sessions[1].provenance is not None and sessions[1].provenance.position == 1
    assert sessions[1].provenance.line == 2


def test_langchain_both_styles_keep_every_tool_call(ragas_reference: Path) -> None:
    path = ragas_reference / "langchain_msgs.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    sessions = _sessions(path)
    styles = {row["style"] for row in rows}
    assert styles == {"openai", "anthropic"}
    anthropic_calls = 0
    for session, row in zip(sessions, rows, strict=True):
        assert _normalised(session) == row["expected"]
        if row["style"] == "anthropic":
            anthropic_calls += len(session.tool_calls())
    assert anthropic_calls > 0  # ragas' own converter keeps none of these


def test_langchain_tool_use_blocks_show_as_their_calls_alone(ragas_reference: Path) -> None:
    """A labeler's finding: Anthropic-style messages (``tool_use`` blocks beside ``tool_calls``) showed "tool_use block
    (not loaded)" once per call above the calls themselves. The blocks stay in the session (a LangChain export writes
    them back); Review names none of them apart from its call."""
    sessions = _sessions(ragas_reference / "langchain_msgs.jsonl")
    with_blocks = [
        m for s in sessions for m in s.messages
        if isinstance(m.content, list) and any(b.get("type") == "tool_use" for b in m.content)
    ]  # fmt: skip
    assert with_blocks and all(m.calls for m in with_blocks)
    for message in with_blocks:
        images, others = attachments(message)
        assert images == () and others == (), others
    stray = Message(role="assistant", content=[{"type": "tool_use", "id": "nobody", "name": "x", "input": {}}])
    assert attachments(stray)[1] == ({"type": "tool_use", "id": "nobody", "name": "x", "input": {}},)  # no call: named


def test_langchain_keeps_system_messages_and_ids(ragas_reference: Path) -> None:
    sessions = _sessions(ragas_reference / "langchain_msgs.jsonl")
    assert any(m.role == "system" for s in sessions for m in s.messages)
    calls = [c for s in sessions for c in s.tool_calls()]
    assert calls and all(c.id for c in calls)
    tools = [m for s in sessions for m in s.messages if m.role == "tool"]
    assert all(m.tool_call_id and m.name for m in tools)


def test_langchain_to_ragas_leaves_system_messages_out(ragas_reference: Path, tmp_path: Path) -> None:
    out = tmp_path / "ragas.jsonl"
    report = convert_file(ragas_reference / "langchain_msgs.jsonl", out, to="ragas")
    assert report.errors == 0
    expected = [
        json.loads(line)["expected"] for line in (ragas_reference / "langchain_msgs.jsonl").read_text().splitlines()
    ]
    for line, want in zip(out.read_text().splitlines(), expected, strict=True):
        got = json.loads(line)["user_input"]
        assert [m["type"] for m in got] == [
            {"user": "human", "assistant": "ai", "tool": "tool"}[m["role"]] for m in want
        ]
        assert [m["content"] for m in got] == [m["content"] for m in want]
        assert [m.get("tool_calls") or [] for m in got] == [m["tool_calls"] for m in want]


def test_swarm_matches_expected(ragas_reference: Path) -> None:
    path = ragas_reference / "swarm_msgs.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    sessions = _sessions(path)
    assert sessions[0].provenance is not None and sessions[0].provenance.format == "swarm"
    for session, row in zip(sessions, rows, strict=True):
        assert _normalised(session) == row["expected"]
    tools = [m for s in sessions for m in s.messages if m.role == "tool"]
    assert tools and all(m.name and m.tool_call_id for m in tools)


def test_tau_bench_real_trajectories(tau_bench_file: Path) -> None:
    raw = json.loads(tau_bench_file.read_text())
    sessions = _sessions(tau_bench_file)
    assert len(sessions) == len(raw) == 40
    for session, row in zip(sessions, raw, strict=True):
        assert session.provenance is not None and session.provenance.format == "tau-bench"
        assert len(session.messages) == len(row["traj"])
        assert session.messages[0].role == "system"
        assert session.goal == row["info"]["task"]["instruction"]
        assert session.scores["reward"] == row["reward"]
        want = [{"name": a["name"], "args": a["kwargs"]} for a in row["info"]["task"]["actions"]]
        assert [{"name": c.name, "args": c.args} for c in session.reference_tool_calls or []] == want
        outputs = row["info"]["task"].get("outputs") or None
        assert session.expected_facts == outputs
        # every tool result is linked to the call that asked for it
        for turn in session.turns():
            for call, result in turn.tool_results():
                assert result is not None and result.tool_call_id == call.id and result.name == call.name
    assert len({s.session_id for s in sessions}) == 40


def test_tau_bench_to_openai_keeps_the_wire_messages(tau_bench_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "openai.jsonl"
    report = convert_file(tau_bench_file, out, to="openai")
    assert (report.sessions, report.errors) == (40, 0)
    raw = json.loads(tau_bench_file.read_text())
    for line, row in zip(out.read_text().splitlines(), raw, strict=True):
        messages = json.loads(line)["messages"]
        assert [drop_none(m) for m in messages] == [drop_none(m) for m in row["traj"]]


def test_ragas_rows_with_nan_and_big_integers_come_back_unchanged(tmp_path: Path) -> None:
    lines = [
        '{"user_input": [{"content": "a", "type": "human"}]}',
        '{"user_input": [{"content": "a", "type": "ai", "tool_calls": [{"name": "t", "args": {"x": NaN}}]}]}',
        '{"user_input": [{"content": "a", "type": "ai", "tool_calls": [{"name": "t", "args": {"id": 1%s}}]}]}'
        % ("8" * 20),
    ]
    source = tmp_path / "r.jsonl"
    source.write_text("\n".join(lines) + "\n")
    report = convert_file(source, tmp_path / "o.jsonl", to="ragas")
    assert report.errors == 0
    assert (tmp_path / "o.jsonl").read_text() == source.read_text()


def test_a_file_that_is_one_array_of_messages_is_one_conversation(ragas_reference: Path, tmp_path: Path) -> None:
    swarm = json.loads((ragas_reference / "swarm_msgs.jsonl").read_text().splitlines()[0])
    langchain = json.loads((ragas_reference / "langchain_msgs.jsonl").read_text().splitlines()[0])
    for name, messages, fmt in (("swarm", swarm["messages"], "swarm"), ("lc", langchain["messages"], "langchain")):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(messages, indent=2))
        (session,) = _sessions(path)
        assert session.provenance is not None and session.provenance.format == fmt
        assert len(session.messages) == len(messages)


def test_odd_values_get_a_clear_error_not_a_crash(tmp_path: Path) -> None:
    from evalcore import validate_file

    rows = [
        {"messages": [{"role": ["user"], "content": "hi"}]},
        {"user_input": [{"type": {"x": 1}, "content": "hi"}]},
        {"schema_version": 1},
    ]
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    problems = [str(p) for p in validate_file(path, source_format=None).problems]
    assert all("unreadable record" not in p for p in problems), problems
    assert any(":2:" in p for p in problems)  # each line judged on its own


def test_the_evalcore_format_keeps_nan(tmp_path: Path) -> None:
    line = '{"user_input": [{"content": "a", "type": "ai", "tool_calls": [{"name": "t", "args": {"x": NaN}}]}]}\n'
    (tmp_path / "r.jsonl").write_text(line)
    convert_file(tmp_path / "r.jsonl", tmp_path / "e.jsonl", to="evalcore")
    convert_file(tmp_path / "e.jsonl", tmp_path / "back.jsonl", to="ragas")
    assert (tmp_path / "back.jsonl").read_text() == line

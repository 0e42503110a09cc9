"""A session's identity in a dataset is its ``session_id`` and ``assistant_id`` (``evalcore.identity``):
several assistants' sessions of one id (a Gaussia BestOf dataset, two agents' τ-bench runs) are all kept,
an import never replaces one assistant's session by another's, and ``validate`` warns where an import
would keep only the first of two records. On real SQLite files."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from formats_util import write_jsonl
from sqlite_utils import Database

from evalcore import validate_file
from evalcore.importing import import_file
from evalcore.store import open_store
from evalcore.store.migrations import migration_set

TAU = Path(__file__).parent / "data" / "tau_bench" / "gpt-4o-airline-first40.json"
# File names as τ-bench's run.py writes them: the agent's model is in the name only.
RUN_A = "tool-calling-gpt-4o-0.0_range_0--1_user-gpt-4o-llm_1116.json"
RUN_B = "tool-calling-claude-3-5-sonnet-20241022-0.0_range_0--1_user-gpt-4o-llm_1117.json"


def _turn(qa_id: str, query: str, answer: str) -> dict[str, Any]:
    return {"qa_id": qa_id, "query": query, "assistant": answer, "ground_truth_assistant": ""}


def _batch(session_id: str, assistant: str, qa_id: str, answer: str) -> dict[str, Any]:
    return {
        "metadata": {"session_id": session_id, "assistant_id": assistant, "language": "en", "context": ""},
        "batch": _turn(qa_id, f"question {qa_id}", answer),
    }


def test_a_bestof_dataset_keeps_every_assistants_session(tmp_path: Path) -> None:
    """Gaussia BestOf: one session_id, one Dataset per assistant (and the same as streamed batches)."""
    datasets = [
        {"session_id": "bestof", "assistant_id": a, "language": "en", "context": "",
         "conversation": [_turn("q1", "Which plan?", f"{a} says the basic plan.")]}
        for a in ("gpt", "claude", "llama")
    ]  # fmt: skip
    (tmp_path / "bestof.json").write_text(json.dumps(datasets), encoding="utf-8")
    streamed = [
        _batch("s1", "gpt", "q1", "A1"),
        _batch("s1", "gpt", "q2", "A2"),
        _batch("s1", "claude", "q1", "B1"),
        _batch("s1", "claude", "q2", "B2"),
    ]
    write_jsonl(tmp_path / "stream.jsonl", streamed)
    with open_store(tmp_path / "e.db") as store:
        report = import_file(store, tmp_path / "bestof.json", "bestof")
        assert (report.new, report.failed) == (3, 0)
        items = store.sessions.browse("bestof").items
        assert [(s.session_id, s.assistant_id) for s in items] == [
            ("bestof", "gpt"),
            ("bestof", "claude"),
            ("bestof", "llama"),
        ]
        report = import_file(store, tmp_path / "stream.jsonl", "stream")
        assert (report.new, report.failed) == (2, 0)
        sessions = [store.sessions.get(s.pk).session for s in store.sessions.browse("stream").items]
        assert [(s.assistant_id, [m.text for m in s.messages if m.role == "assistant"]) for s in sessions] == [
            ("gpt", ["A1", "A2"]),
            ("claude", ["B1", "B2"]),
        ]


def test_two_agents_tau_bench_runs_share_one_dataset(tmp_path: Path) -> None:
    """τ-bench ids are ``task-N-trial-M`` in every run; the model in run.py's file name tells them apart."""
    first = shutil.copy(TAU, tmp_path / RUN_A)
    records = json.loads(TAU.read_text(encoding="utf-8"))
    for record in records:  # the other agent's run: the same tasks, other answers
        record["reward"] = 1.0 - float(record["reward"])
    second = tmp_path / RUN_B
    second.write_text(json.dumps(records), encoding="utf-8")
    with open_store(tmp_path / "e.db") as store:
        a = import_file(store, first, "tau")
        b = import_file(store, second, "tau")
        assert (a.new, b.new, b.updated, b.unchanged) == (40, 40, 0, 0)
        items = store.sessions.browse("tau", limit=100).items
        assert len(items) == 80
        by_assistant = {(s.session_id, s.assistant_id) for s in items}
        assert ("task-0-trial-0", "gpt-4o") in by_assistant
        assert ("task-0-trial-0", "claude-3-5-sonnet-20241022") in by_assistant
        again = import_file(store, first, "tau")  # the same run again: the same sessions
        assert (again.new, again.updated, again.unchanged) == (0, 0, 40)


def _native(session_id: str, assistant: str, answer: str) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "session_id": session_id,
        "assistant_id": assistant,
        "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": answer}],
    }


def test_an_import_never_replaces_another_assistants_session(tmp_path: Path) -> None:
    with open_store(tmp_path / "e.db") as store:
        import_file(store, write_jsonl(tmp_path / "a.jsonl", [_native("s1", "bot-a", "Hello.")]), "d")
        report = import_file(store, write_jsonl(tmp_path / "b.jsonl", [_native("s1", "bot-b", "Hey there.")]), "d")
        assert (report.new, report.updated, report.unchanged) == (1, 0, 0)
        texts = {
            s.assistant_id: store.sessions.get(s.pk).session.messages[1].text for s in store.sessions.browse("d").items
        }
        assert texts == {"bot-a": "Hello.", "bot-b": "Hey there."}
        # The same assistant's session with new content is that session, updated (and said so).
        report = import_file(store, write_jsonl(tmp_path / "c.jsonl", [_native("s1", "bot-a", "Hi!")]), "d")
        assert (report.new, report.updated) == (0, 1)


def test_validate_warns_where_an_import_keeps_only_the_first(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "f.jsonl",
        [_native("s1", "bot-a", "one"), _native("s1", "bot-b", "two"), _native("s1", "bot-a", "three")],
    )
    report = validate_file(path)
    assert (report.sessions, report.errors, report.warnings) == (3, 0, 1)
    assert [str(p) for p in report.problems] == [
        f"{path}:3: warning: session 's1' (assistant 'bot-a') appears again (first on line 1): "
        "an import keeps the first, not this one"
    ]
    with open_store(tmp_path / "e.db") as store:
        imported = import_file(store, path, "d")
        assert (imported.new, imported.failed) == (2, 1)
        assert str(imported.problems[0]).endswith(
            "session 's1' (assistant 'bot-a') appears again (first on line 1); skipped"
        )


def test_migration_0005_gives_stored_keys_their_assistant(tmp_path: Path) -> None:
    """A store written before assistants counted: its keys gain the assistant, and the same file imported
    again finds every session unchanged (none is taken for new)."""
    source = write_jsonl(tmp_path / "f.jsonl", [_native("s1", "bot-a", "one"), _native("s2", "", "two")])
    path = tmp_path / "old.db"
    with open_store(path) as store:
        import_file(store, source, "d")
    conn = sqlite3.connect(path)  # as version 4 wrote them
    conn.execute("UPDATE sessions SET key = 'id:' || session_id")
    conn.execute("DELETE FROM _sqlite_migrations WHERE name = '0005_assistant_identity'")
    conn.commit()
    conn.close()
    assert "0005_assistant_identity" not in {m.name for m in migration_set().applied(Database(path))}
    with open_store(path) as store:
        keys = sorted(r[0] for r in sqlite3.connect(path).execute("SELECT key FROM sessions"))
        assert keys == ["id:s2", 'ida:["s1","bot-a"]']  # ("" names no assistant: Gaussia writes it for none)
        again = import_file(store, source, "d")
        assert (again.new, again.unchanged) == (0, 2)


def test_sessions_made_here_are_stored_as_an_import_would(tmp_path: Path) -> None:
    """``store_sessions`` (the solver's way in): validated, by identity, unchanged ones left alone."""
    from evalcore.importing import store_sessions
    from evalcore.schema import Session

    def session(sid: str, model: str, answer: str) -> Session:
        record = _native(sid, model, answer)
        del record["schema_version"]  # (a file's, not the model's)
        return Session.model_validate(record)

    with open_store(tmp_path / "e.db") as store:
        first = store_sessions(store, [session("t-1", "gpt", "Vienna"), session("t-1", "claude", "Wien")], "d", "task")
        assert (first.new, first.updated, first.failed) == (2, 0, 0)
        again = store_sessions(store, [session("t-1", "gpt", "Vienna"), session("t-1", "claude", "Vienna")], "d", "t")
        assert (again.new, again.updated, again.unchanged) == (0, 1, 1)
        bad = Session.model_validate({"session_id": "t-2", "messages": [{"role": "tool", "content": "orphan"}]})
        report = store_sessions(store, [bad], "d", "task")
        assert report.failed == 1 and "t-2: messages[0]" in report.problems[0].message
        assert len(store.sessions.browse("d").items) == 2


def test_each_assistants_session_has_a_link_of_its_own(tmp_path: Path) -> None:
    """Links (Sessions rows, Review's next and previous, the Dashboard) name one session each: the second
    assistant's session of a session_id is reached, never the first's in its place."""
    from evalcore.identity import session_label

    path = write_jsonl(
        tmp_path / "f.jsonl", [_native("t-1", "m1", "A"), _native("t-1", "m2", "B"), _native("u", "", "C")]
    )
    with open_store(tmp_path / "e.db") as store:
        import_file(store, path, "d")
        items = store.sessions.browse("d").items
        assert [s.link for s in items] == ['ida:["t-1","m1"]', 'ida:["t-1","m2"]', "u"]
        assert [s.ref for s in items] == ["t-1", "t-1", "u"]  # as exported: the session_id
        assert [store.sessions.find_ref("d", s.link) for s in items] == [s.pk for s in items]
        assert [store.sessions.get(s.pk).link for s in items] == [s.link for s in items]
        assert [session_label(s.link) for s in items] == ["t-1 · m1", "t-1 · m2", "u"]

"""The SQLite store on real files: import, export, ground truth, history, conflicts, browsing."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from dbutil import as_user
from formats_util import load_output, write_jsonl

from evalcore.errors import ConflictError, NotFoundError, SchemaVersionError, UsageError
from evalcore.exporting import export_dataset, manifest_path
from evalcore.importing import import_file
from evalcore.schema import validate_session
from evalcore.store import SCHEMA_VERSION, Store, open_store
from evalcore.store.queries import SessionFilter
from evalcore.store.search import fts5_query, terms

ROW = {
    "user_input": [
        {"content": "Is order 7 shipped?", "type": "human"},
        {"content": "", "type": "ai", "tool_calls": [{"name": "get_order", "args": {"id": 7}}]},
        {"content": '{"status": "shipped"}', "type": "tool"},
        {"content": "Yes, it shipped yesterday.", "type": "ai"},
        {"content": "And order 8?", "type": "human"},
        {"content": "Order 8 is still packing.", "type": "ai"},
    ],
    "reference_topics": ["orders"],
}


@pytest.fixture
def store(store_url: str) -> Store:
    with open_store(store_url) as s:
        yield s


def _gaussia(session_id: str, answer: str = "Sure.") -> dict[str, object]:
    return {
        "session_id": session_id,
        "assistant_id": "bot-a" if session_id < "m" else "bot-b",
        "context": "",
        "conversation": [
            {"qa_id": "q1", "query": f"hello from {session_id}", "assistant": answer, "ground_truth_assistant": ""},
            {
                "qa_id": "q2",
                "query": "what about refunds?",
                "assistant": "Within 30 days.",
                "ground_truth_assistant": "",
            },
        ],
    }


def test_migrations_are_applied_once_and_wal_is_on(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    open_store(path).close()
    open_store(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT count(*) FROM _sqlite_migrations").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    open_store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO _sqlite_migrations (migration_set, name, applied_at) VALUES ('evalcore', '9999_x', 'now')"
    )
    conn.commit()
    with pytest.raises(SchemaVersionError, match="newer evalcore"):
        open_store(path)


def test_ragas_import_then_export_gives_back_the_file(store: Store, ragas_reference: Path, tmp_path: Path) -> None:
    source = ragas_reference / "ragas_samples.jsonl"
    report = import_file(store, source, "ref")
    assert (report.new, report.updated, report.unchanged, report.failed) == (300, 0, 0, 0)
    out = tmp_path / "out.jsonl"
    exported = export_dataset(store, "ref", out, "ragas")
    assert exported.count == 300
    assert out.read_bytes() == source.read_bytes()
    manifest = json.loads(manifest_path(out).read_text())
    assert manifest["count"] == 300 and manifest["format"] == "ragas" and manifest["dataset"] == "ref"
    assert manifest["store_schema_version"] == SCHEMA_VERSION and len(manifest["sha256"]) == 64


def test_reimport_is_idempotent(store: Store, ragas_reference: Path) -> None:
    source = ragas_reference / "ragas_samples.jsonl"
    import_file(store, source, "ref")
    again = import_file(store, source, "ref")
    assert (again.new, again.updated, again.unchanged) == (0, 0, 300)
    assert store.datasets.get("ref").sessions == 300


def test_ground_truth_survives_a_changed_reimport(store: Store, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "s.jsonl", [_gaussia("s-1"), _gaussia("s-2")])
    import_file(store, source, "d")
    pk = store.sessions.find("d", "s-1")
    version = store.sessions.get(pk).version
    version = as_user(store, "ana").sessions.save(pk, {"reference": "Hello! How can I help?"}, base_version=version)
    version = as_user(store, "ana").sessions.save(
        pk, {"observation": "too terse", "weight": 0.7}, base_version=version, turn=0
    )
    write_jsonl(source, [_gaussia("s-1", answer="Hi there, happy to help."), _gaussia("s-2")])
    report = import_file(store, source, "d")
    assert (report.new, report.updated, report.unchanged) == (0, 1, 1)
    stored = store.sessions.get(pk)
    assert stored.version == version + 1
    assert stored.session.turns()[0].answer == "Hi there, happy to help."
    assert stored.session.reference == "Hello! How can I help?"
    assert stored.session.turn_truth[0].observation == "too terse" and stored.session.turn_truth[0].weight == 0.7
    assert [e.field for e in store.sessions.history(pk)][-1] == "conversation"


def test_history_restores_an_earlier_value(store: Store, tmp_path: Path) -> None:
    import_file(store, write_jsonl(tmp_path / "s.jsonl", [ROW]), "d")
    (pk,) = store.sessions.pks("d")
    v = as_user(store, "ana").sessions.save(pk, {"reference": "first"}, base_version=1)
    v = as_user(store, "ben").sessions.save(
        pk, {"reference": "second", "status": "approved"}, base_version=v, reason="clearer"
    )
    v = as_user(store, "cy").sessions.save(pk, {"reference": "third"}, base_version=v)
    history = store.sessions.history(pk)
    assert [(e.author, e.field, e.old, e.new) for e in history] == [
        ("ana", "reference", None, "first"),
        ("ben", "reference", "first", "second"),
        ("ben", "status", "todo", "approved"),
        ("cy", "reference", "second", "third"),
    ]
    assert history[1].reason == "clearer" and history[1].version == 3
    assert store.sessions.state_at(pk, history[0].id).reference == "first"
    v = as_user(store, "dee").sessions.restore(pk, history[0].id, base_version=v)
    restored = store.sessions.get(pk)
    assert restored.session.reference == "first" and restored.session.status == "todo"
    assert (
        restored.version == v
        and store.sessions.history(pk)[-1].reason == f"restored to the state after edit #{history[0].id}"
    )


def test_a_stale_save_is_refused_and_names_who_changed_what(store: Store, tmp_path: Path) -> None:
    import_file(store, write_jsonl(tmp_path / "s.jsonl", [ROW]), "d")
    (pk,) = store.sessions.pks("d")
    as_user(store, "ana").sessions.save(pk, {"reference": "mine"}, base_version=1)
    as_user(store, "ana").sessions.save(pk, {"observation": "x"}, base_version=2, turn=1)
    with pytest.raises(ConflictError) as caught:
        as_user(store, "ben").sessions.save(pk, {"reference": "theirs"}, base_version=1)
    message = str(caught.value)
    assert "ana" in message and "reference" in message and "turns[1].observation" in message
    assert caught.value.current_version == 3
    assert store.sessions.get(pk).session.reference == "mine"


def test_invalid_edits_are_refused_with_the_field(store: Store, tmp_path: Path) -> None:
    import_file(store, write_jsonl(tmp_path / "s.jsonl", [ROW]), "d")
    (pk,) = store.sessions.pks("d")
    with pytest.raises(UsageError, match=r"turns\[0\].weight: Input should be greater than or equal to 0"):
        as_user(store, "ana").sessions.save(pk, {"weight": -1}, base_version=1, turn=0)
    with pytest.raises(UsageError, match="turn 5 does not exist"):
        as_user(store, "ana").sessions.save(pk, {"observation": "x"}, base_version=1, turn=5)
    with pytest.raises(UsageError, match="cannot edit messages"):
        as_user(store, "ana").sessions.save(pk, {"messages": []}, base_version=1)
    as_user(store, "ana").sessions.save(pk, {"reference": "r"}, base_version=1)
    with pytest.raises(UsageError, match="status"):
        as_user(store, "ana").sessions.set_status(pk, "done", base_version=2)
    assert store.sessions.get(pk).version == 2 and len(store.sessions.history(pk)) == 1
    # A reference answer and expected facts may both be set (issue 24): no longer "give only one".
    as_user(store, "ana").sessions.save(pk, {"expected_facts": ["a"]}, base_version=2)
    both = store.sessions.get(pk).session
    assert (both.reference, both.expected_facts) == ("r", ["a"])
    with pytest.raises(UsageError, match="reference: Input should be a valid string"):
        as_user(store, "ana").sessions.save(pk, {"reference": ["not", "text"]}, base_version=3)
    # A save checks the changed field alone (as a read lays an edit over the file's session): right only while
    # the model checks no field against another.
    from evalcore.schema import Session

    assert not Session.__pydantic_decorators__.model_validators


def test_curated_ground_truth_is_merged_into_every_export(store: Store, tmp_path: Path) -> None:
    import_file(store, write_jsonl(tmp_path / "s.jsonl", [ROW]), "d")
    (pk,) = store.sessions.pks("d")
    v = as_user(store, "ana").sessions.save(pk, {"reference": "Order 7 shipped; 8 is packing."}, base_version=1)
    v = as_user(store, "ana").sessions.save(pk, {"ground_truth": "It shipped.", "weight": 0.25}, base_version=v, turn=0)
    export_dataset(store, "d", tmp_path / "r.jsonl", "ragas")
    assert load_output(tmp_path / "r.jsonl")[0]["reference"] == "Order 7 shipped; 8 is packing."
    export_dataset(store, "d", tmp_path / "g.jsonl", "gaussia")
    batches = load_output(tmp_path / "g.jsonl")[0]["conversation"]
    assert [b["ground_truth_assistant"] for b in batches] == ["It shipped.", "Order 7 shipped; 8 is packing."]
    assert batches[0]["weight"] == 0.25
    export_dataset(store, "d", tmp_path / "d.jsonl", "databricks")
    assert load_output(tmp_path / "d.jsonl")[0]["expected_response"] == "Order 7 shipped; 8 is packing."
    export_dataset(store, "d", tmp_path / "e.jsonl", "evalcore")
    row = load_output(tmp_path / "e.jsonl")[0]
    assert row["turn_truth"][0] == {"ground_truth": "It shipped.", "weight": 0.25}


def test_a_page_gives_the_whole_count_wherever_it_is(store: Store, tmp_path: Path) -> None:
    """A page not full tells the count without counting (the last one); every other page counts: the total is the
    number of matches on every page, before, at and past the end, for a page size of 0 too."""
    import_file(store, write_jsonl(tmp_path / "s.jsonl", [_gaussia(f"s-{i:03d}") for i in range(23)]), "d")
    pk = store.sessions.find("d", "s-004")
    as_user(store, "ana").sessions.save(pk, {"status": "flagged"}, base_version=1)
    for filters, matches in ((None, 23), (SessionFilter(status=["flagged"]), 1), (SessionFilter(status=["todo"]), 22),
                             (SessionFilter(assistant="nobody"), 0)):  # fmt: skip
        for limit in (0, 1, 5, 10, 22, 23, 24, 50):
            for offset in (0, 1, 5, 10, 20, 22, 23, 24, 30, 100):
                page = store.sessions.browse("d", filters, limit=limit, offset=offset)
                assert page.total == matches, (filters, limit, offset)
                assert len(page.items) == max(0, min(limit, matches - offset))


def test_pages_walk_every_sort_in_its_order_whatever_the_offset(store: Store, tmp_path: Path) -> None:
    """Every sort, both ways, read page by page (7 a page, PostgreSQL's ids-first pages included) gives the
    sessions in the sort's order (NULLs first ascending, last descending; ties by import order), each once."""
    rows = [_gaussia(f"s-{i:02d}") for i in range(30)]
    for i, row in enumerate(rows):
        row["conversation"] = row["conversation"][: 1 + i % 2]  # type: ignore[index]
        if i % 4 == 0:
            del row["assistant_id"]
    import_file(store, write_jsonl(tmp_path / "s.jsonl", rows), "d")
    for i, pk in enumerate(store.sessions.pks("d")[::3]):
        as_user(store, "ana").sessions.save(pk, {"status": ["flagged", "approved", "todo"][i % 3]}, base_version=1)
    every = store.sessions.browse("d", limit=100).items
    value = {"order": lambda r: r.pk, "session_id": lambda r: r.session_id, "assistant": lambda r: r.assistant_id,
             "status": lambda r: r.status, "turns": lambda r: r.n_turns, "tool_calls": lambda r: r.n_tool_calls,
             "updated": lambda r: r.updated_at}  # fmt: skip
    for sort, of in value.items():
        for descending in (False, True):
            paged = []
            for offset in range(0, 35, 7):
                paged += store.sessions.browse("d", sort=sort, descending=descending, limit=7, offset=offset).items
            ranked = sorted(every, key=lambda r: (of(r) is not None, of(r) if of(r) is not None else 0, r.pk))
            expected = ranked[::-1] if descending else ranked
            assert [r.pk for r in paged] == [r.pk for r in expected], (sort, descending)


def test_bad_records_are_reported_by_line_and_good_ones_stored(store: Store, tmp_path: Path) -> None:
    source = tmp_path / "mixed.jsonl"
    source.write_text(
        "\n".join([json.dumps(_gaussia("a")), "{oops", json.dumps(_gaussia("b")), json.dumps(_gaussia("a"))]) + "\n"
    )
    report = import_file(store, source, "d")
    assert (report.new, report.failed) == (2, 2)
    lines = [str(p) for p in report.problems]
    assert lines[0].startswith(f"{source}:2: not valid JSON")
    assert lines[1] == f"{source}:4: session 'a' (assistant 'bot-a') appears again (first on line 1); skipped"
    assert store.datasets.get("d").sessions == 2


def test_browse_filters_sorts_searches_and_paginates(store: Store, tmp_path: Path) -> None:
    rows = [_gaussia(f"s-{i:03d}") for i in range(120)]
    rows[7]["conversation"][0]["query"] = "my parcel to Zürich is late"  # type: ignore[index]
    import_file(store, write_jsonl(tmp_path / "s.jsonl", rows), "d")
    first = store.sessions.browse("d", limit=50)
    assert first.total == 120 and [s.session_id for s in first.items][:2] == ["s-000", "s-001"]
    third = store.sessions.browse("d", limit=50, offset=100)
    assert len(third.items) == 20 and third.items[-1].session_id == "s-119"
    pk = store.sessions.find("d", "s-042")
    as_user(store, "ana").sessions.save(pk, {"status": "flagged", "tags": ["hard", "refunds"]}, base_version=1)
    flagged = store.sessions.browse("d", SessionFilter(status=["flagged"]))
    assert [s.session_id for s in flagged.items] == ["s-042"] and flagged.items[0].tags == ["hard", "refunds"]
    assert store.sessions.browse("d", SessionFilter(tags=["hard", "refunds"])).total == 1
    assert store.sessions.browse("d", SessionFilter(tags=["hard", "nope"])).total == 0
    assert store.sessions.browse("d", SessionFilter(assistant="bot-b")).total == 120
    assert store.sessions.browse("d", SessionFilter(assistant="bot-a")).total == 0
    hits = store.sessions.browse("d", SessionFilter(search="zurich"))  # diacritics folded
    assert [s.session_id for s in hits.items] == ["s-007"]
    assert store.sessions.browse("d", SessionFilter(search="parc*")).total == 1
    assert store.sessions.browse("d", SessionFilter(search='refunds "')).total == 120  # stray quotes are harmless
    newest = store.sessions.browse("d", sort="updated", descending=True, limit=1)
    assert newest.items[0].session_id == "s-042"
    v = store.sessions.get(pk).version
    as_user(store, "ana").sessions.save(pk, {"reference": "ship to Zürich tomorrow"}, base_version=v)
    assert store.sessions.browse("d", SessionFilter(search="tomorrow")).total == 1  # ground truth is searchable
    with pytest.raises(UsageError):
        store.sessions.browse("d", sort="nope")


def test_export_filters_and_unknown_dataset(store: Store, tmp_path: Path) -> None:
    import_file(store, write_jsonl(tmp_path / "s.jsonl", [_gaussia("a"), _gaussia("b"), _gaussia("c")]), "d")
    pk = store.sessions.find("d", "b")
    as_user(store, "ana").sessions.set_status(pk, "approved", base_version=1)
    report = export_dataset(store, "d", tmp_path / "o.jsonl", "gaussia", SessionFilter(status=["approved"]))
    assert report.count == 1 and [r["session_id"] for r in load_output(tmp_path / "o.jsonl")] == ["b"]
    assert json.loads(manifest_path(tmp_path / "o.jsonl").read_text())["filters"] == {"status": ["approved"]}
    with pytest.raises(NotFoundError, match="no dataset named 'nope'; known: d"):
        export_dataset(store, "nope", tmp_path / "x.jsonl", "ragas")
    assert not (tmp_path / "x.jsonl").exists()


def test_comments(store: Store, tmp_path: Path) -> None:
    import_file(store, write_jsonl(tmp_path / "s.jsonl", [ROW]), "d")
    (pk,) = store.sessions.pks("d")
    as_user(store, "ana").labels.add_comment(pk, "Tool result looks stale", turn=0)
    assert [(c.author, c.turn, c.body) for c in store.labels.comments(pk)] == [("ana", 0, "Tool result looks stale")]
    with pytest.raises(UsageError):
        as_user(store, "ana").labels.add_comment(pk, "  ")


def test_tau_bench_sessions_keep_identity_and_scores(store: Store, tau_bench_file: Path, tmp_path: Path) -> None:
    report = import_file(store, tau_bench_file, "tau")
    assert report.new == 40 and report.format == "tau-bench"
    pk = store.sessions.find("tau", "task-0-trial-0")
    stored = store.sessions.get(pk)
    assert stored.session.scores == {"reward": 0.0} and stored.session.reference_tool_calls
    # "baggage" is a word of the airline policy, the system prompt of every session: found only when asked
    assert store.sessions.browse("tau", SessionFilter(search="baggage", search_system_prompt=True)).total == 40
    assert store.sessions.browse("tau", SessionFilter(search="baggage")).total < 40
    assert store.sessions.browse("tau", SessionFilter(search="get_user_details")).total > 0  # a tool's name
    assert fts5_query(terms('certificate "x'), system=True) == '"certificate" "x"'
    assert fts5_query(terms('certificate "x')) == '{search_text} : ("certificate" "x")'


def test_restore_is_one_save_and_swapped_qa_ids_are_fine(store: Store, tmp_path: Path) -> None:
    import_file(store, write_jsonl(tmp_path / "s.jsonl", [ROW]), "d")
    (pk,) = store.sessions.pks("d")
    v = as_user(store, "ana").sessions.save(pk, {"qa_id": "x"}, base_version=1, turn=0)
    v = as_user(store, "ana").sessions.save(pk, {"qa_id": "y"}, base_version=v, turn=1)
    first = store.sessions.history(pk)[-1].id
    v = as_user(store, "ben").sessions.save(pk, {"qa_id": "tmp"}, base_version=v, turn=0)
    v = as_user(store, "ben").sessions.save(pk, {"qa_id": "x"}, base_version=v, turn=1)
    v = as_user(store, "ben").sessions.save(pk, {"qa_id": "y"}, base_version=v, turn=0)
    v = as_user(store, "ben").sessions.save(pk, {"reference": "r"}, base_version=v)
    assert [t.qa_id for t in store.sessions.get(pk).session.turn_truth] == ["y", "x"]
    restored = as_user(store, "cy").sessions.restore(pk, first, base_version=v)
    assert restored == v + 1  # every field back in one version
    stored = store.sessions.get(pk)
    assert [t.qa_id for t in stored.session.turn_truth] == ["x", "y"] and stored.session.reference is None


def test_a_reimport_that_drops_turns_leaves_the_session_editable(store: Store, tmp_path: Path) -> None:
    source = write_jsonl(tmp_path / "s.jsonl", [_gaussia("s-1")])
    import_file(store, source, "d")
    pk = store.sessions.find("d", "s-1")
    v = as_user(store, "ana").sessions.save(pk, {"ground_truth": "about refunds"}, base_version=1, turn=1)
    shorter = _gaussia("s-1")
    shorter["conversation"] = shorter["conversation"][:1]  # type: ignore[index]
    write_jsonl(source, [shorter])
    assert import_file(store, source, "d").updated == 1
    v = store.sessions.get(pk).version
    v = as_user(store, "ana").sessions.set_status(pk, "approved", base_version=v)  # not blocked by the stale turn
    v = as_user(store, "ana").sessions.save(pk, {"ground_truth": None}, base_version=v, turn=1)  # and it can be cleared
    session = store.sessions.get(pk).session
    assert len(session.turn_truth) == 1 and session.status == "approved"  # the cleared turn is gone
    assert not [p for p in validate_session(session) if p.level == "error"]


def test_filters_that_cannot_mean_anything_are_refused(store: Store, tmp_path: Path) -> None:
    import_file(store, write_jsonl(tmp_path / "s.jsonl", [_gaussia("a")]), "d")
    with pytest.raises(UsageError, match="has no word to look for"):
        store.sessions.browse("d", SessionFilter(search="!!!"))
    with pytest.raises(UsageError, match="needs both a run and a metric"):
        store.sessions.browse("d", SessionFilter(min_score=0.5))
    with pytest.raises(UsageError, match="needs both a run and a metric"):
        store.sessions.browse("d", SessionFilter(metric="exact_match"))
    with pytest.raises(NotFoundError, match="no run #99"):
        export_dataset(store, "d", tmp_path / "o.jsonl", "ragas", SessionFilter(run_id=99, metric="m"))
    assert store.sessions.browse("d", SessionFilter(search="  ")).total == 1  # blank: no filter


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    from evalcore.errors import StoreError

    not_db = tmp_path / "notes.txt"
    not_db.write_text("hello, this is not SQLite\n" * 100)
    with pytest.raises(StoreError, match="cannot open the database .*notes.txt"):
        open_store(not_db)


def test_metadata_of_reads_one_key_of_each_session_from_the_stored_json(store: Store, tmp_path: Path) -> None:

    def native(i: int, assistant: str, metadata: dict[str, object]) -> dict[str, object]:
        messages = [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": "a"}]
        return {"schema_version": 1, "session_id": f"s{i}", "assistant_id": assistant, "messages": messages,
                "metadata": metadata}  # fmt: skip

    records = [
        native(1, "m1", {"solver": {"sample_key": "k1", "nested": [1, {"x": None}]}}),
        native(2, "m1", {"solver": "text", "a.b": 3}),
        native(3, "m1", {}),
        native(4, "m2", {"solver": {"sample_key": "k4"}}),
    ]
    import_file(store, write_jsonl(tmp_path / "m.jsonl", records), "d", workers=1)
    mine = list(store.sessions.metadata_of("d", "solver", SessionFilter(assistant="m1")))
    assert mine == [("s1", {"sample_key": "k1", "nested": [1, {"x": None}]}), ("s2", "text"), ("s3", None)]
    assert [v for _, v in store.sessions.metadata_of("d", "a.b")] == [None, 3, None, None]  # a key, not a path
    with pytest.raises(NotFoundError):
        list(store.sessions.metadata_of("nope", "solver"))


def test_a_row_holds_the_sessions_own_title_counts_and_search_text() -> None:
    """``row_for`` counts in one pass what the session's own methods say: over every sample file's sessions and
    odd ones (content blocks, no content, no user message, a system preamble, tags)."""
    from apptest_util import SAMPLE_DATA

    from evalcore.formats import read_path
    from evalcore.schema import Message, Session, ToolCall
    from evalcore.store.rows import row_for

    sessions: list[Session] = []
    for path in sorted(SAMPLE_DATA.iterdir()):
        if path.suffix in (".json", ".jsonl"):
            with read_path(path) as results:
                sessions += [r.session for r in results if r.session is not None]
    blocks = [{"type": "input_text", "text": "block one"}, {"type": "image"}, {"type": "refusal", "refusal": "no"}]
    sessions += [
        Session(messages=[Message(role="system", content="be kind"), Message(role="user", content=blocks),
                          Message(role="assistant", content=None), Message(role="user", content="second")],
                tags=["b", "a"], reference="ref", expected_facts=["fact"]),
        Session(messages=[Message(role="assistant", content="alone")]),
        Session(messages=[Message(role="user", content="go"), Message(role="assistant", content=None, tool_calls=[
            ToolCall(name="find", args={"città": "Zürich \u2028\"quoted\"", "n": [1, 2.5, None, True, -0.0],
                                        "deep": {"x": float("nan"), "y": float("inf"), "big": 10**30}}),
            ToolCall(name="", args={}), ToolCall(name="none", args={"": ""})])]),
        Session(),
    ]  # fmt: skip
    assert len(sessions) > 40
    for session in sessions:
        row = row_for(1, "f.jsonl", session)
        users = [m for m in session.messages if m.role == "user"]
        assert row.title == (users[0].text[:200] if users else "")
        assert (row.n_turns, row.n_messages, row.n_tool_calls) == (
            session.n_turns(),
            len(session.messages),
            len(session.tool_calls()),
        )
        texts = [m.text for m in session.messages if m.role != "system"]
        for m in session.messages:  # every call's name and arguments
            for call in m.tool_calls or []:
                texts += [call.name, json.dumps(call.args, ensure_ascii=False) if call.args else ""]
        texts += [session.goal or "", session.reference or "", *(session.expected_facts or [])]
        texts += [t.ground_truth or "" for t in session.turn_truth] + [t.observation or "" for t in session.turn_truth]
        assert row.search_text == "\n".join(t for t in texts if t)
        system = [session.context or "", *(m.text for m in session.messages if m.role == "system")]
        assert row.system_text == "\n".join(t for t in system if t)
        assert json.loads(row.tags) == session.tags and row.tag_list == tuple(session.tags)
    assert row_for(1, "f", sessions[-4]).title == "block one\nno"

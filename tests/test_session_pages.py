"""Review's paged reading of a large session (``Sessions.page``, ``evalcore.store.parts``), on both engines: a page
read from the page index holds exactly what slicing the whole session gives — its messages, its turns' ground
truth, every turn's weight, the session's own fields — before and after reviewers' saves and a re-import; small
sessions are read whole; the index is deleted with its dataset and copied with the store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user, execute, query
from formats_util import write_jsonl
from huge_session import LONG_EVERY, record, write

from evalcore.importing import import_file
from evalcore.schema import Session, TurnTruth
from evalcore.store import Store, open_store
from evalcore.store.copy import copy_store
from evalcore.store.parts import PAGED_MESSAGES, PART_MESSAGES
from evalcore.store.records import SessionPage

N_MESSAGES = 9_000  # a few thousand turns of four messages, and a long turn (cut inside) at turn 996


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    with open_store(store_url) as s:
        yield as_user(s, "ann", "owner")


def _imported(store: Store, tmp_path: Path, n_messages: int = N_MESSAGES) -> int:
    path = write(tmp_path / "huge.jsonl", "huge", n_messages, others=[record("small", 40)])
    report = import_file(store, path, "d", workers=1)
    assert report.failed == 0 and report.new == 2, [str(p) for p in report.problems]
    return store.sessions.find("d", "huge")


def _expected(full: Session, first: int, count: int) -> tuple[list[Any], dict[int, TurnTruth]]:
    """What a page should hold, sliced from the whole session."""
    turns = full.turns()
    messages = list(full.preamble()) if first == 0 else []
    for turn in turns[first : first + count]:
        messages += turn.messages
    truth = {
        t.index: full.turn_truth[t.index] if t.index < len(full.turn_truth) else TurnTruth()
        for t in turns[first : first + count]
    }
    return messages, truth


def _windows(n_turns: int) -> list[tuple[int, int]]:
    return [(0, 4), (4, 4), (LONG_EVERY - 2, 4), (LONG_EVERY - 1, 1), (n_turns // 2, 4), (n_turns - 3, 4),
            (n_turns - 1, 4), (n_turns, 4), (0, n_turns)]  # fmt: skip


def _check(store: Store, pk: int) -> SessionPage:
    """Every window's page against the whole session; the last page read."""
    whole = store.sessions.get(pk)
    full = whole.session
    n_turns = full.n_turns()
    page = store.sessions.page(pk, 0, 4)
    for first, count in _windows(n_turns):
        page = store.sessions.page(pk, first, count)
        assert not page.whole
        messages, truth = _expected(full, first, count)
        assert page.stored.session.messages == messages, (first, count)
        assert page.truth == truth, (first, count)
        assert page.stored.session.turn_truth == list(truth.values())
        assert page.first_turn == min(first, n_turns) and page.n_turns == n_turns
        assert page.weights == [full.turn_truth[t].weight if t < len(full.turn_truth) else None for t in range(n_turns)]
        assert page.final_answer == full.final_answer()
        assert (page.n_messages, page.n_tool_calls) == (len(full.messages), len(full.tool_calls()))
        mine = page.stored.session.model_dump(exclude={"messages", "turn_truth"})
        assert mine == full.model_dump(exclude={"messages", "turn_truth"})
        assert (page.stored.version, page.stored.link, page.stored.n_edits) == (
            whole.version,
            whole.link,
            whole.n_edits,
        )
    return page


def test_a_page_is_the_slice_of_the_whole_session(store: Store, tmp_path: Path) -> None:
    pk = _imported(store, tmp_path)
    (n_parts,) = query(store, "SELECT count(*) FROM session_parts WHERE session_pk = ?", [pk])[0]
    assert n_parts > N_MESSAGES // (PART_MESSAGES * 4)  # an index was written, in parts
    _check(store, pk)
    # One page reads the parts that hold its turns, not the others.
    assert len(store.sessions.page(pk, 10, 4).stored.session.messages) < 4 * 10


def test_a_page_after_saves_restores_and_a_reimport(store: Store, tmp_path: Path) -> None:
    pk = _imported(store, tmp_path)
    version = store.sessions.get(pk).version
    n_turns = store.sessions.page(pk, 0, 0).n_turns
    # A turn on the first page, one in the middle, the last one, a turn beyond the truth the file gave.
    version = store.sessions.save(pk, {"ground_truth": "edited 1", "weight": 0.2}, base_version=version, turn=1)
    version = store.sessions.save(pk, {"observation": "seen", "qa_id": "mid"}, base_version=version, turn=n_turns // 2)
    version = store.sessions.save(pk, {"weight": 0.05}, base_version=version, turn=n_turns - 1)
    version = store.sessions.save(pk, {"ground_truth": None, "weight": None}, base_version=version, turn=0)
    version = store.sessions.save(pk, {"reference": "edited reference", "goal": None}, base_version=version)
    version = store.sessions.save(pk, {"status": "flagged", "tags": ["x"]}, base_version=version)
    _check(store, pk)
    page = store.sessions.page(pk, 0, 4)
    assert page.truth[1].ground_truth == "edited 1" and page.weights[1] == 0.2 and page.truth[0].weight is None
    assert page.stored.session.reference == "edited reference" and page.stored.session.status == "flagged"
    # Back to the state after the first save, then the file imported again with a changed conversation.
    first_edit = store.sessions.history(pk)[0].id
    store.sessions.restore(pk, first_edit, base_version=version)
    _check(store, pk)
    write(tmp_path / "again.jsonl", "huge", N_MESSAGES - 700, others=[record("small", 40)])
    report = import_file(store, tmp_path / "again.jsonl", "d", workers=1)
    assert report.updated == 1, [str(p) for p in report.problems]
    page = _check(store, pk)
    assert page.n_messages < N_MESSAGES and page.n_turns < n_turns  # the new conversation; an edited turn beyond it
    assert store.sessions.page(pk, 0, 4).n_messages == len(store.sessions.get(pk).session.messages)


def test_a_small_session_is_read_whole(store: Store, tmp_path: Path) -> None:
    _imported(store, tmp_path)
    pk = store.sessions.find("d", "small")
    page = store.sessions.page(pk, 4, 4)
    whole = store.sessions.get(pk).session
    assert page.whole and page.first_turn == 0 and page.stored.session == whole
    assert page.truth == {
        t: whole.turn_truth[t] if t < len(whole.turn_truth) else TurnTruth() for t in range(page.n_turns)
    }
    assert query(store, "SELECT count(*) FROM session_parts WHERE session_pk = ?", [pk]) == [(0,)]


def test_a_session_at_the_threshold_has_no_index(store: Store, tmp_path: Path) -> None:
    at = record("at", PAGED_MESSAGES)
    at["messages"] = at["messages"][:PAGED_MESSAGES]
    report = import_file(store, write_jsonl(tmp_path / "at.jsonl", [at, record("over", PAGED_MESSAGES + 10)]), "d")
    assert report.new == 2
    counts = dict(query(store, "SELECT s.session_id, count(p.part) FROM sessions s LEFT JOIN session_parts p "
                               "ON p.session_pk = s.id GROUP BY s.session_id"))  # fmt: skip
    assert counts["at"] == 0 and counts["over"] > 1
    assert not store.sessions.page(store.sessions.find("d", "over"), 0, 4).whole


def test_the_index_goes_with_its_dataset_and_its_copy(store: Store, tmp_path: Path) -> None:
    pk = _imported(store, tmp_path)
    store.sessions.save(pk, {"ground_truth": "kept"}, base_version=store.sessions.get(pk).version, turn=2)
    with open_store(str(tmp_path / "copy.db")) as other:
        copy_store(store, other)
        copied = other.sessions.page(pk, 0, 4)
        assert not copied.whole and copied.truth == store.sessions.page(pk, 0, 4).truth
        assert copied.stored.session.messages == store.sessions.page(pk, 0, 4).stored.session.messages
    store.datasets.delete("d", confirm="d")
    assert query(store, "SELECT count(*) FROM session_parts") == [(0,)]


def test_a_large_session_stored_before_the_index_is_read_whole(store: Store, tmp_path: Path) -> None:
    """A session stored before migration 0016 (no index beside it) is read whole, as before, until re-imported."""
    pk = _imported(store, tmp_path)
    execute(store, "DELETE FROM session_parts WHERE session_pk = ?", [pk])
    page = store.sessions.page(pk, 8, 4)
    assert page.whole and page.stored.session == store.sessions.get(pk).session
    path = write(tmp_path / "again.jsonl", "huge", N_MESSAGES + 8)
    assert import_file(store, path, "d", workers=1).updated == 1
    assert not store.sessions.page(pk, 8, 4).whole
    _check(store, pk)


def test_the_page_of_turns_review_reads(store: Store, tmp_path: Path) -> None:
    """``read_turn_page``: the page asked for, a page past the end read as the last; a link's ``turn=`` page."""
    from evalcore.views.review.transcript import read_turn_page, turn_page_of_link

    pk = _imported(store, tmp_path)
    n_turns = store.sessions.get(pk).session.n_turns()
    last = -(-n_turns // 4)
    window = read_turn_page(store.sessions, pk, 2, 4)
    assert (window.number, window.pages, window.read.first_turn, len(window.read.truth)) == (2, last, 4, 4)
    beyond = read_turn_page(store.sessions, pk, last + 10, 4)
    assert (beyond.number, beyond.read.first_turn) == (last, (last - 1) * 4)
    assert read_turn_page(store.sessions, pk, 0, 4).number == 1
    assert [turn_page_of_link(t, 4) for t in ("1", "4", "5", "0", "x", None, "²")] == [1, 1, 2, 1, None, None, None]

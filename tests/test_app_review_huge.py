"""Review on a large session (200,000 messages, ``tests/huge_session.py``), run for real with AppTest: it reads and
keeps only the page of turns it shows (``Sessions.page``), pages through the turns, opens a linked turn's page, saves
a turn's ground truth, and shows the whole-session tabs (weights, diff, history)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from apptest_util import (  # noqa: F401 (fixtures)
    SAMPLE_DATA,
    by_prefix,
    copy_db,
    open_page,
    person,
    run,
    template_db_fixture,
    texts,
)
from apptest_util import app as new_app
from dbutil import as_user
from huge_session import write
from streamlit.testing.v1 import AppTest

from evalcore.importing import import_file
from evalcore.store import Store, open_store

N_MESSAGES = 200_000


@pytest.fixture(scope="module", name="huge_template")
def huge_template_fixture(template_db: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    """The app's template database with the session imported into the dataset ``huge`` (once for the module): its
    file, the session's pk and its number of turns."""
    folder = tmp_path_factory.mktemp("huge")
    path = copy_db(template_db, folder / "huge.db")
    with open_store(path) as store:
        report = import_file(as_user(store, "importer"), write(folder / "huge.jsonl", "huge", N_MESSAGES), "huge")
        assert report.new == 1 and not report.failed, [str(p) for p in report.problems]
        pk = store.sessions.find("huge", "huge")
        return path, pk, store.sessions.page(pk, 0, 0).n_turns


@pytest.fixture(name="huge")
def huge_fixture(
    huge_template: tuple[Path, int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, int]:
    """This test's own copy of that database, as the app's: the session's pk and number of turns."""
    path, pk, n_turns = huge_template
    monkeypatch.setenv("EVALCORE_DB", str(copy_db(path, tmp_path / "x.db")))
    monkeypatch.setenv("EVALCORE_SAMPLE_DATA", str(SAMPLE_DATA))
    return pk, n_turns


@pytest.fixture(name="store")
def store_fixture(huge: tuple[int, int]) -> Iterator[Store]:
    with open_store() as store:
        yield store


def _review(**query: str) -> AppTest:
    at = person(new_app(dataset="huge", session="huge", **query), "ann")
    return open_page(run(at), "review")


def _kept(at: AppTest, pk: int) -> int:
    """How many messages the browser session keeps of the session (its forms' base)."""
    return len(at.session_state["review_base"][pk]["session"].messages)


def test_review_reads_a_page_of_a_huge_session(huge: tuple[int, int]) -> None:
    pk, n_turns = huge
    at = _review()
    assert f"Turns 1–4 of {n_turns}" in texts(at, "caption")
    said = " ".join(md.value for m in at.chat_message for md in m.markdown)
    assert "Question 0" in said and "Question 3" in said and "Question 4" not in said
    assert texts(at, "caption")[0].startswith(f"**todo** · bot · {n_turns} turns")
    assert _kept(at, pk) < 40  # the preamble and four turns, not 200,000 messages
    at.button(key="turns_on").click()
    run(at)
    assert f"Turns 5–8 of {n_turns}" in texts(at, "caption") and at.query_params["turn"] == "5"
    said = " ".join(md.value for m in at.chat_message for md in m.markdown)
    assert "Question 4" in said and "Question 0" not in said
    assert "**Turn 5** of " + str(n_turns) in texts(at, "markdown")


def test_a_link_opens_the_last_page_of_a_huge_session(huge: tuple[int, int]) -> None:
    _pk, n_turns = huge
    at = _review(turn=str(n_turns))
    first = (n_turns - 1) // 4 * 4 + 1
    assert f"Turns {first}–{n_turns} of {n_turns}" in texts(at, "caption")
    assert f"**Turn {n_turns}** of {n_turns}" in texts(at, "markdown")


def test_saving_a_turn_of_a_huge_session(huge: tuple[int, int], store: Store) -> None:
    pk, n_turns = huge
    at = _review(turn="6")
    assert _kept(at, pk) < 40
    by_prefix(at.text_area, "t-gt-5-").input("Shipped on Monday.")
    by_prefix(at.text_input, "t-qa-5-").input("q6")
    by_prefix(at.button, "FormSubmitter:turn-form-5-").click()
    run(at)
    assert "Turn 6 saved." in texts(at, "success")
    page = store.sessions.page(pk, 4, 4)
    assert (page.truth[5].ground_truth, page.truth[5].qa_id, page.stored.version) == ("Shipped on Monday.", "q6", 2)
    assert by_prefix(at.text_area, "t-gt-5-").value == "Shipped on Monday."  # the form shows what was saved
    assert _kept(at, pk) < 40
    # The whole-session tabs: the weights of the page's turns, the diff, the history.
    at.session_state["review_tab"] = "Weights"
    run(at)
    assert at.dataframe and len(at.dataframe[0].value) == 4
    at.session_state["review_tab"] = "Diff"
    run(at)
    assert any(c.startswith("The assistant's final answer against the reference answer") for c in texts(at, "caption"))
    at.session_state["review_tab"] = "History"
    run(at)
    assert at.dataframe and len(at.dataframe[0].value) == 2  # the two fields of turn 6

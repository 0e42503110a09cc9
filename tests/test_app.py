"""The app's frame (app.py), run for real with AppTest: sample data on first start, the sidebar's
dataset and reviewer, deep links, and a database that cannot be opened.

The pages have their own files: test_app_datasets.py, test_app_sessions.py, test_app_review.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from apptest_util import (  # noqa: F401 (fixtures)
    SAMPLE_DATA,
    all_text,
    app,
    db_fixture,
    fresh_db_fixture,
    open_page,
    run,
    store_fixture,
    template_db_fixture,
    texts,
)

from app_pages import _shared
from evalcore.samples import sample_dataset_name, sample_files
from evalcore.store import Store, open_store
from evalcore.views.text import literal_message


def _restart_server() -> None:
    """What a new server process starts with: no store opened yet (the samples are checked again)."""
    _shared._store.clear()


def test_first_start_loads_the_samples_once(fresh_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCORE_SAMPLE_DATA", str(SAMPLE_DATA))
    samples = sorted(sample_dataset_name(p) for p in sample_files(SAMPLE_DATA))
    assert len(samples) == 16
    at = run(app())
    assert at.selectbox(key="dataset").options == samples
    assert at.selectbox(key="dataset").value == samples[0]
    with open_store(fresh_db) as s:
        sizes = {d.name: d.sessions for d in s.datasets.all()}
    assert sorted(sizes) == samples and all(sizes.values())

    # The reviewer deletes a sample dataset: it never comes back, in this server or the next.
    at.selectbox(key="dataset").select("sample-ragas")
    run(at)
    at.text_input(key="delete_confirm").input("sample-ragas")
    run(at)
    at.button(key="delete").click()
    run(at)
    assert "sample-ragas" not in at.selectbox(key="dataset").options
    for restart in (False, True):
        if restart:
            _restart_server()
        again = run(app())
        assert again.selectbox(key="dataset").options == [n for n in samples if n != "sample-ragas"]
        with open_store(fresh_db) as s:
            assert {d.name: d.sessions for d in s.datasets.all()} == {
                k: v for k, v in sizes.items() if k != "sample-ragas"
            }


def test_no_sample_folder_means_no_dataset(fresh_db: Path) -> None:
    at = run(app())
    assert at.selectbox(key="dataset").options == []
    assert at.title[0].value == "Datasets"
    assert any("No dataset yet" in t for t in texts(at, "info"))
    for page in ("sessions", "review"):
        open_page(at, page)
        assert any("No dataset yet" in t for t in texts(at, "info")), page


def test_dataset_from_a_deep_link(db: Path) -> None:
    at = run(app())
    assert at.selectbox(key="dataset").value == "review"  # the first by name
    assert at.query_params["dataset"] == "review"
    at = run(app(dataset="shop"))
    assert at.selectbox(key="dataset").value == "shop"
    assert at.query_params["dataset"] == "shop"
    open_page(at, "sessions")
    assert any("of **30** sessions" in c for c in texts(at, "caption"))
    # A link to a dataset that does not exist: the first one, no error.
    at = run(app(dataset="no-such-thing"))
    assert at.selectbox(key="dataset").value == "review"
    assert not at.error


def test_the_sidebar_choice_wins_until_the_link_changes(db: Path) -> None:
    at = run(app(dataset="shop"))
    at.selectbox(key="dataset").select("review")
    run(at)
    assert at.selectbox(key="dataset").value == "review"
    assert at.query_params["dataset"] == "review"
    open_page(at, "sessions")
    assert at.selectbox(key="dataset").value == "review"
    assert any("of **3** sessions" in c for c in texts(at, "caption"))


def test_the_name_is_asked_once_and_kept(db: Path, store: Store) -> None:
    at = run(app(dataset="review", session="r-tools"))
    open_page(at, "review")
    assert any("Enter your name" in t for t in texts(at, "info"))
    assert at.button(key="approve").disabled
    at.text_input(key="your_name").input("  Ann  ")
    next(b for b in at.button if b.label == "Save name").click()
    run(at)
    assert store.users.local_named() and store.users.local().name == "Ann"  # trimmed, kept in the database
    for page in ("sessions", "review", "datasets", "review"):
        open_page(at, page)
        assert not any("Enter your name" in t for t in texts(at, "info")), page
    again = open_page(run(app(dataset="review", session="r-tools")), "review")  # a new tab, a reload, a deep link
    assert not any(w.key == "your_name" for w in again.text_input)
    again.button(key="flag").click()
    run(again)
    saved = store.sessions.get(store.sessions.find("review", "r-tools"))
    assert (saved.session.status, saved.status_by) == ("flagged", "Ann")


@pytest.mark.parametrize("kind", ["directory", "garbage"])
def test_a_database_that_cannot_be_opened(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "bad.db"
    if kind == "directory":
        path.mkdir()
    else:
        path.write_bytes(b"this is not a database\x00" * 100)
    monkeypatch.setenv("EVALCORE_DB", str(path))
    monkeypatch.setenv("EVALCORE_SAMPLE_DATA", str(SAMPLE_DATA))
    at = run(app(dataset="shop"))
    assert len(at.error) == 1
    message = at.error[0].value
    assert literal_message(f"cannot open the database {path}") in message  # (it names a file: shown as text)
    page = all_text(at)
    assert message in page and "Traceback" not in page and 'File "' not in page
    assert not at.title and not at.sidebar.selectbox  # no page, no frame
    if kind == "garbage":
        assert path.read_bytes().startswith(b"this is not a database")  # left as it was

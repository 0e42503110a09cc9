"""The Datasets page, run for real with AppTest: the table, importing a file, the sample data,
renaming and deleting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apptest_util import (  # noqa: F401 (fixtures)
    SAMPLE_DATA,
    app,
    db_fixture,
    fresh_db_fixture,
    person,
    plain_texts,
    run,
    shop_sessions,
    store_fixture,
    template_db_fixture,
    texts,
)
from dbutil import as_user
from formats_util import write_jsonl
from streamlit.testing.v1 import AppTest

from evalcore.background import wait_for
from evalcore.importing import import_file
from evalcore.samples import sample_dataset_name, sample_files
from evalcore.store import Store, open_store
from evalcore.views.text import literal_markdown


def _table(at: AppTest) -> dict[str, dict[str, object]]:
    frame = at.dataframe[0].value
    return {row["dataset"]: row for row in frame.to_dict("records")}


def test_one_row_per_dataset_with_its_counts(db: Path) -> None:
    at = run(app())
    rows = _table(at)
    assert len(rows) == 18 and {"shop", "review", "sample-ragas"} <= set(rows)
    shop = rows["shop"]
    assert (shop["sessions"], shop["todo"], shop["approved"], shop["flagged"], shop["rejected"]) == (30, 22, 5, 3, 0)
    assert shop["with_truth"] == 10 and shop["formats"] == "evalcore" and shop["source"] == "shop.jsonl"
    assert shop["reviewed"] == pytest.approx(5 / 30)
    assert rows["review"]["sessions"] == 3


def test_the_users_own_datasets_come_before_the_samples(db: Path, store: Store) -> None:
    """The labeler's finding (issue 24): a first dataset of one's own was hidden below the sample datasets."""
    samples = {sample_dataset_name(p) for p in sample_files(SAMPLE_DATA)}
    order = list(_table(run(app())))
    assert order[:2] == ["review", "shop"]  # the dataset imported last first: review was imported after shop
    assert order[2:] == sorted(samples)
    import_file(as_user(store, "ann", "admin"), write_jsonl(db.parent / "a.jsonl", shop_sessions()[:1]), "zzz")
    assert list(_table(run(app())))[:3] == ["zzz", "review", "shop"]


def _upload(at: AppTest, name: str, data: bytes) -> None:
    at.file_uploader(key="upload").upload(name, data, "application/json")
    run(at)


def test_importing_a_file_with_a_bad_line(db: Path, store: Store) -> None:
    good = shop_sessions()[:2]
    data = (json.dumps({"schema_version": 1, **good[0]}) + "\n{broken\n").encode()
    data += (json.dumps({"schema_version": 1, **good[1]}) + "\n").encode()
    at = run(app())
    person(at, "ann", "admin")
    _upload(at, "mine.jsonl", data)
    # a new dataset by default (not the dataset open in the sidebar), named after the file
    assert at.selectbox(key="import_target").value == "+ new dataset"
    assert at.selectbox(key="import_target").options[0] == "+ new dataset"
    assert at.text_input(key="import_new_name").value == "mine"
    at.text_input(key="import_new_name").input(" ")
    run(at)
    assert at.button(key="import").disabled  # a new dataset needs a name
    at.text_input(key="import_new_name").input("mine")
    run(at)
    at.button(key="import").click()
    run(at)
    [job] = [j for j in store.jobs.recent("mine") if j.kind == "import"]
    assert job.author == "ann"
    assert wait_for(store, job.id).status == "done"
    run(at)  # the next refresh shows the outcome
    assert at.selectbox(key="dataset").value == "mine"
    [headline] = texts(at, "warning")
    assert literal_markdown("2 sessions stored (2 new") in headline
    assert literal_markdown("1 record with errors skipped") in headline
    problems = at.dataframe[1].value.to_dict("records")
    assert len(problems) == 1 and problems[0]["line"] == 2 and problems[0]["level"] == "error"
    assert problems[0]["problem"].startswith("not valid JSON at line 2, column ")  # the file's line, said plainly
    assert _table(at)["mine"]["sessions"] == 2
    assert sorted(store.sessions.get(pk).session.session_id or "" for pk in store.sessions.pks("mine")) == [
        "shop-00",
        "shop-01",
    ]

    # One click, one import: the same upload cannot be imported twice by accident...
    assert at.button(key="import").disabled
    assert "This file has been imported; choose another to import again." in texts(at, "caption")
    # ...but the same file chosen again goes in again: nothing new, the same problem.
    _upload(at, "mine.jsonl", data)
    at.button(key="import").click()
    run(at)
    job = next(j for j in store.jobs.recent("mine") if j.kind == "import")
    wait_for(store, job.id)
    run(at)
    assert literal_markdown("0 new, 0 updated, 2 unchanged") in texts(at, "warning")[0]
    assert len(store.sessions.pks("mine")) == 2


def test_an_import_that_fails(db: Path, store: Store) -> None:
    at = run(app(dataset="shop"))
    _upload(at, "nothing.json", b"this is not json at all")
    at.selectbox(key="import_target").select("shop")
    run(at)
    at.button(key="import").click()
    run(at)
    job = next(j for j in store.jobs.recent("shop") if j.kind == "import")
    wait_for(store, job.id)
    run(at)
    assert not at.exception
    assert len(store.sessions.pks("shop")) == 30
    shown = texts(at, "error") + texts(at, "warning")
    assert any(literal_markdown("import nothing.json") in t for t in shown), shown


def test_loading_the_sample_data(fresh_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = run(app())
    assert any("No dataset yet" in t for t in texts(at, "info"))
    assert not at.dataframe
    # An empty sample folder: said so, and nothing to load (the screenshots' "0 small files" with an active button).
    assert at.button(key="load_samples").disabled
    assert any(c.startswith("No sample data here: the folder ") for c in texts(at, "caption"))
    monkeypatch.setenv("EVALCORE_SAMPLE_DATA", str(SAMPLE_DATA))
    run(at)
    assert not at.button(key="load_samples").disabled
    assert any(c.startswith(f"{len(sample_files(SAMPLE_DATA))} small files") for c in texts(at, "caption"))
    at.button(key="load_samples").click()
    run(at)
    with open_store(fresh_db) as s:
        total = sum(d.sessions for d in s.datasets.all())
    assert total > 13
    assert texts(at, "success") == [f"Sample data loaded: {total} new sessions."]
    assert sorted(_table(at)) == sorted(sample_dataset_name(p) for p in sample_files(SAMPLE_DATA))
    assert at.selectbox(key="dataset").value == "sample-anthropic"
    at.button(key="load_samples").click()
    run(at)
    assert texts(at, "success") == []  # loading is idempotent: nothing new, said so
    assert "The sample data was loaded already: its datasets are in the table above." in texts(at, "info")
    with open_store(fresh_db) as s:
        assert sum(d.sessions for d in s.datasets.all()) == total


def test_rename(db: Path, store: Store) -> None:
    at = run(app(dataset="shop"))
    at.text_input(key="rename_to").input("review")  # taken
    at.button(key="FormSubmitter:rename-Rename").click()
    run(at)
    shown = plain_texts(at, "error")  # (it quotes the name typed: shown as text)
    assert any("The new name was not saved" in e and "'review' exists already" in e for e in shown), shown
    assert {"shop", "review"} <= set(store.datasets.names())
    assert at.selectbox(key="dataset").value == "shop"

    at.text_input(key="rename_to").input("  shop 2  ")
    at.button(key="FormSubmitter:rename-Rename").click()
    run(at)
    assert not at.error
    assert at.selectbox(key="dataset").value == "shop 2"
    assert at.query_params["dataset"] == "shop 2"
    names = store.datasets.names()
    assert "shop 2" in names and "shop" not in names
    assert _table(at)["shop 2"]["sessions"] == 30
    assert "Manage shop 2" in texts(at, "subheader")


def test_delete_needs_the_exact_name(db: Path, store: Store) -> None:
    at = run(app(dataset="shop"))
    assert at.button(key="delete").disabled
    for wrong in ("sho", "Shop", "shop "):
        at.text_input(key="delete_confirm").input(wrong)
        run(at)
        assert at.button(key="delete").disabled, wrong
    at.text_input(key="delete_confirm").input("shop")
    run(at)
    assert not at.button(key="delete").disabled
    at.button(key="delete").click()
    run(at)
    assert "shop" not in store.datasets.names()
    assert "shop" not in _table(at)
    assert at.selectbox(key="dataset").value == "review"  # the first one left
    assert len(store.datasets.names()) == 17

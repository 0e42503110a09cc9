"""The Streamlit app, run for real with AppTest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent

RAGAS_ROWS = [
    {
        "user_input": [
            {"content": "Is order 7 shipped?", "type": "human"},
            {"content": "", "type": "ai", "tool_calls": [{"name": "get_order", "args": {"id": 7}}]},
            {"content": '{"status": "shipped"}', "type": "tool"},
            {"content": "Yes, it shipped.", "type": "ai"},
        ],
        "reference": "Order 7 shipped.",
    },
    {"user_input": [{"content": "hi", "type": "human"}, {"content": "hello", "type": "ai"}]},
]


@pytest.fixture
def sample_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "ragas.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RAGAS_ROWS) + "{broken\n")
    monkeypatch.setenv("EVALCORE_SAMPLE_DATA", str(tmp_path))
    return tmp_path


def _app() -> AppTest:
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)


def test_files_page_reads_a_sample(sample_folder: Path) -> None:
    at = _app().run()
    assert not at.exception
    assert at.title[0].value == "Files"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"Format": "ragas", "Sessions": "2", "Records with errors": "1", "Warnings": "0"}
    table = at.dataframe[0].value
    assert list(table["session_id"]) == ["", ""] and list(table["tool calls"]) == [1, 0]
    assert list(table["ground truth"]) == ["reference", ""]
    texts = [m.markdown[0].value for m in at.chat_message if m.markdown]
    assert "Is order 7 shipped?" in texts and "Yes, it shipped." in texts
    assert any("get_order" in md.value for m in at.chat_message for md in m.markdown)
    assert any('"id": 7' in c.value for c in at.code)


def test_choosing_another_session_and_format(sample_folder: Path) -> None:
    at = _app().run()
    at.selectbox(key="session").set_value(1).run()
    assert not at.exception
    texts = [m.markdown[0].value for m in at.chat_message if m.markdown]
    assert texts == ["hi", "hello"]
    at.selectbox(key="format").set_value("gaussia").run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Sessions"] == "0" and metrics["Records with errors"] == "3"


def test_empty_sample_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALCORE_SAMPLE_DATA", str(tmp_path / "nothing"))
    at = _app().run()
    assert not at.exception
    assert "No sample files" in at.info[0].value

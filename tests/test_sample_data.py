"""Every sample file loads cleanly, is detected as its format, and converts to every writable format."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalcore import convert_file, validate_file
from evalcore.formats import formats
from evalcore.samples import sample_files

SAMPLES = Path(__file__).resolve().parent.parent / "sample_data"
FILES = sample_files(SAMPLES)
WRITABLE = [f.name for f in formats() if f.writable]
EXPECTED_FORMAT = {
    "evalcore": "evalcore",
    "ragas": "ragas",
    "gaussia": "gaussia",
    "gaussia_stream": "gaussia",
    "databricks": "databricks",
    "openai": "openai",
    "langchain": "langchain",
    "swarm": "swarm",
    "open_responses": "open-responses",
    "open_responses_items": "open-responses",
    "mlflow_trace": "mlflow-trace",
    "mlflow_traces": "mlflow-trace",
    "tau_bench": "tau-bench",
    "tau2_bench": "tau2-bench",
    "anthropic": "anthropic",
    "openai_agents": "openai-agents",
}


def test_there_is_a_sample_for_every_readable_format() -> None:
    assert {p.stem for p in FILES} == set(EXPECTED_FORMAT)
    assert set(EXPECTED_FORMAT.values()) == {f.name for f in formats()}
    readme = (SAMPLES / "README.md").read_text()
    for path in FILES:
        assert f"`{path.name}`" in readme


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_sample_validates_as_its_format(path: Path) -> None:
    report = validate_file(path)
    assert report.format == EXPECTED_FORMAT[path.stem]
    assert report.errors == 0, [str(p) for p in report.problems]
    assert report.sessions >= 1
    expected_warnings = 1 if path.name == "gaussia.json" else 0
    assert report.warnings == expected_warnings, [str(p) for p in report.problems]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_sample_converts_to_every_writable_format(path: Path, tmp_path: Path) -> None:
    sessions = validate_file(path).sessions
    for fmt in WRITABLE:
        report = convert_file(path, tmp_path / f"out.{fmt}.jsonl", to=fmt)
        assert report.errors == 0 and report.sessions == sessions, (fmt, [str(p) for p in report.problems])

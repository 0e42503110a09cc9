"""Plug-in metrics: a metric class in a package of the user's own, installed for real (``pip install`` of
``tests/data/plugin_pkg`` into a folder on ``PYTHONPATH``: a distribution with an ``evalcore.metrics`` entry point),
or loaded with ``--plugin MODULE``; listed and scored like a built-in, by the CLI and on the Metrics page; a broken
plug-in named, never a traceback. Each command runs in a process of its own, which sees the plug-in only through
``PYTHONPATH`` (this process's registry is left as it is)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from apptest_util import (  # noqa: F401 (fixtures)
    db_fixture,
    template_db_fixture,
)
from formats_util import write_jsonl

ROOT = Path(__file__).resolve().parent.parent
EVALCORE = str(Path(sys.executable).parent / "evalcore")
PLUGIN_PKG = ROOT / "tests" / "data" / "plugin_pkg"


def pip_install(source: Path, target: Path) -> Path:
    """``source`` (a folder with a pyproject.toml) installed into ``target`` as pip installs a package: offline,
    with the setuptools of this environment. (Built from a copy: a build leaves files in the folder it builds.)"""
    copy = target.parent / f"{source.name}-src"
    shutil.copytree(source, copy)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet",
         "--disable-pip-version-check", "--target", str(target), str(copy)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return target


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = pip_install(PLUGIN_PKG, tmp_path_factory.mktemp("plugin") / "site")
    [dist_info] = site.glob("evalcore_answer_mentions-*.dist-info")
    assert (
        "[evalcore.metrics]\nanswer_mentions = evalcore_answer_mentions:AnswerMentions"
        in (dist_info / "entry_points.txt").read_text()
    )
    return site


@pytest.fixture(scope="module")
def broken_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An installed distribution whose entry point's module fails on import."""
    folder = tmp_path_factory.mktemp("broken")
    package = folder / "pkg"
    (package / "src" / "evalcore_broken_metric").mkdir(parents=True)
    (package / "pyproject.toml").write_text(
        textwrap.dedent("""\
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "evalcore-broken-metric"
        version = "0.0.1"

        [project.entry-points."evalcore.metrics"]
        broken_metric = "evalcore_broken_metric:Broken"
        """)
    )
    (package / "src" / "evalcore_broken_metric" / "__init__.py").write_text("import a_module_nobody_installed\n")
    return pip_install(package, folder / "site")


def cli(
    *args: str,
    path: list[Path] = (),
    plugins: str | None = None,  # type: ignore[assignment]
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in path)
    env.pop("EVALCORE_PLUGINS", None)
    if plugins is not None:
        env["EVALCORE_PLUGINS"] = plugins
    return subprocess.run([EVALCORE, *args], capture_output=True, text=True, timeout=300, env=env)


def listed(proc: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return {line.split()[0]: line for line in proc.stdout.splitlines()}


def answers_db(tmp_path: Path) -> str:
    """Four sessions: final answers that thank, apologise, thank again, and none (hand-counted: "thank" in 2 of 3,
    "sorry" in 1 of 3, the fourth not applicable)."""
    answers = ["Thank you for waiting.", "Sorry, no seats are left.", "THANKS, all done!", None]
    sessions = []
    for i, answer in enumerate(answers):
        messages = [{"role": "user", "content": f"question {i}"}]
        if answer is not None:
            messages.append({"role": "assistant", "content": answer})
        sessions.append({"schema_version": 1, "session_id": f"s{i}", "messages": messages})
    db = str(tmp_path / "p.db")
    proc = cli("import", str(write_jsonl(tmp_path / "a.jsonl", sessions)), "--dataset", "d", "--db", db)
    assert proc.returncode == 0, proc.stderr
    return db


def test_an_installed_plugin_is_listed_and_scored_like_a_built_in(plugin_site: Path, tmp_path: Path) -> None:
    without = cli("metrics")
    assert without.returncode == 0 and "answer_mentions" not in listed(without) and "tool_call_f1" in listed(without)
    proc = cli("metrics", path=[plugin_site])
    assert proc.returncode == 0, proc.stderr
    rows = listed(proc)
    assert set(rows) == set(listed(without)) | {"answer_mentions"}
    row = rows["answer_mentions"]
    assert "deterministic" in row and "(plug-in: evalcore_answer_mentions)" in row and row.endswith("; needs answer")

    db = answers_db(tmp_path)
    scored = cli(
        "score", "--dataset", "d", "--metrics", 'answer_mentions,answer_mentions:word="sorry"', "--output", "-",
        "--db", db, path=[plugin_site],
    )  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    records = [json.loads(line) for line in scored.stdout.splitlines()]
    values = {(r["session_id"], r["metric"]): r["value"] for r in records}
    assert [values["s0", "answer_mentions"], values["s1", "answer_mentions"], values["s2", "answer_mentions"]] == [
        1.0, 0.0, 1.0,
    ]  # fmt: skip
    assert [values[s, "answer_mentions:word=sorry"] for s in ("s0", "s1", "s2")] == [0.0, 1.0, 0.0]
    assert all(r.get("not_applicable") for r in records if r["session_id"] == "s3")
    assert "answer_mentions: 0.667 [" in scored.stderr and "answer_mentions:word=sorry: 0.333 [" in scored.stderr

    gated = cli(
        "score", "--dataset", "d", "--metrics", "answer_mentions", "--fail-under", "answer_mentions=0.7",
        "--db", db, path=[plugin_site],
    )  # fmt: skip
    assert gated.returncode == 1
    assert "evalcore: fail-under: answer_mentions: mean 0.666667 is below its floor 0.7" in gated.stderr
    # Without the installed package, the name is unknown (and said so, with the known ones).
    unknown = cli("score", "--dataset", "d", "--metrics", "answer_mentions", "--db", db)
    assert unknown.returncode == 2 and "unknown metric 'answer_mentions'; known: " in unknown.stderr


def write_module(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(body)
    return folder


HEADER = """\
from typing import ClassVar
from evalcore.metrics import Metric, MetricResult, register_metric
from evalcore.schema import Session
"""


def test_plugin_option_loads_a_module_or_a_class(tmp_path: Path) -> None:
    folder = write_module(
        tmp_path / "mods",
        "my_metrics",
        HEADER
        + textwrap.dedent("""
        @register_metric
        class Messages(Metric):
            name: ClassVar[str] = "message_total"
            description: ClassVar[str] = "how many messages the session has"
            scale: ClassVar[tuple[float, float]] = (0.0, 1000.0)

            def score_session(self, session: Session) -> MetricResult:
                return self.result(float(len(session.messages)))


        class Undecorated(Metric):
            name: ClassVar[str] = "always_one"
            description: ClassVar[str] = "1"

            def score_session(self, session: Session) -> MetricResult:
                return self.result(1.0)
        """),
    )
    proc = cli("metrics", "--plugin", "my_metrics", "--plugin", "my_metrics:Undecorated", path=[folder])
    assert proc.returncode == 0, proc.stderr
    assert {"message_total", "always_one"} <= set(listed(proc))
    db = answers_db(tmp_path)
    scored = cli(
        "score", "--dataset", "d", "--metrics", "message_total,always_one", "--plugin", "my_metrics",
        "--plugin", "my_metrics:Undecorated", "--output", "-", "--db", db, path=[folder],
    )  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    values = {(r["session_id"], r["metric"]): r["value"] for r in map(json.loads, scored.stdout.splitlines())}
    assert [values[f"s{i}", "message_total"] for i in range(4)] == [2.0, 2.0, 2.0, 1.0]
    assert {values[f"s{i}", "always_one"] for i in range(4)} == {1.0}


MESSAGES = HEADER + textwrap.dedent("""
    @register_metric
    class Messages(Metric):
        name: ClassVar[str] = "message_total"
        description: ClassVar[str] = "how many messages the session has"

        def score_session(self, session: Session) -> MetricResult:
            return self.result(float(len(session.messages)))
    """)


def test_plugins_named_in_the_environment_are_loaded_and_a_broken_one_named(tmp_path: Path) -> None:
    """``$EVALCORE_PLUGINS`` (which ``evalcore app --plugin`` sets for the app) names plug-ins as ``--plugin`` does;
    a broken one is named, and the others still work."""
    folder = write_module(tmp_path / "mods", "env_metrics", MESSAGES)
    proc = cli("metrics", path=[folder], plugins="env_metrics")
    assert proc.returncode == 0, proc.stderr
    assert "(plug-in: env_metrics)" in listed(proc)["message_total"]
    broken = cli("metrics", path=[folder], plugins="env_metrics, nowhere_to_be_found")
    assert broken.returncode == 1 and "message_total" in listed(broken)
    assert broken.stderr.startswith(
        "evalcore: error: plug-in 'nowhere_to_be_found' (of EVALCORE_PLUGINS) failed to load: ModuleNotFoundError"
    )


def test_app_plugin_names_a_broken_plugin_before_the_server_starts(tmp_path: Path) -> None:
    proc = cli("app", "--db", str(tmp_path / "x.db"), "--port", "1", "--plugin", "nowhere_to_be_found")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("evalcore: error: plug-in 'nowhere_to_be_found' failed to load: ModuleNotFound")


BROKEN = {
    "raises": "raise RuntimeError('the plug-in broke on import')\n",
    "not_a_metric": "NotAMetric = 42\n",
    "takes_a_builtin": HEADER
    + """
@register_metric
class Exact(Metric):
    name: ClassVar[str] = "exact_match"
    description: ClassVar[str] = "mine"
""",
    "registers_nothing": "VALUE = 1\n",
    "unknown_need": HEADER
    + """
@register_metric
class Odd(Metric):
    name: ClassVar[str] = "odd_need"
    description: ClassVar[str] = "needs what evalcore cannot tell"
    needs: ClassVar[tuple[str, ...]] = ("telepathy",)
""",
}


@pytest.mark.parametrize(
    ("plugin", "said"),
    [
        ("nowhere_to_be_found", "plug-in 'nowhere_to_be_found' failed to load: ModuleNotFoundError: No module named"),
        ("raises", "plug-in 'raises' failed to load: RuntimeError: the plug-in broke on import"),
        ("not_a_metric:NotAMetric", "plug-in 'not_a_metric:NotAMetric' failed to load: 42 is not a Metric class"),
        ("not_a_metric:Missing", "plug-in 'not_a_metric:Missing' failed to load: AttributeError: module"),
        ("takes_a_builtin", "plug-in 'takes_a_builtin' failed to load: a metric named 'exact_match' is registered"),
        ("registers_nothing", "plug-in 'registers_nothing' registers no metric"),
        ("unknown_need", "plug-in 'unknown_need' failed to load: metric 'odd_need' needs 'telepathy', which evalcore"),
        (":Class", "plug-in ':Class': name a module"),
    ],
)
@pytest.mark.parametrize("command", ["metrics", "score"])
def test_a_broken_plugin_option_is_named_never_a_traceback(
    tmp_path: Path, plugin: str, said: str, command: str
) -> None:
    folder = tmp_path / "mods"
    for name, body in BROKEN.items():
        write_module(folder, name, body)
    args = ["--dataset", "d", "--metrics", "turn_count", "--db", str(tmp_path / "x.db")] if command == "score" else []
    proc = cli(command, *args, "--plugin", plugin, path=[folder])
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"evalcore: error: {said}") and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_a_broken_installed_plugin_is_named_and_the_rest_still_works(
    plugin_site: Path, broken_site: Path, tmp_path: Path
) -> None:
    proc = cli("metrics", path=[plugin_site, broken_site])
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "answer_mentions" in listed(proc) and "tool_call_f1" in listed(proc)  # the others are listed
    assert proc.stderr == (
        "evalcore: error: plug-in 'broken_metric' (entry point 'evalcore_broken_metric:Broken' of "
        "evalcore-broken-metric) failed to load: ModuleNotFoundError: No module named 'a_module_nobody_installed'\n"
    )
    db = answers_db(tmp_path)
    fine = cli("score", "--dataset", "d", "--metrics", "answer_mentions,turn_count", "--db", db,
               path=[plugin_site, broken_site])  # fmt: skip
    assert fine.returncode == 0, fine.stderr  # a broken plug-in costs only its own metrics
    asked = cli("score", "--dataset", "d", "--metrics", "broken_metric", "--db", db, path=[plugin_site, broken_site])
    assert asked.returncode == 2 and "Traceback" not in asked.stderr
    assert asked.stderr.startswith("evalcore: error: unknown metric 'broken_metric' (known: ")
    assert "plug-in 'broken_metric' (entry point 'evalcore_broken_metric:Broken' of evalcore-broken-metric)" in (
        asked.stderr
    )


_PAGE = """\
import json
from apptest_util import app, plain, run

at = run(app(dataset="shop"))
at.switch_page("app_pages/metrics.py")
run(at)
print(json.dumps({
    "deterministic": list(at.multiselect(key="pick_deterministic").options),
    "errors": [plain(e.value) for e in at.error],
}))
"""


def test_the_metrics_page_lists_an_installed_plugin_and_names_a_broken_one(
    db: Path, plugin_site: Path, broken_site: Path, tmp_path: Path
) -> None:
    """The Metrics page, run by AppTest in a process that has the two installed plug-ins and one named in
    ``$EVALCORE_PLUGINS``, as ``evalcore app --plugin`` names it (``db`` set the app's database in the environment
    it inherits)."""
    folder = write_module(tmp_path / "mods", "env_metrics", MESSAGES)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(map(str, [plugin_site, broken_site, folder, ROOT, ROOT / "tests"]))
    env["EVALCORE_PLUGINS"] = "env_metrics"
    proc = subprocess.run([sys.executable, "-c", _PAGE], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"answer_mentions", "message_total", "tool_call_f1"} <= set(shown["deterministic"])
    [error] = shown["errors"]
    assert error == (
        "plug-in 'broken_metric' (entry point 'evalcore_broken_metric:Broken' of evalcore-broken-metric) failed to "
        "load: ModuleNotFoundError: No module named 'a_module_nobody_installed'"
    )


def test_the_readme_s_example_is_the_package_the_tests_install() -> None:
    """The README's complete plug-in example is ``tests/data/plugin_pkg`` (so the example is what is tested)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8").split("### Plug-in metrics", 1)[1]
    toml = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    code = readme.split("```python\n", 1)[1].split("```", 1)[0]
    assert toml == (PLUGIN_PKG / "pyproject.toml").read_text()
    assert code == (PLUGIN_PKG / "src" / "evalcore_answer_mentions" / "__init__.py").read_text()

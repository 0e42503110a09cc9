"""The layers the README's map describes, checked on the source: who may import whom, who reads the environment."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "evalcore"


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every evalcore module ``path`` imports, at any depth of the file (lazy imports included)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_names":
            for value in ast.walk(node):
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found.add(value.value)
    return {name for name in found if name.startswith("evalcore.")}  # (``from evalcore import x``: its names)


def _modules(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.py"))


def _allowed(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


# What each layer may import from evalcore (besides itself). Names, not modules, may follow a package
# (``from evalcore.store.records import Edit`` lists ``evalcore.store.records.Edit`` too): prefixes cover both.
LAYERS = {
    "evalcore._infra": ("evalcore._infra", "evalcore.errors"),
    "evalcore.store": (
        "evalcore.store",
        "evalcore.schema",
        "evalcore.identity",
        "evalcore.errors",
        "evalcore._infra",
        "evalcore.config",
    ),  # fmt: skip
    "evalcore.schema": ("evalcore.schema", "evalcore.errors", "evalcore._infra"),
}


@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_each_layer_imports_only_what_is_below_it(layer: str) -> None:
    folder = PACKAGE / layer.split(".", 1)[1]
    wrong = {
        f"{_module(path)} imports {name}"
        for path in _modules(folder)
        for name in _imports(path)
        if not _allowed(name, LAYERS[layer])
    }
    assert not wrong, sorted(wrong)


def test_the_views_are_imported_by_the_pages_only() -> None:
    users = {
        _module(path)
        for path in _modules(PACKAGE)
        if not _module(path).startswith("evalcore.views")
        for name in _imports(path)
        if _allowed(name, ("evalcore.views",))
    }
    assert not users, sorted(users)


def test_only_the_config_module_reads_the_environment() -> None:
    readers = []
    for path in [*_modules(PACKAGE), ROOT / "app.py", *_modules(ROOT / "app_pages")]:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") and path.name != "config.py":
                readers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not readers, readers


def test_only_the_store_speaks_sql() -> None:
    """No statement is executed outside ``evalcore/store`` (the app and the library call the repositories)."""
    speakers = []
    for path in [*_modules(PACKAGE), ROOT / "app.py", *_modules(ROOT / "app_pages")]:
        if (PACKAGE / "store") in path.parents:
            continue
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            options = isinstance(node.value, ast.Name) and node.value.id == "args"  # (the command line's --db)
            if node.attr in ("execute", "executemany", "executescript") or (node.attr == "db" and not options):
                speakers.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
    assert not speakers, speakers


def test_ray_is_imported_by_the_ray_engine_only_and_that_only_when_asked() -> None:
    """Ray is the optional extra ``evalcore[ray]``: only ``evalcore.ray_engine`` imports it, and only the command
    line imports that module, inside the function that runs ``--engine ray``."""
    importers, top_level = [], []
    for path in [*_modules(PACKAGE), ROOT / "app.py", *_modules(ROOT / "app_pages")]:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            if any(n == "ray" or n.startswith("ray.") for n in names) and path.name != "ray_engine.py":
                importers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        for node in tree.body:  # module level
            if isinstance(node, ast.Import | ast.ImportFrom) and "evalcore.ray_engine" in _imports_of(node):
                top_level.append(str(path.relative_to(ROOT)))
    users = {_module(path) for path in _modules(PACKAGE) if "evalcore.ray_engine" in _imports(path)}
    assert not importers, importers
    assert users == {"evalcore.cli"} and not top_level, (users, top_level)


def _imports_of(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    return {node.module or ""}


def test_importing_evalcore_and_its_command_line_loads_no_ray() -> None:
    import subprocess
    import sys

    code = (
        "import sys, evalcore, evalcore.cli, evalcore.scoring, evalcore.shards, evalcore.partition\n"
        "evalcore.cli._parser()\n"
        "assert not [m for m in sys.modules if m == 'ray' or m.startswith('ray.')], 'ray imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr

"""The README is the front door: it must name every format and every CLI command."""

from __future__ import annotations

from pathlib import Path

from evalcore.cli import _parser
from evalcore.formats import formats

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def test_readme_opens_with_the_two_commands() -> None:
    first_block = README.split("```")[1]
    assert "make run" in first_block and "make test" in first_block


def test_every_format_is_in_the_readme_table() -> None:
    for fmt in formats():
        row = next((line for line in README.splitlines() if line.startswith(f"| `{fmt.name}` |")), None)
        assert row is not None, f"format {fmt.name} missing from README"
        read, write = [cell.strip() for cell in row.strip("|").split("|")][-2:]
        assert read == "yes"
        assert write == ("yes" if fmt.writable else "—"), fmt.name


def test_every_cli_command_is_documented() -> None:
    commands = _parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in commands:
        assert f"evalcore {name}" in README, name


def test_the_layout_map_names_every_module_of_the_library() -> None:
    """Every top-level module and package of evalcore is in the README's layout map (``name.py`` or ``name/``)."""
    layout = README.split("## Layout", 1)[1].split("```")[1]
    root = Path(__file__).resolve().parent.parent / "evalcore"
    names = [p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    names = [f"{n}/" for n in names] + [p.name for p in root.glob("*.py") if p.name != "__init__.py"]
    missing = [name for name in sorted(names) if name not in layout]
    assert not missing, missing

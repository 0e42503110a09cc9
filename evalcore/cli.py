"""The ``evalcore`` command line. Exit codes: 0 success, 1 the input had problems, 2 usage error."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from evalcore.convert import ConvertReport, convert_file, validate_file
from evalcore.errors import EvalcoreError
from evalcore.formats import formats

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    names = [f.name for f in formats()]
    writable = [f.name for f in formats() if f.writable]
    parser = argparse.ArgumentParser(
        prog="evalcore",
        description="Review, score and export multi-turn LLM agent conversations.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    convert = sub.add_parser("convert", help="convert a file from one format to another, streaming")
    convert.add_argument("input", metavar="IN", help="input file (JSONL, JSON array or JSON document)")
    convert.add_argument("-o", "--output", required=True, metavar="OUT", help="output file (.json for one JSON array)")
    convert.add_argument(
        "--to", required=True, choices=writable, metavar="FORMAT", help=f"one of: {', '.join(writable)}"
    )
    convert.add_argument(
        "--from", dest="source_format", choices=names, metavar="FORMAT", help="input format (default: detected)"
    )

    validate = sub.add_parser("validate", help="report every problem in a file; exit 1 if any")
    validate.add_argument("input", metavar="IN")
    validate.add_argument(
        "--from", dest="source_format", choices=names, metavar="FORMAT", help="input format (default: detected)"
    )

    app = sub.add_parser("app", help="start the Streamlit review app")
    app.add_argument("--db", default=None, help="SQLite file (default: $EVALCORE_DB, else ./evalcore.db)")
    return parser


def _print_problems(report: ConvertReport, err: TextIO) -> None:
    for problem in report.problems:
        print(problem, file=err)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    err = sys.stderr
    try:
        if args.command == "convert":
            report = convert_file(
                args.input,
                args.output,
                to=args.to,
                source_format=args.source_format,
                on_problem=lambda p: print(p, file=err),
            )
            print(
                f"{report.sessions} sessions written to {args.output} ({args.to}); "
                f"{report.errors} records with errors, {report.warnings} warnings",
                file=err,
            )
            return 1 if report.errors else 0
        if args.command == "validate":
            report = validate_file(
                args.input, source_format=args.source_format, on_problem=lambda p: print(p, file=err)
            )
            fmt = f" as {report.format}" if report.format else ""
            print(
                f"{args.input}: {report.sessions} sessions read{fmt}; "
                f"{report.errors} records with errors, {report.warnings} warnings",
                file=err,
            )
            return 1 if report.errors else 0
        if args.command == "app":
            return _run_app(args.db)
    except EvalcoreError as exc:
        print(f"evalcore: error: {exc}", file=err)
        return 2
    except OSError as exc:
        print(f"evalcore: error: {exc.filename or ''}: {exc.strerror or exc}", file=err)
        return 2
    return 2  # pragma: no cover  (argparse rejects unknown commands)


def _run_app(db: str | None) -> int:
    app = Path(__file__).resolve().parent.parent / "app.py"
    env = dict(os.environ)
    if db:
        env["EVALCORE_DB"] = db
    command = [sys.executable, "-m", "streamlit", "run", str(app)]
    return subprocess.call(command, env=env)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

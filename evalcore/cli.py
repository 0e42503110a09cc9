"""The ``evalcore`` command line. Exit codes: 0 success, 1 the input had problems, 2 usage error."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from evalcore.convert import convert_file, validate_file
from evalcore.errors import EvalcoreError, UsageError
from evalcore.formats import formats
from evalcore.progress import ProgressBar

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

    db_help = "SQLite file (default: $EVALCORE_DB, else ./evalcore.db)"
    imp = sub.add_parser("import", help="import a file into a dataset of the store")
    imp.add_argument("input", metavar="IN")
    imp.add_argument("--dataset", required=True, metavar="NAME", help="dataset to import into (created if new)")
    imp.add_argument(
        "--from", dest="source_format", choices=names, metavar="FORMAT", help="input format (default: detected)"
    )
    imp.add_argument("--db", default=None, help=db_help)

    exp = sub.add_parser("export", help="export a dataset, filtered, with its curated ground truth")
    exp.add_argument("--dataset", required=True, metavar="NAME")
    exp.add_argument("--to", required=True, choices=writable, metavar="FORMAT", help=f"one of: {', '.join(writable)}")
    exp.add_argument("-o", "--output", required=True, metavar="OUT", help="output file (.json for one JSON array)")
    exp.add_argument(
        "--status", action="append", default=[], metavar="S", help="only this review status (repeat or a,b)"
    )
    exp.add_argument(
        "--tag", action="append", default=[], metavar="TAG", help="only sessions with this tag (repeatable)"
    )
    exp.add_argument("--assistant", metavar="ID", help="only this assistant's sessions")
    exp.add_argument("--search", metavar="TEXT", help="only sessions whose text contains every word")
    exp.add_argument("--run", type=int, metavar="RUN", help="with --metric: filter on that run's scores")
    exp.add_argument("--metric", metavar="NAME")
    exp.add_argument("--min-score", type=float, metavar="X")
    exp.add_argument("--max-score", type=float, metavar="X")
    exp.add_argument("--db", default=None, help=db_help)

    score = sub.add_parser("score", help="score a dataset with metrics; every score saved under a run")
    score.add_argument("--dataset", required=True, metavar="NAME")
    score.add_argument(
        "--metrics", default="", metavar="a,b", help="metric names, comma-separated (name:key=value sets a parameter)"
    )
    score.add_argument(
        "--metric",
        action="append",
        default=[],
        metavar="SPEC",
        help="one metric spec (repeatable; for values with commas)",
    )
    score.add_argument("--output", metavar="OUT.jsonl", help="also write one JSON line per (session, metric)")
    score.add_argument(
        "--concurrency", type=_positive(int), metavar="N", help="judge calls in flight at once (default 8)"
    )
    score.add_argument("--judge-model", metavar="MODEL", help="judge model (default: $EVALCORE_JUDGE_MODEL)")
    score.add_argument(
        "--base-url",
        metavar="URL",
        help="OpenAI-compatible endpoint (default: $EVALCORE_JUDGE_BASE_URL, else $EVALCORE_BASE_URL)",
    )
    score.add_argument("--api-key", metavar="KEY", help="API key (default: $EVALCORE_API_KEY, else $OPENAI_API_KEY)")
    score.add_argument("--prices", metavar="FILE", help='JSON {"model": [input, output]} in $ per million tokens')
    score.add_argument(
        "--timeout", type=_positive(float), metavar="S", help="seconds before a judge call times out (default 60)"
    )
    score.add_argument(
        "--max-retries", type=_positive(int, zero=True), metavar="N", help="retries of a failed judge call (default 4)"
    )
    score.add_argument("--new-run", action="store_true", help="start a new run instead of resuming an unfinished one")
    score.add_argument("--db", default=None, help=db_help)

    app = sub.add_parser("app", help="start the Streamlit review app")
    app.add_argument("--db", default=None, help=db_help)
    app.add_argument("--port", type=int, default=8501, help="the port to serve on (default 8501)")
    app.add_argument(
        "--address", default="127.0.0.1", help="the address to listen on (default 127.0.0.1; 0.0.0.0 to share)"
    )
    return parser


def _positive(kind: type[int] | type[float], *, zero: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        value = kind(text)
        if value < 0 or (value == 0 and not zero):
            raise argparse.ArgumentTypeError(f"must be {'0 or more' if zero else 'more than 0'}, got {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its message
    return parse


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
        if args.command == "import":
            return _import(args, err)
        if args.command == "export":
            return _export(args, err)
        if args.command == "score":
            return _score(args, err)
        if args.command == "app":
            return _run_app(args.db, port=args.port, address=args.address)
    except EvalcoreError as exc:
        print(f"evalcore: error: {exc}", file=err)
        return 2
    except OSError as exc:
        print(f"evalcore: error: {exc.filename or ''}: {exc.strerror or exc}", file=err)
        return 2
    return 2  # pragma: no cover  (argparse rejects unknown commands)


def _import(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.store import Store, import_file

    bar = ProgressBar(f"importing {Path(args.input).name}", err)
    with Store(args.db) as store:
        try:
            report = import_file(
                store,
                args.input,
                args.dataset,
                fmt=args.source_format,
                on_progress=lambda done, total: bar.update(done, total),
                on_problem=lambda p: bar.note(str(p)),
            )
        finally:
            bar.close()
    fmt = f" ({report.format})" if report.format else ""
    print(
        f"{args.input}{fmt} -> dataset {args.dataset!r} in {store.path}: {report.new} new, {report.updated} updated, "
        f"{report.unchanged} unchanged, {report.failed} failed, {report.warnings} warnings",
        file=err,
    )
    return 1 if report.failed else 0


def _export(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.store import Store
    from evalcore.store.exports import export_dataset
    from evalcore.store.queries import SessionFilter

    statuses = [s for value in args.status for s in value.split(",") if s]
    filters = SessionFilter(
        status=statuses,
        tags=args.tag,
        assistant=args.assistant,
        search=args.search,
        run_id=args.run,
        metric=args.metric,
        min_score=args.min_score,
        max_score=args.max_score,
    )
    if (args.min_score is not None or args.max_score is not None) and (args.run is None or args.metric is None):
        raise UsageError("--min-score and --max-score need --run and --metric")
    bar = ProgressBar(f"exporting {args.dataset}", err)
    with Store(args.db) as store:
        try:
            report = export_dataset(
                store, args.dataset, args.output, args.to, filters, on_progress=lambda n: bar.update(n, unit="sessions")
            )
        finally:
            bar.close()
    print(
        f"{report.count} sessions of {args.dataset!r} written to {report.path} ({report.format}); "
        f"manifest {report.manifest}",
        file=err,
    )
    return 0


def _score(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.judge import JudgeConfig
    from evalcore.scoring import score_dataset
    from evalcore.store import Store

    specs = [m.strip() for m in args.metrics.split(",") if m.strip()] + args.metric
    if not specs:
        raise UsageError("name the metrics: --metrics a,b (see the README's metrics table)")
    judge = JudgeConfig.from_env(
        model=args.judge_model,
        base_url=args.base_url,
        api_key=args.api_key,
        prices=args.prices,
        timeout=args.timeout,
        max_retries=args.max_retries,
    )
    bar = ProgressBar(f"scoring {args.dataset}", err)
    with Store(args.db) as store:
        try:
            report = score_dataset(
                store,
                args.dataset,
                specs,
                judge=judge,
                concurrency=args.concurrency,
                resume=not args.new_run,
                output=args.output,
                on_progress=lambda done, total: bar.update(done, total),
            )
        finally:
            bar.close()
    run = report.run
    how = f"resumed run {run.id} ({report.skipped} sessions already scored)" if report.resumed else f"run {run.id}"
    print(f"{how}: {report.sessions} sessions of {args.dataset!r}, {report.judge_requests} judge requests", file=err)
    for summary in report.summaries:
        print(summary.describe())
    if report.output:
        print(f"scores written to {report.output}", file=err)
    return 1 if any(s.failed for s in report.summaries) else 0


def app_path() -> Path:
    """The app's entry script: ``app.py`` of the installed ``evalcore_app`` package, else of the checkout."""
    spec = importlib.util.find_spec("evalcore_app")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / "app.py"
        if candidate.is_file():
            return candidate
    return Path(__file__).resolve().parent.parent / "app.py"


def _run_app(db: str | None, *, port: int = 8501, address: str = "127.0.0.1") -> int:
    env = dict(os.environ)
    if db:
        env["EVALCORE_DB"] = os.path.abspath(db)
    command = [
        sys.executable, "-m", "streamlit", "run", str(app_path()),
        "--server.port", str(port), "--server.address", address, "--browser.gatherUsageStats", "false",
        "--client.showErrorDetails", "none", "--client.toolbarMode", "minimal",
    ]  # fmt: skip
    return subprocess.call(command, env=env)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

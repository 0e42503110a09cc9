"""The ``evalcore`` command line.

Exit codes (the README's "Command line" lists them too): 0 success, 1 the input had problems,
2 a usage error (a bad option, a missing file, an unknown name), 3 the database failed (a full
disk, a read-only, locked or damaged file), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
An interrupted or terminated run leaves no partial output file behind.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, NoReturn, TextIO

from evalcore import config
from evalcore._infra.outputs import discard_live
from evalcore._infra.printable import visible
from evalcore._infra.progress import ProgressBar
from evalcore._infra.workers import default_workers
from evalcore.errors import DatabaseFaultError, EvalcoreError, UsageError
from evalcore.store.access import ROLES

if TYPE_CHECKING:
    from evalcore.judge import JudgeConfig
    from evalcore.scoring import RunReport

__all__ = ["main"]

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_DATABASE = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # 128 + SIGINT, 128 + SIGTERM
_INT64_MAX = 2**63 - 1  # SQLite's largest integer: a run id beyond it cannot exist
_MAX_RECORD_MB = 1 << 16  # 64 GiB: past any memory a record could be held in


class _FormatNames(Sequence[str]):
    """The registered formats' names (``writable``: those that can be written), looked up when argparse first
    checks a choice or prints help: a command that names no format never imports every format's module."""

    def __init__(self, *, writable: bool) -> None:
        self.writable = writable

    def _names(self) -> list[str]:
        from evalcore.formats import formats

        return [f.name for f in formats() if f.writable or not self.writable]

    def __getitem__(self, index: int) -> str:  # type: ignore[override]
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()


def _workers_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--workers",
        type=_number(int, low=1, high=64),
        metavar="N",
        help=f"{what} (default: the CPUs, at most 4; 1: this process only)",
    )


def _plugin_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plugin", action="append", default=[], type=_text, metavar="MODULE",
        help="load metrics from this module (MODULE or MODULE:CLASS; repeatable), besides the installed plug-ins",
    )  # fmt: skip


def _floor(text: str) -> tuple[str, float]:
    """A ``--fail-under METRIC=X`` (``evalcore.score_summary.parse_floor``)."""
    from evalcore.score_summary import parse_floor

    try:
        floor = parse_floor(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--fail-under ")) from None
    return floor.metric, floor.floor


def _max_record_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-record-mb",
        type=_number(float, low=0, above=True, high=_MAX_RECORD_MB),
        metavar="MB",
        help="the largest record read, in MiB of text: a larger one is reported and reading stops there (default 64)",
    )


def _max_record(args: argparse.Namespace) -> int:
    """``--max-record-mb`` in characters, else the default (``evalcore.formats.jsonio.MAX_RECORD``)."""
    from evalcore.formats.jsonio import MAX_RECORD

    return MAX_RECORD if args.max_record_mb is None else max(1, int(args.max_record_mb * (1 << 20)))


def _say(text: str, file: TextIO | None = None) -> None:
    """Print ``text`` (standard error unless ``file`` says otherwise) as a terminal should show it: every control,
    invisible or reordering character in it written as its escape (``\\x1b``, ``\\u202e``), so that nothing a
    file's name or a value quoted from input holds is executed by the terminal; line breaks are kept (a message of
    several lines). A value that must stay on its line (a path) is put in through ``visible`` first."""
    print(visible(text, lines=True), file=file if file is not None else sys.stderr)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors quote what was typed: shown as text (``_say``)."""

    def _print_message(self, message: str, file: TextIO | None = None) -> None:  # type: ignore[override]
        super()._print_message(visible(message, lines=True), file)


def _parser() -> argparse.ArgumentParser:
    names = _FormatNames(writable=False)
    writable = _FormatNames(writable=True)
    parser = _Parser(
        prog="evalcore",
        description="Review, score and export multi-turn LLM agent conversations.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    convert = sub.add_parser("convert", help="convert a file from one format to another, streaming")
    convert.add_argument("input", metavar="IN", help="input file (JSONL, JSON array or JSON document)")
    convert.add_argument(
        "-o", "--output", required=True, type=_text, metavar="OUT", help="output file (.json for one JSON array)"
    )
    convert.add_argument("--to", required=True, choices=writable, metavar="FORMAT", help="one of: %(choices)s")
    convert.add_argument(
        "--from", dest="source_format", choices=names, metavar="FORMAT", help="input format (default: detected)"
    )
    _workers_option(convert, "processes reading a big JSON Lines file")
    _max_record_option(convert)

    validate = sub.add_parser("validate", help="report every problem in a file; exit 1 if any")
    validate.add_argument("input", metavar="IN")
    validate.add_argument(
        "--from", dest="source_format", choices=names, metavar="FORMAT", help="input format (default: detected)"
    )
    _workers_option(validate, "processes reading a big JSON Lines file")
    _max_record_option(validate)

    db_help = "the store: a SQLite file or a postgresql:// URL (default: $EVALCORE_DB, else ./evalcore.db)"
    imp = sub.add_parser("import", help="import a file into a dataset of the store")
    imp.add_argument("input", metavar="IN")
    imp.add_argument(
        "--dataset", required=True, type=_name, metavar="NAME", help="dataset to import into (created if new)"
    )
    imp.add_argument(
        "--from", dest="source_format", choices=names, metavar="FORMAT", help="input format (default: detected)"
    )
    imp.add_argument(
        "--assistant", type=_assistant_name, metavar="NAME",
        help="every session imported is this assistant's, whatever the file (or its name) says",
    )  # fmt: skip
    _workers_option(imp, "processes reading a file over 4 MB while this one writes")
    _max_record_option(imp)
    imp.add_argument("--db", default=None, type=_text, help=db_help)

    exp = sub.add_parser("export", help="export a dataset, filtered, with its curated ground truth")
    exp.add_argument("--dataset", required=True, type=_name, metavar="NAME")
    exp.add_argument("--to", required=True, choices=writable, metavar="FORMAT", help="one of: %(choices)s")
    exp.add_argument(
        "-o", "--output", required=True, type=_text, metavar="OUT", help="output file (.json for one JSON array)"
    )
    exp.add_argument(
        "--status", action="append", default=[], metavar="S", help="only this review status (repeat or a,b)"
    )
    exp.add_argument(
        "--tag", action="append", default=[], metavar="TAG", help="only sessions with this tag (repeatable)"
    )
    exp.add_argument("--assistant", metavar="ID", help="only this assistant's sessions")
    exp.add_argument("--search", metavar="TEXT", help="only sessions whose text contains every word")
    exp.add_argument(
        "--search-system-prompt",
        action="store_true",
        help="with --search: look in the system prompt (and context) too, left out by default",
    )
    exp.add_argument(
        "--run", type=_number(int, low=1, high=_INT64_MAX), metavar="RUN", help="with --metric: that run's scores"
    )
    exp.add_argument("--metric", metavar="NAME")
    exp.add_argument("--min-score", type=_number(float), metavar="X")
    exp.add_argument("--max-score", type=_number(float), metavar="X")
    exp.add_argument("--db", default=None, type=_text, help=db_help)

    labels = sub.add_parser("export-labels", help="export what people answered on a dataset, and the gold")
    labels.add_argument("--dataset", required=True, type=_name, metavar="NAME")
    labels.add_argument(
        "-o", "--output", required=True, type=_text, metavar="OUT", help="output file (.csv for CSV, else JSON Lines)"
    )
    labels.add_argument("--db", default=None, type=_text, help=db_help)

    score = sub.add_parser("score", help="score a dataset with metrics; every score saved under a run")
    score.add_argument("--dataset", required=True, type=_name, metavar="NAME")
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
    score.add_argument(
        "--output", type=_text, metavar="OUT.jsonl",
        help="also write one JSON line per (session, metric); - for standard output (the summary then goes to "
        "standard error)",
    )  # fmt: skip
    score.add_argument(
        "--fail-under", action="append", default=[], type=_floor, metavar="METRIC=X",
        help="exit 1 when METRIC's mean is below X, or it applied to no session (repeatable)",
    )  # fmt: skip
    score.add_argument(
        "--summary-json", type=_text, metavar="FILE",
        help="write the per-metric summary as JSON (see the README's 'Scoring in CI'); - for standard output",
    )  # fmt: skip
    _plugin_option(score)
    score.add_argument(
        "--concurrency",
        type=_number(int, low=1, high=1024),
        metavar="N",
        help="judge calls in flight at once (default 8)",
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
        "--timeout",
        type=_number(float, low=0, above=True, high=86_400),
        metavar="S",
        help="seconds before a judge call times out (default 60)",
    )
    score.add_argument(
        "--max-retries",
        type=_number(int, low=0, high=100),
        metavar="N",
        help="retries of a failed judge call (default 4)",
    )
    score.add_argument("--new-run", action="store_true", help="start a new run instead of resuming an unfinished one")
    score.add_argument(
        "--allow-other-endpoint",
        action="store_true",
        help="resume an unfinished run at this command's endpoint though its judge was called at another",
    )
    score.add_argument(
        "--shard", type=_shard, metavar="I/N",
        help="score only shard I of N (from 0; by the sessions' stored keys) into the shard file --output, for "
        "import-scores; nothing is written to the store, and --concurrency is the total of all N shards",
    )  # fmt: skip
    score.add_argument(
        "--engine", choices=("local", "ray"), default="local",
        help="where the sessions are scored: this machine (default), or as Ray tasks (pip install 'evalcore[ray]'); "
        "--concurrency is then the total of the cluster's judge calls",
    )  # fmt: skip
    score.add_argument(
        "--ray-address", type=_text, metavar="ADDR",
        help="the Ray cluster's address (default: $RAY_ADDRESS, else a local cluster for this run)",
    )  # fmt: skip
    _workers_option(score, "processes scoring deterministic metrics")
    score.add_argument("--db", default=None, type=_text, help=db_help)

    merge = sub.add_parser("import-scores", help="store shard files' scores (score --shard) under one run")
    merge.add_argument("files", nargs="+", type=_text, metavar="FILE", help="shard files, or files of bare score rows")
    merge.add_argument("--dataset", required=True, type=_name, metavar="NAME")
    merge.add_argument(
        "--metrics", default="", metavar="a,b", help="files of bare rows (a Spark job's): the metrics they score"
    )
    merge.add_argument("--metric", action="append", default=[], metavar="SPEC", help="one metric spec (repeatable)")
    merge.add_argument("--judge-model", metavar="MODEL", help="files of bare rows: the judge model they were scored by")
    merge.add_argument("--new-run", action="store_true", help="a new run, even where these shards' run exists")
    _plugin_option(merge)
    merge.add_argument("--db", default=None, type=_text, help=db_help)

    listed = sub.add_parser("metrics", help="list the metrics: built-in and plug-ins, with what each needs")
    _plugin_option(listed)

    solve = sub.add_parser("solve", help="run a multi-turn solver task's samples against a model, into a dataset")
    solve.add_argument("task", metavar="TASK.yaml", help="a multi_turn_solver task file")
    solve.add_argument("--samples", required=True, type=_text, metavar="FILE", help="samples: JSONL, JSON or CSV")
    solve.add_argument("--dataset", required=True, type=_name, metavar="NAME", help="dataset to store sessions in")
    solve.add_argument("--model", required=True, type=_text, metavar="MODEL", help="the model under evaluation")
    solve.add_argument(
        "--config", action="append", default=[], type=_config_value, metavar="KEY=VALUE",
        help="fills << config.KEY >> in the task (repeatable)",
    )  # fmt: skip
    solve.add_argument(
        "--concurrency", type=_number(int, low=1, high=1024), default=4, metavar="N",
        help="samples in flight at once (default 4)",
    )  # fmt: skip
    solve.add_argument("--base-url", metavar="URL", help="OpenAI-compatible endpoint (default: $EVALCORE_BASE_URL)")
    solve.add_argument("--api-key", metavar="KEY", help="API key (default: $EVALCORE_API_KEY, else $OPENAI_API_KEY)")
    solve.add_argument("--prices", metavar="FILE", help='JSON {"model": [input, output]} in $ per million tokens')
    solve.add_argument(
        "--timeout", type=_number(float, low=0, above=True, high=86_400), metavar="S",
        help="seconds before a model call times out (default 60)",
    )  # fmt: skip
    solve.add_argument(
        "--max-retries", type=_number(int, low=0, high=100), metavar="N",
        help="retries of a failed model call (default 4)",
    )  # fmt: skip
    solve.add_argument("--db", default=None, type=_text, help=db_help)

    db = sub.add_parser("db", help="the store's database: upgrade its schema, copy it to another")
    db_sub = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    upgrade = db_sub.add_parser("upgrade", help="apply the schema's migrations (PostgreSQL: before its first use)")
    upgrade.add_argument("url", metavar="URL", type=_text, help="a postgresql:// URL or a SQLite file")
    copy = db_sub.add_parser("copy", help="copy a whole store into another database (SQLite <-> PostgreSQL)")
    copy.add_argument("source", metavar="SRC", type=_text, help="the store to copy (a SQLite file or a URL)")
    copy.add_argument("destination", metavar="DST", type=_text, help="an empty database, or an earlier copy")

    users = sub.add_parser("users", help="who may use the store, and their roles (for the app's sign-in)")
    users_sub = users.add_subparsers(dest="users_command", required=True, metavar="ACTION")
    listing = users_sub.add_parser("list", help="every user: role, e-mail, provider, last seen")
    listing.add_argument("--db", default=None, type=_text, help=db_help)
    add = users_sub.add_parser("add", help="let a person in by e-mail: their first sign-in with it is theirs")
    add.add_argument("email", metavar="EMAIL", type=_text)
    add.add_argument("--role", required=True, choices=ROLES, help="what they may do")
    add.add_argument("--name", type=_text, default=None, help="their display name (default: the e-mail)")
    add.add_argument("--provider", type=_text, default=None, help="only a sign-in through this provider binds them")
    add.add_argument("--db", default=None, type=_text, help=db_help)
    set_role = users_sub.add_parser("set-role", help="change a user's role")
    set_role.add_argument("who", metavar="EMAIL", type=_text, help="the user's e-mail (or display name)")
    set_role.add_argument("role", metavar="ROLE", choices=ROLES, help=f"one of {', '.join(ROLES)}")
    set_role.add_argument("--db", default=None, type=_text, help=db_help)
    for verb, what in (("disable", "refuse a user from their next click on"), ("enable", "let a disabled user in")):
        action = users_sub.add_parser(verb, help=what)
        action.add_argument("who", metavar="EMAIL", type=_text, help="the user's e-mail (or display name)")
        action.add_argument("--db", default=None, type=_text, help=db_help)
    domain = users_sub.add_parser("allow-domain", help="let anyone with a verified e-mail at a domain in")
    domain.add_argument("domain", metavar="DOMAIN", type=_text, help="such as example.com")
    domain.add_argument("role", metavar="ROLE", choices=("viewer", "reviewer", "none"), help="viewer, reviewer or none")
    domain.add_argument("--db", default=None, type=_text, help=db_help)

    app = sub.add_parser("app", help="start the Streamlit review app")
    app.add_argument("--db", default=None, type=_text, help=db_help)
    app.add_argument(
        "--port", type=_number(int, low=1, high=65_535), default=8501, help="the port to serve on (default 8501)"
    )
    app.add_argument(
        "--address", default="127.0.0.1", help="the address to listen on (default 127.0.0.1; 0.0.0.0 to share)"
    )
    _plugin_option(app)
    app.add_argument(
        "--insecure-no-auth", action="store_true",
        help="serve another address than loopback with no sign-in configured: anyone who reaches it edits as you",
    )  # fmt: skip
    return parser


def _number(
    kind: type[int] | type[float], *, low: float | None = None, above: bool = False, high: float | None = None
) -> Callable[[str], float]:
    """The one check of every numeric option: a number of ``kind``, finite (no NaN, no infinity), at
    least ``low`` (more than it when ``above``), at most ``high``. Its message names what is wrong."""

    def parse(text: str) -> float:
        shown = text if len(text) <= 40 else text[:37] + "..."
        try:
            value = kind(text)
        except ValueError:
            if kind is int and text.strip().lstrip("+-").isdigit():  # past Python's 4,300-digit limit
                raise argparse.ArgumentTypeError(f"must be at most {_plain(high)}, got {shown}") from None
            raise argparse.ArgumentTypeError(
                f"must be {'a whole number' if kind is int else 'a number'}, got {shown!r}"
            ) from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"must be a finite number, got {shown}")
        if low is not None and (value < low or (above and value == low)):
            bound = f"more than {_plain(low)}" if above else f"{_plain(low)} or more"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {shown}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"must be at most {_plain(high)}, got {shown}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its message
    return parse


def _plain(bound: float | None) -> str:
    return "any size" if bound is None else str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def _text(text: str) -> str:
    """A path or other text option that must not be empty."""
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def _shard(text: str) -> tuple[int, int]:
    """A ``--shard I/N``."""
    from evalcore.shards import parse_shard

    try:
        return parse_shard(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _config_value(text: str) -> tuple[str, str]:
    """A ``KEY=VALUE`` of ``solve --config``."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def _assistant_name(text: str) -> str:
    """An assistant's name: not empty, not only spaces."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"an assistant needs a name, got {text!r}")
    return text


def _name(text: str) -> str:
    """A dataset name: not empty, not only spaces."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"a dataset needs a name, got {text!r}")
    return text


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that every ``finally`` (partial files, the database) runs."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the cleanup short
    raise _Terminated


def entry() -> NoReturn:
    """The ``evalcore`` console script: ``main``, then an exit that skips Python's teardown of every module it
    imported (30 ms of each command: numpy's, pydantic's) once what the command wrote is flushed and nothing it
    started still runs (a thread, a child process); otherwise the usual exit."""
    code = main()
    running = sys.modules.get("multiprocessing")
    if threading.active_count() == 1 and not (running is not None and running.active_children()):
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed pipe (`evalcore ... | head`): Python's own exit reports it
            raise SystemExit(code) from None
        os._exit(code)
    raise SystemExit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    if threading.current_thread() is not threading.main_thread():
        return _main(args)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _main(args)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(args: argparse.Namespace) -> int:
    err = sys.stderr
    commands: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
        "convert": _convert, "validate": _validate, "import": _import, "export": _export, "score": _score,
        "solve": _solve, "app": _app, "db": _db, "users": _users, "metrics": _list_metrics,
        "export-labels": _export_labels, "import-scores": _import_scores,
    }  # fmt: skip
    try:
        return commands[args.command](args, err)
    except DatabaseFaultError as exc:
        _say(f"evalcore: error: {exc}", err)
        return EXIT_DATABASE
    except EvalcoreError as exc:
        _say(f"evalcore: error: {exc}", err)
        return EXIT_USAGE
    except OSError as exc:
        where = f"{visible(str(exc.filename))}: " if exc.filename else ""
        _say(f"evalcore: error: {where}{exc.strerror or exc}", err)
        return EXIT_USAGE
    except Exception as exc:
        if not _from_database(exc):
            raise
        _say(f"evalcore: error: the database failed: {exc}", err)  # an SQL error the store did not name
        return EXIT_DATABASE
    except KeyboardInterrupt:
        discard_live()
        _say(f"evalcore: interrupted; {_left(args.command)}", err)
        return EXIT_INTERRUPTED
    except _Terminated:
        discard_live()
        _say(f"evalcore: terminated; {_left(args.command)}", err)
        return EXIT_TERMINATED


def _not_the_store(output: str, db: str | None) -> None:
    """Refuse (exit 2) an output that is the store's database or one of its files, however it is named: before the
    store is opened, before anything is written."""
    from evalcore.store.store import refuse_database_file

    refuse_database_file(output, db or config.database())
    if not output.endswith(".manifest.json"):
        refuse_database_file(output + ".manifest.json", db or config.database())


def _convert(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.convert import convert_file

    _not_the_store(args.output, None)  # (convert opens no store: the default one is not written over either)
    report = convert_file(
        args.input,
        args.output,
        to=args.to,
        source_format=args.source_format,
        on_problem=lambda p: print(p, file=err),  # (a FileProblem prints as one line of text: see its __str__)
        workers=args.workers or default_workers(),
        max_record=_max_record(args),
    )
    _say(
        f"{report.sessions} sessions written to {visible(args.output)} ({args.to}); "
        f"{report.errors} records with errors, {report.warnings} warnings",
        err,
    )
    return 1 if report.errors else 0


def _validate(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.convert import validate_file

    report = validate_file(
        args.input,
        source_format=args.source_format,
        on_problem=lambda p: print(p, file=err),
        workers=args.workers or default_workers(),
        max_record=_max_record(args),
    )
    fmt = f" as {report.format}" if report.format else ""
    _say(
        f"{visible(args.input)}: {report.sessions} sessions read{fmt}; "
        f"{report.errors} records with errors, {report.warnings} warnings",
        err,
    )
    return 1 if report.errors else 0


def _db(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.store.store import Store, is_postgres

    if args.db_command == "upgrade":
        with Store(args.url, check=False) as store:
            done = store.upgrade()
        what = f"applied {', '.join(done)}" if done else "already up to date"
        _say(f"{visible(store.where)}: {what}", err)
        return 0
    from evalcore.store.copy import copy_store

    if is_postgres(args.destination):
        with Store(args.destination, check=False) as fresh:
            fresh.upgrade()  # a new PostgreSQL database gets its tables first
    bar = ProgressBar("copying", err)
    with Store(args.source) as source, Store(args.destination) as destination:
        try:
            report = copy_store(source, destination, on_progress=lambda table, n: bar.update(n, unit=table))
        finally:
            bar.close()
    _say(report.describe(), err)
    return 0


def _users(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.signin import user_lines
    from evalcore.store import open_store

    with open_store(args.db) as store:
        users = store.users
        command = args.users_command
        if command == "list":
            for line in user_lines(users.all(), users.allowed_domains()):
                _say(line, sys.stdout)
            return 0
        if command == "add":
            user = users.add(args.email, args.role, name=args.name, provider=args.provider)
            _say(f"{user.label} may sign in as {user.role}: their first sign-in with this e-mail is theirs", err)
        elif command == "set-role":
            user = users.set_role(args.who, args.role)
            _say(f"{user.label} is now {user.role}", err)
        elif command in ("disable", "enable"):
            user = users.disable(args.who) if command == "disable" else users.enable(args.who)
            state = "disabled: refused from their next click" if user.disabled else "enabled"
            _say(f"{user.label} is {state}", err)
        else:
            role = None if args.role == "none" else args.role
            users.allow_domain(args.domain, role)
            allowed = f"may sign in as {role}" if role else "no longer come in unless added"
            _say(f"people with a verified e-mail at {args.domain.lower().lstrip('@')} {allowed}", err)
    return 0


def _app(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.signin import auth_configured, is_loopback

    if not is_loopback(args.address) and not auth_configured(Path.cwd()):
        warning = (
            f"serving on {args.address} with no sign-in configured: anyone who can reach this machine "
            "reads and changes the store as you. Configure sign-in ([auth] in .streamlit/secrets.toml: the README's "
            "'Sign-in for a team')"
        )
        if not args.insecure_no_auth:
            _say(f"evalcore: error: {warning}, or pass --insecure-no-auth to go on anyway", err)
            return EXIT_USAGE
        _say(f"evalcore: warning: {warning}", err)
    if args.plugin:
        from evalcore.metrics import load_metric_plugin

        for plugin in args.plugin:
            load_metric_plugin(plugin)  # a broken one is named now (exit 2), before the server starts
        config.set_plugins([*config.plugins(), *args.plugin])  # the app's process loads them (EVALCORE_PLUGINS)
    return _run_app(args.db, port=args.port, address=args.address)


def _from_database(exc: BaseException) -> bool:
    """Whether ``exc`` is an engine's own error (sqlite3's, psycopg's) that the store's boundary did not translate."""
    return isinstance(exc, sqlite3.Error) or type(exc).__module__.split(".", 1)[0] in ("psycopg", "psycopg_pool")


def _left(command: str) -> str:
    """What an interrupted command leaves behind."""
    if command == "solve":
        return "the samples solved so far are stored (run the same command again to go on)"
    return "no partial output was left"


def _import(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.importing import import_file
    from evalcore.store import open_store

    bar = ProgressBar(f"importing {Path(args.input).name}", err)
    with open_store(args.db) as store:
        try:
            report = import_file(
                store,
                args.input,
                args.dataset,
                fmt=args.source_format,
                on_progress=lambda done, total: bar.update(done, total),
                on_problem=lambda p: bar.note(str(p)),
                workers=args.workers,
                max_record=_max_record(args),
                assistant=args.assistant,
            )
        finally:
            bar.close()
    fmt = f" ({report.format})" if report.format else ""
    whose = f" as assistant {args.assistant!r}" if args.assistant is not None else ""
    _say(
        f"{visible(args.input)}{fmt} -> dataset {args.dataset!r}{whose} in {visible(store.where)}: {report.new} new, "
        f"{report.updated} updated, {report.unchanged} unchanged, {report.failed} failed, {report.warnings} warnings",
        err,
    )
    return 1 if report.failed else 0


def _export(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.exporting import export_dataset
    from evalcore.store import open_store
    from evalcore.store.queries import SessionFilter

    statuses = [s for value in args.status for s in value.split(",") if s]
    filters = SessionFilter(
        status=statuses,
        tags=args.tag,
        assistant=args.assistant,
        search=args.search,
        search_system_prompt=args.search_system_prompt and bool(args.search),
        run_id=args.run,
        metric=args.metric,
        min_score=args.min_score,
        max_score=args.max_score,
    )
    if (args.min_score is not None or args.max_score is not None) and (args.run is None or args.metric is None):
        raise UsageError("--min-score and --max-score need --run and --metric")
    _not_the_store(args.output, args.db)
    bar = ProgressBar(f"exporting {args.dataset}", err)
    with open_store(args.db) as store:
        try:
            report = export_dataset(
                store, args.dataset, args.output, args.to, filters, on_progress=lambda n: bar.update(n, unit="sessions")
            )
        finally:
            bar.close()
    manifest = f"manifest {report.manifest}" if report.manifest else "no manifest (the output is not a file)"
    _say(
        f"{report.count} sessions of {args.dataset!r} written to {visible(str(report.path))} ({report.format}); "
        f"{visible(manifest)}",
        err,
    )
    if report.labels_left:
        _say(
            f"note: the labels (answers, gold, comments) of {report.labels_left} of them are not carried by "
            f"{report.format}: export the answers and gold with `evalcore export-labels`, or export in the evalcore "
            "format",
            err,
        )
    return 0


def _export_labels(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.label_export import export_labels
    from evalcore.store import open_store

    _not_the_store(args.output, args.db)
    with open_store(args.db) as store:
        report = export_labels(store, args.dataset, args.output)
    manifest = f"manifest {report.manifest}" if report.manifest else "no manifest (the output is not a file)"
    _say(
        f"{report.count} answers and gold of {args.dataset!r} written to {visible(str(report.path))}; "
        f"{visible(manifest)}",
        err,
    )
    return 0


def _score(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.metrics import create_metric, load_metric_plugin
    from evalcore.resuming import OtherEndpointError
    from evalcore.score_summary import Floor, breaches, exit_code, resolve_floors, summary_json
    from evalcore.scoring import score_dataset
    from evalcore.store import open_store

    for plugin in args.plugin:
        load_metric_plugin(plugin)
    specs = [m.strip() for m in args.metrics.split(",") if m.strip()] + args.metric
    if not specs:
        raise UsageError("name the metrics: --metrics a,b (see the README's metrics table)")
    if args.shard is not None:
        if args.engine == "ray":
            raise UsageError("--shard scores one shard here: Ray scores the whole run (give one of them)")
        return _score_shard(args, specs, err)
    floors = resolve_floors([Floor(*given) for given in args.fail_under], [create_metric(s).key() for s in specs])
    output, summary_path = _stdout_dash(args.output), _stdout_dash(args.summary_json)
    machine_on_stdout = _checked_outputs(args.db, output, summary_path)
    judge = _judge(args)
    if args.ray_address is not None and args.engine != "ray":
        raise UsageError("--ray-address is for --engine ray")
    on_ray = args.engine == "ray"
    bar = ProgressBar(f"scoring {args.dataset}{' on Ray' if on_ray else ''}", err)
    report: RunReport
    with open_store(args.db) as store:
        try:
            if on_ray:
                from evalcore.ray_engine import score_dataset_ray

                report = score_dataset_ray(
                    store, args.dataset, specs, address=args.ray_address, judge=judge, concurrency=args.concurrency,
                    resume=not args.new_run, output=output, on_progress=lambda done, total: bar.update(done, total),
                    allow_other_endpoint=args.allow_other_endpoint,
                )  # fmt: skip
            else:
                report = score_dataset(
                    store,
                    args.dataset,
                    specs,
                    judge=judge,
                    concurrency=args.concurrency,
                    resume=not args.new_run,
                    output=output,
                    on_progress=lambda done, total: bar.update(done, total),
                    workers=args.workers or default_workers(),
                    allow_other_endpoint=args.allow_other_endpoint,
                )
        except OtherEndpointError as exc:
            own = f"--base-url {exc.run_url}" if exc.run_url else "its endpoint"
            raise UsageError(
                f"run #{exc.run_id} (unfinished) called its judge at {exc.run_url or 'an endpoint it did not record'}; "
                f"this command would call {exc.url}. Resume it there with {own}, here with --allow-other-endpoint, "
                "or start afresh with --new-run"
            ) from None
        finally:
            bar.close()
    run = report.run
    how = f"resumed run {run.id} ({report.skipped} sessions already scored)" if report.resumed else f"run {run.id}"
    _say(f"{how}: {report.sessions} sessions of {args.dataset!r}, {report.judge_requests} judge requests", err)
    if on_ray:
        cpus, parts = getattr(report, "cpus", 0), getattr(report, "partitions", 0)
        _say(f"on Ray ({cpus} CPUs): {parts} partitions scored{' (cancelled)' if report.cancelled else ''}", err)
    human = err if machine_on_stdout else sys.stdout  # standard output holds only JSON when the scores go there
    for summary in report.summaries:
        _say(summary.describe(), human)
    if report.output:
        _say(f"scores written to {visible(str(report.output))}", err)
    below = breaches(report.summaries, floors)
    for breach in below:
        _say(f"evalcore: fail-under: {breach.describe()}", err)
    if floors and not below:
        reached = ", ".join(f"{key} >= {floor:g}" for key, floor in floors.items())
        _say(f"evalcore: fail-under: every floor reached ({reached})", err)
    if summary_path is not None:
        from evalcore._infra.outputs import atomic_output

        with atomic_output(summary_path) as out:
            out.write(summary_json(report, floors))
        _say(f"summary written to {visible(summary_path)}", err)
    return exit_code(report.summaries, floors)


def _judge(args: argparse.Namespace) -> JudgeConfig | None:
    from evalcore.judge import JudgeConfig

    return JudgeConfig.from_env(
        model=args.judge_model, base_url=args.base_url, api_key=args.api_key, prices=args.prices,
        timeout=args.timeout, max_retries=args.max_retries,
    )  # fmt: skip


def _score_shard(args: argparse.Namespace, specs: list[str], err: TextIO) -> int:
    from evalcore.shards import score_shard
    from evalcore.store import open_store

    for option, given in (("--fail-under", args.fail_under), ("--summary-json", args.summary_json)):
        if given:
            raise UsageError(f"--shard writes no run: {option} belongs to import-scores' run (score without --shard)")
    if not args.output or args.output == "-":
        raise UsageError("--shard needs --output FILE: the shard file import-scores reads")
    _checked_outputs(args.db, args.output)
    index, count = args.shard
    bar = ProgressBar(f"scoring {args.dataset} shard {index}/{count}", err)
    with open_store(args.db) as store:
        try:
            report = score_shard(
                store, args.dataset, specs, args.shard, args.output, judge=_judge(args), concurrency=args.concurrency,
                on_progress=lambda done, total: bar.update(done, total),
            )  # fmt: skip
        finally:
            bar.close()
    judged = f", {report.judge_cached} new judge answers, {report.concurrency} judge calls at a time" if (
        report.concurrency
    ) else ""  # fmt: skip
    _say(
        f"shard {index}/{count}: {report.sessions} of {report.of} sessions of {args.dataset!r}, {report.rows} scores"
        f"{judged}, written to {visible(report.output)}",
        err,
    )
    return 0


def _import_scores(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.metrics import load_metric_plugin
    from evalcore.shards import import_scores
    from evalcore.store import open_store

    for plugin in args.plugin:
        load_metric_plugin(plugin)
    specs = [m.strip() for m in args.metrics.split(",") if m.strip()] + args.metric
    bar = ProgressBar(f"importing scores into {args.dataset}", err)
    with open_store(args.db) as store:
        try:
            report = import_scores(
                store, args.files, args.dataset, specs=specs, judge_model=args.judge_model, new_run=args.new_run,
                on_progress=lambda rows: bar.update(rows, unit="scores"),
            )  # fmt: skip
        finally:
            bar.close()
    for problem in report.problems[:50]:
        _say(f"evalcore: {visible(problem)}", err)
    if len(report.problems) > 50:
        _say(f"evalcore: ... and {len(report.problems) - 50} more problems", err)
    run = report.run
    how = "new run" if report.created else "run"
    state = (
        "done" if report.complete
        else f"{report.sessions - report.scored} sessions still without every score: import their shards"
    )  # fmt: skip
    _say(
        f"{how} {run.id} of {args.dataset!r}: {report.rows} scores from {report.files} files, "
        f"{report.judge_cached} judge answers; {report.scored} of {report.sessions} sessions scored; {state}",
        err,
    )
    return 1 if report.problems else 0


def _stdout_dash(path: str | None) -> str | None:
    """An output path with ``-`` meaning standard output (``/dev/stdout``, written into as a stream)."""
    return "/dev/stdout" if path == "-" else path


def _checked_outputs(db: str | None, *paths: str | None) -> bool:
    """Refuse (exit 2), before anything runs, an output that cannot be written, is the store, or is another of
    ``paths``; whether one of them is standard output."""
    from evalcore._infra.outputs import output_target

    targets = []
    for path in paths:
        if path is not None:
            _not_the_store(path, db)
            targets.append(output_target(path))  # a folder or a missing folder is refused now, not after the run
    streams = [t.fd for t in targets if t.stream]
    files = [os.path.realpath(t.path) for t in targets if not t.stream]
    if len(set(streams)) < len(streams) or len(set(files)) < len(files):
        raise UsageError("--output and --summary-json name the same place: give each its own")
    return 1 in streams


def _list_metrics(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.metrics import load_metric_plugin, metrics, plugin_failures
    from evalcore.metrics.base import BUILTIN_METRICS

    for plugin in args.plugin:
        load_metric_plugin(plugin)
    listed = metrics()
    width = max((len(cls.name) for cls in listed), default=0)
    for cls in listed:  # name, kind, what it is, what it needs (and where a plug-in's comes from)
        kind = "LLM judge" if cls.uses_judge else "deterministic"
        needs = ", ".join(cls.needs) or "nothing"
        origin = "" if cls.__module__ in BUILTIN_METRICS else f" (plug-in: {cls.__module__})"
        _say(f"{cls.name:<{width}}  {kind:<13}  {cls.description}{origin}; needs {needs}", sys.stdout)
    for failure in plugin_failures():
        _say(f"evalcore: error: {failure}", err)
    return 1 if plugin_failures() else 0


def _solve(args: argparse.Namespace, err: TextIO) -> int:
    from evalcore.model import ModelConfig
    from evalcore.solver import load_task
    from evalcore.solver.dataset import solve_into
    from evalcore.solver.samples import read_placed_samples
    from evalcore.store import open_store

    task = load_task(args.task, dict(args.config))  # every problem of the file at once, or a missing --config
    placed, problems = read_placed_samples(args.samples)
    for problem in problems:
        _say(f"{visible(args.samples)}: {visible(str(problem))}", err)
    concurrency = args.concurrency
    config = ModelConfig.for_models(
        args.model, base_url=args.base_url, api_key=args.api_key, prices=args.prices, concurrency=concurrency,
        timeout=args.timeout, max_retries=args.max_retries,
    )  # fmt: skip
    bar = ProgressBar(f"solving {Path(args.task).name}", err)
    with open_store(args.db) as store:
        try:
            report = solve_into(
                store, task, [row for _, row in placed], args.dataset, config, concurrency=concurrency,
                places=[n for n, _ in placed], on_progress=lambda done, total: bar.update(done, total),
            )  # fmt: skip
        finally:
            bar.close()
    for line in report.errors:
        _say(f"evalcore: sample {visible(str(line))}", err)
    _say(report.describe(), err)
    return 1 if report.failed or problems or report.errors else 0


def app_path() -> Path:
    """The app's entry script: ``app.py`` of the installed ``evalcore_app`` package, else of the checkout."""
    spec = importlib.util.find_spec("evalcore_app")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / "app.py"
        if candidate.is_file():
            return candidate
    return Path(__file__).resolve().parent.parent / "app.py"


def _run_app(db: str | None, *, port: int = 8501, address: str = "127.0.0.1") -> int:
    from evalcore.store.store import is_postgres, sqlite_path

    if db:
        config.set_database(db if is_postgres(db) else os.path.abspath(sqlite_path(db)))
    command = [
        sys.executable, "-m", "streamlit", "run", str(app_path()),
        "--server.port", str(port), "--server.address", address, "--browser.gatherUsageStats", "false",
        "--client.showErrorDetails", "none", "--client.toolbarMode", "minimal", "--theme.primaryColor", "#2f62c7",
    ]  # fmt: skip
    if os.name == "posix":
        # This process becomes the server: a signal meant for `evalcore app` reaches Streamlit itself.
        os.execv(sys.executable, command)
    return subprocess.call(command)


if __name__ == "__main__":  # pragma: no cover
    entry()

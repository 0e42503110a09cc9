"""One measurement of ``bench_store.py`` in a process of its own, on the evalcore of a given code folder.

    python store_probe.py CODE URL ACTION JSON

``CODE`` is a folder holding an ``evalcore`` package (the working tree's, or an older commit's extracted with
``git archive``): it goes first on ``sys.path`` and setuptools' editable finder (which would bring the installed
checkout's evalcore) is dropped from ``sys.meta_path``; the evalcore imported is checked to be ``CODE``'s. The
probe speaks both store APIs: the current one (``open_store(url)``, repositories such as ``store.sessions``) and
the one before it (``Store(path)``, ``browse(store, ...)``, ``store.write()``), trying the first and falling
back to the second. ``URL`` is a SQLite path or a ``postgresql://`` URL (the current API only).

Actions (``JSON`` holds their arguments, or ``@FILE`` names a file holding them); each prints one line
``BENCH_RESULT {...}``:

- ``import``: ``import_file`` of ``file`` into ``dataset``, timed around the call alone (wall time, and the CPU
  time of this process and of the reader process it starts); its counts and the database's size.
- ``export``: ``export_dataset`` of ``dataset`` to ``ragas`` and to ``evalcore`` in folder ``out``, each timed.
- ``setup``: statuses, assistants and tags of every session (``review``: lists in file order) by SQL, then
  ``set_status`` through the API on every ``every``-th session, each timed; on PostgreSQL then ``VACUUM
  ANALYZE`` (what autovacuum does soon after such a change), so that every run plans on the same statistics.
- ``browse``: each of ``queries`` once untimed (the page returned, to be checked), then ``runs`` timed passes over
  all of them.
- ``reviewer``: one simulated reviewer: prints ``READY``, waits for a line on standard input, then for
  ``seconds`` repeatedly opens a page of 50, reads one of its sessions and saves a change to its reference
  (retrying on ``ConflictError``), with no pause (``pace`` 0) or starting a round every ``pace`` seconds; the
  latency of each page, read and save.
- ``roundtrip`` (PostgreSQL): ``SELECT 1`` ``runs`` times over a psycopg connection of its own: the median and the
  least, the floor under any page.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import json
import os
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

MARK = "BENCH_RESULT "  # as _common.MARK (not imported: this probe imports nothing of the checkout's tests)


def use_code(code: str) -> None:
    """Make ``import evalcore`` find ``code``'s evalcore, whatever is installed."""
    sys.path.insert(0, code)
    sys.meta_path[:] = [f for f in sys.meta_path if not (getattr(f, "__module__", "") or "").startswith("__editable")]
    import evalcore

    found = Path(evalcore.__file__).resolve()
    if not found.is_relative_to(Path(code).resolve()):
        raise SystemExit(f"store_probe: imported evalcore from {found}, not from {code}")


class Api:
    """The store's operations as either API offers them."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.postgres = url.startswith(("postgresql://", "postgres://"))
        try:
            from evalcore.exporting import export_dataset
            from evalcore.importing import import_file
            from evalcore.store import open_store
            from evalcore.store.queries import SessionFilter

            self.new = True
            self._open: Callable[[str], Any] = open_store
        except ImportError:  # the API before open_store: Store(path), free functions, Store methods
            from evalcore.store import Store, import_file  # type: ignore[no-redef]
            from evalcore.store.queries import SessionFilter

            export_dataset = importlib.import_module("evalcore.store.exports").export_dataset  # (gone since)

            if self.postgres:
                raise SystemExit("store_probe: this evalcore has no PostgreSQL engine") from None
            self.new = False
            self._open = Store
        from evalcore.errors import ConflictError

        self.import_file = import_file
        self.export_dataset = export_dataset
        self.SessionFilter = SessionFilter
        self.ConflictError = ConflictError
        self.store: Any = None

    def open(self) -> Any:
        self.store = self._open(self.url)
        return self.store

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    def sessions(self) -> Any:
        """What holds the session operations: ``store.sessions``, or the store itself before."""
        return self.store.sessions if self.new else self.store

    def writer(self, name: str) -> tuple[Any, dict[str, Any]]:
        """The session operations of a change made by ``name``, and the arguments naming them: ``author=`` where
        a save takes it, else (with sign-in's users) the store used by the user ``name``."""
        sessions = self.sessions()
        if "author" in inspect.signature(sessions.save).parameters:
            return sessions, {"author": name}
        user = self.store.users.ensure(iss="bench", sub=name, name=name, role="reviewer")
        return self.store.as_user(user).sessions, {}

    def browse(self, dataset: str, filters: dict[str, Any], **kwargs: Any) -> Any:
        f = self.SessionFilter(**filters)
        if self.new:
            return self.store.sessions.browse(dataset, f, **kwargs)
        from evalcore.store.queries import browse  # type: ignore[attr-defined]

        return browse(self.store, dataset, f, **kwargs)

    def write(self) -> AbstractContextManager[Any]:
        """A transaction's connection (``?`` placeholders on either engine): the bench sets rows up by SQL."""
        writing: AbstractContextManager[Any] = self.store._engine.write() if self.new else self.store.write()
        return writing

    @contextmanager
    def autocommit(self) -> Iterator[Any]:
        """A connection outside any transaction (PostgreSQL's VACUUM needs one)."""
        with self.store._engine.read() as conn:
            yield conn

    def size_mb(self) -> float:
        if self.postgres:
            with self.autocommit() as conn:
                return int(conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]) / 1e6
        path = self.url.removeprefix("sqlite:///")
        return sum(os.path.getsize(p) for p in (path, f"{path}-wal") if os.path.exists(p)) / 1e6


def result(**values: Any) -> None:
    print(MARK + json.dumps(values), flush=True)


# -- actions --------------------------------------------------------------------------------------


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of the children it waited for (the import's reader)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def do_import(api: Api, args: dict[str, Any]) -> None:
    api.open()
    gc.collect()
    cpu = cpu_seconds()
    start = time.perf_counter()
    report = api.import_file(api.store, args["file"], args["dataset"])
    seconds = time.perf_counter() - start
    cpu = cpu_seconds() - cpu
    counts = [report.new, report.updated, report.unchanged, report.failed]
    result(seconds=seconds, cpu=cpu, counts=counts, mb=api.size_mb())


def do_export(api: Api, args: dict[str, Any]) -> None:
    api.open()
    out: dict[str, Any] = {}
    for to in ("ragas", "evalcore"):
        dst = Path(args["out"]) / f"export.{to}.jsonl"
        gc.collect()
        start = time.perf_counter()
        report = api.export_dataset(api.store, args["dataset"], dst, to)
        out[to] = {"seconds": time.perf_counter() - start, "count": report.count, "bytes": dst.stat().st_size}
    result(**out)


def do_setup(api: Api, args: dict[str, Any]) -> None:
    api.open()
    review = args["review"]
    status, assistant, tags = review["status"], review["assistant"], review["tags"]
    pks = api.sessions().pks(args["dataset"])
    if len(pks) != len(status):
        raise SystemExit(f"store_probe: the store holds {len(pks)} sessions, not {len(status)}")
    start = time.perf_counter()
    with api.write() as conn:
        conn.executemany(
            "UPDATE sessions SET status = ?, assistant_id = ?, tags = ? WHERE id = ?",
            [(status[i], assistant[i], json.dumps(tags[i]), pk) for i, pk in enumerate(pks)],
        )
        conn.executemany(
            "INSERT INTO session_tags (session_pk, tag) VALUES (?, ?)",
            [(pk, tag) for i, pk in enumerate(pks) for tag in tags[i]],
        )
    sql_seconds = time.perf_counter() - start
    vacuum_seconds = 0.0
    if api.postgres:
        start = time.perf_counter()
        with api.autocommit() as conn:
            conn.execute("VACUUM ANALYZE")
        vacuum_seconds = time.perf_counter() - start
    set_status_ms = []
    sessions, by = api.writer("bench")
    for i in range(0, len(pks), args["every"]):
        version = sessions.get(pks[i]).version
        start = time.perf_counter()
        sessions.set_status(pks[i], args["new_status"][str(i)], base_version=version, **by)
        set_status_ms.append((time.perf_counter() - start) * 1000)
    result(sql_seconds=sql_seconds, vacuum_seconds=vacuum_seconds, set_status_ms=set_status_ms)


def do_browse(api: Api, args: dict[str, Any]) -> None:
    """Every page once untimed (returned, to be checked), then ``runs`` passes over all of them, timed: a moment of
    the machine's other work falls on every page alike, not on the runs of one."""
    api.open()

    def run(q: dict[str, Any]) -> Any:
        return api.browse(
            args["dataset"], q["filters"], sort=q["sort"], descending=q["descending"], limit=50, offset=q["offset"]
        )

    out = []
    for q in args["queries"]:
        page = run(q)
        items = [[s.pk, s.status, s.n_turns, s.n_tool_calls, s.updated_at] for s in page.items]
        out.append({"total": page.total, "items": items, "times": []})
    for _ in range(args["runs"]):
        for q, found in zip(args["queries"], out, strict=True):
            start = time.perf_counter()
            run(q)
            found["times"].append((time.perf_counter() - start) * 1000)
    result(queries=out)


def do_reviewer(api: Api, args: dict[str, Any]) -> None:
    """One reviewer, as ``bench_store.py`` starts twenty of them at once."""
    rng = random.Random(args["seed"])
    author = f"reviewer-{args['index']}"
    views = args["views"]  # [filters, sort, descending]
    pages = args["pages"]
    api.open()
    api.browse(args["dataset"], {}, limit=50)  # connected, warm, before the clock starts
    print("READY", flush=True)
    if not sys.stdin.readline():
        return
    sessions, by = api.writer(author)
    page_ms: list[float] = []
    get_ms: list[float] = []
    save_ms: list[float] = []
    conflicts = 0
    saved = 0
    began = time.perf_counter()
    deadline = began + args["seconds"]
    pace = args["pace"]  # seconds from the start of one round to the next (0: no pause)
    due = began + rng.uniform(0, pace)  # (paced reviewers start out of step)
    while True:
        if pace:
            time.sleep(max(0.0, due - time.perf_counter()))
            due += pace
        if time.perf_counter() >= deadline:
            break
        filters, sort, descending = rng.choice(views)
        start = time.perf_counter()
        page = api.browse(
            args["dataset"], filters, sort=sort, descending=descending, limit=50, offset=50 * rng.randrange(pages)
        )
        page_ms.append((time.perf_counter() - start) * 1000)
        pk = rng.choice(page.items).pk
        while True:
            start = time.perf_counter()
            stored = sessions.get(pk)
            get_ms.append((time.perf_counter() - start) * 1000)
            change = {"reference": f"Checked by {author}, change {saved + 1} ({rng.random():.6f})."}
            start = time.perf_counter()
            try:
                sessions.save(pk, change, base_version=stored.version, **by)
            except api.ConflictError:
                save_ms.append((time.perf_counter() - start) * 1000)
                conflicts += 1
                continue  # read it again, then save again
            save_ms.append((time.perf_counter() - start) * 1000)
            saved += 1
            break
    result(
        page_ms=page_ms, get_ms=get_ms, save_ms=save_ms, conflicts=conflicts, saved=saved,
        seconds=time.perf_counter() - began,
    )  # fmt: skip


def do_roundtrip(api: Api, args: dict[str, Any]) -> None:
    """PostgreSQL's floor: ``SELECT 1`` over a connection of its own (psycopg, no evalcore), ``runs`` times after
    100 untimed; the median and the least, in ms. What no page of a client-server database can take less than."""
    import psycopg

    with psycopg.connect(api.url, autocommit=True) as conn:
        for _ in range(100):
            conn.execute("SELECT 1").fetchall()
        times = []
        for _ in range(args["runs"]):
            start = time.perf_counter()
            conn.execute("SELECT 1").fetchall()
            times.append((time.perf_counter() - start) * 1000)
    result(median_ms=statistics.median(times), least_ms=min(times))


ACTIONS: dict[str, Callable[[Api, dict[str, Any]], None]] = {
    "roundtrip": do_roundtrip,
    "import": do_import,
    "export": do_export,
    "setup": do_setup,
    "browse": do_browse,
    "reviewer": do_reviewer,
}


def main() -> int:
    code, url, action, raw = sys.argv[1:5]
    use_code(code)
    api = Api(url)
    args = json.loads(Path(raw[1:]).read_text(encoding="utf-8") if raw.startswith("@") else raw)
    try:
        ACTIONS[action](api, args)
    finally:
        api.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

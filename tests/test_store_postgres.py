"""The store on PostgreSQL against SQLite, and what only PostgreSQL has: its schema's upgrade, the same search
results as SQLite's FTS5, ``evalcore db copy`` both ways, and faults that say what to do (the server down, a
wrong password, a missing database, a full disk, a statement timeout, a connection lost mid-save, a restart).

Every test here runs a real server (``tests/pgcluster.py``) on a unix socket, and real commands.
"""

from __future__ import annotations

import json
import random
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from dbutil import as_user, execute, query
from formats_util import write_jsonl

from evalcore.errors import DatabaseFaultError, SchemaVersionError, UsageError
from evalcore.exporting import ExportStream
from evalcore.importing import import_file
from evalcore.samples import load_samples
from evalcore.scoring import score_dataset
from evalcore.store import SessionFilter, Store, open_store
from evalcore.store.copy import TABLES, copy_store
from evalcore.store.labels import LABEL
from evalcore.store.pg_migrations import MIGRATIONS
from evalcore.store.search import words

ROOT = Path(__file__).resolve().parent.parent
EVALCORE = str(Path(sys.executable).parent / "evalcore")


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVALCORE, *args], capture_output=True, text=True, timeout=timeout)


def _accented(i: int) -> dict[str, Any]:
    texts = [
        "Crème brûlée for the naïve café owner, façade déjà vu",
        "Ærøskøbing Straße: ŒUVRE and œuvre, İstanbul ıi",
        "日本語のテキスト and 中文 mixed_with snake_case_words",
        "e\u0301 combining acute, fullwidth ＡＢＣ, ligature ﬁle, µ and Ω",
        "refund #4512 for order-77 (voucher: X9-Z) via e-mail ann@example.com",
        "Emoji 😀 and € symbols, ½ fractions, → arrows",
    ]
    return {
        "session_id": f"acc-{i}",
        "messages": [
            {"role": "user", "content": texts[i % len(texts)] + f" item{i}"},
            {"role": "assistant", "content": f"Answer {i}: " + texts[(i + 2) % len(texts)]},
        ],
    }


def _fill_store(store: Store, tmp_path: Path, tau_bench_file: Path) -> None:
    load_samples(store, ROOT / "sample_data")
    import_file(store, tau_bench_file, "tau", workers=1)
    import_file(store, write_jsonl(tmp_path / "accents.jsonl", [_accented(i) for i in range(30)]), "accents", workers=1)


def _queries(store: Store, dataset: str, seed: int) -> list[str]:
    """Words of the dataset's own text (whole, prefixes, with accents and in capitals), and a few that match
    nothing, to search for."""
    rng = random.Random(seed)
    vocabulary = sorted(
        {w for stored in store.sessions.get_many(store.sessions.pks(dataset)) for m in stored.session.messages
         for w in words(m.text)}
    )  # fmt: skip
    picked = rng.sample(vocabulary, min(25, len(vocabulary)))
    queries = picked + [w[: max(1, len(w) // 2)] + "*" for w in picked[:10]]
    queries += [f"{a} {b}" for a, b in zip(picked[::2], picked[1::2], strict=False)][:8]
    queries += [w.upper() for w in picked[:5]] + ["zzqx", "naïve", "NAIVE", "creme brulee", "œuvre", "straße"]
    queries += ["snake_case", "order-77", "ann@example.com", "日本語のテキスト", "ＡＢＣ", "ﬁle", "é", "e\u0301"]
    return queries


def test_search_finds_the_same_sessions_on_both_engines(pg_cluster: Any, tmp_path: Path, tau_bench_file: Path) -> None:
    with open_store(tmp_path / "s.db") as lite, open_store(pg_cluster.new_database()) as pg:
        _fill_store(lite, tmp_path, tau_bench_file)
        _fill_store(pg, tmp_path, tau_bench_file)
        checked = 0
        for dataset in lite.datasets.names():
            for text in _queries(lite, dataset, seed=len(dataset)):
                if not words(text.replace("*", " ")):
                    continue
                f = SessionFilter(search=text)
                want = [s.key for s in lite.sessions.browse(dataset, f, limit=1000).items]
                got = [s.key for s in pg.sessions.browse(dataset, f, limit=1000).items]
                assert got == want, (dataset, text)
                checked += 1
        assert checked > 300
        # The accents are folded, as FTS5 folds them: a query without them finds the words with them.
        assert pg.sessions.count("accents", SessionFilter(search="creme brulee naive")) == 10  # asked or answered
        assert pg.sessions.count("accents", SessionFilter(search="oeuvre")) == 0  # (FTS5 keeps ligatures)


def test_the_fts5_table_is_the_one_this_sqlite_has() -> None:
    sys.path.insert(0, str(ROOT / "tests" / "tools"))
    from make_fts5_table import read_table

    from evalcore.store.fts5_table import FOLDED, SEPARATORS

    separators, folded = read_table()
    assert tuple(separators) == SEPARATORS and folded == FOLDED


def test_a_database_without_the_schema_is_refused_until_upgraded(pg_cluster: Any) -> None:
    url = pg_cluster.new_database(migrated=False)
    with pytest.raises(SchemaVersionError, match=r"has no evalcore tables yet: run  evalcore db upgrade"):
        open_store(url)
    refused = run("import", str(ROOT / "sample_data" / "ragas.jsonl"), "--dataset", "d", "--db", url)
    assert refused.returncode == 2 and "evalcore db upgrade" in refused.stderr and "Traceback" not in refused.stderr
    upgraded = run("db", "upgrade", url)
    assert upgraded.returncode == 0 and "applied 0001_initial" in upgraded.stderr, upgraded.stderr
    again = run("db", "upgrade", url)
    assert again.returncode == 0 and "already up to date" in again.stderr
    imported = run("import", str(ROOT / "sample_data" / "ragas.jsonl"), "--dataset", "d", "--db", url)
    assert imported.returncode == 0, imported.stderr
    # Ahead of the code: upgraded by a newer evalcore.
    with open_store(url) as store:
        execute(store, "INSERT INTO evalcore_migrations (name, applied_at) VALUES ('9999_future', 'x')")
    with pytest.raises(SchemaVersionError, match=r"upgraded by a newer evalcore \(migrations 9999_future\)"):
        open_store(url)


def test_two_upgrades_at_once_apply_the_schema_once(pg_cluster: Any) -> None:
    url = pg_cluster.new_database(migrated=False)
    procs = [subprocess.Popen([EVALCORE, "db", "upgrade", url], stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    assert sum("applied 0001_initial" in out for out in outs) == 1
    with open_store(url) as store:
        assert query(store, "SELECT count(*) FROM evalcore_migrations") == [(len(MIGRATIONS),)]  # each once


def _everything(store: Store) -> dict[str, Any]:
    """What a store holds, as a person could ask for it: every export, history, comment, verdict, run, score,
    job, the judge cache, and a search."""
    seen: dict[str, Any] = {}
    for dataset in store.datasets.names():
        seen[f"export {dataset}"] = ExportStream(store, dataset, "evalcore").read_all()
        pks = store.sessions.pks(dataset)
        seen[f"history {dataset}"] = [[(e.id, e.field, e.new, e.author, e.version) for e in store.sessions.history(pk)]
                                      for pk in pks]  # fmt: skip
        seen[f"comments {dataset}"] = [[(c.author, c.body) for c in store.labels.comments(pk)] for pk in pks]
        seen[f"verdicts {dataset}"] = [
            (v.session_pk, v.author, v.name, v.value) for v in store.labels.human_verdicts(dataset)
        ]
        seen[f"search {dataset}"] = [s.pk for s in store.sessions.browse(dataset, SessionFilter(search="order*")).items]
        for run in store.runs.recent(dataset):
            seen[f"run {run.id}"] = (
                run.metrics, run.status, run.imported, run.n_done, run.n_failed, run.n_not_applicable,
            )  # fmt: skip
            seen[f"scores {run.id}"] = [
                (r.session_pk, r.metric, r.turn, r.status, r.value) for r in store.runs.scores(run.id, turns=True)
            ]
    seen["jobs"] = [(j.id, j.kind, j.dataset, j.status) for j in store.jobs.recent(limit=1000)]
    seen["cache"] = query(store, "SELECT key, model, request, response FROM judge_cache ORDER BY key")
    return seen


def test_db_copy_sqlite_to_postgresql_and_back_loses_nothing(
    pg_cluster: Any, tmp_path: Path, tau_bench_file: Path
) -> None:
    source = tmp_path / "team.db"
    with open_store(source) as store:
        _fill_store(store, tmp_path, tau_bench_file)
        pks = store.sessions.pks("tau")
        for i, pk in enumerate(pks[:5]):
            version = as_user(store, "ann").sessions.save(pk, {"observation": f"curated {i}"}, base_version=1, turn=0)
            as_user(store, "bob").sessions.set_status(pk, "approved", base_version=version, reason="checked")
            as_user(store, "ann").labels.add_comment(pk, f"comment {i}", turn=0)
            as_user(store, "bob").labels.set_verdict(pk, LABEL, float(i % 2))
        as_user(store, "cy").sessions.tag_many(pks[5:10], add=["hard"])
        score_dataset(store, "tau", ["tool_call_f1", "turn_count"])
        as_user(store, "ann").jobs.create("import", "tau", "import x", unit="bytes")
        execute(store, "INSERT INTO judge_cache (key, model, request, response, input_tokens, output_tokens, "
                "created_at) VALUES ('k1', 'gpt', '{\"a\": 1}', 'yes', 3, 4, 'now')")  # fmt: skip
        before = _everything(store)
        assert [k for k, v in before.items() if k.startswith("run ") and v[2]]  # τ-bench's rewards: an imported run
    url = pg_cluster.new_database(migrated=False)  # (db copy upgrades a new PostgreSQL database itself)
    copied = run("db", "copy", str(source), url)
    assert copied.returncode == 0, copied.stderr
    assert f"copied {source} to " in copied.stderr and "sessions" in copied.stderr and "scores" in copied.stderr
    with open_store(url) as pg:
        assert _everything(pg) == before
        counts = {t.name: query(pg, f"SELECT count(*) FROM {t.name}")[0][0] for t in TABLES}
        # Used after the copy: new rows get new ids (the sequences moved past the copied ones).
        pk = pg.sessions.pks("tau")[20]
        as_user(pg, "dee").sessions.save(pk, {"reference": "after the copy"}, base_version=1)
        assert pg.datasets.get("fresh", create=True).id > max(d.id for d in pg.datasets.all() if d.name != "fresh")
    # Again: nothing copied twice.
    again = run("db", "copy", str(source), url)
    assert again.returncode == 0, again.stderr
    with open_store(url) as pg:
        assert {t.name: query(pg, f"SELECT count(*) FROM {t.name}")[0][0] for t in TABLES}["sessions"] == counts[
            "sessions"
        ]
        assert query(pg, "SELECT count(*) FROM edits")[0][0] == counts["edits"] + 1  # the save made after the copy
    # And back into a new SQLite file.
    back = tmp_path / "back.db"
    returned = run("db", "copy", url, str(back))
    assert returned.returncode == 0, returned.stderr
    with open_store(back) as lite, open_store(source) as original:
        mine = _everything(lite)
        theirs = _everything(original)
        for key, value in theirs.items():
            if key.startswith("export") and key != "export tau":
                assert mine[key] == value, key
        assert mine["search tau"] == theirs["search tau"]
    # A store of other data is never merged into.
    other = tmp_path / "other.db"
    with open_store(other) as store:
        import_file(store, ROOT / "sample_data" / "ragas.jsonl", "mine", workers=1)
    refused = run("db", "copy", str(source), str(other))
    assert refused.returncode == 2 and "holds datasets already" in refused.stderr
    with open_store(source) as one, open_store(source) as same, pytest.raises(UsageError, match="both the source"):
        copy_store(one, same)


# -- faults --------------------------------------------------------------------------------------------------


def test_a_server_that_is_down_is_said_so(tmp_path: Path) -> None:
    url = f"postgresql://evalcore@/nowhere?host={tmp_path}"
    with pytest.raises(
        DatabaseFaultError, match=r"cannot open the database .*: the server cannot be reached"
    ) as caught:
        open_store(url)
    assert caught.value.kind == "unreachable"
    proc = run("import", str(ROOT / "sample_data" / "ragas.jsonl"), "--dataset", "d", "--db", url)
    assert proc.returncode == 3 and "the server cannot be reached" in proc.stderr and "Traceback" not in proc.stderr


def test_a_missing_database_and_a_wrong_password_are_said_so(pg_cluster: Any) -> None:
    with pytest.raises(DatabaseFaultError, match=r"the database does not exist.*createdb") as caught:
        open_store(pg_cluster.url("no_such_db"))
    assert caught.value.kind == "missing"
    pg_cluster.require_password("alice", "right")
    url = pg_cluster.url(pg_cluster.new_database_name(), user="alice:wrong")
    with pytest.raises(DatabaseFaultError, match=r"refused the user name or password") as wrong:
        open_store(url)
    assert wrong.value.kind == "auth" and "wrong" not in str(wrong.value)  # the password is never shown
    proc = run("export", "--dataset", "d", "--to", "ragas", "-o", "/tmp/x.jsonl", "--db", url)
    assert proc.returncode == 3 and ":***@" in proc.stderr and "wrong" not in proc.stderr


def test_a_statement_timeout_fails_the_save_cleanly(pg_cluster: Any, tmp_path: Path) -> None:
    url = pg_cluster.new_database()
    with open_store(url) as store:
        import_file(store, ROOT / "sample_data" / "ragas.jsonl", "d", workers=1)
        pk = store.sessions.pks("d")[0]
    timed = url + "&options=-c%20statement_timeout%3D300"
    holder = _RowLock(url, pk)
    try:
        with open_store(timed) as store:
            with pytest.raises(DatabaseFaultError, match=r"statement_timeout") as caught:
                as_user(store, "ann").sessions.save(pk, {"reference": "never"}, base_version=1)
            assert caught.value.kind == "timeout"
    finally:
        holder.release()
    with open_store(url) as store:  # nothing half-written; the save goes through once the row is free
        assert store.sessions.get(pk).version == 1 and store.sessions.history(pk) == []
        assert as_user(store, "ann").sessions.save(pk, {"reference": "now"}, base_version=1) == 2


class _RowLock:
    """Another client holding a session's row locked (an open transaction), until ``release``."""

    def __init__(self, url: str, pk: int) -> None:
        import psycopg

        self.conn = psycopg.connect(url)
        self.conn.execute("SELECT id FROM sessions WHERE id = %s FOR UPDATE", [pk])

    def release(self) -> None:
        self.conn.rollback()
        self.conn.close()


def test_a_connection_lost_mid_save_writes_nothing_and_the_store_goes_on(pg_cluster: Any) -> None:
    url = pg_cluster.new_database()
    store = open_store(url)
    import_file(store, ROOT / "sample_data" / "ragas.jsonl", "d", workers=1)
    pk = store.sessions.pks("d")[0]
    holder = _RowLock(url, pk)
    caught: list[BaseException] = []

    def save() -> None:
        try:
            as_user(store, "ann").sessions.save(pk, {"reference": "lost"}, base_version=1)
        except BaseException as exc:
            caught.append(exc)

    saver = threading.Thread(target=save)
    saver.start()
    deadline = time.monotonic() + 10
    waiting: list[tuple[Any, ...]] = []
    while not waiting and time.monotonic() < deadline:  # the save waits for the row: cut its connection there
        waiting = query(
            store, "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%UPDATE sessions%'"
        )
        time.sleep(0.05)
    assert waiting, "the save never waited for the row"
    query(store, "SELECT pg_terminate_backend(?)", [waiting[0][0]])
    saver.join(30)
    holder.release()
    assert len(caught) == 1 and isinstance(caught[0], DatabaseFaultError), caught
    assert caught[0].kind == "lost" and "nothing of the failed change was saved" in str(caught[0])
    assert store.sessions.get(pk).version == 1 and store.sessions.history(pk) == []  # nothing half-written
    assert as_user(store, "ann").sessions.save(pk, {"reference": "again"}, base_version=1) == 2  # the store goes on
    store.close()


def test_the_store_survives_a_server_restart(pg_cluster: Any) -> None:
    url = pg_cluster.new_database()
    store = open_store(url)
    import_file(store, ROOT / "sample_data" / "ragas.jsonl", "d", workers=1)
    pks = store.sessions.pks("d")
    assert store.sessions.browse("d").total == len(pks)
    pg_cluster.restart()
    # The pool's connections died with the server: each is checked when lent, and replaced.
    assert store.sessions.browse("d").total == len(pks)
    assert as_user(store, "ann").sessions.save(pks[0], {"reference": "after the restart"}, base_version=1) == 2
    store.close()


def test_a_connection_is_lent_without_a_round_trip_unless_its_socket_says_something(pg_cluster: Any) -> None:
    """The pool's check costs a live idle connection nothing (a page or a save is not one round trip longer); a
    connection whose backend the server ended is refused when lent (and the pool takes another)."""
    import psycopg

    from evalcore.store.postgres import _check_lent

    class NoRoundTrip:  # the connection as the check sees it, refusing any statement
        def __init__(self, conn: Any) -> None:
            self.conn, self.closed, self.broken, self.autocommit = conn, False, False, True

        def fileno(self) -> int:
            return int(self.conn.fileno())

        def execute(self, *args: Any) -> None:
            raise AssertionError("a round trip")

    url = pg_cluster.new_database()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT 1").fetchall()
        _check_lent(NoRoundTrip(conn))  # idle and alive: nothing sent
        with psycopg.connect(url, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(?)".replace("?", "%s"), [conn.info.backend_pid])
        select.select([conn.fileno()], [], [], 10)  # (the backend ends soon after it is told)
        with pytest.raises(AssertionError, match="a round trip"):
            _check_lent(NoRoundTrip(conn))  # the server closed it: the check asks
        with pytest.raises(psycopg.OperationalError):
            _check_lent(conn)
        assert conn.broken
        with pytest.raises(DatabaseFaultError):
            _check_lent(conn)


def test_a_full_disk_fails_the_import_cleanly_and_keeps_what_was_stored(tmp_path: Path) -> None:
    from pgcluster import Cluster

    cluster = Cluster()  # a server of its own: one whose disk is full cannot checkpoint, whatever the database
    try:
        _fill_a_small_disk(cluster, tmp_path)
    finally:
        cluster.stop()


def _fill_a_small_disk(cluster: Any, tmp_path: Path) -> None:
    url = cluster.new_database_on_small_disk(megabytes=96)
    rng = random.Random(7)

    def text() -> str:  # (random words: nothing compresses them, every one is a new word to index)
        return " ".join(f"{rng.getrandbits(40):x}" for _ in range(200))

    rows = [
        {"session_id": f"s{i:05d}", "messages": [{"role": "user", "content": text()},
                                                 {"role": "assistant", "content": text()}]}
        for i in range(6000)
    ]  # fmt: skip
    source = write_jsonl(tmp_path / "big.jsonl", rows)
    proc = run("import", str(source), "--dataset", "d", "--db", url, "--workers", "1")
    assert proc.returncode == 3, proc.stderr
    assert "the server's disk is full" in proc.stderr and "Traceback" not in proc.stderr
    with open_store(url) as store:
        stored = store.datasets.get("d").sessions
        assert stored % 2000 == 0 and 2000 <= stored < 6000, stored  # whole batches, each its own transaction
        assert query(store, "SELECT count(*) FROM sessions")[0][0] == stored


def test_a_record_postgresql_cannot_store_costs_only_itself(pg_cluster: Any, tmp_path: Path) -> None:
    def native(session_id: str, text: str) -> dict[str, Any]:
        return {"schema_version": 1, "session_id": session_id, "messages": [{"role": "user", "content": text}]}

    rows = [native(f"ok-{i}", f"hello\u0000 {i}") for i in range(5)]  # (a NUL in a text: stored as JSON says it)
    rows.insert(2, native("nul\u0000id", "hi"))  # a NUL in an id, which PostgreSQL cannot hold
    source = write_jsonl(tmp_path / "nul.jsonl", rows)
    with open_store(pg_cluster.new_database()) as store:
        report = import_file(store, source, "d", workers=1)
        assert (report.new, report.failed) == (5, 1)
        assert [str(p) for p in report.problems] == [
            f"{source}:3: cannot store this record: "
            + str(report.problems[0]).split("cannot store this record: ", 1)[1]
        ]
        assert "a character PostgreSQL cannot store" in str(report.problems[0])
        assert sorted(s.session_id or "" for s in store.sessions.browse("d").items) == [f"ok-{i}" for i in range(5)]


def test_the_password_of_a_url_is_never_shown(pg_cluster: Any) -> None:
    from evalcore.store.postgres import public_url

    assert (
        public_url("postgresql://ann:s3cret@db.example:5432/evalcore")
        == "postgresql://ann:***@db.example:5432/evalcore"
    )
    assert public_url("postgresql://db.example/evalcore?password=s3cret&sslmode=require") == (
        "postgresql://db.example/evalcore?password=***&sslmode=require"
    )
    with open_store(pg_cluster.new_database()) as store:
        assert "evalcore@" in store.where and json.dumps(store.where)


def test_db_copy_knows_every_column_of_both_schemas(pg_cluster: Any, tmp_path: Path) -> None:
    """The copy's list of tables and columns is the schema of both engines (a column added by a migration must be
    copied too)."""
    import sqlite3

    with open_store(tmp_path / "s.db"):
        pass
    conn = sqlite3.connect(tmp_path / "s.db")
    for table in TABLES:
        columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table.name})")]
        assert sorted(columns) == sorted(table.columns), table.name
    conn.close()
    with open_store(pg_cluster.new_database()) as pg:
        for table in TABLES:
            listed = query(pg, "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table.name])
            columns = [c for (c,) in listed if c not in ("search_tsv", "system_tsv")]
            assert sorted(columns) == sorted(table.columns), table.name

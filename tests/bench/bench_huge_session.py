"""Review on a session of 1,000,000 messages (issue 23, item 13): what the server pays to show it.

A generated session (``tests/huge_session.py``: turns of a question, a tool call, its result and an answer, a long
run of calls every 997th turn) is written to a JSON Lines file a message at a time, then, each step in a fresh
process of its own:

- imported (``evalcore.importing.import_file``, as ``evalcore import --max-record-mb`` does: the record is larger
  than the default maximum record size, ``MAX_RECORD``): its time and peak memory;
- the peer, the old path Review took: the whole session read (``store.sessions.get``), its time and peak memory
  growth;
- Review itself (Streamlit's AppTest running the real page, server-side), after a first Review of a small session
  in the same process (so that Streamlit's and the page's imports are not counted): its first render of the large
  session, a page change (median of 5), and the peak memory growth (``VmHWM`` reset through
  ``/proc/self/clear_refs``) over both.

Targets: Review's first render and a page change under 1 s; its memory growth under 100 MB. Run it with
``.venv/bin/python tests/bench/bench_huge_session.py`` (``--messages N`` for another size).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

from _common import ROOT, run_script  # noqa: E402
from huge_session import write  # noqa: E402

from evalcore.formats.jsonio import MAX_RECORD  # noqa: E402

PYTHON = sys.executable

# Every script: the peak resident memory since the mark, in kB (VmHWM reset by clear_refs; where that cannot be
# written, the peak since the process started).
_PEAK = """
import os, sys, time
sys.path.insert(0, {tests!r})

def mark():
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        pass
    return rss_kb("VmRSS")
"""

IMPORT = """
from dbutil import as_user
from evalcore.importing import import_file
from evalcore.store import open_store
path, db, max_record, dataset = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with open_store(db) as store:
    start = mark()
    began = time.perf_counter()
    report = import_file(as_user(store, "importer"), path, dataset, max_record=max_record)
    took = time.perf_counter() - began
    assert report.new == 1 and not report.failed, [str(p) for p in report.problems][:3]
result(seconds=took, peak_mb=(rss_kb("VmHWM") - start) / 1024)
"""

OLD_PATH = """
from evalcore.store import open_store
db = sys.argv[1]
with open_store(db) as store:
    pk = store.sessions.find("huge", "huge")
    store.sessions.get(store.sessions.find("small", "small"))  # (the store's code warmed up)
    start = mark()
    began = time.perf_counter()
    session = store.sessions.get(pk).session
    took = time.perf_counter() - began
    n = len(session.messages)
result(seconds=took, peak_mb=(rss_kb("VmHWM") - start) / 1024, messages=n)
"""

REVIEW = """
import statistics
from streamlit.testing.v1 import AppTest
from evalcore.store import open_store
db = sys.argv[1]
os.environ["EVALCORE_DB"] = db
os.environ["EVALCORE_SAMPLE_DATA"] = os.path.join(os.path.dirname(db), "no-samples")
with open_store(db) as store:
    store.users.rename(store.users.local(), "bench")  # one-person mode: the name given once
at = AppTest.from_file({app!r}, default_timeout=600)
at.query_params.update(dataset="small", session="small")
at.run()
at.switch_page({review!r})
at.run()  # a small session's Review first: Streamlit's imports and the page's are not what is measured
assert not at.exception, at.exception
at.query_params.update(dataset="huge", session="huge")
start = mark()
began = time.perf_counter()
at.run()
first = time.perf_counter() - began
assert not at.exception, at.exception
captions = [str(c.value) for c in at.caption]
shown = next(c for c in captions if c.startswith("Turns "))
changes = []
for _ in range(5):
    at.button(key="turns_on").click()
    began = time.perf_counter()
    at.run()
    changes.append(time.perf_counter() - began)
    assert not at.exception, at.exception
later = next(str(c.value) for c in at.caption if str(c.value).startswith("Turns "))
kept = len(at.session_state["review_base"][next(iter(at.session_state["review_base"]))]["session"].messages)
result(first=first, change=statistics.median(changes), peak_mb=(rss_kb("VmHWM") - start) / 1024, shown=shown,
       later=later, kept=kept)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    args = parser.parse_args()
    tests = str(ROOT / "tests")
    with tempfile.TemporaryDirectory(prefix="bench-huge-") as folder:
        tmp = Path(folder)
        (tmp / "no-samples").mkdir()
        began = time.perf_counter()
        path = write(tmp / "huge.jsonl", "huge", args.messages)
        size = path.stat().st_size
        print(f"generated {args.messages:,} messages: {size / 2**20:,.1f} MiB in {time.perf_counter() - began:.1f} s")
        write(tmp / "small.jsonl", "small", 40)
        max_record = max(MAX_RECORD, size + (1 << 20))
        if size > MAX_RECORD:
            mb = max_record >> 20
            print(f"the record is larger than the default maximum record size ({MAX_RECORD >> 20} MiB): imported "
                  f"with max_record {mb} MiB (evalcore import --max-record-mb {mb})")  # fmt: skip
        db = str(tmp / "huge.db")
        prelude = _PEAK.format(tests=tests)
        run_script(PYTHON, prelude + IMPORT, str(tmp / "small.jsonl"), db, str(MAX_RECORD), "small")
        imported = run_script(PYTHON, prelude + IMPORT, str(path), db, str(max_record), "huge")
        old = run_script(PYTHON, prelude + OLD_PATH, db)
        review = run_script(
            PYTHON,
            prelude + REVIEW.format(app=str(ROOT / "app.py"), review=str(ROOT / "app_pages" / "review.py")),
            db,
        )
    print()
    print(f"| {args.messages:,} messages | seconds | peak memory growth (MB) | target |")
    print("|---|---|---|---|")
    print(f"| import | {imported['seconds']:.1f} | {imported['peak_mb']:,.0f} | |")
    print(f"| old path: the whole session read (`sessions.get`) | {old['seconds']:.2f} | {old['peak_mb']:,.0f} | |")
    print(f"| Review: first render | {review['first']:.3f} | {review['peak_mb']:,.0f} (both rows) | < 1 s, < 100 MB |")
    print(f"| Review: a page change (median of 5) | {review['change']:.3f} | | < 1 s |")
    print()
    print(f"Review against the old path: {old['seconds'] / review['first']:.0f}x faster to first render, "
          f"{old['peak_mb'] / max(review['peak_mb'], 0.1):.0f}x less memory; it showed {review['shown']!r}, then "
          f"{review['later']!r}, and kept {review['kept']} messages of the session's {old['messages']:,}")  # fmt: skip


if __name__ == "__main__":
    main()

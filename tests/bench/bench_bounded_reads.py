"""Benchmark: memory of reading hostile and huge inputs, which must follow the largest record, not the file.

Run with ``.venv/bin/python tests/bench/bench_bounded_reads.py`` (a minute or two; it writes about 1.3 GB to a
temporary directory, removed at the end). ``make test`` runs none of this: ``tests/test_bounded_reads.py`` checks
the same at 40 MB.

- Each input is read by the real command line (``evalcore.cli.main``, with its default ``--workers``) in a fresh
  process, which reports its own peak RSS (``VmHWM`` of ``/proc/self/status``) and the largest of the processes
  it started and waited for (``resource.getrusage(RUSAGE_CHILDREN)``: ``import`` reads a big file in a second
  process). The same command on a file of two records gives the baseline (the interpreter and the modules the
  command imports: ``import`` loads the store's); what the input adds to the largest of these processes is the
  growth.
- Inputs: 1 GiB of NUL bytes (what a crash leaves in a file; refused from its first bytes, its end looked for
  no further than the maximum record size, 64 MiB), validated and imported; ``/dev/zero`` (endless: stopped by
  that size); a 300 MB one-line JSON array of ragas rows (what ``json.dump(list)`` writes), validated and
  converted to evalcore.

Target: each growth (this process or its children) is far below the input: under 32 MB, which is 3% of the
1 GiB file and 11% of the array. (Before reads were bounded: 200 MiB of NUL bytes peaked at 801 MB, the
300 MB array at 608 MB, each first line read whole; /dev/zero grew without end.) The exit code is 0 whether
the target is met or not (this is a benchmark, not a test); it is 1 only when the benchmark cannot run.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

from _common import REFERENCE, run_script

import evalcore

NUL_BYTES = 1 << 30
ARRAY_BYTES = 300_000_000
TARGET_MB = 32  # growth of the peak RSS over the same command on two records

# Run by this python in a fresh process: one command, then its peak memory and that of its children.
COMMAND = """
import resource, sys, time
from evalcore.cli import main

start = rss_kb("VmRSS")
began = time.perf_counter()
code = main(sys.argv[1:])
seconds = time.perf_counter() - began
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
result(code=code, seconds=seconds, rss_start_kb=start, rss_peak_kb=rss_kb("VmHWM"), children_peak_kb=children)
"""


def write_nul_file(path: Path, size: int) -> int:
    block = b"\0" * (16 << 20)
    with path.open("wb") as out:
        for _ in range(size // len(block)):
            out.write(block)
    return path.stat().st_size


def write_one_line_array(path: Path, size: int) -> tuple[int, int]:
    """ragas rows cycled from the reference file into one JSON array on one line, as ``json.dump(rows)`` writes
    it (``", "`` between elements), of about ``size`` bytes; its size and its element count."""
    rows = [line for line in REFERENCE.read_text(encoding="utf-8").splitlines() if line.strip()]
    written = count = 0
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        while written < size:
            row = json.dumps(json.loads(rows[count % len(rows)]))
            out.write((", " if count else "") + row)
            written += len(row) + 2
            count += 1
        out.write("]")
    return path.stat().st_size, count


def measure(label: str, size: int, args: list[str], baseline: list[str]) -> dict[str, Any]:
    """The command ``args`` on the input, and ``baseline``: the same on two records."""
    result = run_script(sys.executable, COMMAND, *args, timeout=1800)
    return {"label": label, "size": size, **result, "baseline": run_script(sys.executable, COMMAND, *baseline)}


def print_table(rows: list[dict[str, Any]]) -> bool:
    print(f"{'input and command':<56} {'input MB':>8} {'exit':>4} {'seconds':>7} {'baseline MB':>11} "
          f"{'peak RSS MB':>11} {'children MB':>11} {'growth MB':>9} {'growth/input':>12}")  # fmt: skip
    met = True
    for row in rows:
        base = row["baseline"]
        # The largest process of the command (the reader of a big import is its own), against the baseline's.
        growth = max(row["rss_peak_kb"], row["children_peak_kb"]) - max(base["rss_peak_kb"], base["children_peak_kb"])
        growth_mb = max(growth, 0) / 1024
        ok = growth_mb < TARGET_MB
        met = met and ok
        size = f"{row['size'] / 1e6:>8.0f}" if row["size"] else f"{'endless':>8}"
        share = f"{growth_mb * (1 << 20) / row['size']:.1%}" if row["size"] else "-"
        print(
            f"{row['label']:<56} {size} {row['code']:>4} {row['seconds']:>7.2f} {base['rss_peak_kb'] / 1024:>11.1f} "
            f"{row['rss_peak_kb'] / 1024:>11.1f} {row['children_peak_kb'] / 1024:>11.1f} {growth_mb:>9.1f} "
            f"{share:>12}  {'PASS' if ok else 'FAIL'}"
        )
    return met


def main() -> int:
    if not REFERENCE.is_file():
        print(f"bench: reference data missing: {REFERENCE}", file=sys.stderr)
        return 1
    print(
        f"evalcore {evalcore.__version__} bounded-reads benchmark | Python {platform.python_version()} | "
        f"{os.cpu_count()} CPUs | maximum record size 64 MiB (the default)\n",
        flush=True,
    )
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="evalcore-bench-") as name:
        tmp = Path(name)
        small = str(tmp / "small.json")
        write_one_line_array(Path(small), 1)  # two records: the baseline's input
        db = str(tmp / "bench.db")
        run_script(sys.executable, COMMAND, "import", small, "--dataset", "first", "--db", db)  # made and migrated
        nul = tmp / "zeros.jsonl"
        size = write_nul_file(nul, NUL_BYTES)
        rows.append(measure("1 GiB of NUL bytes: evalcore validate", size, ["validate", str(nul)], ["validate", small]))
        imports = ["import", str(nul), "--dataset", "z", "--db", db], ["import", small, "--dataset", "s", "--db", db]
        rows.append(measure("1 GiB of NUL bytes: evalcore import", size, *imports))
        nul.unlink()
        rows.append(measure("/dev/zero: evalcore validate (stopped by the limit)", 0, ["validate", "/dev/zero"],
                            ["validate", small]))  # fmt: skip
        array = tmp / "rows.json"
        size, count = write_one_line_array(array, ARRAY_BYTES)
        label = f"one-line array of {count:,} ragas rows:"
        rows.append(measure(f"{label} validate", size, ["validate", str(array)], ["validate", small]))
        out = tmp / "out.jsonl"
        converts = [["convert", source, "-o", target, "--to", "evalcore"]
                    for source, target in ((str(array), str(out)), (small, str(tmp / "small.out")))]  # fmt: skip
        rows.append(measure(f"{label} convert -> evalcore", size, *converts))
        written = sum(1 for _ in out.open(encoding="utf-8"))
    met = print_table(rows)
    print(f"\nconverted {written:,} of the array's {count:,} rows (every one: {'yes' if written == count else 'NO'})")
    print(
        f"Target: each growth over the baseline (this process or its children) under {TARGET_MB} MB, whatever the "
        f"input's size. Result: {'PASS' if met else 'FAIL'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

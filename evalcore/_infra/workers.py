"""Work on several processes: forked workers for the CPU-bound bulk paths (scoring, reading big files).

Forked, not spawned: a worker inherits what its parent has imported and set up (no second start-up, nothing
pickled but the work handed out and what comes back). Where fork is missing (Windows, macOS' default aside),
the callers do the work in their own process.

Every child dies with its parent: a worker (and the reader process of a big import) asks the kernel to kill it
when its parent goes (Linux's ``PR_SET_PDEATHSIG``), and checks that the parent it was started by is still there
— so a parent killed with SIGKILL (the OOM killer, a CI timeout) leaves no worker running, still writing.
"""

from __future__ import annotations

import gc
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from evalcore.errors import WorkerError

if TYPE_CHECKING:
    import concurrent.futures

__all__ = ["can_fork", "default_workers", "die_with_parent", "fork_pool", "start_worker", "worker_failures"]


def can_fork() -> bool:
    """Whether worker processes can be forked here."""
    import multiprocessing  # (here: the commands that never fork do not pay for its import)

    return "fork" in multiprocessing.get_all_start_methods()


def default_workers() -> int:
    """The workers a command uses unless told: the CPUs this process may run on, at most 4."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(4, cpus))


def fork_pool(
    workers: int, initializer: Callable[..., None], initargs: tuple[Any, ...]
) -> concurrent.futures.ProcessPoolExecutor:
    """``workers`` forked processes, each starting with ``initializer(*initargs)`` (inherited, never pickled)
    after ``start_worker``'s set-up."""
    import concurrent.futures
    import multiprocessing

    return concurrent.futures.ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_start,
        initargs=(os.getpid(), initializer, initargs),
    )


def _start(parent: int, initializer: Callable[..., None], initargs: tuple[Any, ...]) -> None:
    die_with_parent(parent)
    start_worker()
    initializer(*initargs)


_PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None) -> None:
    """Be killed (SIGKILL) when the parent process ends; exit now if ``parent`` (its pid, taken before the fork or
    the start) has ended already. Where the kernel cannot (not Linux), nothing changes."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover  (not Linux)
        return
    if parent is not None and os.getppid() != parent:  # the parent ended before the kernel was asked
        os._exit(1)


def start_worker() -> None:
    """A worker's set-up: Ctrl-C and SIGTERM are the parent's to handle (it stops the pool); no cyclic garbage
    collector (the bulk paths make no cycles, so reference counting frees each piece of work; the collector's
    passes over a batch's million objects would cost a tenth of the time; a cycle made anyway is held until the
    pool ends)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    gc.disable()


@contextmanager
def worker_failures() -> Iterator[None]:
    """Inside, a pool whose worker died (killed, out of memory) raises ``WorkerError``, which says so."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        yield
    except BrokenProcessPool as exc:
        raise WorkerError(
            "a worker process stopped without finishing its work (killed, or out of memory?); "
            "run again with --workers 1 to do the work in one process"
        ) from exc

"""``python tests/pause_at.py POINT ARGS...``: the ``evalcore`` command line, stopped at one step of putting its
output files in place (``evalcore._infra.outputs.publish``), so that a test can kill it exactly there.

POINT is ``before-publish`` (before the folder's lock is taken), ``removed-last`` (the old last file removed,
nothing renamed yet) or ``renamed-others`` (every file renamed but the last). The process says
``evalcore: paused at POINT`` on standard error and sleeps. Only tests run this; evalcore has no such hook.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalcore._infra import outputs
from evalcore.cli import main

POINT = sys.argv[1]
_state = {"publishing": False, "renamed": 0}
_lock = outputs._folder_lock
_replace = os.replace


def _pause(point: str) -> None:
    if point == POINT:
        print(f"evalcore: paused at {point}", file=sys.stderr, flush=True)
        time.sleep(3600)


@contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    _pause("before-publish")
    with _lock(folder):
        _state.update(publishing=True, renamed=0)
        try:
            yield
        finally:
            _state["publishing"] = False


def _renaming(src: Any, dst: Any, **kwargs: Any) -> None:
    if _state["publishing"]:
        _pause("removed-last" if _state["renamed"] == 0 else "renamed-others")
        _state["renamed"] += 1
    _replace(src, dst, **kwargs)


outputs._folder_lock = _folder_lock  # type: ignore[assignment]
os.replace = _renaming
sys.exit(main(sys.argv[2:]))

"""A progress bar for the command line: drawn only on a terminal, silent otherwise.

Its label (it names a file, a dataset) and its notes are shown as text: control, invisible and reordering
characters in them are written as escapes (``evalcore._infra.printable.visible``), never sent to the terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from evalcore._infra.printable import visible

__all__ = ["ProgressBar"]


class ProgressBar:
    """``update(done, total)`` redraws at most ten times a second; ``close()`` ends the line."""

    def __init__(self, label: str, stream: TextIO | None = None, *, width: int = 30) -> None:
        self.label = visible(label)
        self.stream = stream or sys.stderr
        self.width = width
        self.enabled = self.stream.isatty()
        self._last = 0.0
        self._drawn = False

    def update(self, done: int, total: int | None = None, unit: str = "") -> None:
        """Show ``done`` out of ``total`` (a count when the total is unknown)."""
        if not self.enabled:
            return
        moment = time.monotonic()
        if moment - self._last < 0.1 and not (total and done >= total):
            return
        self._last = moment
        if total:
            filled = int(self.width * min(done, total) / total)
            bar = "█" * filled + "·" * (self.width - filled)
            text = f"{self.label} {bar} {100 * done // total:3d}%"
        else:
            text = f"{self.label} {done:,} {unit}".rstrip()
        self.stream.write("\r" + text)
        self.stream.flush()
        self._drawn = True

    def note(self, text: str) -> None:
        """Print a line of text without breaking the bar (it is redrawn on the next update)."""
        if self._drawn:
            self.stream.write("\r\033[K")
            self._last = 0.0
        self.stream.write(visible(text) + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Finish the bar's line."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()

"""How a finished run or solve ended, told truly: done only when nothing failed; partial (amber) when some items
failed; failed (red) when every item that could be scored failed; and the failures grouped by reason and counted
("140 × HTTP 500 from the judge · 20 × timeout"), for the Metrics and Simulate pages."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = ["Failure", "Ending", "ending", "failure_reason", "failures", "failures_text"]

#: How a finished piece of work ended: ``done`` (nothing failed), ``partial`` (some failed), ``failed`` (all did).
Ending = Literal["done", "partial", "failed"]


def ending(done: int, failed: int) -> Ending:
    """How work that finished ended, from the items it scored (or samples it solved) and those that failed (items
    that did not apply count as neither)."""
    if not failed:
        return "done"
    return "partial" if done else "failed"


@dataclass(frozen=True)
class Failure:
    """One reason items failed for, and how many did."""

    reason: str
    count: int

    @property
    def text(self) -> str:
        """``140 × HTTP 500 from the judge``."""
        return f"{self.count:,} × {self.reason}"


_HTTP = re.compile(r"\bHTTP (\d{3})\b")
_PREFIX = re.compile(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception)\s*:\s*)+")
_GAVE_UP = re.compile(r"^gave up after \d+ tries:\s*")
#: The longest reason shown for an error none of the known kinds fits.
REASON_CHARS = 80


def failure_reason(error: str | None, who: str = "the judge") -> str:
    """An item's error as the reason it is counted under: the kind of failure, without what varies from one item
    to the next (the endpoint's message, a session's id). ``who``: what was called (``the judge``, ``the model``)."""
    text = (error or "").strip()
    if not text:
        return "no error recorded"
    if "not sent:" in text:
        return f"not sent: {who} kept failing"
    status = _HTTP.search(text)
    if status:
        return f"HTTP {status.group(1)} from {who}"
    if "timed out" in text:
        return "timeout"
    if "connection failed" in text:
        return f"{who} could not be reached"
    if "not JSON" in text or "no JSON object" in text:
        return f"{who}'s answer was not JSON"
    if "no judge model" in text:
        return "no judge model configured"
    line = _GAVE_UP.sub("", _PREFIX.sub("", text.splitlines()[0])).strip()
    return line if len(line) <= REASON_CHARS else line[: REASON_CHARS - 1] + "…"


def failures(errors: Iterable[tuple[str | None, int]], who: str = "the judge") -> list[Failure]:
    """``(error, how many)`` pairs grouped by reason (``failure_reason``), the most frequent first."""
    counts: Counter[str] = Counter()
    for error, n in errors:
        counts[failure_reason(error, who)] += n
    return [Failure(reason, n) for reason, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def failures_text(found: list[Failure], *, most: int = 5) -> str:
    """The failures in one line: ``140 × HTTP 500 from the judge · 20 × timeout`` (the ``most`` most frequent,
    then how many more reasons); empty when nothing failed."""
    shown = [f.text for f in found[:most]]
    rest = found[most:]
    if rest:
        shown.append(f"{sum(f.count for f in rest):,} × {len(rest)} other reasons")
    return " · ".join(shown)

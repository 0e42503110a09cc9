"""How much a solver template may make, and for how long: the bounds its sandbox (``evalcore.solver.sandbox``) keeps.

A task file can come from anyone (an upload on a shared server): its templates are treated as hostile.

- Every value a template *makes* (a text, or a list or dict it writes, repeats, adds or joins) is weighed as
  the text it would print as, counting a part once for each place it is in (as printing it would), and refused
  past ``MAX_TEXT`` characters: before it is made when its size follows from its parts (``*``, ``+``, ``~``,
  ``%``, ``format``, ``center``, ``join``, ``replace``...), so that no single step allocates more than that. What
  a template only selects of what it was given (``sample``, ``messages``) is not copied, and not refused.
- What one render makes in all is bounded too (``MAX_MADE``), and so are numbers (``MAX_INT_BITS``) and the
  arguments of one call (``MAX_ARGS``).
- A render is given up past ``MAX_SECONDS`` (one sample's renders past ``MAX_SAMPLE_SECONDS`` in all), calls nest
  at most ``MAX_DEPTH`` deep, and a run asked to stop (``should_stop``) stops the render: these are looked at on
  every call (a macro's too), filter, operator, loop iteration and output, so a template cannot keep a core busy
  past them.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from contextvars import ContextVar, Token
from typing import Any

from jinja2.exceptions import TemplateRuntimeError
from jinja2.utils import Cycler, Namespace

from evalcore.errors import EvalcoreError

__all__ = [
    "MAX_ARGS",
    "MAX_DEPTH",
    "MAX_EXPONENT",
    "MAX_INT_BITS",
    "MAX_MADE",
    "MAX_SAMPLE_SECONDS",
    "MAX_SECONDS",
    "MAX_TEXT",
    "Allowance",
    "Budget",
    "OverBudget",
    "StopRequested",
    "TooLarge",
    "TooLong",
    "budget",
    "check_size",
    "check_weight",
    "current",
    "printf_size",
    "spec_size",
    "start",
    "stop",
    "take",
    "weigh",
]

#: The longest text (in characters) a template may make or render; the largest value, as text, it may make.
MAX_TEXT = 1_000_000
#: What one render may make in all (characters of the texts and values it makes and outputs, items of its lists).
MAX_MADE = 10 * MAX_TEXT
#: The largest integer a template may make (bits), and the largest exponent of ``**``.
MAX_INT_BITS = 100_000
MAX_EXPONENT = 1_000
#: The most arguments one call (or filter) may be given (``f(*x, *x)`` doubles a list each time).
MAX_ARGS = 10_000
#: How deep calls (macros calling macros) may nest.
MAX_DEPTH = 100
#: The longest one render may take, and all of one sample's renders together.
MAX_SECONDS = 5.0
MAX_SAMPLE_SECONDS = 60.0
#: Seconds between two looks at ``should_stop`` during a render.
POLL_EVERY = 0.1


class OverBudget(TemplateRuntimeError):
    """A template went past one of its bounds; the message says which (the builder is named by the caller)."""


class TooLarge(OverBudget):
    """A template asked for a value too large to make (``'a' * 10**10``, ``7 ** 100000``, a huge text)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"the template asks for too large a value ({what})")


class TooLong(OverBudget):
    """A template ran past its time, or nested its calls too deep."""


class StopRequested(EvalcoreError):
    """The run was asked to stop (Cancel) while a sample ran: it is left for a later run, not failed."""


class Allowance:
    """What one sample's templates may still take: seconds of rendering in all, and the run's ``should_stop``."""

    def __init__(self, seconds: float | None = None, should_stop: Callable[[], bool] | None = None) -> None:
        self.seconds = MAX_SAMPLE_SECONDS if seconds is None else seconds
        self.should_stop = should_stop
        self.spent = 0.0
        self.next_poll = 0.0

    def check(self) -> None:
        """``StopRequested`` when the run was asked to stop (``should_stop`` is asked every ``POLL_EVERY`` at most)."""
        if self.should_stop is None:
            return
        now = time.monotonic()
        if now >= self.next_poll:
            self.next_poll = now + POLL_EVERY
            if self.should_stop():
                raise StopRequested("the run was asked to stop")


class Budget:
    """One render's bounds as it goes: its deadline, the run's ``should_stop``, what it made, how deep its calls are."""

    __slots__ = ("deadline", "depth", "late", "made", "next_poll", "should_stop")

    def __init__(self, seconds: float, late: str, should_stop: Callable[[], bool] | None = None) -> None:
        now = time.monotonic()
        self.deadline = now + seconds
        self.late = late
        self.should_stop = should_stop
        self.next_poll = now
        self.made = 0
        self.depth = 0

    def tick(self) -> None:
        """Past the deadline: ``TooLong``; the run asked to stop: ``StopRequested`` (looked at every ``POLL_EVERY``)."""
        now = time.monotonic()
        if now > self.deadline:
            raise TooLong(self.late)
        if self.should_stop is not None and now >= self.next_poll:
            self.next_poll = now + POLL_EVERY
            if self.should_stop():
                raise StopRequested("the run was asked to stop")

    def make(self, size: int) -> None:
        """Count ``size`` characters (or items) made; past ``MAX_MADE`` in all, ``TooLarge``."""
        self.made += size
        if self.made > MAX_MADE:
            raise TooLarge(f"more than {MAX_MADE:,} characters made by one render")

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise TooLong(
                f"the template's calls nest more than {MAX_DEPTH} deep "
                "(a macro or a recursive loop calling itself for ever?)"
            )

    def leave(self) -> None:
        self.depth -= 1


#: The render under way in this thread (or task); ``None`` outside one (compiling a template).
_CURRENT: ContextVar[Budget | None] = ContextVar("template_budget", default=None)


#: The render under way in this thread (or task), not ticked; ``None`` outside a render.
current = _CURRENT.get


def budget() -> Budget | None:
    """The render under way, ticked (see ``Budget.tick``); ``None`` outside a render."""
    current = _CURRENT.get()
    if current is not None:
        current.tick()
    return current


def start(current: Budget) -> Token[Budget | None]:
    """``current`` is the render under way (in this thread or task) until ``stop(token)``."""
    return _CURRENT.set(current)


def stop(token: Token[Budget | None]) -> None:
    """The render started with ``token`` is over."""
    _CURRENT.reset(token)


_END = object()


def weigh(value: Any, limit: int = MAX_TEXT, indent: int = 0) -> int:
    """About how many characters ``value`` prints as (``str``, ``repr``, ``tojson`` with ``indent``), each part counted
    once for each place it is in, as printing counts it; given up once past ``limit`` (a list holding itself twice at
    each of 40 levels costs ``limit`` steps here, not 2**40). Iterative: a deep value cannot exhaust the stack."""
    if isinstance(value, str | bytes):
        return len(value)
    current = _CURRENT.get()
    total = 0
    steps = 0
    stack: list[tuple[Iterator[Any], int]] = [(iter((value,)), 0)]
    while stack:
        items, depth = stack[-1]
        item = next(items, _END)
        if item is _END:
            stack.pop()
            continue
        total += indent * depth + 2
        if isinstance(item, str | bytes | bytearray):
            total += len(item)
        elif isinstance(item, bool) or item is None:
            total += 4
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 1
        elif isinstance(item, float):
            total += 20
        elif isinstance(item, Mapping | ItemsView):
            pairs = item.items() if isinstance(item, Mapping) else item
            stack.append((itertools.chain.from_iterable(pairs), depth + 1))
        elif isinstance(item, list | tuple | set | frozenset | KeysView | ValuesView):
            stack.append((iter(item), depth + 1))
        elif isinstance(item, Namespace):
            attrs = object.__getattribute__(item, "_Namespace__attrs")
            stack.append((itertools.chain.from_iterable(attrs.items()), depth + 1))
        elif isinstance(item, Cycler):
            stack.append((iter(item.items), depth + 1))
        else:
            total += 16  # a macro, a loop, a range...: printed by name
        if total > limit:
            return total
        steps += 1
        if current is not None and steps % 4096 == 0:
            current.tick()
    return total


def check_size(size: int, what: str = "a value", unit: str = "characters") -> None:
    """``TooLarge`` when ``size`` (characters, or ``unit``) is past ``MAX_TEXT``."""
    if size > MAX_TEXT:
        raise TooLarge(f"{what} of {size:,} {unit}; at most {MAX_TEXT:,}")


def check_weight(value: Any) -> int:
    """``value``'s weight (``weigh``), or ``TooLarge`` past ``MAX_TEXT``."""
    size = weigh(value)
    if size > MAX_TEXT:
        raise TooLarge(f"a value of more than {MAX_TEXT:,} characters")
    return size


def take(iterable: Iterable[Any]) -> list[Any]:
    """``list(iterable)``, refused past ``MAX_TEXT`` items and given up past the render's deadline."""
    if isinstance(iterable, list | tuple | str | bytes | Mapping | set | frozenset):
        if len(iterable) > MAX_TEXT:
            raise TooLarge(f"a list of {len(iterable):,} items; at most {MAX_TEXT:,}")
        return list(iterable)
    current = _CURRENT.get()
    items = []
    for n, item in enumerate(iterable):
        if n >= MAX_TEXT:
            raise TooLarge(f"a list of more than {MAX_TEXT:,} items")
        if current is not None and n % 1024 == 0:
            current.tick()
        items.append(item)
    return items


def _number(digits: str, what: str) -> int:
    """A width or precision written in a format, refused past ``MAX_TEXT`` (checked before ``int`` reads it)."""
    if len(digits) > len(str(MAX_TEXT)) or int(digits) > MAX_TEXT:
        raise TooLarge(f"{what} of {digits[:20]}{'...' if len(digits) > 20 else ''}; at most {MAX_TEXT:,}")
    return int(digits)


_PRINTF = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[-#0 +]*(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d*))?[hlL]?(?P<kind>.?)", re.S
)


def printf_size(template: str | bytes, args: Any) -> int:
    """At most how long ``template % args`` is: its own text, each conversion's width and precision, and the
    values it prints (ten times over for ``%r`` and ``%a``, whose escapes can be that long)."""
    text = template.decode("latin-1") if isinstance(template, bytes) else template
    values = args if isinstance(args, tuple) else (args,)
    widest = max((abs(v) for v in values if isinstance(v, int) and not isinstance(v, bool)), default=0)
    size = len(text)
    printed = whole = 0
    for match in _PRINTF.finditer(text):
        if match["kind"] == "%":
            continue
        for part, what in ((match["width"], "a width"), (match["precision"], "a precision")):
            if part == "*":
                if widest > MAX_TEXT:
                    raise TooLarge(f"{what} of {widest:,}; at most {MAX_TEXT:,}")
                size += widest
            elif part:
                size += _number(part, what)
        times = 10 if match["kind"] in ("r", "a") else 1
        if match["key"] is not None and isinstance(args, Mapping):
            printed += weigh(args.get(match["key"])) * times
        else:
            whole = max(whole, times)
    return size + printed + (weigh(args) * whole if whole else 0)


_SPEC = re.compile(r"(?:.?[<>=^])?[-+ ]?z?#?0?(?P<width>\d*)[,_]?(?:\.(?P<precision>\d+))?")


def spec_size(spec: str) -> int:
    """The width and precision a format spec (``{:>30000}``) asks for, refused past ``MAX_TEXT``."""
    match = _SPEC.match(spec)
    if match is None:
        return 0
    width = _number(match["width"], "a width") if match["width"] else 0
    precision = _number(match["precision"], "a precision") if match["precision"] else 0
    return width + precision

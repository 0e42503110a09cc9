"""The shape every format module has, and the registry that holds them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from evalcore.errors import RecordError
from evalcore.formats.jsonio import dumps_compact
from evalcore.registry import Registry
from evalcore.schema import Session

__all__ = ["Format", "Reader", "formats", "get_format", "register"]


class Reader:
    """Turns the JSON values of one file into sessions, each with the line it starts on.

    Most formats map one value to one session; a reader may also hold values back
    (Gaussia's streamed batches of one session) and hand them over later or at ``close``.
    ``warnings`` collects remarks about records that were read anyway. A record that cannot be
    read raises ``RecordError`` from ``feed``; a session held back that cannot be made when it is
    handed over goes to ``failures`` (with the line it starts on) instead, so that the record
    being fed is not lost with it.
    """

    def __init__(self, parse: Callable[[Any], Session]) -> None:
        self._parse = parse
        self.warnings: list[tuple[int, str]] = []
        self.failures: list[tuple[int, RecordError]] = []

    def feed(self, value: Any, line: int) -> list[tuple[int, Session]]:
        """Read one value; return the sessions it completes."""
        return [(line, self._parse(value))]

    def close(self) -> list[tuple[int, Session]]:
        """Return the sessions still held back at the end of the file."""
        return []


class Format:
    """A file format: how to recognise it, read it and (if ``writable``) write it."""

    name: ClassVar[str]
    description: ClassVar[str]
    writable: ClassVar[bool] = False
    #: Sniffing order: lower runs first (more specific shapes before general ones).
    priority: ClassVar[int] = 50

    def sniff(self, value: Any) -> bool:
        """Whether ``value`` (the first record of a file) looks like this format."""
        raise NotImplementedError

    def parse(self, value: Any) -> Session:
        """Read one record into a session; raise ``RecordError`` naming the field."""
        raise NotImplementedError

    def reader(self) -> Reader:
        """A reader for one file."""
        return Reader(self.parse)

    def assistant_from_source(self, source: str) -> str | None:
        """The assistant a file's name says its sessions are from, for a format whose records do not name
        it (τ-bench's): given to each session of the file that names none."""
        return None

    #: The session's ground-truth fields (``TRUTH_FIELDS`` and ``turn_truth``) this format's writer keeps, in a
    #: place of its own; a conversion counts the others a session has, as a warning on its record.
    keeps_truth: ClassVar[frozenset[str]] = frozenset()
    #: Writes everything the canonical model holds (``evalcore``): a conversion to it drops nothing.
    lossless: ClassVar[bool] = False

    def kept_truth(self, session: Session) -> frozenset[str]:
        """The ground-truth fields of ``session`` the writer keeps (``keeps_truth``, unless the session says more)."""
        return self.keeps_truth

    def carries(self, block: dict[str, Any]) -> bool:
        """Whether this format's writer keeps a content block that is not text (an image, a file, ...). A
        conversion counts, as a warning on the record, each block the target format does not carry."""
        return False

    def write(self, session: Session) -> Iterable[Any]:
        """The JSON values that represent ``session`` in this format."""
        raise NotImplementedError(f"{self.name} is read-only")

    def dumps(self, value: Any) -> str:
        """Serialise one written value as one line."""
        return dumps_compact(value)

    def write_lines(self, session: Session) -> list[str]:
        """``session`` serialised: one string per written value.

        A session this format cannot write raises ``RecordError`` (naming the field when the
        writer knows it) and nothing else, so that one bad session never stops a file: a writer
        meeting a shape it did not foresee (a memo of ours edited by hand, say) is reported as
        that session's problem. Formats override ``serialise``, not this.
        """
        try:
            return self.serialise(session)
        except RecordError:
            raise
        except Exception as exc:
            raise RecordError(f"the {self.name} writer failed ({type(exc).__name__}: {exc})") from exc

    def serialise(self, session: Session) -> list[str]:
        """``session`` serialised: ``write``, then ``dumps`` of each value."""
        return [self.dumps(value) for value in self.write(session)]


#: The built-in formats' modules: imported, and so registered, on the registry's first lookup.
BUILTIN_FORMATS = tuple(
    f"evalcore.formats.{name}"
    for name in (
        "agents_sdk", "anthropic", "databricks", "gaussia", "langchain", "mlflow_trace", "native",
        "open_responses", "openai", "ragas", "swarm", "tau2_bench", "tau_bench",
    )
)  # fmt: skip
_REGISTRY: Registry[Format] = Registry("format", BUILTIN_FORMATS)


def register(cls: type[Format]) -> type[Format]:
    """Class decorator: register a format (an instance of ``cls``) under its ``name``; a taken name is refused."""
    _REGISTRY.add(cls.name, cls())
    return cls


def formats() -> list[Format]:
    """Every registered format, in sniffing order."""
    return sorted(_REGISTRY.entries(), key=lambda f: (f.priority, f.name))


def get_format(name: str) -> Format:
    """The format registered as ``name``."""
    return _REGISTRY.get(name)

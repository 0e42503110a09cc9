"""The one exception tree of evalcore.

Every message is written to be shown to a reviewer as it is::

    EvalcoreError                 root: catch this to catch anything evalcore raises
    ├── UsageError                a bad argument or option from the caller
    ├── RegistryError
    │   ├── UnknownNameError      a format or metric name nobody registered
    │   └── PluginError           a plug-in (an entry point, ``--plugin``) that could not be loaded: names it
    ├── ConversionError           reading or writing a record failed
    │   ├── FormatDetectionError  no format recognised the input
    │   └── RecordError           one bad record: ``.field`` names the field
    ├── StoreError                the store refused or failed an operation
    │   ├── NotFoundError         no such dataset, session or edit
    │   ├── ConflictError         a save based on a stale version: names who changed what
    │   ├── SchemaVersionError    the database is newer than this evalcore
    │   ├── PermissionDeniedError the acting user's role does not allow the change
    │   ├── OverlapReachedError   an item of a queue has all the submissions it needs
    │   └── DatabaseFaultError    the database failed: full disk, read-only, locked, damaged, unreachable, lost
    └── WorkerError               a worker process (``--workers``) stopped without finishing its work

Batch operations never raise for one bad record: they report a ``Problem``
(see :mod:`evalcore.schema.validation`) and carry on.

The command line's exit codes (see the README's "Command line"): 0 success, 1 the input had
problems, 2 a usage error (``UsageError``, an unknown name, a missing file, any other
``EvalcoreError``), 3 the database failed (``DatabaseFaultError``), 130 interrupted (Ctrl-C),
143 terminated (SIGTERM).
"""

from __future__ import annotations

__all__ = [
    "ConflictError",
    "ConversionError",
    "DatabaseFaultError",
    "EvalcoreError",
    "FormatDetectionError",
    "NotFoundError",
    "OverlapReachedError",
    "PermissionDeniedError",
    "PluginError",
    "RecordError",
    "RegistryError",
    "SchemaVersionError",
    "StoreError",
    "UnknownNameError",
    "UsageError",
    "WorkerError",
]


class EvalcoreError(Exception):
    """Root of every error evalcore raises on purpose."""


class UsageError(EvalcoreError):
    """The caller passed a bad argument or option."""


class RegistryError(EvalcoreError):
    """A registry lookup or registration failed."""


class UnknownNameError(RegistryError, LookupError):
    """A name that is not registered; the message lists the known ones."""

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        self.kind = kind
        self.name = name
        self.known = known
        super().__init__(f"unknown {kind} {name!r}; known: {', '.join(known)}")


class PluginError(RegistryError):
    """A plug-in that could not be loaded (its module failed to import, it is not what the registry holds, it takes
    a name already registered); the message names the plug-in and why."""


class ConversionError(EvalcoreError):
    """Reading or writing records failed."""


class FormatDetectionError(ConversionError):
    """No registered format recognised the input."""


class RecordError(ConversionError):
    """One record is bad. ``field`` is a dotted path to the field, when known."""

    def __init__(self, message: str, field: str | None = None) -> None:
        self.field = field
        self.reason = message
        super().__init__(f"{field}: {message}" if field else message)


class StoreError(EvalcoreError):
    """The store refused or failed an operation."""


class NotFoundError(StoreError, LookupError):
    """No such dataset, session or edit."""


class ConflictError(StoreError):
    """A save was based on a version someone else has changed since; nothing was written."""

    def __init__(self, message: str, current_version: int) -> None:
        self.current_version = current_version
        super().__init__(message)


class OverlapReachedError(StoreError):
    """An item of a queue has all the submissions its overlap asks for: one more is refused (the answers stay
    drafts)."""


class SchemaVersionError(StoreError):
    """The database was written by a newer evalcore."""


class PermissionDeniedError(StoreError):
    """The acting user's role does not allow the change (or the user is disabled); nothing was written."""


class DatabaseFaultError(StoreError):
    """The database itself failed: its disk is full, it is read-only, locked past the busy timeout, damaged,
    unreachable, refused the user, is missing, lost the connection, timed out, an I/O error...

    Whatever was being written was rolled back: the database holds what it held before. ``kind`` names the
    failure the same way for every engine (``full``, ``readonly``, ``busy``, ``damaged``, ``unreachable``,
    ``auth``, ``missing``, ``lost``, ``timeout``, ``too_big``, ...); ``code`` is the engine's own name for it
    (SQLite's ``SQLITE_FULL``, PostgreSQL's SQLSTATE ``53100``), when known. The command line exits with 3.
    """

    def __init__(self, message: str, code: str | None = None, *, kind: str = "other") -> None:
        self.code = code
        self.kind = kind
        super().__init__(message)


class WorkerError(EvalcoreError):
    """A worker process of a command run on several (``--workers``) stopped without finishing its work: it was
    killed, or ran out of memory. What was done before it is kept as each command keeps it."""

"""Output files: written whole or not at all, and never over what is not a regular file.

Where an output path leads decides how it is written (``output_target``):

* a regular file, or nothing yet: the content goes to ``.NAME.XXXXXXXX.partial`` beside it, is
  synced to disk and renamed over ``NAME`` (keeping the old file's permission bits): a reader sees
  the old file or the new one, never a part of one;
* a symbolic link: the same, at the file the link resolves to; the link stays a link;
* a FIFO, a character device (``/dev/null``, a terminal) or an open file descriptor
  (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``): streamed straight into,
  with no partial file (the descriptor is shared, not reopened, so nothing already written to it
  is overwritten). A stream cannot be taken back: a failure leaves what was written so far;
* a directory, a block device, a socket, an empty path or a folder that does not exist: refused
  with a ``UsageError`` before anything is written. Nothing here ever deletes or replaces a
  special file.

Partial files. A partial file is locked (``flock``) by its writer for as long as it is open. It is
removed when writing fails: an exception, Ctrl-C, or SIGTERM (the command line turns SIGTERM into
an exception, so that cleanup runs). A SIGKILL or a power cut can leave one behind: the next
writer of the same target removes every partial file of that target whose lock is free, as its
writer is gone (a partial another process is still writing keeps its lock and is left alone).

Files that go together (``publish``): several outputs are put in place so that the *last* one (an
export's manifest) is present only when the others are the ones written with it. Its old version
is removed first, then the others are renamed into place, then it is; each step is synced to disk
(file contents before any rename, the folder after each step) so that the order also holds after
a power cut, and publications into the same folder are serialised with a lock on the folder. A
kill at any moment therefore leaves either the previous files with their own last one, or the new
files without it, or the new files with it. A reader that finds the last file can trust it
describes the others (an export manifest also carries the data's SHA-256 to check this).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import io
import os
import re
import secrets
import signal
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from evalcore.errors import UsageError

__all__ = [
    "OutputTarget",
    "PendingOutput",
    "atomic_output",
    "discard_live",
    "output_target",
    "publish",
    "sweep_partials",
]

_STANDARD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
# Every partial file this process has (or is about to have) and has neither published nor removed.
_live: set[Path] = set()
_FD_PATH = re.compile(r"/dev/fd/(\d+)|/proc/(self|\d+)/fd/(\d+)")
_MAX_LINKS = 40  # as Linux's ELOOP limit


@dataclass(frozen=True)
class OutputTarget:
    """Where an output path leads: ``path`` is the regular file to put in place (symbolic links
    resolved), or, when ``stream``, what to write straight into (``fd``: an open descriptor to share)."""

    given: str
    path: Path
    stream: bool = False
    fd: int | None = None


def _fd_alias(given: str) -> int | None:
    """The descriptor ``given`` names (``/dev/stdout``, ``/dev/fd/3``...), following symbolic links to it."""
    current = os.path.abspath(given)
    for _ in range(_MAX_LINKS):
        if current in _STANDARD:
            return _STANDARD[current]
        match = _FD_PATH.fullmatch(current)
        if match and match.group(1):
            return int(match.group(1))
        if match and match.group(2) in ("self", str(os.getpid())):
            return int(match.group(3))
        if not os.path.islink(current):
            return None
        current = os.path.normpath(os.path.join(os.path.dirname(current), os.readlink(current)))
    return None


def output_target(path: str | os.PathLike[str]) -> OutputTarget:
    """Where writing ``path`` goes, and how (see the module's docstring); a ``UsageError`` when nowhere."""
    given = os.fspath(path)
    if not given:
        raise UsageError("the output path is empty: give a file name")
    if "\0" in given:
        raise UsageError(f"the output path {given!r} holds a NUL character")
    try:
        fd = _fd_alias(given)
        if fd is not None:
            return OutputTarget(given, Path(given), stream=True, fd=fd)
        mode = os.stat(given).st_mode
    except FileNotFoundError:
        resolved = Path(os.path.realpath(given))  # a dangling link: the file it names
        if not resolved.parent.is_dir():
            raise UsageError(f"cannot write {given}: the folder {resolved.parent} does not exist") from None
        return OutputTarget(given, resolved)
    except OSError as exc:
        raise UsageError(f"cannot write {given}: {exc.strerror or exc}") from None
    if stat.S_ISREG(mode):
        if not os.access(given, os.W_OK):
            raise UsageError(f"cannot write {given}: the file is read-only")
        return OutputTarget(given, Path(os.path.realpath(given)))
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return OutputTarget(given, Path(given), stream=True)
    if stat.S_ISDIR(mode):
        raise UsageError(
            f"{given} is a folder: give the output a file name, such as {os.path.join(given, 'out.jsonl')}"
        )
    kind = "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file"
    raise UsageError(f"{given} is {kind}: evalcore writes only files, FIFOs and character devices")


class _HashingWriter(io.RawIOBase):
    """Writes to a descriptor, every byte counted into a SHA-256."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self.fd = fd
        self.digest = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, b: Any, /) -> int:
        view = memoryview(b).cast("B")
        written = 0
        while written < len(view):
            written += os.write(self.fd, view[written:])
        self.digest.update(view)
        self.size += len(view)
        return len(view)

    def close(self) -> None:
        if not self.closed:
            try:
                os.close(self.fd)
            finally:
                super().close()


def _lock(fd: int) -> bool:
    """Take ``fd``'s exclusive lock without waiting; False when another process holds it, or when the
    file system has no locks (then nothing is swept there: a live writer cannot be told from a dead one)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _same_file(path: Path, fd: int) -> bool:
    try:
        here, there = os.stat(path, follow_symlinks=False), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def sweep_partials(target: Path) -> list[Path]:
    """Remove the partial files of ``target`` whose writers are gone (their locks are free); return them."""
    pattern = re.compile(rf"\.{re.escape(target.name)}(?:\.[0-9a-f]{{8}})?\.partial")
    removed: list[Path] = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        if not pattern.fullmatch(entry.name) or not entry.is_file(follow_symlinks=False):
            continue
        path = Path(entry.path)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if _lock(fd) and _same_file(path, fd):
                path.unlink()
                removed.append(path)
        except OSError:
            pass
        finally:
            os.close(fd)
    return removed


class PendingOutput:
    """One output being written: write text to ``file``, then ``publish`` it; ``discard`` it on failure.

    For a regular file the text goes to a locked partial file beside the target; for a stream, straight
    into it. ``sha256`` and ``size`` describe the bytes written.
    """

    def __init__(self, path: str | os.PathLike[str], *, encoding: str = "utf-8") -> None:
        self.target = output_target(path)
        self.partial: Path | None = None
        self.published = False
        self._hold: int | None = None  # keeps the partial file's lock from closing until it is published
        stream_fd = self._open_stream() if self.target.stream else None  # a FIFO may wait: Ctrl-C works here
        with _signals_held():  # a partial file is never left half-made, nor its descriptor closed twice
            fd = self._open_partial() if stream_fd is None else stream_fd
            if stream_fd is None:
                # The lock belongs to the open file, not to one descriptor: a second one keeps it after
                # ``close`` (which must come before ``publish``), so another writer's sweep never takes
                # a finished partial file for one whose writer is gone.
                try:
                    self._hold = os.dup(fd)
                except OSError:
                    os.close(fd)
                    self._forget()
                    raise
            self._raw = _HashingWriter(fd)
            try:
                self.file: TextIO = io.TextIOWrapper(
                    io.BufferedWriter(self._raw, buffer_size=1 << 20), encoding=encoding, newline="\n"
                )
            except BaseException:
                self._raw.close()
                self._forget()
                if self._hold is not None:
                    os.close(self._hold)
                raise

    def _open_stream(self) -> int:
        given = self.target.given
        if self.target.fd is not None:
            for stream in (sys.stdout, sys.stderr):  # what the program printed comes first
                with suppress(Exception):
                    if stream is not None and stream.fileno() == self.target.fd:
                        stream.flush()
            try:
                return os.dup(self.target.fd)
            except OSError:
                raise UsageError(f"cannot write {given}: file descriptor {self.target.fd} is not open") from None
        return os.open(given, os.O_WRONLY | os.O_CLOEXEC)  # a FIFO waits here for its reader

    def _open_partial(self) -> int:
        target = self.target.path
        sweep_partials(target)
        try:
            mode: int | None = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = None
        for _ in range(100):
            # Known to ``discard_live`` before it exists: a signal at any moment after finds it.
            self.partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
            _live.add(self.partial)
            try:
                fd = os.open(self.partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            except FileExistsError:
                _live.discard(self.partial)
                continue
            except OSError as exc:
                self._forget()
                why = f"cannot create a file in its folder to write it into ({exc.strerror})"
                raise OSError(exc.errno, why, self.target.given) from None
            try:
                if _lock(fd) and _same_file(self.partial, fd):
                    if mode is not None:
                        os.fchmod(fd, mode)
                    return fd
            except BaseException:
                os.close(fd)
                self._forget()
                raise
            os.close(fd)  # swept by another writer between its creation and its lock: try another name
            _live.discard(self.partial)
        self.partial = None
        raise OSError(errno.EEXIST, "cannot create a partial file", str(target.parent))

    def _forget(self) -> None:
        """Remove the partial file (unless published) and forget it."""
        if self.partial is not None and not self.published:
            with suppress(FileNotFoundError):
                os.unlink(self.partial)
            _live.discard(self.partial)

    @property
    def sha256(self) -> str:
        """The SHA-256 of the bytes written so far (complete once closed)."""
        return self._raw.digest.hexdigest()

    @property
    def size(self) -> int:
        """The number of bytes written so far (complete once closed)."""
        return self._raw.size

    def close(self) -> None:
        """Finish writing: flush, and sync a partial file to disk. Idempotent."""
        if self.file.closed:
            return
        try:
            self.file.flush()
            if self.partial is not None:
                os.fsync(self._raw.fd)
        finally:
            self.file.close()

    def discard(self) -> None:
        """Close, and remove the partial file unless it was published. Idempotent; never raises for a
        file already gone."""
        with suppress(OSError, ValueError):
            self.file.close()  # a stream cut short (EPIPE) must not stop the cleanup
        self._forget()
        if self._hold is not None:
            with suppress(OSError):
                os.close(self._hold)
            self._hold = None

    def __enter__(self) -> PendingOutput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()


@contextmanager
def _signals_held() -> Iterator[None]:
    """In the main thread, SIGINT and SIGTERM wait until the block has ended, then take effect as they
    would have (their handlers run, or the default action is taken)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[signal.Signals] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        caught.append(signal.Signals(signum))

    previous = {sig: signal.signal(sig, hold) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)  # None: set outside Python
        for sig in caught:
            handler = previous[sig]
            if callable(handler):
                handler(sig, None)
            elif handler != signal.SIG_IGN:
                signal.raise_signal(sig)


def discard_live() -> None:
    """Remove every partial file this process still has: the last word of a program stopped by a signal,
    for a partial file caught between its creation and the code that would remove it."""
    for partial in list(_live):
        with suppress(OSError):
            os.unlink(partial)
        _live.discard(partial)


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):  # folders some file systems cannot sync
            raise
    finally:
        os.close(fd)


@contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s lock: one publication at a time into it (waits for the other)."""
    fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    try:
        with suppress(OSError):  # a file system without locks: publish unserialised
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def publish(*outputs: PendingOutput) -> None:
    """Put every output in place, the last one last (see "Files that go together" in the module's
    docstring). Streams are only closed."""
    for out in outputs:
        out.close()
    files = [out for out in outputs if out.partial is not None and not out.published]
    if not files:
        return
    last = files[-1]
    others = files[:-1]
    with _folder_lock(last.target.path.parent):
        for out in files:  # checked when the path was given; checked again, as it may have changed since
            with suppress(FileNotFoundError):
                if not stat.S_ISREG(os.stat(out.target.path, follow_symlinks=False).st_mode):
                    raise UsageError(f"{out.target.path} is no longer a regular file: it was not replaced")
        if others:
            with suppress(FileNotFoundError):
                if stat.S_ISREG(os.stat(last.target.path, follow_symlinks=False).st_mode):
                    os.unlink(last.target.path)  # from here on, no old "last" can describe the new others
                    _sync_folder(last.target.path.parent)
            for out in others:
                assert out.partial is not None
                os.replace(out.partial, out.target.path)
                out.published = True
                _live.discard(out.partial)
            for folder in dict.fromkeys(out.target.path.parent for out in others):
                _sync_folder(folder)
        assert last.partial is not None
        os.replace(last.partial, last.target.path)
        last.published = True
        _live.discard(last.partial)
        _sync_folder(last.target.path.parent)


@contextmanager
def atomic_output(path: str | os.PathLike[str], *, encoding: str = "utf-8") -> Iterator[TextIO]:
    """A text file to write ``path`` through: in place whole when the block ends, removed if it fails."""
    out = PendingOutput(path, encoding=encoding)
    try:
        yield out.file
        publish(out)
    finally:
        out.discard()

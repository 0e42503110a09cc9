"""One registry for everything looked up by name: formats, metrics (and the solver's message builders).

A registry knows the modules of its built-in entries and imports them when they are looked up, so that
importing a package does not import every entry (``evalcore score`` never loads a file format): a
lookup by name imports the modules in their order until one has registered the name, a listing all of
them (order the cheap and common first: scoring with tool-call metrics never imports the judge's).
A name is registered once: registering a second entry under a taken name is refused with a
``RegistryError`` (a plug-in must not silently replace a built-in, nor one built-in another).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from importlib import import_module
from typing import Generic, TypeVar

from evalcore.errors import RegistryError, UnknownNameError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries of one ``kind`` by name; ``builtins`` are the modules that register the built-in ones."""

    def __init__(self, kind: str, builtins: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.builtins = builtins
        self._entries: dict[str, T] = {}
        self._loaded = not builtins
        self._lock = threading.RLock()

    def add(self, name: str, entry: T) -> T:
        """Register ``entry`` as ``name``; a name already taken is refused.

        An entry from outside the built-in modules (a plug-in) is added once the built-ins are in, so that
        it can never take a built-in's name first (the built-in's import would then fail)."""
        module = getattr(entry, "__module__", None) or type(entry).__module__
        if module not in self.builtins:
            self._all()
        with self._lock:
            if name in self._entries and self._entries[name] is not entry:
                raise RegistryError(f"a {self.kind} named {name!r} is registered already")
            self._entries[name] = entry
        return entry

    def decorator(self, name_of: Callable[[T], str]) -> Callable[[T], T]:
        """A class decorator registering what it decorates under ``name_of(it)``."""
        return lambda entry: self.add(name_of(entry), entry)

    def get(self, name: str) -> T:
        """The entry registered as ``name``; an unknown name is an ``UnknownNameError`` listing the known."""
        entries = self._until(name)
        try:
            return entries[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, sorted(entries)) from None

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self._all())

    def entries(self) -> list[T]:
        """Every entry, in the order of their names."""
        entries = self._all()
        return [entries[name] for name in sorted(entries)]

    def _until(self, name: str) -> dict[str, T]:
        if name not in self._entries and not self._loaded:
            with self._lock:
                for module in self.builtins:
                    if name in self._entries:
                        break
                    import_module(module)  # (a module imported already is a dictionary lookup)
                else:
                    self._loaded = True
        return self._entries

    def _all(self) -> dict[str, T]:
        if not self._loaded:
            with self._lock:  # one thread imports; the others wait for the whole set
                if not self._loaded:
                    for module in self.builtins:
                        import_module(module)
                    self._loaded = True
        return self._entries

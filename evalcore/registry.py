"""One registry for everything looked up by name: formats, metrics (and the solver's message builders).

A registry knows the modules of its built-in entries and imports them when they are looked up, so that
importing a package does not import every entry (``evalcore score`` never loads a file format): a
lookup by name imports the modules in their order until one has registered the name, a listing all of
them (order the cheap and common first: scoring with tool-call metrics never imports the judge's).
A name is registered once: registering a second entry under a taken name is refused with a
``RegistryError`` (a plug-in must not silently replace a built-in, nor one built-in another).

Plug-ins. A registry with an entry-point ``group`` (metrics: ``evalcore.metrics``) also holds what the installed
distributions declare in that group, loaded after the built-ins: on a listing, or on a lookup of a name no
built-in has, with those ``also`` names (``(target, origin)``: metrics, ``$EVALCORE_PLUGINS``'s). ``load`` loads one
plug-in by hand (``--plugin MODULE``). A plug-in is ``module`` (whose import
registers its entries, with the registry's decorator) or ``module:attr`` (an entry the registry's ``adopt``
registers). A plug-in that cannot be loaded is a ``PluginError`` naming it and why: raised by ``load``; for an
entry point, kept in ``plugin_failures`` (the other entries stay usable) and named by a lookup that fails.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from importlib import import_module
from types import ModuleType
from typing import Any, Generic, TypeVar

from evalcore.errors import PluginError, RegistryError, UnknownNameError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries of one ``kind`` by name; ``builtins`` are the modules that register the built-in ones."""

    def __init__(
        self,
        kind: str,
        builtins: tuple[str, ...] = (),
        *,
        group: str | None = None,
        adopt: Callable[[Any], object] | None = None,
        also: Callable[[], Sequence[tuple[str, str]]] | None = None,
    ) -> None:
        self.kind = kind
        self.builtins = builtins
        self.group = group
        self.adopt = adopt
        self.also = also
        #: Why each entry point of ``group`` that failed to load failed (one line each, naming it).
        self.plugin_failures: list[str] = []
        self._entries: dict[str, T] = {}
        self._loaded = not builtins
        self._plugins_loaded = group is None
        self._lock = threading.RLock()

    def add(self, name: str, entry: T) -> T:
        """Register ``entry`` as ``name``; a name already taken is refused.

        An entry from outside the built-in modules (a plug-in) is added once the built-ins are in, so that
        it can never take a built-in's name first (the built-in's import would then fail)."""
        module = getattr(entry, "__module__", None) or type(entry).__module__
        if module not in self.builtins:
            self._builtins()
        with self._lock:
            if name in self._entries and self._entries[name] is not entry:
                raise RegistryError(f"a {self.kind} named {name!r} is registered already")
            self._entries[name] = entry
        return entry

    def decorator(self, name_of: Callable[[T], str]) -> Callable[[T], T]:
        """A class decorator registering what it decorates under ``name_of(it)``."""
        return lambda entry: self.add(name_of(entry), entry)

    def get(self, name: str) -> T:
        """The entry registered as ``name``; an unknown name is an ``UnknownNameError`` listing the known (a
        ``PluginError`` when a plug-in failed to load: it may be the one that has the name)."""
        entries = self._until(name)
        try:
            return entries[name]
        except KeyError:
            if self.plugin_failures:
                known = ", ".join(sorted(entries))
                raise PluginError(
                    f"unknown {self.kind} {name!r} (known: {known}); {'; '.join(self.plugin_failures)}"
                ) from None
            raise UnknownNameError(self.kind, name, sorted(entries)) from None

    def load(self, target: str, origin: str | None = None) -> list[str]:
        """Load the plug-in ``target``: ``module`` (its import registers its entries) or ``module:attr`` (the
        entry ``adopt`` registers); returns the names of the entries that come from it. Anything that goes wrong
        (the import fails, ``attr`` is missing or not an entry, a name is taken, nothing is registered) is a
        ``PluginError`` naming ``origin`` (by default: the plug-in ``target``)."""
        what = origin or f"plug-in {target!r}"
        module_name, _, attr = (part.strip() for part in target.partition(":"))
        if not module_name:
            raise PluginError(f"{what}: name a module (MODULE or MODULE:NAME)")
        self._builtins()
        try:
            loaded: Any = import_module(module_name)
            for part in attr.split(".") if attr else ():
                loaded = getattr(loaded, part)
            if not isinstance(loaded, ModuleType):
                if self.adopt is None:
                    raise RegistryError(f"{attr} is not a module, and a {self.kind} plug-in names a module")
                self.adopt(loaded)
        except Exception as exc:  # a plug-in's own failure, whatever it is: named, never a traceback
            why = str(exc) if isinstance(exc, RegistryError) else f"{type(exc).__name__}: {exc}"
            raise PluginError(f"{what} failed to load: {why}") from None
        origin_module = loaded.__name__ if isinstance(loaded, ModuleType) else module_name
        names = sorted(name for name, entry in self._entries.items() if _comes_from(entry, origin_module, loaded))
        if not names:
            raise PluginError(
                f"{what} registers no {self.kind}: register its classes with the registry's decorator, "
                f"or name one as MODULE:CLASS"
            )
        return names

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
        if name not in self._entries:
            self._plugins()
        return self._entries

    def _builtins(self) -> dict[str, T]:
        if not self._loaded:
            with self._lock:  # one thread imports; the others wait for the whole set
                if not self._loaded:
                    for module in self.builtins:
                        import_module(module)
                    self._loaded = True
        return self._entries

    def _all(self) -> dict[str, T]:
        self._builtins()
        self._plugins()
        return self._entries

    def _plugins(self) -> None:
        """Load the entry points of ``group``, then the plug-ins ``also`` names (once): each failure is kept, named,
        in ``plugin_failures``."""
        if self._plugins_loaded:
            return
        with self._lock:
            if self._plugins_loaded:
                return
            self._plugins_loaded = True  # first: a plug-in's own ``add`` must not load them again
            self._builtins()
            from importlib.metadata import entry_points

            plugins = []
            for point in entry_points(group=self.group or ""):
                dist = getattr(point.dist, "name", None)
                of = f" of {dist}" if dist else ""
                plugins.append((point.value, f"plug-in {point.name!r} (entry point {point.value!r}{of})"))
            for target, origin in [*plugins, *(self.also() if self.also else ())]:
                try:
                    self.load(target, origin)
                except PluginError as exc:
                    self.plugin_failures.append(str(exc))


def _comes_from(entry: object, module: str, loaded: object) -> bool:
    """Whether ``entry`` is ``loaded`` itself, or defined in ``module`` or one of its submodules."""
    if entry is loaded:
        return True
    defined = getattr(entry, "__module__", None) or ""
    return defined == module or defined.startswith(module + ".")

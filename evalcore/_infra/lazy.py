"""Names a package exports but imports on first use: a command that only scores (say) does not pay for every
format's module, nor for the model client's (asyncio, ssl) when no model is called."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, namespace: dict[str, Any], where: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports each name of ``where`` from the module it maps to
    on first use and keeps it in ``namespace`` (the package's globals), so the next lookup is a plain one."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    return __getattr__

"""Lazy package exports (PEP 562): a package names what it exports and where it lives,
and a name's module is imported on first use. So ``python -m toolwire.host`` or
``toolwire serve`` can start work (the sandbox probe) before the heavy imports, and a
host never imports the client's modules (or pydantic) it does not use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that resolves ``name`` by importing
    ``exports[name]`` (a module path relative to ``package`` or absolute) on first use.

    Raises (from the returned function):
        AttributeError: ``name`` is not exported.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        importlib.import_module(package).__dict__[name] = value  # later lookups are direct
        return value

    return __getattr__

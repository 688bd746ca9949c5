"""The built-in tools. Each module defines ``@tool`` functions; :func:`builtin_tools` lists them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..tools.registry import Registry

__all__ = ["builtin_tools", "load_builtins"]


def builtin_tools() -> list[Callable[..., Any]]:
    """The built-in tool functions, in the order clients list them:
    read, write, edit, bash, ls, grep, find."""
    from .bash import bash
    from .edit import edit
    from .find import find
    from .grep import grep
    from .ls import ls
    from .read import read
    from .write import write

    return [read, write, edit, bash, ls, grep, find]


def load_builtins(registry: Registry) -> None:
    """Register the built-in tools (read, write, edit, bash, ls, grep, find) in ``registry``
    (here, not in :mod:`toolwire.host.tools.loading`, so the tools package never imports
    the built-ins made of it)."""
    for fn in builtin_tools():
        registry.add(fn)

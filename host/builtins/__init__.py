"""The built-in tools. Each module defines ``@tool`` functions; :func:`builtin_tools` lists them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["builtin_tools"]


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

"""The built-in tools. Each module defines ``@tool`` functions; :func:`builtin_tools` lists them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["builtin_tools"]


def builtin_tools() -> list[Callable[..., Any]]:
    """The built-in tool functions, in the order clients list them."""
    return []

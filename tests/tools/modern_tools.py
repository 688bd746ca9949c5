"""Tools the 2026-07-28 tests call besides examples/tools/echo_tools.py and interop_tools.py.

* ``add_tool`` registers a tool while the host runs (a tools list change).
"""

from __future__ import annotations

from typing import Any

from toolwire.host import tool

_registry: Any = None


def register(registry: Any) -> None:
    """Loading hook: keep the registry so ``add_tool`` can change it at run time."""
    global _registry
    _registry = registry


@tool
async def add_tool(name: str) -> str:
    """Register a tool named ``name`` that answers "dynamic".

    Args:
        name: the new tool's name.
    """

    def dynamic() -> str:
        return "dynamic"

    dynamic.__doc__ = "Added at run time."
    _registry.add(tool(name=name)(dynamic))
    return "added"

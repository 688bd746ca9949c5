"""Two small tools used by protocol.md's example exchanges (and a template for your own).

Serve them with::

    toolwire serve --no-builtins --tools examples/tools/echo_tools.py
"""

from __future__ import annotations

from typing import Annotated

from toolwire.host import Param, ToolContext, tool


@tool(annotations={"readOnlyHint": True})
async def echo(text: Annotated[str, Param("Text to send back.")]) -> str:
    """Return the text unchanged."""
    return text


@tool
async def count(n: int, ctx: ToolContext) -> str:
    """Count up to n, reporting progress at every step.

    Args:
        n: How far to count.
    """
    for i in range(1, n + 1):
        await ctx.report_progress(i, total=n, message=f"{i} of {n}")
    return f"counted to {n}"

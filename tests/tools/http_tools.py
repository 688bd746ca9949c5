"""Tools for the Streamable HTTP tests (tests/test_http*.py)."""

from __future__ import annotations

from pathlib import Path

import anyio
from toolwire.host import ToolContext, tool


@tool
async def hold(text: str, path: str, side: str) -> str:
    """Write ``<side>/<text>.waiting``, wait until ``path`` exists, return ``text``."""
    Path(side, f"{text}.waiting").write_text("")
    while not Path(path).exists():
        await anyio.sleep(0.005)
    return text


@tool
async def steps(n: int, ctx: ToolContext) -> str:
    """Report ``n`` progress steps and log one line, then return "done"."""
    for i in range(n):
        await ctx.report_progress(i + 1, n, f"step {i + 1}")
    await ctx.log("info", "steps finished")
    return "done"


@tool
async def hang(side: str) -> str:
    """Write ``<side>/hang.started``, wait forever; ``<side>/hang.cancelled`` on cancel."""
    Path(side, "hang.started").write_text("")
    try:
        await anyio.sleep_forever()
    finally:
        Path(side, "hang.cancelled").write_text("")
    return "unreachable"

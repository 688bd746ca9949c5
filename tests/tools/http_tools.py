"""Tools for the Streamable HTTP tests (tests/test_http*.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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


ROUTED_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "target": {
            "type": "object",
            "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
        },
        "note": {"type": "string"},
    },
    "required": ["region", "priority"],
}


@tool(input_schema=ROUTED_SCHEMA)
async def routed(arguments: dict[str, Any]) -> str:
    """Echo ``region``; HTTP clients mirror the annotated arguments as ``Mcp-Param-*``."""
    return f"routed to {arguments['region']}"


@tool
async def wait_logged(path: str, ctx: ToolContext) -> str:
    """Log "waiting", wait until ``path`` exists, log "resumed", return "finished"."""
    await ctx.log("info", "waiting")
    while not Path(path).exists():
        await anyio.sleep(0.005)
    await ctx.log("info", "resumed")
    return "finished"


@tool
async def chatty(n: int, ctx: ToolContext) -> str:
    """Log ``n`` lines ("line 1" …), then return "said"."""
    for i in range(n):
        await ctx.log("info", f"line {i + 1}")
    return "said"

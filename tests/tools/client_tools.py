"""Tools for the client tests (tests/client/test_client.py, tests/client/test_cli.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from toolwire.host import ToolContext, ToolResult, tool


@tool
async def whoami(ctx: ToolContext) -> str:
    """Return the call id the host gave this call."""
    return str(ctx.call_id)


@tool
async def nap(seconds: float, marker: str = "") -> str:
    """Sleep; when cancelled, write 'cancelled' to the marker file (if given).

    Args:
        seconds: how long to sleep.
        marker: a file path written when the call is cancelled.
    """
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        if marker:
            Path(marker).write_text("cancelled")
        raise
    return "rested"


@tool
async def chatty(message: str, ctx: ToolContext) -> str:
    """Send a log message at level info, then answer.

    Args:
        message: the log message's data.
    """
    await ctx.log("info", message)
    return "logged"


@tool
async def detailed() -> ToolResult:
    """Return content, details and structured content."""
    return ToolResult(
        "the text for the model",
        details={"lines": 3, "path": "a.txt"},
        structured={"answer": 42},
    )


@tool
def noisy(kib: int) -> str:
    """Write kib KiB to stderr, then answer.

    Args:
        kib: how many KiB to write.
    """
    line = "x" * 1023 + "\n"
    for _ in range(kib):
        sys.stderr.write(line)
    sys.stderr.flush()
    return "written"

"""A second tool module for tests/escape/test_sandbox_escape_handlers.py: a call that stays
in flight in its own worker while another module's handler misbehaves."""

from __future__ import annotations

import anyio
from toolwire.host import ToolContext, tool


@tool
async def wait_here(seconds: float, ctx: ToolContext) -> str:
    """Report progress once (so the caller knows the call is running), then wait.

    Args:
        seconds: how long to wait unless cancelled.
    """
    await ctx.report_progress(1, total=2, message="waiting")
    await anyio.sleep(seconds)
    return "waited"

"""Tools that are still running when the client shuts the host down (test_e2e_shutdown.py).

Each reports progress once as soon as it runs, so a test knows the call is in flight
without sleeping."""

from __future__ import annotations

import time

import anyio
from toolwire.host import ToolContext, tool


@tool
async def wait_async(seconds: float, ctx: ToolContext) -> str:
    """Sleep (cancellable) for the given seconds."""
    await ctx.report_progress(1, message="started")
    await anyio.sleep(seconds)
    return f"slept {seconds:g}"


@tool
def wait_sync(seconds: float, ctx: ToolContext) -> str:
    """Sleep in a worker thread for the given seconds."""
    ctx.report_progress_from_thread(1, message="started")
    time.sleep(seconds)
    return f"slept {seconds:g}"


@tool
async def stubborn(seconds: float, ctx: ToolContext) -> str:
    """Sleep for the given seconds, shielded from cancellation (a badly written tool)."""
    await ctx.report_progress(1, message="started")
    with anyio.CancelScope(shield=True):
        await anyio.sleep(seconds)
    return "late"

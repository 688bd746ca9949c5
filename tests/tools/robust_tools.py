"""Tools that misbehave in ways a host must survive (tests/e2e/test_e2e_robustness.py)."""

from __future__ import annotations

from toolwire.host import ToolContext, tool


@tool
async def spin(n: int, ctx: ToolContext) -> str:
    """Report progress n times without awaiting anything else."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, total=n)
    return f"spun {n}"


@tool
async def interrupt() -> str:
    """Raise KeyboardInterrupt, as tool code can."""
    raise KeyboardInterrupt


@tool
def interrupt_sync() -> str:
    """Raise a bare BaseException from a worker thread."""
    raise BaseException("bare")


@tool
async def odd_progress(ctx: ToolContext) -> str:
    """Report infinite, NaN and then valid progress."""
    await ctx.report_progress(float("inf"))
    await ctx.report_progress(float("nan"))
    await ctx.report_progress(1, total=float("inf"))
    await ctx.report_progress(2, total=3)
    return "done"


@tool
async def hog(seconds: float, marker: str) -> str:
    """Keep the event loop busy without ever awaiting (a badly written async tool);
    the marker file says it has started."""
    import time
    from pathlib import Path

    Path(marker).write_text("started")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
    return "done"

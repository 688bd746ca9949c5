"""Tools for tests/host/calls/test_commit_order_e2e.py: a change made at ``ctx.commit()``.

Each writes ``path`` only when ``ctx.commit()`` says it may, and always leaves
``path + ".ended"`` behind when its handler is over, so a test sees what happened
without trusting the answer.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from toolwire.host import ToolContext, tool


async def _until_exists(path: Path) -> None:
    while not path.exists():
        await anyio.sleep(0.01)


@tool
async def commit_then_wait(path: str, go: str, ctx: ToolContext) -> str:
    """Commit and write ``path``, report progress "committed", then wait until the file
    ``go`` exists (a cancellation arriving meanwhile must not interrupt it)."""
    target = ctx.env.resolve(path)
    try:
        if not ctx.commit():
            return "not committed"
        target.write_text("written")
        await ctx.report_progress(1, message="committed")
        await _until_exists(ctx.env.resolve(go))
        return "done"
    finally:
        Path(f"{target}.ended").write_text("")


@tool
async def wait_then_commit(path: str, go: str, ctx: ToolContext) -> str:
    """Report progress "waiting", wait (shielded) until the file ``go`` exists, then
    commit and write ``path`` (nothing when the call was cancelled meanwhile)."""
    target = ctx.env.resolve(path)
    try:
        await ctx.report_progress(1, message="waiting")
        with anyio.CancelScope(shield=True):
            await _until_exists(ctx.env.resolve(go))
        if not ctx.commit():
            return "not committed"
        target.write_text("written")
        return "done"
    finally:
        Path(f"{target}.ended").write_text("")


@tool(timeout=0.5)
async def commit_after_timeout(path: str, ctx: ToolContext) -> str:
    """Sleep 1.5 s shielded, past this tool's 0.5 s timeout (whose timer, due first on
    the same event loop, has fired by then), then commit and write ``path``."""
    target = ctx.env.resolve(path)
    try:
        with anyio.CancelScope(shield=True):
            await anyio.sleep(1.5)
        if not ctx.commit():
            return "not committed"
        target.write_text("written")
        return "done"
    finally:
        Path(f"{target}.ended").write_text("")

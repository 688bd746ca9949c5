"""Tools for tests/host/workers/test_workers_early.py: calls a host may send to their worker as soon as
it reads them, and calls it must not (a before hook or an approval comes first).

``note`` appends its word to a file, so a call that ran in the worker leaves a trace
even when the host answered it with a refusal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from toolwire.host import Block, ToolContext, before_tool_call, tool


@tool
async def quick() -> str:
    """Answer at once (calls of a module that typically take under 1 ms are the ones
    sent early)."""
    return "ok"


def _append(path: str, word: str) -> None:
    with Path(path).open("a") as f:
        f.write(word + "\n")


@tool
async def note(word: str, path: str) -> str:
    """Append the word to the file at path (a before hook blocks "forbidden")."""
    _append(path, word)
    return f"noted {word}"


@tool
async def note_freely(word: str, path: str) -> str:
    """The same as note, with no hook: the control."""
    _append(path, word)
    return f"noted {word}"


@tool
async def touch_note(word: str, path: str) -> str:
    """The same as note, served under --approve touch_note in the tests."""
    _append(path, word)
    return f"noted {word}"


@tool
async def steps(n: int, ctx: ToolContext) -> str:
    """Report n progress steps, then answer."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n)
    return f"{n} steps"


@tool
async def linger(path: str) -> str:
    """Write "started" to the file at path, sleep 60 s; a cancellation appends
    " cancelled" before it ends the call."""
    Path(path).write_text("started")
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        _append(path, " cancelled")
        raise
    return "slept"


@tool(timeout=0.3)
async def overstay() -> str:
    """Sleep far past its 0.3 s timeout."""
    await anyio.sleep(30)
    return "too late"


@before_tool_call(tools=["note"])
def forbid(call: Any, args: dict[str, Any], ctx: ToolContext) -> Any:
    """Block the word "forbidden"."""
    if args["word"] == "forbidden":
        return Block("the word is forbidden here")
    return None

"""Tools for the agent-loop, batch and approval tests (tests/client/test_agent.py, tests/test_client_*.py)."""

from __future__ import annotations

from pathlib import Path

import anyio
from toolwire.host import ToolContext, ToolResult, tool


@tool
def mark(path: str, text: str = "ran") -> str:
    """Write text to the file at path (proof that the call ran).

    Args:
        path: an absolute file path.
        text: what to write.
    """
    Path(path).write_text(text)
    return f"marked {path}"


@tool(annotations={"readOnlyHint": True})
def say(text: str) -> str:
    """Return the text (a read-only tool).

    Args:
        text: the text.
    """
    return text


@tool
def finish(summary: str, terminate: bool = True) -> ToolResult:
    """Return the summary and (by default) ask the agent loop to stop.

    Args:
        summary: the text of the result.
        terminate: whether to ask the loop to stop.
    """
    return ToolResult(summary, terminate=terminate)


@tool
async def steps(n: int, ctx: ToolContext) -> str:
    """Report progress n times, then answer.

    Args:
        n: how many progress notifications.
    """
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    return f"{n} steps"


@tool
async def gate(path: str, seconds: float = 10.0) -> str:
    """Wait until the file at path exists (at most seconds), then answer.

    Args:
        path: the file to wait for.
        seconds: the longest wait.
    """
    with anyio.move_on_after(seconds):
        while not Path(path).exists():
            await anyio.sleep(0.01)
        return "opened"
    raise RuntimeError(f"{path} did not appear within {seconds} s")


@tool
def fail(message: str) -> str:
    """Raise with the message (an error result).

    Args:
        message: the error text.
    """
    raise RuntimeError(message)

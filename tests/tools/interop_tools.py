"""Tools the Node interop clients (tests/interop/) call besides examples/tools/echo_tools.py.

* ``nap`` sleeps asynchronously and records in a marker file whether it finished or was
  cancelled, so a client can observe that its cancellation really interrupted the tool.
* ``snooze`` blocks a worker thread (a synchronous tool), to show the host keeps answering.
* ``steps`` reports progress with a pause after each report, as a long-running tool does.
* ``chatty`` sends one log notification per level, tagged, to check ``logging/setLevel``.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
from toolwire.host import ToolContext, tool


@tool
async def nap(seconds: float, marker: str) -> str:
    """Sleep asynchronously, recording the outcome in a marker file.

    Args:
        seconds: how long to sleep, in seconds.
        marker: absolute path of a file that gets "started", then "finished" or "cancelled".
    """
    path = Path(marker)
    path.write_text("started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        path.write_text("cancelled")
        raise
    path.write_text("finished")
    return f"slept {seconds} s"


@tool
def snooze(ms: int) -> str:
    """Block the calling worker thread (a synchronous tool).

    Args:
        ms: how long to block, in milliseconds.
    """
    time.sleep(ms / 1000)
    return f"snoozed {ms} ms"


@tool
async def steps(n: int, gap_ms: int, ctx: ToolContext) -> str:
    """Report progress 1..n, pausing after each report.

    Args:
        n: how many steps.
        gap_ms: pause after each progress report, in milliseconds.
    """
    for i in range(1, n + 1):
        await ctx.report_progress(i, total=n, message=f"step {i}")
        await anyio.sleep(gap_ms / 1000)
    return f"{n} steps"


@tool
async def chatty(tag: str, ctx: ToolContext) -> str:
    """Send a log notification at debug, info and warning level, each carrying the tag.

    Args:
        tag: a string copied into every log entry's data, to tell calls apart.
    """
    for level in ("debug", "info", "warning"):
        await ctx.log(level, {"tag": tag, "level": level})
    return f"logged {tag}"

"""A tool that reports progress and logs in a loop as fast as it can (for the tests of the
host's output queue against a client that does not read)."""

import os

from toolwire.host import ToolContext, tool


@tool
async def flood(n: int, marker: str, ctx: ToolContext) -> str:
    """Report progress and log a line n times; every 1,000 rounds, write the count so far
    to the file ``marker``.

    Args:
        n: how many rounds.
        marker: file the count is written to.
    """
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"round {i}")
        await ctx.log("info", f"line {i}")
        if i % 1000 == 0:
            with open(marker + ".tmp", "w") as f:
                f.write(str(i))
            os.replace(marker + ".tmp", marker)
    return f"flooded {n}"

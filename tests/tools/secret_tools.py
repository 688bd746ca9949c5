"""A tool that repeats an environment variable of its process in its progress and its result,
for the redaction tests of masked credentials (tests/host/sandbox/test_sandbox_secrets.py).

Run with ``--isolation none``: the host's own environment, where a ``[secrets]`` value
read from ``env`` is.
"""

from __future__ import annotations

import os

from toolwire.host import ToolContext, tool


@tool
async def repeat_env(name: str, ctx: ToolContext) -> dict[str, str]:
    """Report ``name``'s value as progress text, then return it (text and structured).

    Args:
        name: an environment variable of the host process.
    """
    value = os.environ.get(name, "")
    await ctx.report_progress(1, 2, f"progress {value}")
    return {"value": value}

"""The benchmark's tools for toolwire: echo, sleep (async) and block (synchronous)."""

from __future__ import annotations

import time

import anyio
from toolwire.host import tool


@tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@tool
async def sleep(ms: int) -> str:
    """Sleep asynchronously for ms milliseconds."""
    await anyio.sleep(ms / 1000)
    return "slept"


@tool
def block(ms: int) -> str:
    """Block a worker thread for ms milliseconds (a synchronous tool)."""
    time.sleep(ms / 1000)
    return "blocked"

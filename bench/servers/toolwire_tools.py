"""The benchmark's tools for toolwire: echo (async), echo_sync (the same, synchronous),
sleep (async), block (synchronous), hog (async, never yields) and stuck (hog under a
0.5 s timeout) and crash (ends its process at once: in a worker, the worker)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
from toolwire.host import tool


@tool
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@tool
def echo_sync(text: str) -> str:
    """Return the text unchanged (a synchronous handler, run in a thread)."""
    return text


@tool
async def sleep(ms: int) -> str:
    """Sleep asynchronously for ms milliseconds."""
    await anyio.sleep(ms / 1000)
    return "slept"


@tool
def block(ms: int, marker: str = "") -> str:
    """Block a worker thread for ms milliseconds (a synchronous tool); a non-empty
    marker names a file written when the call starts."""
    if marker:
        Path(marker).write_text("started")
    time.sleep(ms / 1000)
    return "blocked"


@tool
async def hog(ms: int, marker: str) -> str:
    """Hold the event loop for ms milliseconds without ever awaiting (a badly written
    async tool); the marker file is written when the call starts."""
    Path(marker).write_text("started")
    end = time.monotonic() + ms / 1000
    while time.monotonic() < end:
        pass
    return "done"


@tool(timeout=0.5)
async def stuck(ms: int, marker: str = "") -> str:
    """Hold the event loop for ms milliseconds without awaiting, under a 0.5 s timeout
    that cannot interrupt it; a non-empty marker names a file written when the call starts."""
    if marker:
        Path(marker).write_text("started")
    end = time.monotonic() + ms / 1000
    while time.monotonic() < end:
        pass
    return "done"


@tool
def crash() -> str:
    """End this process at once (exit code 3): through a worker, the worker crashes."""
    os._exit(3)

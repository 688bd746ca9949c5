"""A tool for the fleet chaos test (tests/host/serve/test_fleet_chaos.py): a call that is known to be
in flight on one replica when that replica is killed."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
from toolwire.host import tool


@tool
async def held(text: str, side: str) -> str:
    """Write ``<side>/<text>.<pid>`` (the serving process's pid), wait until
    ``<side>/release`` exists, return ``text``.

    Args:
        text: the answer, unique to the call.
        side: a directory outside the root that the test watches.
    """
    Path(side, f"{text}.{os.getpid()}").write_text("")
    while not Path(side, "release").exists():
        await anyio.sleep(0.005)
    return text

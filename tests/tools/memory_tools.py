"""Tools that hold memory, for tests/escape/test_sandbox_escape_memory.py.

Served in a worker process (``--isolation process``) under the sandbox. Each tool holds
at most :data:`CAP_MIB` MiB however it is called, so a test whose memory limit does not
hold cannot hurt the machine.
"""

from __future__ import annotations

import os

from toolwire.host import tool

CAP_MIB = 1536
"""The most any call here holds (1.5 GiB)."""

CHUNK = 64 << 20


@tool
async def allocate(mib: int, how: str = "heap") -> str:
    """Hold ``mib`` MiB (at most :data:`CAP_MIB`) in 64 MiB steps: ``heap`` as touched
    bytearrays, ``memfd`` written into a memfd; then let it go."""
    mib = min(mib, CAP_MIB)
    held: list[bytearray] = []
    fd = os.memfd_create("toolwire-test-hold") if how == "memfd" else -1
    try:
        for _ in range((mib << 20) // CHUNK):
            if fd >= 0:
                os.write(fd, b"\1" * CHUNK)
            else:
                held.append(bytearray(b"\1" * CHUNK))
    finally:
        if fd >= 0:
            os.close(fd)
    return f"held {mib} MiB ({how})"

"""The process runner reads a command's output to end-of-file, never cut by a clock,
and says so when a process that escaped the cleanup keeps the pipe open."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from toolwire.host.commands import run_command

from tests.e2e_helpers import PROMPT
from tests.test_commands import live_with_arg, unique_sleep

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_slow_consumer_still_gets_all_output(tmp_path: Path) -> None:
    """A consumer that takes longer to take each chunk than the old half-second drain
    window still receives every byte printed before the exit."""
    chunks: list[bytes] = []

    async def slow(data: bytes) -> None:
        import anyio

        await anyio.sleep(0.3)
        chunks.append(data)

    # Several separate writes, so the pump hands on several chunks after the exit.
    command = "for i in 1 2 3 4 5; do echo line$i; sleep 0.01; done"
    r = await run_command(["bash", "-c", command], cwd=tmp_path, on_raw=slow)
    assert b"".join(chunks) == b"".join(b"line%d\n" % i for i in range(1, 6))
    assert r.output_complete


async def test_escaped_holder_of_the_pipe_is_reported(tmp_path: Path) -> None:
    """A process that left the group and scrubbed its environment (unsandboxed, it
    escapes the cleanup) keeps the pipe open: the call still returns, with the output
    read so far and ``output_complete`` False."""
    sleep, arg = unique_sleep()
    chunks: list[str] = []
    start = time.monotonic()
    try:
        r = await run_command(
            # The parent waits (on a FIFO) until the escapee runs with its scrubbed
            # environment, so the cleanup cannot catch it while it is still marked.
            [
                "bash",
                "-c",
                f"mkfifo up; setsid env -i /bin/sh -c 'echo > up; exec {sleep}' & "
                "read _ < up; echo done",
            ],
            cwd=tmp_path,
            on_output=chunks.append,
        )
        assert time.monotonic() - start < PROMPT
        assert "".join(chunks) == "done\n"
        assert r.exit_code == 0
        assert not r.output_complete
    finally:
        for pid in live_with_arg(arg):
            os.kill(pid, signal.SIGKILL)

"""The process runner reads a command's output to end-of-file, never cut by a clock,
and says so when a process that escaped the cleanup keeps the pipe open."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from toolwire.host.sandbox.commands import run_command

from tests.e2e_helpers import PROMPT

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


async def test_a_pipe_held_open_after_the_command_is_reported_incomplete() -> None:
    """The runner's pump, once told the command is over, reads what the pipe holds and
    then, when the pipe stays silent without end-of-file (a writer that escaped every
    cleanup: here the test itself holds the write end), ends with ``complete`` False
    instead of waiting forever. The runner kills every process a command starts
    (process group, marker, supervisor or sandbox), so this is the pump alone."""
    import anyio
    from toolwire.host.sandbox.commands import _OutputPump

    read_fd, write_fd = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        os.write(write_fd, b"done\n")
        got: list[bytes] = []
        pump = _OutputPump(read_fd, None, got.append)
        async with anyio.create_task_group() as tg:
            tg.start_soon(pump.run)
            pump.drain()
            with anyio.fail_after(PROMPT):
                await pump.eof.wait()
        assert b"".join(got) == b"done\n"
        assert not pump.complete
        # A pipe whose writer is gone ends complete.
        os.write(write_fd, b"more\n")
        os.close(write_fd)
        write_fd = -1
        pump2 = _OutputPump(read_fd, None, got.append)
        pump2.drain()
        with anyio.fail_after(PROMPT):
            await pump2.run()
        assert pump2.complete and got[-1] == b"more\n"
    finally:
        os.close(read_fd)
        if write_fd >= 0:
            os.close(write_fd)

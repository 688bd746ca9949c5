"""The cross-host lock's order (host/rootlock.py), seen from another open file.

A call naming several paths must lock their bytes in one global order (ascending
offset), whatever order it names them in: two hosts naming the same two files in
opposite orders could otherwise each hold one and wait for the other forever. The
test holds the higher byte itself and watches the call take the lower one first.
"""

from __future__ import annotations

import fcntl
import os
import struct
import time
from pathlib import Path

import anyio
import pytest
from toolwire.host.calls.rootlock import LOCK_DIR, LOCK_NAME, hold_root_locks, lock_offset

pytestmark = pytest.mark.anyio

_FLOCK = "@hhqqi4x"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _ofd(fd: int, cmd: int, kind: int, offset: int) -> int:
    got = fcntl.fcntl(fd, cmd, struct.pack(_FLOCK, kind, os.SEEK_SET, offset, 1, 0))
    return int(struct.unpack(_FLOCK, got)[0])


async def test_paths_are_locked_in_ascending_offset_order_whatever_their_order(
    tmp_path: Path,
) -> None:
    high, low = sorted(["p.txt", "q.txt"], key=lock_offset, reverse=True)
    assert lock_offset(high) > lock_offset(low)
    (tmp_path / LOCK_DIR).mkdir()
    fd = os.open(tmp_path / LOCK_DIR / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC)
    probe = os.open(tmp_path / LOCK_DIR / LOCK_NAME, os.O_RDWR | os.O_CLOEXEC)
    try:
        _ofd(fd, fcntl.F_OFD_SETLK, fcntl.F_WRLCK, lock_offset(high))
        held = anyio.Event()
        keys = [str(tmp_path / high), str(tmp_path / low)]  # the higher one named first

        async def call() -> None:
            async with hold_root_locks(tmp_path, keys):
                held.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            deadline = time.monotonic() + 60
            while _ofd(probe, fcntl.F_OFD_GETLK, fcntl.F_WRLCK, lock_offset(low)) == fcntl.F_UNLCK:
                assert time.monotonic() < deadline, "the lower byte was never locked"
                await anyio.sleep(0.01)  # polling the kernel's lock table
            assert not held.is_set()  # it still waits for the byte this test holds
            _ofd(fd, fcntl.F_OFD_SETLK, fcntl.F_UNLCK, lock_offset(high))
            with anyio.fail_after(60):
                await held.wait()
        # released when the call ends
        assert _ofd(probe, fcntl.F_OFD_GETLK, fcntl.F_WRLCK, lock_offset(low)) == fcntl.F_UNLCK
        assert _ofd(probe, fcntl.F_OFD_GETLK, fcntl.F_WRLCK, lock_offset(high)) == fcntl.F_UNLCK
    finally:
        os.close(probe)
        os.close(fd)


def _locks_on(path: Path) -> list[str]:
    """The /proc/locks lines (held, and awaited "->") on ``path``'s inode."""
    ino = path.stat().st_ino
    lines = Path("/proc/locks").read_text().splitlines()
    return [
        x
        for x in lines
        if any(t.count(":") == 2 and t.rsplit(":", 1)[1] == str(ino) for t in x.split())
    ]


async def test_a_cancelled_wait_leaves_nothing_locked(tmp_path: Path) -> None:
    # A call given up while it waits for another holder's lock must not take it later.
    (tmp_path / LOCK_DIR).mkdir()
    fd = os.open(tmp_path / LOCK_DIR / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC)
    probe = os.open(tmp_path / LOCK_DIR / LOCK_NAME, os.O_RDWR | os.O_CLOEXEC)
    off = lock_offset("f.txt")
    try:
        _ofd(fd, fcntl.F_OFD_SETLK, fcntl.F_WRLCK, off)
        with anyio.move_on_after(0.5):  # given up while its thread waits (or before)
            async with hold_root_locks(tmp_path, [str(tmp_path / "f.txt")]):
                pytest.fail("the lock was granted while another file held it")
        _ofd(fd, fcntl.F_OFD_SETLK, fcntl.F_UNLCK, off)
        # The abandoned thread now gets the byte and must let it go at once: soon no
        # lock on the file is held or awaited (the kernel's table, /proc/locks).
        deadline = time.monotonic() + 60
        while _locks_on(tmp_path / LOCK_DIR / LOCK_NAME):
            assert time.monotonic() < deadline, "the abandoned wait kept the lock"
            await anyio.sleep(0.01)  # polling the kernel's lock table
    finally:
        os.close(probe)
        os.close(fd)

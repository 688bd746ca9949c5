"""Two real host processes on one root: the cross-host file locks (host/rootlock.py).

Two editor windows on one project each start their own host; their ``edit`` calls on one
file must not lose each other's changes, a call naming several paths must not deadlock
with one naming them in the other order, and a host killed while it holds a lock must not
keep it (protocol.md §10.6, README "What is shared, and what is not").
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from toolwire.host.calls.rootlock import LOCK_DIR, LOCK_NAME, lock_offset

from tests.e2e_helpers import text_of, wait_until
from tests.hostproc import TOOLS_DIR, HostProcess
from tests.sandbox_support import require_sandbox

PIPELINE_TOOLS = str(TOOLS_DIR / "pipeline_tools.py")


def _send_calls(h: HostProcess, calls: list[tuple[Any, str, dict[str, Any]]]) -> None:
    """Send every call at once (pipelined), so the host runs them concurrently."""
    h.send_raw(
        b"".join(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": id,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
            ).encode()
            + b"\n"
            for id, name, arguments in calls
        )
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    return r


@contextmanager
def _hosts(args: list[str]) -> Iterator[tuple[HostProcess, HostProcess]]:
    """Two hosts started alike (the same root)."""
    with HostProcess(args) as a, HostProcess(args) as b:
        assert "result" in a.initialize() and "result" in b.initialize()
        yield a, b


def test_edits_from_two_hosts_on_one_file_lose_no_line(root: Path) -> None:
    # Each edit inserts its own line before END: a read-modify-write whose rename would
    # drop the other host's line if the two hosts' turns overlapped.
    log = root / "log.txt"
    log.write_text("END\n")
    n = 60
    args = ["--root", str(root), "--sandbox", "none", "--no-entry-points", "--timeout", "120"]
    with _hosts(args) as (a, b):
        for h, tag in ((a, "a"), (b, "b")):
            _send_calls(
                h,
                [
                    (
                        i,
                        "edit",
                        {
                            "path": "log.txt",
                            "edits": [{"oldText": "END\n", "newText": f"{tag} {i}\nEND\n"}],
                        },
                    )
                    for i in range(n)
                ],
            )
        for h in (a, b):
            for i in range(n):
                resp = h.recv_response(i, timeout=120)
                assert not resp["result"].get("isError"), text_of(resp)
    lines = log.read_text().splitlines()
    assert lines[-1] == "END"
    assert sorted(lines[:-1]) == sorted(f"{t} {i}" for t in "ab" for i in range(n))
    # Each host's own calls still land in arrival order (its in-process queue).
    for t in "ab":
        assert [x for x in lines if x.startswith(t + " ")] == [f"{t} {i}" for i in range(n)]
    assert sorted(os.listdir(root / LOCK_DIR)) == [".gitignore", LOCK_NAME]


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_multi_path_calls_in_opposite_orders_on_two_hosts_complete(
    root: Path, sandbox: str
) -> None:
    # A tool with a list of mutated paths, run in worker processes (sandboxed or not):
    # host a names [x, y], host b [y, x]. Both hold both files' locks for the whole call,
    # taken in one global order, so neither waits on the other forever and no line is lost.
    if sandbox == "bwrap":
        require_sandbox()
    n = 40
    args = ["--root", str(root), "--sandbox", sandbox, "--no-builtins", "--no-entry-points"]
    args += ["--tools", PIPELINE_TOOLS, "--timeout", "120"]
    with _hosts(args) as (a, b):
        for h, paths in ((a, ["x.txt", "y.txt"]), (b, ["y.txt", "x.txt"])):
            tag = paths[0][0]
            _send_calls(
                h,
                [(i, "append_to_each", {"paths": paths, "line": f"{tag} {i}"}) for i in range(n)],
            )
        for h in (a, b):
            for i in range(n):
                assert text_of(h.recv_response(i, timeout=120)) == "ok"
    want = sorted(f"{t} {i}" for t in "xy" for i in range(n))
    for name in ("x.txt", "y.txt"):
        assert sorted((root / name).read_text().splitlines()) == want, name


def _byte_locked_elsewhere(lock_file: Path, offset: int) -> bool:
    """Whether another open file holds a lock on byte ``offset`` (F_OFD_GETLK)."""
    if not lock_file.exists():
        return False
    fd = os.open(lock_file, os.O_RDWR | os.O_CLOEXEC)
    try:
        probe = struct.pack("@hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
        got = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, probe)
        return struct.unpack("@hhqqi4x", got)[0] != fcntl.F_UNLCK
    finally:
        os.close(fd)


def test_a_killed_hosts_lock_is_released(root: Path) -> None:
    args = ["--root", str(root), "--sandbox", "none", "--no-entry-points"]
    args += ["--tools", PIPELINE_TOOLS, "--isolation", "none", "--timeout", "600"]
    lock_file = root / LOCK_DIR / LOCK_NAME
    with _hosts(args) as (a, b):
        # a holds held.txt's lock for ten minutes; b's edit of it waits until a dies.
        _send_calls(a, [(1, "hold_file", {"path": "held.txt", "delay": 600})])
        wait_until(
            lambda: _byte_locked_elsewhere(lock_file, lock_offset("held.txt")),
            timeout=60,
            what="host a to lock held.txt",
        )
        _send_calls(b, [(2, "write", {"path": "held.txt", "content": "b was here\n"})])
        os.kill(a.proc.pid, signal.SIGKILL)
        a.proc.wait()
        resp = b.recv_response(2, timeout=60)
        assert not resp["result"].get("isError"), text_of(resp)
    assert (root / "held.txt").read_text() == "b was here\n"

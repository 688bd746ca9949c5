"""A client that stops reading while a tool floods progress and logs: the host's memory
stays bounded by bytes actually held, and a ping is answered soon after the client reads
again (issue 21, point 3). A real host process, a real pipe the test does not drain."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from tests.hostproc import HOST_COMMAND, REPO, TOOLS_DIR

MIB = 1024 * 1024


def rss(pid: int, field: str = "VmRSS") -> int:
    """``field`` of /proc/PID/status, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} for {pid}")


class PausedClient:
    """The host as a subprocess whose stdout the test reads only when it says so."""

    def __init__(self, root: Path, *args: str) -> None:
        env = dict(os.environ, PYTHONSAFEPATH="1")
        self.proc = subprocess.Popen(
            [*HOST_COMMAND, "--root", str(root), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=str(REPO),
            env=env,
        )
        assert self.proc.stdout is not None
        self._stdout: IO[bytes] = self.proc.stdout
        self.messages: queue.Queue[Any] = queue.Queue()
        self._reading = False

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def read_line(self) -> Any:
        """One message, read on the test's thread (before reading is handed to a thread)."""
        return json.loads(self._stdout.readline())

    def start_reading(self) -> None:
        """From now on a thread reads stdout as fast as it can."""

        def run() -> None:
            for line in self._stdout:
                self.messages.put(json.loads(line))
            self.messages.put(None)

        threading.Thread(target=run, daemon=True).start()

    def next(self) -> Any:
        return self.messages.get(timeout=60)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def wait_count(marker: Path, at_least: int, proc: subprocess.Popen[bytes], idle: int) -> int:
    """Wait until the tool wrote a count of at least ``at_least`` to ``marker``; fails
    as soon as the host's RSS is 50 MiB over ``idle`` (or after 5 minutes: a tool that
    the host stopped for good)."""
    give_up = time.monotonic() + 300
    while True:
        assert proc.poll() is None, "the host exited"
        grown = rss(proc.pid) - idle
        assert grown < 50 * MIB, f"host RSS grew {grown / MIB:.0f} MiB"
        assert time.monotonic() < give_up, f"the tool made fewer than {at_least} rounds"
        try:
            count = int(marker.read_text() or 0)
        except (FileNotFoundError, ValueError):
            count = 0
        if count >= at_least:
            return count
        time.sleep(0.05)  # polling a file the tool writes, not synchronising by time


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_paused_client_bounds_memory_and_ping_is_not_behind_the_flood(
    tmp_path: Path, isolation: str
) -> None:
    host = PausedClient(
        tmp_path, "--tools", str(TOOLS_DIR / "flood_tools.py"), "--isolation", isolation
    )
    try:
        host.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "paused", "version": "0"},
                },
            }
        )
        assert "result" in host.read_line()
        host.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        host.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert "result" in host.read_line()
        idle = rss(host.proc.pid)
        marker = tmp_path / "count"
        host.send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {
                    "name": "flood",
                    "arguments": {"n": 10**9, "marker": str(marker)},
                    "_meta": {"progressToken": "flood"},
                },
            }
        )
        # The client reads nothing while the tool makes 60,000 rounds (120,000
        # notifications, about 12 MB of JSON: far more than the 64 KiB pipe holds).
        peak = idle
        for step in range(1, 7):
            wait_count(marker, step * 10_000, host.proc, idle)
            peak = max(peak, rss(host.proc.pid))
        assert peak - idle < 50 * MIB, f"host RSS grew {(peak - idle) / MIB:.0f} MiB"

        # The client reads again and pings: the answer comes within a few thousand
        # messages (what the pipe and the lossy bound hold), long before the flood ends.
        host.send({"jsonrpc": "2.0", "id": "ping", "method": "ping"})
        host.start_reading()
        before_ping = 0
        while True:
            msg = host.next()
            assert msg is not None, "the host closed stdout"
            if msg.get("id") == "ping":
                assert msg["result"] == {}
                break
            before_ping += 1
        assert before_ping < 5_000, f"{before_ping} messages before the ping's answer"

        # Dropped logs are said, progress still increases; then cancel the call.
        seen_drop_notice = False
        last = 0.0
        while not seen_drop_notice:
            msg = host.next()
            assert msg is not None, "the host closed stdout"
            if msg.get("method") == "notifications/progress":
                assert msg["params"]["progress"] > last
                last = msg["params"]["progress"]
            elif msg.get("method") == "notifications/message":
                seen_drop_notice = "log messages dropped" in str(msg["params"]["data"])
        host.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 3, "reason": "enough"},
            }
        )
        host.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
        while True:
            msg = host.next()
            assert msg is not None, "the host closed stdout"
            assert msg.get("id") != 3, "a cancelled call was answered"
            if msg.get("id") == "after":
                break
        assert rss(host.proc.pid) - idle < 50 * MIB
    finally:
        host.close()


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip(reason="reads /proc/PID/status")

"""The marker scan that ends what a command left behind, while processes exec."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from toolwire.host.sandbox import commands
from toolwire.host.sandbox.commands import MARKER_ENV, kill_marked, marked_processes


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "30"], env={**os.environ, MARKER_ENV: "scan-token"})
    yield proc
    proc.kill()
    proc.wait()


def test_a_process_seen_in_the_middle_of_execve_is_read_again(
    sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    # /proc/<pid>/environ reads empty while a process is in execve (the new memory map
    # has no environment yet): the scan found by a flaky CI run missed such a process
    # when it had left the command's group with setsid.
    real = commands._environ
    reads = {sleeper.pid: 0}

    def environ(pid: int) -> bytes | None:
        if pid in reads:
            reads[pid] += 1
            if reads[pid] <= 3:
                return b""
        return real(pid)

    monkeypatch.setattr(commands, "_environ", environ)
    assert sleeper.pid in marked_processes("scan-token")
    assert reads[sleeper.pid] == 4


def test_a_process_without_any_environment_is_not_ours_and_costs_a_bounded_wait() -> None:
    bare = subprocess.Popen(["env", "-i", "sleep", "30"])
    try:
        deadline = time.monotonic() + 5
        while b"sleep" not in Path(f"/proc/{bare.pid}/cmdline").read_bytes():
            assert time.monotonic() < deadline, "env never exec'd sleep"
        started = time.monotonic()
        assert kill_marked("no-such-token") == set()
        assert time.monotonic() - started < 5  # one bounded wait, not one per round
        assert bare.poll() is None
    finally:
        bare.kill()
        bare.wait()


def test_kill_marked_ends_the_marked_process(sleeper: subprocess.Popen[bytes]) -> None:
    assert kill_marked("scan-token") == {sleeper.pid}
    assert sleeper.wait(timeout=5) == -9

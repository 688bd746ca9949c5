"""The host's stderr pump (toolwire.host.serve.errpump): a flush before exit loses nothing.

A refused start prints one line and exits; the pump must have written that line to the
real stderr before :meth:`StderrPump.flush` returns, even when its reader thread is
preempted between taking bytes from the pipe and buffering them (seen at load: a refused
start's only line was lost).
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from toolwire.host.serve import errpump


def test_flush_waits_for_bytes_the_reader_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    real_read = os.read
    read_ends: set[int] = set()

    def slow_read(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        if fd in read_ends and data:
            time.sleep(0.3)  # stands in for the reader losing its core right after the read
        return data

    monkeypatch.setattr(errpump.os, "read", slow_read)
    pipe_r, pipe_w = os.pipe()
    out_r, out_w = os.pipe()
    read_ends.add(pipe_r)
    pump = errpump.StderrPump(pipe_r, out_w)
    try:
        os.write(pipe_w, b"toolwire serve: the only line before the exit\n")
        # Let the reader take the bytes from the pipe (the pipe empties) before flushing.
        deadline = time.monotonic() + 10
        while pump._pending_in_pipe() and time.monotonic() < deadline:
            time.sleep(0.001)
        assert pump.flush(5.0)
        os.set_blocking(out_r, False)
        got: Any = b""
        try:
            got = real_read(out_r, 1 << 16)
        except BlockingIOError:
            got = b""
        assert got == b"toolwire serve: the only line before the exit\n"
    finally:
        os.close(pipe_w)
        os.close(out_r)

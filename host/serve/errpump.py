"""The host's stderr, written by a thread of its own so nothing else ever waits on it
(standard library only: the host's entry point starts it before any heavy import).

A client that starts the host and never reads its stderr (many do: they open a pipe
and forget it) lets that pipe fill: 64 KiB on Linux. Every write after that blocks the
writer: a log record, a tool printing in-process (its ``print`` goes to stderr), the
copy of a worker's stderr, and with them the call or the event loop. So the host's
file descriptors 1 and 2 are moved onto a pipe of its own, drained at once by a reader
thread into a bounded buffer (:data:`STDERR_BUFFER` bytes); a writer thread copies the
buffer to the real stderr and is the only one that may block. What does not fit the
buffer while the real stderr is not read is dropped and counted; the count is written
in its place (``[toolwire: N bytes of stderr dropped ...]``) once stderr moves again.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import termios
import threading
import time
from collections import deque

__all__ = ["STDERR_BUFFER", "StderrPump", "buffer_stderr", "flush_stderr"]

STDERR_BUFFER = 1 << 20
"""Most bytes of stderr held while the real stderr is not being read (1 MiB)."""

_READ = 1 << 16


class StderrPump:
    """Reads ``read_fd`` (the pipe fds 1 and 2 now write to) into a bounded buffer and
    writes the buffer to ``out_fd`` (the real stderr) from another thread.

    Args:
        read_fd: read end of the pipe; owned.
        out_fd: where the bytes go; owned.
        limit: most bytes buffered; more is dropped and counted.
    """

    def __init__(self, read_fd: int, out_fd: int, limit: int = STDERR_BUFFER) -> None:
        self._read_fd = read_fd
        self._out_fd = out_fd
        self.limit = limit
        self._cond = threading.Condition()
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self.dropped = 0
        """Bytes dropped so far (all told)."""
        self._unsaid = 0  # dropped bytes the stream has not been told about yet
        self._writing = False
        self._writes = 0  # writes to the real stderr completed
        self._eof = False
        self._last_newline = True
        threading.Thread(target=self._read_loop, name="stderr-reader", daemon=True).start()
        threading.Thread(target=self._write_loop, name="stderr-writer", daemon=True).start()

    def _read_loop(self) -> None:
        # Bytes are taken from the pipe only while the lock is held (the fd is made
        # non-blocking; poll waits outside the lock), so no byte is ever "read but not yet
        # buffered" where :meth:`flush` could miss it: a flush that finds the pipe and the
        # buffer empty under the lock has really seen everything written before it.
        os.set_blocking(self._read_fd, False)
        poller = select.poll()
        poller.register(self._read_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        while True:
            try:
                poller.poll()
            except InterruptedError:
                continue
            with self._cond:
                try:
                    data = os.read(self._read_fd, _READ)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:
                    self._eof = True
                elif self._size + len(data) > self.limit:
                    self.dropped += len(data)
                    self._unsaid += len(data)
                else:
                    self._chunks.append(data)
                    self._size += len(data)
                self._cond.notify_all()
            if not data:
                return

    def _write_loop(self) -> None:
        while True:
            with self._cond:
                while not self._chunks and not self._unsaid and not self._eof:
                    self._cond.wait()
                if not self._chunks and not self._unsaid:
                    return
                data = b"".join(self._chunks)
                self._chunks.clear()
                self._size = 0
                unsaid, self._unsaid = self._unsaid, 0
                self._writing = True
            if unsaid:
                if data:
                    self._last_newline = data.endswith(b"\n")
                lead = b"" if self._last_newline else b"\n"
                data += (
                    lead
                    + (
                        f"[toolwire: {unsaid} bytes of stderr dropped: the host's stderr was "
                        "not read while they were written]\n"
                    ).encode()
                )
            try:
                view = memoryview(data)
                while view:
                    n = os.write(self._out_fd, view)
                    view = view[n:]
                if data:
                    self._last_newline = data.endswith(b"\n")
            except OSError:
                pass  # stderr is gone: what is written there is lost, nothing waits
            with self._cond:
                self._writing = False
                self._writes += 1
                self._cond.notify_all()

    def _pending_in_pipe(self) -> int:
        try:
            buf = fcntl.ioctl(self._read_fd, termios.FIONREAD, b"\0\0\0\0")
        except OSError:
            return 0
        return int.from_bytes(buf, "little")

    def flush(self, timeout: float, stalled: float = 0.5) -> bool:
        """Wait up to ``timeout`` seconds until everything written so far reached the
        real stderr (the process is about to exit); False when it did not, or as soon
        as one write to the real stderr has waited ``stalled`` seconds (nobody reads
        it: the exit is not delayed for a reader that is not there)."""
        start = time.monotonic()
        deadline = start + timeout
        writes, since = self._writes, start
        while True:
            with self._cond:
                idle = not self._chunks and not self._unsaid and not self._writing
                if idle and self._pending_in_pipe() == 0:
                    return True
                now = time.monotonic()
                if self._writes != writes or not self._writing:
                    writes, since = self._writes, now
                if now >= deadline or now - since >= stalled:
                    return False
                self._cond.wait(min(deadline - now, 0.02))


_pump: StderrPump | None = None


def buffer_stderr() -> StderrPump:
    """Put fds 1 and 2 on a pipe drained by a :class:`StderrPump` into the real stderr
    (call after :func:`~toolwire.host.workers.stdio.take_over_stdio`, which points fd 1 at
    stderr); ``sys.stderr`` keeps writing to fd 2. Processes the host starts inherit
    the pipe only where they inherit fd 2. Idempotent: returns the running pump."""
    global _pump
    if _pump is not None:
        return _pump
    out_fd = os.dup(2)
    read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
    os.dup2(write_fd, 2)
    os.dup2(write_fd, 1)
    os.close(write_fd)
    _pump = StderrPump(read_fd, out_fd)
    return _pump


def flush_stderr(timeout: float = 2.0) -> None:
    """Before the process exits: let the pump write out what it holds, for at most
    ``timeout`` seconds (a parent that never reads stderr delays the exit by at most
    :meth:`StderrPump.flush`'s ``stalled``, 0.5 s; the margins are wide because on a
    loaded machine the pump's threads may wait that long for a core, and the last
    lines before an exit are the ones that say why)."""
    if _pump is not None:
        with contextlib.suppress(Exception):
            _pump.flush(timeout)

"""anyio byte streams over raw file descriptors (the host's private stdin/stdout).

Reading and writing happen on the event loop, never in a worker thread: pipes and
sockets are switched to non-blocking mode and waited on with
:func:`anyio.wait_readable` / :func:`anyio.wait_writable`. Regular files and
character devices other than terminals (a request file redirected to stdin,
``/dev/null``, a log file as stdout) never block and are used directly.
Terminals are waited on but left in blocking mode, because a terminal's open file
description is usually shared with stderr and the parent shell.

On anyio's asyncio backend a pipe or socket can also be read by a callback of the event
loop (:meth:`FdReceiveStream.receive_each`): the descriptor stays registered with the
selector while the stream is read, and each chunk is handed over in the same turn of the
loop that saw it readable, with no task switch and no register/unregister per chunk.
"""

from __future__ import annotations

import asyncio
import errno
import math
import os
import stat
from collections.abc import Callable

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ["FdReceiveStream", "FdSendStream", "MemoryReceiveStream"]

READ_CHUNK = 64 * 1024
"""Bytes asked for per read (64 KiB): what a Linux pipe holds by default (pipe(7)), so a
read of a pipe rarely finds more, and below glibc's default ``M_MMAP_THRESHOLD`` (128 KiB,
mallopt(3)): ``os.read`` allocates its buffer at the size asked for before it shrinks it
to what was read, and a 256 KiB buffer was an ``mmap``, ``mremap`` and ``munmap`` of its
own at every read (three system calls a message on a worker's request pipe)."""


def _kind(fd: int) -> str:
    """ "pipe" (FIFO, socket), "tty" (a terminal) or "file" (anything that never blocks).

    Character devices other than terminals (``/dev/null``, ``/dev/zero``) count as
    files: epoll refuses them, and reading or writing them never blocks.
    """
    mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return "pipe"
    if stat.S_ISCHR(mode) and os.isatty(fd):
        return "tty"
    return "file"


def _asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop when anyio runs on asyncio (None on another backend)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _FdStream:
    """Owns a descriptor: pipes and sockets are switched to non-blocking mode (and
    switched back on close); terminals and files are left as they are."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._kind = _kind(fd)
        self._closed = False
        self._reading: tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | None = None
        self._restore_blocking = False
        if self._kind == "pipe" and os.get_blocking(fd):
            os.set_blocking(fd, False)
            self._restore_blocking = True

    async def aclose(self) -> None:
        """Close the descriptor (restoring blocking mode first when we changed it)."""
        if self._closed:
            return
        self._closed = True
        if self._reading is not None:
            # Unregister before the descriptor is closed (its number may be reused).
            loop, done = self._reading
            self._reading = None
            loop.remove_reader(self._fd)
            if not done.done():
                done.set_exception(anyio.ClosedResourceError())
        try:
            if self._restore_blocking:
                os.set_blocking(self._fd, True)
            os.close(self._fd)
        except OSError:
            pass


class FdReceiveStream(_FdStream, ByteReceiveStream):
    """Receive bytes from a file descriptor without a thread hop.

    Args:
        fd: an open, readable descriptor; the stream owns it and closes it in
            :meth:`aclose`.

    Raises (from :meth:`receive`):
        anyio.EndOfStream: the writer closed its end.
        anyio.ClosedResourceError: this stream was closed.
    """

    async def receive(self, max_bytes: int = READ_CHUNK) -> bytes:
        """Return the next available bytes (at most ``max_bytes``)."""
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            if self._kind == "tty":
                await anyio.wait_readable(self._fd)
            try:
                data = os.read(self._fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)
                continue
            except OSError as exc:
                if exc.errno == errno.EBADF and self._closed:
                    raise anyio.ClosedResourceError from None
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def receive_each(self, on_data: Callable[[bytes], None]) -> None:
        """Read until end of stream, calling ``on_data(chunk)`` with each chunk read (at
        most :data:`READ_CHUNK` bytes), in order.

        On the asyncio backend, for a pipe or socket, ``on_data`` runs in a callback of
        the event loop, not in the awaiting task: it must not await or expect a current
        task; elsewhere it runs in the awaiting task between reads of :meth:`receive`.
        Returns at end of stream.

        Raises:
            anyio.ClosedResourceError: this stream was closed.
            anyio.BrokenResourceError: reading failed.
            Exception: whatever ``on_data`` raised (reading stops there).
        """
        loop = _asyncio_loop() if self._kind == "pipe" else None
        if loop is None or self._reading is not None:
            while True:
                try:
                    data = await self.receive()
                except anyio.EndOfStream:
                    return
                on_data(data)
        if self._closed:
            raise anyio.ClosedResourceError
        fd = self._fd
        done: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if done.done():
                return
            try:
                data = os.read(fd, READ_CHUNK)
            except BlockingIOError:
                return
            except OSError as exc:
                failure = anyio.BrokenResourceError()
                failure.__cause__ = exc
                done.set_exception(failure)
                return
            if not data:
                done.set_result(None)
                return
            try:
                on_data(data)
            except Exception as exc:
                if not done.done():
                    done.set_exception(exc)

        # Level-triggered: fires at once when data is already waiting.
        loop.add_reader(fd, readable)
        self._reading = (loop, done)
        try:
            await done
        finally:
            if self._reading is not None and self._reading[1] is done:
                self._reading = None
                loop.remove_reader(fd)


class FdSendStream(_FdStream, ByteSendStream):
    """Send bytes to a file descriptor without a thread hop.

    Args:
        fd: an open, writable descriptor; the stream owns it and closes it in
            :meth:`aclose`.

    Raises (from :meth:`send`):
        anyio.BrokenResourceError: the reader went away (EPIPE) or another I/O error.
        anyio.ClosedResourceError: this stream was closed.
    """

    def try_send(self, item: bytes) -> int:
        """Write what fits without waiting; returns the number of bytes written (0 when
        the pipe is full, or when this descriptor is not a non-blocking pipe or socket,
        where :meth:`send` must be used). Never raises: a failure is left for
        :meth:`send` to report."""
        if self._closed or self._kind != "pipe":
            return 0
        try:
            return os.write(self._fd, item)
        except OSError:
            return 0

    async def send(self, item: bytes) -> None:
        """Write all of ``item``, waiting for the reader when the pipe is full."""
        view = memoryview(item)
        while view:
            if self._closed:
                raise anyio.ClosedResourceError
            try:
                n = os.write(self._fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            view = view[n:]


class MemoryReceiveStream(ByteReceiveStream):
    """A byte stream fed by its owner: each :meth:`put` is one chunk a reader gets whole
    (e.g. one ndjson frame), :meth:`end` is end-of-file. Unbounded; the owner bounds what
    it puts (the HTTP transports put whole, size-checked messages).

    Used where a :class:`~toolwire.session.Session` speaks over something that is not a
    file descriptor: an HTTP request's body and answers, on the host and client side.
    """

    def __init__(self) -> None:
        self._tx, self._rx = anyio.create_memory_object_stream[bytes](math.inf)

    def put(self, data: bytes) -> bool:
        """Queue ``data`` for the reader; False when the reader has closed the stream."""
        try:
            self._tx.send_nowait(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    def end(self) -> None:
        """End of file: the reader gets what was put, then ``anyio.EndOfStream``."""
        self._tx.close()

    async def receive(self, max_bytes: int = 65536) -> bytes:
        """The next chunk put, whole (``max_bytes`` is not applied: chunks are frames)."""
        return await self._rx.receive()

    async def aclose(self) -> None:
        self._rx.close()

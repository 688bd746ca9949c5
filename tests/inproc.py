"""The real host in the test's own process, spoken to over memory streams.

:class:`InProcHost` has the interface of :class:`tests.hostproc.HostProcess` (``request``,
``call``, ``send_raw``, ``recv``, ``drain``, ``close_stdin``, ``wait``, ``stderr``...), so a
protocol-rule test moves from a spawned ``toolwire serve`` to this harness by changing
which class (or which ``wire_host``) it uses, and nothing else. What runs is what
``toolwire serve`` runs for the connection: the same option parsing
(:func:`toolwire.host.serve.options.build_parser`, :func:`~toolwire.host.serve.options.config_from_args`),
the same registry, built-ins, worker processes (on unless the arguments say
``--isolation none``), sandbox and server, served by the host's public
:func:`toolwire.host.serve.connection.serve_connection` on anyio byte streams backed by memory object
streams, in an event loop of its own (a blocking portal's thread). The client side is
still an independent peer: it frames and parses bytes itself (``ndjson`` or ``lsp``),
sharing nothing with toolwire's framing or session code.

What stays with the process (and so with :class:`~tests.hostproc.HostProcess`): the
start-up of ``toolwire serve`` (taking over stdin/stdout, banners, exit code 2), signals,
the watchdog that ends a host whose tool will not stop, framing on real pipes, memory
and process figures (``/proc/<pid>``), environment variables and the working directory.
A test of those keeps spawning the host. ``stderr`` here holds what the host logs
(the ``toolwire`` loggers, formatted as the process formats them), not what tool code
prints.
"""

from __future__ import annotations

import json
import logging
import math
import queue
import subprocess
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures import Future
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from tests.hostproc import RECV_TIMEOUT

if TYPE_CHECKING:
    from toolwire.client import Client

__all__ = ["InProcHost", "connected_client", "in_host", "wire_host"]


class _MemoryByteReceive(ByteReceiveStream):
    """The host's input: chunks the test wrote, in order; end-of-stream once the test
    closed its side (the client's EOF)."""

    def __init__(self, chunks: MemoryObjectReceiveStream[bytes]) -> None:
        self._chunks = chunks
        self._rest = b""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._rest:
            try:
                self._rest = await self._chunks.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                raise anyio.EndOfStream from None
        data, self._rest = self._rest[:max_bytes], self._rest[max_bytes:]
        return data

    async def aclose(self) -> None:
        self._chunks.close()


class _MemoryByteSend(ByteSendStream):
    """The host's output: every chunk it writes goes to the test's reader."""

    def __init__(self, chunks: MemoryObjectSendStream[bytes]) -> None:
        self._chunks = chunks

    async def send(self, item: bytes) -> None:
        try:
            await self._chunks.send(bytes(item))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            raise anyio.BrokenResourceError from None

    async def aclose(self) -> None:
        self._chunks.close()


class _Parser:
    """Splits the host's output into messages: one JSON value per line (``ndjson``) or
    ``Content-Length`` frames (``lsp``); what does not parse is kept as
    ``("<unparsable>", bytes)``, as :class:`~tests.hostproc.HostProcess` does."""

    def __init__(self, framing: str) -> None:
        self.framing = framing
        self.buf = bytearray()

    def feed(self, data: bytes) -> list[Any]:
        self.buf += data
        out: list[Any] = []
        while True:
            if self.framing == "ndjson":
                end = self.buf.find(b"\n")
                if end < 0:
                    return out
                line = bytes(self.buf[: end + 1])
                del self.buf[: end + 1]
                try:
                    out.append(json.loads(line))
                except ValueError:
                    out.append(("<unparsable>", line))
            else:
                head_end = self.buf.find(b"\r\n\r\n")
                if head_end < 0:
                    return out
                headers: dict[str, str] = {}
                for line in bytes(self.buf[:head_end]).decode("ascii").split("\r\n"):
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                n = int(headers["content-length"])
                start = head_end + 4
                if len(self.buf) < start + n:
                    return out
                body = bytes(self.buf[start : start + n])
                del self.buf[: start + n]
                out.append(json.loads(body))


class _LogCapture(logging.Handler):
    """Collects what the host logs while it serves, formatted as ``toolwire serve``
    formats its stderr."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.setFormatter(
            logging.Formatter("toolwire[%(process)d] %(levelname)s %(name)s: %(message)s")
        )
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record) + "\n")


class _Exited:
    """The ``proc`` face of :class:`InProcHost` (``poll``, ``wait``, ``returncode``),
    for tests that look at the host's exit the way they look at a process's."""

    def __init__(self, done: Future[int]) -> None:
        self._done = done

    @property
    def returncode(self) -> int | None:
        return self.poll()

    def poll(self) -> int | None:
        return self._done.result() if self._done.done() else None

    def wait(self, timeout: float | None = None) -> int:
        try:
            return self._done.result(timeout)
        except TimeoutError:
            raise subprocess.TimeoutExpired("in-process host", timeout or 0.0) from None


class InProcHost:
    """The real host serving one connection in this process (see the module docstring).

    Args:
        args: ``toolwire serve`` arguments (``--root`` is needed, as always).
        framing: "ndjson" or "lsp": how :meth:`send` frames and how replies are parsed.

    Raises:
        SystemExit: the arguments do not parse (as ``toolwire serve`` exits 2).
        ValueError, TypeError: the options are inconsistent (``toolwire serve`` exits 2).
    """

    def __init__(self, args: Sequence[str] = (), *, framing: str = "ndjson") -> None:
        from toolwire.host.serve.options import build_parser, config_from_args

        self.framing = framing
        self.config = config_from_args(build_parser().parse_args(list(args)))
        self.messages: queue.Queue[Any] = queue.Queue()
        self.raw_stdout = bytearray()
        self._stash: list[Any] = []
        self._next_id = 1000
        self._parser = _Parser(framing)
        self._log = _LogCapture(getattr(logging, self.config.log_level.upper()))
        self._logger = logging.getLogger("toolwire")
        self._old_level = self._logger.level
        self._logger.addHandler(self._log)
        self._logger.setLevel(min(self._log.level, self._old_level or logging.WARNING))
        self._stack = ExitStack()
        self.portal = self._stack.enter_context(
            anyio.from_thread.start_blocking_portal(backend="asyncio")
        )
        to_host, host_in = anyio.create_memory_object_stream[bytes](math.inf)
        host_out, from_host = anyio.create_memory_object_stream[bytes](64)
        self._to_host = to_host
        self._done: Future[int] = self.portal.start_task_soon(
            self._serve, _MemoryByteReceive(host_in), _MemoryByteSend(host_out)
        )
        self._reader = self.portal.start_task_soon(self._read, from_host)
        self.proc = _Exited(self._done)
        self._closed = False

    async def _serve(self, receive: ByteReceiveStream, send: ByteSendStream) -> int:
        from toolwire.host.serve.connection import serve_connection
        from toolwire.host.serve.options import StartupError

        try:
            return await serve_connection(self.config, receive, send, guard=_NoGuard())
        except StartupError as exc:
            self._log.lines.append(f"{exc}\n")
            return 2
        finally:
            await send.aclose()  # as the process's stdout closes when it exits

    async def _read(self, chunks: MemoryObjectReceiveStream[bytes]) -> None:
        async for data in chunks:
            self.raw_stdout += data
            for m in self._parser.feed(data):
                self.messages.put(m)
        self.messages.put(None)

    # ------------------------------------------------------------------ reading

    @property
    def stderr(self) -> str:
        """What the host logged so far (its ``toolwire`` loggers)."""
        return "".join(self._log.lines)

    def recv(self, timeout: float = RECV_TIMEOUT) -> Any:
        """The next message (None at EOF). Raises queue.Empty on timeout."""
        if self._stash:
            return self._stash.pop(0)
        return self.messages.get(timeout=timeout)

    def recv_response(self, id: Any, timeout: float = RECV_TIMEOUT) -> dict[str, Any]:
        """Wait for the response to ``id``; other messages are kept for later recv()."""
        for i, m in enumerate(self._stash):
            if isinstance(m, dict) and m.get("id") == id and "method" not in m:
                return self._stash.pop(i)  # type: ignore[no-any-return]
        while True:
            m = self.messages.get(timeout=timeout)
            if m is None:
                self.messages.put(None)
                raise EOFError(f"host closed its output before answering {id!r}:\n{self.stderr}")
            if isinstance(m, dict) and m.get("id") == id and "method" not in m:
                return m  # type: ignore[no-any-return]
            self._stash.append(m)

    def drain(self) -> list[Any]:
        """Messages already received and not yet consumed."""
        out, self._stash = self._stash, []
        while True:
            try:
                m = self.messages.get_nowait()
            except queue.Empty:
                return out
            out.append(m)

    # ------------------------------------------------------------------ writing

    def send_raw(self, data: bytes) -> None:
        """Hand ``data`` to the host as it would arrive on its stdin (raises
        BrokenPipeError once the input was closed, as a pipe would)."""
        try:
            self.portal.call(self._to_host.send_nowait, bytes(data))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise BrokenPipeError("the host's input is closed") from None

    def send(self, msg: Any) -> None:
        body = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode()
        if self.framing == "ndjson":
            self.send_raw(body + b"\n")
        else:
            self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(
        self, method: str, params: Any = None, *, id: Any = None, timeout: float = RECV_TIMEOUT
    ) -> dict[str, Any]:
        """Send a request and wait for its response (the whole response object)."""
        if id is None:
            self._next_id += 1
            id = self._next_id
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.recv_response(id, timeout)

    def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        resp = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        )
        self.notify("notifications/initialized")
        return resp

    def call(self, name: str, arguments: Any = None, **kw: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return self.request("tools/call", params, **kw)

    # ------------------------------------------------------------------ ending

    def close_stdin(self) -> None:
        """The client's end-of-file."""
        if not self._closed:
            self._closed = True
            self.portal.call(self._to_host.close)

    def wait(self, timeout: float = 5.0) -> int:
        """The exit code :func:`serve_connection` returned (raises
        subprocess.TimeoutExpired after ``timeout`` seconds); then the reader has
        collected the rest of the host's output."""
        code = self.proc.wait(timeout)
        self._reader.result(timeout)
        return code

    def close(self) -> None:
        """EOF, then wait for the host to stop serving (an error after 30 s: unlike a
        process, an in-process host cannot be killed), then stop its event loop."""
        try:
            self.close_stdin()
            try:
                self.wait(30.0)
            except subprocess.TimeoutExpired:
                self.portal.call(_cancel_all)
                raise AssertionError(
                    f"the in-process host did not stop within 30 s of EOF:\n{self.stderr}"
                ) from None
        finally:
            self._stack.close()
            self._logger.removeHandler(self._log)
            self._logger.setLevel(self._old_level)
            from toolwire.host.sandbox import outputs

            outputs.remove_directory()  # as the process does at exit

    def __enter__(self) -> InProcHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


async def _cancel_all() -> None:
    """Cancel every task of the portal's loop but the caller (a host that hangs)."""
    import asyncio

    me = asyncio.current_task()
    for task in asyncio.all_tasks():
        if task is not me:
            task.cancel()


class _NoGuard:
    """The :class:`toolwire.host.serve.connection.ProcessGuard` of an in-process host: the
    test owns the process, so no signal is taken over and nothing ends the process."""

    def watch(self, close: Any, seconds_to_exit: Any, exit_code: Any) -> None:
        pass

    def closing(self) -> None:
        pass


def in_host(args: Sequence[str]) -> list[str]:
    """``args`` with ``--isolation none`` added unless they choose an isolation: a
    protocol-rule test runs its tools in the host (worker processes are a process
    concern, tested with spawned hosts in tests/test_workers*.py)."""
    has = any(a == "--isolation" or a.startswith("--isolation=") for a in args)
    return [*args] if has else [*args, "--isolation", "none"]


@contextmanager
def wire_host(
    tmp_path: Path, framing: str = "ndjson", args: Sequence[str] = (), initialize: bool = True
) -> Iterator[InProcHost]:
    """In process, what :func:`tests.e2e_helpers.wire_host` spawns: a host serving
    tests/fixtures/wire_tools.py only, rooted in ``tmp_path``; the tools run in the host
    (:func:`in_host`) unless ``args`` choose ``--isolation process``."""
    from tests.e2e_helpers import WIRE_TOOLS

    with InProcHost(
        in_host(
            [
                "--root",
                str(tmp_path),
                "--no-builtins",
                "--no-entry-points",
                "--tools",
                WIRE_TOOLS,
                *args,
            ]
        ),
        framing=framing,
    ) as h:
        if initialize:
            assert "result" in h.initialize()
        yield h


@asynccontextmanager
async def connected_client(args: Sequence[str], **options: Any) -> AsyncIterator[Client]:
    """toolwire's :class:`~toolwire.client.Client` connected to the real host served in
    this event loop (:func:`toolwire.host.serve.connection.serve_connection` on memory byte streams), as
    ``Client.spawn`` of ``toolwire serve ARGS`` would be; ``options`` go to
    ``Client.connect``. For tests of the client (and the agent) whose subject is not the
    process: those of spawning, stderr and ending a host keep ``Client.spawn``.

    Raises:
        SystemExit, ValueError, TypeError: ``args`` are not valid ``toolwire serve``
            arguments.
    """
    from toolwire.client import Client
    from toolwire.host.serve.connection import serve_connection
    from toolwire.host.serve.options import build_parser, config_from_args

    config = config_from_args(build_parser().parse_args(list(args)))
    to_host, host_in = anyio.create_memory_object_stream[bytes](math.inf)
    host_out, from_host = anyio.create_memory_object_stream[bytes](math.inf)
    host_send = _MemoryByteSend(host_out)

    served = anyio.Event()

    async def serve() -> None:
        try:
            await serve_connection(config, _MemoryByteReceive(host_in), host_send, guard=_NoGuard())
        finally:
            await host_send.aclose()
            served.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        try:
            async with Client.connect(
                _MemoryByteReceive(from_host), _MemoryByteSend(to_host), **options
            ) as client:
                yield client
        finally:
            to_host.close()  # the host's EOF, also when the client was never entered
            with anyio.move_on_after(30):
                await served.wait()
            if not served.is_set():  # an in-process host cannot be killed: fail instead
                tg.cancel_scope.cancel()
                raise AssertionError("the in-process host did not stop within 30 s of EOF")
    from toolwire.host.sandbox import outputs

    outputs.remove_directory()

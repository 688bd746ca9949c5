"""Descriptor streams read by an event-loop callback (FdReceiveStream.receive_each), and the
session's outbound deadlines: real pipes and sockets, real sessions, no mocks."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolwire import JsonRpcError, RequestContext, Session
from toolwire.errors import REQUEST_TIMEOUT, RequestTimeout
from toolwire.streams import READ_CHUNK, FdReceiveStream, FdSendStream

from .test_session import pair


def _feed(fd: int, chunks: list[bytes], close: bool = True) -> threading.Thread:
    """Write the chunks to ``fd`` from a thread (one write each), then close it."""

    def run() -> None:
        for c in chunks:
            os.write(fd, c)
        if close:
            os.close(fd)

    t = threading.Thread(target=run)
    t.start()
    return t


@pytest.mark.parametrize("kind", ["pipe", "socket"])
def test_receive_each_hands_over_every_byte_in_order_then_returns_at_eof(kind: str) -> None:
    if kind == "pipe":
        r, w = os.pipe()
    else:
        a, b = socket.socketpair()
        r, w = a.detach(), b.detach()
    chunks = [bytes([i % 251]) * (1 + (i * 7919) % 70000) for i in range(60)]

    async def main() -> bytes:
        stream = FdReceiveStream(r)
        got: list[bytes] = []
        writer = _feed(w, chunks)
        with anyio.fail_after(20):
            await stream.receive_each(got.append)
        writer.join()
        await stream.aclose()
        assert all(0 < len(c) <= READ_CHUNK for c in got)
        return b"".join(got)

    assert anyio.run(main) == b"".join(chunks)


def test_receive_each_reads_a_regular_file_too(tmp_path: Path) -> None:
    path = tmp_path / "input"
    path.write_bytes(b"x" * 600_000)

    async def main() -> int:
        fd = os.open(path, os.O_RDONLY)
        stream = FdReceiveStream(fd)
        got: list[bytes] = []
        await stream.receive_each(got.append)
        await stream.aclose()
        return sum(len(c) for c in got)

    assert anyio.run(main) == 600_000


def test_an_exception_raised_by_on_data_stops_reading_and_reaches_the_reader() -> None:
    r, w = os.pipe()

    async def main() -> list[bytes]:
        stream = FdReceiveStream(r)
        got: list[bytes] = []

        def on_data(data: bytes) -> None:
            got.append(data)
            raise ValueError("bad input")

        os.write(w, b"first")
        with pytest.raises(ValueError, match="bad input"), anyio.fail_after(5):
            await stream.receive_each(on_data)
        # Reading stopped there: what comes next is left for the next reader.
        os.write(w, b"second")
        with anyio.fail_after(5):
            after = await stream.receive()
        os.close(w)
        await stream.aclose()
        return [*got, after]

    assert anyio.run(main) == [b"first", b"second"]


def test_closing_the_stream_ends_a_waiting_receive_each() -> None:
    r, w = os.pipe()

    async def main() -> None:
        stream = FdReceiveStream(r)
        failure: list[BaseException] = []

        async def reader() -> None:
            try:
                await stream.receive_each(lambda data: None)
            except anyio.ClosedResourceError as exc:
                failure.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await anyio.wait_all_tasks_blocked()
            await stream.aclose()
        assert len(failure) == 1
        os.close(w)

    anyio.run(main)


def test_a_cancelled_receive_each_leaves_the_descriptor_to_the_next_reader() -> None:
    r, w = os.pipe()

    async def main() -> bytes:
        stream = FdReceiveStream(r)
        with anyio.move_on_after(0.05):
            await stream.receive_each(lambda data: pytest.fail("no data was written yet"))
        os.write(w, b"later")
        with anyio.fail_after(5):
            data = await stream.receive()
        os.close(w)
        await stream.aclose()
        return data

    assert anyio.run(main) == b"later"


# ------------------------------------------------------------------ outbound deadlines


def test_a_short_timeout_fires_on_time_behind_many_long_ones() -> None:
    """The session's one deadline watcher must wake for a deadline earlier than those it
    sleeps for, and stale deadlines of answered or abandoned requests must not pile up."""

    async def main() -> None:
        async with pair() as (a, b):
            hold = anyio.Event()

            async def echo(params: Any, ctx: RequestContext) -> Any:
                return params

            async def slow(params: Any, ctx: RequestContext) -> Any:
                await hold.wait()
                return "late"

            b.router.on_request("echo", echo)
            b.router.on_request("slow", slow)
            for i in range(3000):
                assert await a.request("echo", {"i": i}, timeout=600) == {"i": i}
            for _ in range(300):  # given up by their callers
                with anyio.move_on_after(0):
                    await a.request("slow", timeout=600)
            assert len(a._deadlines) <= 64 + 4 * a._deadlines.timed
            started = time.monotonic()
            with pytest.raises(RequestTimeout) as e, anyio.fail_after(60):
                await a.request("slow", timeout=0.2)
            took = time.monotonic() - started
            assert e.value.code == REQUEST_TIMEOUT
            # not early, and not held behind the abandoned requests' 600 s deadlines (the
            # upper bound is wide: a loaded machine may be slow to wake the loop)
            assert 0.19 <= took < 30, took
            hold.set()

    anyio.run(main)


def test_an_earlier_deadline_fires_on_time_after_a_later_one_sent_first() -> None:
    async def main() -> dict[str, float]:
        fired: dict[str, float] = {}
        async with pair() as (a, b):

            async def never(params: Any, ctx: RequestContext) -> Any:
                await anyio.sleep_forever()

            b.router.on_request("never", never)
            started = time.monotonic()

            async def ask(name: str, timeout: float) -> None:
                with pytest.raises(RequestTimeout):
                    await a.request("never", timeout=timeout)
                fired[name] = time.monotonic() - started

            # The later deadline is far (60 s): the earlier one must fire while the later
            # is still pending, however loaded the machine; then the later is given up.
            with anyio.fail_after(120):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(ask, "long", 60)
                    await anyio.wait_all_tasks_blocked()
                    await ask("short", 0.1)
                    tg.cancel_scope.cancel()
        return fired

    fired = anyio.run(main)
    assert list(fired) == ["short"], fired
    assert 0.1 <= fired["short"] < 60, fired


def test_a_timed_out_request_is_abandoned_until_the_peer_answers() -> None:
    """``on_abandon`` on a timeout: the event is set once the peer's late answer (here the
    LSP dialect's -32800 after the handler stopped) has arrived."""

    async def main() -> None:
        async with pair(dialect="lsp") as (a, b):
            stopped = anyio.Event()

            async def stubborn(params: Any, ctx: RequestContext) -> Any:
                try:
                    await anyio.sleep_forever()
                finally:
                    with anyio.CancelScope(shield=True):
                        await anyio.sleep(0.2)  # takes its time to stop
                    stopped.set()

            b.router.on_request("stubborn", stubborn)
            abandoned: list[anyio.Event] = []
            with pytest.raises(RequestTimeout), anyio.fail_after(5):
                await a.request("stubborn", timeout=0.1, on_abandon=abandoned.append)
            assert len(abandoned) == 1
            assert not abandoned[0].is_set()
            with anyio.fail_after(5):
                await abandoned[0].wait()
            assert stopped.is_set()

    anyio.run(main)


def test_a_peer_error_carrying_the_timeout_code_is_not_a_local_timeout() -> None:
    async def main() -> None:
        async with pair() as (a, b):

            async def refuse(params: Any, ctx: RequestContext) -> Any:
                raise JsonRpcError(REQUEST_TIMEOUT, "the peer's own timeout")

            b.router.on_request("refuse", refuse)
            with pytest.raises(JsonRpcError) as e:
                await a.request("refuse", timeout=5)
            assert e.value.code == REQUEST_TIMEOUT
            assert not isinstance(e.value, RequestTimeout)

    anyio.run(main)


def test_sessions_over_descriptor_streams_answer_a_burst_in_order() -> None:
    """Many requests in one write, read by the loop's callback and answered."""
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()

    async def main() -> list[Any]:
        server = Session(FdReceiveStream(r1), FdSendStream(w2), framing="ndjson")  # type: ignore[arg-type]

        async def echo(params: Any, ctx: RequestContext) -> Any:
            return params["i"]

        server.router.on_request("echo", echo)
        burst = b"".join(
            b'{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"i":%d}}\n' % (i, i)
            for i in range(5000)
        )
        answers: list[bytes] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve)
            # (The input stays open until every answer is in: at end of input the
            # session cancels what it has not answered yet.)
            writer = _feed(
                w1, [burst[i : i + 65536] for i in range(0, len(burst), 65536)], close=False
            )
            reader = FdReceiveStream(r2)
            buf = b""
            with anyio.fail_after(30):
                while buf.count(b"\n") < 5000:
                    buf += await reader.receive()
            writer.join()
            answers = buf.splitlines()
            os.close(w1)
            await reader.aclose()

        return sorted(json.loads(x)["result"] for x in answers)

    assert anyio.run(main) == list(range(5000))

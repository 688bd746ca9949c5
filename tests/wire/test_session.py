"""The session layer in-process: two real Sessions over OS pipes (no mocks), and fd streams."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e_helpers import WIRE_TOOLS
from tests.hostproc import REPO
from toolwire import JsonRpcError, RequestContext, Session
from toolwire.router import Deferred, method_not_found
from toolwire.session import PARAMS_NOT_AN_OBJECT
from toolwire.streams import FdReceiveStream, FdSendStream


@asynccontextmanager
async def pair(
    framing: str = "ndjson", dialect: str = "mcp"
) -> AsyncIterator[tuple[Session, Session]]:
    """Two sessions wired back to back through two pipes."""
    a_r, b_w = os.pipe()
    b_r, a_w = os.pipe()
    a = Session(
        FdReceiveStream(a_r), FdSendStream(a_w), framing=framing, cancel_dialect=dialect, name="a"
    )  # type: ignore[arg-type]
    b = Session(FdReceiveStream(b_r), FdSendStream(b_w), framing=framing, name="b")  # type: ignore[arg-type]
    async with a.running(), b.running():
        yield a, b


@pytest.mark.parametrize("framing", ["ndjson", "lsp"])
def test_requests_both_ways_with_results_and_errors(framing: str) -> None:
    async def main() -> None:
        async with pair(framing) as (a, b):

            async def add(params: Any, ctx: RequestContext) -> Any:
                return params["x"] + params["y"]

            async def refuse(params: Any, ctx: RequestContext) -> Any:
                raise JsonRpcError(-32001, "no", {"why": "because"})

            b.router.on_request("add", add)
            b.router.on_request("refuse", refuse)
            a.router.on_request("add", add)
            assert await a.request("add", {"x": 2, "y": 3}, timeout=5) == 5
            assert await b.request("add", {"x": "a", "y": "b"}, timeout=5) == "ab"
            with pytest.raises(JsonRpcError) as e:
                await a.request("refuse", {}, timeout=5)
            assert (e.value.code, e.value.data) == (-32001, {"why": "because"})
            with pytest.raises(JsonRpcError) as e:
                await a.request("missing", timeout=5)
            assert e.value.code == -32601

    anyio.run(main)


def test_a_handler_raising_a_stray_cancellation_gets_32603() -> None:
    async def main() -> None:
        async with pair() as (a, b):

            async def stray(params: Any, ctx: RequestContext) -> Any:
                raise asyncio.CancelledError()

            async def ok(params: Any, ctx: RequestContext) -> Any:
                return "ok"

            b.router.on_request("stray", stray)
            b.router.on_request("ok", ok)
            with pytest.raises(JsonRpcError) as e:
                await a.request("stray", timeout=5)
            assert e.value.code == -32603
            assert await a.request("ok", timeout=5) == "ok"

    anyio.run(main)


@pytest.mark.parametrize("dialect", ["mcp", "lsp"])
def test_request_timeout_cancels_the_peer_handler(dialect: str) -> None:
    async def main() -> None:
        async with pair(dialect=dialect) as (a, b):
            started = anyio.Event()
            interrupted = anyio.Event()

            async def hang(params: Any, ctx: RequestContext) -> Any:
                started.set()
                try:
                    await anyio.sleep_forever()
                finally:
                    interrupted.set()

            b.router.on_request("hang", hang)
            with pytest.raises(JsonRpcError) as e:
                await a.request("hang", timeout=0.3)
            assert e.value.code == -32001
            with anyio.fail_after(5):
                await interrupted.wait()
            assert started.is_set()
            assert b.in_flight == 0

    anyio.run(main)


def test_leaving_a_cancel_scope_cancels_the_peer_handler() -> None:
    async def main() -> None:
        async with pair() as (a, b):
            started = anyio.Event()
            interrupted = anyio.Event()

            async def hang(params: Any, ctx: RequestContext) -> Any:
                started.set()
                try:
                    await anyio.sleep_forever()
                finally:
                    interrupted.set()

            b.router.on_request("hang", hang)
            async with anyio.create_task_group() as tg:
                tg.start_soon(a.request, "hang")
                await started.wait()
                tg.cancel_scope.cancel()
            with anyio.fail_after(5):
                await interrupted.wait()

    anyio.run(main)


def test_pending_requests_fail_when_the_connection_closes() -> None:
    async def main() -> None:
        async with pair() as (a, b):
            started = anyio.Event()

            async def hang(params: Any, ctx: RequestContext) -> Any:
                started.set()
                await anyio.sleep_forever()

            b.router.on_request("hang", hang)
            async with anyio.create_task_group() as tg:

                async def closer() -> None:
                    await started.wait()
                    a.close()

                tg.start_soon(closer)
                with pytest.raises(JsonRpcError) as e:
                    await a.request("hang")
                assert e.value.code == -32000
            with pytest.raises(JsonRpcError):
                await a.request("anything")

    anyio.run(main)


def test_peer_eof_cancels_in_flight_handlers() -> None:
    async def main() -> None:
        r, w = os.pipe()
        out_r, out_w = os.pipe()
        s = Session(FdReceiveStream(r), FdSendStream(out_w), framing="ndjson")
        interrupted = anyio.Event()

        async def hang(params: Any, ctx: RequestContext) -> Any:
            try:
                await anyio.sleep_forever()
            finally:
                interrupted.set()

        s.router.on_request("hang", hang)
        os.write(w, b'{"jsonrpc":"2.0","id":1,"method":"hang"}\n')
        os.close(w)  # EOF right behind the request
        with anyio.fail_after(5):
            await s.serve()
        assert interrupted.is_set()
        os.close(out_r)

    anyio.run(main)


def test_host_reads_a_request_file_and_writes_a_result_file(tmp_path: Path) -> None:
    # regular files as stdin/stdout: never "readable"-waited on, EOF at the end
    requests = tmp_path / "in.ndjson"
    requests.write_text(
        '{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"f"}}}\n'
    )
    out = tmp_path / "out.ndjson"
    with requests.open("rb") as fin, out.open("wb") as fout:
        rc = subprocess.run(
            [sys.executable, "-m", "toolwire.host", "--no-builtins", "--tools", WIRE_TOOLS],
            stdin=fin,
            stdout=fout,
            stderr=subprocess.DEVNULL,
            cwd=REPO,
            timeout=20,
        ).returncode
    assert rc == 0
    lines = out.read_bytes().splitlines()
    assert lines[0] == b'{"jsonrpc":"2.0","id":1,"result":{}}'
    # the tools/call result is written before EOF cancels in-flight calls, or not at all
    assert len(lines) in (1, 2)


def test_host_with_dev_null_stdin_exits_cleanly() -> None:
    rc = subprocess.run(
        [sys.executable, "-m", "toolwire.host", "--no-builtins"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        cwd=REPO,
        timeout=20,
    )
    assert rc.returncode == 0, rc.stderr
    assert rc.stdout == b""


def test_the_router_serves_each_kind_of_entry() -> None:
    """One table: request (task), inline (read loop, may defer), notification, unknown.

    A registered method gets ``[]`` as ``{}`` and a non-empty array refused with -32602
    (JSON-RPC 2.0 §4.2, protocol.md); the handler for other methods gets the params as
    sent and may answer from a task (:meth:`Deferred.to`); its default is -32601 with
    ``data.method`` (JSON-RPC 2.0 §5.1).
    """

    async def main() -> None:
        async with pair() as (a, b):
            order: list[str] = []
            seen: list[Any] = []
            noted = anyio.Event()

            async def slow(params: Any, ctx: RequestContext) -> Any:
                await anyio.sleep(0)
                order.append("task")
                return "task"

            def inline(params: Any, ctx: RequestContext) -> Any:
                order.append("inline")
                return params

            async def from_task(params: Any, ctx: RequestContext) -> Any:
                return {"deferred": ctx.method, "params": params}

            def unknown(params: Any, ctx: RequestContext) -> Any:
                seen.append(params)
                if ctx.method == "later":
                    return Deferred.to(from_task)
                raise method_not_found(ctx.method)

            b.router.on_request("slow", slow)
            b.router.on_inline_request("inline", inline)
            b.router.on_notification("note", lambda params: noted.set())

            # Default for other methods: -32601 naming the method.
            with pytest.raises(JsonRpcError) as e:
                await a.request("nothing", [1], timeout=5)
            assert (e.value.code, e.value.data) == (-32601, {"method": "nothing"})

            assert await a.request("slow", timeout=5) == "task"
            assert await a.request("inline", {"x": 1}, timeout=5) == {"x": 1}
            assert order == ["task", "inline"]
            assert await a.request("inline", [], timeout=5) == {}
            with pytest.raises(JsonRpcError) as e:
                await a.request("inline", [1], timeout=5)
            assert (e.value.code, e.value.message) == (-32602, PARAMS_NOT_AN_OBJECT)

            b.router.on_unknown_request(unknown)
            assert await a.request("later", [7], timeout=5) == {"deferred": "later", "params": [7]}
            with pytest.raises(JsonRpcError) as e:
                await a.request("gone", timeout=5)
            assert e.value.code == -32601
            assert seen == [[7], None]
            a.notify("note", {})
            with anyio.fail_after(5):
                await noted.wait()

    anyio.run(main)

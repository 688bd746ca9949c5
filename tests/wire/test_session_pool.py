"""The session's request workers: pooled tasks must never make a request wait behind a slow one."""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.wire.test_session import pair
from toolwire import RequestContext
from toolwire.errors import REQUEST_CANCELLED
from toolwire.router import Router
from toolwire.session import Session
from toolwire.streams import FdReceiveStream, FdSendStream


def test_burst_with_blocked_requests_first_still_answers_the_rest() -> None:
    """50 requests written together: the first 10 block until released; the other 40 must be
    answered while those 10 are still blocked, and the 10 must finish once released."""

    async def main() -> None:
        async with pair() as (a, b):
            release = anyio.Event()
            blocked_running = 0

            async def block(params: Any, ctx: RequestContext) -> Any:
                nonlocal blocked_running
                blocked_running += 1
                await release.wait()
                return "released"

            async def fast(params: Any, ctx: RequestContext) -> Any:
                return params["i"]

            b.router.on_request("block", block)
            b.router.on_request("fast", fast)
            blocked_results: list[Any] = []
            fast_results: list[Any] = []

            async def call_block() -> None:
                blocked_results.append(await a.request("block", {}, timeout=10))

            async def call_fast(i: int) -> None:
                fast_results.append(await a.request("fast", {"i": i}, timeout=10))

            async with anyio.create_task_group() as tg:
                for _ in range(10):
                    tg.start_soon(call_block)
                for i in range(40):
                    tg.start_soon(call_fast, i)
                with anyio.fail_after(10):
                    while len(fast_results) < 40:
                        await anyio.sleep(0.01)
                # every fast request finished while all ten blocked ones were still waiting
                assert blocked_results == []
                assert blocked_running == 10
                release.set()
            assert sorted(fast_results) == list(range(40))
            assert blocked_results == ["released"] * 10

    anyio.run(main)


def test_workers_are_reused_after_a_burst() -> None:
    """After many quick requests, a later slow one still does not delay a fast one."""

    async def main() -> None:
        async with pair() as (a, b):
            gate = anyio.Event()

            async def echo(params: Any, ctx: RequestContext) -> Any:
                return params

            async def wait(params: Any, ctx: RequestContext) -> Any:
                await gate.wait()
                return "done"

            b.router.on_request("echo", echo)
            b.router.on_request("wait", wait)
            async with anyio.create_task_group() as tg:
                for i in range(500):
                    tg.start_soon(a.request, "echo", {"i": i})
            results: list[str] = []

            async def slow() -> None:
                results.append(await a.request("wait", {}, timeout=10))

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                assert await a.request("echo", {"x": 1}, timeout=5) == {"x": 1}
                assert results == []
                gate.set()
            assert results == ["done"]

    anyio.run(main)


def test_request_owns_its_progress_token_and_routes_the_notifications_to_its_listener() -> None:
    async def main() -> None:
        async with pair() as (a, b):
            seen_tokens: list[Any] = []

            async def work(params: Any, ctx: RequestContext) -> Any:
                seen_tokens.append(ctx.progress_token)
                ctx.report_progress(1, 2)
                b.notify("notifications/custom", {"progressToken": ctx.progress_token, "n": 1})
                return {"id": ctx.id}

            b.router.on_request("work", work)
            elsewhere: list[Any] = []
            a.router.on_notification("notifications/progress", elsewhere.append)
            got: list[tuple[str, dict[str, Any]]] = []

            def listen(method: str, params: dict[str, Any]) -> None:
                got.append((method, params))

            reserved = a.new_request_id()
            res = await a.request("work", {}, timeout=10, on_progress=listen, request_id=reserved)
            assert res == {"id": reserved} and seen_tokens == [reserved]
            assert [m for m, _ in got] == ["notifications/progress", "notifications/custom"]
            assert got[0][1]["progressToken"] == reserved and got[0][1]["progress"] == 1
            # A token the caller names is kept; no listener: no token is sent.
            got.clear()
            meta = {"_meta": {"progressToken": "mine"}}
            await a.request("work", meta, timeout=10, on_progress=listen)
            assert seen_tokens[-1] == "mine" and got[0][1]["progressToken"] == "mine"
            await a.request("work", {}, timeout=10)
            assert seen_tokens[-1] is None
            assert elsewhere == [] and a._progress_listeners == {}

    anyio.run(main)


@pytest.mark.parametrize("swallow", [False, True])
@pytest.mark.parametrize("dialect", ["mcp", "lsp"])
def test_a_cancelled_request_leaves_the_next_one_on_its_task_uncancelled(
    dialect: str, swallow: bool
) -> None:
    """A worker task's requests share a cancel scope until one is cancelled: the request
    after a cancelled one (on the same task) runs under a fresh scope, its awaits are not
    cancelled, whether the cancellation went through the handler or the handler swallowed
    it and returned."""

    async def main() -> None:
        async with pair(dialect=dialect) as (a, b):
            started = anyio.Event()
            stopped = anyio.Event()

            async def wait(params: Any, ctx: RequestContext) -> Any:
                started.set()
                try:
                    await anyio.sleep_forever()
                except anyio.get_cancelled_exc_class():
                    stopped.set()
                    if not swallow:
                        raise
                return "swallowed"

            async def echo(params: Any, ctx: RequestContext) -> Any:
                for _ in range(3):
                    await anyio.lowlevel.checkpoint()
                await anyio.sleep(0.001)
                return params["i"]

            b.router.on_request("wait", wait)
            b.router.on_request("echo", echo)
            for round_ in range(3):
                started = anyio.Event()
                stopped = anyio.Event()
                with anyio.fail_after(10):
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(a.request, "wait", {})
                        await started.wait()
                        tg.cancel_scope.cancel()  # a sends the cancellation in its dialect
                    await stopped.wait()
                    assert await a.request("echo", {"i": round_}, timeout=10) == round_
                    assert await a.request("echo", {"i": -round_}, timeout=10) == -round_

    anyio.run(main)


def test_the_request_after_one_cancelled_before_it_ran_is_not_cancelled() -> None:
    """A request cancelled before its handler ran (``$/cancelRequest`` read with it)
    whose handler then returns without awaiting: the next request, taken by the same
    task right after, must not run under the cancelled scope (it is answered)."""

    async def main() -> None:
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        router = Router()

        async def quick(params: Any, ctx: RequestContext) -> Any:
            return "quick"  # never awaits

        async def slow(params: Any, ctx: RequestContext) -> Any:
            for _ in range(3):
                await anyio.lowlevel.checkpoint()
            return "slow"

        router.on_request("quick", quick)
        router.on_request("slow", slow)
        b = Session(FdReceiveStream(in_r), FdSendStream(out_w), router=router, framing="ndjson")
        # One write, so one read: both requests are queued and the first cancelled
        # before any handler runs.
        os.write(
            in_w,
            b'{"jsonrpc":"2.0","id":1,"method":"quick"}\n'
            b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}\n'
            b'{"jsonrpc":"2.0","id":2,"method":"slow"}\n',
        )
        replies: dict[int, Any] = {}
        reader = FdReceiveStream(out_r)
        async with b.running():
            buf = b""
            with anyio.fail_after(10):
                while len(replies) < 2:
                    buf += await reader.receive()
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        msg = json.loads(line)
                        replies[msg["id"]] = msg
        os.close(in_w)
        await reader.aclose()
        assert replies[1]["error"]["code"] == REQUEST_CANCELLED
        assert replies[2]["result"] == "slow"

    anyio.run(main)

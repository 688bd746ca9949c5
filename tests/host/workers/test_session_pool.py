"""The session's request workers: pooled tasks must never make a request wait behind a slow one."""

from __future__ import annotations

from typing import Any

import anyio

from tests.wire.test_session import pair
from toolwire import RequestContext


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

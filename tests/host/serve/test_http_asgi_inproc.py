"""The HTTP application driven in the test's own process, through its ASGI interface.

``create_app()`` is what users who run their own ASGI server import, so these tests call
it as such a server would: a lifespan, then one ``http`` scope per request, with
``receive``/``send`` of the test's own. They hold the rules of the direct 2026-07-28 path
whose timing a real server cannot pin down: the body deadline (one timer cancelling the
request's task) gives back only its own cancellation, and a body sent in several
messages is joined. The end-to-end versions over uvicorn are in test_http_security.py
(413/408) and test_http_robustness.py, beside this file (a client gone mid-call).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from toolwire.host.serve.http import HttpHost, create_app
from toolwire.host.serve.http.config import HttpSettings
from toolwire.host.serve.options import HostConfig

from tests.http_support import HTTP_TOOLS, modern_request

Message = dict[str, Any]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def running_app(root: Path, body_timeout: float = 30.0) -> AsyncIterator[HttpHost]:
    """The app with the HTTP test tools in process (no workers, no sandbox), its
    lifespan started; shut down after the block."""
    config = HostConfig(
        root=root, tools=[HTTP_TOOLS], builtins=False, entry_points=False, isolation="none"
    )
    config.sandbox.mode = "none"
    app = create_app(config, HttpSettings(port=8000, body_timeout=body_timeout))
    inbox: asyncio.Queue[Message] = asyncio.Queue()
    outbox: asyncio.Queue[Message] = asyncio.Queue()
    life = asyncio.ensure_future(app({"type": "lifespan"}, inbox.get, outbox.put))
    await inbox.put({"type": "lifespan.startup"})
    started = await outbox.get()
    assert started["type"] == "lifespan.startup.complete", started
    try:
        yield app
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        await life


def http_scope(headers: dict[str, str]) -> dict[str, Any]:
    """A POST /mcp scope as uvicorn builds it (lower-case header names)."""
    raw = [(b"host", b"127.0.0.1:8000")]
    raw += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "headers": raw,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }


def sender() -> tuple[list[Message], Callable[[Message], Awaitable[None]]]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    return sent, send


@pytest.mark.anyio
async def test_cancelled_while_reading_body_is_not_a_timeout(tmp_path: Path) -> None:
    """A cancellation from outside (the server shutting down, its own timeout) while the
    body is awaited goes on as a cancellation: no 408, nothing sent."""
    async with running_app(tmp_path) as app:
        _, headers = modern_request(1, "tools/list")
        reading = asyncio.Event()
        never: asyncio.Future[Message] = asyncio.get_running_loop().create_future()

        async def receive() -> Message:
            reading.set()
            return await never

        sent, send = sender()
        task = asyncio.ensure_future(app(http_scope(headers), receive, send))
        await reading.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert sent == []


@pytest.mark.anyio
async def test_body_deadline_answers_408_and_leaves_the_task_uncancelled(
    tmp_path: Path,
) -> None:
    async with running_app(tmp_path, body_timeout=0.05) as app:
        _, headers = modern_request(1, "tools/list")
        never: asyncio.Future[Message] = asyncio.get_running_loop().create_future()

        async def receive() -> Message:
            return await never

        sent, send = sender()

        async def request() -> int:
            await app(http_scope(headers), receive, send)
            task = asyncio.current_task()
            assert task is not None
            return task.cancelling()

        assert await asyncio.ensure_future(request()) == 0  # the timer's cancel taken back
        assert sent[0]["status"] == 408
        assert json.loads(sent[1]["body"])["error"]["code"] == -32600


@pytest.mark.anyio
async def test_direct_answer_with_body_in_chunks(tmp_path: Path) -> None:
    """The body in several ``http.request`` messages is joined; the call is answered as
    JSON by the direct path."""
    async with running_app(tmp_path) as app:
        body, headers = modern_request(7, "tools/call", {"name": "steps", "arguments": {"n": 1}})
        raw = json.dumps(body).encode()
        parts = [raw[:10], raw[10:20], raw[20:]]
        messages = [
            {"type": "http.request", "body": p, "more_body": i < len(parts) - 1}
            for i, p in enumerate(parts)
        ]
        never: asyncio.Future[Message] = asyncio.get_running_loop().create_future()

        async def receive() -> Message:
            if messages:
                return messages.pop(0)
            return await never

        sent, send = sender()
        await app(http_scope(headers), receive, send)
        never.cancel()
        assert sent[0]["status"] == 200
        assert dict(sent[0]["headers"])[b"content-type"] == b"application/json"
        reply = json.loads(sent[1]["body"])
        assert reply["id"] == 7 and reply["result"]["resultType"] == "complete", reply

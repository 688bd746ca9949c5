"""``Client.call_batch`` against the real host (tools/callBatch) and through the fallback.

The fallback (concurrent ``tools/call`` requests) is what the client does with any
MCP server that answers -32601 to ``tools/callBatch``; a bare JSON-RPC peer without
the method shows the client finds that out by itself.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from toolwire.client import (
    BatchCall,
    BatchEvent,
    BatchProgress,
    CallEnded,
    CallProgress,
    CallStarted,
    Client,
)

from tests.agent_support import agent_host, require_call_batch
from toolwire import JsonRpcError, RequestContext, Session
from toolwire.streams import FdReceiveStream, FdSendStream

pytestmark = pytest.mark.anyio

PATHS = ["batch", "fallback"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def host(tmp_path: Path, path: str, *extra: str) -> AsyncIterator[Client]:
    if path == "batch":
        require_call_batch()
    async with agent_host(tmp_path, *extra, use_call_batch=path == "batch") as c:
        yield c


def emulated(path: str) -> bool:
    return path == "fallback"


@pytest.mark.parametrize("path", PATHS)
async def test_results_in_source_order_paired_by_id(tmp_path: Path, path: str) -> None:
    """The first call can finish only after the second ran: source order is not completion order."""
    door = tmp_path / "door"
    async with host(tmp_path, path) as c:
        batch = await c.call_batch(
            [
                {"id": "slow", "name": "gate", "arguments": {"path": str(door)}},
                BatchCall(7, "mark", {"path": str(door)}),
                {"id": "x", "name": "nope"},
            ]
        )
    assert batch.emulated is emulated(path)
    assert [(r.call_id, r.name, r.is_error) for r in batch.results] == [
        ("slow", "gate", False),
        (7, "mark", False),
        ("x", "nope", True),
    ]
    assert batch.results[0].text == "opened"
    assert "Unknown tool" in batch.results[2].text and "nope" in batch.results[2].text
    assert batch.by_id()[7].text == f"marked {door}"
    assert batch.terminate is False


@pytest.mark.parametrize("path", PATHS)
async def test_invalid_arguments_in_the_middle_do_not_sink_the_batch(
    tmp_path: Path, path: str
) -> None:
    door = tmp_path / "door"
    async with host(tmp_path, path) as c:
        batch = await c.call_batch(
            [
                {"id": 1, "name": "gate", "arguments": {"path": str(door)}},
                {"id": 2, "name": "steps", "arguments": {"n": "many"}},
                {"id": 3, "name": "mark", "arguments": {"path": str(door)}},
            ]
        )
    assert [(r.call_id, r.is_error) for r in batch.results] == [(1, False), (2, True), (3, False)]
    assert "n" in batch.results[1].text


@pytest.mark.parametrize("path", PATHS)
async def test_events_per_call_and_for_the_batch(tmp_path: Path, path: str) -> None:
    events: list[BatchEvent] = []
    async with host(tmp_path, path) as c:
        batch = await c.call_batch(
            [
                {"id": "p", "name": "steps", "arguments": {"n": 3}},
                {"id": "s", "name": "say", "arguments": {"text": "hi"}},
            ],
            on_event=events.append,
        )
        at_return = len(events)
        await c.ping()  # anything the host sent before the batch's answer is in by now
    assert len(events) == at_return  # nothing after the response
    assert [r.text for r in batch.results] == ["3 steps", "hi"]
    for call_id in ("p", "s"):
        mine = [e for e in events if getattr(e, "call_id", None) == call_id]
        assert isinstance(mine[0], CallStarted) and isinstance(mine[-1], CallEnded)
        assert [type(e) for e in mine].count(CallStarted) == 1
        assert [type(e) for e in mine].count(CallEnded) == 1
        assert mine[-1].is_error is False
    assert (
        next(e for e in events if isinstance(e, CallStarted) and e.call_id == "p").name == "steps"
    )
    progress = [e.progress for e in events if isinstance(e, CallProgress)]
    assert [(p.progress, p.total, p.message) for p in progress] == [
        (1, 3, "step 1"),
        (2, 3, "step 2"),
        (3, 3, "step 3"),
    ]
    overall = [e for e in events if isinstance(e, BatchProgress)]
    assert [(o.progress, o.total) for o in overall] == [(1, 2), (2, 2)]


@pytest.mark.parametrize("path", PATHS)
async def test_stop_reason_length_runs_nothing(tmp_path: Path, path: str) -> None:
    marker = tmp_path / "m"
    async with host(tmp_path, path) as c:
        batch = await c.call_batch(
            [
                {"id": "a", "name": "mark", "arguments": {"path": str(marker)}},
                {"id": "b", "name": "say", "arguments": {"text": "x"}},
            ],
            stop_reason="length",
        )
    assert not marker.exists()
    assert all(r.is_error for r in batch.results)
    assert '"mark"' in batch.results[0].text and "length" in batch.results[0].text
    assert batch.terminate is False


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("calls", "terminate"),
    [
        ([("finish", {"summary": "a"}), ("finish", {"summary": "b"})], True),
        ([("finish", {"summary": "a"}), ("say", {"text": "b"})], False),
        ([("finish", {"summary": "a"}), ("fail", {"message": "b"})], False),
        ([("finish", {"summary": "a", "terminate": False})], False),
    ],
    ids=["all", "one-of-two", "with-error", "none"],
)
async def test_terminate_only_when_every_result_asks(
    tmp_path: Path, path: str, calls: list[tuple[str, dict[str, Any]]], terminate: bool
) -> None:
    async with host(tmp_path, path) as c:
        batch = await c.call_batch(
            [{"id": i, "name": n, "arguments": a} for i, (n, a) in enumerate(calls)]
        )
    assert batch.terminate is terminate


@pytest.mark.parametrize("path", PATHS)
async def test_sequential_mode_runs_one_call_after_another(tmp_path: Path, path: str) -> None:
    """In order, the gate (first) cannot see the file the second call writes: it gives up."""
    door = tmp_path / "door"
    async with host(tmp_path, path) as c:
        batch = await c.call_batch(
            [
                {"id": "g", "name": "gate", "arguments": {"path": str(door), "seconds": 0.3}},
                {"id": "m", "name": "mark", "arguments": {"path": str(door)}},
            ],
            mode="sequential",
        )
    assert [(r.call_id, r.is_error) for r in batch.results] == [("g", True), ("m", False)]
    assert "did not appear" in batch.results[0].text


@pytest.mark.parametrize("path", PATHS)
async def test_duplicate_ids_are_a_protocol_error(tmp_path: Path, path: str) -> None:
    async with host(tmp_path, path) as c:
        with pytest.raises(JsonRpcError) as info:
            await c.call_batch([{"id": 1, "name": "say", "arguments": {"text": "a"}}] * 2)
        assert info.value.code == -32602
        with pytest.raises(JsonRpcError) as info:
            await c.call_batch([], mode="sideways")  # type: ignore[arg-type]
        assert info.value.code == -32602


def test_batch_call_of_refuses_bad_entries() -> None:
    with pytest.raises(TypeError):
        BatchCall.of({"id": 1.5, "name": "x"})
    with pytest.raises(TypeError):
        BatchCall.of({"id": True, "name": "x"})
    with pytest.raises(TypeError):
        BatchCall.of({"id": 1})
    assert BatchCall.of({"id": "a", "name": "x"}) == BatchCall("a", "x", {})


# --------------------------------------------------------------------------- a server without callBatch


@asynccontextmanager
async def plain_mcp_server() -> AsyncIterator[tuple[Client, list[str]]]:
    """A bare peer serving initialize and tools/call only (like any MCP server); yields the
    connected client and the methods the peer received."""
    c_r, p_w = os.pipe()
    p_r, c_w = os.pipe()
    peer = Session(FdReceiveStream(p_r), FdSendStream(p_w), framing="ndjson", name="peer")  # type: ignore[arg-type]
    methods: list[str] = []

    def unknown(params: Any, ctx: RequestContext) -> Any:
        methods.append(ctx.method)
        raise JsonRpcError(-32601, f"Method not found: {ctx.method}")

    peer.router.on_unknown_request(unknown)

    def initialize(params: Any, ctx: RequestContext) -> Any:
        methods.append("initialize")
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "p", "version": "0"},
        }

    async def call(params: Any, ctx: RequestContext) -> Any:
        methods.append("tools/call")
        return {
            "content": [
                {"type": "text", "text": f"{params['name']}:{params['arguments'].get('text')}"}
            ]
        }

    peer.router.on_inline_request("initialize", initialize)
    peer.router.on_request("tools/call", call)
    client = Client.connect(FdReceiveStream(c_r), FdSendStream(c_w))  # type: ignore[arg-type]
    async with peer.running(), client:
        yield client, methods


async def test_a_server_without_call_batch_gets_tools_call_requests() -> None:
    async with plain_mcp_server() as (c, methods):
        assert c.batch_supported is None
        batch = await c.call_batch(
            [
                {"id": "a", "name": "say", "arguments": {"text": "1"}},
                {"id": "b", "name": "say", "arguments": {"text": "2"}},
            ]
        )
        assert c.batch_supported is False
        assert batch.emulated
        assert [(r.call_id, r.text) for r in batch.results] == [("a", "say:1"), ("b", "say:2")]
        again = await c.call_batch([{"id": "c", "name": "say", "arguments": {"text": "3"}}])
        assert again.results[0].text == "say:3"
    # Asked once, then remembered.
    assert methods.count("tools/callBatch") == 1
    assert methods.count("tools/call") == 3


async def test_fallback_false_raises_method_not_found() -> None:
    async with plain_mcp_server() as (c, _):
        with pytest.raises(JsonRpcError) as info:
            await c.call_batch([{"id": "a", "name": "say"}], fallback=False)
        assert info.value.code == -32601
        assert c.batch_supported is None

"""Approval on the client: the callback, the capability, and ``toolwire/approve`` answers.

Three layers: :func:`decide` on its own; the client's answers to a raw JSON-RPC peer
that plays the host (so every malformed case can be sent); and the real host started
with ``--approve`` (failing, with the reason, if the host stops asking).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from toolwire.client import (
    ApprovalDecision,
    ApprovalRequest,
    Client,
)
from toolwire.client.approval import decide

from tests.agent_support import agent_host, require_approval, spawn_agent_host
from toolwire import JsonRpcError, RequestContext, Session
from toolwire.streams import FdReceiveStream, FdSendStream

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


REQ = ApprovalRequest("c1", "mark", {"path": "/x"}, {"readOnlyHint": False})


# --------------------------------------------------------------------------- decide()


async def test_decide_passes_decisions_and_bools_through() -> None:
    allow = ApprovalDecision.allow({"path": "/y"}, "fine")
    assert await decide(lambda r: allow, REQ) is allow
    assert await decide(lambda r: True, REQ) == ApprovalDecision(True)
    assert await decide(lambda r: False, REQ) == ApprovalDecision(False, "denied by the client")

    async def later(r: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.deny("not today")

    assert await decide(later, REQ) == ApprovalDecision(False, "not today")


@pytest.mark.parametrize(
    ("callback", "reason"),
    [
        (lambda r: 1 / 0, "the approval callback failed (ZeroDivisionError: division by zero)"),
        (lambda r: "yes", "the approval callback returned str, not a decision"),
        (lambda r: None, "the approval callback returned NoneType, not a decision"),
        (
            lambda r: ApprovalDecision(True, None, ["not", "an", "object"]),  # type: ignore[arg-type]
            "the approval callback gave replacement arguments that are not an object",
        ),
    ],
    ids=["raises", "string", "none", "bad-arguments"],
)
async def test_a_broken_callback_denies(callback: Any, reason: str) -> None:
    assert await decide(callback, REQ) == ApprovalDecision(False, reason)


async def test_an_async_callback_that_raises_denies() -> None:
    async def boom(r: ApprovalRequest) -> ApprovalDecision:
        raise RuntimeError("lost the terminal")

    decision = await decide(boom, REQ)
    assert not decision.allowed
    assert decision.reason == "the approval callback failed (RuntimeError: lost the terminal)"


def test_decision_wire_form() -> None:
    assert ApprovalDecision.allow().to_wire() == {"decision": "allow"}
    assert ApprovalDecision.allow({"a": 1}, "ok").to_wire() == {
        "decision": "allow",
        "reason": "ok",
        "arguments": {"a": 1},
    }
    assert ApprovalDecision.deny("no").to_wire() == {"decision": "deny", "reason": "no"}


@pytest.mark.parametrize(
    "params",
    [
        None,
        [],
        {"name": "x", "arguments": {}},
        {"callId": 1.5, "name": "x"},
        {"callId": True, "name": "x"},
        {"callId": 1},
        {"callId": 1, "name": "x", "arguments": []},
        {"callId": 1, "name": "x", "annotations": "ro"},
    ],
)
def test_malformed_approve_params_are_refused(params: Any) -> None:
    with pytest.raises(JsonRpcError) as info:
        ApprovalRequest.from_params(params)
    assert info.value.code == -32602


# --------------------------------------------------------------------------- a raw peer as host


@asynccontextmanager
async def peer_host(**options: Any) -> AsyncIterator[tuple[Session, Client, list[Any]]]:
    """A client connected to a bare Session playing the host; yields (peer, client, inits)."""
    c_r, p_w = os.pipe()
    p_r, c_w = os.pipe()
    peer = Session(FdReceiveStream(p_r), FdSendStream(p_w), framing="ndjson", name="peer")  # type: ignore[arg-type]
    inits: list[Any] = []

    def initialize(params: Any, ctx: RequestContext) -> Any:
        inits.append(params)
        return {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "peer", "version": "0"},
        }

    peer.router.on_inline_request("initialize", initialize)
    client = Client.connect(FdReceiveStream(c_r), FdSendStream(c_w), **options)  # type: ignore[arg-type]
    async with peer.running(), client:
        yield peer, client, inits


async def test_the_capability_is_declared_only_with_a_callback() -> None:
    async with peer_host(on_approval=lambda r: True) as (_, _c, inits):
        assert inits[0]["capabilities"]["toolwire"] == {"approval": True}
    async with peer_host(capabilities={"toolwire": {"other": 1}}, on_approval=lambda r: True) as (
        _,
        _c,
        inits,
    ):
        assert inits[0]["capabilities"]["toolwire"] == {"other": 1, "approval": True}
    async with peer_host() as (peer, _c, inits):
        assert "toolwire" not in inits[0]["capabilities"]
        with pytest.raises(JsonRpcError) as info:
            await peer.request("toolwire/approve", {"callId": 1, "name": "x"}, timeout=5)
        assert info.value.code == -32601


async def test_answers_to_the_host() -> None:
    seen: list[ApprovalRequest] = []

    def approve(r: ApprovalRequest) -> Any:
        seen.append(r)
        if r.name == "ok":
            return True
        if r.name == "swap":
            return ApprovalDecision.allow({**r.arguments, "path": "/safe"})
        if r.name == "boom":
            raise OSError("no tty")
        return ApprovalDecision.deny(f"{r.name} is not allowed")

    async with peer_host(on_approval=approve) as (peer, _c, _):

        async def ask(name: str, **extra: Any) -> Any:
            params = {"callId": "call_1", "name": name, "arguments": {"path": "/etc"}, **extra}
            return await peer.request("toolwire/approve", params, timeout=5)

        assert await ask("ok", annotations={"readOnlyHint": True}) == {"decision": "allow"}
        assert await ask("swap") == {"decision": "allow", "arguments": {"path": "/safe"}}
        assert await ask("rm") == {"decision": "deny", "reason": "rm is not allowed"}
        assert await ask("boom") == {
            "decision": "deny",
            "reason": "the approval callback failed (OSError: no tty)",
        }
        with pytest.raises(JsonRpcError) as info:
            await peer.request("toolwire/approve", {"callId": "c"}, timeout=5)
        assert info.value.code == -32602
    assert seen[0] == ApprovalRequest("call_1", "ok", {"path": "/etc"}, {"readOnlyHint": True})
    assert seen[0].read_only and not seen[1].read_only


# --------------------------------------------------------------------------- the real host


async def test_allowed_calls_run_and_the_request_describes_the_call(tmp_path: Path) -> None:
    require_approval()
    seen: list[ApprovalRequest] = []

    def approve(r: ApprovalRequest) -> bool:
        seen.append(r)
        return True

    marker = tmp_path / "m.txt"
    async with spawn_agent_host(tmp_path, "--approve", "all", on_approval=approve) as c:
        res = await c.call_tool("mark", {"path": str(marker)})
    assert not res.is_error, res.text
    assert marker.read_text() == "ran"
    (req,) = seen
    assert (req.call_id, req.name) == (res.call_id, "mark")
    assert req.arguments["path"] == str(marker)


@pytest.mark.parametrize(
    ("callback", "why"),
    [
        (lambda r: ApprovalDecision.deny("too risky"), "too risky"),
        (lambda r: False, "denied by the client"),
        (lambda r: 1 / 0, "ZeroDivisionError"),
        (lambda r: "maybe", "not a decision"),
    ],
    ids=["deny", "false", "raises", "garbage"],
)
async def test_a_denied_call_never_runs(tmp_path: Path, callback: Any, why: str) -> None:
    require_approval()
    marker = tmp_path / "m.txt"
    async with agent_host(tmp_path, "--approve", "all", on_approval=callback) as c:
        res = await c.call_tool("mark", {"path": str(marker)})
        # The host keeps serving (this call is asked about, and refused, too).
        assert (await c.call_tool("say", {"text": "host still serves"})).is_error
    assert res.is_error
    assert "denied" in res.text.lower() and why in res.text
    assert not marker.exists()


async def test_replacement_arguments_are_used_and_validated(tmp_path: Path) -> None:
    require_approval()
    safe = tmp_path / "safe.txt"

    def approve(r: ApprovalRequest) -> ApprovalDecision:
        if r.name == "mark":
            return ApprovalDecision.allow({"path": str(safe), "text": "replaced"})
        return ApprovalDecision.allow({"text": 42, "extra": []})  # say: text must be a string

    async with agent_host(tmp_path, "--approve", "all", on_approval=approve) as c:
        res = await c.call_tool("mark", {"path": str(tmp_path / "asked.txt")})
        bad = await c.call_tool("say", {"text": "x"})
    assert not res.is_error and safe.read_text() == "replaced"
    assert not (tmp_path / "asked.txt").exists()
    # 42 coerces to "42" under the host's rules; "extra" is not declared and never arrives.
    assert (bad.is_error, bad.text) == (False, "42")


async def test_without_the_capability_the_host_denies_and_says_why(tmp_path: Path) -> None:
    require_approval()
    marker = tmp_path / "m.txt"
    async with agent_host(tmp_path, "--approve", "all") as c:
        res = await c.call_tool("mark", {"path": str(marker)})
    assert res.is_error and "approval" in res.text
    assert not marker.exists()


async def test_destructive_policy_asks_only_for_tools_not_marked_read_only(tmp_path: Path) -> None:
    require_approval()
    asked: list[str] = []

    def approve(r: ApprovalRequest) -> bool:
        asked.append(r.name)
        return True

    async with agent_host(tmp_path, "--approve", "destructive", on_approval=approve) as c:
        await c.call_tool("say", {"text": "read-only"})
        await c.call_tool("mark", {"path": str(tmp_path / "m")})
    assert asked == ["mark"]


async def test_approval_inside_a_batch_uses_the_batch_call_ids(tmp_path: Path) -> None:
    require_approval()
    asked: list[Any] = []

    def approve(r: ApprovalRequest) -> ApprovalDecision:
        asked.append(r.call_id)
        return ApprovalDecision.deny("no") if r.call_id == "b" else ApprovalDecision.allow()

    m_a, m_b = tmp_path / "a", tmp_path / "b"
    async with agent_host(tmp_path, "--approve", "mark", on_approval=approve) as c:
        batch = await c.call_batch(
            [
                {"id": "a", "name": "mark", "arguments": {"path": str(m_a)}},
                {"id": "b", "name": "mark", "arguments": {"path": str(m_b)}},
                {"id": "c", "name": "say", "arguments": {"text": "not asked"}},
            ]
        )
    assert sorted(asked) == ["a", "b"]
    assert [(r.call_id, r.is_error) for r in batch.results] == [
        ("a", False),
        ("b", True),
        ("c", False),
    ]
    assert m_a.exists() and not m_b.exists()

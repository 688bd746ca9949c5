"""Shared pieces of the client-side issue-3 tests: hosts (spawned or in process) and a
feature probe.

The probe asks the real host (in process, tests/inproc.py) over an independent raw peer,
whether it serves ``tools/callBatch`` and sends ``toolwire/approve``. The host ships
both, so a host that stops serving either is a regression: tests of those paths FAIL
with the probe's finding (they never skip).
"""

from __future__ import annotations

import functools
import queue
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolwire.client import Client, host_command

from tests.hostproc import REPO, TOOLS_DIR
from tests.inproc import InProcHost, in_host

AGENT_TOOLS = TOOLS_DIR / "agent_tools.py"


def agent_command(root: Path, *extra: str) -> list[str]:
    """A host serving tests/fixtures/agent_tools.py only, rooted in ``root``."""
    return host_command(
        root=root,
        tools=[AGENT_TOOLS],
        builtins=False,
        extra_args=["--no-entry-points", *extra],
    )


def spawn_agent_host(root: Path, *extra: str, **options: Any) -> Client:
    """``Client.spawn`` of :func:`agent_command` with stderr captured."""
    options.setdefault("stderr", "capture")
    return Client.spawn(agent_command(root, *extra), **options)


def agent_host(root: Path, *extra: str, **options: Any) -> AbstractAsyncContextManager[Client]:
    """:func:`spawn_agent_host`'s host served in this event loop instead
    (:func:`tests.inproc.connected_client`), its tools run in the host."""
    from tests.inproc import connected_client

    args = [
        "--root",
        str(root),
        "--tools",
        str(AGENT_TOOLS),
        "--no-builtins",
        "--no-entry-points",
        *extra,
    ]
    return connected_client(in_host(args), **options)


async def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``condition`` until true; fail after ``timeout`` seconds."""
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.01)


@dataclass(frozen=True)
class HostFeatures:
    call_batch: bool
    approve: bool


def _exchange(h: InProcHost, request: dict[str, Any], approve_seen: list[bool]) -> dict[str, Any]:
    """Send ``request``; answer any toolwire/approve with allow; return the response."""
    h.send(request)
    while True:
        try:
            msg = h.recv(timeout=15)
        except queue.Empty:
            raise AssertionError(
                f"the host did not answer the probe; stderr:\n{h.stderr}"
            ) from None
        if msg is None:
            raise AssertionError(f"the host ended during the probe; stderr:\n{h.stderr}")
        if not isinstance(msg, dict):
            continue
        if msg.get("method") == "toolwire/approve" and "id" in msg:
            approve_seen.append(True)
            h.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"decision": "allow"}})
        elif msg.get("id") == request["id"] and "method" not in msg:
            return msg


@functools.cache
def host_features() -> HostFeatures:
    """What the real host supports of issue 3's wire design (probed once per test run)."""
    args = ["--no-builtins", "--no-entry-points", "--tools", str(AGENT_TOOLS), "--approve", "all"]
    approve_seen: list[bool] = []
    # In process (tests/inproc.py): what the host serves, not how it starts.
    with InProcHost(in_host(["--root", str(REPO), *args])) as h:
        init = h.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {"toolwire": {"approval": True}},
                "clientInfo": {"name": "probe", "version": "0"},
            },
        )
        assert "result" in init, init
        h.notify("notifications/initialized")
        call = {"id": "p", "name": "say", "arguments": {"text": "probe"}}
        resp = _exchange(
            h,
            {
                "jsonrpc": "2.0",
                "id": "probe-batch",
                "method": "tools/callBatch",
                "params": {"calls": [call]},
            },
            approve_seen,
        )
        has_batch = "result" in resp
        if not has_batch:
            _exchange(
                h,
                {
                    "jsonrpc": "2.0",
                    "id": "probe-call",
                    "method": "tools/call",
                    "params": {"name": "say", "arguments": {"text": "probe"}},
                },
                approve_seen,
            )
    return HostFeatures(call_batch=has_batch, approve=bool(approve_seen))


def require_call_batch() -> None:
    """Fail unless the host serves ``tools/callBatch`` (a regression, never a skip)."""
    if not host_features().call_batch:
        pytest.fail("the host no longer serves tools/callBatch (the probe got an error back)")


def require_approval() -> None:
    """Fail unless the host asks ``toolwire/approve`` under ``--approve all`` (a
    regression, never a skip)."""
    if not host_features().approve:
        pytest.fail("the host no longer sends toolwire/approve under --approve all")

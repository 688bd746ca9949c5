"""Tool code that hogs the event loop, raises what it should not, or floods the client."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e_helpers import PROMPT, exits_within
from tests.hostproc import TOOLS_DIR, HostProcess
from toolwire import Session

ROBUST = str(TOOLS_DIR / "robust_tools.py")


def robust_host(tmp_path: Path, *extra: str) -> HostProcess:
    return HostProcess(
        ["--root", str(tmp_path), "--no-builtins", "--no-entry-points", "--tools", ROBUST, *extra]
    )


def call_msg(id: Any, name: str, arguments: dict[str, Any], token: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


def test_a_tool_reporting_progress_in_a_tight_loop_cannot_starve_the_host(tmp_path: Path) -> None:
    with robust_host(tmp_path) as h:
        h.send(call_msg(1, "spin", {"n": 10**12}, token="t"))
        # the host still answers, and the cancellation reaches the spinning tool
        assert h.request("ping", id="p1", timeout=10)["result"] == {}
        h.notify("notifications/cancelled", {"requestId": 1})
        assert h.request("ping", id="p2", timeout=10)["result"] == {}
        assert all(m.get("id") != 1 for m in h.drain() if isinstance(m, dict))


def test_the_call_timeout_ends_a_spinning_tool(tmp_path: Path) -> None:
    with robust_host(tmp_path, "--timeout", "0.5") as h:
        r = h.call("spin", {"n": 10**12}, timeout=10)["result"]
        assert r["isError"] is True and "timed out" in r["content"][0]["text"]


def test_sigterm_ends_the_host_while_a_tool_spins(tmp_path: Path) -> None:
    with robust_host(tmp_path) as h:
        h.send(call_msg(1, "spin", {"n": 10**12}))
        assert h.request("ping", timeout=10)["result"] == {}
        start = time.monotonic()
        h.proc.send_signal(signal.SIGTERM)
        assert exits_within(h) == 0
        assert time.monotonic() - start < PROMPT


@pytest.mark.parametrize(
    ("name", "kind"), [("interrupt", "KeyboardInterrupt"), ("interrupt_sync", "BaseException")]
)
def test_base_exceptions_from_a_tool_fail_only_that_call(
    tmp_path: Path, name: str, kind: str
) -> None:
    with robust_host(tmp_path) as h:
        r = h.call(name, {})["result"]
        assert r["isError"] is True and kind in r["content"][0]["text"]
        assert h.request("ping")["result"] == {}


def test_non_finite_progress_never_reaches_the_wire(tmp_path: Path) -> None:
    with robust_host(tmp_path) as h:
        h.send(call_msg(1, "odd_progress", {}, token="t"))
        h.recv_response(1)
        progress = [
            m["params"]
            for m in h.drain()
            if isinstance(m, dict) and m.get("method") == "notifications/progress"
        ]
        assert progress == [{"progressToken": "t", "progress": 2, "total": 3}]


class _NeverReads(anyio.abc.ByteSendStream):
    """A peer that stops reading: every send blocks."""

    async def send(self, item: bytes) -> None:
        await anyio.sleep_forever()

    async def aclose(self) -> None:
        return None


class _NoInput(anyio.abc.ByteReceiveStream):
    async def receive(self, max_bytes: int = 65536) -> bytes:
        await anyio.sleep_forever()
        raise AssertionError

    async def aclose(self) -> None:
        return None


def test_notifications_wait_for_a_peer_that_stops_reading() -> None:
    async def main() -> None:
        session = Session(_NoInput(), _NeverReads(), framing="ndjson")
        session.output.high_water = 1024 * 1024
        sent = 0

        async def flood() -> None:
            nonlocal sent
            for _ in range(1000):
                session.notify("notifications/message", {"level": "info", "data": "x" * 100_000})
                sent += 1
                await session.drain()

        async with anyio.create_task_group() as tg:
            tg.start_soon(session.serve)
            tg.start_soon(flood)
            with anyio.fail_after(10):
                while session.queued_bytes <= session.output.high_water:
                    await anyio.sleep(0.01)
            await anyio.wait_all_tasks_blocked()
            # the flood is held back: what is queued stays near the high-water mark
            assert sent < 1000
            assert session.queued_bytes <= session.output.high_water + 2 * 100_100
            session.close()
            tg.cancel_scope.cancel()

    anyio.run(main)


@pytest.mark.parametrize("how", ["sigterm", "eof"])
def test_the_host_exits_within_its_grace_even_when_a_tool_never_yields(
    tmp_path: Path, how: str
) -> None:
    with robust_host(tmp_path) as h:
        marker = tmp_path / "hogging"
        h.send(call_msg(1, "hog", {"seconds": 60, "marker": str(marker)}))
        deadline = time.monotonic() + 10
        while not marker.exists():  # the tool holds the event loop from here on
            assert time.monotonic() < deadline, "the hog tool never started"
            time.sleep(0.01)
        start = time.monotonic()
        if how == "sigterm":
            h.proc.send_signal(signal.SIGTERM)
        else:
            h.close_stdin()
        assert exits_within(h) == 0
        assert time.monotonic() - start < PROMPT

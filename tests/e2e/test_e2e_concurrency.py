"""End to end: cancellation, progress, overlap, worker threads, timeouts, shutdown."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests import inproc
from tests.e2e_helpers import FRAMINGS, PROMPT, exits_within, text_of, wait_until, wire_host
from tests.hostproc import HostProcess

IN_PROCESS = ["--isolation", "none"]
"""For tests of what the host does with handlers in its own process (threads it abandons,
pids it can see): with worker processes the same cases are tests/host/workers/test_workers_e2e.py's."""

ONE_WORKER = ["--workers", "1"]
"""For tests that count, through module state, calls in flight at once: one worker process
holds them all (module state is per worker)."""


def _call_msg(id: Any, name: str, arguments: dict[str, Any], meta: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie counts as ended
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


# ---------------------------------------------------------------------------- cancellation


@pytest.mark.parametrize("framing", FRAMINGS)
def test_mcp_cancel_interrupts_the_handler_and_sends_nothing(tmp_path: Path, framing: str) -> None:
    with inproc.wire_host(tmp_path, framing) as h:
        h.send(_call_msg("c1", "block", {"name": "c1", "side": str(tmp_path)}))
        wait_until(lambda: (tmp_path / "c1.started").exists(), what="handler start")
        h.notify("notifications/cancelled", {"requestId": "c1", "reason": "user"})
        # the handler's own cleanup ran: it was interrupted, not left running
        wait_until(lambda: (tmp_path / "c1.cancelled").exists(), what="handler cleanup")
        # ordered stream: nothing for c1 arrives before the next reply, nor after it
        assert h.request("ping")["result"] == {}
        h.call("echo", {"text": "flush"})
        assert not [m for m in h.drain() if isinstance(m, dict) and m.get("id") == "c1"]
        # unknown, finished and malformed cancellations are ignored
        h.notify("notifications/cancelled", {"requestId": "nope"})
        h.notify("notifications/cancelled", {"requestId": "c1"})
        h.notify("notifications/cancelled", {})
        h.notify("notifications/cancelled", ["x"])
        h.notify("$/cancelRequest", {"id": None})
        assert h.request("ping")["result"] == {}


@pytest.mark.parametrize("framing", FRAMINGS)
def test_lsp_cancel_interrupts_the_handler_and_replies_32800(tmp_path: Path, framing: str) -> None:
    with inproc.wire_host(tmp_path, framing) as h:
        h.send(_call_msg(41, "block", {"name": "l1", "side": str(tmp_path)}))
        wait_until(lambda: (tmp_path / "l1.started").exists(), what="handler start")
        h.notify("$/cancelRequest", {"id": 41})
        r = h.recv_response(41)
        assert r["error"]["code"] == -32800
        # the answer comes at the cancel's moment; the handler may finish unwinding after it
        wait_until(lambda: (tmp_path / "l1.cancelled").exists(), 60, what="handler cancelled")
        assert h.request("ping")["result"] == {}


@pytest.mark.parametrize("dialect", ["mcp", "lsp"])
def test_cancelling_a_blocked_sync_handler(tmp_path: Path, dialect: str) -> None:
    # a worker thread cannot be interrupted, but the call is abandoned at once: no reply
    # (MCP) or -32800 (LSP), and the host goes on serving. In-process threads: with
    # worker processes the worker is killed instead (tests/host/workers/test_workers_e2e.py).
    with wire_host(tmp_path, args=IN_PROCESS) as h:
        h.send(_call_msg("g", "gate", {"timeout": 30}))
        wait_until(lambda: text_of(h.call("gate_waiting")) == "1")
        if dialect == "mcp":
            h.notify("notifications/cancelled", {"requestId": "g"})
        else:
            h.notify("$/cancelRequest", {"id": "g"})
            assert h.recv_response("g")["error"]["code"] == -32800
        assert h.request("ping")["result"] == {}
        h.call("open_gate")
        wait_until(lambda: text_of(h.call("gate_waiting")) == "0")
        h.request("ping")
        assert not [m for m in h.drain() if isinstance(m, dict) and m.get("id") == "g"]


def test_initialize_cannot_be_cancelled(tmp_path: Path) -> None:
    with inproc.wire_host(tmp_path, initialize=False) as h:
        h.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-06-18"},
            }
        )
        h.notify("notifications/cancelled", {"requestId": 1})
        h.notify("$/cancelRequest", {"id": 1})
        assert h.recv_response(1)["result"]["protocolVersion"] == "2025-06-18"


# ---------------------------------------------------------------------------- progress


@pytest.mark.parametrize("framing", FRAMINGS)
@pytest.mark.parametrize("token", ["tok", 0, -5])
def test_progress_strictly_increasing_and_none_after_the_response(
    tmp_path: Path, framing: str, token: Any
) -> None:
    with inproc.wire_host(tmp_path, framing) as h:
        h.send(_call_msg("p", "progress", {"n": 5}, {"progressToken": token}))
        seen: list[dict[str, Any]] = []
        while True:
            m = h.recv()
            if m.get("id") == "p":
                break
            assert m["method"] == "notifications/progress"
            seen.append(m["params"])
        assert [p["progress"] for p in seen] == [1, 2, 3, 4, 5]
        assert all(
            p["progressToken"] == token and type(p["progressToken"]) is type(token) for p in seen
        )
        assert [p["total"] for p in seen] == [5] * 5
        assert seen[0]["message"] == "step 1"
        # a later attempt to report on the finished call sends nothing
        assert text_of(h.call("late_progress")) == "tried 1"
        h.request("ping")
        assert not [m for m in h.drain() if m.get("method") == "notifications/progress"]
        # without a token, no progress at all
        h.call("progress", {"n": 3})
        assert not [m for m in h.drain() if m.get("method") == "notifications/progress"]


def test_progress_from_a_sync_tool_in_a_thread(tmp_path: Path) -> None:
    with inproc.wire_host(tmp_path) as h:
        h.send(_call_msg("s", "sync_progress", {"n": 4}, {"progressToken": "t"}))
        r = h.recv_response("s")
        assert text_of(r) == "done"
        notes = [
            m["params"]["progress"]
            for m in h.drain()
            if m.get("method") == "notifications/progress"
        ]
        assert notes == [1, 2, 3, 4]


# ---------------------------------------------------------------------------- overlap


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_slow_call_does_not_delay_a_fast_one(tmp_path: Path, framing: str) -> None:
    release = tmp_path / "release"
    with inproc.wire_host(tmp_path, framing) as h:
        h.send(_call_msg("slow", "wait_for_file", {"path": str(release), "side": str(tmp_path)}))
        wait_until(lambda: (tmp_path / "waiting").exists(), what="slow call start")
        fast = json.loads(text_of(h.call("stamp", {"delay": 0})))
        fast_sync = text_of(h.call("echo_sync", {"text": "quick"}))
        assert fast_sync == "quick"
        release.touch()
        slow = json.loads(text_of(h.recv_response("slow")))
        # from the tools' own clocks: the fast call ran entirely inside the slow one
        assert slow["start"] < fast["start"] <= fast["end"] < slow["end"]


# ---------------------------------------------------------------------------- worker threads


def test_reading_and_answering_go_on_with_200_blocked_sync_handlers(tmp_path: Path) -> None:
    with wire_host(tmp_path, args=ONE_WORKER) as h:
        for i in range(200):
            h.send(_call_msg(f"g{i}", "gate", {"timeout": 60}))
        wait_until(
            lambda: text_of(h.call("gate_waiting")) == "200", timeout=30, what="200 blocked threads"
        )
        assert h.request("ping")["result"] == {}
        assert text_of(h.call("echo", {"text": "async still answers"})) == "async still answers"
        h.call("open_gate")
        results = [h.recv_response(f"g{i}", timeout=30) for i in range(200)]
        assert all(text_of(r) == "1" for r in results)


def test_eof_exits_promptly_with_blocked_sync_handlers(tmp_path: Path) -> None:
    with wire_host(tmp_path, args=ONE_WORKER) as h:
        for i in range(50):
            h.send(_call_msg(f"g{i}", "gate", {"timeout": 60}))
        wait_until(lambda: text_of(h.call("gate_waiting")) == "50", timeout=30)
        t0 = time.monotonic()
        h.close_stdin()
        assert exits_within(h) == 0
        assert time.monotonic() - t0 < PROMPT


# ---------------------------------------------------------------------------- timeouts


@pytest.mark.parametrize("framing", FRAMINGS)
def test_per_tool_timeout_cancels_and_says_so(tmp_path: Path, framing: str) -> None:
    with inproc.wire_host(tmp_path, framing) as h:
        r = h.call("sleepy", {"seconds": 30, "side": str(tmp_path)})["result"]
        assert r["isError"] is True
        assert "timed out after 2 seconds" in r["content"][0]["text"]
        # answered at the timeout's moment; the handler may finish unwinding after it
        wait_until(lambda: (tmp_path / "sleepy.cancelled").exists(), 60, what="handler cancelled")
        r = h.call("sleepy_sync", {"seconds": 30})["result"]
        assert r["isError"] is True and "timed out" in r["content"][0]["text"]
        assert h.request("ping")["result"] == {}
        assert text_of(h.call("sleepy", {"seconds": 0, "side": str(tmp_path)})) == "slept"


def test_host_default_timeout(tmp_path: Path) -> None:
    # Timeouts of seconds, not tenths: the calls of 0 s must finish within them even
    # when a loaded machine takes a while to dispatch a call.
    with inproc.wire_host(tmp_path, args=["--timeout", "3"]) as h:
        r = h.call("sleep_default", {"seconds": 30})["result"]
        assert r["isError"] is True
        assert "timed out after 3 seconds" in r["content"][0]["text"]
        # the per-tool override wins over the host default
        r = h.call("sleepy", {"seconds": 30, "side": str(tmp_path)})["result"]
        assert "timed out after 2 seconds" in r["content"][0]["text"]
        assert text_of(h.call("sleep_default", {"seconds": 0})) == "slept"


# ---------------------------------------------------------------------------- ending


def _start_running_work(h: HostProcess, side: Path) -> int:
    h.send(_call_msg("b", "block", {"name": "b", "side": str(side)}))
    h.send(_call_msg("c", "spawn_child", {"side": str(side)}))
    wait_until(lambda: (side / "b.started").exists() and (side / "child.pid").exists())
    pid = int((side / "child.pid").read_text())
    assert _pid_alive(pid)
    return pid


@pytest.mark.parametrize("how", ["eof", "sigterm"])
def test_eof_or_sigterm_cancels_calls_ends_children_and_exits_0(tmp_path: Path, how: str) -> None:
    # The grandchild's pid is read from a file the tool writes: in-process, so that it is
    # a pid of the host's namespace (a sandboxed worker has a PID namespace of its own,
    # which ends with it).
    with wire_host(tmp_path, args=IN_PROCESS) as h:
        child = _start_running_work(h, tmp_path)
        t0 = time.monotonic()
        if how == "eof":
            h.close_stdin()
        else:
            h.proc.send_signal(signal.SIGTERM)
        assert exits_within(h) == 0
        assert time.monotonic() - t0 < PROMPT
        assert (tmp_path / "b.cancelled").exists()  # the handler was interrupted
        wait_until(lambda: not _pid_alive(child), timeout=PROMPT, what="grandchild ended")
        if how == "sigterm":
            # no replies for the cancelled calls: only what was sent before
            assert not [m for m in h.drain() if isinstance(m, dict) and m.get("id") in ("b", "c")]


def test_a_handler_that_refuses_cancellation_cannot_hold_the_host(tmp_path: Path) -> None:
    with wire_host(tmp_path) as h:
        h.send(_call_msg("s", "shielded", {"side": str(tmp_path)}))
        wait_until(lambda: (tmp_path / "shielded.started").exists())
        t0 = time.monotonic()
        h.close_stdin()
        assert exits_within(h) == 0
        assert time.monotonic() - t0 < PROMPT

"""End to end: stopped idle workers are replaced, and a module that keeps crashing its
workers is marked broken (host/workers/health.py, protocol.md §12).

A worker stopped with SIGSTOP while idle would hold every call sent to it until the
call's timeout; the host checks a worker idle for a while before it sends it a call, and
replaces it when it is stopped or does not answer a heartbeat. A tool that crashes its
worker each time makes the module broken after the crash budget, said in a log message
and in the error of every later call, instead of a restart loop.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

from toolwire.host.workers.health import CRASH_LIMIT, IDLE_CHECK

from tests.e2e_helpers import PROMPT, wait_until
from tests.hostproc import HostProcess
from tests.workers_support import (
    call_msg,
    text_of_result,
    wait_for_message,
    worker_host,
    worker_pids,
)

CALL_TIMEOUT = 60
"""The call timeout of the host under test (seconds): a call held by a stopped worker
would be answered with the timeout error after it."""


_READY = re.compile(r"worker \S+ #\d+ ready in \d+ ms \(pid (\d+)\)")


def _ready_pids(h: HostProcess, count: int) -> list[int]:
    """Pids from the host's ``worker ... ready`` log lines, once ``count`` are there."""
    found = wait_until(
        lambda: len(m := _READY.findall(h.stderr)) >= count and m,
        PROMPT,
        f"{count} 'worker ... ready' log lines",
    )
    return [int(pid) for pid in found]


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    out = [pid]
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            for child in (task / "children").read_text().split():
                out += _tree(int(child))
    return out


def _is_log(level: str) -> Any:
    def pred(m: Any) -> bool:
        return (
            isinstance(m, dict)
            and m.get("method") == "notifications/message"
            and m["params"].get("level") == level
        )

    return pred


def test_a_stopped_idle_worker_is_replaced_before_it_gets_a_call(tmp_path: Path) -> None:
    args = ["--workers", "2", "--timeout", str(CALL_TIMEOUT), "--log-level", "info"]
    with worker_host(tmp_path, "process", args) as h:
        # warm up both workers with concurrent calls
        for i in range(4):
            h.send(call_msg(f"w{i}", "hello", {"name": f"w{i}"}))
        for i in range(4):
            assert text_of_result(h.recv_response(f"w{i}", timeout=PROMPT)["result"])
        first = _ready_pids(h, 2)[0]
        stopped = _tree(first)  # the worker (and under a sandbox, bubblewrap too)
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        try:
            # The workers stay idle for longer than the check interval (a property of
            # the scenario, not a wait for an event).
            time.sleep(IDLE_CHECK * 1.5)
            ids = [f"b{i}" for i in range(10)]
            for i in ids:
                h.send(call_msg(i, "hello", {"name": i}))
            for i in ids:
                # Each answered long before the call timeout would have fired.
                r = h.recv_response(i, timeout=CALL_TIMEOUT / 3)["result"]
                assert text_of_result(r) == f"hello {i}", r
            h.expect_stderr("found stopped")
        finally:
            for pid in stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)


def test_a_module_that_keeps_crashing_is_marked_broken(tmp_path: Path) -> None:
    with worker_host(tmp_path, "process", ["--workers", "1"]) as h:
        h.drain()
        for _i in range(CRASH_LIMIT):
            r = h.call("hard_exit", {"code": 3}, timeout=PROMPT)["result"]
            assert r.get("isError") is True, r
            assert "exit code 3" in text_of_result(r), r
        note = wait_for_message(h, _is_log("error"), PROMPT, "the log message about the crashes")
        said = str(note["params"]["data"])
        assert "worker_tools" in said and "crashed" in said, note
        # The next calls fail at once, naming the module and why; no new worker.
        for _ in range(2):
            r = h.call("hello", timeout=PROMPT)["result"]
            assert r.get("isError") is True, r
            text = text_of_result(r)
            assert "worker_tools" in text and f"crashed {CRASH_LIMIT} times" in text, text
        # The last crashed worker may not be reaped yet when the error result is read.
        wait_until(lambda: not worker_pids(tmp_path), PROMPT, "no worker process left")
        names = {t["name"] for t in h.request("tools/list", timeout=PROMPT)["result"]["tools"]}
        assert "hello" in names  # still listed: its calls say why they fail
        assert h.request("ping", timeout=PROMPT)["result"] == {}


_READY_MS = re.compile(r"worker \S+ #\d+ ready in (\d+) ms")


def test_after_one_crash_the_next_call_is_served_without_a_pause(tmp_path: Path) -> None:
    # One crash costs a restart, not a pause (RESTART_BACKOFF starts at 0): the call
    # after it waits for its new worker to start and for nothing else. What is left of
    # its duration once the worker's own start-up (as the host measured it, "ready in
    # N ms") and a call's round trip (the next call, measured here) are taken away is
    # the pause; compared with the start-up, so the bound holds on a loaded machine,
    # while a pause of seconds after one crash does not fit in it.
    with worker_host(tmp_path, "process", ["--workers", "1", "--log-level", "info"]) as h:
        _ready_pids(h, 1)
        r = h.call("hard_exit", {"code": 3}, timeout=PROMPT)["result"]
        assert r.get("isError") is True and "exit code 3" in text_of_result(r), r
        began = time.monotonic()
        r = h.call("hello", {"name": "again"}, timeout=60)["result"]
        took = time.monotonic() - began
        assert text_of_result(r) == "hello again", r
        began = time.monotonic()
        assert text_of_result(h.call("hello", timeout=PROMPT)["result"]) == "hello world"
        round_trip = time.monotonic() - began
        found = wait_until(
            lambda: len(m := _READY_MS.findall(h.stderr)) >= 2 and m,
            PROMPT,
            "the replacement's 'worker ... ready' log line",
        )
        start_up = int(found[1]) / 1000
        pause = took - start_up - round_trip
        assert pause < 0.5 * start_up + 1.0, (pause, took, start_up, round_trip, h.stderr)


WEDGING = '''
import asyncio
import time

from toolwire.host import tool


@tool
async def wedge() -> str:
    """Return at once, then block this worker's event loop for an hour."""
    asyncio.get_running_loop().call_later(0.05, time.sleep, 3600)
    return "wedged"


@tool
async def hello(name: str) -> str:
    """Say hello."""
    return f"hello {name}"
'''


def test_a_wedged_idle_worker_is_replaced_before_it_gets_a_call(tmp_path: Path) -> None:
    module = tmp_path / "wedging.py"
    module.write_text(WEDGING)
    args = ["--workers", "1", "--timeout", str(CALL_TIMEOUT)]
    with worker_host(tmp_path, "process", args, tools=[str(module)]) as h:
        r = h.call("wedge", {}, timeout=PROMPT)["result"]
        assert text_of_result(r) == "wedged", r
        # The worker stays idle (and wedged) for longer than the check interval.
        time.sleep(IDLE_CHECK * 1.5)
        ids = [f"b{i}" for i in range(5)]
        for i in ids:
            h.send(call_msg(i, "hello", {"name": i}))
        for i in ids:
            r = h.recv_response(i, timeout=CALL_TIMEOUT / 3)["result"]
            assert text_of_result(r) == f"hello {i}", r
        h.expect_stderr("did not answer a heartbeat")

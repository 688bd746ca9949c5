"""Protocol fidelity with real clients' habits (issue 27, "Protocol"), through the real host.

* a client that speaks only MCP 2026-07-28 gets no notification tied to no request: no
  log record of a ``--reload``, no untagged ``list_changed``, no count of dropped logs;
* ``"params": null`` counts as absent, for requests and notifications (``exit``), in
  both framings and both eras;
* a call carrying LSP's ``workDoneToken`` gets LSP ``$/progress`` (begin, reports, end);
* ``"arguments": []`` (Neovim's empty Lua table) is ``{}``; nothing else is;
* a host whose client closes stdin without ``shutdown``/``exit`` (Neovim 0.7's ``:qa!``)
  ends by itself, promptly, and leaves no worker process behind.

Raw JSON-RPC: the protocol rules (``params: null``, ``workDoneToken``, ``arguments: []``)
to the host in process (tests/inproc.py); a reload, a client that stops reading (a real
pipe filling up) and the end of stdin to a spawned host (tests/hostproc.py).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests import inproc
from tests.e2e_helpers import PROMPT, wait_until
from tests.hostproc import HOST_COMMAND, REPO, TOOLS_DIR, HostProcess
from tests.workers_support import (
    WORKER_TOOLS,
    host_args,
    is_method,
    wait_for_message,
    worker_pids,
)

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SUB = "io.modelcontextprotocol/subscriptionId"
FRAMINGS = ["ndjson", "lsp"]


def meta(**extra: Any) -> dict[str, Any]:
    return {PV: V, CAPS: {}, **extra}


def modern(
    h: HostProcess | inproc.InProcHost, method: str, params: dict[str, Any] | None = None
) -> Any:
    body = dict(params or {})
    body.setdefault("_meta", meta())
    return h.request(method, body, timeout=PROMPT)


# --------------------------------------------------------------------------- unsolicited

RELOADED = '''
from toolwire.host import tool


@tool
async def first() -> str:
    """The first tool."""
    return "first"
'''

SECOND = '''

@tool
async def second() -> str:
    """A tool added while the host runs."""
    return "second"
'''


def _untagged_or_log(m: Any) -> bool:
    """A notification a 2026-07-28 client must not get unasked: a log record, or a
    list change outside its ``subscriptions/listen`` stream."""
    if not isinstance(m, dict):
        return False
    if m.get("method") == "notifications/message":
        return True
    params = m.get("params") or {}
    return m.get("method") == "notifications/tools/list_changed" and SUB not in params.get(
        "_meta", {}
    )


def test_reload_sends_a_modern_only_client_nothing_unasked(tmp_path: Path) -> None:
    module = tmp_path / "reload_me.py"
    module.write_text(RELOADED)
    with HostProcess(host_args(tmp_path, "process", [str(module)], "--reload")) as h:
        assert [t["name"] for t in modern(h, "tools/list")["result"]["tools"]] == ["first"]
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "sub",
                "method": "subscriptions/listen",
                "params": {"_meta": meta(), "notifications": {"toolsListChanged": True}},
            }
        )
        wait_for_message(
            h, is_method("notifications/subscriptions/acknowledged"), PROMPT, "the ack"
        )

        # a broken save: the host says so on stderr (and to 2025-11-25 sessions only)
        module.write_text(RELOADED + "\ndef broken(:\n")
        wait_until(
            lambda: "Reloading" in h.stderr and "failed" in h.stderr,
            PROMPT,
            "the failed reload on stderr",
        )
        # a good save: the listen stream hears of it
        module.write_text(RELOADED + SECOND)
        wait_for_message(
            h, is_method("notifications/tools/list_changed"), PROMPT, "the tagged list_changed"
        )
        names = {t["name"] for t in modern(h, "tools/list")["result"]["tools"]}
        assert names == {"first", "second"}
        seen = h.drain()
        assert [m for m in seen if _untagged_or_log(m)] == [], seen

        # the same connection, once it speaks 2025-11-25, gets the host's log records
        assert "result" in h.initialize()
        module.write_text(RELOADED + "\ndef broken_again(:\n")
        note = wait_for_message(
            h, is_method("notifications/message"), PROMPT, "the log record of a failed reload"
        )
        assert note["params"]["level"] == "error", note


class _PausedHost:
    """The host as a subprocess whose stdout the test reads only once it says so (its
    stderr goes to a file the test can watch)."""

    def __init__(self, root: Path, *args: str) -> None:
        self.err_path = root.parent / f"{root.name}.stderr"
        self._err = self.err_path.open("wb")
        self.proc = subprocess.Popen(
            [*HOST_COMMAND, "--root", str(root), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            cwd=str(REPO),
            env=dict(os.environ, PYTHONSAFEPATH="1"),
        )
        self.messages: queue.Queue[Any] = queue.Queue()

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def read_line(self) -> Any:
        assert self.proc.stdout is not None
        return json.loads(self.proc.stdout.readline())

    def start_reading(self) -> None:
        def run() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.messages.put(json.loads(line))
            self.messages.put(None)

        threading.Thread(target=run, daemon=True).start()

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self._err.close()


def test_a_modern_client_gets_no_count_of_dropped_logs(tmp_path: Path) -> None:
    """Logs a 2026-07-28 request asked for are dropped while the client does not read;
    the count of them is on stderr, never an unsolicited ``notifications/message``."""
    root = tmp_path / "root"
    root.mkdir()
    host = _PausedHost(root, "--tools", str(TOOLS_DIR / "flood_tools.py"), "--isolation", "none")
    try:
        host.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}})
        assert "result" in host.read_line()
        marker = tmp_path / "count"
        host.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "_meta": meta(**{LOG_LEVEL: "info"}),
                    "name": "flood",
                    "arguments": {"n": 10**9, "marker": str(marker)},
                },
            }
        )
        # the client reads nothing while the tool logs far more than the pipe holds
        wait_until(
            lambda: marker.exists() and int(marker.read_text() or 0) >= 20_000,
            300,
            "20,000 rounds of the flood",
        )
        host.start_reading()
        wait_until(lambda: "log messages" in host.stderr(), PROMPT, "the dropped count on stderr")
        host.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}}
        )
        host.send(
            {"jsonrpc": "2.0", "id": "p", "method": "tools/list", "params": {"_meta": meta()}}
        )
        notes = []
        while True:
            msg = host.messages.get(timeout=PROMPT)
            assert msg is not None, "the host closed stdout"
            if msg.get("id") == "p":
                break
            if msg.get("method") == "notifications/message":
                notes.append(msg["params"])
        # the request's own log records (it asked for them), and nothing else
        assert notes, "no log record of the flood reached the client"
        assert all(str(n["data"]).startswith("line ") for n in notes), [
            n for n in notes if not str(n["data"]).startswith("line ")
        ]
    finally:
        host.close()


# --------------------------------------------------------------------------- params: null


@pytest.mark.parametrize("framing", FRAMINGS)
def test_null_params_count_as_absent(tmp_path: Path, framing: str) -> None:
    with inproc.wire_host(tmp_path, framing) as h:
        for method, expected in [("ping", {}), ("tools/list", None), ("logging/setLevel", None)]:
            h.send({"jsonrpc": "2.0", "id": method, "method": method, "params": None})
            resp = h.recv_response(method)
            if method == "logging/setLevel":  # as without params: the level is missing
                assert resp["error"]["code"] == -32602, resp
            else:
                assert "result" in resp, resp
                if expected is not None:
                    assert resp["result"] == expected
        # tools/call without params is refused for its missing name, not for the null
        h.send({"jsonrpc": "2.0", "id": "call", "method": "tools/call", "params": None})
        assert h.recv_response("call")["error"]["code"] == -32602
        # 2026-07-28: server/discover with null params has no envelope: -32602
        h.send({"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": None})
        assert h.recv_response("d")["error"]["code"] == -32602
        # a notification with null params is handled: initialized, then exit
        h.send({"jsonrpc": "2.0", "method": "notifications/initialized", "params": None})
        h.send({"jsonrpc": "2.0", "id": "down", "method": "shutdown", "params": None})
        assert h.recv_response("down")["result"] is None
        h.send({"jsonrpc": "2.0", "method": "exit", "params": None})
        assert h.wait(timeout=PROMPT) == 0  # exit after shutdown: code 0, stdin still open
        errors = [m for m in h.drain() if isinstance(m, dict) and "error" in m]
        assert errors == [], errors


# --------------------------------------------------------------------------- LSP progress


def _work_done(messages: list[Any], token: Any) -> list[dict[str, Any]]:
    return [
        m["params"]["value"]
        for m in messages
        if isinstance(m, dict)
        and m.get("method") == "$/progress"
        and m["params"].get("token") == token
    ]


def _call_until_answered(
    h: HostProcess | inproc.InProcHost, id: Any, params: dict[str, Any]
) -> tuple[Any, list[Any]]:
    """Send a tools/call; its response and every message before it, in order."""
    h.send({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
    before = []
    while True:
        m = h.recv(timeout=PROMPT)
        assert m is not None, h.stderr
        if isinstance(m, dict) and m.get("id") == id and "method" not in m:
            return m, before
        before.append(m)


@pytest.mark.parametrize("isolation", ["none", "process"])
def test_work_done_token_gets_lsp_progress(tmp_path: Path, isolation: str) -> None:
    with inproc.wire_host(tmp_path, "lsp", ["--isolation", isolation]) as h:
        resp, before = _call_until_answered(
            h, 7, {"name": "progress", "arguments": {"n": 3}, "workDoneToken": "wd-1"}
        )
        assert resp["result"]["content"][0]["text"] == "done", resp
        values = _work_done(before, "wd-1")
        assert values[0] == {"kind": "begin", "title": "progress"}, values
        assert values[-1] == {"kind": "end"}, values
        reports = values[1:-1]
        assert [v["kind"] for v in reports] == ["report"] * len(reports)
        assert reports, values
        percentages = [v["percentage"] for v in reports]
        assert percentages == sorted(percentages) and percentages[-1] == 100, values
        assert all(0 <= p <= 100 and type(p) is int for p in percentages)
        assert reports[-1]["message"] == "step 3"
        # no MCP progress without a progressToken
        assert [m for m in before if m.get("method") == "notifications/progress"] == []

        # a call whose tool reports nothing: begin and end
        resp, before = _call_until_answered(
            h, 8, {"name": "echo", "arguments": {"text": "x"}, "workDoneToken": 9}
        )
        assert "result" in resp
        assert _work_done(before, 9) == [{"kind": "begin", "title": "echo"}, {"kind": "end"}]


def test_work_done_token_of_an_lsp_initialize_over_ndjson(tmp_path: Path) -> None:
    with inproc.wire_host(tmp_path, "ndjson", initialize=False) as h:
        # an MCP client over ndjson: workDoneToken is not its dialect
        resp, before = _call_until_answered(
            h, 1, {"name": "progress", "arguments": {"n": 1}, "workDoneToken": "t"}
        )
        assert "result" in resp and _work_done(before, "t") == []
        assert "result" in h.request("initialize", {"processId": None, "capabilities": {}})
        resp, before = _call_until_answered(
            h, 2, {"name": "progress", "arguments": {"n": 1}, "workDoneToken": "t"}
        )
        kinds = [v["kind"] for v in _work_done(before, "t")]
        assert kinds == ["begin", "report", "end"], before


# --------------------------------------------------------------------------- arguments: []


@pytest.mark.parametrize("framing", FRAMINGS)
def test_empty_array_arguments_are_an_empty_object(tmp_path: Path, framing: str) -> None:
    with inproc.wire_host(tmp_path, framing) as h:
        resp = h.call("gate_waiting", [])
        assert resp["result"]["content"][0]["text"] == "0", resp
        # 2026-07-28 too
        resp = modern(h, "tools/call", {"name": "gate_waiting", "arguments": []})
        assert resp["result"]["content"][0]["text"] == "0", resp
        # a batch call's arguments
        batch = h.request(
            "tools/callBatch", {"calls": [{"id": "a", "name": "gate_waiting", "arguments": []}]}
        )["result"]
        assert "isError" not in batch["results"][0]["result"], batch
        # nothing else counts as an object
        for bad in ([1], "", 0, [{}]):
            resp = h.call("gate_waiting", bad)
            assert resp["error"]["code"] == -32602, (bad, resp)
        # a required argument is still required
        resp = h.call("echo", [])
        assert resp["result"]["isError"] is True, resp


# --------------------------------------------------------------------------- end of input


def test_stdin_closed_without_exit_ends_the_host_and_its_workers(tmp_path: Path) -> None:
    """Neovim 0.7's ``:qa!``: LSP framing, ``shutdown`` maybe, never ``exit``; the editor
    then waits 500 ms. The host must end by itself (no signal), well before that: here,
    in less time than its own start took (which started its worker processes), while a
    call runs in one worker and another worker is being replaced after a crash."""
    started = time.monotonic()
    h = HostProcess(host_args(tmp_path, "process", [WORKER_TOOLS], "--workers", "2"), framing="lsp")
    try:
        resp = h.request("initialize", {"processId": None, "capabilities": {}})
        assert "result" in resp, h.stderr
        start_took = time.monotonic() - started
        assert worker_pids(tmp_path), "no worker process running"
        crashed = h.call("segfault", {}, timeout=PROMPT)
        assert crashed["result"]["isError"] is True, crashed
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "held",
                "method": "tools/call",
                "params": {
                    "name": "hold",
                    "arguments": {"seconds": 600},
                    "_meta": {"progressToken": "held"},
                },
            }
        )
        wait_for_message(
            h,
            lambda m: isinstance(m, dict) and m.get("method") == "notifications/progress",
            PROMPT,
            "the held call running",
        )
        h.send({"jsonrpc": "2.0", "id": "down", "method": "shutdown"})
        closed = time.monotonic()
        h.close_stdin()
        code = h.proc.wait(timeout=PROMPT)
        took = time.monotonic() - closed
    finally:
        h.close()
    assert code == 0, h.stderr  # not signalled, not the watchdog's exit
    assert "exiting now" not in h.stderr, h.stderr  # the watchdog's last resort not needed
    # The held call was cancelled by the end of input: one line says so.
    ended = [line for line in h.stderr.splitlines() if "input ended with" in line]
    assert len(ended) == 1 and "'held'" in ended[0] and "cancelled" in ended[0], h.stderr
    assert took < start_took, (took, start_took)
    wait_until(lambda: worker_pids(tmp_path) == [], PROMPT, "no worker left behind")


GATED = '''
import os
import time

from toolwire.host import tool

if os.path.exists(MARK_DIR + "/gated"):
    with open(MARK_DIR + "/importing", "w"):
        pass
    while not os.path.exists(MARK_DIR + "/gate.open"):  # never opened: the import hangs
        time.sleep(0.05)


@tool
async def hello() -> str:
    """Say hello."""
    return "hello"
'''


def test_stdin_closed_while_a_reload_is_starting_its_workers(tmp_path: Path) -> None:
    """End of input while ``--reload`` starts a new generation whose import never ends:
    the host does not wait for that start (nor for its watchdog), it ends by itself and
    the half-started workers with it."""
    marks = tmp_path / "marks"
    marks.mkdir()
    module = tmp_path / "gated_tools.py"
    source = GATED.replace("MARK_DIR", repr(str(marks)))
    module.write_text(source)
    started = time.monotonic()
    h = HostProcess(host_args(tmp_path, "process", [str(module)], "--reload"), framing="lsp")
    try:
        assert "result" in h.request("initialize", {"processId": None, "capabilities": {}})
        start_took = time.monotonic() - started
        (marks / "gated").touch()
        module.write_text(source + "\n# saved again\n")
        wait_until(lambda: (marks / "importing").exists(), PROMPT, "the new generation importing")
        h.send({"jsonrpc": "2.0", "id": "down", "method": "shutdown"})
        closed = time.monotonic()
        h.close_stdin()
        code = h.proc.wait(timeout=PROMPT)
        took = time.monotonic() - closed
    finally:
        h.close()
    assert code == 0, h.stderr
    assert "exiting now" not in h.stderr, h.stderr
    assert took < start_took, (took, start_took)
    wait_until(lambda: worker_pids(tmp_path) == [], PROMPT, "no worker left behind")

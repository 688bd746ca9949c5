"""A tools/call of a worker's tool is sent to the worker as the host reads it, while the
request waits for its turn in the host, when nothing in the host must see the call
first. These tests hold what must not change: before hooks and approval still come
first, progress and timeouts still work, a cancelled call still stops. The host's debug
log names each call sent early, the positive control of every negative test here."""

from __future__ import annotations

import collections
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.e2e_helpers import text_of
from tests.hostproc import TOOLS_DIR, HostProcess

EARLY_TOOLS = str(TOOLS_DIR / "early_tools.py")
SENT_EARLY = "sent to its worker as it was read"


@contextmanager
def early_host(
    tmp_path: Path, *args: str, capabilities: dict[str, Any] | None = None
) -> Iterator[HostProcess]:
    argv = ["--root", str(tmp_path), "--no-builtins", "--no-entry-points"]
    argv += ["--tools", EARLY_TOOLS, "--log-level", "debug", *args]
    with HostProcess(argv, cwd=tmp_path) as h:
        h.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities or {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        )
        h.notify("notifications/initialized")
        for _ in range(5):  # the module's calls are now known to be quick
            assert text_of(h.call("quick")) == "ok"
        yield h


def _early_lines(h: HostProcess, tool: str) -> int:
    return sum(1 for line in h.stderr.splitlines() if SENT_EARLY in line and tool in line)


def _wait_for_log(h: HostProcess, tool: str, count: int) -> None:
    deadline = time.monotonic() + 60
    while _early_lines(h, tool) < count and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_plain_call_is_sent_early_and_answered_as_usual(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    with early_host(tmp_path) as h:
        assert text_of(h.call("note_freely", {"word": "one", "path": str(path)})) == "noted one"
        assert text_of(h.call("note_freely", {"word": "two", "path": str(path)})) == "noted two"
        _wait_for_log(h, "note_freely", 2)
        assert _early_lines(h, "note_freely") == 2, h.stderr
    assert path.read_text() == "one\ntwo\n"


def test_a_before_hook_still_sees_the_call_before_the_worker_runs_it(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    with early_host(tmp_path) as h:
        blocked = h.call("note", {"word": "forbidden", "path": str(path)})["result"]
        assert blocked["isError"] is True
        assert "forbidden here" in text_of({"result": blocked})
        assert text_of(h.call("note", {"word": "fine", "path": str(path)})) == "noted fine"
        # control: the same call of a tool without a hook is sent early and runs
        h.call("note_freely", {"word": "forbidden", "path": str(tmp_path / "free.txt")})
        _wait_for_log(h, "note_freely", 1)
        assert _early_lines(h, "note_freely") == 1, h.stderr
        assert _early_lines(h, "note") == _early_lines(h, "note_freely")  # none for "note"
    assert path.read_text() == "fine\n"
    assert (tmp_path / "free.txt").read_text() == "forbidden\n"


def test_a_call_that_needs_approval_never_starts_before_it(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    # No approval capability: the host denies the call itself.
    with early_host(tmp_path, "--approve", "touch_note") as h:
        denied = h.call("touch_note", {"word": "early", "path": str(path)})["result"]
        assert denied["isError"] is True
        h.call("note_freely", {"word": "control", "path": str(tmp_path / "free.txt")})
        _wait_for_log(h, "note_freely", 1)
        assert _early_lines(h, "note_freely") == 1, h.stderr
        assert _early_lines(h, "touch_note") == 0, h.stderr
    assert not path.exists()


def test_invalid_arguments_are_not_sent(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    with early_host(tmp_path) as h:
        bad = h.call("note_freely", {"word": "no path"})["result"]
        assert bad["isError"] is True
        assert "Invalid arguments" in text_of({"result": bad})
        assert _early_lines(h, "note_freely") == 0, h.stderr
    assert not path.exists()


def test_progress_of_a_call_sent_early_reaches_the_client(tmp_path: Path) -> None:
    with early_host(tmp_path) as h:
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "p",
                "method": "tools/call",
                "params": {"name": "steps", "arguments": {"n": 3}, "_meta": {"progressToken": 7}},
            }
        )
        resp = h.recv_response("p")
        assert text_of(resp) == "3 steps"
        progress = [
            m["params"]["progress"]
            for m in h.drain()
            if m.get("method") == "notifications/progress" and m["params"]["progressToken"] == 7
        ]
        _wait_for_log(h, "steps", 1)
        assert _early_lines(h, "steps") == 1, h.stderr
    assert progress == [1, 2, 3]


def test_the_timeout_of_a_call_sent_early_still_fires(tmp_path: Path) -> None:
    with early_host(tmp_path) as h:
        started = time.monotonic()
        r = h.call("overstay", timeout=20)["result"]
        took = time.monotonic() - started
        assert r["isError"] is True
        assert "timed out after 0.3 seconds" in text_of({"result": r})
        assert 0.3 <= took < 15, took  # well before the handler's 30 s sleep ends
        _wait_for_log(h, "overstay", 1)
        assert _early_lines(h, "overstay") == 1, h.stderr
        assert text_of(h.call("quick")) == "ok"


def test_a_call_cancelled_as_it_is_read_stops_in_its_worker(tmp_path: Path) -> None:
    with early_host(tmp_path) as h:
        # The call and its cancellation in one write: read together, before the
        # request's turn in the host comes.
        h.send_raw(
            b'{"jsonrpc":"2.0","id":"c","method":"tools/call",'
            b'"params":{"name":"overstay","arguments":{}}}\n'
            b'{"jsonrpc":"2.0","method":"notifications/cancelled",'
            b'"params":{"requestId":"c","reason":"changed my mind"}}\n'
        )
        assert text_of(h.call("quick", timeout=60)) == "ok"
        _wait_for_log(h, "overstay", 1)
        assert _early_lines(h, "overstay") == 1, h.stderr
        # An event past the 0.3 s timeout the cancelled call would have had: the timeout
        # of the same call sent after it (had "c" run on, its timeout came first).
        later = h.call("overstay", timeout=60)["result"]
        assert "timed out after 0.3 seconds" in text_of({"result": later}), later
        leftovers = [m for m in h.drain() if isinstance(m, dict) and m.get("id") == "c"]
        assert leftovers == []  # MCP: nothing is sent for a cancelled request
        assert "did not stop" not in h.stderr  # the worker stopped it; nobody was killed
        assert text_of(h.call("quick")) == "ok"


def test_a_call_cancelled_while_its_worker_runs_it_stops_there(tmp_path: Path) -> None:
    """An early call's request waits in the host for its worker's answer without a task
    of its own; the client's cancellation still reaches the worker at once."""
    marker = tmp_path / "linger.txt"
    with early_host(tmp_path) as h:
        h.send_raw(
            b'{"jsonrpc":"2.0","id":"m","method":"tools/call","params":{"name":"linger",'
            b'"arguments":{"path":' + json.dumps(str(marker)).encode() + b"}}}\n"
        )
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert marker.exists(), h.stderr
        h.notify("notifications/cancelled", {"requestId": "m", "reason": "no longer needed"})
        # Well before the handler's 60 s sleep would end.
        while "cancelled" not in marker.read_text() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert marker.read_text() == "started cancelled\n", h.stderr
        assert text_of(h.call("quick", timeout=60)) == "ok"
        assert _early_lines(h, "linger") == 1, h.stderr
        leftovers = [m for m in h.drain() if isinstance(m, dict) and m.get("id") == "m"]
        assert leftovers == []  # MCP: nothing is sent for a cancelled request


_RELOADED = '''from pathlib import Path
from toolwire.host import tool{imports}


@tool
async def quick() -> str:
    """Answer at once."""
    return "ok"


@tool
async def note_freely(word: str, path: str) -> str:
    """Append the word to the file at path."""
    with Path(path).open("a") as f:
        f.write(word + "\\n")
    return f"noted {{word}}"
{hook}'''

_NEW_HOOK = '''

@before_tool_call(tools=["note_freely"])
def deny(call, args, ctx):
    """Block every call from now on."""
    return Block("blocked by the new hook")
'''


def test_a_reload_under_load_never_runs_a_call_twice_or_past_a_new_hook(
    tmp_path: Path,
) -> None:
    """Calls sent early to the old generation's worker, whose request's turn comes after
    the reload swapped the registry and its hooks in: each runs once, on the generation
    it was read under (found by a trial: re-sent to the new generation, or blocked by the
    new hook after the old worker had run it)."""
    module = tmp_path / "reloaded_tools.py"
    module.write_text(_RELOADED.format(imports="", hook=""))
    path = tmp_path / "notes.txt"
    argv = ["--root", str(tmp_path), "--no-builtins", "--no-entry-points"]
    argv += ["--tools", str(module), "--reload"]
    with HostProcess(argv, cwd=tmp_path) as h:
        h.initialize()
        for _ in range(5):
            assert text_of(h.call("quick")) == "ok"
        sent: list[int] = []
        stop = threading.Event()

        def bursts() -> None:
            n = 0
            while not stop.is_set():
                h.send_raw(
                    b"".join(
                        json.dumps(
                            {
                                "jsonrpc": "2.0",
                                "id": i,
                                "method": "tools/call",
                                "params": {
                                    "name": "note_freely",
                                    "arguments": {"word": f"w{i}", "path": str(path)},
                                },
                            }
                        ).encode()
                        + b"\n"
                        for i in range(n, n + 500)
                    )
                )
                sent.extend(range(n, n + 500))
                n += 500
                # at most ~1,000 calls in flight: the host reaches the reload soon
                while len(sent) - len(answers) > 1000 and not stop.is_set():
                    time.sleep(0.01)

        # Paced by events, not by sleeps: the new module is written once the first
        # calls have answered, and the bursts stop once the new hook has answered one
        # (or after two minutes, when the reload never took effect: a failure below).
        answers: dict[int, dict[str, Any]] = {}  # before the sender reads it
        sender = threading.Thread(target=bursts)
        sender.start()
        reloaded = False
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                m = h.recv(timeout=30)
                if m is None:
                    break
                if not (isinstance(m, dict) and isinstance(m.get("id"), int)):
                    continue
                if "method" in m:
                    continue
                answers[m["id"]] = m
                if not reloaded:
                    replacement = tmp_path / "reloaded_tools.py.new"
                    replacement.write_text(
                        _RELOADED.format(imports=", Block, before_tool_call", hook=_NEW_HOOK)
                    )
                    replacement.replace(module)
                    reloaded = True
                elif "blocked by the new hook" in json.dumps(m.get("result")):
                    break
        finally:
            stop.set()
            sender.join()
        deadline = time.monotonic() + 120
        while set(sent) - set(answers) and time.monotonic() < deadline:
            m = h.recv(timeout=60)
            if m is None:
                break
            if isinstance(m, dict) and isinstance(m.get("id"), int) and "method" not in m:
                answers[m["id"]] = m
        answers = {i: m for i, m in answers.items() if i in set(sent)}
        assert len(answers) == len(sent), h.stderr[-2000:]
    ran = collections.Counter(int(w[1:]) for w in path.read_text().split())
    blocked = {
        i for i, m in answers.items() if "blocked by the new hook" in json.dumps(m.get("result"))
    }
    assert blocked, "the reload never took effect during the load"
    assert len(blocked) < len(sent), "no call ran before the reload"
    assert [i for i, times in ran.items() if times > 1] == []
    assert sorted(i for i in blocked if i in ran) == []
    assert set(ran) == set(sent) - blocked

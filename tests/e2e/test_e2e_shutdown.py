"""LSP ``shutdown`` then ``exit`` with calls in flight: every request gets exactly one
response before the host exits (protocol.md §3.4), in both framings.

Editors (Neovim on stop and on quit) send ``exit`` right after ``shutdown``, without
waiting for its answer; the calls in flight used to be killed unanswered.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.hostproc import TOOLS_DIR, HostProcess

SHUTDOWN_TOOLS = str(TOOLS_DIR / "shutdown_tools.py")
GRACE = 5.0  # toolwire.host.methods.server.SHUTDOWN_GRACE
SHORT_GRACE = 1.5
FRAMINGS = ["ndjson", "lsp"]


def _host(tmp_path: Path, framing: str, config: Path | None = None) -> HostProcess:
    extra = ["--config", str(config)] if config is not None else []
    host = HostProcess(
        ["--root", str(tmp_path), "--no-builtins", "--tools", SHUTDOWN_TOOLS, *extra],
        framing=framing,
    )
    host.initialize()
    return host


def _start_call(host: HostProcess, id: str, name: str, arguments: dict[str, Any]) -> None:
    """Send a call and wait until the tool runs (its first progress notification)."""
    host.send(
        {
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": {"progressToken": id}},
        }
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        msg = host.recv(timeout=30)
        assert msg is not None, host.stderr
        if msg.get("method") == "notifications/progress":
            if msg["params"]["progressToken"] == id:
                return
            continue
        host._stash.append(msg)
    raise AssertionError(f"{name} never started")


def _responses_until_exit(host: HostProcess, timeout: float = 60) -> tuple[int, list[Any]]:
    """Wait for the host to exit; its exit code and every response it wrote, in order."""
    code = host.wait(timeout=timeout)
    host._reader.join(timeout=10)
    messages = [m for m in host.drain() if isinstance(m, dict) and "method" not in m]
    return code, messages


def _exactly_once(responses: list[Any], ids: list[Any]) -> dict[Any, Any]:
    counts = Counter(r.get("id") for r in responses)
    assert counts == Counter(ids), f"responses per id: {counts}, expected each of {ids} once"
    return {r["id"]: r for r in responses}


@pytest.mark.parametrize("framing", FRAMINGS)
def test_exit_right_after_shutdown_waits_for_calls_that_end_within_the_grace(
    tmp_path: Path, framing: str
) -> None:
    host = _host(tmp_path, framing)
    try:
        _start_call(host, "a", "wait_async", {"seconds": 1.0})
        _start_call(host, "s", "wait_sync", {"seconds": 1.0})
        host.send({"jsonrpc": "2.0", "id": "down", "method": "shutdown"})
        host.send({"jsonrpc": "2.0", "id": "late", "method": "ping"})
        host.notify("exit")
        code, responses = _responses_until_exit(host)
    finally:
        host.close()
    by_id = _exactly_once(responses, ["a", "s", "down", "late"])
    assert by_id["a"]["result"]["content"][0]["text"] == "slept 1"
    assert by_id["s"]["result"]["content"][0]["text"] == "slept 1"
    assert by_id["down"]["result"] is None
    assert by_id["late"]["error"]["code"] == -32600
    order = [r["id"] for r in responses]
    # shutdown answers only once the calls in flight have been answered
    assert order.index("down") > max(order.index("a"), order.index("s"))
    assert code == 0


@pytest.mark.parametrize("framing", FRAMINGS)
def test_calls_running_past_the_grace_are_cancelled_and_answered_with_an_error(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, framing: str
) -> None:
    # A grace shorter than the default, from the configuration ([host] shutdown_grace):
    # what is cancelled past it is the same (the default is test_the_shutdown_grace_...).
    config = tmp_path_factory.mktemp("config") / "toolwire.toml"
    config.write_text(f"[host]\nshutdown_grace = {SHORT_GRACE}\n")
    host = _host(tmp_path, framing, config)
    try:
        _start_call(host, "a", "wait_async", {"seconds": 600})
        _start_call(host, "s", "wait_sync", {"seconds": 600})
        _start_call(host, "stubborn", "stubborn", {"seconds": 600})
        # would end within the default grace, not within this one
        _start_call(host, "w", "wait_async", {"seconds": 3.0})
        started = time.monotonic()
        host.send({"jsonrpc": "2.0", "id": 7, "method": "shutdown"})
        host.notify("exit")
        code, responses = _responses_until_exit(host)
        elapsed = time.monotonic() - started
    finally:
        host.close()
    by_id = _exactly_once(responses, ["a", "s", "stubborn", "w", 7])
    for id in ("a", "s", "stubborn", "w"):
        error = by_id[id]["error"]
        assert error["code"] == -32800, by_id[id]
        assert "shut down" in error["message"]
    assert by_id[7]["result"] is None
    assert [r["id"] for r in responses][-1] == 7
    assert code == 0
    assert elapsed >= SHORT_GRACE  # the calls were given their grace
    assert elapsed < SHORT_GRACE + 30  # and then not waited for (generous: a loaded machine)


@pytest.mark.parametrize("framing", FRAMINGS)
def test_exit_without_shutdown_answers_the_calls_in_flight_and_exits_1(
    tmp_path: Path, framing: str
) -> None:
    host = _host(tmp_path, framing)
    try:
        _start_call(host, "a", "wait_async", {"seconds": 600})
        _start_call(host, "s", "wait_sync", {"seconds": 600})
        host.notify("exit")
        code, responses = _responses_until_exit(host)
    finally:
        host.close()
    by_id = _exactly_once(responses, ["a", "s"])
    for id in ("a", "s"):
        assert by_id[id]["error"]["code"] == -32800
        assert "exit" in by_id[id]["error"]["message"]
    assert code == 1


@pytest.mark.parametrize("framing", FRAMINGS)
def test_shutdown_with_nothing_in_flight_answers_at_once(tmp_path: Path, framing: str) -> None:
    host = _host(tmp_path, framing)
    try:
        started = time.monotonic()
        assert host.request("shutdown", timeout=30)["result"] is None
        assert time.monotonic() - started < GRACE  # no grace is waited for
        host.notify("exit")
        code, responses = _responses_until_exit(host)
    finally:
        host.close()
    assert responses == []
    assert code == 0


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_client_that_hangs_up_after_exit_still_gets_the_answers(
    tmp_path: Path, framing: str
) -> None:
    """shutdown, exit, then stdin closed at once: the answers owed are still written
    (the end-of-input grace of §3.5 starts after them)."""
    host = _host(tmp_path, framing)
    try:
        _start_call(host, "a", "wait_async", {"seconds": 2.0})
        host.send({"jsonrpc": "2.0", "id": "down", "method": "shutdown"})
        host.notify("exit")
        host.close_stdin()
        code, responses = _responses_until_exit(host)
    finally:
        host.close()
    by_id = _exactly_once(responses, ["a", "down"])
    assert by_id["a"]["result"]["content"][0]["text"] == "slept 2"
    assert code == 0


def test_the_shutdown_grace_is_five_seconds_unless_configured(tmp_path: Path) -> None:
    from toolwire.host.methods.server import SHUTDOWN_GRACE
    from toolwire.host.serve.options import build_parser, config_from_args

    def grace(*args: str) -> float:
        ns = build_parser().parse_args(["--root", str(tmp_path), *args])
        return config_from_args(ns).shutdown_grace

    assert grace() == SHUTDOWN_GRACE == GRACE
    config = tmp_path / "toolwire.toml"
    config.write_text("[host]\nshutdown_grace = 0.25\n")
    assert grace("--config", str(config)) == 0.25

"""toolwire.client against the real host subprocess (and a stubborn fake for shutdown)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolwire.client import (
    CallTimeout,
    Client,
    LogMessage,
    Progress,
    connect_sync,
    host_command,
)

from tests.e2e_helpers import PROMPT
from tests.hostproc import TOOLS_DIR
from tests.inproc import connected_client, in_host
from toolwire.errors import INVALID_PARAMS, REQUEST_TIMEOUT, JsonRpcError

pytestmark = pytest.mark.anyio

TOOL_FILES = [TOOLS_DIR / "basic_tools.py", TOOLS_DIR / "client_tools.py"]
STUBBORN = TOOLS_DIR / "stubborn_host.py"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def command(root: Path, *extra: str) -> list[str]:
    return host_command(root=root, tools=TOOL_FILES, builtins=False, extra_args=extra)


def spawn(root: Path, *extra: str, **options: object) -> Client:
    options.setdefault("stderr", "capture")
    return Client.spawn(command(root, *extra), **options)  # type: ignore[arg-type]


def connect(root: Path, *extra: str, **options: Any) -> AbstractAsyncContextManager[Client]:
    """The host of :func:`command` served in this event loop (tests/inproc.py), for the
    tests of what the client does with what a host answers; those of spawning,
    stderr and ending a host use :func:`spawn`."""
    args = ["--root", str(root), "--tools", *map(str, TOOL_FILES), "--no-builtins", *extra]
    return connected_client(in_host(args), **options)


async def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Poll ``condition`` until true; fail after ``timeout`` seconds."""
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.02)


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 :].split()[0] != b"Z"


# --------------------------------------------------------------------------- handshake


@pytest.mark.parametrize(
    ("era", "version"), [("auto", "2026-07-28"), ("modern", "2026-07-28"), ("legacy", "2025-11-25")]
)
async def test_handshake_exposes_server_info(tmp_path: Path, era: str, version: str) -> None:
    async with connect(tmp_path, era=era) as c:
        assert c.server_info.name == "toolwire"
        assert c.protocol_version == version
        assert c.modern is (era != "legacy")
        assert c.server_capabilities["tools"] == {"listChanged": True}
        assert c.instructions is not None and str(tmp_path.resolve()) in c.instructions
        await c.ping()


async def test_list_tools_follows_every_page(tmp_path: Path) -> None:
    async with connect(tmp_path) as c:
        all_at_once = [t.name for t in await c.list_tools()]
    async with connect(tmp_path, "--page-size", "2") as c:
        paged = [t.name for t in await c.list_tools()]
    assert len(all_at_once) == 8  # 3 basic tools + 5 client tools
    assert paged == all_at_once
    assert {"echo", "prog", "nap", "whoami"} <= set(paged)


async def test_lsp_framing(tmp_path: Path) -> None:
    async with connect(tmp_path, framing="lsp") as c:
        res = await c.call_tool("echo", {"text": "héllo ✓"})
    assert res.text == "héllo ✓"


async def test_connect_over_existing_streams(tmp_path: Path) -> None:
    proc = await anyio.open_process(command(tmp_path), stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        async with Client.connect(proc.stdout, proc.stdin) as c:
            assert (await c.call_tool("echo", {"text": "over streams"})).text == "over streams"
        # Leaving the block closed the host's stdin: it exits on EOF.
        with anyio.fail_after(PROMPT):
            assert await proc.wait() == 0
    finally:
        await proc.aclose()


async def test_host_that_fails_to_start_gives_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    c = Client.spawn(host_command(root=missing, builtins=False), stderr="capture")
    with pytest.raises(JsonRpcError) as info:
        async with c:
            pass
    assert "before answering server/discover" in info.value.message
    assert "exit code 2" in info.value.message
    assert "is not a directory" in info.value.message
    assert c.process is not None and c.process.returncode == 2


async def test_a_host_slow_to_exit_after_closing_stdout_still_reports_its_exit_and_stderr() -> None:
    # Stands in for a host on a loaded machine: stdout closes at once, the last stderr
    # line and the exit come 1.5 s later (the host's stderr pump may take up to 2 s).
    slow = (
        "import os, sys, time; os.close(1); time.sleep(1.5); "
        "sys.stderr.write('toolwire: the root is not a directory\\n'); sys.stderr.flush(); "
        "sys.exit(2)"
    )
    c = Client.spawn([sys.executable, "-c", slow], stderr="capture")
    with pytest.raises(JsonRpcError) as info:
        async with c:
            pass
    assert "exit code 2" in info.value.message
    assert "the root is not a directory" in info.value.message


# --------------------------------------------------------------------------- calls


async def test_call_result_is_paired_with_its_call_id(tmp_path: Path) -> None:
    async with connect(tmp_path) as c:
        first = await c.call_tool("whoami")
        second = await c.call_tool("whoami", {})
    # The host saw the same id the client reports (ctx.call_id == the request id).
    assert first.text == str(first.call_id)
    assert second.text == str(second.call_id)
    assert first.call_id != second.call_id
    assert not first.is_error and first.protocol_error is None


async def test_details_and_structured_content(tmp_path: Path) -> None:
    async with connect(tmp_path) as c:
        res = await c.call_tool("detailed")
    assert res.text == "the text for the model"
    assert res.details == {"lines": 3, "path": "a.txt"}
    assert res.structured_content == {"answer": 42}
    assert res.to_wire()["_meta"]["toolwire/details"] == {"lines": 3, "path": "a.txt"}


async def test_progress_callback_gets_increasing_values(tmp_path: Path) -> None:
    seen: list[Progress] = []
    async with connect(tmp_path) as c:
        res = await c.call_tool("prog", {"n": 5}, on_progress=seen.append)
        # No token, no progress: a second call without a callback sends none to the first's.
        await c.call_tool("prog", {"n": 3})
    assert res.text == "done"
    assert [p.progress for p in seen] == [1, 2, 3, 4, 5]
    assert all(p.total == 5 for p in seen)
    assert seen[-1].message == "step 5"


async def test_progress_callback_that_raises_does_not_lose_the_result(tmp_path: Path) -> None:
    def broken(p: Progress) -> None:
        raise RuntimeError("display bug")

    async with connect(tmp_path) as c:
        res = await c.call_tool("prog", {"n": 2}, on_progress=broken)
    assert res.text == "done"


async def test_log_messages_reach_on_log(tmp_path: Path) -> None:
    logs: list[LogMessage] = []
    async with connect(tmp_path, on_log=logs.append) as c:
        await c.call_tool("chatty", {"message": "hello log"})
        await wait_for(lambda: bool(logs))
        await c.set_log_level("error")
        await c.call_tool("chatty", {"message": "filtered out"})
        await c.ping()  # the host answers in order: a log sent before this would be in
    assert logs == [LogMessage("info", "hello log", "chatty")]


async def test_unknown_tool_is_an_error_result(tmp_path: Path) -> None:
    async with connect(tmp_path) as c:
        res = await c.call_tool("no_such_tool", {"x": 1})
        assert res.is_error
        assert res.text == "Unknown tool: no_such_tool"
        assert res.protocol_error is not None and res.protocol_error.code == INVALID_PARAMS
        with pytest.raises(JsonRpcError) as info:
            await c.call_tool("no_such_tool", raise_on_protocol_error=True)
        assert info.value.code == INVALID_PARAMS
    async with connect(tmp_path, raise_on_protocol_error=True) as c:
        with pytest.raises(JsonRpcError):
            await c.call_tool("no_such_tool")
        # ... and the per-call option overrides the client's default.
        assert (await c.call_tool("no_such_tool", raise_on_protocol_error=False)).is_error


async def test_invalid_arguments_are_an_error_result(tmp_path: Path) -> None:
    async with connect(tmp_path) as c:
        # A list is not a string under any coercion rule (a number would be coerced).
        res = await c.call_tool("echo", {"text": [5]})
    assert res.is_error and res.protocol_error is None
    assert "text" in res.text


async def test_timeout_cancels_the_call_and_the_host_keeps_serving(tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"
    async with connect(tmp_path) as c:
        started = time.monotonic()
        with pytest.raises(CallTimeout) as info:
            await c.call_tool("nap", {"seconds": 30, "marker": str(marker)}, timeout=0.3)
        assert time.monotonic() - started < PROMPT
        err = info.value
        assert isinstance(err, TimeoutError) and isinstance(err, JsonRpcError)
        assert err.code == REQUEST_TIMEOUT
        # The host got notifications/cancelled and interrupted the tool.
        await wait_for(marker.exists)
        assert (await c.call_tool("echo", {"text": "still here"})).text == "still here"


async def test_leaving_a_cancel_scope_cancels_the_call(tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"
    async with connect(tmp_path) as c:
        with anyio.move_on_after(0.3) as scope:
            await c.call_tool("nap", {"seconds": 30, "marker": str(marker)})
        assert scope.cancelled_caught
        await wait_for(marker.exists)
        assert (await c.call_tool("echo", {"text": "still here"})).text == "still here"


async def test_calls_run_concurrently(tmp_path: Path) -> None:
    marker = tmp_path / "cancelled"
    async with connect(tmp_path) as c, anyio.create_task_group() as tg:
        tg.start_soon(c.call_tool, "nap", {"seconds": 60, "marker": str(marker)})
        # A fast call is answered while the slow one is still running.
        assert (await c.call_tool("echo", {"text": "fast"})).text == "fast"
        assert not marker.exists()
        tg.cancel_scope.cancel()
    await wait_for(marker.exists)  # the slow call was still running, then cancelled


async def test_captured_stderr_is_drained(tmp_path: Path) -> None:
    # 2 MiB is far beyond a pipe's buffer: an unread stderr pipe would stall the host.
    async with spawn(tmp_path) as c:
        res = await c.call_tool("noisy", {"kib": 2048}, timeout=30)
    assert res.text == "written"
    assert "printed at import" not in c.stderr_output  # only the last 1 MiB is kept
    assert len(c.stderr_output) <= 1024 * 1024
    # The host's own stderr pump may have dropped a burst the reader was too slow for
    # (a loaded machine): it then says so in a line of its own, after the last bytes.
    text = re.sub(r"\[toolwire: \d+ bytes of stderr dropped[^\n]*\]\n\Z", "", c.stderr_output)
    assert text.endswith("x\n"), c.stderr_output[-300:]


# --------------------------------------------------------------------------- closing


async def test_close_ends_the_host_on_eof(tmp_path: Path) -> None:
    async with spawn(tmp_path) as c:
        await c.call_tool("echo", {"text": "x"})
        proc = c.process
        assert proc is not None
        pid = proc.pid
    assert c.ended_by == "eof"
    assert proc.returncode == 0
    assert not alive(pid)


async def test_close_sends_sigterm_when_eof_is_ignored(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    c = Client.spawn(
        [sys.executable, str(STUBBORN), "ignore-eof", str(pidfile)], terminate_grace=0.3
    )
    async with c:
        await c.ping()
        assert c.process is not None
        pid = c.process.pid
        started = time.monotonic()
    assert time.monotonic() - started >= 0.3  # it did wait after closing stdin
    assert c.ended_by == "sigterm"
    assert not alive(pid)
    child = int(pidfile.read_text())
    await wait_for(lambda: not alive(child), PROMPT)


async def test_close_kills_a_host_that_ignores_sigterm_and_its_children(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    c = Client.spawn(
        [sys.executable, str(STUBBORN), "ignore-term", str(pidfile)], terminate_grace=0.3
    )
    async with c:
        await c.ping()
        assert c.process is not None
        pid = c.process.pid
        await wait_for(pidfile.exists)
        child = int(pidfile.read_text())
        assert alive(child)
        started = time.monotonic()
    assert time.monotonic() - started >= 0.6  # both grace periods passed
    assert c.ended_by == "sigkill"
    assert not alive(pid)
    await wait_for(lambda: not alive(child), PROMPT)


async def test_cancelled_body_still_closes_the_host(tmp_path: Path) -> None:
    c = spawn(tmp_path)
    with anyio.CancelScope() as scope:
        async with c:
            assert c.process is not None
            pid = c.process.pid
            scope.cancel()
            await c.call_tool("nap", {"seconds": 30})
    assert scope.cancelled_caught
    assert c.ended_by == "eof"
    assert not alive(pid)


# --------------------------------------------------------------------------- sync facade


def test_sync_client(tmp_path: Path) -> None:
    seen: list[Progress] = []
    with connect_sync(command(tmp_path), stderr="discard") as c:
        assert c.server_info.name == "toolwire"
        assert "echo" in {t.name for t in c.list_tools()}
        assert c.call_tool("echo", {"text": "sync"}).text == "sync"
        assert c.call_tool("prog", {"n": 3}, on_progress=seen.append).text == "done"
        assert c.call_tool("missing").is_error
        with pytest.raises(CallTimeout):
            c.call_tool("nap", {"seconds": 30}, timeout=0.2)
        c.ping()
        proc = c.client.process
        assert proc is not None
    assert [p.progress for p in seen] == [1, 2, 3]
    assert c.client.ended_by == "eof"
    assert not alive(proc.pid)
    with pytest.raises(RuntimeError):
        c.list_tools()


def test_sync_client_handshake_failure_stops_cleanly(tmp_path: Path) -> None:
    with pytest.raises(JsonRpcError):
        connect_sync(host_command(root=tmp_path / "missing"), stderr="discard")


def test_importing_the_client_does_not_import_the_host() -> None:
    code = "import sys, toolwire.client; print('toolwire.host' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert out.stdout.strip() == "False"

"""The bash built-in: in-process semantics, then end to end through the real host."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from toolwire.host import ExecEnv, ToolContext
from toolwire.host.builtins.bash import OutputCollector
from toolwire.host.builtins.truncate import MAX_BYTES
from toolwire.host.tools.channel import CallChannel

from tests.e2e_helpers import PROMPT, exits_within
from tests.host.builtins.support import call, details, is_error, text
from tests.host.sandbox.test_commands import unique_sleep, wait_until_gone
from tests.hostproc import HostProcess

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_echo_and_cwd(tmp_path: Path) -> None:
    r = await call(tmp_path, "bash", {"command": "echo hello; pwd"})
    assert not is_error(r)
    assert text(r) == f"hello\n{tmp_path}"
    assert details(r)["exitCode"] == 0


async def test_stderr_merged_and_stdin_empty(tmp_path: Path) -> None:
    r = await call(tmp_path, "bash", {"command": "echo a; echo b >&2; cat; echo c"})
    assert text(r) == "a\nb\nc"


async def test_exit_code_is_an_error_with_output(tmp_path: Path) -> None:
    r = await call(tmp_path, "bash", {"command": "echo partial; exit 3"})
    assert is_error(r)
    assert "partial" in text(r) and "exit code 3" in text(r)
    assert details(r)["exitCode"] == 3


async def test_no_output(tmp_path: Path) -> None:
    r = await call(tmp_path, "bash", {"command": "true"})
    assert text(r) == "(no output)" and not is_error(r)


async def test_timeout_says_so(tmp_path: Path) -> None:
    sleep, arg = unique_sleep()
    start = time.monotonic()
    r = await call(tmp_path, "bash", {"command": f"echo before; {sleep}", "timeout": 0.5})
    assert time.monotonic() - start < PROMPT
    assert is_error(r) and "timed out after 0.5 seconds" in text(r)
    assert "before" in text(r) and details(r)["timedOut"] is True
    assert wait_until_gone(arg) == []


async def test_default_timeout_from_env(tmp_path: Path) -> None:
    r = await call(tmp_path, "bash", {"command": "sleep 20"}, default_timeout=0.3)
    assert is_error(r) and "timed out" in text(r)


async def test_bad_timeout_rejected(tmp_path: Path) -> None:
    r = await call(tmp_path, "bash", {"command": "true", "timeout": -1})
    assert is_error(r) and "timeout" in text(r)


async def test_missing_cwd(tmp_path: Path) -> None:
    env = ExecEnv.at(tmp_path)
    env.cwd = tmp_path / "gone"
    from tests.host.builtins.support import TOOLS, run_tool

    r = await run_tool(TOOLS["bash"], {"command": "true"}, ToolContext("x", "bash", env))
    assert is_error(r) and "Working directory does not exist" in text(r)


async def test_env_variables_passed(tmp_path: Path) -> None:
    r = await call(tmp_path, "bash", {"command": "echo $TW_TEST"}, extra_env={"TW_TEST": "hi"})
    assert text(r) == "hi"


@pytest.mark.parametrize("template", ["{sleep} & echo done", "setsid {sleep} & echo done"])
async def test_background_process_returns_promptly(tmp_path: Path, template: str) -> None:
    sleep, arg = unique_sleep()
    start = time.monotonic()
    r = await call(tmp_path, "bash", {"command": template.format(sleep=sleep)})
    assert time.monotonic() - start < PROMPT
    assert text(r) == "done"
    assert wait_until_gone(arg) == []


async def test_line_truncation_keeps_tail_and_saves_full_output(tmp_path: Path) -> None:
    r = await call(tmp_path, "bash", {"command": "seq 3000"})
    t = text(r)
    assert t.startswith("1001\n") and "\n3000\n" in t
    assert "Showing lines 1001-3000 of 3000" in t
    d = details(r)
    assert d["truncation"]["truncatedBy"] == "lines"
    assert d["truncation"]["totalLines"] == 3000 and d["truncation"]["outputLines"] == 2000
    full = Path(d["fullOutputPath"])
    assert f"Full output: {full}" in t
    assert stat.S_IMODE(full.stat().st_mode) == 0o600
    assert full.read_text() == "".join(f"{i}\n" for i in range(1, 3001))
    full.unlink()


async def test_4000_lines(tmp_path: Path) -> None:
    r = await call(tmp_path, "bash", {"command": "seq 4000"})
    assert "Showing lines 2001-4000 of 4000" in text(r)
    Path(details(r)["fullOutputPath"]).unlink()


async def test_byte_truncation_over_50kb(tmp_path: Path) -> None:
    # 1000 lines of 100 characters: 101,000 bytes, under the line limit.
    cmd = "for i in $(seq 1000); do printf '%0100d\\n' $i; done"
    r = await call(tmp_path, "bash", {"command": cmd})
    d = details(r)["truncation"]
    assert d["truncatedBy"] == "bytes" and d["totalBytes"] == 101_000
    assert d["outputBytes"] <= MAX_BYTES
    full = Path(details(r)["fullOutputPath"])
    assert full.stat().st_size == 101_000
    assert text(r).split("\n")[0] == f"{1000 - d['outputLines'] + 1:0100d}"
    full.unlink()


async def test_single_huge_line_keeps_its_end(tmp_path: Path) -> None:
    r = await call(tmp_path, "bash", {"command": "head -c 200000 /dev/zero | tr '\\0' x; echo END"})
    t = text(r)
    assert "xEND" in t and "Showing the last" in t
    assert details(r)["truncation"]["lastLinePartial"] is True
    Path(details(r)["fullOutputPath"]).unlink()


async def test_utf8_split_and_invalid(tmp_path: Path) -> None:
    r = await call(
        tmp_path, "bash", {"command": r"printf '\xe2\x82'; sleep 0.1; printf '\xac \xff'"}
    )
    assert text(r) == "€ \ufffd"


def test_collector_counts_whole_output_beyond_window() -> None:
    c = OutputCollector()
    for _ in range(5000):
        c.add("y" * 99 + "\n")
    shown, rec = c.finish()
    assert rec.total_lines == 5000 and rec.total_bytes == 500_000
    assert shown.endswith("y\n") and rec.output_bytes <= MAX_BYTES
    assert c.file_path is not None and os.path.getsize(c.file_path) == 500_000
    os.unlink(c.file_path)


class _Progress(CallChannel):
    def __init__(self) -> None:
        self.reports: list[tuple[float, str | None]] = []

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.reports.append((progress, message))


async def test_progress_is_throttled_and_increasing(tmp_path: Path) -> None:
    from tests.host.builtins.support import TOOLS, run_tool

    rec = _Progress()
    ctx = ToolContext("p", "bash", ExecEnv.at(tmp_path), rec)
    cmd = "for i in $(seq 5000); do echo line$i; done; sleep 0.3; echo last"
    r = await run_tool(TOOLS["bash"], {"command": cmd}, ctx)
    assert not is_error(r)
    assert 1 <= len(rec.reports) < 25
    values = [p for p, _ in rec.reports]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert all(m and m.startswith(("line", "last")) for _, m in rec.reports)


# ---------------------------------------------------------------- end to end


def _host(tmp_path: Path) -> HostProcess:
    h = HostProcess(["--root", str(tmp_path)])
    h.initialize()
    return h


def _wait_for(arg: str, present: bool, deadline: float = 10.0) -> bool:
    from tests.host.sandbox.test_commands import live_with_arg

    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if bool(live_with_arg(arg)) == present:
            return True
        time.sleep(0.02)
    return False


def test_e2e_background_sleep_returns_with_done(tmp_path: Path) -> None:
    sleep, arg = unique_sleep()
    with _host(tmp_path) as h:
        start = time.monotonic()
        resp = h.call("bash", {"command": f"{sleep} & echo done"}, timeout=PROMPT)
        assert time.monotonic() - start < PROMPT
        assert resp["result"]["content"] == [{"type": "text", "text": "done"}]
        assert wait_until_gone(arg) == []
        # setsid escapes the process group; the call's marker still finds it.
        sleep2, arg2 = unique_sleep()
        resp = h.call("bash", {"command": f"setsid {sleep2} & echo spawned"}, timeout=10)
        assert resp["result"]["content"][0]["text"] == "spawned"
        assert wait_until_gone(arg2) == []


@pytest.mark.parametrize(
    "template",
    [
        "(while true; do echo {tag}; sleep 0.01; done) & echo started",
        "python3 -m http.server 0 --bind 127.0.0.1 --directory . {tag} & echo started",
    ],
)
def test_e2e_noisy_or_serving_background_ended(tmp_path: Path, template: str) -> None:
    import secrets

    tag = f"tag{secrets.token_hex(4)}"
    if "http.server" in template:
        # http.server takes the port positionally; pass the tag through a harmless dir name.
        (tmp_path / tag).mkdir()
        template = template.replace("--directory . {tag}", "--directory {tag}")
    with _host(tmp_path) as h:
        start = time.monotonic()
        resp = h.call("bash", {"command": template.format(tag=tag)}, timeout=PROMPT)
        assert time.monotonic() - start < PROMPT
        # the background job may print before `echo started` runs: look for the line
        assert "started" in resp["result"]["content"][0]["text"].splitlines()
        assert wait_until_gone(tag) == []


def test_e2e_cancellation_ends_the_process(tmp_path: Path) -> None:
    sleep, arg = unique_sleep()
    with _host(tmp_path) as h:
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "run-1",
                "method": "tools/call",
                "params": {"name": "bash", "arguments": {"command": f"setsid {sleep} & {sleep}"}},
            }
        )
        assert _wait_for(arg, present=True), "the command never started"
        h.notify("notifications/cancelled", {"requestId": "run-1", "reason": "test"})
        assert wait_until_gone(arg) == []
        assert h.request("ping")["result"] == {}
        # MCP: nothing is sent for the cancelled request.
        leftovers: list[Any] = [m for m in h.drain() if isinstance(m, dict)]
        assert not [m for m in leftovers if m.get("id") == "run-1"]


def test_e2e_stdin_eof_ends_host_and_child(tmp_path: Path) -> None:
    sleep, arg = unique_sleep()
    h = _host(tmp_path)
    try:
        h.send(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {"name": "bash", "arguments": {"command": sleep}},
            }
        )
        assert _wait_for(arg, present=True), "the command never started"
        start = time.monotonic()
        h.close_stdin()
        assert exits_within(h) == 0
        assert time.monotonic() - start < PROMPT
        assert wait_until_gone(arg) == []
    finally:
        h.close()


def test_e2e_tools_listed_in_order(tmp_path: Path) -> None:
    with _host(tmp_path) as h:
        tools = h.request("tools/list")["result"]["tools"]
        names = [t["name"] for t in tools]
        assert names[:7] == ["read", "write", "edit", "bash", "ls", "grep", "find"]
        by_name = {t["name"]: t for t in tools}
        for ro in ("read", "ls", "grep", "find"):
            assert by_name[ro]["annotations"]["readOnlyHint"] is True
        for rw in ("write", "edit"):
            assert by_name[rw]["annotations"]["destructiveHint"] is True
        edit_schema = by_name["edit"]["inputSchema"]
        # the single {oldText, newText} form is mapped by prepare_arguments, not declared
        assert set(edit_schema["properties"]) == {"path", "edits"}
        assert edit_schema["properties"]["edits"]["items"]["required"] == ["oldText", "newText"]
        (tmp_path / "f.txt").write_text("old\n")
        legacy = h.call("edit", {"path": "f.txt", "oldText": "old", "newText": "new"})
        assert not legacy["result"].get("isError"), legacy
        assert (tmp_path / "f.txt").read_text() == "new\n"

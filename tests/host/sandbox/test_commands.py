"""The process runner (host/sandbox/commands.py): output, exit status, and that nothing a command
starts outlives its call — on return, timeout and cancellation."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

import anyio
import pytest
from toolwire.host.sandbox.commands import MARKER_ENV, run_command

from tests.e2e_helpers import PROMPT

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def unique_sleep() -> tuple[str, str]:
    """A ``sleep`` argument no other process uses, to find the process by its cmdline."""
    arg = f"30.{secrets.randbelow(10**6):06d}"
    return f"sleep {arg}", arg


def live_with_arg(arg: str) -> list[int]:
    """Pids of live (non-zombie) processes with an argument containing ``arg``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                parts = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
        if any(arg.encode() in p for p in parts) and state not in (b"Z", b"X"):
            out.append(int(entry))
    return out


def wait_until_gone(arg: str, deadline: float = PROMPT) -> list[int]:
    """Wait (bounded) for every process with ``arg`` to disappear; returns survivors."""
    end = time.monotonic() + deadline
    while True:
        left = live_with_arg(arg)
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.02)


async def run_sh(command: str, tmp_path: Path, **kw: object) -> tuple[str, object]:
    chunks: list[str] = []
    result = await run_command(
        ["bash", "-c", command],
        cwd=tmp_path,
        on_output=chunks.append,
        **kw,  # type: ignore[arg-type]
    )
    return "".join(chunks), result


async def test_output_and_exit_code(tmp_path: Path) -> None:
    out, r = await run_sh("echo out; echo err >&2; exit 7", tmp_path)
    assert out == "out\nerr\n"
    assert r.exit_code == 7 and r.signal is None and not r.timed_out  # type: ignore[attr-defined]


async def test_stdin_is_empty_and_cwd_env_applied(tmp_path: Path) -> None:
    out, _ = await run_sh(
        'cat; pwd; echo "$FOO"; test -n "$' + MARKER_ENV + '" && echo marked',
        tmp_path,
        env={**os.environ, "FOO": "bar"},
    )
    assert out == f"{tmp_path}\nbar\nmarked\n"


async def test_signal_death_reported(tmp_path: Path) -> None:
    _, r = await run_sh("kill -9 $$", tmp_path)
    assert r.exit_code is None and r.signal == 9  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "template",
    [
        "{sleep} & echo done",
        "setsid {sleep} & echo done",
        "( {sleep}; echo never ) & echo done",
        "nohup {sleep} >/dev/null 2>&1 & echo done",
    ],
)
async def test_background_process_does_not_hold_the_call(tmp_path: Path, template: str) -> None:
    sleep, arg = unique_sleep()
    start = time.monotonic()
    out, r = await run_sh(template.format(sleep=sleep), tmp_path)
    assert time.monotonic() - start < PROMPT
    assert out.startswith("done")
    assert r.exit_code == 0  # type: ignore[attr-defined]
    assert wait_until_gone(arg) == []


async def test_noisy_background_loop_is_ended(tmp_path: Path) -> None:
    tag = f"noisy-{secrets.token_hex(4)}"
    start = time.monotonic()
    out, _ = await run_sh(f"(while true; do echo {tag}; sleep 0.01; done) & echo started", tmp_path)
    assert time.monotonic() - start < PROMPT
    # The loop and the foreground echo run concurrently: either may print first.
    assert "started" in out.splitlines(), out
    # The loop runs in a subshell whose command line is the whole command (holding tag).
    assert wait_until_gone(tag) == []


async def test_background_server_is_ended(tmp_path: Path) -> None:
    port_file = tmp_path / "srv.py"
    token = secrets.token_hex(4)
    port_file.write_text(
        "import http.server, sys\n"
        f"# {token}\n"
        "http.server.HTTPServer(('127.0.0.1', 0), http.server.BaseHTTPRequestHandler)"
        ".serve_forever()\n"
    )
    start = time.monotonic()
    out, _ = await run_sh(f"python3 {port_file} {token} & echo spawned", tmp_path)
    assert time.monotonic() - start < PROMPT and out.startswith("spawned")
    assert wait_until_gone(token) == []


async def test_timeout_kills_the_tree(tmp_path: Path) -> None:
    sleep, arg = unique_sleep()
    start = time.monotonic()
    out, r = await run_sh(f"echo begin; setsid {sleep} & {sleep}", tmp_path, timeout=0.5)
    assert time.monotonic() - start < PROMPT
    assert r.timed_out and r.signal == 9  # type: ignore[attr-defined]
    assert out == "begin\n"
    assert wait_until_gone(arg) == []


async def test_the_timeout_fires_at_its_limit_not_later(tmp_path: Path) -> None:
    # The reported duration against the limit, with the cost of starting and reaping a
    # command on this machine now (the same command that exits at once) as the margin:
    # a timeout firing at several times its limit shows, a loaded machine does not.
    _, quick = await run_sh("true", tmp_path)
    limit = 2.0
    sleep, arg = unique_sleep()
    _, r = await run_sh(sleep, tmp_path, timeout=limit)
    assert r.timed_out  # type: ignore[attr-defined]
    took, base = r.duration, quick.duration  # type: ignore[attr-defined]
    assert limit <= took < 2 * limit + 1 + 5 * base, (took, base)
    assert wait_until_gone(arg) == []


async def test_cancellation_kills_the_tree(tmp_path: Path) -> None:
    sleep, arg = unique_sleep()
    start = time.monotonic()
    with anyio.move_on_after(0.5) as scope:
        await run_sh(f"setsid {sleep} & {sleep}", tmp_path)
    assert scope.cancelled_caught
    assert time.monotonic() - start < PROMPT
    assert wait_until_gone(arg) == []


async def test_callback_may_stop_the_run(tmp_path: Path) -> None:
    seen: list[str] = []
    with anyio.CancelScope() as scope:

        def stop_at_first(text: str) -> None:
            seen.append(text)
            scope.cancel()

        await run_command(["bash", "-c", "yes"], cwd=tmp_path, on_output=stop_at_first)
    assert seen and seen[0].startswith("y")


async def test_utf8_split_across_reads_and_invalid_bytes(tmp_path: Path) -> None:
    # The euro sign's three bytes arrive in two writes with a pause between them.
    out, _ = await run_sh(r"printf '\xe2\x82'; sleep 0.2; printf '\xac|\xff|\n'", tmp_path)
    assert out == "€|\ufffd|\n"


async def test_async_callback_and_large_output(tmp_path: Path) -> None:
    total = 0

    async def count(text: str) -> None:
        nonlocal total
        total += len(text)
        await anyio.sleep(0)

    r = await run_command(["bash", "-c", "head -c 3000000 /dev/zero | tr '\\0' a"],
                          cwd=tmp_path, on_output=count)  # fmt: skip
    assert total == 3_000_000 and r.output_bytes == 3_000_000


async def test_missing_program_and_cwd(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await run_command(["/nonexistent/prog"], cwd=tmp_path)
    with pytest.raises(FileNotFoundError):
        await run_command(["true"], cwd=tmp_path / "missing")


# ------------------------------------------------------------------ in the sandbox

from toolwire.host.sandbox.probe import resolve_sandbox  # noqa: E402
from toolwire.host.sandbox.settings import SandboxSettings  # noqa: E402

SANDBOX = resolve_sandbox(SandboxSettings())
needs_bwrap = pytest.mark.usefixtures("sandbox_required")


async def run_boxed(command: str, tmp_path: Path, **kw: object) -> tuple[str, object]:
    chunks: list[str] = []
    result = await run_command(
        ["/bin/bash", "-c", command],
        cwd=tmp_path,
        env=SANDBOX.environment(os.environ),
        on_output=chunks.append,
        sandbox=SANDBOX,
        root=tmp_path,
        **kw,  # type: ignore[arg-type]
    )
    return "".join(chunks), result


@needs_bwrap
async def test_sandboxed_output_exit_code_and_marker(tmp_path: Path) -> None:
    out, r = await run_boxed(
        f'echo out; echo err >&2; test -n "${MARKER_ENV}" && echo marked; exit 7', tmp_path
    )
    assert out == "out\nerr\nmarked\n"
    assert r.exit_code == 7  # type: ignore[attr-defined]


@needs_bwrap
@pytest.mark.parametrize(
    "template",
    [
        "setsid env -i {sleep} & echo done",
        "(env -i setsid sh -c '{sleep} &' &); echo done",
    ],
)
async def test_sandboxed_leftovers_without_marker_or_group_are_ended(
    tmp_path: Path, template: str
) -> None:
    sleep, arg = unique_sleep()
    out, _ = await run_boxed(template.format(sleep=sleep), tmp_path)
    assert out.startswith("done")
    assert wait_until_gone(arg) == []


@needs_bwrap
async def test_sandboxed_timeout_and_cancellation_end_the_namespace(tmp_path: Path) -> None:
    sleep, arg = unique_sleep()
    start = time.monotonic()
    out, r = await run_boxed(f"echo begin; setsid env -i {sleep} & {sleep}", tmp_path, timeout=0.5)
    assert time.monotonic() - start < PROMPT
    assert r.timed_out and out == "begin\n"  # type: ignore[attr-defined]
    assert wait_until_gone(arg) == []
    sleep, arg = unique_sleep()
    with anyio.move_on_after(0.5) as scope:
        await run_boxed(f"setsid env -i {sleep} & {sleep}", tmp_path)
    assert scope.cancelled_caught
    assert wait_until_gone(arg) == []


@needs_bwrap
async def test_sandboxed_missing_program_is_an_exit_code(tmp_path: Path) -> None:
    chunks: list[str] = []
    r = await run_command(
        ["/nonexistent/prog"],
        cwd=tmp_path,
        env={},
        sandbox=SANDBOX,
        root=tmp_path,
        on_output=chunks.append,
    )
    assert r.exit_code not in (0, None)
    assert "No such file" in "".join(chunks)


async def test_unsandboxed_fallback_applies_limits_but_not_the_process_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # auto without bubblewrap: commands run directly, still under the limits;
    # the process limit is left out (outside a user namespace it would count every
    # process of the user).
    sb = resolve_sandbox(
        SandboxSettings(limits={"open_files": 99, "processes": 5}, bwrap="/nonexistent/bwrap")
    )
    assert not sb.active
    chunks: list[str] = []
    await run_command(
        ["/bin/bash", "-c", "ulimit -n; ulimit -u"],
        cwd=tmp_path,
        env={},
        sandbox=sb,
        on_output=chunks.append,
    )
    nofile, nproc = "".join(chunks).split()
    assert nofile == "99" and nproc != "5"

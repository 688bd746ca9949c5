"""A hostile tool module or hostile arguments against the host through its workers (issue 13;
found by a trial run, each failing before its fix).

Each test drives the real host as a subprocess with a tool module written into the test's
temporary directory. The attacker controls the tool module (handler code, the schema it
declares, what it says on the worker pipe) or a call's arguments; in each case the host
itself (not the worker) is what goes wrong. Where a control makes sense, the same attempt
runs with ``--isolation none`` and shows the test can pass.

Memory tests stop the flood as soon as the host passes 1 GiB (and kill the host then), so
a regression costs about 1 GiB for a few seconds.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e_helpers import wait_until
from tests.hostproc import HOST_COMMAND, HostProcess

LIMIT = 1024 * 1024 * 1024
"""Host memory (RSS) taken as unbounded growth."""

FLOOD_TIMEOUT = 120.0
"""Seconds a counted flood may take at most (it takes a few on a quiet machine)."""


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _module(tmp_path: Path, name: str, source: str) -> Path:
    folder = tmp_path / "mods"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source))
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    return r


class _Silent:
    """A host whose client sends but never reads stdout (a slow or stuck client)."""

    def __init__(self, args: list[str], stderr: Path | None = None) -> None:
        env = {"PYTHONSAFEPATH": "1"}
        import os

        with open(stderr or os.devnull, "wb") as err:
            self.proc = subprocess.Popen(
                [*HOST_COMMAND, *args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env={**os.environ, **env},
            )

    def send(self, msg: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()

    def start_call(self, name: str, arguments: dict[str, object]) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            }
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.send(
            {"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "debug"}}
        )
        self.send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments, "_meta": {"progressToken": "p"}},
            }
        )

    def peak_until(self, done: Callable[[], bool], timeout: float, limit: int) -> int:
        """The host's largest RSS seen until ``done()`` holds (or past ``limit`` bytes,
        or after ``timeout`` seconds, or when the host exits)."""
        peak = 0
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None and not done():
            peak = max(peak, _rss(self.proc.pid))
            if peak > limit:
                break
            time.sleep(0.05)
        if self.proc.poll() is None:
            peak = max(peak, _rss(self.proc.pid))
        return peak

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def silent_host() -> Iterator[list[_Silent]]:
    made: list[_Silent] = []
    yield made
    for h in made:
        h.close()


PROGRESS_FLOOD = """
import os
from toolwire.host import ToolContext, tool

@tool(timeout=600)
async def flood(ctx: ToolContext, count_file: str, n: int = 3000000) -> str:
    \"\"\"An ordinary tool that reports progress often, with a long message; every 1,000
    reports it writes how many it has made to ``count_file``.\"\"\"
    message = "x" * 10000
    fd = os.open(count_file, os.O_WRONLY | os.O_CREAT, 0o644)
    for i in range(1, n + 1):
        await ctx.report_progress(i, total=n, message=message)
        if i % 1000 == 0:
            os.pwrite(fd, b"%12d" % i, 0)
    return "done"
"""

FLOOD_REPORTS = 40_000
"""Progress reports the flood makes before the host's memory is judged: over 400 MB of
messages, well past :data:`FLOOD_LIMIT`, so a host that kept them for the client (which
never reads) is over the limit by then, however fast or slow the machine is."""

FLOOD_LIMIT = 256 * 1024 * 1024
"""Host memory (RSS) taken as unbounded growth in the counted flood (a host that drops
progress for a client that is not reading stays near its idle ~30 MiB)."""


def _count(path: Path) -> int:
    try:
        return int(path.read_bytes() or b"0")
    except (OSError, ValueError):
        return 0


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_progress_of_a_worker_tool_is_bounded_when_the_client_reads_slowly(
    tmp_path: Path, root: Path, silent_host: list[_Silent], isolation: str
) -> None:
    """Finding: progress (and log) records from a worker are queued for the client without
    the session's drain, so a client that reads slowly makes the host grow without bound
    (in-process tools await the drain: the control stays flat). The host's memory is
    watched until the tool has made :data:`FLOOD_REPORTS` reports (the tool counts them),
    not for a fixed time."""
    mod = _module(tmp_path, "flood.py", PROGRESS_FLOOD)
    count = root / "count"
    h = _Silent(
        ["--root", str(root), "--tools", str(mod), "--workers", "1", "--isolation", isolation]
    )
    silent_host.append(h)
    h.start_call("flood", {"count_file": str(count)})
    peak = h.peak_until(lambda: _count(count) >= FLOOD_REPORTS, FLOOD_TIMEOUT, FLOOD_LIMIT)
    assert peak < FLOOD_LIMIT, f"host RSS reached {peak >> 20} MiB with --isolation {isolation}"
    assert _count(count) >= FLOOD_REPORTS, f"the tool made only {_count(count)} reports"


REQUEST_FLOOD = """
import fcntl, os, sys, time
from toolwire.host import ToolContext, tool

@tool(timeout=600)
async def flood(ctx: ToolContext, done: str, n: int = 3000000) -> str:
    \"\"\"Send requests to the host on the worker pipe and never read the replies;
    create ``done`` once all are written.\"\"\"
    fd = ctx.channel._request.session._send._fd
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    chunk = b""
    for i in range(n):
        chunk += b'{"jsonrpc":"2.0","id":%d,"method":"x/%s"}\\n' % (10**7 + i, b"z" * 200)
        if len(chunk) > 65536:
            os.write(fd, chunk)
            chunk = b""
    open(done, "w").close()
    time.sleep(600)  # holds the worker's loop: its input is never read
    return "x"
"""


def test_worker_sending_requests_without_reading_replies_cannot_grow_the_host(
    tmp_path: Path, root: Path, silent_host: list[_Silent]
) -> None:
    """Finding: the host answered every request a worker sends (-32601) into an unbounded
    queue; a worker that never reads its stdin made the host grow without bound.

    Watched until an event ends the flood: the host says it killed the worker (as it now
    does at the first request a worker must not send), or the worker wrote all of its
    3 million requests (a host that drops them quietly). A host that queued the answers
    is past :data:`LIMIT` long before either."""
    mod = _module(tmp_path, "reqflood.py", REQUEST_FLOOD)
    log = tmp_path / "host.stderr"
    done = root / "flood.done"
    h = _Silent(["--root", str(root), "--tools", str(mod), "--workers", "1"], stderr=log)
    silent_host.append(h)
    h.start_call("flood", {"done": str(done)})

    def ended() -> bool:
        return done.exists() or "broke the protocol" in log.read_text(errors="replace")

    peak = h.peak_until(ended, FLOOD_TIMEOUT, LIMIT)
    assert peak < LIMIT, f"host RSS reached {peak >> 20} MiB"
    assert ended(), "neither the host ended the flood nor did the worker finish it"


REDOS = """
from toolwire.host import tool

@tool(
    input_schema={
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}},
        "required": ["s"],
    },
    timeout=2,
)
def match(s: str) -> str:
    \"\"\"A tool whose declared schema has a catastrophic pattern.\"\"\"
    return "matched"

@tool
def ping() -> str:
    \"\"\"Answers pong.\"\"\"
    return "pong"
"""


def test_a_module_schema_pattern_cannot_hang_the_host(tmp_path: Path, root: Path) -> None:
    """Finding: the host validates arguments against the schema a (worker) module declared,
    with Python's backtracking ``re``: a pattern like ``^(a+)+$`` and a model argument of
    40 ``a`` and a ``!`` hang the host's event loop. No timeout fires and no other call
    (of any module or built-in tool) is answered."""
    mod = _module(tmp_path, "redos.py", REDOS)
    with HostProcess(["--root", str(root), "--tools", str(mod), "--workers", "1"]) as h:
        assert "result" in h.initialize()
        assert "matched" in json.dumps(h.call("match", {"s": "aaaa"}))  # control: it works
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "evil",
                "method": "tools/call",
                "params": {"name": "match", "arguments": {"s": "a" * 40 + "!"}},
            }
        )
        try:
            # The host answers at once; the pattern runs where the worker checks the
            # arguments again, and its worker is stopped at the call's 2 s timeout.
            pong = h.request("ping", timeout=15)
            answered = h.recv_response("evil", timeout=15)
            after = h.call("ping", {}, timeout=15)
        finally:
            if h.proc.poll() is None:
                h.proc.kill()
        assert pong["result"] == {}
        assert "error" in answered or answered["result"].get("isError")
        assert "pong" in json.dumps(after)  # the next call gets a fresh worker


WATCH_ROOT = """
from toolwire.host import tool

__file__ = "/"  # the worker reports its module's __file__ as the path to watch

@tool
def ping() -> str:
    \"\"\"Answers pong.\"\"\"
    return "pong"
"""


def test_a_module_cannot_choose_what_the_host_watches_under_reload(
    tmp_path: Path, root: Path
) -> None:
    """Finding: under ``--reload`` the host watches the paths the worker's ``initialize``
    answer lists (from the module's ``__file__``). A module that sets ``__file__ = "/"``
    makes the host watch the whole file system; watchfiles raises (PermissionError on
    /proc/1/task/1/fdinfo as root) and the whole host exits. Here the module's file is
    then changed, and the host must still be up and serve the new version: the watcher
    started on the module's own path and reloaded it."""
    mod = _module(tmp_path, "watchroot.py", WATCH_ROOT)
    with HostProcess(["--root", str(root), "--tools", str(mod), "--workers", "1", "--reload"]) as h:
        assert "result" in h.initialize()
        assert "pong" in json.dumps(h.call("ping", {}, timeout=15))
        mod.write_text(textwrap.dedent(WATCH_ROOT).replace('"pong"', '"pong, reloaded"'))

        def reloaded() -> bool:
            assert h.proc.poll() is None, f"the host exited; stderr:\n{h.stderr[-2000:]}"
            return "pong, reloaded" in json.dumps(h.call("ping", {}, timeout=15))

        wait_until(reloaded, timeout=60, what="the reloaded module's answer")
        assert h.proc.poll() is None, f"the host exited; stderr:\n{h.stderr[-2000:]}"


NOISY = """
import sys
from toolwire.host import tool

@tool
def noisy() -> str:
    \"\"\"Writes a terminal escape sequence to its stderr.\"\"\"
    sys.stderr.write("\\x1b]0;pwned\\x07fake line\\n")
    sys.stderr.flush()
    return "ok"
"""


def test_toolwire_call_does_not_pass_raw_escapes_from_a_worker(tmp_path: Path, root: Path) -> None:
    """Finding: a worker's stderr is the host's stderr, which ``toolwire call`` passes to
    the terminal unchanged: handler code can set the terminal title, clear lines or print
    fake host status lines (README: control characters in tool text are shown as escapes)."""
    mod = _module(tmp_path, "noisy.py", NOISY)
    out = subprocess.run(
        [
            str(Path(sys.executable).parent / "toolwire"),
            "call",
            "noisy",
            "--tools",
            str(mod),
            "--root",
            str(root),
        ],
        capture_output=True,
        timeout=60,
        cwd=str(tmp_path),
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    assert b"\x1b]0;pwned" not in out.stderr + out.stdout


RELOAD_V1 = """
from toolwire.host import tool

@tool
def ping() -> str:
    \"\"\"Answers pong.\"\"\"
    return "pong"
"""

RELOAD_V2 = """
from toolwire.host import before_tool_call, tool
from toolwire.host.workers import _workerside

@tool
def ping() -> str:
    \"\"\"Answers pong.\"\"\"
    return "pong"

@before_tool_call
def watch(call, args, ctx):
    return None

_initialize = _workerside._Worker.initialize

def initialize(self, params, ctx):
    info = _initialize(self, params, ctx)
    info["hooks"][0]["tools"] = 5  # not a list of names
    return info

_workerside._Worker.initialize = initialize
"""


def test_a_malformed_worker_answer_on_reload_does_not_stop_the_host(
    tmp_path: Path, root: Path
) -> None:
    """Finding: on ``--reload`` the host turns the new worker's ``initialize`` answer into
    stand-in tools and hooks catching only WorkerStartError and ValueError; a hook whose
    ``tools`` is not a list (TypeError) ends the whole host instead of leaving the
    previous version serving (protocol.md §12)."""
    mod = _module(tmp_path, "reloaded.py", RELOAD_V1)
    with HostProcess(["--root", str(root), "--tools", str(mod), "--workers", "1", "--reload"]) as h:
        assert "result" in h.initialize()
        h.request("logging/setLevel", {"level": "info"})
        assert "pong" in json.dumps(h.call("ping", {}))
        mod.write_text(textwrap.dedent(RELOAD_V2))
        seen: list[object] = []

        def reload_reported() -> bool:
            seen.extend(h.drain())
            return h.proc.poll() is not None or any(
                isinstance(m, dict)
                and m.get("method") == "notifications/message"
                and "eload" in str(m.get("params", {}).get("data"))
                for m in seen
            )

        wait_until(reload_reported, timeout=30, what="the reload to be reported")
        assert h.proc.poll() is None, f"the host exited; stderr:\n{h.stderr[-1500:]}"
        assert "pong" in json.dumps(h.call("ping", {}))

"""Benchmark: toolwire against the official MCP SDK server (MCPServer), side by side in one run.

Three contenders: "toolwire workers" (``--isolation process``, the default: the tool module
runs in a worker process, under bubblewrap when the sandbox is active), "toolwire in-process"
(``--isolation none``: the module imported into the host), both framed as ndjson, and the MCP
SDK's MCPServer. Every scenario spawns each server fresh and drives it with the same minimal
raw JSON-RPC client (asyncio subprocess pipes, no SDK on the client side), so the client costs
the same for all. Servers and tools: bench/servers/ (echo {text} async, echo_sync {text},
sleep {ms} async, block {ms} synchronous, hog {ms} async never yielding, stuck: hog under a
0.5 s timeout).

Scenarios: cold start to the first tools/list; cold start to the whole list of 2,000 tools with
raw JSON Schemas of 25 properties (servers/many_schemas.py; the SDK side uses its low-level
Server, as MCPServer cannot take raw schemas); sequential echo p50/p99 (async and sync
handler); 5000 pipelined echo calls; 20 concurrent 200 ms async sleeps; echo latency while N
synchronous blocking calls are in flight (N = 5, 39, 200); one 5 MiB echo (time and response
bytes); idle and peak RSS (for workers: the host and, apart, each worker python found among
the host's descendants by ``toolwire.host.workers.worker`` in its command line, and its bubblewrap
wrapper); ping latency while a tool holds its event loop for 2 s; a call stuck past its
0.5 s timeout: when its error result arrives, when the stuck worker is gone and when the
next call is answered; how long the server takes to exit after stdin's EOF or SIGTERM while
a tool is busy (a synchronous tool blocking a thread, or an async tool holding the event
loop without yielding), capped at EXIT_CAP seconds. Worker-only: the worker's start
(``worker ... ready in N ms`` on the host's stderr at ``--log-level info``), with and without
the sandbox, and the worker process driven directly by this client (no host, no sandbox),
to split the hop's cost. The test suite checks these behaviours only with generous bounds
(tests/e2e_helpers.py PROMPT); the tight figures are these.

Usage: python bench/run.py [--quick] [--out bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PY = sys.executable


@dataclass
class Server:
    """How to start one contender."""

    label: str
    argv: list[str]
    framing: str  # "ndjson" or "lsp"
    many_argv: list[str] | None = None  # the same server with the 2,000-tool set
    builtins_argv: list[str] | None = None  # toolwire's default host: its 7 built-in tools
    kind: str = "mcp"  # "workers", "inproc", "mcp" or "raw"


WORKERS = "toolwire workers"
BEFORE = "toolwire workers, before"
"""The ``--baseline`` contender: the workers column of another checkout's interpreter."""
INPROC = "toolwire in-process"
INPROC_BEFORE = "toolwire in-process, before"
"""The ``--baseline`` contender's in-process column."""
MCP = "MCP SDK MCPServer"
RAW = "raw asyncio/orjson"
"""The limit: bench/servers/raw_stdio.py, a plain asyncio echo server, same framing."""
RAW_SCENARIOS = ("cold start", "sequential echo", "sequential sync echo", "pipelined echo")
"""The scenarios the raw server runs (it serves echo and echo_sync only)."""

ROOT = Path(tempfile.gettempdir())
"""The toolwire servers' --root (a scratch directory made by main()): the marker files of
the busy-tool scenarios go here, as a sandboxed worker sees the host's /tmp only there."""


def toolwire_argv(
    isolation: str, tools: str | None, *extra: str, python: str | None = None
) -> list[str]:
    """``python -m toolwire.host`` with one isolation mode, in the scratch root."""
    # Another checkout's python gets -P: the working directory (this checkout) must not
    # shadow its own toolwire.
    start = [python, "-P"] if python else [PY]
    argv = [*start, "-m", "toolwire.host", "--no-entry-points", "--root", str(ROOT)]
    argv += ["--isolation", isolation, *extra]
    if tools is not None:
        argv += ["--no-builtins", "--tools", str(HERE / "servers" / tools)]
    return argv


def make_servers(baseline: str | None = None) -> list[Server]:
    """The four contenders (their argv name ROOT, so this runs once ROOT is set), and
    with ``baseline`` (another checkout's python) two more: its workers and its
    in-process host."""
    extra = []
    if baseline:
        extra.append(
            Server(
                BEFORE,
                toolwire_argv("process", "toolwire_tools.py", python=baseline),
                "ndjson",
                toolwire_argv("process", "toolwire_many.py", python=baseline),
                toolwire_argv("process", None, python=baseline),
                "workers",
            )
        )
        extra.append(
            Server(
                INPROC_BEFORE,
                toolwire_argv("none", "toolwire_tools.py", python=baseline),
                "ndjson",
                toolwire_argv("none", "toolwire_many.py", python=baseline),
                toolwire_argv("none", None, python=baseline),
                "inproc",
            )
        )
    return [
        *extra,
        Server(
            WORKERS,
            toolwire_argv("process", "toolwire_tools.py"),
            "ndjson",
            toolwire_argv("process", "toolwire_many.py"),
            toolwire_argv("process", None),
            "workers",
        ),
        Server(
            INPROC,
            toolwire_argv("none", "toolwire_tools.py"),
            "ndjson",
            toolwire_argv("none", "toolwire_many.py"),
            toolwire_argv("none", None),
            "inproc",
        ),
        Server(
            MCP,
            [PY, str(HERE / "servers" / "mcp_server.py")],
            "ndjson",
            # MCPServer derives schemas from signatures; raw schemas need the SDK's low-level Server.
            [PY, str(HERE / "servers" / "mcp_many.py")],
        ),
        Server(RAW, [PY, str(HERE / "servers" / "raw_stdio.py")], "ndjson", kind="raw"),
    ]


class RawClient:
    """A minimal JSON-RPC client over a subprocess's pipes (ndjson or Content-Length)."""

    def __init__(self, proc: asyncio.subprocess.Process, framing: str) -> None:
        self.proc = proc
        self.framing = framing
        self.pending: dict[int, asyncio.Future[Any]] = {}
        self.next_id = 1
        self.bytes_in = 0
        self.last_size = 0
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def start(
        cls, server: Server, argv: list[str] | None = None, stderr: bool = False
    ) -> RawClient:
        proc = await asyncio.create_subprocess_exec(
            *(argv or server.argv),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE if stderr else asyncio.subprocess.DEVNULL,
            limit=64 * 1024 * 1024,
        )
        return cls(proc, server.framing)

    async def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            if self.framing == "ndjson":
                line = await out.readline()
                if not line:
                    break
                self.bytes_in += len(line)
                self.last_size = len(line)
                msg = json.loads(line)
            else:
                length = -1
                while True:
                    h = await out.readline()
                    if not h:
                        return
                    if h in (b"\r\n", b"\n"):
                        break
                    name, _, value = h.decode().partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                body = await out.readexactly(length)
                self.bytes_in += len(body)
                self.last_size = len(body)
                msg = json.loads(body)
            mid = msg.get("id") if isinstance(msg, dict) else None
            if isinstance(mid, int) and "method" not in msg:
                fut = self.pending.pop(mid, None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(EOFError("server closed"))

    def frame(self, msg: dict[str, Any]) -> bytes:
        body = json.dumps(msg, separators=(",", ":")).encode()
        if self.framing == "ndjson":
            return body + b"\n"
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def prepare(self, method: str, params: Any = None) -> tuple[bytes, asyncio.Future[Any]]:
        mid = self.next_id
        self.next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": mid, "method": method}
        if params is not None:
            msg["params"] = params
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[mid] = fut
        return self.frame(msg), fut

    async def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    async def request(self, method: str, params: Any = None) -> Any:
        data, fut = self.prepare(method, params)
        await self.write(data)
        return await fut

    async def notify(self, method: str) -> None:
        await self.write(self.frame({"jsonrpc": "2.0", "method": method}))

    async def initialize(self) -> None:
        await self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        )
        await self.notify("notifications/initialized")

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bytes, asyncio.Future[Any]]:
        return self.prepare("tools/call", {"name": name, "arguments": arguments})

    def rss(self) -> tuple[float, float]:
        """(current RSS, peak RSS) of the server process, in MiB."""
        return rss_of(self.proc.pid)

    async def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 3)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        self.reader.cancel()


def ok(resp: Any) -> None:
    if "error" in resp or resp.get("result", {}).get("isError"):
        raise RuntimeError(f"call failed: {str(resp)[:300]}")


def rss_of(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of one process, in MiB (zeros once it is gone)."""
    cur = peak = 0.0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                cur = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1]) / 1024
    except OSError:
        pass
    return cur, peak


def pss_of(pid: int) -> float | None:
    """Proportional set size of one process in MiB (shared pages divided among their
    users), or None when /proc does not let us read it."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def worker_processes(host_pid: int) -> tuple[list[int], list[int], list[int]]:
    """(worker pythons, bubblewrap wrappers, worker templates) among the host's
    descendants: the processes whose command line holds ``toolwire.host.workers.worker``, told
    apart by their name, and those whose command line shows ``toolwire-worker-tmpl``
    (the template a module's workers are forked from, toolwire.host.workers.template);
    a forked worker's init (``toolwire-worker-ns-init``, the first process of its own
    sandbox) counts as a wrapper, as bubblewrap does for a spawned one."""
    pythons: list[int] = []
    wrappers: list[int] = []
    templates: list[int] = []
    for pid in descendants(host_pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            comm = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        if b"toolwire-worker-tmpl" in cmdline and comm != "bwrap":
            templates.append(pid)
        elif b"toolwire-worker-ns-init" in cmdline or b"toolwire-worker-egress-relay" in cmdline:
            wrappers.append(pid)  # a forked worker's init (its sandbox's PID 1), its relay
        elif b"toolwire.host.workers.worker" in cmdline:
            (wrappers if comm == "bwrap" else pythons).append(pid)
    return pythons, wrappers, templates


# ----------------------------------------------------------------------------- scenarios


async def cold_start(server: Server, runs: int) -> dict[str, float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        c = await RawClient.start(server)
        await c.initialize()
        await c.request("tools/list")
        times.append(time.perf_counter() - t0)
        await c.close()
    return {"cold_start_ms": statistics.median(times) * 1000}


async def cold_start_builtins(server: Server, runs: int) -> dict[str, float]:
    """Start to the first tools/list of the default host (7 built-in tools); toolwire only."""
    if server.builtins_argv is None:
        return {}
    figures = await cold_start(Server(server.label, server.builtins_argv, server.framing), runs)
    return {"cold_start_builtins_ms": figures["cold_start_ms"]}


async def cold_start_many(server: Server, runs: int, list_cache: bool = True) -> dict[str, float]:
    """Start to the whole list of 2,000 raw-schema tools (every page, following nextCursor);
    with ``list_cache`` False, of this checkout's workers only, with ``--no-list-cache``
    (every start waits for the worker's answer, as the first start of a module does)."""
    assert server.many_argv is not None
    if not list_cache and server.label != WORKERS:
        return {}
    argv = server.many_argv if list_cache else [*server.many_argv, "--no-list-cache"]
    many = Server(server.label, argv, server.framing)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        c = await RawClient.start(many)
        await c.initialize()
        listed = 0
        cursor = None
        while True:
            resp = await c.request("tools/list", {"cursor": cursor} if cursor else None)
            listed += len(resp["result"]["tools"])
            cursor = resp["result"].get("nextCursor")
            if not cursor:
                break
        times.append(time.perf_counter() - t0)
        await c.close()
        if listed != 2000:
            raise RuntimeError(f"{server.label}: listed {listed} tools, not 2000")
    key = "cold_start_2000_tools_ms" if list_cache else "cold_start_2000_tools_nocache_ms"
    return {key: statistics.median(times) * 1000}


async def with_client(
    server: Server, body: Callable[[RawClient], Awaitable[dict[str, float]]]
) -> dict[str, float]:
    c = await RawClient.start(server)
    try:
        await c.initialize()
        return await body(c)
    finally:
        await c.close()


async def sequential(
    c: RawClient, n: int, tool: str = "echo", prefix: str = "seq"
) -> dict[str, float]:
    for _ in range(50):  # warm-up
        data, fut = c.call(tool, {"text": "hello"})
        await c.write(data)
        await fut
    lat = []
    for _ in range(n):
        data, fut = c.call(tool, {"text": "hello"})
        t0 = time.perf_counter()
        await c.write(data)
        ok(await fut)
        lat.append(time.perf_counter() - t0)
    lat.sort()
    return {
        f"{prefix}_p50_ms": lat[len(lat) // 2] * 1000,
        f"{prefix}_p99_ms": lat[int(len(lat) * 0.99)] * 1000,
    }


async def direct_worker(server: Server, n: int) -> dict[str, float]:
    """Sequential echo (async and sync handler) on a worker process driven directly by
    this client: no host and no sandbox in between, so what is left is the worker's own
    share of the hop (its session, the handler, one pipe round trip). Workers only."""
    if server.kind != "workers":
        return {}
    config = {
        "spec": str(HERE / "servers" / "toolwire_tools.py"),
        "kind": "tools",
        "root": str(ROOT),
        "sysPath": [p for p in sys.path if p],
        "maxThreads": 256,
        "logLevel": "warning",
    }
    argv = [PY, "-P", "-m", "toolwire.host.workers.worker", json.dumps(config)]
    c = await RawClient.start(server, argv)
    try:
        await c.request("initialize", {"protocolVersion": "toolwire-worker/1"})
        seq = 0

        def call(name: str, arguments: dict[str, Any]) -> tuple[bytes, asyncio.Future[Any]]:
            nonlocal seq
            seq += 1
            params = {"name": name, "arguments": arguments, "callId": seq, "capabilities": {}}
            return c.prepare("tools/call", {**params, "ref": 0})

        c.call = call  # type: ignore[method-assign]
        out = await sequential(c, n, "echo", "direct_seq")
        out.update(await sequential(c, n, "echo_sync", "direct_seq_sync"))
        return out
    finally:
        await c.close()


async def pipelined(c: RawClient, n: int) -> dict[str, float]:
    """``n`` echo calls written at once, answered per second: the throughput once the
    server serves. The warm-up (as in :func:`sequential`) keeps a start that goes on after
    the ``initialize`` answer (a worker still starting, answered from the definition
    cache) out of this figure; the cold start scenarios measure that."""
    for _ in range(50):  # warm-up
        data, fut = c.call("echo", {"text": "hello"})
        await c.write(data)
        await fut
    frames, futs = [], []
    for i in range(n):
        data, fut = c.call("echo", {"text": f"hello {i}"})
        frames.append(data)
        futs.append(fut)
    t0 = time.perf_counter()
    await c.write(b"".join(frames))
    results = await asyncio.gather(*futs)
    dt = time.perf_counter() - t0
    for r in results[:5]:
        ok(r)
    return {"pipelined_per_s": n / dt}


async def concurrent_sleeps(c: RawClient, n: int = 20, ms: int = 200) -> dict[str, float]:
    frames, futs = [], []
    for _ in range(n):
        data, fut = c.call("sleep", {"ms": ms})
        frames.append(data)
        futs.append(fut)
    t0 = time.perf_counter()
    await c.write(b"".join(frames))
    for r in await asyncio.gather(*futs):
        ok(r)
    return {"sleeps_20x200ms_ms": (time.perf_counter() - t0) * 1000}


async def echo_under_blocking(c: RawClient, n_block: int, block_ms: int) -> dict[str, float]:
    frames, futs = [], []
    for _ in range(n_block):
        data, fut = c.call("block", {"ms": block_ms})
        frames.append(data)
        futs.append(fut)
    await c.write(b"".join(frames))
    await asyncio.sleep(0.05)  # let the server start the blocking calls
    lat = []
    for _ in range(10):
        data, fut = c.call("echo", {"text": "ping"})
        t0 = time.perf_counter()
        await c.write(data)
        ok(await fut)
        lat.append(time.perf_counter() - t0)
    await asyncio.gather(*futs)
    return {f"echo_with_{n_block}_blocking_ms": statistics.median(lat) * 1000}


async def big_echo(c: RawClient, size: int = 5 * 1024 * 1024) -> dict[str, float]:
    text = "x" * size
    data, fut = c.call("echo", {"text": text})
    t0 = time.perf_counter()
    await c.write(data)
    resp = await fut
    dt = time.perf_counter() - t0
    ok(resp)
    assert resp["result"]["content"][0]["text"] == text
    return {"echo_5MiB_ms": dt * 1000, "echo_5MiB_response_MiB": c.last_size / 1024 / 1024}


def worker_memory(c: RawClient, when: str) -> dict[str, float]:
    """RSS of the host's worker pythons (per worker) and their bubblewrap wrappers."""
    pythons, wrappers, templates = worker_processes(c.proc.pid)
    if not pythons:
        return {}
    out = {f"workers_{when}": float(len(pythons))}
    if when == "idle":
        rss = [rss_of(pid)[0] for pid in pythons]
        out["worker_idle_rss_MiB"] = statistics.mean(rss)
        pss = [pss_of(pid) for pid in pythons]
        if all(v is not None for v in pss):
            out["worker_idle_pss_MiB"] = statistics.mean(v for v in pss if v is not None)
        if wrappers:
            out["wrapper_idle_rss_MiB"] = sum(rss_of(pid)[0] for pid in wrappers) / len(pythons)
        template_rss = [rss_of(pid)[0] for pid in templates]
        if templates:
            out["template_idle_rss_MiB"] = sum(template_rss)
        out["idle_rss_total_MiB"] = (
            c.rss()[0] + sum(rss) + sum(rss_of(p)[0] for p in wrappers) + sum(template_rss)
        )
        every = [c.proc.pid, *pythons, *wrappers, *templates]
        every_pss = [pss_of(pid) for pid in every]
        if all(v is not None for v in every_pss):
            out["idle_pss_total_MiB"] = sum(v for v in every_pss if v is not None)
    else:
        out["worker_peak_rss_MiB"] = max(rss_of(pid)[1] for pid in pythons)
    return out


async def memory(c: RawClient) -> dict[str, float]:
    await c.request("tools/list")
    idle, _ = c.rss()
    pss = pss_of(c.proc.pid)
    figures = worker_memory(c, "idle")
    frames, futs = [], []
    for i in range(2000):
        data, fut = c.call("echo", {"text": f"hello {i}"})
        frames.append(data)
        futs.append(fut)
    await c.write(b"".join(frames))
    await asyncio.gather(*futs)
    await big_echo(c)
    _, peak = c.rss()
    figures.update(worker_memory(c, "after"))
    figures.setdefault("idle_rss_total_MiB", idle)
    if "idle_pss_total_MiB" not in figures and pss is not None:
        figures["idle_pss_total_MiB"] = pss
    return {"idle_rss_MiB": idle, "peak_rss_MiB": peak, **figures}


READY = re.compile(rb"worker \S+ #1 ready in (\d+) ms")


async def worker_start(server: Server, sandbox: bool) -> dict[str, float]:
    """The start of the module's first worker as the host logs it (``--log-level info``):
    from spawning it to its ``initialize`` answer. Workers only."""
    if server.kind != "workers":
        return {}
    argv = server.argv + ["--log-level", "info"] + ([] if sandbox else ["--sandbox", "none"])
    c = await RawClient.start(server, argv, stderr=True)
    try:
        await c.initialize()
        await c.request("tools/list")
        err = c.proc.stderr
        assert err is not None
        while True:  # logged before the host serves, so already in the pipe
            line = await asyncio.wait_for(err.readline(), 5)
            if not line:
                raise RuntimeError("the host never logged its worker ready")
            m = READY.search(line)
            if m:
                key = "worker_ready_ms" if sandbox else "worker_ready_nosandbox_ms"
                return {key: float(m.group(1))}
    finally:
        await c.close()


async def restart_after_crash(server: Server, start: str = "spawn") -> dict[str, float]:
    """``--workers 1``: a worker crashes (the ``crash`` tool) and an echo is sent as soon
    as the crash's error result arrives; milliseconds from that result to the echo's
    answer (the new worker's start included). Workers only; ``start`` "fork" runs the
    host with ``--worker-start fork`` (this checkout's workers and a ``--baseline``'s,
    which must then have the option: any checkout from issue 26's first step on) and
    reports ``restart_after_crash_fork_ms``; "spawn" passes ``--worker-start spawn`` to
    this checkout's host (whose default is ``fork``) and nothing to a baseline's."""
    if server.kind != "workers" or (start != "spawn" and server.label not in (WORKERS, BEFORE)):
        return {}
    extra = ["--worker-start", start] if start != "spawn" or server.label == WORKERS else []
    c = await RawClient.start(server, [*server.argv, "--workers", "1", *extra])
    try:
        await c.initialize()
        ok(await c.request("tools/call", {"name": "echo", "arguments": {"text": "warm"}}))
        crashed = await c.request("tools/call", {"name": "crash", "arguments": {}})
        if not crashed.get("result", {}).get("isError"):
            raise RuntimeError(f"the crash was not reported: {str(crashed)[:300]}")
        t0 = time.perf_counter()
        ok(await c.request("tools/call", {"name": "echo", "arguments": {"text": "again"}}))
        key = "restart_after_crash_ms" if start == "spawn" else f"restart_after_crash_{start}_ms"
        return {key: (time.perf_counter() - t0) * 1000}
    finally:
        await c.close()


async def wait_marker(marker: Path, what: str) -> None:
    deadline = time.monotonic() + 10
    while not marker.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} never started")
        await asyncio.sleep(0.005)


HOG_MS = 2000
"""How long the hog of the ping scenario holds its event loop."""


async def ping_while_stuck(c: RawClient) -> dict[str, float]:
    """The slowest of 5 pings sent one after another while an async tool holds its
    event loop for HOG_MS (in a worker: the worker's loop; in-process: the host's)."""
    marker = Path(tempfile.mkdtemp(prefix="ping-", dir=ROOT)) / "started"
    data, fut = c.call("hog", {"ms": HOG_MS, "marker": str(marker)})
    await c.write(data)
    await wait_marker(marker, "the hog call")
    lat = []
    for _ in range(5):
        t0 = time.perf_counter()
        await c.request("ping")
        lat.append(time.perf_counter() - t0)
    await fut
    shutil.rmtree(marker.parent, ignore_errors=True)
    return {"ping_stuck_max_ms": max(lat) * 1000}


STUCK_MS = 3000
"""How long the ``stuck`` tool (0.5 s timeout) holds its event loop."""


async def timeout_stuck(server: Server) -> dict[str, float]:
    """A call of ``stuck`` (never yields for STUCK_MS, timeout 0.5 s): milliseconds past
    the timeout until its error result, until its worker is gone (killed 0.5 s after the
    cancellation it ignores), and until the next echo is answered. toolwire only."""
    if server.kind == "mcp":
        return {}

    async def body(c: RawClient) -> dict[str, float]:
        await c.request("tools/list")
        before, _, _ = worker_processes(c.proc.pid)
        data, fut = c.call("stuck", {"ms": STUCK_MS})
        t0 = time.perf_counter()
        await c.write(data)
        resp = await fut
        t_err = time.perf_counter()
        text = str(resp.get("result", {}).get("content", ""))
        # In-process the held loop cannot time the call out: it answers "done" when free.
        timed_out = bool(resp.get("result", {}).get("isError")) and "timed out" in text
        if not timed_out and text.find("done") < 0:
            raise RuntimeError(f"{server.label}: stuck answered {str(resp)[:300]}")
        data, fut = c.call("echo", {"text": "after"})
        t1 = time.perf_counter()
        await c.write(data)
        ok(await fut)
        t_next = time.perf_counter()
        out = {
            "timeout_is_error": float(timed_out),
            "timeout_error_after_ms": (t_err - t0) * 1000 - 500,
            "timeout_next_call_ms": (t_next - t1) * 1000,
        }
        if before:
            # The stuck call's worker is one of them; the others keep running.
            while all(Path(f"/proc/{pid}").exists() for pid in before):
                if time.perf_counter() - t0 > 10:
                    break
                await asyncio.sleep(0.005)
            out["timeout_worker_gone_ms"] = (time.perf_counter() - t0) * 1000 - 500
        return out

    return await with_client(server, body)


EXIT_CAP = 10.0
"""Seconds the exit scenarios wait before killing a server that has not exited (the
figure then reads as the cap)."""


async def exit_while_busy(server: Server, how: str, tool: str) -> dict[str, float]:
    """Milliseconds from stdin's EOF (``how`` "eof") or SIGTERM ("sigterm") to the
    server's exit while a 60 s call of ``tool`` ("block": a synchronous tool in a
    thread; "hog": an async tool that never yields) runs; EXIT_CAP when it did not
    exit by then (it is killed)."""
    c = await RawClient.start(server)
    try:
        await c.initialize()
        # In the root: a sandboxed worker has a /tmp of its own.
        with tempfile.TemporaryDirectory(prefix="exit-", dir=ROOT) as tmp:
            marker = Path(tmp) / "started"
            data, fut = c.call(tool, {"ms": 60_000, "marker": str(marker)})
            # Never answered: the server ends first (its EOFError is expected).
            fut.add_done_callback(lambda f: f.cancelled() or f.exception())
            await c.write(data)
            await wait_marker(marker, f"{server.label}: the {tool} call")
            t0 = time.perf_counter()
            if how == "eof":
                assert c.proc.stdin is not None
                c.proc.stdin.close()
            else:
                c.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(c.proc.wait(), EXIT_CAP)
                dt = time.perf_counter() - t0
            except TimeoutError:
                dt = EXIT_CAP
        return {f"exit_{how}_{tool}_ms": dt * 1000}
    finally:
        if c.proc.returncode is None:
            c.proc.kill()
            await c.proc.wait()
        c.reader.cancel()


Scenario = Callable[[Server], Awaitable[dict[str, float]]]


def scenarios(quick: bool) -> list[tuple[str, Scenario]]:
    """Every scenario, as a function of the server it measures (spawned fresh)."""
    seq_n = 300 if quick else 1000
    out: list[tuple[str, Scenario]] = [
        ("cold start", lambda srv: cold_start(srv, 1)),
        ("cold start, 7 built-in tools", lambda srv: cold_start_builtins(srv, 1)),
        ("cold start, 2,000 tools", lambda srv: cold_start_many(srv, 1)),
        ("cold start, 2,000 tools, --no-list-cache", lambda srv: cold_start_many(srv, 1, False)),
        ("worker start", lambda srv: worker_start(srv, True)),
        ("worker start, --sandbox none", lambda srv: worker_start(srv, False)),
        ("first call after a worker crash", restart_after_crash),
        (
            "first call after a worker crash, --worker-start fork",
            lambda srv: restart_after_crash(srv, "fork"),
        ),
        ("sequential echo", lambda srv: with_client(srv, lambda c: sequential(c, seq_n))),
        (
            "sequential sync echo",
            lambda srv: with_client(srv, lambda c: sequential(c, seq_n, "echo_sync", "seq_sync")),
        ),
        ("worker driven directly", lambda srv: direct_worker(srv, seq_n)),
        ("pipelined echo", lambda srv: with_client(srv, lambda c: pipelined(c, 5000))),
        ("concurrent sleeps", lambda srv: with_client(srv, concurrent_sleeps)),
    ]
    for n in (5, 39, 200):
        out.append(
            (
                f"echo with {n} blocking",
                lambda srv, n=n: with_client(srv, lambda c: echo_under_blocking(c, n, 1000)),
            )
        )
    out += [
        ("5 MiB echo", lambda srv: with_client(srv, big_echo)),
        ("memory", lambda srv: with_client(srv, memory)),
        ("ping while a tool holds its loop", lambda srv: with_client(srv, ping_while_stuck)),
        ("a call stuck past its timeout", timeout_stuck),
    ]
    for how in ("eof", "sigterm"):
        for tool in ("block", "hog"):
            out.append(
                (
                    f"exit on {how} with a busy {tool} tool",
                    lambda srv, how=how, tool=tool: exit_while_busy(srv, how, tool),
                )
            )
    return out


SPREAD = ("worker_ready_ms", "worker_ready_nosandbox_ms")
"""Figures reported with their fastest and slowest round besides the median."""


def _paired(a: list[float] | None, b: list[float] | None) -> float | None:
    """The median of a[r] / b[r] over the rounds both have (None without any)."""
    if not a or not b or len(a) != len(b) or not all(b):
        return None
    return statistics.median(x / y for x, y in zip(a, b, strict=True))


async def bench_all(
    servers: list[Server], quick: bool, only: str | None = None
) -> dict[str, dict[str, float]]:
    """Run every scenario on every server, the servers taking turns within each round
    (A, B, C, A, B, C, ...), so a machine whose speed drifts affects all alike; each
    figure is the median of its rounds."""
    rounds = {
        "cold start": 3 if quick else 9,
        "cold start, 7 built-in tools": 3 if quick else 9,
        "cold start, 2,000 tools": 3 if quick else 5,
        "cold start, 2,000 tools, --no-list-cache": 3 if quick else 5,
        "worker start": 9 if quick else 25,
        "worker start, --sandbox none": 5 if quick else 15,
        "first call after a worker crash": 5 if quick else 9,
        "first call after a worker crash, --worker-start fork": 5 if quick else 9,
        # The figures issue 13 compares across servers: more rounds, compared pair by pair.
        "sequential echo": 3 if quick else 7,
        "pipelined echo": 3 if quick else 7,
    }
    samples: dict[str, dict[str, list[float]]] = {srv.label: {} for srv in servers}
    for name, scenario in scenarios(quick):
        if only and not re.search(only, name):
            continue
        n = rounds.get(name, 1 if quick else 3)
        print(f"  {name} ({n} rounds)", file=sys.stderr, flush=True)
        for _ in range(n):
            for srv in servers:
                if srv.kind == "raw" and name not in RAW_SCENARIOS:
                    continue
                for key, value in (await scenario(srv)).items():
                    samples[srv.label].setdefault(key, []).append(value)
    results = {
        label: {key: statistics.median(values) for key, values in figures.items()}
        for label, figures in samples.items()
    }
    for label, rounds_of in samples.items():
        for key in SPREAD:
            if key in rounds_of:
                results[label][f"{key}_min"] = min(rounds_of[key])
                results[label][f"{key}_max"] = max(rounds_of[key])
    w = results.get(WORKERS, {})
    ws, is_, ms = (samples.get(label, {}) for label in (WORKERS, INPROC, MCP))
    rs, ibs = samples.get(RAW, {}), samples.get(INPROC_BEFORE, {})
    i = results.get(INPROC, {})
    # Issue 26: in-process against the raw limit, and (with --baseline) against itself.
    for key, name in (
        ("seq_p50_ms", "seq_p50_ms"),
        ("seq_sync_p50_ms", "seq_sync_p50_ms"),
        ("pipelined_per_s", "pipelined"),
    ):
        paired = _paired(is_.get(key), rs.get(key))
        if paired is not None:
            i[f"{key}_vs_raw"] = paired
        paired = _paired(is_.get(key), ibs.get(key))
        if paired is not None:
            i[f"{name}_vs_before"] = paired
    for key in ("seq_p50_ms", "pipelined_per_s"):
        paired = _paired(ws.get(key), rs.get(key))
        if paired is not None:
            w[f"{key}_vs_raw"] = paired
    # Ratios between servers are taken round by round (the servers ran one after the
    # other within a round, so a machine whose speed drifts affects both sides of each
    # pair alike), and the median of those is reported.
    for key in ("seq_p50_ms", "seq_sync_p50_ms", "seq_p99_ms"):
        paired = _paired(ws.get(key), is_.get(key))
        if paired is not None:
            w[f"{key}_vs_inproc"] = paired
    paired = _paired(ws.get("seq_p50_ms"), ms.get("seq_p50_ms"))
    if paired is not None:
        w["seq_p50_ms_vs_mcp"] = paired
    paired = _paired(ws.get("pipelined_per_s"), is_.get("pipelined_per_s"))
    if paired is not None:
        w["pipelined_vs_inproc"] = paired
    paired = _paired(ws.get("pipelined_per_s"), ms.get("pipelined_per_s"))
    if paired is not None:
        w["pipelined_vs_mcp"] = paired
    for key in ("cold_start_ms", "seq_p50_ms"):
        paired = _paired(ws.get(key), is_.get(key))
        if paired is not None:
            w.setdefault(f"{key}_vs_inproc", paired)
    paired = _paired(ws.get("cold_start_ms"), ms.get("cold_start_ms"))
    if paired is not None:
        w["cold_start_ms_vs_mcp"] = paired
    for start in ("", "_fork"):
        restart = w.get(f"restart_after_crash{start}_ms")
        for label, key in ((INPROC, "restart_vs_inproc_cold"), (MCP, "restart_vs_mcp_cold")):
            cold = results.get(label, {}).get("cold_start_ms")
            if restart is not None and cold:
                w[key.replace("restart", f"restart{start}", 1)] = restart / cold
    bs = samples.get(BEFORE, {})
    for key in (
        "cold_start_ms",
        "restart_after_crash_ms",
        "restart_after_crash_fork_ms",
        "seq_p50_ms",
        "worker_ready_ms",
    ):
        paired = _paired(ws.get(key), bs.get(key))
        if paired is not None:
            w[f"{key}_vs_before"] = paired
    paired = _paired(ws.get("pipelined_per_s"), bs.get("pipelined_per_s"))
    if paired is not None:
        w["pipelined_vs_before"] = paired
    for figures in results.values():
        if figures.get("cold_start_ms") and "cold_start_2000_tools_ms" in figures:
            figures["many_tools_factor"] = (
                figures["cold_start_2000_tools_ms"] / figures["cold_start_ms"]
            )
        if figures.get("cold_start_ms") and "cold_start_2000_tools_nocache_ms" in figures:
            figures["many_tools_nocache_factor"] = (
                figures["cold_start_2000_tools_nocache_ms"] / figures["cold_start_ms"]
            )
        if figures.get("cold_start_builtins_ms") and "cold_start_2000_tools_ms" in figures:
            figures["many_vs_builtins_factor"] = (
                figures["cold_start_2000_tools_ms"] / figures["cold_start_builtins_ms"]
            )
    return results


# ----------------------------------------------------------------------------- report

ROWS: list[tuple[str, str, str]] = [
    # key, label, better ("lower"/"higher")
    ("cold_start_ms", "cold start to first tools/list (ms)", "lower"),
    ("cold_start_ms_vs_inproc", "cold start: worker ÷ in-process, paired (×)", "lower"),
    ("cold_start_ms_vs_mcp", "cold start: worker ÷ MCPServer, paired (×)", "lower"),
    ("cold_start_ms_vs_before", "cold start: worker ÷ worker before, paired (×)", "lower"),
    ("cold_start_2000_tools_ms", "cold start to the list of 2,000 raw-schema tools (ms)", "lower"),
    ("many_tools_factor", "2,000 tools ÷ own 7-tool cold start (×)", "lower"),
    (
        "cold_start_2000_tools_nocache_ms",
        "the same with --no-list-cache (every start waits for the worker) (ms)",
        "lower",
    ),
    ("many_tools_nocache_factor", "… ÷ own 7-tool cold start (×)", "lower"),
    ("cold_start_builtins_ms", "cold start of the default host, 7 built-in tools (ms)", "lower"),
    ("many_vs_builtins_factor", "2,000 tools ÷ the 7-tool default host's start (×)", "lower"),
    ("worker_ready_ms", "worker ready after its start, host's log line, median (ms)", "lower"),
    ("worker_ready_ms_min", "worker ready: fastest start (ms)", "lower"),
    ("worker_ready_ms_max", "worker ready: slowest start (ms)", "lower"),
    ("worker_ready_nosandbox_ms", "worker ready with --sandbox none, median (ms)", "lower"),
    ("worker_ready_nosandbox_ms_min", "worker ready with --sandbox none: fastest (ms)", "lower"),
    ("worker_ready_nosandbox_ms_max", "worker ready with --sandbox none: slowest (ms)", "lower"),
    (
        "restart_after_crash_ms",
        "--workers 1: first echo after a worker crash, from the crash's error result (ms)",
        "lower",
    ),
    ("restart_vs_inproc_cold", "… ÷ in-process cold start, same run (×)", "lower"),
    ("restart_vs_mcp_cold", "… ÷ MCPServer cold start, same run (×)", "lower"),
    ("restart_after_crash_ms_vs_before", "… worker ÷ worker before, paired (×)", "lower"),
    (
        "restart_after_crash_fork_ms",
        "the same with --worker-start fork (workers forked from a template) (ms)",
        "lower",
    ),
    ("restart_fork_vs_inproc_cold", "… ÷ in-process cold start, same run (×)", "lower"),
    ("restart_fork_vs_mcp_cold", "… ÷ MCPServer cold start, same run (×)", "lower"),
    ("restart_after_crash_fork_ms_vs_before", "… worker ÷ worker before, paired (×)", "lower"),
    ("worker_ready_ms_vs_before", "worker ready: worker ÷ worker before, paired (×)", "lower"),
    ("seq_p50_ms", "sequential echo p50 (ms)", "lower"),
    ("seq_p50_ms_vs_before", "sequential echo p50: ÷ the same column before, paired (×)", "lower"),
    ("seq_p50_ms_vs_inproc", "sequential echo p50: worker ÷ in-process, paired (×)", "lower"),
    ("seq_p50_ms_vs_mcp", "sequential echo p50: worker ÷ MCPServer, paired (×)", "lower"),
    ("seq_p50_ms_vs_raw", "sequential echo p50: ÷ raw asyncio/orjson, paired (×)", "lower"),
    ("seq_p99_ms", "sequential echo p99 (ms)", "lower"),
    ("seq_sync_p50_ms", "sequential echo, sync handler, p50 (ms)", "lower"),
    (
        "seq_sync_p50_ms_vs_inproc",
        "sequential sync echo p50: worker ÷ in-process, paired (×)",
        "lower",
    ),
    (
        "seq_sync_p50_ms_vs_raw",
        "sequential sync echo p50: ÷ raw asyncio/orjson, paired (×)",
        "lower",
    ),
    (
        "seq_sync_p50_ms_vs_before",
        "sequential sync echo p50: ÷ the same column before, paired (×)",
        "lower",
    ),
    ("seq_sync_p99_ms", "sequential echo, sync handler, p99 (ms)", "lower"),
    ("direct_seq_p50_ms", "echo p50, worker process driven directly, no host (ms)", "lower"),
    ("direct_seq_sync_p50_ms", "sync echo p50, worker driven directly, no host (ms)", "lower"),
    ("pipelined_per_s", "5000 pipelined echo calls (calls/s)", "higher"),
    ("pipelined_vs_inproc", "pipelined echo: worker ÷ in-process, paired (×)", "higher"),
    ("pipelined_vs_mcp", "pipelined echo: worker ÷ MCPServer, paired (×)", "higher"),
    ("pipelined_vs_before", "pipelined echo: ÷ the same column before, paired (×)", "higher"),
    ("pipelined_per_s_vs_raw", "pipelined echo: ÷ raw asyncio/orjson, paired (×)", "higher"),
    ("sleeps_20x200ms_ms", "20 concurrent 200 ms sleeps, wall (ms)", "lower"),
    ("echo_with_5_blocking_ms", "echo p50 with 5 sync calls blocking (ms)", "lower"),
    ("echo_with_39_blocking_ms", "echo p50 with 39 sync calls blocking (ms)", "lower"),
    ("echo_with_200_blocking_ms", "echo p50 with 200 sync calls blocking (ms)", "lower"),
    ("echo_5MiB_ms", "one 5 MiB echo round trip (ms)", "lower"),
    ("echo_5MiB_response_MiB", "5 MiB echo: response size (MiB)", "lower"),
    ("idle_rss_MiB", "idle RSS of the server process (host) (MiB)", "lower"),
    ("worker_idle_rss_MiB", "idle RSS per worker python (MiB)", "lower"),
    ("worker_idle_pss_MiB", "idle PSS per worker python (MiB)", "lower"),
    ("wrapper_idle_rss_MiB", "idle RSS of a worker's bubblewrap wrapper(s) (MiB)", "lower"),
    ("template_idle_rss_MiB", "idle RSS of the module's worker template (MiB)", "lower"),
    ("idle_rss_total_MiB", "idle RSS, host + workers + wrappers + template (MiB)", "lower"),
    ("idle_pss_total_MiB", "idle PSS, host + workers + wrappers + template (MiB)", "lower"),
    ("peak_rss_MiB", "peak RSS of the server process (host) (MiB)", "lower"),
    ("worker_peak_rss_MiB", "peak RSS of a worker python (MiB)", "lower"),
    ("workers_after", "workers running after the load (2,000 pipelined + 5 MiB)", "lower"),
    ("ping_stuck_max_ms", "ping, slowest of 5, while a tool holds its loop 2 s (ms)", "lower"),
    (
        "timeout_error_after_ms",
        "0.5 s timeout of a non-yielding call: answer, ms past the timeout",
        "lower",
    ),
    (
        "timeout_is_error",
        "… the answer is the timeout error (1 yes, 0 the tool's result)",
        "higher",
    ),
    ("timeout_worker_gone_ms", "… its stuck worker gone, ms past the timeout", "lower"),
    ("timeout_next_call_ms", "… the next echo call answered after (ms)", "lower"),
    ("exit_eof_block_ms", "exit after EOF, sync tool blocking (ms)", "lower"),
    ("exit_eof_hog_ms", "exit after EOF, async tool not yielding (ms)", "lower"),
    ("exit_sigterm_block_ms", "exit after SIGTERM, sync tool blocking (ms)", "lower"),
    ("exit_sigterm_hog_ms", "exit after SIGTERM, async tool not yielding (ms)", "lower"),
]

Check = Callable[[dict[str, float], dict[str, float], dict[str, float]], bool | None]


def _seq_target(w: dict[str, float], i: dict[str, float], m: dict[str, float]) -> bool | None:
    vs_i, vs_m = w.get("seq_p50_ms_vs_inproc"), w.get("seq_p50_ms_vs_mcp")
    if vs_i is None or vs_m is None:
        return None
    return vs_i <= 2 and vs_m <= 0.5


def _bound(key: str, limit: float, strict: bool = False) -> Check:
    def check(w: dict[str, float], i: dict[str, float], m: dict[str, float]) -> bool | None:
        v = w.get(key)
        if v is None:
            return None
        return v < limit if strict else v <= limit

    return check


def _pipelined_target(w: dict[str, float], i: dict[str, float], m: dict[str, float]) -> bool | None:
    vs_m = w.get("pipelined_vs_mcp")
    if vs_m is None:
        return None
    return vs_m >= 10


TARGETS: dict[str, tuple[str, Check]] = {
    "worker_ready_ms": ("≤ 150 ms", _bound("worker_ready_ms", 150)),
    "seq_p50_ms": ("≤ 2× in-process, ≤ ½ MCPServer (paired)", _seq_target),
    "pipelined_per_s": ("≥ 10× MCPServer (paired)", _pipelined_target),
    "worker_idle_rss_MiB": ("≤ 25 MiB", _bound("worker_idle_rss_MiB", 25)),
    "ping_stuck_max_ms": ("< 100 ms", _bound("ping_stuck_max_ms", 100, strict=True)),
    "timeout_error_after_ms": ("< 1,000 ms", _bound("timeout_error_after_ms", 1000, strict=True)),
}
"""Issue 13's figures for the workers column: row key → (target, check of the
workers', in-process and MCPServer figures; None when a figure is missing)."""


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        from importlib.metadata import version

        import mcp  # noqa: F401

        sdk = version("mcp")
    except Exception:
        sdk = "?"
    return (
        f"{platform.system()} {platform.release()}, {os.cpu_count()} cores ({cpu}), "
        f"Python {platform.python_version()}, mcp {sdk}"
    )


def _figure(v: float) -> str:
    """A figure as the table shows it: whole numbers from 100, three decimals under 1
    (sub-millisecond latencies), two otherwise."""
    if v >= 100:
        return f"{v:,.0f}"
    return f"{v:.3f}" if abs(v) < 1 else f"{v:.2f}"


def table(results: dict[str, dict[str, float]]) -> str:
    labels = list(results)
    ref = MCP
    others = [lab for lab in labels if lab != ref]
    head = (
        "| measure | "
        + " | ".join(labels)
        + " | "
        + " | ".join(f"{lab} vs MCPServer" for lab in others)
        + " | issue 13 target (workers) |"
    )
    sep = "|" + "---|" * (2 + len(labels) + len(others))
    lines = [head, sep]
    w, i, m = (results.get(lab, {}) for lab in (WORKERS, INPROC, MCP))
    for key, label, better in ROWS:
        if all(results[lab].get(key) is None for lab in labels):
            continue
        cells = []
        for lab in labels:
            v = results[lab].get(key)
            if v is not None and key.startswith("exit_") and v >= EXIT_CAP * 1000:
                cells.append(f"did not exit (killed at {EXIT_CAP:g} s)")
            else:
                cells.append("–" if v is None else _figure(v))
        ratios = []
        for lab in others:
            a, b = results[lab].get(key), results[ref].get(key)
            capped = key.startswith("exit_") and max(a or 0, b or 0) >= EXIT_CAP * 1000
            if not a or not b or capped:
                ratios.append("–")
            elif better == "higher":
                ratios.append(f"{a / b:.1f}× more")
            else:
                ratios.append(f"{a / b:.2f}×")
        target = ""
        if key in TARGETS:
            text, check = TARGETS[key]
            verdict = check(w, i, m)
            target = text + ("" if verdict is None else (": met" if verdict else ": **missed**"))
        lines.append(
            f"| {label} | " + " | ".join(cells) + " | " + " | ".join(ratios) + f" | {target} |"
        )
    return "\n".join(lines)


def kept_sections(old: str, new: str) -> str:
    """The ``## `` sections of the previous results file that ``new`` does not hold.

    The soak, the paused client and the HTTP bench write their own sections (by hand or
    by their own scripts); rewriting the file must not drop them. Returns them in their
    old order, each preceded by a blank line ("" when there are none).
    """
    headings = {line for line in new.splitlines() if line.startswith("## ")}
    sections: list[list[str]] = []
    keeping = False
    for line in old.splitlines():
        if line.startswith("## "):
            keeping = line not in headings
            if keeping:
                sections.append([])
        if keeping:
            sections[-1].append(line)
    return "".join("\n" + "\n".join(lines).rstrip("\n") + "\n" for lines in sections)


async def main_async(args: argparse.Namespace) -> None:
    servers = make_servers(args.baseline)
    print("benchmarking " + ", ".join(srv.label for srv in servers), file=sys.stderr)
    results = await bench_all(servers, args.quick, args.scenarios)
    report = table(results)
    print(report)
    if args.out:
        text = (
            "# Benchmark results\n\n"
            f"Machine: {machine()}.\n"
            f"Run: `make bench` on {time.strftime('%Y-%m-%d')}; every figure from one run, "
            "each server spawned fresh for every measurement and driven by the same raw client; "
            "the servers take turns within each round and each figure is the median of its "
            "rounds (9 for cold start, 25 for the worker's start, 7 for sequential and "
            'pipelined echo, 3 for the rest). Ratios between servers marked "paired" are '
            "the median of the per-round ratios.\n"
            "Ratios: for times and sizes, toolwire ÷ MCPServer (lower is better); "
            "for throughput, how many times more.\n\n" + report + "\n"
        )
        notes = HERE / "NOTES.md"
        if notes.exists():
            text += "\n" + notes.read_text()
        out = Path(args.out)
        text += kept_sections(out.read_text() if out.exists() else "", text)
        out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument(
        "--out", default=str(HERE / "RESULTS.md"), help="markdown report path ('' for none)"
    )
    p.add_argument(
        "--only",
        choices=("all", "speed", "soak", "paused"),
        default="all",
        help=(
            "run only the timed benchmarks, only the soak (bench/soak.py) or only the "
            "paused client (bench/paused.py)"
        ),
    )
    p.add_argument(
        "--scenarios",
        default=None,
        help="run only the scenarios whose name matches this regular expression",
    )
    p.add_argument(
        "--baseline",
        default=None,
        help="the python of another checkout: its workers run as a fourth contender",
    )
    args = p.parse_args()
    if args.only == "soak":
        sys.exit(run_soak())
    if args.only == "paused":
        sys.exit(run_paused())
    # Byte-compile toolwire like any installed package is (pip compiles what it installs;
    # an editable checkout under PYTHONDONTWRITEBYTECODE=1 would otherwise recompile
    # every changed module at every start), then warm the file cache.
    repo = HERE.parent
    subprocess.run(
        [PY, "-m", "compileall", "-q", *(str(repo / d) for d in ("toolwire", "host", "client"))],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run([PY, "-c", "import toolwire.host.serve.connection, mcp"], check=True)
    global ROOT
    ROOT = Path(tempfile.mkdtemp(prefix="toolwire-bench-root-"))
    # The workers' definition cache (host/workers/listcache.py) of this run only, outside
    # the root (a cache in the root is refused): the first round of a scenario fills it,
    # the others start as every start after a module's first does.
    cache_home = tempfile.mkdtemp(prefix="toolwire-bench-cache-")
    os.environ["XDG_CACHE_HOME"] = cache_home
    try:
        asyncio.run(main_async(args))
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)
        shutil.rmtree(cache_home, ignore_errors=True)
    if args.only == "all" and not args.scenarios:
        sys.exit(run_soak() or run_paused())


def run_soak() -> int:
    """The soak (bench/soak.py) with its default figures; its exit status."""
    return subprocess.run([PY, str(HERE / "soak.py")], check=False).returncode


def run_paused() -> int:
    """The paused client (bench/paused.py) with its default 60 s pause; its exit status."""
    return subprocess.run([PY, str(HERE / "paused.py")], check=False).returncode


if __name__ == "__main__":
    main()

"""Benchmark: toolwire against the official MCP SDK server (MCPServer), side by side in one run.

Every scenario spawns each server fresh and drives it with the same minimal raw JSON-RPC client
(asyncio subprocess pipes, no SDK on the client side), so the client costs the same for both.
Servers and tools: bench/servers/ (echo {text}, sleep {ms} async, block {ms} synchronous).

Scenarios: cold start to the first tools/list; cold start to the whole list of 2,000 tools with
raw JSON Schemas of 25 properties (servers/many_schemas.py; the SDK side uses its low-level
Server, as MCPServer cannot take raw schemas); sequential echo p50/p99; 5000 pipelined echo calls;
20 concurrent 200 ms async sleeps; echo latency while N synchronous blocking calls are in flight
(N = 5, 39, 200); one 5 MiB echo (time and response bytes); idle and peak RSS; how long
the server takes to exit after stdin's EOF or SIGTERM while a tool is busy (a synchronous
tool blocking a thread, or an async tool holding the event loop without yielding), capped
at EXIT_CAP seconds. The test suite checks these exits only with generous bounds
(tests/e2e_helpers.py PROMPT); the tight figures are these.

Usage: python bench/run.py [--quick] [--out bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
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


TOOLWIRE_MANY = [
    PY,
    "-m",
    "toolwire.host",
    "--no-builtins",
    "--no-entry-points",
    "--tools",
    str(HERE / "servers" / "toolwire_many.py"),
]
"""toolwire serving the 2,000 raw-schema tools of servers/many_schemas.py."""

TOOLWIRE_BUILTINS = [PY, "-m", "toolwire.host", "--no-entry-points"]
"""toolwire's default host (the 7 built-in tools), the yardstick of the 2,000-tool start."""

SERVERS = [
    Server(
        "toolwire (ndjson)",
        [
            PY,
            "-m",
            "toolwire.host",
            "--no-builtins",
            "--no-entry-points",
            "--tools",
            str(HERE / "servers" / "toolwire_tools.py"),
        ],
        "ndjson",
        TOOLWIRE_MANY,
        TOOLWIRE_BUILTINS,
    ),
    Server(
        "toolwire (lsp)",
        [
            PY,
            "-m",
            "toolwire.host",
            "--no-builtins",
            "--no-entry-points",
            "--tools",
            str(HERE / "servers" / "toolwire_tools.py"),
        ],
        "lsp",
        TOOLWIRE_MANY,
        TOOLWIRE_BUILTINS,
    ),
    Server(
        "MCP SDK MCPServer",
        [PY, str(HERE / "servers" / "mcp_server.py")],
        "ndjson",
        # MCPServer derives schemas from signatures; raw schemas need the SDK's low-level Server.
        [PY, str(HERE / "servers" / "mcp_many.py")],
    ),
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
    async def start(cls, server: Server) -> RawClient:
        proc = await asyncio.create_subprocess_exec(
            *server.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
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
        cur = peak = 0.0
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    cur = int(line.split()[1]) / 1024
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) / 1024
        except OSError:
            pass
        return cur, peak

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


async def cold_start_many(server: Server, runs: int) -> dict[str, float]:
    """Start to the whole list of 2,000 raw-schema tools (every page, following nextCursor)."""
    assert server.many_argv is not None
    many = Server(server.label, server.many_argv, server.framing)
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
    return {"cold_start_2000_tools_ms": statistics.median(times) * 1000}


async def with_client(
    server: Server, body: Callable[[RawClient], Awaitable[dict[str, float]]]
) -> dict[str, float]:
    c = await RawClient.start(server)
    try:
        await c.initialize()
        return await body(c)
    finally:
        await c.close()


async def sequential(c: RawClient, n: int) -> dict[str, float]:
    for _ in range(50):  # warm-up
        data, fut = c.call("echo", {"text": "hello"})
        await c.write(data)
        await fut
    lat = []
    for _ in range(n):
        data, fut = c.call("echo", {"text": "hello"})
        t0 = time.perf_counter()
        await c.write(data)
        ok(await fut)
        lat.append(time.perf_counter() - t0)
    lat.sort()
    return {"seq_p50_ms": lat[len(lat) // 2] * 1000, "seq_p99_ms": lat[int(len(lat) * 0.99)] * 1000}


async def pipelined(c: RawClient, n: int) -> dict[str, float]:
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


async def memory(c: RawClient) -> dict[str, float]:
    await c.request("tools/list")
    idle, _ = c.rss()
    frames, futs = [], []
    for i in range(2000):
        data, fut = c.call("echo", {"text": f"hello {i}"})
        frames.append(data)
        futs.append(fut)
    await c.write(b"".join(frames))
    await asyncio.gather(*futs)
    await big_echo(c)
    _, peak = c.rss()
    return {"idle_rss_MiB": idle, "peak_rss_MiB": peak}


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
        with tempfile.TemporaryDirectory(prefix="toolwire-bench-") as tmp:
            marker = Path(tmp) / "started"
            data, fut = c.call(tool, {"ms": 60_000, "marker": str(marker)})
            # Never answered: the server ends first (its EOFError is expected).
            fut.add_done_callback(lambda f: f.cancelled() or f.exception())
            await c.write(data)
            deadline = time.monotonic() + 10
            while not marker.exists():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{server.label}: the {tool} call never started")
                await asyncio.sleep(0.005)
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
        ("sequential echo", lambda srv: with_client(srv, lambda c: sequential(c, seq_n))),
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


async def bench_all(quick: bool) -> dict[str, dict[str, float]]:
    """Run every scenario on every server, the servers taking turns within each round
    (A, B, C, A, B, C, ...), so a machine whose speed drifts affects all alike; each
    figure is the median of its rounds."""
    rounds = {
        "cold start": 3 if quick else 9,
        "cold start, 7 built-in tools": 3 if quick else 9,
        "cold start, 2,000 tools": 3 if quick else 5,
    }
    samples: dict[str, dict[str, list[float]]] = {srv.label: {} for srv in SERVERS}
    for name, scenario in scenarios(quick):
        n = rounds.get(name, 1 if quick else 3)
        print(f"  {name} ({n} rounds)", file=sys.stderr, flush=True)
        for _ in range(n):
            for srv in SERVERS:
                for key, value in (await scenario(srv)).items():
                    samples[srv.label].setdefault(key, []).append(value)
    results = {
        label: {key: statistics.median(values) for key, values in figures.items()}
        for label, figures in samples.items()
    }
    for figures in results.values():
        if figures.get("cold_start_ms") and "cold_start_2000_tools_ms" in figures:
            figures["many_tools_factor"] = (
                figures["cold_start_2000_tools_ms"] / figures["cold_start_ms"]
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
    ("cold_start_2000_tools_ms", "cold start to the list of 2,000 raw-schema tools (ms)", "lower"),
    ("many_tools_factor", "2,000 tools ÷ own 3-tool cold start (×)", "lower"),
    ("cold_start_builtins_ms", "cold start of the default host, 7 built-in tools (ms)", "lower"),
    ("many_vs_builtins_factor", "2,000 tools ÷ the 7-tool default host's start (×)", "lower"),
    ("seq_p50_ms", "sequential echo p50 (ms)", "lower"),
    ("seq_p99_ms", "sequential echo p99 (ms)", "lower"),
    ("pipelined_per_s", "5000 pipelined echo calls (calls/s)", "higher"),
    ("sleeps_20x200ms_ms", "20 concurrent 200 ms sleeps, wall (ms)", "lower"),
    ("echo_with_5_blocking_ms", "echo p50 with 5 sync calls blocking (ms)", "lower"),
    ("echo_with_39_blocking_ms", "echo p50 with 39 sync calls blocking (ms)", "lower"),
    ("echo_with_200_blocking_ms", "echo p50 with 200 sync calls blocking (ms)", "lower"),
    ("echo_5MiB_ms", "one 5 MiB echo round trip (ms)", "lower"),
    ("echo_5MiB_response_MiB", "5 MiB echo: response size (MiB)", "lower"),
    ("idle_rss_MiB", "idle RSS (MiB)", "lower"),
    ("peak_rss_MiB", "peak RSS (MiB)", "lower"),
    ("exit_eof_block_ms", "exit after EOF, sync tool blocking (ms)", "lower"),
    ("exit_eof_hog_ms", "exit after EOF, async tool not yielding (ms)", "lower"),
    ("exit_sigterm_block_ms", "exit after SIGTERM, sync tool blocking (ms)", "lower"),
    ("exit_sigterm_hog_ms", "exit after SIGTERM, async tool not yielding (ms)", "lower"),
]


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


def table(results: dict[str, dict[str, float]]) -> str:
    labels = list(results)
    ref = "MCP SDK MCPServer"
    head = (
        "| measure | "
        + " | ".join(labels)
        + " | "
        + " | ".join(
            f"{lab.split(' ')[0]} {lab.split(' ', 1)[1] if ' ' in lab else ''} vs MCPServer".strip()
            for lab in labels
            if lab != ref
        )
        + " |"
    )
    sep = "|" + "---|" * (1 + len(labels) + len(labels) - 1)
    lines = [head, sep]
    for key, label, better in ROWS:
        cells = []
        for lab in labels:
            v = results[lab].get(key)
            if v is not None and key.startswith("exit_") and v >= EXIT_CAP * 1000:
                cells.append(f"did not exit (killed at {EXIT_CAP:g} s)")
            else:
                cells.append("–" if v is None else (f"{v:,.0f}" if v >= 100 else f"{v:.2f}"))
        ratios = []
        for lab in labels:
            if lab == ref:
                continue
            a, b = results[lab].get(key), results[ref].get(key)
            capped = key.startswith("exit_") and max(a or 0, b or 0) >= EXIT_CAP * 1000
            if not a or not b or capped:
                ratios.append("–")
            elif better == "higher":
                ratios.append(f"{a / b:.1f}× more")
            else:
                ratios.append(f"{a / b:.2f}×")
        lines.append(f"| {label} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> None:
    print("benchmarking " + ", ".join(srv.label for srv in SERVERS), file=sys.stderr)
    results = await bench_all(args.quick)
    report = table(results)
    print(report)
    if args.out:
        text = (
            "# Benchmark results\n\n"
            f"Machine: {machine()}.\n"
            f"Run: `make bench` on {time.strftime('%Y-%m-%d')}; every figure from one run, "
            "each server spawned fresh for every measurement and driven by the same raw client; "
            "the servers take turns within each round and each figure is the median of its "
            "rounds (9 for cold start, 3 for the rest).\n"
            "Ratios: for times and sizes, toolwire ÷ MCPServer (lower is better); "
            "for throughput, how many times more.\n\n" + report + "\n"
        )
        notes = HERE / "NOTES.md"
        if notes.exists():
            text += "\n" + notes.read_text()
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    p.add_argument(
        "--out", default=str(HERE / "RESULTS.md"), help="markdown report path ('' for none)"
    )
    args = p.parse_args()
    # Byte-compile toolwire like any installed package is (pip compiles what it installs;
    # an editable checkout under PYTHONDONTWRITEBYTECODE=1 would otherwise recompile
    # every changed module at every start), then warm the file cache.
    repo = HERE.parent
    subprocess.run(
        [PY, "-m", "compileall", "-q", *(str(repo / d) for d in ("toolwire", "host", "client"))],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run([PY, "-c", "import toolwire.host.connection, mcp"], check=True)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()

"""Benchmark over Streamable HTTP: toolwire against MCPServer and a raw ASGI app, in one run.

Contenders, all on uvicorn with the settings of ``toolwire serve --http`` (one worker; uvloop
and httptools when installed, uvicorn's ``auto``; bench/servers/uvicorn_common.py):

* **toolwire workers** and **toolwire in-process**: ``toolwire serve --http`` with
  bench/servers/toolwire_tools.py (``--isolation process``, the default, and ``none``),
  called statelessly at 2026-07-28 (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``
  headers and the ``_meta`` envelope);
* **MCP SDK MCPServer**: its echo tool behind the default ``streamable_http_app()``
  (bench/servers/mcp_http.py): stateful, so this client opens a session first
  (``initialize``, ``notifications/initialized``) and calls with ``Mcp-Session-Id``; it
  answers as SSE;
* **raw ASGI + orjson** (bench/servers/raw_http.py): parses the body and writes the echo
  result, no MCP rules at all; the limit of this server stack.

Load generator: ``wrk`` (one thread) with a Lua script that gives every request a fresh
JSON-RPC id; the bench installs it with apt-get when it is missing and it can. Figures:
calls/s at 32 connections, the p50 latency of one connection (wrk -c1, its latency
distribution), and the idle RSS of the server process (VmRSS after start and one call;
for workers, the host process alone, the workers apart). Every server is spawned fresh in
each round, the contenders take turns within a round, and each figure is the median of the
rounds; each server's answer to one call is checked before it is loaded, and a run with
non-2xx answers or socket errors is reported as failed.

With ``--baseline PYTHON`` (the python of another checkout's venv, as for bench/run.py,
e.g. of a ``git worktree`` of the commit before a change), two more contenders take
their turns in every round: that checkout's ``toolwire serve --http`` in both isolation
modes ("..., before"). The figures of the pair go to a table of their own, below the
main one.

Usage: python bench/http_load.py [--rounds 3] [--seconds 3] [--out bench/RESULTS.md]
       [--baseline PYTHON]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PY = sys.executable
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
TEXT = "hello"

WORKERS = "toolwire workers"
INPROC = "toolwire in-process"
MCP = "MCP SDK MCPServer"
RAW = "raw ASGI + orjson"
LABELS = [WORKERS, INPROC, MCP, RAW]
BEFORE = ", before"
"""Suffix of the ``--baseline`` contenders' labels."""

LUA = r"""
local n = 0
local pre = PRE
local post = POST
local headers = HEADERS
request = function()
  n = n + 1
  return wrk.format("POST", PATH, headers, pre .. n .. post)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests": %d, "duration_us": %d, "p50_us": %d, "p99_us": %d, ' ..
    '"status_errors": %d, "socket_errors": %d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.status, e.connect + e.read + e.write + e.timeout))
end
"""


@dataclass
class Contender:
    """One server under test and how to call it."""

    label: str
    argv: list[str]
    path: str = "/mcp"
    modern: bool = True
    headers: dict[str, str] = field(default_factory=dict)


def is_toolwire(label: str) -> bool:
    """Whether a contender is a toolwire host (this checkout's or the baseline's)."""
    return label.startswith("toolwire ")


def free_port() -> int:
    """A port the system just handed out on 127.0.0.1 (released for the server to take)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def contenders(root: Path, baseline: str | None = None) -> list[Contender]:
    """The four servers (argv without the port, added per spawn); with ``baseline``
    (another checkout's python), its toolwire in both modes after this one's."""
    tools = str(HERE / "servers" / "toolwire_tools.py")

    def tw(isolation: str, python: str | None = None) -> list[str]:
        # Another checkout's python gets -P: this working directory must not shadow
        # its own toolwire.
        return [
            *([python, "-P"] if python else [PY]), "-m", "toolwire.host", "--no-entry-points", "--root", str(root),
            "--isolation", isolation, "--no-builtins", "--tools", tools,
            "--log-level", "warning", "--http",
        ]  # fmt: skip

    out = [
        Contender(WORKERS, tw("process")),
        Contender(INPROC, tw("none")),
        Contender(MCP, [PY, str(HERE / "servers" / "mcp_http.py")], modern=False),
        Contender(RAW, [PY, str(HERE / "servers" / "raw_http.py")], path="/"),
    ]
    if baseline is not None:
        for label, isolation in ((WORKERS, "process"), (INPROC, "none")):
            out.insert(
                [c.label for c in out].index(label) + 1,
                Contender(label + BEFORE, tw(isolation, baseline)),
            )
    return out


def call_body(modern: bool, rid: int | str) -> bytes:
    """The tools/call of echo, 2026-07-28 envelope or 2025-11-25 plain."""
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": TEXT}}
    if modern:
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    return json.dumps(
        {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params},
        separators=(",", ":"),
    ).encode()


def base_headers(modern: bool) -> dict[str, str]:
    """Headers every call carries (the session's are added for MCPServer)."""
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if modern:
        h.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "echo"})
    else:
        h["MCP-Protocol-Version"] = LEGACY
    return h


def post(
    port: int, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, dict[str, str], str]:
    """One POST; (status, lower-cased headers, body text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("POST", path, body=body, headers=headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
    finally:
        conn.close()


def payload(text: str) -> dict[str, Any]:
    """The JSON-RPC message of a JSON or SSE body (the last ``data:`` line)."""
    data = [ln[5:].strip() for ln in text.splitlines() if ln.startswith("data:")]
    out: dict[str, Any] = json.loads(data[-1] if data else text)
    return out


class Running:
    """A spawned contender on its port, ready and checked."""

    def __init__(self, c: Contender) -> None:
        self.c = c
        self.port = free_port()
        self.proc = subprocess.Popen(
            [*c.argv, f"127.0.0.1:{self.port}" if is_toolwire(c.label) else str(self.port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=HERE.parent,
            env=dict(os.environ, PYTHONSAFEPATH="1") if is_toolwire(c.label) else None,
        )
        self.headers = base_headers(c.modern)
        self._wait_ready()
        if not c.modern:
            self._open_session()
        status, _, text = post(self.port, c.path, call_body(c.modern, 0), self.headers)
        got = payload(text) if status == 200 else {}
        content = got.get("result", {}).get("content", [{}])
        if status != 200 or content[0].get("text") != TEXT:
            raise RuntimeError(f"{c.label}: echo answered {status}: {text[:300]}")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 90
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.c.label} exited with {self.proc.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.c.label} did not listen in 90 s") from None
                time.sleep(0.05)

    def _open_session(self) -> None:
        init = {
            "jsonrpc": "2.0",
            "id": "init",
            "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        }
        h = {k: v for k, v in self.headers.items() if k != "MCP-Protocol-Version"}
        status, rh, text = post(self.port, self.c.path, json.dumps(init).encode(), h)
        if status != 200 or "mcp-session-id" not in rh:
            raise RuntimeError(f"{self.c.label}: initialize answered {status}: {text[:300]}")
        self.headers["Mcp-Session-Id"] = rh["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        status, _, text = post(self.port, self.c.path, json.dumps(note).encode(), self.headers)
        if status not in (200, 202):
            raise RuntimeError(f"{self.c.label}: initialized answered {status}: {text[:300]}")

    def rss(self) -> tuple[float, float]:
        """(VmRSS of the server process, VmRSS of its worker processes), MiB."""
        own = rss_of(self.proc.pid)
        workers = sum(rss_of(p) for p in descendants(self.proc.pid) if is_worker(p))
        return own, workers

    def cpu(self) -> float:
        """CPU seconds (user + system) used so far by the server and its descendants."""
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        for pid in [self.proc.pid, *descendants(self.proc.pid)]:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += int(fields[11]) + int(fields[12])
        return total / tick

    def wrk(self, connections: int, seconds: int, script: Path) -> dict[str, Any]:
        """One wrk run against this server; its figures (raises on failed answers)."""
        write_script(script, self.c, self.headers)
        out = subprocess.run(
            [
                "wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s",
                "-s", str(script), f"http://127.0.0.1:{self.port}{self.c.path}",
            ],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        m = re.search(r"^WRKJSON (.*)$", out, re.M)
        if m is None:
            raise RuntimeError(f"{self.c.label}: no figures from wrk:\n{out}")
        fig: dict[str, Any] = json.loads(m.group(1))
        if fig["status_errors"] or fig["socket_errors"]:
            raise RuntimeError(f"{self.c.label}: wrk saw errors: {fig}")
        fig["rps"] = fig["requests"] / (fig["duration_us"] / 1e6)
        return fig

    def stop(self) -> None:
        """End the server by its pid (SIGTERM, then SIGKILL after 10 s)."""
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def lua_string(s: str) -> str:
    """A Lua string literal."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_script(script: Path, c: Contender, headers: dict[str, str]) -> None:
    """The wrk script for one contender: its body with a counter as the id, its headers."""
    pre, post_ = call_body(c.modern, 999999999).decode().split("999999999")
    hs = "{" + ", ".join(f"[{lua_string(k)}] = {lua_string(v)}" for k, v in headers.items()) + "}"
    text = (
        LUA.replace("PRE", lua_string(pre), 1)
        .replace("POST", lua_string(post_), 1)
        .replace("HEADERS", hs, 1)
        .replace("PATH", lua_string(c.path), 1)
    )
    script.write_text(text)


def rss_of(pid: int) -> float:
    """VmRSS of one process in MiB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def descendants(pid: int) -> list[int]:
    """Every live descendant of pid (from /proc's parent links)."""
    parents: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents[int(d.name)] = ppid
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [k for k, pp in parents.items() if pp == p]
        out += kids
        todo += kids
    return out


def is_worker(pid: int) -> bool:
    """Whether pid is a toolwire worker python (not its bubblewrap wrapper)."""
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return comm != "bwrap" and b"toolwire.host.workers.worker" in cmd


def ensure_wrk() -> None:
    """Install wrk from the distribution when it is missing (root and apt-get needed)."""
    if shutil.which("wrk"):
        return
    print(
        "bench/http_load.py: wrk is missing; installing it: apt-get install -y wrk", file=sys.stderr
    )
    if shutil.which("apt-get") and os.geteuid() == 0:
        subprocess.run(["apt-get", "install", "-y", "wrk"], check=False, stdout=subprocess.DEVNULL)
    if not shutil.which("wrk"):
        sys.exit(
            "bench/http_load.py: wrk is needed (apt-get install wrk, as root) and could not be installed"
        )


def run(
    rounds: int, seconds: int, baseline: str | None = None
) -> dict[str, dict[str, list[float]]]:
    """Every figure of every round, per contender: rps, p50_us, rss, workers_rss (with
    ``baseline``, another checkout's python, also for its two contenders)."""
    root = Path(tempfile.mkdtemp(prefix="toolwire-httpbench-"))
    script = root / "call.lua"
    figs: dict[str, dict[str, list[float]]] = {c.label: {} for c in contenders(root, baseline)}
    try:
        for r in range(rounds):
            for c in contenders(root, baseline):
                print(f"round {r + 1}/{rounds}: {c.label}", file=sys.stderr)
                srv = Running(c)
                try:
                    time.sleep(0.5)  # let start-up garbage settle before the idle reading
                    own, workers = srv.rss()
                    srv.wrk(32, 1, script)  # warm-up
                    cpu0 = srv.cpu()
                    load = srv.wrk(32, seconds, script)
                    cpu = (srv.cpu() - cpu0) / load["requests"] * 1e6
                    seq = srv.wrk(1, seconds, script)
                finally:
                    srv.stop()
                f = figs[c.label]
                for k, v in (
                    ("rps", load["rps"]),
                    ("p50_us", seq["p50_us"]),
                    ("p99_us", seq["p99_us"]),
                    ("seq_rps", seq["rps"]),
                    ("cpu_us", cpu),
                    ("rss", own),
                    ("workers_rss", workers),
                ):
                    f.setdefault(k, []).append(float(v))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return figs


def median(figs: dict[str, dict[str, list[float]]], label: str, key: str) -> float:
    return statistics.median(figs[label][key])


def table(figs: dict[str, dict[str, list[float]]]) -> str:
    """The markdown table: figures, ratios vs MCPServer and the raw app, goals."""
    rows = [
        ("calls/s at 32 connections", "rps", "{:,.0f}", "≥ 6× MCPServer, ≥ 0.5× raw", (6.0, 0.5), True),
        ("sequential p50, one connection (µs)", "p50_us", "{:,.0f}", "≤ 0.25× MCPServer, ≤ 2× raw", (0.25, 2.0), False),
        ("sequential p99, one connection (µs)", "p99_us", "{:,.0f}", "", None, False),
        ("sequential calls/s, one connection", "seq_rps", "{:,.0f}", "", None, True),
        ("server CPU per call at 32 connections (µs)", "cpu_us", "{:,.0f}", "", None, False),
        ("idle RSS of the server process (MiB)", "rss", "{:.1f}", "≤ 0.5× MCPServer", (0.5, None), False),
    ]  # fmt: skip
    tw = [WORKERS, INPROC]
    head = ["measure", *LABELS]
    for t in tw:
        head += [f"{t} vs MCPServer", f"{t} vs raw"]
    head += ["issue 24 goal", "met (workers / in-process)"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, key, fmt, goal, limits, higher in rows:
        cells = [name] + [fmt.format(median(figs, lb, key)) for lb in LABELS]
        met = []
        for t in tw:
            v = median(figs, t, key)
            vm, vr = v / median(figs, MCP, key), v / median(figs, RAW, key)
            cells += [f"{vm:.2f}×", f"{vr:.2f}×"]
            if limits is not None:
                ok_m = vm >= limits[0] if higher else vm <= limits[0]
                ok_r = (
                    True if limits[1] is None else (vr >= limits[1] if higher else vr <= limits[1])
                )
                met.append("yes" if ok_m and ok_r else "no")
        cells += [goal, " / ".join(met)]
        out.append("| " + " | ".join(cells) + " |")
    w = statistics.median(figs[WORKERS]["workers_rss"])
    out.append("")
    out.append(
        f"toolwire workers: its worker process adds {w:.1f} MiB beside the host's "
        f"{median(figs, WORKERS, 'rss'):.1f} MiB (the goal counts the host process)."
    )
    return "\n".join(out)


def baseline_table(figs: dict[str, dict[str, list[float]]]) -> str:
    """The ``--baseline`` pair: each toolwire mode before and after, medians of the
    same rounds, with the same-run MCPServer and raw figures beside them."""
    rows = [
        ("calls/s at 32 connections", "rps", "{:,.0f}"),
        ("sequential p50, one connection (µs)", "p50_us", "{:,.0f}"),
        ("server CPU per call at 32 connections (µs)", "cpu_us", "{:,.0f}"),
        ("idle RSS of the server process (MiB)", "rss", "{:.1f}"),
    ]
    labels = [WORKERS + BEFORE, WORKERS, INPROC + BEFORE, INPROC, MCP, RAW]
    head = ["measure", *labels, "workers after ÷ before", "in-process after ÷ before"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, key, fmt in rows:
        cells = [name] + [fmt.format(median(figs, lb, key)) for lb in labels]
        for t in (WORKERS, INPROC):
            cells.append(f"{median(figs, t, key) / median(figs, t + BEFORE, key):.2f}×")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def machine() -> str:
    """Kernel, cores, Python, and the versions of the server stack."""
    import importlib.metadata as md

    def ver(name: str) -> str:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return "not installed"

    return (
        f"{platform.system()} {platform.release()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, uvicorn {ver('uvicorn')}, uvloop {ver('uvloop')}, "
        f"httptools {ver('httptools')}, mcp {ver('mcp')}, "
        f"{subprocess.run(['wrk', '--version'], capture_output=True, text=True).stdout.split(' [')[0]}"
    )


COMPILE_INSTALLED = (
    "import compileall, os, toolwire, toolwire.host, toolwire.client\n"
    "for m in (toolwire, toolwire.host, toolwire.client):\n"
    "    compileall.compile_dir(os.path.dirname(m.__file__), quiet=1)\n"
)
"""Byte-compiles the toolwire a python imports (run by the ``--baseline`` python)."""

SECTION = "## Over Streamable HTTP (`bench/http_load.py`, run by `make bench`)"


def write_section(out: Path, text: str) -> None:
    """Replace (or append) this bench's section of the results file."""
    old = out.read_text() if out.exists() else "# Benchmark results\n"
    start = old.find(SECTION)
    if start >= 0:
        nxt = old.find("\n## ", start + len(SECTION))
        old = old[:start].rstrip("\n") + ("\n\n" + old[nxt + 1 :] if nxt >= 0 else "")
    out.write_text(old.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n")


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=int, default=3, help="whole seconds per wrk run")
    p.add_argument("--out", default=str(HERE / "RESULTS.md"), help="results file ('' for none)")
    p.add_argument(
        "--baseline",
        default=None,
        help="the python of another checkout: its host runs beside this one's (see above)",
    )
    args = p.parse_args()
    baseline = args.baseline
    ensure_wrk()
    repo = HERE.parent
    subprocess.run(
        [PY, "-m", "compileall", "-q", *(str(repo / d) for d in ("toolwire", "host", "client"))],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    if baseline is not None:  # the other checkout's packages, wherever they are
        subprocess.run(
            [baseline, "-P", "-c", COMPILE_INSTALLED], check=True, stdout=subprocess.DEVNULL
        )
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    figs = run(args.rounds, args.seconds, baseline)
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    report = table(figs)
    if baseline is not None:
        report += (
            "\n\nBeside it in the same rounds, `--baseline`: the checkout before the change "
            "(its own venv), both modes:\n\n" + baseline_table(figs)
        )
    print(report)
    if args.out:
        text = (
            f"{SECTION}\n\n"
            f"Machine: {machine()}; load average (1, 5, 15 min) {' '.join(load_before)} before "
            f"the run and {' '.join(load_after)} after it (a shared machine: other work ran "
            f"beside it when these are well above 0).\n"
            f"Run on {time.strftime('%Y-%m-%d')}: {args.rounds} rounds, each server spawned "
            f"fresh in every round and the four taking turns; wrk (one thread, a fresh "
            f"JSON-RPC id per request) for {args.seconds:g} s at 32 connections after a 1 s "
            f"warm-up, then {args.seconds:g} s on one connection; medians of the rounds. "
            "Ratios: toolwire ÷ the other (for calls/s higher is better, for times and memory "
            "lower). toolwire is called statelessly at 2026-07-28; MCPServer through one "
            "2025-11-25 session of its default `streamable_http_app()` (SSE answers).\n\n"
            + report
            + "\n"
        )
        write_section(Path(args.out), text)
        print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()

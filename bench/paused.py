"""A paused client against a flooding tool (issue 21, point 3): ``make paused``, or
``python bench/run.py --only paused``; ``make bench`` runs it after the soak.

One host (``--isolation`` process, the default, and then none) serves a tool that reports
progress and logs as fast as it can (``tests/fixtures/flood_tools.py``). The client starts
the call, then reads nothing for ``--pause`` seconds (60 by default): the host's writer is
blocked on a full pipe the whole time. Then the client sends a ping and reads again.
Reported per isolation:

* the host's RSS when idle, its peak while the client is paused (sampled every 0.1 s
  from /proc/PID/status) and after the call has been cancelled and answered;
* how long the ping waited for its answer once the client read again, in ms, and how
  many messages came before it;
* how many rounds the tool made during the pause (progress and logs it produced).

Not a timed test: it prints a table; the figures go in bench/RESULTS.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FLOOD = REPO / "tests" / "fixtures" / "flood_tools.py"
MIB = 1024 * 1024
HOST = (sys.executable, "-P", "-m", "toolwire.host")


def rss(pid: int) -> int:
    """VmRSS of ``pid`` in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def _send(stdin: IO[bytes], msg: dict[str, Any]) -> None:
    stdin.write(json.dumps(msg).encode() + b"\n")
    stdin.flush()


def run_one(isolation: str, pause: float) -> dict[str, float]:
    """One paused-client run; its figures (bytes, seconds, counts)."""
    root = Path(tempfile.mkdtemp(prefix="toolwire-paused-"))
    proc = subprocess.Popen(
        [*HOST, "--root", str(root), "--tools", str(FLOOD), "--isolation", isolation],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=str(REPO),
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    try:
        _send(
            stdin,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "paused-bench", "version": "0"},
                },
            },
        )
        json.loads(stdout.readline())
        _send(stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _send(stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        json.loads(stdout.readline())
        time.sleep(0.5)
        idle = rss(proc.pid)
        marker = root / "count"
        _send(
            stdin,
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {
                    "name": "flood",
                    "arguments": {"n": 10**9, "marker": str(marker)},
                    "_meta": {"progressToken": "flood"},
                },
            },
        )
        peak = idle
        end = time.monotonic() + pause
        while time.monotonic() < end:
            peak = max(peak, rss(proc.pid))
            time.sleep(0.1)
        try:
            rounds = int(marker.read_text() or 0)
        except (OSError, ValueError):
            rounds = 0
        # Read again: a thread reads as fast as it can, the ping goes out first.
        got_ping = threading.Event()
        done = threading.Event()
        counts = {"before": 0}

        def reader() -> None:
            for line in stdout:
                msg = json.loads(line)
                if msg.get("id") == "ping":
                    got_ping.set()
                elif msg.get("id") == 3:
                    done.set()
                    return
                elif not got_ping.is_set():
                    counts["before"] += 1

        sent = time.monotonic()
        _send(stdin, {"jsonrpc": "2.0", "id": "ping", "method": "ping"})
        threading.Thread(target=reader, daemon=True).start()
        got_ping.wait(120)
        ping_wait = time.monotonic() - sent
        _send(stdin, {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 3}})
        done.wait(120)
        time.sleep(1.0)
        after = rss(proc.pid)
        return {
            "idle": idle,
            "peak": peak,
            "after": after,
            "ping_ms": ping_wait * 1000,
            "before_ping": counts["before"],
            "rounds": rounds,
        }
    finally:
        proc.kill()
        proc.wait()
        subprocess.run(["rm", "-rf", str(root)], check=False)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pause", type=float, default=60.0, help="seconds the client reads nothing")
    args = p.parse_args()
    print(f"paused client, {args.pause:.0f} s, flooding tool (progress + log per round)")
    print(
        "| isolation | idle RSS | peak while paused | after the call | ping wait | "
        "messages before the ping | rounds in the pause |"
    )
    print("|---|---|---|---|---|---|---|")
    failed = False
    for isolation in ("process", "none"):
        r = run_one(isolation, args.pause)
        print(
            f"| {isolation} | {r['idle'] / MIB:.1f} MiB | {r['peak'] / MIB:.1f} MiB "
            f"(+{(r['peak'] - r['idle']) / MIB:.1f}) | {r['after'] / MIB:.1f} MiB | "
            f"{r['ping_ms']:.1f} ms | {r['before_ping']:,} | {r['rounds']:,} |"
        )
        failed |= r["peak"] - r["idle"] > 50 * MIB
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

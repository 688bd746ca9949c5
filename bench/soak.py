"""Soak: rounds of pipelined calls, cancels, batches, large reads and bash calls through
one host, checking every answer (``make soak``, or ``python bench/run.py --only soak``).

Each round writes, as fast as the host reads them: ``--calls`` echo calls through a
worker (``bench/servers/toolwire_tools.py``), ``$/cancelRequest`` for ``--cancels`` of
them, ``--batches`` JSON-RPC batches of echo calls, and beside them concurrent ``read``
calls of a 2 MiB file and ``bash`` calls of ``echo`` (built-in tools). Counted per round:

* wrong: an echo whose text is not its own, a bash call whose output is not its echo's
  text, a read without the file's first line, an error answer other than -32800 for a
  cancelled call;
* missing / duplicate: ids never answered, or answered twice (every request, cancelled
  or not, gets exactly one answer with ``$/cancelRequest``: protocol.md §5);
* the host's RSS before the first round (idle) and its peak (VmHWM) at the end.

Not a timed test: it prints a table; the figures go in bench/RESULTS.md by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PY = sys.executable


def _rss(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of ``pid`` in MiB."""
    cur = peak = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            cur = int(line.split()[1]) / 1024
        elif line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
    return cur, peak


class Soak:
    """One host process and the bookkeeping of every request sent to it."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.answers: dict[Any, list[Any]] = {}
        self.done = asyncio.Event()
        self.waiting = 0
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                break
            msg = json.loads(line)
            for m in msg if isinstance(msg, list) else [msg]:
                if isinstance(m, dict) and "id" in m and "method" not in m:
                    got = self.answers.setdefault(m["id"], [])
                    got.append(m)
                    if len(got) == 1:
                        self.waiting -= 1
                        if self.waiting == 0:
                            self.done.set()
        self.done.set()

    async def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    def expect(self, n: int) -> None:
        self.waiting += n
        self.done.clear()

    async def request(self, id: Any, method: str, params: Any) -> Any:
        self.expect(1)
        await self.write(_frame(_req(id, method, params)))
        while id not in self.answers:
            await asyncio.sleep(0.01)
        return self.answers[id][0]


def _req(id: Any, method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def _call(id: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return _req(id, "tools/call", {"name": name, "arguments": arguments})


def _frame(obj: Any) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def _text(answer: dict[str, Any]) -> str | None:
    result = answer.get("result")
    if not isinstance(result, dict) or result.get("isError"):
        return None
    return "\n".join(b.get("text", "") for b in result.get("content", []))


async def one_round(s: Soak, r: int, args: argparse.Namespace, big: str) -> dict[str, int]:
    """Send one round and check its answers; counts of wrong, missing, duplicate."""
    rng = random.Random(r)
    expected: dict[Any, tuple[str, str]] = {}  # id -> (kind, text it must return)
    frames: list[bytes] = []
    for i in range(args.calls):
        id = f"r{r}e{i}"
        expected[id] = ("echo", f"soak {r} {i}")
        frames.append(_frame(_call(id, "echo", {"text": f"soak {r} {i}"})))
    cancelled = set(rng.sample(range(args.calls), args.cancels))
    # cancels follow their calls a few messages later (some land before, some after)
    out: list[bytes] = []
    for i, f in enumerate(frames):
        out.append(f)
        if i - 3 in cancelled:
            out.append(
                _frame(
                    {
                        "jsonrpc": "2.0",
                        "method": "$/cancelRequest",
                        "params": {"id": f"r{r}e{i - 3}"},
                    }
                )
            )
    for b in range(args.batches):
        items = []
        for k in range(5):
            id = f"r{r}b{b}k{k}"
            expected[id] = ("echo", f"batch {r} {b} {k}")
            items.append(_call(id, "echo", {"text": f"batch {r} {b} {k}"}))
        out.insert(rng.randrange(len(out)), json.dumps(items).encode() + b"\n")
    side: list[bytes] = []
    for k in range(args.reads):
        id = f"r{r}read{k}"
        expected[id] = ("read", big)
        side.append(_frame(_call(id, "read", {"path": "big.txt"})))
    for k in range(args.bash):
        id = f"r{r}bash{k}"
        expected[id] = ("bash", f"bash says {r} {k}")
        side.append(_frame(_call(id, "bash", {"command": f"echo 'bash says {r} {k}'"})))
    for f in side:
        out.insert(rng.randrange(len(out)), f)
    cancelled_ids = {f"r{r}e{i}" for i in cancelled}
    s.expect(len(expected))
    chunk = 256
    for i in range(0, len(out), chunk):
        await s.write(b"".join(out[i : i + chunk]))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(s.done.wait(), timeout=args.round_timeout)
    await asyncio.sleep(0.2)  # a late duplicate would arrive now
    wrong = missing = duplicate = empty_bash = 0
    for id, (kind, want) in expected.items():
        got = s.answers.pop(id, [])
        if not got:
            missing += 1
            continue
        if len(got) > 1:
            duplicate += 1
        a = got[0]
        if id in cancelled_ids and a.get("error", {}).get("code") == -32800:
            continue
        text = _text(a)
        if kind == "echo":
            ok = text == want
        elif kind == "bash":
            ok = text is not None and want in text
            if text is not None and "(no output)" in text:
                empty_bash += 1
        else:
            ok = text is not None and want in text
        if not ok:
            wrong += 1
            if wrong <= 3:
                print(f"round {r}: wrong answer to {id}: {str(a)[:300]}", file=sys.stderr)
    s.waiting = 0
    return {"wrong": wrong, "missing": missing, "duplicate": duplicate, "bash_empty": empty_bash}


async def soak(args: argparse.Namespace) -> list[dict[str, Any]]:
    root = Path(tempfile.mkdtemp(prefix="toolwire-soak-"))
    first = "the first line of big.txt"
    (root / "big.txt").write_text(first + "\n" + ("x" * 1023 + "\n") * 2048)
    argv = [PY, "-m", "toolwire.host", "--no-entry-points", "--root", str(root)]
    argv += ["--tools", str(HERE / "servers" / "toolwire_tools.py")]
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=64 * 1024 * 1024,
    )
    s = Soak(proc)
    rows: list[dict[str, Any]] = []
    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "soak", "version": "1"},
        }
        await s.request("init", "initialize", init)
        await s.write(_frame({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        await s.request("warm", "tools/call", {"name": "echo", "arguments": {"text": "w"}})
        s.answers.clear()
        idle, _ = _rss(proc.pid)
        for r in range(args.rounds):
            t0 = time.perf_counter()
            counts = await one_round(s, r, args, first)
            rss, peak = _rss(proc.pid)
            rows.append(
                {
                    "round": r + 1,
                    **counts,
                    "seconds": time.perf_counter() - t0,
                    "rss_mib": rss,
                    "peak_mib": peak,
                    "idle_mib": idle,
                }
            )
            print(_row(rows[-1]), file=sys.stderr)
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
        shutil.rmtree(root, ignore_errors=True)
    return rows


def _row(row: dict[str, Any]) -> str:
    return (
        f"| {row['round']} | {row['wrong']} | {row['bash_empty']} | {row['missing']} |"
        f" {row['duplicate']} | {row['seconds']:.1f} | {row['rss_mib']:.0f} |"
        f" {row['peak_mib']:.0f} |"
    )


def table(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    """The soak's markdown table and its totals."""
    lines = [
        f"Each round: {args.calls:,} pipelined echo calls through a worker with"
        f" {args.cancels:,} `$/cancelRequest`, {args.batches} batches of 5, {args.reads}"
        f" `read` calls of a 2 MiB file and {args.bash} `bash` echo calls, all in flight"
        " together.",
        "",
        '| round | wrong | of which bash "(no output)" | missing | duplicate | seconds'
        " | host RSS after (MiB) | host peak RSS (MiB) |",
        "|---|---|---|---|---|---|---|---|",
        *(_row(r) for r in rows),
    ]
    if rows:
        total = {
            k: sum(r[k] for r in rows) for k in ("wrong", "bash_empty", "missing", "duplicate")
        }
        lines += [
            "",
            f'Totals: {total["wrong"]} wrong ({total["bash_empty"]} bash "(no output)"),'
            f" {total['missing']} missing, {total['duplicate']} duplicate answers;"
            f" host RSS idle {rows[0]['idle_mib']:.0f} MiB, peak {rows[-1]['peak_mib']:.0f} MiB"
            f" (+{rows[-1]['peak_mib'] - rows[0]['idle_mib']:.0f} MiB).",
        ]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    """The soak's options (defaults: the figures of bench/RESULTS.md)."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--calls", type=int, default=10_000)
    p.add_argument("--cancels", type=int, default=1_000)
    p.add_argument("--batches", type=int, default=100)
    p.add_argument("--reads", type=int, default=40)
    p.add_argument("--bash", type=int, default=40)
    p.add_argument("--round-timeout", type=float, default=120.0)
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the soak and print its table; exit status 1 on any wrong, missing or
    duplicate answer."""
    args = parser().parse_args(argv)
    rows = asyncio.run(soak(args))
    print(table(rows, args))
    bad = sum(r["wrong"] + r["missing"] + r["duplicate"] for r in rows)
    return 1 if bad or len(rows) < args.rounds else 0


if __name__ == "__main__":
    sys.exit(main())

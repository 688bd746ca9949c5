"""The speed-up of CPU-bound calls with two workers: a figure, not a test.

tests/host/workers/test_workers_e2e.py checks that two workers run two calls at the same time (in
two processes); how much faster that is depends on free cores, so it is measured here:
two concurrent ``burn`` calls of 1 s CPU each, with ``--workers 1`` and ``--workers 2``,
in alternation, best of five rounds. About 0.5 is expected on two idle cores.

Run with ``make bench`` (or ``.venv/bin/python bench/parallel.py``).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.hostproc import HostProcess
from tests.workers_support import call_msg, data_of, worker_host


def _pair(h: HostProcess, cpu: float, tag: str) -> float:
    """Wall seconds for two concurrent ``burn`` calls of ``cpu`` CPU seconds each."""
    start = time.monotonic()
    for i in (1, 2):
        h.send(call_msg(f"{tag}{i}", "burn", {"cpu_seconds": cpu}))
    for i in (1, 2):
        data_of(h.recv_response(f"{tag}{i}", timeout=120)["result"])
    return time.monotonic() - start


def main() -> None:
    """Print the best wall time of each host and their ratio."""
    walls: dict[int, list[float]] = {1: [], 2: []}
    with (
        tempfile.TemporaryDirectory() as tmp,
        worker_host(Path(tmp), "process", ["--workers", "1"]) as one,
        worker_host(Path(tmp), "process", ["--workers", "2"]) as two,
    ):
        hosts = {1: one, 2: two}
        for h in hosts.values():
            _pair(h, 0.5, "warm")
        for n in range(5):
            for workers, h in hosts.items():
                walls[workers].append(_pair(h, 1.0, f"burn{n}-"))
    best1, best2 = min(walls[1]), min(walls[2])
    print(
        f"two concurrent calls of 1 s CPU: {best1:.2f} s with --workers 1, "
        f"{best2:.2f} s with --workers 2, ratio {best2 / best1:.2f} "
        f"(~0.5 on idle cores; load average {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()

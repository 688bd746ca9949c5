"""Worker health: stopped or wedged idle workers, and a crash budget per module.

:mod:`.workers` asks :func:`needs_check` before it sends a call to a worker that has
been idle for :data:`IDLE_CHECK` seconds or more, then :func:`confirm` (a look at the
process state in ``/proc`` and a heartbeat answered within :data:`HEARTBEAT_TIMEOUT`):
a worker found stopped (``SIGSTOP``, state ``T``) or not answering is replaced before it
gets the call. Busy workers are never pinged, so calls in a row cost no round trip.

:class:`CrashBudget` counts the crashes of one module's workers (deaths the host did not
cause); after :data:`CRASH_LIMIT` within :data:`CRASH_WINDOW` seconds the module is
marked broken (protocol.md §12) instead of being restarted in a loop.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterable

import anyio

from ..sandbox.procs import stat_fields
from .workerwire import HEARTBEAT

__all__ = [
    "CRASH_LIMIT",
    "CRASH_WINDOW",
    "HEARTBEAT",
    "HEARTBEAT_TIMEOUT",
    "IDLE_CHECK",
    "CrashBudget",
    "stopped",
]

IDLE_CHECK = 1.0
"""A worker idle this long (seconds) is checked before it gets a call."""

HEARTBEAT_TIMEOUT = 2.0
"""Seconds an idle worker has to answer a heartbeat before it is replaced."""

CRASH_LIMIT = 5
"""Crashes of one module's workers within :data:`CRASH_WINDOW` that mark it broken."""

CRASH_WINDOW = 180.0
"""Seconds over which crashes are counted (3 minutes)."""


def stopped(pids: Iterable[int]) -> int | None:
    """The first of ``pids`` that is stopped (state ``T`` or ``t`` in
    ``/proc/PID/stat``: ``SIGSTOP``, ``SIGTSTP`` or a tracer), else None. A pid that is
    gone or unreadable counts as not stopped (its exit is noticed elsewhere)."""
    for pid in pids:
        if pid <= 0:
            continue
        rest = stat_fields(pid)
        if rest and rest[0] in (b"T", b"t"):
            return pid
    return None


class CrashBudget:
    """The crashes of one module's workers in the last :data:`CRASH_WINDOW` seconds.

    Args:
        limit: crashes within ``window`` that exhaust the budget.
        window: seconds.
    """

    def __init__(self, limit: int = CRASH_LIMIT, window: float = CRASH_WINDOW) -> None:
        self.limit = limit
        self.window = window
        self._times: deque[float] = deque()

    def crashed(self, now: float | None = None) -> bool:
        """Count one crash; whether the budget is now exhausted."""
        now = time.monotonic() if now is None else now
        self._times.append(now)
        while self._times and now - self._times[0] > self.window:
            self._times.popleft()
        return len(self._times) >= self.limit

    def describe(self) -> str:
        """E.g. ``5 times within 3 minutes``."""
        window = f"{self.window / 60:g} minutes" if self.window >= 60 else f"{self.window:g} s"
        return f"{self.limit} times within {window}"


class Check:
    """One health check of a worker in progress (others wanting the worker wait on it)."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.healthy = False

"""Process bookkeeping for the host: reap and end every process tools started.

The host makes itself a *child subreaper* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``),
so a process a tool starts stays the host's descendant even after it double-forks
or calls ``setsid``. :func:`kill_descendants` then finds every descendant through
``/proc`` and kills it: on shutdown nothing a tool started survives the host.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import signal
import sys

__all__ = ["descendants", "kill_descendants", "set_subreaper"]

log = logging.getLogger("toolwire.procs")

_PR_SET_CHILD_SUBREAPER = 36


def set_subreaper() -> bool:
    """Make this process a child subreaper (Linux only). Returns True on success."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except OSError:
        return False


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # Field 4 (ppid) follows the parenthesised command name, which may hold spaces.
        rest = stat[stat.rfind(b")") + 2 :].split()
        if len(rest) < 2:
            continue
        children.setdefault(int(rest[1]), []).append(int(entry))
    return children


def descendants(pid: int | None = None) -> list[int]:
    """Every live descendant of ``pid`` (default: this process), parents first."""
    root = os.getpid() if pid is None else pid
    tree = _children_map()
    out: list[int] = []
    stack = list(tree.get(root, []))
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(tree.get(p, []))
    return out


def kill_descendants(pid: int | None = None, sig: int = signal.SIGKILL) -> int:
    """Send ``sig`` to every descendant of ``pid`` (default: this process) and reap
    those that are our own children. Returns how many were signalled."""
    count = 0
    for _ in range(3):  # a dying parent can fork once more; go round a few times
        pids = descendants(pid)
        if not pids:
            break
        for p in pids:
            try:
                os.kill(p, sig)
                count += 1
            except ProcessLookupError:
                pass
            except PermissionError:
                log.warning("cannot signal descendant %d", p)
        _reap()
    return count


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return

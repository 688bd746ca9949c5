"""Tools for tests/host/workers/test_sandbox_worker_template.py: what a worker forked from its
module's template can see of itself, and a way to crash it."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from toolwire.host import tool

WORKER_ID = uuid.uuid4().hex
"""Unique per import of this module."""

_calls = 0

# Each import of this module (one per worker, never in the template) leaves a line in
# the working directory, the root: the importing process's command line.
with open("imports.log", "a") as _log:
    _log.write(Path("/proc/self/cmdline").read_bytes().replace(b"\0", b" ").decode() + "\n")


def _status(field: str) -> str:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return ""


@tool
def identity() -> dict[str, Any]:
    """This worker: its ids, its session and group, its filter, its parent's command
    line, and how many calls this import of the module has served."""
    global _calls
    _calls += 1
    parent = Path(f"/proc/{os.getppid()}/cmdline").read_bytes().replace(b"\0", b" ")
    return {
        "worker_id": WORKER_ID,
        "calls": _calls,
        "pid": os.getpid(),
        "sid": os.getsid(0),
        "pgid": os.getpgid(0),
        "seccomp": _status("Seccomp"),
        "no_new_privs": _status("NoNewPrivs"),
        "cap_eff": _status("CapEff"),
        "parent": parent.decode(errors="replace"),
        "own": Path("/proc/self/cmdline").read_bytes().replace(b"\0", b" ").decode(),
    }


@tool
def crash() -> str:
    """End this worker at once (exit code 3)."""
    os._exit(3)


_NAMESPACES = ("pid", "mnt", "ipc", "uts", "net", "user", "cgroup")


def _marks(directory: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(directory) if n.startswith("mark-"))
    except OSError as exc:
        return [f"error: {exc}"]


@tool
def sandbox_view() -> dict[str, Any]:
    """What this worker sees of its sandbox: the inode of each of its namespaces, its
    capabilities and filter, and the marks in /tmp and /dev/shm after leaving its own
    there (``mark-<worker id>``)."""
    for directory in ("/tmp", "/dev/shm"):
        Path(directory, f"mark-{WORKER_ID}").write_text(WORKER_ID)
    return {
        "worker_id": WORKER_ID,
        "pid": os.getpid(),
        "ns": {name: os.stat(f"/proc/self/ns/{name}").st_ino for name in _NAMESPACES},
        "cap_eff": _status("CapEff"),
        "cap_prm": _status("CapPrm"),
        "cap_inh": _status("CapInh"),
        "cap_bnd": _status("CapBnd"),
        "cap_amb": _status("CapAmb"),
        "seccomp": _status("Seccomp"),
        "no_new_privs": _status("NoNewPrivs"),
        "uid": os.getuid(),
        "uid_map": Path("/proc/self/uid_map").read_text().split(),
        "hostname": os.uname().nodename,
        "tmp": _marks("/tmp"),
        "shm": _marks("/dev/shm"),
        "procs": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    }


@tool
def sandbox_view_after(gate: str) -> dict[str, Any]:
    """:func:`sandbox_view`, its marks left first, then waiting until the FIFO ``gate``
    (in the root) is written to and closed: it keeps this worker busy meanwhile."""
    for directory in ("/tmp", "/dev/shm"):
        Path(directory, f"mark-{WORKER_ID}").write_text(WORKER_ID)
    with open(gate, "rb") as fifo:
        fifo.read()
    return sandbox_view()

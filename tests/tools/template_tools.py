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

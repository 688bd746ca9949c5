"""A sandboxed command has namespaces of its own: IPC, UTS, PID, mount and network.

Each is compared with the host's by the inode ``/proc/self/ns/<kind>`` names (two
processes share a namespace exactly when those links read the same); the hostname
shows the UTS one is really separate. SECURITY.md ("Sandbox") promises these; the
seccomp filter keeps a command from making or entering others (test_sandbox_seccomp_rules.py).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from tests.hostproc import HostProcess
from tests.sandbox_support import needs_bwrap

KINDS = ("ipc", "uts", "pid", "mnt", "net")


def _text(resp: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in resp["result"]["content"])


@needs_bwrap
def test_a_sandboxed_command_has_namespaces_of_its_own(tmp_path: Path) -> None:
    with HostProcess(["--root", str(tmp_path)]) as h:
        info = h.initialize()["result"]
        assert "Commands run sandboxed" in info["instructions"], info["instructions"]
        links = " ".join(f"/proc/self/ns/{k}" for k in KINDS)
        out = _text(h.call("bash", {"command": f"readlink {links}; hostname"}, timeout=60))
    lines = out.splitlines()
    assert len(lines) == len(KINDS) + 1, out
    for kind, inside in zip(KINDS, lines, strict=False):
        outside = os.readlink(f"/proc/self/ns/{kind}")
        assert inside.startswith(f"{kind}:["), out
        assert inside != outside, f"the box shares the host's {kind} namespace ({inside})"
    assert lines[-1] == "toolwire-sandbox" != socket.gethostname(), out

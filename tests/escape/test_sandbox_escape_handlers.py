"""Escape attempts made from Python handler code, through the real host.

A tool module is imported into a worker process (``--isolation process``, the default),
which runs under bubblewrap whenever the sandbox is active. The handlers of
tests/fixtures/handler_escape_tools.py try from there what trusted-but-careless or
malicious tool code could try: read and write outside the root, reach a listener on
the host's loopback, read the host's environment, signal and trace the host, and
exhaust memory and processes. Each handler reports what happened in its result text;
the tests check the observable proof on the host's side too (no marker appeared, the
listener saw nothing, the host still answers ``ping``).

Every attempt has a control: the same call against a host started with
``--isolation none --sandbox none``, where the handler runs inside the host and the
attempt succeeds. That shows the attempt is real and the test can fail.

Containment on a regression: markers only go to the test's own temporary directories;
the memory bomb reserves (does not touch) at most 64 GiB of address space and touches
at most 1 GiB; the fork bomb stops at 5000 children (1500 in the control) that sleep
and are killed and reaped by the handler itself. Passes as root and as an ordinary user
(tests/run_unprivileged.sh).
"""

from __future__ import annotations

import os
import resource
import secrets
import select
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e_helpers import PROMPT, exits_within, vm_hwm, wait_until
from tests.hostproc import TOOLS_DIR, HostProcess
from tests.sandbox_support import (
    PROMISED_LIMITS,
    expected_limit,
    needs_bwrap,
    parse_proc_limits,
    pids_cgroup_expected,
    require_sandbox,
)

TOOLS = TOOLS_DIR / "handler_escape_tools.py"
VICTIM = TOOLS_DIR / "handler_escape_victim.py"
ROOT_USER = os.geteuid() == 0
CONTROL = ("--isolation", "none", "--sandbox", "none")
"""The control host: tool modules imported into the host, commands unsandboxed."""

SECRET = "handler-secret-" + secrets.token_hex(8)
"""In the hosts' environment under a credential-looking name."""
PLAIN = "handler-plain-" + secrets.token_hex(8)
"""In the hosts' environment under an ordinary name that is not in ``env_allow``."""
ENV = {"TOOLWIRE_TEST_SECRET_TOKEN": SECRET, "TOOLWIRE_TEST_PLAIN_SETTING": PLAIN}

DIED = "its worker process died"
"""What the host's error result says when a worker died with the call in flight."""


class Place:
    """A root and throw-away places beside it, with files only the test knows."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "root"
        self.outside = base / "outside"  # a directory beside the root
        self.sibling = base / "root-sibling"  # shares the root's name as a prefix
        self.home = base / "home"  # the hosts' HOME
        for d in (self.root, self.outside, self.sibling, self.home):
            d.mkdir()
            d.chmod(0o755)
        self.outside_token = "outside-" + secrets.token_hex(8)
        self.sibling_token = "sibling-" + secrets.token_hex(8)
        (self.outside / "secret.txt").write_text(self.outside_token + "\n")
        (self.sibling / "secret.txt").write_text(self.sibling_token + "\n")


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Place:
    return Place(tmp_path_factory.mktemp("handlers"))


def _start(
    place: Place,
    *extra: str,
    config: str = "",
    tools: tuple[Path, ...] = (TOOLS,),
    capabilities: dict[str, Any] | None = None,
) -> HostProcess:
    """A host serving only the escape tools (or ``tools``), rooted in ``place.root``,
    with :data:`ENV` in its environment; initialized with ``capabilities``."""
    args = [
        "--root",
        str(place.root),
        "--no-builtins",
        "--no-entry-points",
        "--tools",
        *map(str, tools),
        *extra,
    ]
    if config:
        cfg = place.base / f"toolwire-{secrets.token_hex(4)}.toml"
        cfg.write_text(config)
        args += ["--config", str(cfg)]
    h = HostProcess(args, env={**ENV, "HOME": str(place.home)})
    resp = h.request(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities or {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    )
    assert "result" in resp, (resp, h.stderr)
    h.notify("notifications/initialized")
    return h


@pytest.fixture(scope="module")
def box(place: Place) -> Iterator[HostProcess]:
    """A host with the defaults: tool modules in workers, sandbox auto (active here)."""
    require_sandbox()
    h = _start(place)
    _require_sandboxed_handlers(h)
    yield h
    h.close()


def _require_sandboxed_handlers(h: HostProcess) -> None:
    """Before any attempt: the handlers must really run in the sandbox (another mount
    and PID namespace than this test's), or they would act on this machine; else the
    host is closed and the test fails."""
    ns = _call(h, "own_namespaces").splitlines()
    own = [os.readlink(f"/proc/self/ns/{kind}") for kind in ("mnt", "pid")]
    if len(ns) != 2 or any(a == b for a, b in zip(ns, own, strict=True)):
        h.close()
        pytest.fail(f"the handlers do not run in the sandbox ({ns} vs {own})", pytrace=False)


@pytest.fixture(scope="module")
def bare(place: Place) -> Iterator[HostProcess]:
    """The control: modules imported into the host, no sandbox."""
    h = _start(place, *CONTROL)
    yield h
    h.close()


def _text(resp: dict[str, Any]) -> str:
    assert "result" in resp, resp
    return "\n".join(b.get("text", "") for b in resp["result"]["content"])


def _call(h: HostProcess, name: str, timeout: float = 60, **arguments: Any) -> str:
    """The text of a call's result (an error result's text too)."""
    return _text(h.call(name, arguments, timeout=timeout))


def _serving(h: HostProcess) -> bool:
    return h.request("ping", timeout=PROMPT)["result"] == {} and h.proc.poll() is None


def _works(h: HostProcess) -> None:
    """The host answers ping and a next call to the module runs."""
    assert _serving(h), h.stderr
    assert _call(h, "pid_info").startswith("pid "), h.stderr


def _ptrace_scope() -> int:
    try:
        return int(Path("/proc/sys/kernel/yama/ptrace_scope").read_text())
    except OSError:
        return 0  # no Yama: the classic same-user rule


# ------------------------------------------------------------------ reading outside


def _target(place: Place, kind: str) -> tuple[str, bytes | None, bool]:
    """(path, first 200 bytes the test itself reads there, echo) for an attempt."""
    if kind == "system":
        shadow = Path("/etc/shadow")
        if ROOT_USER and shadow.exists():
            with open(shadow, "rb") as f:
                return str(shadow), f.read(200), False  # never echo real hashes
        # An ordinary user cannot read /etc/shadow even outside: use a file of its own.
        path = place.outside / "secret.txt"
        return str(path), path.read_bytes()[:200], True
    path = place.sibling / "secret.txt"
    return str(path), path.read_bytes()[:200], True


def _digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


@needs_bwrap
@pytest.mark.parametrize("kind", ["system", "sibling"])
def test_a_handler_cannot_read_outside_the_root(box: HostProcess, place: Place, kind: str) -> None:
    path, content, echo = _target(place, kind)
    out = _call(box, "read_outside", path=path, echo=echo)
    assert out.startswith(("READ_OK", "DENIED")), out  # the handler ran
    assert _digest(content) not in out, out
    if echo:
        assert content.decode().strip() not in out, out


@pytest.mark.parametrize("kind", ["system", "sibling"])
def test_control_a_handler_in_the_host_reads_outside(
    bare: HostProcess, place: Place, kind: str
) -> None:
    path, content, echo = _target(place, kind)
    assert content, path
    out = _call(bare, "read_outside", path=path, echo=echo)
    assert out.startswith(f"READ_OK {len(content)} bytes sha256 {_digest(content)}"), out


@needs_bwrap
def test_a_handler_cannot_read_the_shadow_file(box: HostProcess) -> None:
    # No control of its own (an ordinary user cannot read it anywhere; as root the
    # parametrized test above has one): whoever runs the suite, the masked or missing
    # /etc/shadow gives nothing.
    if not Path("/etc/shadow").exists():
        pytest.skip("no /etc/shadow on this machine")
    out = _call(box, "read_outside", path="/etc/shadow", echo=False)
    assert out.startswith("DENIED") or out.startswith(f"READ_OK 0 bytes sha256 {_digest(b'')}"), out


# ------------------------------------------------------------------ writing outside


def _write_targets(place: Place, tag: str) -> list[tuple[Path, bool]]:
    """(file, make_parents) the attempts create: beside the root, in the root's parent,
    in a new directory beside the root, in the hosts' HOME."""
    return [
        (place.outside / f"marker-{tag}", False),
        (place.base / f"marker-{tag}", False),
        (place.outside / f"new-{tag}" / "marker", True),
        (place.home / f"marker-{tag}", False),
    ]


@needs_bwrap
def test_a_handler_cannot_write_outside_the_root(box: HostProcess, place: Place) -> None:
    for path, parents in _write_targets(place, "box"):
        out = _call(box, "write_outside", path=str(path), content="escaped", make_parents=parents)
        assert out.startswith(("WROTE", "DENIED")), out  # the handler ran
        assert not path.exists(), (path, out)
        assert not path.parent.exists() or path.parent in (place.outside, place.base, place.home)
    # Its writes inside the root do land (the root is writable).
    inside = place.root / f"inside-{secrets.token_hex(4)}"
    assert _call(box, "write_outside", path=str(inside), content="in") == f"WROTE {inside}"
    assert inside.read_text() == "in"


def test_control_a_handler_in_the_host_writes_outside(bare: HostProcess, place: Place) -> None:
    for path, parents in _write_targets(place, "bare"):
        out = _call(bare, "write_outside", path=str(path), content="escaped", make_parents=parents)
        assert out == f"WROTE {path}", out
        assert path.read_text() == "escaped"


# ------------------------------------------------------------------ network


@needs_bwrap
def test_a_handler_cannot_reach_the_hosts_loopback(box: HostProcess) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        out = _call(box, "connect_local", port=server.getsockname()[1])
        assert out.startswith("DENIED"), out
        # The attempt has ended: a connection it made would be queued by now.
        assert select.select([server], [], [], 0)[0] == [], "the listener saw a connection"


def test_control_a_handler_in_the_host_reaches_the_loopback(bare: HostProcess) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        assert _call(bare, "connect_local", port=server.getsockname()[1]) == "CONNECTED"
        server.settimeout(PROMPT)
        conn, _ = server.accept()
        with conn:
            conn.settimeout(PROMPT)
            assert conn.recv(100).startswith(b"hello from a handler")


# ------------------------------------------------------------------ the host's environment


@needs_bwrap
def test_a_handler_cannot_see_the_hosts_environment(box: HostProcess) -> None:
    out = _call(box, "look_for_values", needles=[SECRET, PLAIN], host_pid=box.proc.pid)
    assert "environ names:" in out and "processes visible:" in out, out  # it ran
    assert "FOUND" not in out, out
    assert f"host /proc/{box.proc.pid}/environ: READ_OK" not in out, out


def test_control_a_handler_in_the_host_sees_its_environment(bare: HostProcess) -> None:
    out = _call(bare, "look_for_values", needles=[SECRET, PLAIN], host_pid=bare.proc.pid)
    for i in (0, 1):
        assert f"FOUND needle{i} in os.environ" in out, out
        assert f"FOUND needle{i} in /proc/{bare.proc.pid}/environ" in out, out


@needs_bwrap
def test_env_allow_passes_plain_names_but_never_secret_looking_ones(place: Place) -> None:
    # Both names match the allow-list; only the plain one may arrive. The plain one
    # arriving is also the control: the handler's look at os.environ works.
    h = _start(place, config='[sandbox]\nenv_allow = ["PATH", "HOME", "TOOLWIRE_TEST_*"]\n')
    try:
        out = _call(h, "look_for_values", needles=[SECRET, PLAIN], host_pid=h.proc.pid)
    finally:
        h.close()
    assert "FOUND needle1 in os.environ" in out, out
    assert "needle0" not in out, out
    assert f"/proc/{h.proc.pid}/environ: READ_OK" not in out, out


# ------------------------------------------------------------------ signals and ptrace


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process of the test's user, a target that is not the host."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    yield proc
    proc.kill()
    proc.wait()


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@needs_bwrap
def test_a_handler_cannot_signal_the_host(
    box: HostProcess, sleeper: subprocess.Popen[bytes]
) -> None:
    out = _call(box, "signal_processes", pids=[box.proc.pid, sleeper.pid])
    assert out.startswith("chain "), out  # the handler ran
    assert "SIGNALLED" not in out, out
    assert f"{box.proc.pid}: DENIED" in out and f"{sleeper.pid}: DENIED" in out, out
    assert "host in chain: NOT_FOUND" in out, out
    _works(box)
    assert sleeper.poll() is None


def test_control_a_handler_in_the_host_signals_another_process(
    bare: HostProcess, sleeper: subprocess.Popen[bytes]
) -> None:
    out = _call(bare, "signal_processes", pids=[sleeper.pid], chain=False)
    assert f"{sleeper.pid}: SIGNALLED" in out, out
    assert sleeper.wait(timeout=PROMPT) != 0


def test_control_the_host_found_through_the_parents_is_the_host(place: Place) -> None:
    # In a host without isolation the handler's parent walk finds the host itself, and
    # SIGTERM ends it: the walk the sandboxed attempt relies on works.
    h = _start(place, *CONTROL)
    try:
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "kill",
                "method": "tools/call",
                "params": {"name": "signal_processes", "arguments": {"pids": []}},
            }
        )
        exits_within(h)
    finally:
        h.close()


@needs_bwrap
def test_a_handler_cannot_ptrace_the_host(
    box: HostProcess, sleeper: subprocess.Popen[bytes]
) -> None:
    out = _call(box, "trace_processes", pids=[box.proc.pid, sleeper.pid], own_child=True)
    assert "ATTACHED" not in out, out
    for label in (box.proc.pid, sleeper.pid, "own-child"):
        assert f"{label}: DENIED" in out, out
    _works(box)
    assert _state(box.proc.pid) not in ("t", "T") and _state(sleeper.pid) not in ("t", "T")


def test_control_a_handler_in_the_host_can_ptrace(
    bare: HostProcess, sleeper: subprocess.Popen[bytes]
) -> None:
    # Its own child always (where Yama allows ptrace at all); the unrelated process
    # where Yama's scope allows non-descendants.
    scope = _ptrace_scope()
    out = _call(bare, "trace_processes", pids=[sleeper.pid], own_child=True)
    if scope <= 1 or (ROOT_USER and scope == 2):
        assert "own-child: ATTACHED" in out, out
    if scope == 0 or (ROOT_USER and scope <= 2):
        assert f"{sleeper.pid}: ATTACHED" in out, out
    wait_until(lambda: _state(sleeper.pid) not in ("t", "T"), what="the tracee resumed")
    assert sleeper.poll() is None


# ------------------------------------------------------------------ memory


def _vm_peak(h: HostProcess) -> int:
    """The host's peak address space so far, in bytes (Linux ``VmPeak``)."""
    for line in Path(f"/proc/{h.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmPeak:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmPeak in /proc/<pid>/status")


def _call_while_pinging(h: HostProcess, name: str, arguments: dict[str, Any]) -> str:
    """Start a call, check the host answers ping while it runs, return its text."""
    h.send(
        {
            "jsonrpc": "2.0",
            "id": "bomb",
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    )
    assert _serving(h), h.stderr
    return _text(h.recv_response("bomb", timeout=180))


RESERVE_CHUNKS = 256
RESERVE_MIB = 256
"""The address-space bomb: at most 256 x 256 MiB = 64 GiB, reserved, never touched."""

ADDRESS_LIMIT = expected_limit("address_space", PROMISED_LIMITS["address_space"])


@needs_bwrap
def test_an_address_space_bomb_stays_in_the_worker(box: HostProcess) -> None:
    before = _vm_peak(box)
    out = _call_while_pinging(
        box, "reserve_memory", {"chunks": RESERVE_CHUNKS, "chunk_mib": RESERVE_MIB}
    )
    if DIED not in out:
        assert out.startswith("STOPPED"), out
        reserved = int(out.split()[1]) * (RESERVE_MIB << 20)
        assert reserved <= ADDRESS_LIMIT, out  # the worker's address-space limit stopped it
    assert _vm_peak(box) - before < 1 << 30  # none of it was the host's
    _works(box)


def test_control_an_address_space_bomb_in_the_host_is_the_hosts(place: Place) -> None:
    if resource.getrlimit(resource.RLIMIT_AS)[1] != resource.RLIM_INFINITY:
        pytest.skip("this process has an address-space limit of its own")
    if Path("/proc/sys/vm/overcommit_memory").read_text().strip() == "2":
        pytest.skip("strict overcommit accounting refuses a reservation this large")
    h = _start(place, *CONTROL)
    try:
        before = _vm_peak(h)
        out = _call(h, "reserve_memory", chunks=RESERVE_CHUNKS, chunk_mib=RESERVE_MIB)
        assert out.startswith(f"ALL {RESERVE_CHUNKS} of"), out
        assert _vm_peak(h) - before > ADDRESS_LIMIT
        _works(h)
    finally:
        h.close()


TOUCH_CHUNKS = 16
"""The resident-memory attempt: 16 x 64 MiB = 1 GiB really written."""


@needs_bwrap
def test_memory_a_handler_uses_is_not_the_hosts(box: HostProcess) -> None:
    before = vm_hwm(box)
    out = _call_while_pinging(
        box, "reserve_memory", {"chunks": TOUCH_CHUNKS, "chunk_mib": 64, "touch": True}
    )
    assert out.startswith(f"ALL {TOUCH_CHUNKS} of") or DIED in out, out
    assert vm_hwm(box) - before < 256 << 20
    _works(box)


def test_control_memory_a_handler_in_the_host_uses_is_the_hosts(place: Place) -> None:
    h = _start(place, *CONTROL)
    try:
        before = vm_hwm(h)
        out = _call(h, "reserve_memory", chunks=TOUCH_CHUNKS, chunk_mib=64, touch=True)
        assert out.startswith(f"ALL {TOUCH_CHUNKS} of"), out
        assert vm_hwm(h) - before >= 900 << 20
        _works(h)
    finally:
        h.close()


# ------------------------------------------------------------------ processes

BOMB_FORKS = 5000
BOMB_PROCESSES = 256
"""The process limit of the fork bomb's host (``[sandbox.limits] processes``): lower
than the default 1024 (which the confinement test reads in a worker's limits), so the
bomb reaches it in a quarter of the forks; high enough for a worker's threads when the
suite runs as an ordinary user, whose every process counts against it."""
CONTROL_FORKS = 2 * BOMB_PROCESSES
"""More than the bomb's limit, so the control shows there is no limit there."""


@needs_bwrap
def test_a_fork_bomb_stays_in_the_worker(place: Place) -> None:
    require_sandbox()
    enforced = not ROOT_USER or pids_cgroup_expected()
    h = _start(place, config=f"[sandbox.limits]\nprocesses = {BOMB_PROCESSES}\n")
    try:
        _require_sandboxed_handlers(h)
        want = expected_limit("processes", BOMB_PROCESSES)
        limits = parse_proc_limits(_call(h, "own_confinement"))
        assert limits["processes"] == (want, want), limits
        out = _call_while_pinging(h, "fork_many", {"count": BOMB_FORKS})
        if DIED not in out:
            assert out.startswith(("STOPPED forked", "ALL forked")), out
            forked = int(out.split()[2])
            if enforced:
                assert out.startswith("STOPPED") and forked <= want, out
        _works(h)
    finally:
        h.close()


def test_control_a_fork_bomb_in_the_host_passes_the_limit(place: Place) -> None:
    h = _start(place, *CONTROL)
    try:
        out = _call_while_pinging(h, "fork_many", {"count": CONTROL_FORKS})
        assert out.startswith(f"ALL forked {CONTROL_FORKS}"), out
        _works(h)
    finally:
        h.close()


# ------------------------------------------------------------------ Unix sockets


@pytest.fixture
def unix_listeners(place: Place) -> Iterator[tuple[socket.socket, socket.socket, str, str]]:
    """A listener on a socket file beside the root and one in the abstract namespace."""
    tag = secrets.token_hex(4)
    path = str(place.outside / f"s-{tag}")
    abstract = f"toolwire-handler-test-{tag}"
    with socket.socket(socket.AF_UNIX) as by_path, socket.socket(socket.AF_UNIX) as by_name:
        by_path.bind(path)
        by_path.listen()
        by_name.bind("\0" + abstract)
        by_name.listen()
        yield by_path, by_name, path, "@" + abstract


@needs_bwrap
def test_a_handler_cannot_reach_the_hosts_unix_sockets(
    box: HostProcess, unix_listeners: tuple[socket.socket, socket.socket, str, str]
) -> None:
    by_path, by_name, path, abstract = unix_listeners
    for address in (path, abstract):
        out = _call(box, "connect_unix", address=address)
        assert out.startswith("DENIED"), (address, out)
    assert select.select([by_path, by_name], [], [], 0)[0] == [], "a listener saw a connection"


def test_control_a_handler_in_the_host_reaches_unix_sockets(
    bare: HostProcess, unix_listeners: tuple[socket.socket, socket.socket, str, str]
) -> None:
    by_path, by_name, path, abstract = unix_listeners
    for listener, address in ((by_path, path), (by_name, abstract)):
        assert _call(bare, "connect_unix", address=address) == "CONNECTED"
        listener.settimeout(PROMPT)
        conn, _ = listener.accept()
        conn.close()


# ------------------------------------------------------------------ the module's own directory


@pytest.fixture
def tool_dir(place: Place) -> Path:
    """A copy of the escape tools in a directory of their own, as a module a user keeps
    in a directory with other files (e.g. ``--tools ~/my_tools.py``)."""
    d = place.base / f"tooldir-{secrets.token_hex(4)}"
    d.mkdir()
    d.chmod(0o755)
    (d / TOOLS.name).write_text(TOOLS.read_text())
    (d / "credentials.txt").write_text(f"beside-the-module-{secrets.token_hex(8)}\n")
    return d


@needs_bwrap
def test_a_handler_cannot_change_code_beside_its_module(place: Place, tool_dir: Path) -> None:
    # Planting a module beside its own would reach every later import from that
    # directory (the next worker, or a host started without isolation).
    require_sandbox()
    h = _start(place, tools=(tool_dir / TOOLS.name,))
    try:
        planted = tool_dir / "planted.py"
        out = _call(h, "write_outside", path=str(planted), content="print('planted')\n")
        # Denied, or written into the box's own private /tmp: never on the host.
        assert out.startswith(("DENIED", "WROTE")), out
        assert not planted.exists()
        out = _call(h, "write_outside", path=str(tool_dir / TOOLS.name), content="x")
        assert out.startswith("DENIED"), out
        _works(h)
    finally:
        h.close()
    assert (tool_dir / TOOLS.name).read_text() == TOOLS.read_text()


@needs_bwrap
def test_a_handler_cannot_read_other_files_beside_its_module(place: Place, tool_dir: Path) -> None:
    # The worker needs its module and the siblings it imports, not every file that
    # happens to share the directory (~/.ssh beside ~/my_tools.py).
    require_sandbox()
    secret = tool_dir / "credentials.txt"
    h = _start(place, tools=(tool_dir / TOOLS.name,))
    try:
        out = _call(h, "read_outside", path=str(secret))
    finally:
        h.close()
    assert out.startswith(("READ_OK", "DENIED")), out
    assert secret.read_text().strip() not in out, out


def test_control_a_handler_in_the_host_reads_and_writes_beside_its_module(
    place: Place, tool_dir: Path
) -> None:
    secret = tool_dir / "credentials.txt"
    h = _start(place, *CONTROL, tools=(tool_dir / TOOLS.name,))
    try:
        assert secret.read_text().strip() in _call(h, "read_outside", path=str(secret))
        planted = tool_dir / "planted.py"
        assert _call(h, "write_outside", path=str(planted), content="") == f"WROTE {planted}"
    finally:
        h.close()


# ------------------------------------------------------------------ other modules' calls


def _victim_in_flight(h: HostProcess) -> None:
    """Start the victim module's call (id "victim") and wait until it runs."""
    h.send(
        {
            "jsonrpc": "2.0",
            "id": "victim",
            "method": "tools/call",
            "params": {
                "name": "wait_here",
                "arguments": {"seconds": 120},
                "_meta": {"progressToken": "victim"},
            },
        }
    )
    while True:
        m = h.recv(timeout=PROMPT)
        assert m is not None, h.stderr
        if m.get("method") == "notifications/progress":
            return


def _forged_questions(h: HostProcess, tag: str) -> list[dict[str, Any]]:
    return [
        m
        for m in h.drain()
        if isinstance(m, dict)
        and m.get("method") == "elicitation/create"
        and tag in str(m.get("params", {}).get("message", ""))
    ]


@needs_bwrap
def test_a_handler_cannot_ask_the_client_in_another_modules_call(place: Place) -> None:
    # A compromised worker speaks the worker protocol itself and names the references
    # of calls it does not serve: the host must not ask the client on their behalf
    # (the client would show the question as part of the other module's call).
    require_sandbox()
    tag = "forged-" + secrets.token_hex(4)
    h = _start(place, tools=(TOOLS, VICTIM), capabilities={"elicitation": {}})
    try:
        _victim_in_flight(h)
        out = _call(h, "forge_asks", tag=tag)
        assert out.startswith("SENT 63 own ref"), out
        # The host read the forged asks before the worker's answer; a question it passed
        # on went to the client at once, well before two more round trips through a worker.
        _works(h)
        _works(h)
        assert _forged_questions(h, tag) == []
        h.notify("notifications/cancelled", {"requestId": "victim"})
    finally:
        h.close()


@needs_bwrap
def test_control_a_forged_ask_on_the_calls_own_reference_reaches_the_client(
    place: Place,
) -> None:
    # The forging works: on the reference of its own call in flight, the question
    # arrives at the client. (A handler may ask the client in its own call.)
    require_sandbox()
    tag = "own-" + secrets.token_hex(4)
    h = _start(place, tools=(TOOLS, VICTIM), capabilities={"elicitation": {}})
    try:
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "forger",
                "method": "tools/call",
                "params": {
                    "name": "forge_asks",
                    "arguments": {"tag": tag, "own": True, "linger": 60},
                },
            }
        )
        question = _next_question(h, tag)
        h.send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}})
        h.notify("notifications/cancelled", {"requestId": "forger"})
        _works(h)
    finally:
        h.close()


def _next_question(h: HostProcess, tag: str) -> dict[str, Any]:
    """The next ``elicitation/create`` carrying ``tag`` (other messages are dropped)."""
    while True:
        m = h.recv(timeout=PROMPT)
        assert m is not None, h.stderr
        if (
            isinstance(m, dict)
            and m.get("method") == "elicitation/create"
            and tag in str(m.get("params", {}).get("message", ""))
        ):
            return m


# ------------------------------------------------------------------ the worker's own confinement


def _status_field(text: str, name: str) -> str:
    for line in text.splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {name} in:\n{text}")


@needs_bwrap
def test_the_worker_has_no_privileges_a_seccomp_filter_and_the_limits(box: HostProcess) -> None:
    # What SECURITY.md promises a sandboxed command, checked from the handler's side.
    # The worker lives for many calls, so it takes no per-process CPU-time limit.
    out = _call(box, "own_confinement")
    assert int(_status_field(out, "CapEff"), 16) == 0, out
    assert int(_status_field(out, "CapPrm"), 16) == 0, out
    assert _status_field(out, "NoNewPrivs") == "1", out
    assert _status_field(out, "Seccomp") == "2", out
    limits = parse_proc_limits(out)
    for key in ("address_space", "file_size", "open_files", "processes"):
        want = expected_limit(key, PROMISED_LIMITS[key])
        assert limits[key] == (want, want), (key, out)


def test_control_a_handler_in_the_host_has_the_hosts_confinement(bare: HostProcess) -> None:
    out = _call(bare, "own_confinement")
    assert _status_field(out, "Seccomp") == _status_field(
        Path("/proc/self/status").read_text(), "Seccomp"
    )
    if ROOT_USER:
        assert int(_status_field(out, "CapEff"), 16) != 0, out
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    own = None if hard == resource.RLIM_INFINITY else hard
    assert parse_proc_limits(out)["address_space"][1] == own, out  # no limit was added


# ------------------------------------------------------------------ the worker's wire


@needs_bwrap
def test_a_handler_flooding_its_wire_does_not_reach_the_hosts_memory(place: Place) -> None:
    # The handler writes what is not JSON, then 300 MiB without a newline straight onto
    # its worker's wire. The host must neither buffer it nor stall: ping keeps
    # answering, the worker is killed at the first malformed message (so the call ends
    # long before its 5 s timeout), the host's resident memory stays flat, and the
    # module's next call works. (No control: without isolation there is no wire; the
    # bound measured is the host's own.)
    require_sandbox()
    h = _start(place, "--timeout", "5")
    try:
        before = vm_hwm(h)
        out = _call_while_pinging(h, "flood_wire", {"mib": 300, "garbage": "not json {"})
        assert "was stopped because it sent a malformed message" in out, out
        assert vm_hwm(h) - before < 64 << 20
        _works(h)
    finally:
        h.close()

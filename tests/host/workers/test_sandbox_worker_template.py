"""Workers forked from their module's template (toolwire.host.workers.template, opt-in with
``--worker-start fork``) keep the isolation of a worker started from scratch: a session
and process group of their own, cgroups of their own (not the template's, not the
previous worker's), the sandbox's seccomp filter, module state of their own; the template
never imports the module. By default (``spawn``) there is no template: each worker
starts in a sandbox of its own.

Runs in both passes (as root and as uid 65534, tests/run_unprivileged.sh); the cgroup
checks need root (the host makes cgroups only then)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from toolwire.host.serve.options import WORKER_START_ENV

from tests.e2e_helpers import PROMPT, wait_until
from tests.hostproc import TOOLS_DIR, HostProcess
from tests.sandbox_support import SANDBOX, require_sandbox
from tests.workers_support import text_of_result, worker_pids

TOOLS = str(TOOLS_DIR / "template_tools.py")


def _host(
    root: Path, *extra: str, start: tuple[str, ...] = ("--worker-start", "fork")
) -> HostProcess:
    return HostProcess(
        [
            "--root",
            str(root),
            "--no-builtins",
            "--no-entry-points",
            "--tools",
            TOOLS,
            "--workers",
            "1",
            *start,
            *extra,
        ],
        cwd=root,
        # Each test here says how its workers start (a pass of the suite may set it).
        env={WORKER_START_ENV: ""},
    )


def _identity(h: HostProcess) -> dict[str, Any]:
    r = h.call("identity", {}, timeout=PROMPT)["result"]
    assert not r.get("isError"), r
    return json.loads(text_of_result(r))


def _crash(h: HostProcess) -> None:
    r = h.call("crash", {}, timeout=PROMPT)["result"]
    assert r.get("isError") is True and "exit code 3" in text_of_result(r), r


def _templates(root: Path) -> list[int]:
    """Live processes that show themselves as a template of a module served in ``root``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if "toolwire-worker-tmpl" in cmdline and str(root) in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def _worker(root: Path) -> int:
    pythons = [
        pid
        for pid in worker_pids(root)
        if Path(f"/proc/{pid}/comm").read_text().startswith("python")
    ]
    assert len(pythons) == 1, pythons
    return pythons[0]


def _parent(pid: int) -> int:
    """The host pid of host process ``pid``'s parent."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _groups(pid: int) -> dict[str, str]:
    """The pids and memory cgroups of host process ``pid`` (cgroup v1 lines or v2's)."""
    out = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in ("pids", "memory"):
            if name in controllers.split(",") or controllers == "":
                out.setdefault(name, path)
    return out


@pytest.mark.parametrize("sandbox", ["on", "none"])
def test_a_restarted_worker_is_forked_with_the_isolation_of_a_fresh_one(
    tmp_path: Path, sandbox: str
) -> None:
    if sandbox == "on":
        require_sandbox()
    root = tmp_path / "root"
    root.mkdir()
    extra = () if sandbox == "on" else ("--sandbox", "none")
    with _host(root, *extra) as h:
        assert "result" in h.initialize()
        first = _identity(h)
        assert _identity(h)["calls"] == 2
        first_pid = _worker(root)
        first_groups = _groups(first_pid)
        _crash(h)
        second = _identity(h)
        second_pid = _worker(root)
        (template,) = _templates(root)

        # Module state of its own: a fresh import, counting from one again.
        assert second["worker_id"] != first["worker_id"]
        assert second["calls"] == 1
        # Forked from the template, which shows itself as such; the worker does not.
        # With the sandbox, each worker's parent is the init of its own PID namespace
        # (forked from the template too), as bubblewrap's init is a spawned worker's.
        for seen in (first, second):
            shown = "toolwire-worker-ns-init-shim" if sandbox == "on" else "toolwire-worker-tmpl"
            assert shown in seen["parent"], seen
            assert "toolwire.host.workers.worker" in seen["own"], seen
        parent = _parent(second_pid)
        assert (_parent(parent) if sandbox == "on" else parent) == template
        # A session and process group of its own, as seen inside and from the host.
        for seen in (first, second):
            assert seen["sid"] == seen["pid"] == seen["pgid"], seen
        assert os.getsid(second_pid) == second_pid == os.getpgid(second_pid)
        assert os.getsid(template) != second_pid
        # The same filter and capabilities as the first worker had.
        for key in ("seccomp", "no_new_privs", "cap_eff"):
            assert second[key] == first[key], (key, first, second)
        if sandbox == "on":
            assert second["cap_eff"] == "0000000000000000", second
            if SANDBOX.seccomp is not None:
                assert second["seccomp"] == "2", second
        if sandbox == "on" and os.geteuid() == 0 and "/toolwire-" in first_groups.get("pids", ""):
            # Cgroups of its own: not the template's, not the worker's before it.
            template_groups = _groups(template)
            second_groups = _groups(second_pid)
            for name, path in second_groups.items():
                if "/toolwire-" not in first_groups.get(name, ""):
                    continue
                assert "/toolwire-" in path, (name, second_groups)
                assert path != template_groups[name], (name, path)
                assert path != first_groups[name], (name, path)
                assert path not in Path("/proc/self/cgroup").read_text(), (name, path)


def test_the_template_never_imports_the_module(tmp_path: Path) -> None:
    require_sandbox()
    root = tmp_path / "root"
    root.mkdir()
    with _host(root) as h:
        assert "result" in h.initialize()
        _identity(h)
        _crash(h)
        _identity(h)
        lines = (root / "imports.log").read_text().splitlines()
    # One import per worker (two workers), each in a worker, none in the template.
    assert len(lines) == 2, lines
    for line in lines:
        assert "toolwire.host.workers.worker" in line and "toolwire-worker-tmpl" not in line, line


def test_a_template_that_dies_is_replaced(tmp_path: Path) -> None:
    require_sandbox()
    root = tmp_path / "root"
    root.mkdir()
    with _host(root) as h:
        assert "result" in h.initialize()
        first = _identity(h)
        (template,) = _templates(root)
        os.kill(template, signal.SIGKILL)
        # Its worker ends with it (the sandbox's PID namespace); the next call gets a
        # worker forked from a new template.
        wait_until(lambda: not worker_pids(root), PROMPT, "the template's worker to end")
        r = h.call("identity", {}, timeout=PROMPT)["result"]
        if r.get("isError"):  # the call raced the worker's end: the next one is served
            r = h.call("identity", {}, timeout=PROMPT)["result"]
        assert not r.get("isError"), r
        second = json.loads(text_of_result(r))
        assert second["worker_id"] != first["worker_id"]
        (again,) = _templates(root)
        assert again != template


def _pid_namespace(pid: int) -> int:
    """The inode of process ``pid``'s PID namespace."""
    return os.stat(f"/proc/{pid}/ns/pid").st_ino


def test_by_default_workers_are_forked_each_into_a_sandbox_of_its_own(tmp_path: Path) -> None:
    """The default start (neither --worker-start, [workers] nor the environment says):
    forked from the module's template, each worker in its own PID namespace, whose
    init (not the template) is its parent."""
    require_sandbox()
    root = tmp_path / "root"
    root.mkdir()
    with _host(root, start=()) as h:
        assert "result" in h.initialize()
        first = _identity(h)
        first_pid = _worker(root)
        (template,) = _templates(root)
        assert "toolwire-worker-ns-init-shim" in first["parent"], first
        assert _parent(_parent(first_pid)) == template
        assert _pid_namespace(first_pid) not in (
            _pid_namespace(template),
            _pid_namespace(os.getpid()),
        )
        assert first["cap_eff"] == "0000000000000000", first
        if SANDBOX.seccomp is not None:
            assert first["seccomp"] == "2", first


@pytest.mark.parametrize("sandbox", ["on", "none"])
def test_spawned_workers_each_start_in_a_sandbox_of_their_own(
    tmp_path: Path, sandbox: str, request: pytest.FixtureRequest
) -> None:
    if sandbox == "on":
        require_sandbox()
    root = tmp_path / "root"
    root.mkdir()
    extra = () if sandbox == "on" else ("--sandbox", "none")
    with _host(root, *extra, start=("--worker-start", "spawn")) as h:
        assert "result" in h.initialize()
        first = _identity(h)
        first_pid = _worker(root)
        first_parent = int(Path(f"/proc/{first_pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        # Held open, the first worker's namespace outlives it, so its inode number
        # cannot be given to another namespace meanwhile.
        first_ns = os.open(f"/proc/{first_pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        request.addfinalizer(lambda: os.close(first_ns))
        assert _templates(root) == []
        _crash(h)
        second = _identity(h)
        second_pid = _worker(root)
        second_parent = int(
            Path(f"/proc/{second_pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        )
        # No template: each worker is a process of its own, started from scratch...
        assert _templates(root) == []
        for seen in (first, second):
            assert "toolwire-worker-tmpl" not in seen["parent"], seen
        assert second["worker_id"] != first["worker_id"] and second["calls"] == 1
        assert os.getsid(second_pid) != os.getsid(h.proc.pid)
        if sandbox == "on":
            # ...under a bubblewrap of its own, in a PID namespace of its own (and with
            # it its own mount, IPC and network namespaces and its own /tmp).
            assert second_parent != first_parent, (first_parent, second_parent)
            assert _pid_namespace(second_pid) != os.fstat(first_ns).st_ino
            assert _pid_namespace(second_pid) != _pid_namespace(os.getpid())
        else:
            assert first_parent == second_parent == h.proc.pid


def test_the_environment_chooses_the_start_below_the_command_line(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    base = ["--root", str(root), "--no-builtins", "--no-entry-points", "--tools", TOOLS]
    base += ["--workers", "1", "--sandbox", "none"]
    for value, flag, forked in (
        ("fork", (), True),
        ("spawn", (), False),
        ("fork", ("--worker-start", "spawn"), False),  # the command line wins
    ):
        with HostProcess([*base, *flag], cwd=root, env={WORKER_START_ENV: value}) as h:
            assert "result" in h.initialize()
            assert ("toolwire-worker-tmpl" in _identity(h)["parent"]) is forked, (value, flag)


@pytest.mark.parametrize("value", ["fork", "spawn"])
def test_the_config_file_chooses_the_start_below_the_command_line(
    tmp_path: Path, value: str
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    config = tmp_path / "toolwire.toml"
    config.write_text(f'[workers]\nstart = "{value}"\n')
    with _host(root, "--sandbox", "none", "--config", str(config), start=()) as h:
        assert "result" in h.initialize()
        assert ("toolwire-worker-tmpl" in _identity(h)["parent"]) is (value == "fork")
        assert len(_templates(root)) == (value == "fork")
    # The command line wins over the file.
    other = "spawn" if value == "fork" else "fork"
    with _host(
        root, "--sandbox", "none", "--config", str(config), start=("--worker-start", other)
    ) as h:
        assert "result" in h.initialize()
        assert ("toolwire-worker-tmpl" in _identity(h)["parent"]) is (other == "fork")
        assert len(_templates(root)) == (other == "fork")


def _view(response: dict[str, Any]) -> dict[str, Any]:
    r = response["result"]
    assert not r.get("isError"), r
    return json.loads(text_of_result(r))  # type: ignore[no-any-return]


NAMESPACES = ("pid", "mnt", "ipc", "uts", "net", "cgroup", "user")
NO_CAPABILITIES = "0000000000000000"


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_two_workers_of_one_module_share_no_namespace_no_tmp_and_no_privilege(
    tmp_path: Path, start: str
) -> None:
    """Two workers of one module, alive at once, each in a sandbox of its own: forked
    from the template as started from scratch."""
    require_sandbox()
    root = tmp_path / "root"
    root.mkdir()
    gate = root / "gate"
    os.mkfifo(gate)
    with _host(root, "--workers", "2", start=("--worker-start", start)) as h:
        assert "result" in h.initialize()
        busy = 7001
        h.send(
            {
                "jsonrpc": "2.0",
                "id": busy,
                "method": "tools/call",
                "params": {"name": "sandbox_view_after", "arguments": {"gate": str(gate)}},
            }
        )
        writer: list[int] = []

        def opened() -> bool:
            try:
                writer.append(os.open(gate, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC))
            except OSError:
                return False  # ENXIO: no reader yet
            return True

        # Once the first worker reads the gate, it is busy (its marks left): the next
        # call goes to the other worker.
        wait_until(opened, PROMPT, "the first worker to wait at its gate")
        try:
            second = _view(h.call("sandbox_view", {}, timeout=PROMPT))
        finally:
            os.close(writer[0])
        first = _view(h.recv_response(busy, timeout=PROMPT))
        templates = _templates(root)
        template_ns = (
            {name: os.stat(f"/proc/{templates[0]}/ns/{name}").st_ino for name in NAMESPACES}
            if templates
            else {}
        )
    assert first["worker_id"] != second["worker_id"], (first, second)
    assert len(templates) == (1 if start == "fork" else 0), templates
    mine = {name: os.stat(f"/proc/self/ns/{name}").st_ino for name in NAMESPACES}
    for name in NAMESPACES:
        if name == "user" and start == "spawn" and os.geteuid() == 0:
            continue  # bubblewrap run by root makes no user namespace
        # Not shared with each other, nor with the host, nor with the template.
        assert first["ns"][name] != second["ns"][name], (name, first, second)
        for seen in (first, second):
            assert seen["ns"][name] != mine[name], (name, seen)
            if template_ns:
                assert seen["ns"][name] != template_ns[name], (name, seen, template_ns)
    for seen in (first, second):
        # A private /tmp and /dev/shm: only its own mark, never the other worker's.
        assert seen["tmp"] == [f"mark-{seen['worker_id']}"], seen
        assert seen["shm"] == [f"mark-{seen['worker_id']}"], seen
        # No capability in any set, no new privileges, the sandbox's filter.
        for key in ("cap_eff", "cap_prm", "cap_inh", "cap_amb"):
            assert seen[key] == NO_CAPABILITIES, (key, seen)
        if start == "fork" or os.geteuid() != 0:
            # (bubblewrap run by root empties every set but the bounding one, which
            # no_new_privs keeps from ever refilling the others)
            assert seen["cap_bnd"] == NO_CAPABILITIES, seen
        assert seen["no_new_privs"] == "1", seen
        if SANDBOX.seccomp is not None:
            assert seen["seccomp"] == "2", seen
        # Its own PID namespace: its init and itself, nothing else.
        assert seen["procs"] == [1, seen["pid"]], seen
        assert seen["uid"] == os.getuid() and seen["hostname"] == "toolwire-sandbox", seen

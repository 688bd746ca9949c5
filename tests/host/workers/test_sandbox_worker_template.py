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
        for seen in (first, second):
            assert "toolwire-worker-tmpl" in seen["parent"], seen
            assert "toolwire.host.workers.worker" in seen["own"], seen
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


@pytest.mark.parametrize("sandbox", ["on", "none"])
def test_by_default_each_worker_starts_in_a_sandbox_of_its_own(
    tmp_path: Path, sandbox: str, request: pytest.FixtureRequest
) -> None:
    if sandbox == "on":
        require_sandbox()
    root = tmp_path / "root"
    root.mkdir()
    extra = () if sandbox == "on" else ("--sandbox", "none")
    with _host(root, *extra, start=()) as h:
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


def test_the_config_file_opts_in_to_forked_workers(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    config = tmp_path / "toolwire.toml"
    config.write_text('[workers]\nstart = "fork"\n')
    with _host(root, "--sandbox", "none", "--config", str(config), start=()) as h:
        assert "result" in h.initialize()
        assert "toolwire-worker-tmpl" in _identity(h)["parent"]
        assert len(_templates(root)) == 1
    # The command line wins over the file.
    with _host(
        root, "--sandbox", "none", "--config", str(config), start=("--worker-start", "spawn")
    ) as h:
        assert "result" in h.initialize()
        assert "toolwire-worker-tmpl" not in _identity(h)["parent"]
        assert _templates(root) == []

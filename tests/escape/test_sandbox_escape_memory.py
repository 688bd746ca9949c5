"""Memory past every limit, end to end through the real host: a memory cgroup per
command and per worker process (``[sandbox.limits] memory``).

An address-space rlimit counts one process's mappings and ``tmpfs_size`` one mount's
files, but what a process writes into a ``memfd`` or a file on /dev/shm is neither: an
attack held 1.5 GiB that way under ``address_space`` 256 MiB and ``tmpfs_size`` 64 MiB,
and a worker allocated 6 GiB. Where the host can create memory cgroups (root, or a
delegated cgroup v2 subtree), each command and each worker process gets one limited to
``[sandbox.limits] memory`` bytes: the kernel charges anonymous, memfd, shm and tmpfs
pages to it and kills inside it at the limit; the call ends as an error result that
names the limit and the host serves the next call. Where it cannot (an ordinary user
here), the host says so in its description instead of promising it.

Containment on a regression: every allocation stops at 1.5 GiB (the tools and commands
here cap it), and the allocating tests run only where the sandbox is active and a memory
cgroup can be made (checked independently of the product).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e_helpers import text_of
from tests.hostproc import TOOLS_DIR, HostProcess
from tests.sandbox_support import boxed, check_boxed, require_sandbox

MIB = 1 << 20
TOOLS = TOOLS_DIR / "memory_tools.py"
LIMIT_TEXT = "it exceeded the memory limit of {} MiB ([sandbox.limits] memory)"


def memory_cgroup_expected() -> bool:
    """Whether this process can create a memory-limited cgroup, checked without the
    product: a child group of its own group in a cgroup v1 ``memory`` hierarchy, or in
    its v2 group when ``memory`` is in ``cgroup.subtree_control``."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = [line.split() for line in Path("/proc/self/mounts").read_text().splitlines()]
    except OSError:
        return False
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        for m in mounts:
            if len(m) < 4:
                continue
            if "memory" in controllers.split(",") and m[2] == "cgroup" and "memory" in m[3]:
                limit_file = "memory.limit_in_bytes"
            elif controllers == "" and m[2] == "cgroup2":
                with contextlib.suppress(OSError):
                    if "memory" not in Path(m[1] + rel, "cgroup.subtree_control").read_text():
                        continue
                limit_file = "memory.max"
            else:
                continue
            probe = Path(m[1] + rel, f"toolwire-test-{os.getpid()}")
            try:
                probe.mkdir()
            except OSError:
                continue
            try:
                (probe / limit_file).write_text(str(64 * MIB))
                return True
            except OSError:
                continue
            finally:
                with contextlib.suppress(OSError):
                    probe.rmdir()
    return False


CGROUP = memory_cgroup_expected()
needs_memory_cgroup = pytest.mark.skipif(
    not CGROUP,
    reason="no memory cgroup can be made here (needs root or a delegated cgroup v2 "
    "subtree); test_the_description_says_whether_memory_is_limited checks what the "
    "host says instead",
)


def _host(tmp_path: Path, limits: dict[str, int], *extra: str) -> HostProcess:
    require_sandbox()  # never allocate unless the sandbox really runs
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    cfg = tmp_path / "toolwire.toml"
    cfg.write_text("[sandbox.limits]\n" + "".join(f"{k} = {v}\n" for k, v in limits.items()))
    args = ["--root", str(root), "--sandbox", "bwrap", "--no-entry-points"]
    return HostProcess([*args, "--config", str(cfg), *extra])


@pytest.fixture
def command_host(tmp_path: Path) -> Iterator[HostProcess]:
    """Commands limited to 256 MiB of memory; /dev/shm (1.5 GiB) is larger than that."""
    with _host(tmp_path, {"memory": 256 * MIB, "tmpfs_size": 1536 * MIB}) as h:
        assert "result" in h.initialize(), h.stderr
        yield h


@pytest.fixture
def worker_host(tmp_path: Path) -> Iterator[HostProcess]:
    """The memory tools in a worker process limited to 512 MiB."""
    tools = ["--no-builtins", "--tools", str(TOOLS), "--isolation", "process"]
    with _host(tmp_path, {"memory": 512 * MIB}, *tools) as h:
        assert "result" in h.initialize(), h.stderr
        yield h


def _bash(h: HostProcess, command: str) -> dict[str, Any]:
    """Run ``command`` only inside the sandbox (:func:`boxed`): unsandboxed it would
    fill the machine's own /dev/shm."""
    resp = h.call("bash", {"command": boxed(command)}, timeout=120)
    assert "result" in resp, resp
    check_boxed(text_of(resp))
    return resp["result"]  # type: ignore[no-any-return]


def _assert_next_call_served(h: HostProcess) -> None:
    got = _bash(h, "echo still-serving")
    assert not got.get("isError") and "still-serving" in got["content"][0]["text"], got


def test_the_description_says_whether_memory_is_limited(tmp_path: Path) -> None:
    with _host(tmp_path, {"memory": 320 * MIB}) as h:
        resp = h.initialize()
        instructions = resp["result"].get("instructions", "")
        if CGROUP:
            assert "320 MiB of memory per command and per worker process" in instructions
            h.expect_stderr("memory limit 320 MiB per command and per worker")
            assert "not enforced" not in instructions.split("memory limit", 1)[-1]
        else:
            assert "The memory limit is not enforced: no memory cgroup" in instructions
            assert "320 MiB of memory" not in instructions, instructions
            h.expect_stderr("NO memory limit")


@needs_memory_cgroup
def test_a_command_holding_memfd_memory_past_the_limit_is_killed(
    command_host: HostProcess,
) -> None:
    # The control: below the limit the same program runs to its end.
    hold = f"{sys.executable} -I -c \"import os; fd=os.memfd_create('m'); "
    hold += "[os.write(fd, b'1' * (64 << 20)) for _ in range({})]; print('held', 'all')\""
    small = _bash(command_host, hold.format(2))
    assert not small.get("isError") and "held all" in text_of({"result": small}), small
    got = _bash(command_host, hold.format(16) + "; echo after=$?")  # 1 GiB
    text = text_of({"result": got})
    assert got.get("isError") is True, got
    assert LIMIT_TEXT.format(256) in text, text
    assert "held all" not in text, text
    _assert_next_call_served(command_host)


@needs_memory_cgroup
def test_a_command_filling_dev_shm_past_the_limit_is_killed(command_host: HostProcess) -> None:
    small = _bash(command_host, "head -c 64M /dev/zero > /dev/shm/a && echo wrote-small")
    assert not small.get("isError") and "wrote-small" in text_of({"result": small}), small
    got = _bash(command_host, "head -c 1G /dev/zero > /dev/shm/fill && echo wrote-$((6 * 7))")
    text = text_of({"result": got})
    assert got.get("isError") is True, got
    assert LIMIT_TEXT.format(256) in text, text
    assert "wrote-42" not in text, text
    _assert_next_call_served(command_host)


@needs_memory_cgroup
@pytest.mark.parametrize("how", ["heap", "memfd"])
def test_a_worker_allocating_past_the_limit_is_killed_and_replaced(
    worker_host: HostProcess, how: str
) -> None:
    small = worker_host.call("allocate", {"mib": 128, "how": how}, timeout=60)
    assert text_of(small) == f"held 128 MiB ({how})", small  # the control, within 512 MiB
    got = worker_host.call("allocate", {"mib": 1536, "how": how}, timeout=120)
    assert got["result"].get("isError") is True, got
    text = text_of(got)
    assert "its worker process was killed: " + LIMIT_TEXT.format(512) in text, text
    # The host lives and a new worker serves the next call.
    again = worker_host.call("allocate", {"mib": 64, "how": how}, timeout=60)
    assert text_of(again) == f"held 64 MiB ({how})", again
    assert worker_host.proc.poll() is None


@needs_memory_cgroup
def test_each_worker_sits_in_a_memory_cgroup_of_its_own_with_the_limit(
    worker_host: HostProcess, tmp_path: Path
) -> None:
    from tests.workers_support import worker_pids

    worker_host.call("allocate", {"mib": 0}, timeout=60)  # a worker is up
    pythons = [
        pid
        for pid in worker_pids(tmp_path / "root")
        if Path(f"/proc/{pid}/comm").read_text().startswith("python")
    ]
    assert pythons
    own = Path("/proc/self/cgroup").read_text().splitlines()
    mounts = [m.split() for m in Path("/proc/self/mounts").read_text().splitlines()]
    seen: set[str] = set()
    for pid in pythons:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        line = next(ln for ln in lines if ":memory:" in ln or ln.startswith("0::"))
        assert "/toolwire-" in line and line not in own and line not in seen, lines
        seen.add(line)
        rel = line.split(":", 2)[2]
        limits = [
            int(Path(m[1] + rel, name).read_text())
            for m in mounts
            if len(m) > 3
            and ((m[2] == "cgroup" and "memory" in m[3].split(",")) or m[2] == "cgroup2")
            for name in ("memory.limit_in_bytes", "memory.max")
            if Path(m[1] + rel, name).exists()
        ]
        assert limits == [512 * MIB], (line, limits)

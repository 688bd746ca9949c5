"""Memory escape through the sandbox's RAM-backed mounts, end to end through the real host.

/tmp and /dev/shm in the sandbox are tmpfs mounts: their files live in the host's
memory. Unsized, each could grow to half the host's RAM (the kernel default), so one
command could fill the host's memory. Each is now as large as ``[sandbox.limits]
tmpfs_size`` (512 MiB by default, as SECURITY.md says) and writing past it fails with
ENOSPC; /dev is read-only for files (its devices still work).

Every command that writes is guarded (``boxed``): were the sandbox silently not there,
it would fill the machine's own /tmp and /dev/shm and create files in its /dev; the
test then fails before doing so.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e_helpers import text_of
from tests.hostproc import HostProcess
from tests.sandbox_support import boxed, check_boxed, require_boxed, require_sandbox

MIB = 1 << 20


def _host(root: Path, config: Path | None = None) -> HostProcess:
    require_sandbox()
    args = ["--root", str(root), "--sandbox", "bwrap", "--no-entry-points"]
    if config is not None:
        args += ["--config", str(config)]
    return HostProcess(args)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[HostProcess]:
    root = tmp_path / "root"
    root.mkdir()
    with _host(root) as h:
        h.initialize()
        require_boxed(h)
        yield h


def _sizes(h: HostProcess) -> dict[str, int]:
    """Each mount's total size in bytes, measured inside the sandbox."""
    out = text_of(h.call("bash", {"command": "stat -f -c '%n %b %S' /tmp /dev/shm"}))
    sizes: dict[str, int] = {}
    for line in out.splitlines():
        name, blocks, block_size = line.split()
        sizes[name] = int(blocks) * int(block_size)
    return sizes


def test_tmp_and_dev_shm_are_512_mib_by_default(host: HostProcess) -> None:
    assert _sizes(host) == {"/tmp": 512 * MIB, "/dev/shm": 512 * MIB}


def test_writing_past_the_configured_size_fails_with_enospc(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    cfg = tmp_path / "toolwire.toml"
    cfg.write_text(f"[sandbox.limits]\ntmpfs_size = {8 * MIB}\n")
    with _host(root, cfg) as h:
        h.initialize()
        require_boxed(h)
        assert _sizes(h) == {"/tmp": 8 * MIB, "/dev/shm": 8 * MIB}
        for mount in ("/tmp", "/dev/shm"):
            command = (
                f"head -c {MIB} /dev/zero > {mount}/small && echo small-ok;"  # the control
                f" head -c {9 * MIB} /dev/zero > {mount}/fill; echo rc=$?"
            )
            got = check_boxed(text_of(h.call("bash", {"command": boxed(command)}, timeout=60)))
            assert "small-ok" in got, got
            assert "No space left on device" in got and "rc=1" in got, got


def test_dev_holds_no_files_but_its_devices_work(host: HostProcess) -> None:
    command = (
        "echo x > /dev/stash; echo rc=$?; echo y > /dev/null && echo null-ok;"
        " head -c 4 /dev/zero | wc -c"
    )
    got = check_boxed(text_of(host.call("bash", {"command": boxed(command)})))
    assert "Read-only file system" in got and "rc=1" in got and "null-ok" in got, got
    assert got.endswith("4"), got

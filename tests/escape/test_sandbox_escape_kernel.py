"""Escape attempts at the kernel's global state and at the host's own installation.

Through the real host (``--sandbox bwrap``), sandboxed commands try to write global
sysctls, reach root's kernel keyring in both directions, trace a process, open perf
events, push input into a terminal, mount, change the host's installation inside the
root, and get a planted ``bwrap`` used. Each asserts the observable proof; where the
same action can be tried harmlessly outside the sandbox, a control shows that it would
have worked there. Every marker goes into the test's own temporary directory, the
sysctl is written with its own current value, and mounts are only ever tried inside
the box or in a private namespace on a throw-away directory.

Passes as root and as an ordinary user (see SECURITY.md, "The escape suite").
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hostproc import HostProcess
from tests.sandbox_support import boxed, check_boxed, needs_bwrap, require_boxed, require_sandbox

PROBE = Path(__file__).resolve().parents[1] / "kernel_probe.py"
ROOT_USER = os.geteuid() == 0


def _text(resp: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in resp["result"]["content"])


def _sh(h: HostProcess, command: str, timeout: float = 60) -> str:
    return _text(h.call("bash", {"command": command}, timeout=timeout))


def _result(output: str, attempt: str) -> tuple[int, str, str]:
    """(return value, errno name, extra) from the probe's line for ``attempt``."""
    for line in output.splitlines():
        parts = line.split(" ", 3)
        if parts[0] == attempt and len(parts) >= 3:
            return int(parts[1]), parts[2], parts[3] if len(parts) > 3 else ""
    raise AssertionError(f"the probe did not run ({attempt}):\n{output}")


def _outside(*args: str, cwd: Path) -> tuple[int, str, str]:
    """The probe run unsandboxed by the test itself (a control)."""
    out = subprocess.run(
        [sys.executable, str(PROBE), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    return _result(out, args[0])


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("kernel")
    (base / "root").mkdir()
    (base / "outside").mkdir()
    shutil.copy(PROBE, base / "root" / "kernel_probe.py")
    return base


@pytest.fixture(scope="module")
def box(base: Path) -> Iterator[HostProcess]:
    require_sandbox()
    h = HostProcess(["--root", str(base / "root"), "--sandbox", "bwrap"])
    h.initialize()
    require_boxed(h)  # before any attempt: writes to /proc/sys would reach this machine
    yield h
    h.close()


def _probe(h: HostProcess, *args: str) -> tuple[int, str, str]:
    out = _sh(h, " ".join([sys.executable, "kernel_probe.py", *args]))
    return _result(out, args[0])


# ------------------------------------------------------------------ /proc and sysctls


@needs_bwrap
def test_a_global_sysctl_cannot_be_written(box: HostProcess) -> None:
    out = check_boxed(
        _sh(
            box,
            boxed(
                "v=$(cat /proc/sys/vm/swappiness) && echo value=$v && "
                "echo $v > /proc/sys/vm/swappiness && echo WROTE"
            ),
        )
    )
    assert "value=" in out, out  # the command ran and could read it
    assert "WROTE" not in out
    assert "Read-only file system" in out, out
    if ROOT_USER:
        # Control: the host's root user outside the box can write it (same value).
        with open("/proc/sys/vm/swappiness", "r+") as f:
            value = f.read()
            f.seek(0)
            f.write(value)


@needs_bwrap
def test_sensitive_proc_entries_are_read_only_or_masked(box: HostProcess) -> None:
    out = _sh(
        box, "cat /proc/self/mounts; echo timer_list=$(head -c 4096 /proc/timer_list | wc -c)"
    )
    mounts = {
        line.split()[1]: line.split()[3].split(",")
        for line in out.splitlines()
        if line.startswith("proc ") or " /proc/" in line
    }
    for name in ("sys", "sysrq-trigger", "bus", "fs", "irq"):
        if os.path.exists(f"/proc/{name}"):
            assert "ro" in mounts.get(f"/proc/{name}", []), (name, out)
    if os.path.exists("/proc/timer_list"):
        assert "timer_list=0" in out, out
    if os.path.exists("/proc/sysrq-trigger"):
        # Opening for writing (no byte written) is refused.
        out = check_boxed(_sh(box, boxed(": > /proc/sysrq-trigger || echo READONLY")))
        assert "READONLY" in out, out


# ------------------------------------------------------------------ kernel keyring


@needs_bwrap
def test_the_host_keyring_is_not_shared_either_way(box: HostProcess, base: Path) -> None:
    tag = secrets.token_hex(6)
    host_key, box_key = f"toolwire-host-{tag}", f"toolwire-box-{tag}"
    secret = f"keyring-secret-{tag}"
    try:
        ret, err, _ = _outside("keyring-add", host_key, secret, cwd=base)
        assert ret >= 0, err
        # Control: an unsandboxed process of the same user finds the host's key.
        _, _, payload = _outside("keyring-read", host_key, cwd=base)
        assert payload == secret
        # Host to box: the key cannot be found or read.
        ret, err, payload = _probe(box, "keyring-read", host_key)
        assert (ret, err) == (-1, "EPERM") and secret not in payload
        # Box to host: a key added inside does not land in the host's keyring.
        ret, err, _ = _probe(box, "keyring-add", box_key, secret)
        assert (ret, err) == (-1, "EPERM")
        ret, err, payload = _outside("keyring-read", box_key, cwd=base)
        assert ret == -1 and payload == "", (ret, err, payload)
    finally:
        _outside("keyring-remove", host_key, cwd=base)
        _outside("keyring-remove", box_key, cwd=base)


# ------------------------------------------------------------------ other processes


@needs_bwrap
def test_ptrace_of_another_process_is_denied(box: HostProcess, base: Path) -> None:
    yama = Path("/proc/sys/kernel/yama/ptrace_scope")
    if not yama.exists() or int(yama.read_text()) <= 1:
        assert _outside("ptrace", cwd=base)[:2] == (0, "-")  # control: allowed outside
    assert _probe(box, "ptrace")[:2] == (-1, "EPERM")


@needs_bwrap
def test_perf_event_open_is_denied(box: HostProcess, base: Path) -> None:
    assert _probe(box, "perf")[:2] == (-1, "EPERM")
    if ROOT_USER:
        ret, err, _ = _outside("perf", cwd=base)
        assert ret >= 0 or err in ("ENOENT", "ENODEV", "EOPNOTSUPP"), err  # control


@needs_bwrap
@pytest.mark.parametrize("attempt", ["tiocsti", "tiocsti-high-bits", "tioclinux"])
def test_terminal_injection_ioctls_are_denied(box: HostProcess, base: Path, attempt: str) -> None:
    if attempt != "tioclinux":
        # Control: outside, pushing a byte into one's own controlling pty works
        # (unless the kernel disabled TIOCSTI for everyone).
        legacy = Path("/proc/sys/dev/tty/legacy_tiocsti")
        if not legacy.exists() or legacy.read_text().strip() == "1":
            assert _outside(attempt, cwd=base)[:2] == (0, "-")
    assert _probe(box, attempt)[:2] == (-1, "EPERM")


# ------------------------------------------------------------------ mounts


@needs_bwrap
def test_mounting_is_denied_even_in_a_new_namespace(box: HostProcess, base: Path) -> None:
    target = base / "root" / "mnt"
    target.mkdir(exist_ok=True)
    throwaway = base / "outside" / f"mnt-{secrets.token_hex(4)}"
    throwaway.mkdir()
    # Control: outside, a new user and mount namespace lets a process mount (privately).
    if Path("/proc/sys/user/max_user_namespaces").read_text().strip() != "0":
        ret, _, extra = _outside("unshare-mount", str(throwaway), cwd=base)
        assert ret == 0 and extra == "mount=0/-"
    assert _probe(box, "unshare-mount", str(target))[:2] == (-1, "EPERM")
    assert _probe(box, "mount", str(target))[:2] == (-1, "EPERM")
    out = _sh(box, "unshare -rm true; echo status=$?")
    assert "status=0" not in out, out


# ------------------------------------------------------------------ the host's installation


def _venv_in(root: Path) -> Path:
    """A Python environment inside ``root`` that runs this toolwire: its prefix (the
    host's installation) lies inside the root, as with ``--root .`` and a project .venv."""
    venv = root / ".venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    py = venv / "bin" / "python"
    site_dir = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = [p for p in sys.path if p.endswith("site-packages")]
    (Path(site_dir) / "toolwire_test_paths.pth").write_text(
        "".join(f"import site; site.addsitedir({p!r})\n" for p in ours)
    )
    return py


@needs_bwrap
def test_the_host_installation_inside_the_root_is_read_only(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    py = _venv_in(root)
    tag = secrets.token_hex(4)
    h = HostProcess(
        ["--root", str(root), "--sandbox", "bwrap"],
        command=[str(py), "-P", "-m", "toolwire.host"],  # the host runs from the root's venv
    )
    with h:
        h.initialize()
        prefix = _sh(h, "echo prefix=$(cat .venv/pyvenv.cfg | head -1)")
        assert "prefix=" in prefix  # the command ran and sees the installation
        out = _sh(
            h,
            f"touch .venv/planted-{tag}; echo x >> .venv/pyvenv.cfg; "
            f"touch .venv/bin/bwrap; touch other-{tag} && echo OTHER-WRITTEN",
        )
        assert h.request("ping")["result"] == {}  # the host still serves
    assert "OTHER-WRITTEN" in out, out  # control: the rest of the root is writable
    assert "Read-only file system" in out, out
    assert not (root / ".venv" / f"planted-{tag}").exists()
    assert not (root / ".venv" / "bin" / "bwrap").exists()
    assert "x\n" not in (root / ".venv" / "pyvenv.cfg").read_text()


def _fake_bwrap(path: Path, marker: Path) -> None:
    """A 'bwrap' that runs the command unsandboxed and leaves ``marker`` behind."""
    path.write_text(
        "#!/bin/sh\n"
        f"touch '{marker}'\n"
        'while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done\n'
        "shift\n"
        'exec "$@"\n'
    )
    path.chmod(0o755)


@needs_bwrap
def test_a_bwrap_planted_on_a_path_entry_inside_the_root_is_never_used(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    marker = tmp_path / "outside" / "fake-bwrap-ran"
    _fake_bwrap(root / ".venv" / "bin" / "bwrap", marker)
    path = f"{root / '.venv' / 'bin'}:{os.environ.get('PATH', os.defpath)}"
    with HostProcess(["--root", str(root)], env={"PATH": path}) as h:
        info = h.initialize()["result"]
        out = _sh(h, "readlink /proc/self/ns/pid")
    assert not marker.exists(), "the planted bwrap ran"
    assert str(root) not in info["serverInfo"].get("description", "")
    assert "Commands run sandboxed" in info["instructions"]
    assert out.strip().startswith("pid:") and out.strip() != os.readlink("/proc/self/ns/pid")


@needs_bwrap
def test_a_bwrap_that_does_not_sandbox_is_refused(tmp_path: Path) -> None:
    marker = tmp_path / "fake-bwrap-ran"
    fake = tmp_path / "bwrap"
    _fake_bwrap(fake, marker)
    (tmp_path / "root").mkdir()
    config = tmp_path / "toolwire.toml"
    config.write_text(f'[sandbox]\nbwrap = "{fake}"\n')
    h = HostProcess(
        ["--root", str(tmp_path / "root"), "--sandbox", "bwrap", "--config", str(config)]
    )
    with h:
        code = h.wait(timeout=60)
    assert code == 2
    assert "did not sandbox the probe command" in h.stderr, h.stderr

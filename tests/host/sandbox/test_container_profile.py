"""The host inside a container's default profile (issue 25 point 5).

A pod with deploy/base's security context runs the host as a non-root user with no
capability, a read-only root filesystem, a writable /tmp (an emptyDir) and the
runtime's default seccomp profile, which refuses to create namespaces. Bubblewrap
cannot start there. ``--sandbox bwrap`` must then refuse to start and name the
profile setting that is missing; ``--sandbox auto`` must start and say plainly that
the pod is the boundary.

How the profile is made here, as root and without a container runtime:

* a bubblewrap (the one the host itself would use) builds the container's mount
  namespace: ``/`` bound read-only, a fresh ``/dev`` and ``/proc`` (bubblewrap
  remounts parts of its ``/proc`` read-only over non-empty directories, as runtimes
  mask ``/proc``), a mode-1777 tmpfs on ``/tmp``, the workspace bound writable at
  ``/srv``, its own PID namespace. A directory the test user cannot traverse on the
  way to the interpreter or the checkout (``/root`` under pyenv) is replaced by a
  tmpfs holding only read-only binds of what is needed, as an image would ship
  them world-readable;
* ``setpriv`` then becomes uid/gid 65534 with no groups, no capability in any set
  and ``no_new_privs``;
* for the RuntimeDefault case, a launcher installs the seccomp filter the host's own
  sandbox uses (it follows Docker's default profile: ``unshare``, ``setns``, the
  mount family and ``clone`` with a namespace flag fail with ``EPERM``) and execs the
  host, so the host runs under a filter exactly as in a pod. Without that launcher
  the same box stands for a pod whose seccomp profile allows namespaces but whose
  ``/proc`` is masked (``procMount: Default``).

``test_the_box_is_the_profile`` checks from inside that every property holds, so the
host tests below cannot pass against a box that is not the profile.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from toolwire.host.sandbox import find_bwrap
from toolwire.host.sandbox.linux import container

from tests.hostproc import REPO, HostProcess

TEST_UID = 65534
WORKSPACE = "/srv"
HOST = (sys.executable, "-P", "-m", "toolwire.host")

SECCOMP_LAUNCHER = """
import ctypes, os, platform, sys
from toolwire.host.sandbox.linux.seccomp import build_filter

program = build_filter(platform.machine())
buf = ctypes.create_string_buffer(program, len(program))

class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

fprog = SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
    sys.exit(f"no_new_privs: errno {ctypes.get_errno()}")
if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, MODE_FILTER
    sys.exit(f"seccomp: errno {ctypes.get_errno()}")
os.execv(sys.argv[1], sys.argv[1:])
"""

PROFILE_PROBE = """
import ctypes, json, os
status = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
libc = ctypes.CDLL(None, use_errno=True)
userns = 0 if libc.unshare(0x10000000) == 0 else ctypes.get_errno()
def write(path):
    try:
        with open(path, "w") as f:
            f.write("x")
        os.unlink(path)
        return 0
    except OSError as exc:
        return exc.errno
print(json.dumps({
    "uid": os.geteuid(), "gid": os.getegid(), "groups": os.getgroups(),
    "cap_eff": status["CapEff"].strip(), "cap_bnd": status["CapBnd"].strip(),
    "seccomp": status["Seccomp"].strip(), "no_new_privs": status["NoNewPrivs"].strip(),
    "userns": userns, "usr": write("/usr/toolwire-probe"), "tmp": write("/tmp/probe"),
    "root": write("/srv/probe"),
}))
"""

needs_root = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.geteuid() != 0,
    reason="making the container profile needs Linux and root (a mount namespace, a uid change)",
)


def _needed_paths() -> list[str]:
    bwrap = find_bwrap()
    paths = {os.path.realpath(sys.base_prefix), sys.prefix, str(REPO)}
    if bwrap is not None:
        paths.add(os.path.dirname(os.path.realpath(bwrap)))
    return sorted(paths)


def _blocked_ancestor(path: str) -> str | None:
    """The outermost directory on the way to ``path`` that others cannot traverse."""
    parts = Path(path).parts
    for i in range(2, len(parts) + 1):
        candidate = os.path.join(*parts[:i])
        if not os.stat(candidate).st_mode & 0o001:
            return candidate
    return None


def container_prefix(
    workspace: Path, *, runtime_default: bool, env: dict[str, str], tmp_volume: bool = True
) -> list[str]:
    """The command line that runs its arguments inside the profile (module docstring).
    ``tmp_volume=False``: /tmp is root's and read-only to the user, as in a pod with a
    read-only root filesystem and no volume at /tmp."""
    bwrap = find_bwrap()
    assert bwrap is not None, "no bubblewrap to build the container with"
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--perms", "1777" if tmp_volume else "0755", "--tmpfs", "/tmp"]
    groups: dict[str, list[str]] = {}
    for path in _needed_paths():
        # A checkout under /tmp lies below the fresh /tmp volume: bound back in like a
        # path under a directory others cannot traverse.
        blocked = "/tmp" if path.startswith("/tmp/") else _blocked_ancestor(path)
        if blocked is not None:
            groups.setdefault(blocked, []).append(path)
    for blocked, paths in groups.items():
        if blocked != "/tmp":
            argv += ["--tmpfs", blocked]
        made: set[str] = set()
        for path in paths:
            if any(path != p and path.startswith(p + "/") for p in paths):
                continue
            # bubblewrap would make the directories in between mode 0700.
            rest = Path(path).relative_to(blocked).parts[:-1]
            for i in range(1, len(rest) + 1):
                between = os.path.join(blocked, *rest[:i])
                if between not in made:
                    made.add(between)
                    argv += ["--perms", "0755", "--dir", between]
            argv += ["--ro-bind", path, path]
    argv += ["--bind", str(workspace), WORKSPACE, "--unshare-pid", "--die-with-parent"]
    argv += ["--chdir", str(REPO)]
    argv += [
        "setpriv",
        f"--reuid={TEST_UID}",
        f"--regid={TEST_UID}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
    ]
    base_env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", "PYTHONSAFEPATH": "1"}
    argv += ["env", "-i", *(f"{k}={v}" for k, v in {**base_env, **env}.items())]
    if runtime_default:
        argv += [sys.executable, "-P", "-c", SECCOMP_LAUNCHER]
    return argv


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    root.mkdir()
    os.chown(root, TEST_UID, TEST_UID)
    return root


def _probe(workspace: Path, runtime_default: bool) -> dict[str, Any]:
    argv = container_prefix(workspace, runtime_default=runtime_default, env={})
    proc = subprocess.run(
        [*argv, sys.executable, "-I", "-c", PROFILE_PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


@needs_root
@pytest.mark.parametrize("runtime_default", [True, False], ids=["runtime-default", "masked-proc"])
def test_the_box_is_the_profile(workspace: Path, runtime_default: bool) -> None:
    """Control: inside the box the process is uid 65534 with no groups and no
    capability, under no_new_privs, cannot write the root filesystem, can write /tmp
    and the workspace; with the RuntimeDefault stand-in it runs under a seccomp
    filter and cannot create a user namespace (EPERM), without it it can."""
    got = _probe(workspace, runtime_default)
    assert (got["uid"], got["gid"], got["groups"]) == (TEST_UID, TEST_UID, [])
    assert int(got["cap_eff"], 16) == 0 and int(got["cap_bnd"], 16) == 0
    assert got["no_new_privs"] == "1"
    assert got["usr"] == errno.EROFS
    assert got["tmp"] == 0 and got["root"] == 0
    if runtime_default:
        assert (got["seccomp"], got["userns"]) == ("2", errno.EPERM)
    else:
        assert (got["seccomp"], got["userns"]) == ("0", 0)


def _start(
    workspace: Path,
    mode: str,
    *,
    runtime_default: bool,
    env: dict[str, str],
    tmp_volume: bool = True,
) -> HostProcess:
    prefix = container_prefix(
        workspace, runtime_default=runtime_default, env=env, tmp_volume=tmp_volume
    )
    return HostProcess(
        ["--sandbox", mode, "--root", WORKSPACE],
        command=HOST,
        prefix=prefix,
        cwd=REPO,
    )


@needs_root
def test_bwrap_mode_refuses_and_names_the_seccomp_profile(workspace: Path) -> None:
    with _start(workspace, "bwrap", runtime_default=True, env={}) as h:
        code = h.wait(timeout=120)
        err = h.stderr
    assert code != 0, err
    assert "--sandbox bwrap:" in err and "refusing to run unsandboxed" in err
    assert "seccomp profile is the missing setting" in err
    assert "seccompProfile" in err and "RuntimeDefault" in err and "Localhost" in err
    assert "kernel.unprivileged_userns_clone=1;" not in err  # not the machine's sysctl


@needs_root
def test_bwrap_mode_refuses_and_names_proc_mount(workspace: Path) -> None:
    with _start(workspace, "bwrap", runtime_default=False, env={}) as h:
        code = h.wait(timeout=120)
        err = h.stderr
    assert code != 0, err
    assert "Can't mount proc" in err
    assert "procMount" in err and "Unmasked" in err and "hostUsers: false" in err


@needs_root
def test_auto_mode_says_the_pod_is_the_boundary_and_serves(workspace: Path) -> None:
    """In a pod (the kubelet's KUBERNETES_SERVICE_HOST is set), mode auto starts, says
    the pod is the boundary in its warning, its instructions and serverInfo, and a
    command runs as the pod's user, unsandboxed, writing only the workspace and /tmp."""
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}
    with _start(workspace, "auto", runtime_default=True, env=env) as h:
        init = h.initialize()
        description = init["result"]["serverInfo"]["description"]
        assert description.startswith("WARNING: commands run UNSANDBOXED: ")
        assert "Inside this pod the pod is the boundary" in description
        assert "seccompProfile" in description
        assert "the pod is the boundary" in init["result"]["instructions"]
        command = (
            "id -u; grep -E '^(Seccomp|CapEff):' /proc/self/status; "
            "touch /usr/x 2>/dev/null || echo usr-read-only; "
            "touch /srv/from-tool && echo wrote-root; touch /tmp/t && echo wrote-tmp"
        )
        resp = h.call("bash", {"command": command}, timeout=120)
        text = json.dumps(resp["result"])
        for expected in (str(TEST_UID), "usr-read-only", "wrote-root", "wrote-tmp"):
            assert expected in text, text
        assert "CapEff:\\t0000000000000000" in text, text
        h.expect_stderr("Inside this pod the pod is the boundary")
    assert (workspace / "from-tool").exists()


@needs_root
def test_no_writable_tmp_is_a_start_up_error_that_names_the_volume(workspace: Path) -> None:
    """A read-only root filesystem with no volume at /tmp: the host stops at start-up
    with one line saying so (exit 2), not with a traceback from the tempfile module."""
    with _start(workspace, "auto", runtime_default=True, env={}, tmp_volume=False) as h:
        code = h.wait(timeout=120)
        err = h.stderr
    assert code == 2, err
    assert "toolwire serve: no writable temporary directory" in err, err
    assert "emptyDir" in err and "Traceback" not in err, err


# ------------------------------------------------------------------ the rules alone


def test_explain_names_each_setting() -> None:
    seccomp = container.explain(
        "cannot-run", "x", where="pod", filter_mode=2, unshare_errno=errno.EPERM, uid=10001
    )
    assert seccomp.missing is not None and "seccompProfile" in seccomp.missing
    assert seccomp.boundary is not None and "uid 10001" in seccomp.boundary
    sysctl = container.explain(
        "cannot-run", "x", where=None, filter_mode=0, unshare_errno=errno.ENOSPC, uid=1
    )
    assert sysctl.missing is not None and "user.max_user_namespaces" in sysctl.missing
    proc = container.explain(
        "cannot-run",
        "bwrap: Can't mount proc on /newroot/proc: Operation not permitted.",
        where="container",
        filter_mode=0,
        unshare_errno=0,
        uid=1,
    )
    assert proc.missing is not None and "procMount" in proc.missing
    assert proc.boundary is not None and "Inside this container the container" in proc.boundary
    # No container and nothing a profile explains: the general advice stands.
    plain = container.explain(
        "cannot-run", "x", where=None, filter_mode=0, unshare_errno=errno.EPERM, uid=1
    )
    assert plain == container.ProfileFinding(None, None)
    # Only a bubblewrap that failed to run is a profile matter.
    missing = container.explain(
        "missing", "x", where="pod", filter_mode=2, unshare_errno=None, uid=1
    )
    assert missing.missing is None and missing.boundary is not None


def test_find_container_and_seccomp_mode() -> None:
    assert container.find_container({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}) == "pod"
    assert container.find_container({"container": "podman"}) == "container"
    assert container.seccomp_mode("Name:\tx\nSeccomp:\t2\nSeccomp_filters:\t1\n") == 2
    assert container.seccomp_mode("Name:\tx\n") == 0

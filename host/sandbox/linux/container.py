"""The sandbox inside a container: which profile setting keeps bubblewrap from running,
and whether the container (the pod) is then the only boundary (issue 25 point 5).

A container runtime's default profile stops bubblewrap in one of a few ways, each
with its own fix in the pod's ``securityContext`` (Kubernetes field names; Docker's
options in brackets):

* ``seccompProfile: RuntimeDefault`` (Docker's default profile): the host process
  itself runs under a seccomp filter that refuses ``unshare``/``clone`` with a
  namespace flag with ``EPERM`` unless the process holds ``CAP_SYS_ADMIN``. Needs a
  ``Localhost`` profile that allows them, or ``Unconfined``
  [``--security-opt seccomp=FILE``];
* ``procMount: Default``: the runtime mounts over parts of the container's ``/proc``
  (masked paths), and the kernel refuses a new ``proc`` mount in a namespace whose
  every ``proc`` is partly hidden, so bubblewrap's ``--proc`` fails even where user
  namespaces work. Needs ``procMount: Unmasked``, which Kubernetes accepts only with
  ``hostUsers: false`` [``--security-opt systempaths=unconfined``];
* the sysctl ``user.max_user_namespaces`` at 0 (``ENOSPC`` from ``unshare``): a
  setting of the node, not of the pod.

Which one applies is found by trying ``unshare(CLONE_NEWUSER)`` in a child process
(the errno tells the filter from the sysctl; success points at ``/proc``) and by
reading ``Seccomp:`` in ``/proc/self/status`` (proc(5)). Standard library only; the
probe runs only when bubblewrap has already failed, never on a working machine.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ProfileFinding", "examine", "explain", "find_container", "seccomp_mode", "userns_errno"]

_CLONE_NEWUSER = 0x10000000

_USERNS_PROBE = (
    "import ctypes, sys\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    f"sys.stdout.write('0' if libc.unshare({_CLONE_NEWUSER}) == 0 else str(ctypes.get_errno()))\n"
)


@dataclass(frozen=True)
class ProfileFinding:
    """What the container profile means for the sandbox.

    Attributes:
        missing: one or two sentences naming the profile setting that keeps
            bubblewrap from running and the value that lets it (None: no container
            setting explains the failure; the general advice stands).
        boundary: for mode "auto", the plain statement that the pod (or container)
            is the only boundary around unsandboxed commands (None: no container
            was found).
    """

    missing: str | None
    boundary: str | None


def seccomp_mode(status: str | None = None) -> int:
    """The ``Seccomp:`` field of ``/proc/self/status`` (0 none, 1 strict, 2 filter),
    or 0 when it cannot be read. ``status``: that file's text (read when None)."""
    if status is None:
        try:
            with open("/proc/self/status", encoding="ascii", errors="replace") as f:
                status = f.read()
        except OSError:
            return 0
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key == "Seccomp":
            try:
                return int(value.strip())
            except ValueError:
                return 0
    return 0


def userns_errno(timeout: float = 10.0) -> int | None:
    """Try ``unshare(CLONE_NEWUSER)`` in a child interpreter: 0 when it works, else
    its errno (``EPERM`` from a seccomp filter or an LSM, ``ENOSPC`` when
    ``user.max_user_namespaces`` is 0, ``EINVAL`` without user namespaces); None
    when the child cannot be run or says nothing usable."""
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _USERNS_PROBE],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = proc.stdout.decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None


def find_container(env: Mapping[str, str] | None = None) -> str | None:
    """ "pod" inside a Kubernetes pod (the kubelet sets ``KUBERNETES_SERVICE_HOST`` in
    every container), "container" inside another container (``/.dockerenv``,
    ``/run/.containerenv``, or the ``container`` variable systemd-nspawn and podman
    set), None when no sign of one is found. ``env``: the environment to look at
    (default ``os.environ``)."""
    env = os.environ if env is None else env
    if env.get("KUBERNETES_SERVICE_HOST"):
        return "pod"
    if env.get("container") or any(
        os.path.exists(p) for p in ("/.dockerenv", "/run/.containerenv")
    ):
        return "container"
    return None


def explain(
    cause: str,
    reason: str,
    *,
    where: str | None,
    filter_mode: int,
    unshare_errno: int | None,
    uid: int,
) -> ProfileFinding:
    """The container's part in an unusable sandbox.

    Args:
        cause: :func:`toolwire.host.sandbox._advice`'s cause ("cannot-run" is the
            only one a profile setting explains).
        reason: what bubblewrap said, as the sandbox reports it.
        where: :func:`find_container`'s answer.
        filter_mode: :func:`seccomp_mode` of the host process.
        unshare_errno: :func:`userns_errno`'s answer.
        uid: the host's effective uid (named in the boundary sentence).
    """
    missing = None
    if cause == "cannot-run":
        if unshare_errno == errno.EPERM and filter_mode == 2:
            missing = (
                "The container's seccomp profile is the missing setting: the host runs "
                "under a seccomp filter that refuses to create namespaces (Kubernetes "
                "securityContext.seccompProfile type RuntimeDefault, Docker's default "
                "profile). Give the pod a seccompProfile of type Localhost whose profile "
                "also allows unshare, clone with namespace flags, mount, umount2 and "
                "pivot_root (or Unconfined; Docker: --security-opt seccomp=FILE); where "
                "the node runs AppArmor, also an appArmorProfile that allows mount."
            )
        elif unshare_errno == errno.ENOSPC:
            missing = (
                "User namespaces are switched off: the sysctl user.max_user_namespaces "
                "is 0 (a setting of the node, not the pod); raise it on the node."
            )
        elif unshare_errno == 0 and "proc" in reason:
            missing = (
                "The container's /proc is masked (Kubernetes securityContext.procMount "
                "Default), so bubblewrap cannot mount a /proc of its own. Set procMount: "
                "Unmasked, which Kubernetes accepts only with hostUsers: false (Docker: "
                "--security-opt systempaths=unconfined)."
            )
    boundary = None
    if where is not None or missing is not None:
        name = where or "container"
        boundary = (
            f"Inside this {name} the {name} is the boundary: commands run as the host's "
            f"own user (uid {uid}), see every file and variable the host sees and reach "
            f"whatever the {name}'s network policy lets them reach; only the {name}'s "
            "security context (non-root, read-only root filesystem, no capabilities) "
            "and its network policy contain them."
        )
    return ProfileFinding(missing=missing, boundary=boundary)


def examine(cause: str, reason: str) -> ProfileFinding:
    """:func:`explain` for this process: looks for a container, reads the seccomp
    mode and, for a bubblewrap that could not run, probes user namespaces."""
    return explain(
        cause,
        reason,
        where=find_container(),
        filter_mode=seccomp_mode(),
        unshare_errno=userns_errno() if cause == "cannot-run" else None,
        uid=os.geteuid(),
    )

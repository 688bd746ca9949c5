"""A sandbox of its own for each worker forked from a template (the child's side).

A worker template (:mod:`toolwire.host.workers.template`) runs under bubblewrap like a
worker, with three differences (:meth:`~.bubblewrap.Sandbox.wrap` with
``fork_template=True``): it has a user namespace of its own (as root too, mapping uid 0 to
uid 0, and as an ordinary user with uid 0 inside, mapped to that user), keeps
``CAP_SYS_ADMIN`` and ``CAP_NET_ADMIN`` *in that namespace* (nowhere else), and has no
seccomp filter. It never runs the tool module. For each worker it forks, the code here
gives the worker what bubblewrap gives a spawned worker, before anything of the module
runs (SECURITY.md lists the comparison point by point):

1. :func:`unshare_for_worker`, in a child of the template: new PID, mount, IPC, UTS and
   (unless ``allow_network``) network namespaces, owned by the template's user namespace.
2. :func:`start_init`, in its child, the first process of the new PID namespace (its
   init, as bubblewrap's own init is a spawned worker's): every mount made private; a
   new ``/proc`` for the new PID namespace, with the masks and read-only entries of
   :func:`~.bubblewrap._proc_hardening` applied again; a fresh private ``/tmp`` and
   ``/dev/shm`` (``tmpfs_size``), whatever the template had mounted below ``/tmp`` (the
   root, the module's paths) moved onto the new one; a devpts instance of its own; the
   loopback interface up; the egress relay of its own when a ``[network]`` allow list
   applies; then a user namespace of its own (the same uid as a spawned worker's, its
   ``setgroups`` denied) and the process limit, so ``RLIMIT_NPROC`` counts this
   worker's processes only.
3. :func:`lock_down`, in the init and in the worker it forks: a new cgroup namespace (the
   worker's, after it joined its own cgroups), the bounding, ambient, inheritable,
   permitted and effective capability sets emptied, ``no_new_privs``, and the seccomp
   filter a spawned worker gets (:mod:`.seccomp`, the same program bubblewrap loads).

Standard library only (``ctypes`` for ``unshare(2)``, ``mount(2)``, ``open_tree(2)``,
``move_mount(2)``, ``capset(2)`` and ``prctl(2)``): Python 3.11 has no ``os.unshare``.
Every function raises :class:`OSError` (errno and the call that failed) on failure; the
caller then ends the process before the worker runs.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import socket
import stat
import struct
from collections.abc import Sequence
from typing import Any

__all__ = [
    "FORK_CAPS",
    "lock_down",
    "start_init",
    "unshare_for_worker",
]

FORK_CAPS = ("CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SETFCAP")
"""What a template keeps, inside its own user namespace only: ``CAP_SYS_ADMIN`` for the
namespaces and mounts of each worker, ``CAP_NET_ADMIN`` to bring a new network
namespace's loopback up, ``CAP_SETFCAP`` so that a worker's own user namespace may map
uid 0 (a host run as root: its workers are uid 0 as spawned ones are; user_namespaces(7))."""

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

_MS_RDONLY = 0x1
_MS_NOSUID = 0x2
_MS_NODEV = 0x4
_MS_NOEXEC = 0x8
_MS_REMOUNT = 0x20
_MS_BIND = 0x1000
_MS_REC = 0x4000
_MS_PRIVATE = 0x40000

_OPEN_TREE_CLONE = 0x1
_AT_RECURSIVE = 0x8000
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_AT_FDCWD = -100
# The same numbers on x86_64 and aarch64 (the generic table from 5.2 on).
_SYS_OPEN_TREE = 428
_SYS_MOVE_MOUNT = 429

_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_SECCOMP_MODE_FILTER = 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_IFF_RUNNING = 0x40

_libc: Any = None


def _lib() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    _check(
        _lib().mount(
            None if source is None else source.encode(),
            target.encode(),
            None if fstype is None else fstype.encode(),
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def unshare_for_worker(network: bool) -> None:
    """In a process just forked from the template: new PID (for its children), mount,
    IPC and UTS namespaces, and a network namespace unless ``network`` (the sandbox's
    ``allow_network``: then the host's network, as a spawned worker has it).

    Raises:
        OSError: ``unshare(2)`` failed.
    """
    flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS
    if not network:
        flags |= CLONE_NEWNET
    _check(_lib().unshare(flags), "unshare")


def _unescape(field: str) -> str:
    """A path as ``/proc/self/mountinfo`` writes it (space, tab, newline and backslash
    as octal escapes)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def _mounts_below(path: str) -> list[str]:
    """The mount points mounted directly on the topmost mount at ``path`` (each with
    whatever is mounted below it), parents first."""
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        rows = [line.split() for line in f]
    top = None
    for row in rows:
        if _unescape(row[4]) == path:
            top = row[0]  # later rows are mounted later: the last one is on top
    if top is None:
        return []
    return [_unescape(row[4]) for row in rows if row[1] == top and _unescape(row[4]) != path]


def _fresh_tmpfs(path: str, size: int | None) -> None:
    """Mount a new tmpfs over ``path`` (mode 0755, owned by this process's uid, at most
    ``size`` bytes), with what was mounted below ``path`` (binds of the root, of the
    module's files) moved onto it at the same places."""
    below = _mounts_below(path)
    trees: list[tuple[str, int]] = []
    try:
        for point in below:
            fd = _check(
                _lib().syscall(
                    _SYS_OPEN_TREE,
                    _AT_FDCWD,
                    point.encode(),
                    _OPEN_TREE_CLONE | _AT_RECURSIVE | os.O_CLOEXEC,
                ),
                f"open_tree {point}",
            )
            trees.append((point, fd))
        options = "mode=0755" + (f",size={size}" if size else "")
        _mount("tmpfs", path, "tmpfs", _MS_NOSUID | _MS_NODEV, options)
        for point, fd in trees:
            _make_point(point, stat.S_ISDIR(os.fstat(fd).st_mode))
            _check(
                _lib().syscall(
                    _SYS_MOVE_MOUNT, fd, b"", _AT_FDCWD, point.encode(), _MOVE_MOUNT_F_EMPTY_PATH
                ),
                f"move_mount {point}",
            )
    finally:
        for _, fd in trees:
            os.close(fd)


def _make_point(path: str, directory: bool) -> None:
    """Create ``path`` (a directory, or an empty file) and its missing parents (0755),
    as bubblewrap creates a mount point."""
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    if directory:
        os.makedirs(path, mode=0o755, exist_ok=True)
    elif not os.path.lexists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o444))


def _bind_ro(source: str, target: str) -> None:
    _mount(source, target, None, _MS_BIND | _MS_REC)
    _mount(None, target, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)


def _new_proc(proc_ops: Sequence[Sequence[str]]) -> None:
    """A ``/proc`` for this process's PID namespace over the template's, with the
    sandbox's ``/proc`` operations (``--ro-bind SRC DST``, ``--tmpfs DST``,
    ``--remount-ro DST``, as :func:`~.bubblewrap._proc_hardening` lists them) done
    again on it."""
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    for op in proc_ops:
        opt, src, dst = op[0], op[1], op[2]
        if opt == "--ro-bind":
            _bind_ro(src, dst)
        elif opt == "--tmpfs":
            _mount("tmpfs", dst, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755")
        elif opt == "--remount-ro":
            _mount(None, dst, None, _MS_BIND | _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)


def _loopback_up() -> None:
    """Bring ``lo`` of this (new) network namespace up, as bubblewrap does."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        import fcntl

        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", _IFF_UP | _IFF_RUNNING))


def _own_user_namespace(uid: int, gid: int) -> None:
    """A user namespace of this process's own in which it is ``uid``/``gid`` (mapped to
    its uid and gid in the template's namespace), ``setgroups`` denied."""
    outer_uid, outer_gid = os.getuid(), os.getgid()
    _check(_lib().unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
    for name, text in (
        ("uid_map", f"{uid} {outer_uid} 1\n"),
        ("setgroups", "deny\n"),
        ("gid_map", f"{gid} {outer_gid} 1\n"),
    ):
        fd = os.open(f"/proc/self/{name}", os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


def start_init(spec: dict[str, Any]) -> None:
    """In the first process of the worker's new PID namespace (its init), before it
    forks the worker: the mounts, the network, its own user namespace and the process
    limit the module docstring lists. ``spec`` is the template configuration's
    ``"forkSandbox"`` object (:meth:`toolwire.host.workers.process.WorkerProcess`):
    ``network`` (bool), ``tmpfsSize`` (bytes or null), ``procOps`` (list of
    ``[option, source, destination]``), ``uid``/``gid`` (the ids a spawned worker has
    inside its sandbox), ``processes`` (the process limit or null) and ``relay``
    (``[socket path, port]`` or null: the egress relay to run here).

    Raises:
        OSError: a step failed.
    """
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    _new_proc(spec.get("procOps") or [])
    size = spec.get("tmpfsSize")
    size = size if type(size) is int and size > 0 else None
    _fresh_tmpfs("/tmp", size)
    _fresh_tmpfs("/dev/shm", size)
    if os.path.isdir("/dev/pts"):
        _mount(
            "devpts",
            "/dev/pts",
            "devpts",
            _MS_NOSUID | _MS_NOEXEC,
            "newinstance,ptmxmode=0666,mode=620",
        )
    if not spec.get("network"):
        _loopback_up()
    _own_user_namespace(int(spec.get("uid", 0)), int(spec.get("gid", 0)))
    processes = spec.get("processes")
    if type(processes) is int and processes > 0:
        resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))


def _cap_last() -> int:
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 63


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def lock_down(seccomp: bytes | None, *, cgroup_namespace: bool = False) -> None:
    """Give up this process's privileges for good: (optionally) a new cgroup namespace
    first, then every capability (bounding set, ambient, inheritable, permitted,
    effective), then ``no_new_privs`` and the seccomp program ``seccomp`` (packed
    ``struct sock_filter``; None on an architecture without one, as for a spawned worker).

    Raises:
        OSError: a step failed (nothing is left half-done that could run the module: the
            caller exits).
    """
    libc = _lib()
    # As bubblewrap's --unshare-cgroup-try: a kernel without cgroup namespaces (EINVAL)
    # is no error.
    if (
        cgroup_namespace
        and libc.unshare(CLONE_NEWCGROUP) != 0
        and ctypes.get_errno() != errno.EINVAL
    ):
        _check(-1, "unshare(CLONE_NEWCGROUP)")
    for cap in range(_cap_last() + 1):
        _check(libc.prctl(_PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0), "PR_CAPBSET_DROP")
    _check(
        libc.prctl(_PR_CAP_AMBIENT, ctypes.c_ulong(_PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0),
        "PR_CAP_AMBIENT_CLEAR_ALL",
    )
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(libc.capset(ctypes.byref(header), data), "capset")
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    if seccomp is not None:
        program = ctypes.create_string_buffer(seccomp, len(seccomp))
        fprog = _SockFprog(len(seccomp) // 8, ctypes.cast(program, ctypes.c_void_p))
        _check(
            libc.prctl(
                _PR_SET_SECCOMP, ctypes.c_ulong(_SECCOMP_MODE_FILTER), ctypes.byref(fprog), 0, 0
            ),
            "PR_SET_SECCOMP",
        )


def supported() -> bool:
    """Whether this machine has what the code here needs (Linux on x86_64 or aarch64)."""
    return platform.system() == "Linux" and platform.machine() in ("x86_64", "aarch64")

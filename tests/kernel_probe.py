"""Kernel-facing attempts, run inside the sandbox (and outside, as controls).

``python kernel_probe.py ATTEMPT [ARG]`` prints one line ``ATTEMPT <result> <errno name>``
where result is the system call's return value (``-1`` on failure). Standard library
only (it runs with the host's Python inside the box); system call numbers come from the
table below, so nothing depends on keyutils or other tools being installed.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import platform
import signal
import struct
import subprocess
import sys
import termios

NR = {
    "x86_64": {
        "add_key": 248,
        "keyctl": 250,
        "ptrace": 101,
        "perf_event_open": 298,
        "ioctl": 16,
        "unshare": 272,
        "mount": 165,
    },
    "aarch64": {
        "add_key": 217,
        "keyctl": 219,
        "ptrace": 117,
        "perf_event_open": 241,
        "ioctl": 29,
        "unshare": 97,
        "mount": 40,
    },
}[platform.machine()]

KEY_SPEC_USER_KEYRING = -4
KEYCTL_SEARCH = 10
KEYCTL_READ = 11
KEYCTL_UNLINK = 9
KEYCTL_INVALIDATE = 21
PTRACE_ATTACH = 16
PTRACE_DETACH = 17
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
CLONE_NEWUSER = 0x10000000
CLONE_NEWNS = 0x00020000

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def syscall(name: str, *args: int | bytes | None) -> tuple[int, str]:
    """(return value, errno name or "-")."""
    conv = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(NR[name]), *conv)
    err = ctypes.get_errno()
    return int(ret), (errno.errorcode.get(err, str(err)) if ret < 0 else "-")


def report(attempt: str, ret: int, err: str, extra: str = "") -> None:
    print(attempt, ret, err, extra, flush=True)


def keyring_read(desc: str) -> None:
    """Find ``desc`` in the user keyring and print its payload."""
    key, err = syscall("keyctl", KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, b"user", desc.encode(), 0)
    payload = ""
    if key >= 0:
        buf = ctypes.create_string_buffer(256)
        n, err = syscall("keyctl", KEYCTL_READ, key, ctypes.addressof(buf), 256)
        payload = buf.raw[: max(n, 0)].decode(errors="replace")
    report("keyring-read", key, err, payload)


def keyring_remove(desc: str) -> None:
    """Invalidate every key named ``desc`` in the user keyring (clean-up)."""
    while True:
        key, _err = syscall(
            "keyctl", KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, b"user", desc.encode(), 0
        )
        if key < 0:
            break
        syscall("keyctl", KEYCTL_INVALIDATE, key)
        syscall("keyctl", KEYCTL_UNLINK, key, KEY_SPEC_USER_KEYRING)
    report("keyring-remove", 0, "-")


def keyring_add(desc: str, payload: str) -> None:
    data = payload.encode()
    ret, err = syscall("add_key", b"user", desc.encode(), data, len(data), KEY_SPEC_USER_KEYRING)
    report("keyring-add", ret, err)


def ptrace_child() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        ret, err = syscall("ptrace", PTRACE_ATTACH, child.pid, 0, 0)
        if ret == 0:
            os.waitpid(child.pid, 0)
            syscall("ptrace", PTRACE_DETACH, child.pid, 0, 0)
        report("ptrace", ret, err)
    finally:
        child.kill()
        child.wait()


def perf() -> None:
    # struct perf_event_attr (size 128): type PERF_TYPE_SOFTWARE, config
    # PERF_COUNT_SW_TASK_CLOCK, exclude_kernel and exclude_hv set.
    attr = bytearray(128)
    struct.pack_into("=IIQ", attr, 0, 1, 128, 1)
    struct.pack_into("=Q", attr, 40, (1 << 5) | (1 << 6))
    buf = ctypes.create_string_buffer(bytes(attr), 128)
    ret, err = syscall("perf_event_open", ctypes.addressof(buf), 0, -1, -1, 0)
    if ret >= 0:
        os.close(ret)
    report("perf", ret, err)


def tty_ioctl(request: int, name: str) -> None:
    """In a new session whose controlling terminal is a fresh pty, push a byte into it
    (TIOCSTI) or ask the console (TIOCLINUX); report from the child."""
    _master, slave = os.openpty()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            ch = ctypes.create_string_buffer(b"\x06")
            ret, err = syscall("ioctl", slave, request, ctypes.addressof(ch))
            os.write(w, f"{ret} {err}".encode())
        finally:
            os._exit(0)
    os.close(w)
    result = os.read(r, 100).decode().split()
    os.waitpid(pid, 0)
    report(name, int(result[0]), result[1])


def unshare_mount(target: str) -> None:
    """Enter a new user and mount namespace, then mount a tmpfs on ``target`` (a
    throw-away directory) there: private to this process, gone when it exits."""
    ret, err = syscall("unshare", CLONE_NEWUSER | CLONE_NEWNS)
    extra = ""
    if ret == 0:
        m, merr = syscall("mount", b"none", target.encode(), b"tmpfs", 0, None)
        extra = f"mount={m}/{merr}"
    report("unshare-mount", ret, err, extra)


def mount(target: str) -> None:
    """Mount a tmpfs on ``target`` in the current mount namespace. Only ever run inside
    the sandbox (whose mount namespace is its own), never as a control on the host."""
    if not os.environ.get("TOOLWIRE_CALL_ID"):
        raise SystemExit("the mount attempt runs only inside a command the host started")
    ret, err = syscall("mount", b"none", target.encode(), b"tmpfs", 0, None)
    report("mount", ret, err)


def main() -> None:
    signal.alarm(20)  # never outlive a test
    what = sys.argv[1]
    if what == "keyring-read":
        keyring_read(sys.argv[2])
    elif what == "keyring-remove":
        keyring_remove(sys.argv[2])
    elif what == "keyring-add":
        keyring_add(sys.argv[2], sys.argv[3])
    elif what == "ptrace":
        ptrace_child()
    elif what == "perf":
        perf()
    elif what == "tiocsti":
        tty_ioctl(TIOCSTI, "tiocsti")
    elif what == "tiocsti-high-bits":
        tty_ioctl(TIOCSTI | (1 << 32), "tiocsti-high-bits")
    elif what == "tioclinux":
        tty_ioctl(TIOCLINUX, "tioclinux")
    elif what == "unshare-mount":
        unshare_mount(sys.argv[2])
    elif what == "mount":
        mount(sys.argv[2])
    else:
        raise SystemExit(f"unknown attempt {what}")


if __name__ == "__main__":
    main()

"""The seccomp filter sandboxed commands run under (classic BPF, built here).

:func:`build_filter` returns the program bubblewrap loads with ``--seccomp FD`` just
before it executes the command; the filter then applies to the command and everything
it starts, and cannot be removed. It follows the spirit of Docker's default profile
(moby ``profiles/seccomp/default.json``) as a deny list:

* the architecture is checked first: a system call made through another ABI than the
  host's native one (i386 ``int 0x80`` or the x32 ABI on x86_64, 32-bit ARM on
  aarch64) kills the process, so the number tables below cannot be sidestepped;
* the system calls of :data:`DENIED` fail with ``EPERM`` (programs degrade cleanly,
  as they do without the privilege): the kernel keyring, ptrace and cross-process
  memory access, perf events, BPF, userfaultfd, io_uring, the whole mount family,
  namespace creation and entry (``unshare``, ``setns``), module loading, kexec,
  reboot, swap, the clock, the kernel log and quota control;
* ``clone`` with any ``CLONE_NEW*`` namespace flag fails with ``EPERM``; ``clone3``
  (whose flags sit in memory a filter cannot read) fails with ``ENOSYS``, on which
  the C library falls back to ``clone``;
* ``ioctl`` ``TIOCSTI`` (push input into a terminal) and ``TIOCLINUX`` fail with
  ``EPERM``;
* ``socket`` and ``socketpair`` accept only the address families of
  :data:`ALLOWED_FAMILIES` (``AF_UNIX``, ``AF_INET``, ``AF_INET6``, and ``AF_NETLINK``
  for ``NETLINK_ROUTE`` only, which the C library asks for interface addresses);
  every other family (``AF_VSOCK``, ``AF_PACKET``, ``AF_BLUETOOTH``, ``AF_KEY``,
  ``AF_ALG``, ``AF_XDP``...: kernel code a sandbox has no use for, some of it reaching
  past the network namespace) fails with ``EAFNOSUPPORT``, another netlink protocol
  with ``EPROTONOSUPPORT``. Whether ``AF_INET``/``AF_INET6`` reach anything is the
  network namespace's business (``allow_network``).

Why a program built here rather than libseccomp: the filter is ~80 instructions of a
stable kernel ABI (``struct sock_filter``, ``struct seccomp_data``); libseccomp's
Python bindings are not published on PyPI by the libseccomp project (the ctypes
binding ``pyseccomp`` has had no release since 2021), and ``libseccomp.so.2`` is not
on every machine the host runs on (Alpine, distroless images). The number tables are
checked against the kernel headers by the test suite where the headers exist.
"""

from __future__ import annotations

import platform
import struct

__all__ = ["ALLOWED_FAMILIES", "DENIED", "SUPPORTED_MACHINES", "build_filter"]

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6];
_OFF_NR = 0
_OFF_ARCH = 4


def _arg_low(index: int) -> int:
    """Offset of the low 32 bits of argument ``index`` (both arches are little-endian)."""
    return 16 + 8 * index


_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
_X32_SYSCALL_BIT = 0x40000000

_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_RET_ALLOW = 0x7FFF0000
_EPERM = 1
_ENOSYS = 38
_EPROTONOSUPPORT = 93
_EAFNOSUPPORT = 97

_LD_ABS_W = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K

_AF_UNIX = 1
_AF_INET = 2
_AF_INET6 = 10
_AF_NETLINK = 16
_NETLINK_ROUTE = 0

ALLOWED_FAMILIES: tuple[int, ...] = (_AF_UNIX, _AF_INET, _AF_INET6, _AF_NETLINK)
"""Address families ``socket``/``socketpair`` accept in the sandbox (``AF_NETLINK``
with protocol ``NETLINK_ROUTE`` only); any other fails with ``EAFNOSUPPORT``."""

_TIOCSTI = 0x5412
_TIOCLINUX = 0x541C
_CLONE_NAMESPACES = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)

# name: (x86_64 number, aarch64 number or None where the call does not exist there)
_NUMBERS: dict[str, tuple[int, int | None]] = {
    "_sysctl": (156, None),
    "acct": (163, 89),
    "add_key": (248, 217),
    "bpf": (321, 280),
    "clock_adjtime": (305, 266),
    "clock_settime": (227, 112),
    "create_module": (174, None),
    "delete_module": (176, 106),
    "fanotify_init": (300, 262),
    "finit_module": (313, 273),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fsopen": (430, 430),
    "fspick": (433, 433),
    "get_kernel_syms": (177, None),
    "init_module": (175, 105),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "io_uring_setup": (425, 425),
    "ioperm": (173, None),
    "iopl": (172, None),
    "kcmp": (312, 272),
    "kexec_file_load": (320, 294),
    "kexec_load": (246, 104),
    "keyctl": (250, 219),
    "lookup_dcookie": (212, 18),
    "mount": (165, 40),
    "mount_setattr": (442, 442),
    "move_mount": (429, 429),
    "nfsservctl": (180, 42),
    "open_by_handle_at": (304, 265),
    "open_tree": (428, 428),
    "perf_event_open": (298, 241),
    "pidfd_getfd": (438, 438),
    "pivot_root": (155, 41),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "ptrace": (101, 117),
    "query_module": (178, None),
    "quotactl": (179, 60),
    "quotactl_fd": (443, 443),
    "reboot": (169, 142),
    "request_key": (249, 218),
    "setns": (308, 268),
    "settimeofday": (164, 170),
    "swapoff": (168, 225),
    "swapon": (167, 224),
    "sysfs": (139, None),
    "syslog": (103, 116),
    "umount2": (166, 39),
    "unshare": (272, 97),
    "uselib": (134, None),
    "userfaultfd": (323, 282),
    "ustat": (136, None),
    "vhangup": (153, 58),
    # inspected or answered specially, not in DENIED:
    "clone": (56, 220),
    "clone3": (435, 435),
    "ioctl": (16, 29),
    "socket": (41, 198),
    "socketpair": (53, 199),
}

DENIED: tuple[str, ...] = tuple(
    n for n in sorted(_NUMBERS) if n not in {"clone", "clone3", "ioctl", "socket", "socketpair"}
)
"""System calls that fail with EPERM in the sandbox (where the architecture has them)."""

SUPPORTED_MACHINES = tuple(_AUDIT_ARCH)
"""``platform.machine()`` values :func:`build_filter` has tables for."""


def _number(name: str, machine: str) -> int | None:
    x86, arm = _NUMBERS[name]
    return x86 if machine == "x86_64" else arm


def build_filter(machine: str | None = None) -> bytes:
    """The filter for ``machine`` (default: this one) as packed ``struct sock_filter``
    entries (8 bytes each: u16 code, u8 jt, u8 jf, u32 k), native byte order.

    Raises:
        ValueError: no table for ``machine`` (see :data:`SUPPORTED_MACHINES`).
    """
    machine = machine or platform.machine()
    if machine not in _AUDIT_ARCH:
        raise ValueError(f"no seccomp filter for the {machine} architecture")
    # Each entry: (code, k, jump-if-true label, jump-if-false label); labels name
    # the index of an instruction, None meaning the next one.
    prog: list[tuple[int, int, str | None, str | None]] = []
    labels: dict[str, int] = {}

    def emit(code: int, k: int, jt: str | None = None, jf: str | None = None) -> None:
        prog.append((code, k, jt, jf))

    def label(name: str) -> None:
        labels[name] = len(prog)

    emit(_LD_ABS_W, _OFF_ARCH)
    emit(_JEQ_K, _AUDIT_ARCH[machine], None, "kill")
    emit(_LD_ABS_W, _OFF_NR)
    if machine == "x86_64":
        emit(_JGE_K, _X32_SYSCALL_BIT, "kill", None)
    for name in DENIED:
        nr = _number(name, machine)
        if nr is not None:
            emit(_JEQ_K, nr, "eperm", None)
    emit(_JEQ_K, _number("clone3", machine) or 0, "enosys", None)
    emit(_JEQ_K, _number("ioctl", machine) or 0, "ioctl", None)
    emit(_JEQ_K, _number("socket", machine) or 0, "socket", None)
    emit(_JEQ_K, _number("socketpair", machine) or 0, "socket", None)
    emit(_JEQ_K, _number("clone", machine) or 0, "clone", "allow")
    label("socket")
    emit(_LD_ABS_W, _arg_low(0))  # the family is an int: the low 32 bits
    emit(_JEQ_K, _AF_UNIX, "allow", None)
    emit(_JEQ_K, _AF_INET, "allow", None)
    emit(_JEQ_K, _AF_INET6, "allow", None)
    emit(_JEQ_K, _AF_NETLINK, None, "eafnosupport")
    emit(_LD_ABS_W, _arg_low(2))
    emit(_JEQ_K, _NETLINK_ROUTE, "allow", "eprotonosupport")
    label("ioctl")
    emit(_LD_ABS_W, _arg_low(1))  # the kernel reads the request as a 32-bit unsigned int
    emit(_JEQ_K, _TIOCSTI, "eperm", None)
    emit(_JEQ_K, _TIOCLINUX, "eperm", "allow")
    label("clone")
    emit(_LD_ABS_W, _arg_low(0))  # every CLONE_NEW* flag is in the low 32 bits
    emit(_JSET_K, _CLONE_NAMESPACES, "eperm", "allow")
    label("allow")
    emit(_RET_K, _RET_ALLOW)
    label("eperm")
    emit(_RET_K, _RET_ERRNO | _EPERM)
    label("enosys")
    emit(_RET_K, _RET_ERRNO | _ENOSYS)
    label("eafnosupport")
    emit(_RET_K, _RET_ERRNO | _EAFNOSUPPORT)
    label("eprotonosupport")
    emit(_RET_K, _RET_ERRNO | _EPROTONOSUPPORT)
    label("kill")
    emit(_RET_K, _RET_KILL_PROCESS)

    out = bytearray()
    for i, (code, k, jt, jf) in enumerate(prog):
        offsets = []
        for target in (jt, jf):
            off = 0 if target is None else labels[target] - i - 1
            if not 0 <= off <= 255:
                raise AssertionError("seccomp jump out of range")  # cannot happen
            offsets.append(off)
        out += struct.pack("=HBBI", code, offsets[0], offsets[1], k)
    return bytes(out)

"""Every rule of the sandbox's seccomp filter, run by a small classic-BPF interpreter.

The filter host/sandbox/linux/seccomp.py builds is a program of ``struct sock_filter`` entries the
kernel runs on a ``struct seccomp_data`` for each system call (Documentation/userspace-api/
seccomp_filter.rst; the instruction set of Documentation/networking/filter.rst). The
interpreter below runs the same bytes on system calls made up here, for both supported
architectures, so a rule removed or weakened (a wrong-architecture call allowed, the
x32 ABI let through, ``clone3`` allowed, a namespace flag of ``clone`` missed...) shows,
on any machine. The numbers here are the kernel's (arch/x86/entry/syscalls/syscall_64.tbl,
include/uapi/asm-generic/unistd.h), written out rather than taken from the module under
test; test_sandbox.py checks the module's whole table against the installed headers.
Live probes of the filter in a real box are in test_sandbox_escape_kernel.py.
"""

from __future__ import annotations

import struct

import pytest
from toolwire.host.sandbox.linux.seccomp import _NUMBERS, DENIED, build_filter

ALLOW = 0x7FFF0000
KILL_PROCESS = 0x80000000
ERRNO = 0x00050000
EPERM, ENOSYS, EPROTONOSUPPORT, EAFNOSUPPORT = 1, 38, 93, 97

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
OTHER_ARCHES = {
    "i386": 0x40000003,
    "made-up": 0xC000003F,
    "arm": 0x40000028,
    "riscv64": 0xC00000F3,
}
X32_BIT = 0x40000000

# name: (x86_64, aarch64)
NR = {
    "read": (0, 63),
    "write": (1, 64),
    "getpid": (39, 172),
    "ioctl": (16, 29),
    "socket": (41, 198),
    "socketpair": (53, 199),
    "clone": (56, 220),
    "clone3": (435, 435),
    "unshare": (272, 97),
    "setns": (308, 268),
    "mount": (165, 40),
    "ptrace": (101, 117),
    "keyctl": (250, 219),
    "bpf": (321, 280),
}

CLONE_NEW = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
# what glibc's pthread_create and fork pass: no namespace flag
CLONE_THREAD_FLAGS = 0x003D0F00
CLONE_FORK_FLAGS = 0x01200011  # CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD

TIOCSTI, TIOCLINUX, TCGETS = 0x5412, 0x541C, 0x5401
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET, AF_VSOCK, AF_ALG = 1, 2, 10, 16, 17, 40, 38
NETLINK_ROUTE, NETLINK_AUDIT = 0, 9
MACHINES = ("x86_64", "aarch64")


def run_filter(prog: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """Run a classic BPF seccomp program on one system call; its return value.

    ``seccomp_data`` is ``int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]``
    (little-endian on both arches). Supports what a seccomp filter of this host uses:
    ``LD|W|ABS``, ``JMP|JEQ|K``, ``JMP|JGE|K``, ``JMP|JSET|K``, ``RET|K``; anything else,
    a load outside the data, a jump past the end or running off the end is an
    AssertionError (the kernel would refuse the program).
    """
    full = tuple(args) + (0,) * (6 - len(args))
    data = struct.pack("<iIQ6Q", nr, arch, 0x1000, *(a & (2**64 - 1) for a in full))
    insns = [struct.unpack("=HBBI", prog[i : i + 8]) for i in range(0, len(prog), 8)]
    acc = 0
    pc = 0
    for _ in range(len(insns) + 1):  # classic BPF jumps only forward
        assert 0 <= pc < len(insns), f"ran off the program at {pc}"
        code, jt, jf, k = insns[pc]
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            assert k % 4 == 0 and k + 4 <= len(data), f"load at {k}"
            acc = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code in (0x15, 0x35, 0x45):
            if code == 0x15:
                taken = acc == k
            elif code == 0x35:
                taken = acc >= k
            else:
                taken = bool(acc & k)
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:  # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"instruction {code:#x} at {pc} is not expected here")
    raise AssertionError("the program loops")


def nr(name: str, machine: str) -> int:
    return NR[name][0 if machine == "x86_64" else 1]


def verdict(machine: str, name: str, *args: int) -> int:
    return run_filter(build_filter(machine), nr(name, machine), AUDIT_ARCH[machine], args)


@pytest.mark.parametrize("machine", MACHINES)
def test_ordinary_calls_are_allowed(machine: str) -> None:
    for name in ("read", "write", "getpid"):
        assert verdict(machine, name, 3, 0, 0) == ALLOW, name


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("other", sorted(OTHER_ARCHES))
def test_a_call_through_another_architecture_kills(machine: str, other: str) -> None:
    prog = build_filter(machine)
    for name in ("read", "getpid", "clone"):
        assert run_filter(prog, nr(name, machine), OTHER_ARCHES[other]) == KILL_PROCESS
    # the other machine's own arch value is just as foreign
    foreign = AUDIT_ARCH["aarch64" if machine == "x86_64" else "x86_64"]
    assert run_filter(prog, nr("read", machine), foreign) == KILL_PROCESS


def test_the_x32_abi_kills_on_x86_64() -> None:
    prog = build_filter("x86_64")
    for name in ("read", "getpid", "unshare", "clone3"):
        number = nr(name, "x86_64") | X32_BIT
        assert run_filter(prog, number, AUDIT_ARCH["x86_64"]) == KILL_PROCESS, name
    assert run_filter(prog, 0x7FFFFFFF, AUDIT_ARCH["x86_64"]) == KILL_PROCESS


@pytest.mark.parametrize("machine", MACHINES)
def test_every_denied_call_fails_with_eperm(machine: str) -> None:
    prog = build_filter(machine)
    column = 0 if machine == "x86_64" else 1
    checked = 0
    for name in DENIED:
        number = _NUMBERS[name][column]
        if number is None:
            continue
        assert run_filter(prog, number, AUDIT_ARCH[machine]) == ERRNO | EPERM, name
        checked += 1
    assert checked > 40
    for name in ("unshare", "setns", "mount", "ptrace", "keyctl", "bpf"):
        assert name in DENIED
        assert verdict(machine, name) == ERRNO | EPERM, name


@pytest.mark.parametrize("machine", MACHINES)
def test_clone3_fails_with_enosys(machine: str) -> None:
    assert verdict(machine, "clone3", 0, 88) == ERRNO | ENOSYS


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("flag", sorted(CLONE_NEW))
def test_clone_with_a_namespace_flag_fails_with_eperm(machine: str, flag: str) -> None:
    assert verdict(machine, "clone", CLONE_NEW[flag]) == ERRNO | EPERM
    assert verdict(machine, "clone", CLONE_FORK_FLAGS | CLONE_NEW[flag]) == ERRNO | EPERM


@pytest.mark.parametrize("machine", MACHINES)
def test_clone_for_threads_and_fork_is_allowed(machine: str) -> None:
    assert verdict(machine, "clone", CLONE_THREAD_FLAGS) == ALLOW
    assert verdict(machine, "clone", CLONE_FORK_FLAGS) == ALLOW
    # the high 32 bits hold no clone flag: the filter reads the low word only
    assert verdict(machine, "clone", CLONE_FORK_FLAGS | (1 << 40)) == ALLOW


@pytest.mark.parametrize("machine", MACHINES)
def test_terminal_injection_ioctls_fail_with_eperm(machine: str) -> None:
    for request in (TIOCSTI, TIOCLINUX, TIOCSTI | (1 << 32)):
        assert verdict(machine, "ioctl", 0, request) == ERRNO | EPERM, hex(request)
    assert verdict(machine, "ioctl", 0, TCGETS) == ALLOW


@pytest.mark.parametrize("machine", MACHINES)
@pytest.mark.parametrize("call", ["socket", "socketpair"])
def test_socket_families(machine: str, call: str) -> None:
    for family in (AF_UNIX, AF_INET, AF_INET6):
        assert verdict(machine, call, family, 1, 0) == ALLOW, family
    assert verdict(machine, call, AF_NETLINK, 3, NETLINK_ROUTE) == ALLOW
    assert verdict(machine, call, AF_NETLINK, 3, NETLINK_AUDIT) == ERRNO | EPROTONOSUPPORT
    for family in (AF_PACKET, AF_VSOCK, AF_ALG, 0, 255):
        assert verdict(machine, call, family, 1, 0) == ERRNO | EAFNOSUPPORT, family

"""Escape attempts made from Python handler code (tests/escape/test_sandbox_escape_handlers.py).

Each tool tries one thing a malicious or careless tool module could do from inside its
handler and reports, in its result text, what happened: ``READ_OK``/``WROTE``/
``CONNECTED``/``FOUND``/``SIGNALLED``/``ATTACHED`` when the attempt worked,
``DENIED <errno name> <message>`` when the system refused it. The handlers catch their
own errors, so a refused attempt is an ordinary result; a worker that dies on the way
shows up as the host's error result instead.

Every attempt is bounded: the bombs take an explicit count and clean up after
themselves, and the tools only write where the test tells them to.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import mmap
import os
import signal
import socket
import time

from toolwire.host import ToolContext, tool


def _denied(exc: BaseException) -> str:
    """``DENIED <errno name> <text>`` for an OSError, ``DENIED <type> <text>`` otherwise."""
    if isinstance(exc, OSError) and exc.errno is not None:
        name = errno.errorcode.get(exc.errno, str(exc.errno))
    else:
        name = type(exc).__name__
    return f"DENIED {name} {exc}"


def _cmdline(pid: int) -> str:
    """The command line of ``pid`` with spaces between the arguments ("" if unreadable)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _parent_chain() -> list[int]:
    """This process and its ancestors as far as /proc shows them (self first)."""
    chain = [os.getpid()]
    while len(chain) < 64:
        try:
            with open(f"/proc/{chain[-1]}/stat", encoding="ascii") as f:
                stat = f.read()
        except OSError:
            break
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid <= 0 or ppid in chain:
            break
        chain.append(ppid)
    return chain


def _is_host(pid: int) -> bool:
    """Whether ``pid`` runs the toolwire host (and is not one of its workers)."""
    line = _cmdline(pid)
    return "toolwire.host" in line and "toolwire.host.workers.worker" not in line


def _find_host() -> int | None:
    """The nearest process in this process's ancestry (itself included) that is the
    host, found by its command line; None when no such process is visible."""
    for pid in _parent_chain():
        if _is_host(pid):
            return pid
    return None


@tool
def read_outside(path: str, echo: bool = True) -> str:
    """Read up to 200 bytes of a file by its absolute path; report their SHA-256 and,
    with ``echo``, the bytes themselves.

    Args:
        path: the file to read.
        echo: include what was read (off for files whose content must not be shown).
    """
    try:
        with open(path, "rb") as f:
            data = f.read(200)
    except Exception as exc:
        return _denied(exc)
    text = f"READ_OK {len(data)} bytes sha256 {hashlib.sha256(data).hexdigest()}"
    return text + (": " + data.decode("utf-8", "replace") if echo else "")


@tool
def write_outside(path: str, content: str, make_parents: bool = False) -> str:
    """Create a new file (never overwriting one) with ``content``.

    Args:
        path: the file to create.
        content: what to write.
        make_parents: create missing parent directories first.
    """
    try:
        if make_parents:
            os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "x", encoding="utf-8") as f:
            f.write(content)
    except Exception as exc:
        return _denied(exc)
    return f"WROTE {path}"


@tool
def connect_local(port: int) -> str:
    """Connect to 127.0.0.1:``port`` and send one line.

    Args:
        port: the TCP port on the loopback address.
    """
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(b"hello from a handler\n")
    except Exception as exc:
        return _denied(exc)
    return "CONNECTED"


@tool
def look_for_values(needles: list[str], host_pid: int) -> str:
    """Search this process's environment and other processes' ``/proc/<pid>/environ``
    for the given values; report only where each was found, never other contents.

    Args:
        needles: the values to look for.
        host_pid: the host's process id as the test sees it.
    """
    lines = [f"environ names: {len(os.environ)}"]
    env_text = "\0".join(f"{k}={v}" for k, v in os.environ.items())
    for i, needle in enumerate(needles):
        if needle in env_text:
            lines.append(f"FOUND needle{i} in os.environ")
    pids = [host_pid, *_parent_chain()]
    try:
        pids += sorted(int(name) for name in os.listdir("/proc") if name.isdigit())
    except OSError as exc:
        lines.append("listing /proc: " + _denied(exc))
    seen: set[int] = set()
    for pid in pids:
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                data = f.read(1 << 20).decode("utf-8", "replace")
        except Exception as exc:
            if pid == host_pid:
                lines.append(f"host /proc/{pid}/environ: {_denied(exc)}")
            continue
        if pid == host_pid:
            lines.append(f"host /proc/{pid}/environ: READ_OK")
        for i, needle in enumerate(needles):
            if needle in data:
                lines.append(f"FOUND needle{i} in /proc/{pid}/environ")
    lines.append(f"processes visible: {len(seen)}")
    return "\n".join(lines)


@tool
def signal_processes(pids: list[int], chain: bool = True, sig: int = int(signal.SIGTERM)) -> str:
    """Send ``sig`` to each pid and (with ``chain``) to the host found through this
    process's parents.

    A pid that is visibly one of the host's workers is left alone (the attempt is at
    the host, not at the caller itself).

    Args:
        pids: process ids as the test sees them.
        chain: also signal the host found among this process's ancestors.
        sig: the signal number (default SIGTERM).
    """
    lines = [f"chain {_parent_chain()}"]
    targets = [(str(pid), pid) for pid in pids]
    found = _find_host() if chain else None
    if chain and found is None:
        lines.append("host in chain: NOT_FOUND")
    elif found is not None:
        targets.append(("chain-host", found))
    for label, pid in targets:
        if "toolwire.host.workers.worker" in _cmdline(pid):
            lines.append(f"{label}: SKIPPED_WORKER")
            continue
        try:
            os.kill(pid, sig)
        except Exception as exc:
            lines.append(f"{label}: {_denied(exc)}")
        else:
            lines.append(f"{label}: SIGNALLED")
    return "\n".join(lines)


PTRACE_ATTACH = 16
PTRACE_DETACH = 17


def _ptrace(pid: int) -> str:
    """Attach to ``pid`` with ptrace(2) and detach again at once."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.restype = ctypes.c_long
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(PTRACE_ATTACH, pid, None, None) != 0:
        return _denied(OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno())))
    # Attached: the tracee stops with SIGSTOP; wait for that, then let it go.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            break
        if state in ("t", "T"):
            break
        time.sleep(0.01)
    libc.ptrace(PTRACE_DETACH, pid, None, None)
    return "ATTACHED"


@tool
def trace_processes(pids: list[int], own_child: bool = False) -> str:
    """ptrace-attach to each pid (and detach), to the host found through this
    process's parents, and optionally to a child this handler forks itself.

    Args:
        pids: process ids as the test sees them.
        own_child: also try a sleeping child of this process (works wherever ptrace does).
    """
    lines = []
    targets = [(str(pid), pid) for pid in pids]
    found = _find_host()
    if found is not None and found != os.getpid():
        targets.append(("chain-host", found))
    child = 0
    if own_child:
        child = os.fork()
        if child == 0:
            try:
                time.sleep(30)
            finally:
                os._exit(0)
        targets.append(("own-child", child))
    try:
        for label, pid in targets:
            try:
                lines.append(f"{label}: {_ptrace(pid)}")
            except Exception as exc:
                lines.append(f"{label}: {_denied(exc)}")
    finally:
        if child:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
    return "\n".join(lines)


@tool
def reserve_memory(chunks: int, chunk_mib: int = 256, touch: bool = False) -> str:
    """Map up to ``chunks`` anonymous chunks of ``chunk_mib`` MiB, keeping them all,
    until the system refuses; then release them.

    Args:
        chunks: the most chunks to map (the bound of the attempt).
        chunk_mib: the size of one chunk in MiB.
        touch: write one byte per page, so the memory is really used, not only reserved.
    """
    held: list[mmap.mmap] = []
    size = chunk_mib << 20
    outcome = ""
    try:
        for _ in range(chunks):
            m = mmap.mmap(-1, size)
            held.append(m)
            if touch:
                for offset in range(0, size, mmap.PAGESIZE):
                    m[offset] = 1
    except Exception as exc:
        outcome = " " + _denied(exc)
    got = len(held)
    for m in held:
        m.close()
    held.clear()
    status = "ALL" if got == chunks else "STOPPED"
    return f"{status} {got} of {chunks} chunks ({got * chunk_mib} MiB){outcome}"


@tool
def fork_many(count: int, sleep_seconds: float = 60.0) -> str:
    """Fork up to ``count`` children that sleep, until fork fails; then kill and reap
    them all.

    Args:
        count: the most children to fork (the bound of the attempt).
        sleep_seconds: how long each child sleeps if nobody kills it.
    """
    children: list[int] = []
    outcome = ""
    try:
        for _ in range(count):
            pid = os.fork()
            if pid == 0:
                try:
                    time.sleep(sleep_seconds)
                finally:
                    os._exit(0)
            children.append(pid)
    except Exception as exc:
        outcome = " " + _denied(exc)
    for pid in children:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for pid in children:
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)
    status = "ALL" if len(children) == count else "STOPPED"
    return f"{status} forked {len(children)} of {count}{outcome}"


@tool
def pid_info() -> str:
    """This process's pid, its parent chain and whether it looks like the host."""
    return f"pid {os.getpid()} chain {_parent_chain()} host {_find_host()}"


@tool
def open_descriptors() -> str:
    """Every descriptor this process holds and what it refers to."""
    lines = []
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            lines.append(f"{name} -> {os.readlink(f'/proc/self/fd/{name}')}")
        except OSError as exc:
            lines.append(f"{name} -> {_denied(exc)}")
    return "\n".join(lines)


@tool
def connect_unix(address: str) -> str:
    """Connect to a Unix socket and send one line; ``@name`` is an abstract address.

    Args:
        address: a socket path, or ``@`` and a name in the abstract namespace.
    """
    target = "\0" + address[1:] if address.startswith("@") else address
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(10)
            conn.connect(target)
            conn.sendall(b"hello from a handler\n")
    except Exception as exc:
        return _denied(exc)
    return "CONNECTED"


def _wire_out() -> int | None:
    """The descriptor this worker writes its protocol messages on: a pipe open for
    writing only, other than stdout and stderr (None when there is none, e.g. in the
    host itself)."""
    import fcntl
    import stat

    stdout_inode = os.fstat(1).st_ino
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        fd = int(name)
        if fd < 3:
            continue
        try:
            info = os.fstat(fd)
            flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        except OSError:
            continue
        if (
            stat.S_ISFIFO(info.st_mode)
            and flags & os.O_ACCMODE == os.O_WRONLY
            and info.st_ino != stdout_inode
        ):
            return fd
    return None


@tool
async def forge_asks(tag: str, ctx: ToolContext, own: bool = False, linger: float = 0.0) -> str:
    """Write the worker protocol's "ask the client" request straight onto this
    worker's wire, naming call references this call does not own (``own`` false: every
    reference from 1 to 64 but its own) or only its own (``own`` true), each with an
    ``elicitation/create`` whose message is ``<tag> via ref <n>``; then wait ``linger``
    seconds (until cancelled).

    Args:
        tag: marks the forged questions.
        own: ask on this call's own reference only.
        linger: seconds to stay in flight afterwards.
    """
    import json

    import anyio

    mine = getattr(ctx.channel, "_ref", None)
    fd = _wire_out()
    if fd is None or not isinstance(mine, int):
        return f"NO_WIRE fd {fd} ref {mine!r}"
    refs = [mine] if own else [r for r in range(1, 65) if r != mine]
    for ref in refs:
        message = {
            "jsonrpc": "2.0",
            "id": f"forged-{tag}-{ref}",
            "method": "toolwire/worker/ask",
            "params": {
                "ref": ref,
                "method": "elicitation/create",
                "params": {
                    "message": f"{tag} via ref {ref}",
                    "requestedSchema": {"type": "object", "properties": {}},
                },
                "key": f"forged{ref}",
            },
        }
        os.write(fd, json.dumps(message).encode() + b"\n")
    await anyio.sleep(linger)
    return f"SENT {len(refs)} own ref {mine}"


@tool
def own_namespaces() -> str:
    """This process's mount and PID namespaces (``/proc/self/ns``), one a line."""
    return "\n".join(os.readlink(f"/proc/self/ns/{kind}") for kind in ("mnt", "pid"))


@tool
def own_confinement() -> str:
    """This process's capabilities, no_new_privs and seccomp lines of
    ``/proc/self/status``, then its ``/proc/self/limits`` table."""
    with open("/proc/self/status", encoding="ascii") as f:
        wanted = ("CapEff:", "CapPrm:", "NoNewPrivs:", "Seccomp:")
        lines = [line.rstrip() for line in f if line.startswith(wanted)]
    with open("/proc/self/limits", encoding="ascii") as f:
        return "\n".join(lines) + "\n" + f.read()


@tool
def flood_wire(mib: int, newline: bool = False, garbage: str = "") -> str:
    """Write straight onto this worker's wire: ``garbage`` (one line), then ``mib`` MiB
    of ``a`` (ended by a newline if ``newline``).

    Args:
        mib: how many MiB of filler to write.
        newline: end the filler with a newline.
        garbage: a line to write first (e.g. text that is not JSON).
    """
    fd = _wire_out()
    if fd is None:
        return "NO_WIRE"
    written = 0
    try:
        if garbage:
            os.write(fd, garbage.encode() + b"\n")
        chunk = b"a" * (1 << 20)
        for _ in range(mib):
            written += os.write(fd, chunk)
        if newline:
            os.write(fd, b"\n")
    except Exception as exc:
        return f"WROTE {written} then {_denied(exc)}"
    return f"WROTE {written}"

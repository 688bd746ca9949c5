"""Process bookkeeping for the host: reap and end every process tools started.

The host makes itself a *child subreaper* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``),
so a process a tool starts stays the host's descendant even after it double-forks
or calls ``setsid``. :func:`kill_descendants` then finds every descendant through
``/proc`` and kills it: on shutdown nothing a tool started survives the host.

That exit handler does not run when the host is killed (``SIGKILL``, the OOM killer).
A command run outside the sandbox (whose PID namespace would end it) therefore runs
under a *supervisor* (:func:`supervised`): a small process between the host and the
command, itself a child subreaper, that watches the host (a pidfd of it, and its own
parent pid) and SIGKILLs every process below it when the host dies, so a command and
everything it started, also what left its session (``setsid``, ``nohup``, background
jobs), dies with the host. It does the same when the command exits (the runner ends
what a command leaves behind anyway) and then exits as the command did.
"""

from __future__ import annotations

import ctypes
import errno
import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence

__all__ = ["descendants", "kill_descendants", "set_subreaper", "supervised"]

log = logging.getLogger("toolwire.procs")

_PR_SET_CHILD_SUBREAPER = 36


def set_subreaper() -> bool:
    """Make this process a child subreaper (Linux only). Returns True on success."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        # The C library is already loaded (CDLL(None)): find_library would run ldconfig.
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except OSError:
        return False


def stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first, then the
    parent's pid; proc(5)), or None when the process is gone or unreadable. The name is
    parenthesised and may hold spaces and parentheses, so the fields start after the
    last ``)``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        rest = stat_fields(entry)
        if rest is None or len(rest) < 2:
            continue
        children.setdefault(int(rest[1]), []).append(int(entry))
    return children


def descendants(pid: int | None = None) -> list[int]:
    """Every live descendant of ``pid`` (default: this process), parents first."""
    root = os.getpid() if pid is None else pid
    tree = _children_map()
    out: list[int] = []
    stack = list(tree.get(root, []))
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(tree.get(p, []))
    return out


def kill_descendants(pid: int | None = None, sig: int = signal.SIGKILL) -> int:
    """Send ``sig`` to every descendant of ``pid`` (default: this process) and reap
    those that are our own children. Returns how many were signalled."""
    count = 0
    for _ in range(3):  # a dying parent can fork once more; go round a few times
        pids = descendants(pid)
        if not pids:
            break
        for p in pids:
            try:
                os.kill(p, sig)
                count += 1
            except ProcessLookupError:
                pass
            except PermissionError:
                log.warning("cannot signal descendant %d", p)
        _reap()
    return count


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


_SUPERVISOR = r"""
import os, select, signal, sys, time

host, program, argv = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
try:
    watch = os.pidfd_open(host)
except (AttributeError, OSError):
    watch = None
if os.getppid() != host:
    os._exit(137)  # the host is gone already: run nothing
try:
    import ctypes

    ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
except (OSError, AttributeError):
    pass
wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
signal.set_wakeup_fd(wake_w)
signal.signal(signal.SIGCHLD, lambda *_: None)
try:
    pid = os.fork()
except OSError as exc:
    os.write(2, f"{argv[0]}: cannot start: {exc.strerror}\n".encode(errors="replace"))
    os._exit(126)
if pid == 0:
    signal.set_wakeup_fd(-1)
    for s in (signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(s, signal.SIG_DFL)
    try:
        os.execv(program, argv)
    except OSError as exc:
        os.write(2, f"{argv[0]}: {exc.strerror}\n".encode(errors="replace"))
        os._exit(127 if exc.errno == 2 else 126)
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
    signal.signal(s, signal.SIG_IGN)  # the runner signals the group: the command has it
null = os.open("/dev/null", os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)  # never hold the command's output pipe open
status = None


def reap():
    global status
    while True:
        try:
            done, st = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if done == 0:
            return
        if done == pid:
            status = st


def below():
    me = os.getpid()
    kids = {}
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open("/proc/" + e + "/stat", "rb") as f:
                st = f.read()
        except OSError:
            continue
        fields = st[st.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[0] not in (b"Z", b"X"):
            kids.setdefault(int(fields[1]), []).append(int(e))
    out, stack = [], list(kids.get(me, ()))
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(kids.get(p, ()))
    return out


def none_below():
    try:  # as a subreaper with the command reaped: anything left is a direct child
        with open(f"/proc/self/task/{os.getpid()}/children", "rb") as f:
            return not f.read().split()
    except OSError:
        return False  # no CONFIG_PROC_CHILDREN: scan /proc


def end_all():
    deadline = time.monotonic() + 10
    while status is None or not none_below():
        reap()
        pids = below()
        if not pids or time.monotonic() > deadline:
            return
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.002)  # let the killed exit (and be handed to this subreaper)
        reap()


def host_gone():
    if os.getppid() != host:
        return True
    return watch is not None and bool(select.select([watch], [], [], 0)[0])


while True:
    reap()
    if status is not None or host_gone():
        end_all()
        break
    select.select([wake_r] + ([watch] if watch is not None else []), [], [], 0.5)
    try:
        os.read(wake_r, 4096)
    except OSError:
        pass
if status is None:
    os._exit(137)
if os.WIFSIGNALED(status):
    sig = os.WTERMSIG(status)
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(sig, signal.SIG_DFL)
    except (OSError, ValueError):
        pass
    os.kill(os.getpid(), sig)
    os._exit(128 + sig)
os._exit(os.waitstatus_to_exitcode(status))
"""
"""The supervisor's program (``python -I -S -c``; arguments: the host's pid, the
program's path, then the command's argv)."""


def _find_program(program: str, env: Mapping[str, str], cwd: str | os.PathLike[str]) -> str:
    """The path ``program`` runs from, looked up as :class:`subprocess.Popen` would (a
    name with ``/`` as it is, relative to ``cwd``; a bare name on the ``PATH`` of
    ``env``).

    Raises:
        FileNotFoundError: no such program.
        PermissionError: found, but not executable.
    """
    candidates = (
        [program]
        if "/" in program
        else [os.path.join(d, program) for d in os.get_exec_path(dict(env))]
    )
    denied = False
    for candidate in candidates:
        path = os.path.join(cwd, candidate)  # an absolute candidate stays as it is
        if os.path.isfile(path):
            if os.access(path, os.X_OK):
                return candidate
            denied = True
        elif os.path.exists(path):
            denied = True
    if denied:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def supervised(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: str | os.PathLike[str]
) -> list[str]:
    """``argv`` run under a supervisor (see the module's docstring) that ends the command
    and everything it started when this process dies or the command exits, and then
    exits with the command's status (killed by the same signal, or the same exit code).

    Start the result in a session of its own (the supervisor and the command share its
    process group) and signal that group, not the supervisor's pid: the supervisor
    ignores ``SIGINT``, ``SIGTERM``, ``SIGHUP`` and ``SIGQUIT``. Costs one Python start
    (``-I -S``, ~15 ms) per command.

    Args:
        argv: the command (program first); ``env`` and ``cwd`` are the ones it runs with.

    Raises:
        FileNotFoundError: the program does not exist.
        PermissionError: the program is not executable.
    """
    program = _find_program(argv[0], env, cwd)
    return [sys.executable, "-I", "-S", "-c", _SUPERVISOR, str(os.getpid()), program, *argv]

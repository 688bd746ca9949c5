"""The one process runner: every tool that starts a process goes through :func:`run_command`.

What it guarantees (Linux):

* the child gets stdin from /dev/null, stdout on a pipe with stderr merged into it,
  its own session and process group, the given cwd and environment;
* output reaches the caller's callback as text, decoded incrementally as UTF-8 (a
  character split across reads is kept whole; invalid bytes become U+FFFD);
* the call returns when the started process exits, even when something it left in
  the background still holds the output pipe (``sleep 30 & echo done``): exit is
  watched through a pidfd, not through end-of-file on the pipe;
* on return, timeout, cancellation of the calling task (anyio) or host exit,
  everything the command started is killed: its process group, and every process
  carrying the call's marker in its environment (``TOOLWIRE_CALL_ID=<random token>``),
  which finds processes that left the group with ``setsid`` or double-forked. The
  host is a child subreaper (see :mod:`toolwire.host.sandbox.procs`), so such orphans become
  its children; the runner reaps exactly those pids (never ``waitpid(-1)``, which
  belongs to asyncio's child watcher).

A process that both left the group and scrubbed its environment escapes the
marker; when the command runs in the sandbox (:mod:`toolwire.host.sandbox`) it
cannot leave the sandbox's PID namespace, which ends with the command: everything
in it is killed by the kernel. Unsandboxed, the command runs under a supervisor
(:func:`toolwire.host.sandbox.procs.supervised`), a child subreaper between the host and the
command that kills everything below it when the command exits or the host dies (even
by ``SIGKILL``); the host's exit handler (:func:`toolwire.host.sandbox.procs.kill_descendants`)
ends what is left on an orderly exit.

At most ``[sandbox] max_commands`` commands run at once per sandbox (that is, per
host): :class:`CommandSlots`.

Tools call :func:`run_in_env`, which applies the tool environment's sandbox and
environment rules; :func:`run_command` is the lower layer.
"""

from __future__ import annotations

import codecs
import contextlib
import inspect
import os
import secrets
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ..tools.results import ToolError
from .bubblewrap import Sandbox, WrappedCommand, child_pid_from_info
from .procs import stat_fields, supervised

if TYPE_CHECKING:
    from .env import ExecEnv

__all__ = [
    "MARKER_ENV",
    "NON_INTERACTIVE_ENV",
    "CommandLimitReached",
    "CommandSlots",
    "RunResult",
    "kill_marked",
    "marked_processes",
    "run_command",
    "run_in_env",
]

MARKER_ENV = "TOOLWIRE_CALL_ID"
"""Environment variable holding each run's random marker token."""

_READ_SIZE = 65536
_DRAIN_IDLE_SECONDS = 0.5
"""After the process exits and everything it started is killed and reaped: how long
the output pipe may stay silent without reaching end-of-file before the rest of the
output is given up (a process that escaped the cleanup still holds the pipe). Only
silence of the pipe counts: time the pump spends handing output on never does."""
_DRAIN_MAX_BYTES = 256 << 20
"""Most bytes read from the pipe after the process exited and its tree was killed
(256 MiB); past that the writer is a process that escaped the cleanup."""
_REAP_SECONDS = 2.0
"""How long cleanup waits for killed processes to disappear."""

OutputCallback = Callable[[str], Any]
"""Receives each decoded chunk of output; may be a coroutine function."""

RawOutputCallback = Callable[[bytes], Any]
"""Receives each chunk of output as read, undecoded; may be a coroutine function."""


@dataclass(frozen=True)
class RunResult:
    """How a run ended.

    Attributes:
        exit_code: the process's exit status (0–255); None when a signal ended it
            or the status could not be collected.
        signal: the number of the signal that ended the process, if one did.
        timed_out: the timeout expired and the runner killed the process.
        output_bytes: bytes read from the output pipe.
        output_complete: the pipe was read to end-of-file. False when a process that
            escaped the cleanup still held it open after the command ended (silent
            for :data:`_DRAIN_IDLE_SECONDS`, or writing past :data:`_DRAIN_MAX_BYTES`):
            what it wrote later is not part of the output.
        duration: seconds from start to return.
        pid: the process id the runner started (bubblewrap in the sandbox, the
            supervisor of :func:`toolwire.host.sandbox.procs.supervised` outside it).
        memory_exceeded: the memory limit in bytes (``[sandbox.limits] memory``) when the
            kernel killed a process of the command because the command reached it;
            None otherwise (see :func:`toolwire.host.sandbox.memory_exceeded_message`).
    """

    exit_code: int | None
    signal: int | None
    timed_out: bool
    output_bytes: int
    duration: float
    pid: int
    memory_exceeded: int | None = None
    output_complete: bool = True


def marked_processes(marker: str, exclude: Sequence[int] = ()) -> list[int]:
    """Pids of live processes whose initial environment holds ``MARKER_ENV=marker``.

    Reads ``/proc/<pid>/environ``; processes it may not read are skipped. A process in
    the middle of ``execve`` shows an empty environment until the new program's is set
    up (the kernel reads it from the new memory map, whose environment is not placed
    yet): such a process is read again, for at most :data:`_EXEC_WAIT` seconds in all,
    so a process that left the group (``setsid``) and is exec'ing at that moment is
    not missed. Kernel threads and zombies, whose environment is always empty, are not
    waited for.
    """
    needle = f"{MARKER_ENV}={marker}".encode()
    me = os.getpid()
    out: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    me_or_excluded = {me, *exclude}
    pending = [int(e) for e in entries if e.isdigit() and int(e) not in me_or_excluded]
    deadline: float | None = None
    while pending:
        empty: list[int] = []
        for pid in pending:
            data = _environ(pid)
            if data is None:
                continue  # not ours to read, or gone
            if not data:
                empty.append(pid)
            elif needle in data and any(v == needle for v in data.split(b"\0")):
                out.append(pid)
        if deadline is None:  # after the first round: wait only for what may be exec'ing
            empty = [p for p in empty if _may_exec(p)]
            deadline = time.monotonic() + _EXEC_WAIT
        pending = empty
        if pending and time.monotonic() <= deadline:
            time.sleep(0.001)
        else:
            break  # what stays empty has no environment at all (not ours)
    return out


_EXEC_WAIT = 0.05
"""Seconds :func:`marked_processes` re-reads processes whose environment reads empty."""


def _environ(pid: int) -> bytes | None:
    """``/proc/<pid>/environ``, or None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read()
    except OSError:
        return None


def _may_exec(pid: int) -> bool:
    """False for what never shows an environment: a kernel thread (kthreadd, pid 2, and
    its children), a zombie, a process already gone."""
    fields = stat_fields(pid)
    return (
        pid != 2
        and fields is not None
        and len(fields) > 1
        and fields[0] not in (b"Z", b"X")
        and fields[1] != b"2"
    )


def kill_marked(marker: str, exclude: Sequence[int] = ()) -> set[int]:
    """SIGKILL every process carrying ``marker``, round after round until none is left
    (a dying parent may fork once more). Returns every pid signalled."""
    killed: set[int] = set()
    for _ in range(50):
        live = [p for p in marked_processes(marker, exclude) if _alive(p)]
        if not live:
            break
        for p in live:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)
            killed.add(p)
    return killed


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    fields = stat_fields(pid)
    return fields is not None and (not fields or fields[0] not in (b"Z", b"X"))


def _try_reap(pid: int) -> bool:
    """Reap ``pid`` if it is our zombie child; True when it is gone or not ours."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return not os.path.exists(f"/proc/{pid}") or not _alive(pid)
    return done != 0


async def _reap_all(pids: set[int]) -> None:
    """Wait (bounded) until every pid in ``pids`` is reaped or gone."""
    deadline = time.monotonic() + _REAP_SECONDS
    remaining = set(pids)
    while remaining:
        remaining = {p for p in remaining if not _try_reap(p)}
        if not remaining or time.monotonic() > deadline:
            return
        await anyio.sleep(0.01)


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rfind(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


async def _reap_orphan(pid: int | None) -> None:
    """Wait (bounded) for ``pid`` to exit and reap it, if it is this process's child."""
    if pid is None:
        return
    try:
        pidfd = os.pidfd_open(pid)  # pins the process: its pid cannot be reused meanwhile
    except (OSError, AttributeError):
        return
    try:
        if _parent_of(pid) != os.getpid():
            return  # not handed to us (the host is not a subreaper): init reaps it
        with anyio.move_on_after(_REAP_SECONDS):
            await anyio.wait_readable(pidfd)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    finally:
        os.close(pidfd)


def _decode_status(status: int) -> tuple[int | None, int | None]:
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status), None
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    return None, None


class CommandLimitReached(ToolError):
    """No command slot became free within the command's timeout (see
    :class:`CommandSlots`)."""


class CommandSlots:
    """The host-wide cap on commands running at once (``[sandbox] max_commands``).

    A command beyond the cap waits for a running one to end; the wait counts against
    its own timeout and ends on cancellation. Not thread-safe: used from the host's
    one event loop. Waiters are kept as events created at wait time, so the object
    is not tied to an event loop.

    Args:
        limit: most commands at once; 0 for no limit.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.running = 0
        self._waiters: list[anyio.Event] = []

    @contextlib.asynccontextmanager
    async def hold(self, timeout: float | None) -> AsyncIterator[float]:
        """Hold a slot while the block runs; yields the seconds spent waiting for it.

        Raises:
            CommandLimitReached: ``timeout`` seconds (None or <= 0: no bound) passed
                before a slot became free.
        """
        started = time.monotonic()
        if self.limit > 0:
            deadline = None if timeout is None or timeout <= 0 else started + timeout
            while self.running >= self.limit:
                event = anyio.Event()
                self._waiters.append(event)
                try:
                    left = None if deadline is None else deadline - time.monotonic()
                    with anyio.move_on_after(left):
                        await event.wait()
                finally:
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(event)
                late = deadline is not None and time.monotonic() >= deadline
                if late and self.running >= self.limit:
                    raise CommandLimitReached(
                        f"{self.running} commands are already running, the most this "
                        f"host allows at once ([sandbox] max_commands = {self.limit}); "
                        f"none ended within this command's timeout of {timeout:g} s"
                    )
        self.running += 1
        try:
            yield time.monotonic() - started
        finally:
            self.running -= 1
            # Wake every waiter: each re-checks, so a waiter cancelled after being
            # woken never swallows the wake-up another one needed.
            waiters, self._waiters = self._waiters, []
            for event in waiters:
                event.set()


def command_slots(sandbox: Sandbox) -> CommandSlots:
    """The :class:`CommandSlots` shared by every command run in ``sandbox`` (one per
    host: the host resolves one sandbox), kept on the sandbox itself."""
    slots = sandbox.command_slots
    if not isinstance(slots, CommandSlots):
        slots = sandbox.command_slots = CommandSlots(sandbox.settings.max_commands)
    return slots


async def run_command(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    on_output: OutputCallback | None = None,
    sandbox: Sandbox | None = None,
    root: str | os.PathLike[str] | None = None,
    on_raw: RawOutputCallback | None = None,
) -> RunResult:
    """Run ``argv`` to completion and end everything it started.

    Args:
        argv: program and arguments (no shell unless ``argv`` names one).
        cwd: working directory of the process.
        env: the complete environment (default: the host's); the run's marker
            variable is added to it.
        timeout: seconds before the process and everything it started are killed;
            None or <= 0 for no limit. With a sandbox, the time spent waiting for a
            command slot (:class:`CommandSlots`) counts against it.
        on_output: called with each decoded chunk of merged stdout/stderr, in order;
            may be ``async``. It may cancel an enclosing anyio scope to stop the run
            early (the process is then killed as on any cancellation).
        sandbox: run inside this sandbox (see :meth:`Sandbox.wrap`), holding one of
            its ``max_commands`` slots; None to run directly.
        root: the directory the sandbox mounts read-write (default: ``cwd``).
        on_raw: called with each chunk of merged output as read (bytes, undecoded),
            before ``on_output`` gets its decoded text; may be ``async``.

    Returns:
        A :class:`RunResult`.

    Raises:
        FileNotFoundError: the program or the cwd does not exist.
        PermissionError: the program is not executable.
        OSError: the process could not be started.
        CommandLimitReached: no command slot became free within ``timeout``.
        anyio cancellation: re-raised after the process tree is ended.
    """
    if sandbox is None:
        return await _run_command(
            argv, cwd=cwd, env=env, timeout=timeout, on_output=on_output, on_raw=on_raw
        )
    async with command_slots(sandbox).hold(timeout) as waited:
        if timeout is not None and timeout > 0:
            timeout = max(timeout - waited, 0.001)
        return await _run_command(
            argv,
            cwd=cwd,
            env=env,
            timeout=timeout,
            on_output=on_output,
            sandbox=sandbox,
            root=root,
            on_raw=on_raw,
        )


async def _run_command(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    on_output: OutputCallback | None = None,
    sandbox: Sandbox | None = None,
    root: str | os.PathLike[str] | None = None,
    on_raw: RawOutputCallback | None = None,
) -> RunResult:
    """The body of :func:`run_command` (which holds the command slot): start the child,
    pump its output while waiting for it to exit (or for the timeout), then end what it
    left behind and collect its status."""
    started = time.monotonic()
    child = _Child.start(argv, cwd=cwd, env=env, sandbox=sandbox, root=root)
    output = _OutputPump(child.read_fd, on_output, on_raw)
    timed_out = False
    finished = False
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(output.run)
            timed_out = await child.wait_exited(timeout)
            # The command is over: end what it left behind, then read what is buffered.
            escaped = child.kill_tree()
            child.reap()
            finished = True
            # Once what it started is gone, end-of-file comes as soon as the pipe is
            # read out; the pump reads it to the end however long handing the output
            # on takes (never cut by a clock), and gives up only on a pipe that stays
            # silent without closing, or floods, after the cleanup.
            await _reap_all(escaped)
            output.drain()
            await output.eof.wait()
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await child.finish(kill=not finished)
    code, sig = _decode_status(child.status) if child.status is not None else (None, None)
    return RunResult(
        exit_code=code,
        signal=sig,
        timed_out=timed_out,
        output_bytes=output.total,
        output_complete=output.complete,
        duration=time.monotonic() - started,
        pid=child.pid,
        memory_exceeded=child.memory_exceeded,
    )


async def _deliver(callback: Callable[[Any], Any], value: Any) -> None:
    """Call an output callback, awaiting it when it is ``async`` (or returns an awaitable)."""
    r = callback(value)
    if inspect.isawaitable(r):
        await r


class _OutputPump:
    """Reads the child's merged output pipe until end-of-file: counts the bytes, hands
    each chunk to ``on_raw`` and its text (decoded incrementally as UTF-8, invalid bytes
    as U+FFFD) to ``on_output``, and sets :attr:`eof` at the end.

    The pipe is non-blocking and read on the event loop (no thread of any pool is
    waited for). After :meth:`drain` (the command ended and its tree was killed) the
    pump still reads to end-of-file; it stops early only when the pipe stays silent
    for :data:`_DRAIN_IDLE_SECONDS` or passes :data:`_DRAIN_MAX_BYTES` more bytes,
    and then clears :attr:`complete`."""

    def __init__(
        self, fd: int, on_output: OutputCallback | None, on_raw: RawOutputCallback | None
    ) -> None:
        self.fd = fd
        self.on_output = on_output
        self.on_raw = on_raw
        self.total = 0
        """Bytes read so far."""
        self.eof = anyio.Event()
        self.complete = True
        """False when the pump stopped before end-of-file (see the class)."""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._drain_from: int | None = None  # bytes read when drain() was called
        self._wait_scope: anyio.CancelScope | None = None

    def drain(self) -> None:
        """The command is over: from now on a pipe silent for
        :data:`_DRAIN_IDLE_SECONDS` without end-of-file ends the pump."""
        if self._drain_from is None:
            self._drain_from = self.total
            if self._wait_scope is not None:
                self._wait_scope.cancel()  # re-wait with the idle bound

    async def _wait_readable(self) -> bool:
        """Wait until the pipe is readable; False when, draining, it stayed silent."""
        if self._drain_from is None:
            with anyio.CancelScope() as scope:
                self._wait_scope = scope
                try:
                    await anyio.wait_readable(self.fd)
                finally:
                    self._wait_scope = None
            return True
        with anyio.move_on_after(_DRAIN_IDLE_SECONDS) as scope:
            await anyio.wait_readable(self.fd)
        return not scope.cancelled_caught

    async def _end(self, complete: bool) -> None:
        self.complete = complete
        await self._text(self._decoder.decode(b"", final=True))
        self.eof.set()

    async def _text(self, text: str) -> None:
        if self.on_output is not None and text:
            await _deliver(self.on_output, text)

    async def run(self) -> None:
        """Pump until end-of-file (or a read error, taken as end-of-file)."""
        while True:
            try:
                chunk = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                if not await self._wait_readable():
                    await self._end(complete=False)
                    return
                continue
            except OSError:
                chunk = b""
            if not chunk:
                await self._end(complete=True)
                return
            if self._drain_from is not None and self.total - self._drain_from > _DRAIN_MAX_BYTES:
                await self._end(complete=False)
                return
            self.total += len(chunk)
            if self.on_raw is not None:
                await _deliver(self.on_raw, chunk)
            if self.on_output is not None:
                await self._text(self._decoder.decode(chunk))


class _Child:
    """One started command: its process, the read end of its output pipe, the pidfd
    that watches its exit, its marker and, in the sandbox, what the wrapping set up.

    The process stays unreaped until :meth:`reap`, so its pid (and process group id)
    cannot be reused while :meth:`kill_tree` signals it."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        read_fd: int,
        marker: str,
        info_r: int,
        wrapped: WrappedCommand | None,
    ) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.read_fd = read_fd
        self.marker = marker
        self.info_r = info_r
        self.wrapped = wrapped
        self.memory_exceeded: int | None = None
        self.reaped = False
        self.status: int | None = None
        """The wait status once reaped; None before, or when someone else collected it."""
        os.set_blocking(read_fd, False)
        self.pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self.pidfd = os.pidfd_open(self.pid)

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | os.PathLike[str],
        env: Mapping[str, str] | None,
        sandbox: Sandbox | None,
        root: str | os.PathLike[str] | None,
    ) -> _Child:
        """Start ``argv`` (wrapped by ``sandbox`` when given, under a supervisor when
        not sandboxed) in its own session, stdin from /dev/null, stdout and stderr on
        one pipe, the environment marked.

        Raises:
            OSError: the process could not be started (nothing is left open).
        """
        marker = secrets.token_hex(16)
        full_env = dict(os.environ if env is None else env)
        full_env[MARKER_ENV] = marker
        info_r = info_w = -1
        pass_fds: tuple[int, ...] = ()
        wrapped: WrappedCommand | None = None
        if sandbox is not None:
            if sandbox.active:
                info_r, info_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
            wrapped = sandbox.wrap(
                argv,
                root=cwd if root is None else root,
                cwd=cwd,
                env=full_env,
                marker=(MARKER_ENV, marker),
                info_fd=info_w if info_w >= 0 else None,
            )
            argv, full_env, pass_fds = wrapped.argv, wrapped.env, wrapped.pass_fds
        if sandbox is None or not sandbox.active:
            # No PID namespace ends it with the host: a supervisor does (procs.py).
            try:
                argv = supervised(argv, env=full_env, cwd=cwd)
            except BaseException:
                if wrapped is not None:
                    Sandbox.cleanup(wrapped)
                raise
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        try:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                cwd=cwd,
                env=full_env,
                start_new_session=True,
                close_fds=True,
                pass_fds=pass_fds,
            )
        except BaseException:
            os.close(read_fd)
            if info_r >= 0:
                os.close(info_r)
            if wrapped is not None:
                Sandbox.cleanup(wrapped)
            raise
        finally:
            os.close(write_fd)
            if info_w >= 0:
                os.close(info_w)
            if wrapped is not None:
                wrapped.close_fds()
        return cls(proc, read_fd, marker, info_r, wrapped)

    async def _exited(self) -> None:
        """Return once the process has exited (it is then a zombie, not yet reaped)."""
        if self.pidfd is not None:
            await anyio.wait_readable(self.pidfd)
            return
        while True:  # no pidfd: poll /proc
            if not _alive(self.pid):
                return
            await anyio.sleep(0.02)

    async def wait_exited(self, timeout: float | None) -> bool:
        """Wait for the process to exit; past ``timeout`` seconds (None or <= 0: no
        limit) kill its tree and wait for it then. Returns whether the timeout expired."""
        if timeout is None or timeout <= 0:
            await self._exited()
            return False
        with anyio.move_on_after(timeout) as scope:
            await self._exited()
        if not scope.cancelled_caught:
            return False
        self.kill_tree()
        await self._exited()
        return True

    def reap(self) -> None:
        """Collect the exit status if the process has exited (never blocks)."""
        if self.reaped:
            return
        try:
            done, st = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:  # someone else collected it
            done, st = self.pid, -1
        if done != self.pid:
            return  # still running (cleanup gave up waiting): leave it to the host's exit
        self.status = st if st >= 0 else None
        self.reaped = True
        self.proc.returncode = -1 if self.status is None else os.waitstatus_to_exitcode(self.status)

    def kill_tree(self) -> set[int]:
        """SIGKILL the process group and every process carrying the marker; returns
        the marked pids signalled (to reap: the host is their subreaper)."""
        # While the process is unreaped its pid cannot be reused, so the group kill is safe.
        if not self.reaped:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
        return kill_marked(self.marker, exclude=(self.pid,))

    async def finish(self, *, kill: bool) -> None:
        """End of the run, whatever happened (run shielded): with ``kill``, end the
        tree first; reap the process (waiting a bounded time), reap what was killed,
        close the descriptors and undo the sandbox's set-up."""
        escaped = self.kill_tree() if kill else set()
        if not self.reaped:
            with anyio.move_on_after(_REAP_SECONDS):
                await self._exited()
            self.reap()
        await _reap_all(escaped)
        os.close(self.read_fd)
        if self.pidfd is not None:
            os.close(self.pidfd)
        if self.info_r >= 0:
            # The sandbox's first process is handed to the host (a child
            # subreaper) when bubblewrap exits: reap it, or it stays a zombie.
            try:
                info = os.read(self.info_r, 4096)
            except OSError:
                info = b""
            os.close(self.info_r)
            await _reap_orphan(child_pid_from_info(info))
        if self.wrapped is not None:
            self.memory_exceeded = Sandbox.memory_exceeded(self.wrapped)
            Sandbox.cleanup(self.wrapped)


_NO_EDITOR = (
    "printf '%s\\n' 'toolwire: no terminal for an editor; give the text another way "
    "(e.g. git commit -m MESSAGE)' >&2; false"
)
"""The editor a tool's process gets: a shell command that says why on stderr and fails.
Git (and most programs that start an editor) runs it through ``sh -c`` with the file
appended; a program that execs it directly fails at once (no such file). Either way
the command ends instead of waiting for keys no one can type."""

NON_INTERACTIVE_ENV: dict[str, str] = {
    "GIT_EDITOR": _NO_EDITOR,
    "GIT_SEQUENCE_EDITOR": _NO_EDITOR,
    "EDITOR": _NO_EDITOR,
    "VISUAL": _NO_EDITOR,
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "cat",
    # Vim and Neovim without a terminal (has('ttyin') false) say why and quit; a
    # script run with vim -es skips VIMINIT and still works.
    "VIMINIT": "if !has('ttyin') | echoerr 'toolwire: no terminal for an editor; edit files "
    "with the edit and write tools' | cquit | endif",
    "GIT_TERMINAL_PROMPT": "0",
    "GCM_INTERACTIVE": "never",
    "DEBIAN_FRONTEND": "noninteractive",
    "PIP_NO_INPUT": "1",
}
"""Variables every process a tool starts gets (:func:`run_in_env`), inside the sandbox
and out, over the host's own (whose ``EDITOR=vim`` would wait for a terminal): such a
process has no terminal and an empty stdin, so an editor, pager or password prompt would
wait until the call's timeout. Editors fail with a message (:data:`_NO_EDITOR`; vim
itself too, through ``VIMINIT``), pagers
are ``cat``, git and its credential manager never prompt, Debian's and pip's installers
take their defaults. The tool environment's own variables (``extra_env``) win over these.
"""


async def run_in_env(
    exec_env: ExecEnv,
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
    on_output: OutputCallback | None = None,
    on_raw: RawOutputCallback | None = None,
) -> RunResult:
    """Run ``argv`` as a tool acting in ``exec_env``: the way tools start processes.

    The process runs in ``exec_env.sandbox`` (when it is active), with the
    environment it allows (:meth:`Sandbox.environment`: the ``env_allow`` part of the
    host's environment plus ``exec_env.extra_env``; the host's whole environment plus
    ``exec_env.extra_env`` when no sandbox is configured), the non-interactive defaults
    of :data:`NON_INTERACTIVE_ENV` between the two, the root mounted read-write,
    and the runner's guarantees of :func:`run_command`.

    Args:
        exec_env: the tool's execution environment (``ctx.env``).
        argv: program and arguments.
        cwd: working directory (default: ``exec_env.cwd``); must lie inside the root
            when sandboxed.
        timeout: seconds; None or <= 0 for no limit.
        on_output, on_raw: see :func:`run_command`.

    Raises:
        see :func:`run_command`.
    """
    sandbox = exec_env.sandbox
    extra = {**NON_INTERACTIVE_ENV, **exec_env.extra_env}
    if sandbox is None:
        env = dict(os.environ)
        env.update(extra)
    else:
        env = sandbox.environment(os.environ, extra)
    return await run_command(
        argv,
        cwd=exec_env.cwd if cwd is None else cwd,
        env=env,
        timeout=timeout,
        on_output=on_output,
        sandbox=sandbox,
        root=exec_env.root,
        on_raw=on_raw,
    )

"""One worker process seen from the host: :class:`WorkerProcess` starts it (directly, under
bubblewrap, or forked from its module's template), sends it calls, copies its stderr and
ends it; :class:`_Flight` is one request in flight to it.

A :class:`~.pool.WorkerPool` owns its workers and decides which one gets a call. A worker
sees it through two seams only: :class:`WorkerSettings`, frozen and built once per
generation by the pool (module, root, import path, limits, sandbox, start mode, source,
and the grace periods: :data:`START_TIMEOUT`, :data:`STOP_GRACE`, :data:`CLOSING_GRACE`),
and :class:`WorkerOwner`, the callbacks it makes (its exit, a question or tool change
from the worker, a log record for the client, background tasks). Nothing here touches a
private attribute of its owner (tests/host/workers/test_workers_seams.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from toolwire.errors import (
    METHOD_NOT_FOUND,
    JsonRpcError,
)
from toolwire.framing import DEFAULT_MAX_MESSAGE_SIZE
from toolwire.router import Router
from toolwire.session import OutboundRequest, RequestContext, Session
from toolwire.streams import FdReceiveStream, FdSendStream

from ..sandbox.bubblewrap import Sandbox, child_pid_from_info, memory_exceeded_message
from ..tools.channel import LOG_LEVELS
from ..tools.context import ToolContext
from ..tools.redaction import redact_text
from . import health
from .template import TemplateLink, host_pid_of
from .workerwire import (
    ASK,
    IMPORT_FAILED,
    LOG,
    PROGRESS,
    PROTOCOL,
    TOOL_ERROR,
    TOOLS_CHANGED,
    WORKER_MODULE,
)

log = logging.getLogger("toolwire.workers")


@dataclass(frozen=True)
class ModuleSpec:
    """One tool module served by workers.

    Attributes:
        spec: the ``--tools`` file or module name, or the entry point's name.
        kind: "tools" or "entry_point".
    """

    spec: str
    kind: str = "tools"

    @property
    def label(self) -> str:
        """How messages name the module."""
        return f"entry point {self.spec}" if self.kind == "entry_point" else self.spec

    @property
    def file(self) -> str | None:
        """The absolute path of a ``--tools`` file (resolved against the host's working
        directory, not the root the worker starts in); None for a module name or an
        entry point."""
        spec = self.spec
        if self.kind == "tools" and (spec.endswith(".py") or os.path.isfile(spec)):
            return os.path.abspath(spec)
        return None


class LiveCalls:
    """Calls in flight in a module's workers, by the reference (an int, unique per owner)
    a worker knows each one by: its messages about a call (progress, logs, questions)
    name the reference, and the owner finds the call's :class:`ToolContext` here."""

    def __init__(self) -> None:
        self._next = 0
        self.contexts: dict[int, ToolContext] = {}

    def add(self, ctx: ToolContext) -> int:
        self._next += 1
        self.contexts[self._next] = ctx
        return self._next

    def remove(self, ref: int) -> None:
        self.contexts.pop(ref, None)


class WorkerOwner(Protocol):
    """The callbacks a worker process makes on its owner (a :class:`~.pool.WorkerPool`
    implements them; this module never imports :mod:`.pool`, which imports it). A worker
    reads its settings from its :class:`WorkerSettings`, never from its owner."""

    def worker_gone(self, worker: WorkerProcess) -> None:
        """``worker``'s process has exited (or its start failed and it was killed)."""
        ...

    def release(self, flight: _Flight) -> None:
        """Give up ``flight``, an early call nobody took (:meth:`_Flight.give_up`)."""
        ...

    def visible_paths(self) -> list[str]:
        """Host paths a sandboxed worker must see read-only (read at each start)."""
        ...

    def call_context(self, ref: int) -> ToolContext | None:
        """The context of the call in flight that ``ref`` names, if it is still live."""
        ...

    async def answer_ask(self, params: Any, rctx: RequestContext) -> Any:
        """Put a worker's question (:data:`~.workerwire.ASK`) to the client."""
        ...

    def tools_changed(self, descriptions: list[Any]) -> None:
        """A worker says its module's tools changed at run time."""
        ...

    def notify(self, level: str, text: str) -> None:
        """Send a log record to the client (stderr only when there is none)."""
        ...

    def client_backlogged(self) -> bool:
        """Whether the client is behind in reading (progress and logs are then dropped)."""
        ...

    def host_closing(self) -> bool:
        """Whether the host (or its workers) are shutting down."""
        ...

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> bool:
        """Run ``fn(*args)`` in the background; False (nothing run) while closing."""
        ...


QUICK_BATCH = 64

QUICK_STALL = 0.02
"""Seconds without an answer after which a busy first worker is passed over even for
quick calls (one of its calls is slow after all)."""


STOP_GRACE = 0.5
"""Seconds a cancelled or timed-out handler has to stop before its worker is killed."""


CLOSING_GRACE = 0.3
"""Seconds a cancelled handler has to stop while the host shuts down (it must exit within
1 s; protocol.md §3.5)."""


START_TIMEOUT = 60.0
"""Seconds a worker may take to import its module and answer ``initialize``."""


MAX_QUEUED_FOR_WORKER = 256 * 1024 * 1024
"""Bytes the host queues for a worker that does not read, before it kills it (256 MiB)."""


@dataclass(frozen=True)
class WorkerSettings:
    """Everything a worker process needs to start and run, fixed for one generation of
    a module's workers: built once by its :class:`~.pool.WorkerPool`, shared by its
    workers and its template, never changed (assigning a field raises
    :class:`dataclasses.FrozenInstanceError`).

    Attributes:
        module: the tool module served.
        root: the directory tools act in (a real path; the worker's working directory).
        sys_path: the host's import path, passed to the worker.
        max_threads: threads for synchronous handlers, per worker.
        log_level: the worker's stderr log threshold (a :mod:`logging` level name).
        max_message_size: largest message accepted from a worker, in bytes (at least
            :data:`~toolwire.framing.DEFAULT_MAX_MESSAGE_SIZE` is accepted).
        sandbox: the host's sandbox (workers run under bubblewrap when it is active).
        sandboxed: whether the sandbox was active when the generation was made.
        source: the ``--tools`` file's source as this generation read it (None for a
            module name or an entry point): every worker of the generation runs it.
        start: how a worker starts (``--worker-start``): "spawn" or "fork".
        start_timeout: seconds a worker may take to import its module and answer
            ``initialize`` (:data:`START_TIMEOUT`).
        stop_grace: seconds a cancelled handler has to stop before its worker is
            killed (:data:`STOP_GRACE`).
        closing_grace: the same while the host shuts down (:data:`CLOSING_GRACE`).
    """

    module: ModuleSpec
    root: str
    sys_path: tuple[str, ...]
    max_threads: int
    log_level: str
    max_message_size: int
    sandbox: Sandbox | None
    sandboxed: bool
    source: bytes | None = None
    start: Literal["spawn", "fork"] = "spawn"
    start_timeout: float = START_TIMEOUT
    stop_grace: float = STOP_GRACE
    closing_grace: float = CLOSING_GRACE

    @property
    def accepted_size(self) -> int:
        """The largest message the host accepts from a worker, in bytes."""
        return max(self.max_message_size, DEFAULT_MAX_MESSAGE_SIZE)


class WorkerStartError(Exception):
    """A worker did not start.

    Attributes:
        import_failed: the module itself failed to import (not worth retrying until it
            changes); False for a process that could not start or died while starting.
        traceback: the import's traceback text, when there is one.
    """

    def __init__(self, message: str, *, import_failed: bool, traceback: str = "") -> None:
        super().__init__(message)
        self.import_failed = import_failed
        self.traceback = traceback


MAX_STDERR_LINE = 16 * 1024
"""Longest line of a worker's stderr passed on in one piece (characters)."""


def printable(line: str) -> str:
    """``line`` with every character a terminal would act on shown as an escape
    (C0 and C1 controls but tab, DEL, bidirectional and other format characters)."""
    if line.isprintable():
        return line
    out = []
    for ch in line:
        if ch.isprintable() or ch == "\t":
            out.append(ch)
        else:
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return "".join(out)


async def _reap_soon(pids: list[int], within: float = 5.0) -> None:
    """Reap ``pids`` (children handed to this process) as each becomes a zombie, polling
    for at most ``within`` seconds; a pid that is not our child is dropped at once."""
    deadline = time.monotonic() + within
    left = list(pids)
    while left and time.monotonic() < deadline:
        for pid in list(left):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid  # not ours (or reaped already)
            if done == pid:
                left.remove(pid)
        if left:
            await anyio.sleep(0.02)


def _write_stderr(text: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(text)
        sys.stderr.flush()


async def copy_stderr(fd: int) -> None:
    """Pass a worker's stderr (its log records, what its tools print, a crash's traceback)
    on to the host's stderr, a line at a time with control characters escaped: what a
    tool module writes there can neither drive the terminal of a ``toolwire call`` nor
    forge the host's own lines undetectably. Ends at end-of-file; owns ``fd``."""
    stream = FdReceiveStream(fd)
    pending = b""
    try:
        while True:
            try:
                data = await stream.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                break
            pending += data
            *lines, pending = pending.split(b"\n")
            while len(pending) > MAX_STDERR_LINE:
                lines.append(pending[:MAX_STDERR_LINE])
                pending = pending[MAX_STDERR_LINE:]
            if lines:
                text = "".join(printable(line.decode("utf-8", "replace")) + "\n" for line in lines)
                # In a thread: a parent that stops reading the host's stderr blocks this
                # copy (and so the worker writing), never the host's event loop.
                await anyio.to_thread.run_sync(_write_stderr, text)
        if pending:
            text = printable(pending.decode("utf-8", "replace")) + "\n"
            await anyio.to_thread.run_sync(_write_stderr, text)
    finally:
        with anyio.CancelScope(shield=True):
            await stream.aclose()


def describe_status(returncode: int, sandboxed: bool) -> str:
    """What a worker's exit status means, e.g. ``killed by signal 11 (SIGSEGV)``.

    Under bubblewrap the process seen is bubblewrap, which exits with 128 + N when the
    worker was killed by signal N.
    """
    signum = -returncode if returncode < 0 else 0
    if sandboxed and returncode > 128:
        signum = returncode - 128
    if signum:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        return f"killed by signal {signum} ({name})"
    return f"exit code {returncode}"


class _TimedOut(Exception):
    """A worker's call reached its timeout (:meth:`WorkerPool.call` says so)."""


class WorkerProcess:
    """One worker process and the session with it.

    Attributes:
        number: its number within the pool (1, 2, ...), for messages.
        in_flight: requests sent to it and not yet answered.
        pid: the process id (bubblewrap's when sandboxed).
        info: the worker's ``initialize`` answer once started.
    """

    def __init__(
        self,
        owner: WorkerOwner,
        settings: WorkerSettings,
        number: int,
        *,
        template: WorkerProcess | None = None,
    ) -> None:
        self.owner = owner
        self.settings = settings
        self.number = number
        self.template = template
        """The template this worker is forked from (:mod:`.template`); None: started
        as a process of its own (a template itself, or a worker without one)."""
        self.link: TemplateLink | None = None
        """On a template: its control socket."""
        self.is_template = number == 0
        self._inner_pid = 0
        self.began: float | None = None
        """When its start began (the wait for its template included), for the log."""
        self.in_flight = 0
        self.pid = 0
        self.info: dict[str, Any] = {}
        self.session: Session | None = None
        self.ready = anyio.Event()
        self.exited = anyio.Event()
        self.start_error: WorkerStartError | None = None
        self.stop_reason: str | None = None
        self.returncode: int | None = None
        self.started_at = time.monotonic()
        self.retiring = False
        self.last_done = 0.0
        """When a request to this worker last ended (monotonic seconds)."""
        self.refs: set[int] = set()
        """References of the calls and hooks in flight in this worker (what it may ask for)."""
        self.unsettled = 0
        """Cancelled calls not yet answered: until they are, no new call is sent here."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._pidfd: int | None = None
        self._info_r = -1
        self._source_fd = -1
        self._sandbox_pids: list[int] = []
        self._stderr_r = -1
        self._stderr_w = -1
        self._wrapped: Any = None
        self.memory_exceeded: int | None = None
        """The memory limit (bytes) when the kernel killed the worker for reaching it."""
        self.check: health.Check | None = None
        """The health check in progress (:meth:`WorkerPool.confirm`), if any."""
        self.checked_at = 0.0

    @property
    def alive(self) -> bool:
        """Started (or starting) and not yet gone."""
        return self.start_error is None and not self.exited.is_set() and self.stop_reason is None

    def _argv_env(self) -> tuple[list[str], dict[str, str], tuple[int, ...]]:
        settings = self.settings
        module = settings.module
        config: dict[str, Any] = {
            "spec": module.file or module.spec,
            "kind": module.kind,
            "root": str(settings.root),
            "sysPath": list(settings.sys_path),
            "maxThreads": settings.max_threads,
            "logLevel": settings.log_level,
            # What the host accepts from it (below): a larger reply becomes an error.
            "maxMessageSize": settings.accepted_size,
        }
        if self.is_template:
            config["template"] = True
        sandbox = settings.sandbox
        if sandbox is not None and sandbox.active:
            config["boxed"] = True
        extra_fds: tuple[int, ...] = ()
        if settings.source is not None and not self.is_template:
            # Every worker of a generation runs the source it was created with, even
            # when the file changed since (a worker restarted after a broken edit).
            fd = os.memfd_create("toolwire-module", os.MFD_CLOEXEC)
            os.write(fd, settings.source)
            os.lseek(fd, 0, os.SEEK_SET)
            self._source_fd = fd
            config["sourceFd"] = fd
            extra_fds = (fd,)
        argv = [sys.executable, "-P", "-m", WORKER_MODULE, json.dumps(config)]
        base = os.environ if sandbox is None else sandbox.environment(os.environ, {})
        env = dict(base)
        env["PYTHONSAFEPATH"] = "1"
        if sandbox is None or not sandbox.active:
            if sandbox is not None and sandbox.settings.mode != "none":
                wrapped = sandbox.wrap(
                    argv,
                    root=settings.root,
                    cwd=settings.root,
                    env=env,
                    skip_limits=("cpu_seconds",),
                )
                return wrapped.argv, wrapped.env, extra_fds
            return argv, env, extra_fds
        info_r, info_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._info_r = info_r
        from pathlib import Path

        from ..sandbox.egress.scope import EgressScope, egress_scope, loop_reporter

        # [network.modules.NAME]: NAME is the file's stem, or the module or entry point name;
        # a refused connection is a host log record (logger "toolwire").
        owner = self.owner
        scope = EgressScope(
            module=Path(module.file).stem if module.file else module.spec,
            on_refused=loop_reporter(lambda message: owner.notify("warning", message)),
        )
        try:
            with egress_scope(scope):
                wrapped = sandbox.wrap(
                    argv,
                    root=settings.root,
                    cwd=settings.root,
                    env=env,
                    info_fd=info_w,
                    extra_ro=owner.visible_paths(),
                    # A template's workers take the process limit each for itself.
                    skip_limits=("cpu_seconds", "processes")
                    if self.is_template
                    else ("cpu_seconds",),
                    join_by_fd=True,
                    fork_template=self.is_template,
                )
        except BaseException:
            os.close(info_w)
            raise
        assert wrapped.argv[-1] == argv[-1]
        if self.is_template:
            # Each worker forked from it gets a sandbox of its own (sandbox/nsfork.py).
            config["forkSandbox"] = sandbox.fork_sandbox(wrapped)
        if wrapped.cgroup_fd is not None or wrapped.memory_cgroup_fd is not None:
            # The worker joins its process-count and memory cgroups itself, while it
            # imports, and before it imports the tool module (worker.py).
            if wrapped.cgroup_fd is not None:
                config["cgroupFd"] = wrapped.cgroup_fd
            if wrapped.memory_cgroup_fd is not None:
                config["memoryCgroupFd"] = wrapped.memory_cgroup_fd
        wrapped.argv[-1] = json.dumps(config)
        self._wrapped = wrapped
        self._info_w = info_w
        return wrapped.argv, wrapped.env, (*wrapped.pass_fds, *extra_fds)

    async def start(self, tg: TaskGroup) -> None:
        """Start the process and wait for its ``initialize`` answer.

        Raises:
            WorkerStartError: it could not start, died, or its module did not import.
        """
        try:
            await self._start(tg)
        except WorkerStartError as exc:
            self.start_error = exc
            self.kill("it did not start")
            raise
        finally:
            self.ready.set()

    async def _start(self, tg: TaskGroup) -> None:
        began = self.began if self.began is not None else time.monotonic()
        if self.is_template:
            await self._start_template(tg, began)
            return
        if self.template is not None:
            from_worker_r, to_worker_w = await self._fork()
        else:
            from_worker_r, to_worker_w = self._spawn()
        self._open_session(tg, from_worker_r, to_worker_w)
        await self._initialize(began)

    def _spawn(self, control: socket.socket | None = None) -> tuple[int, int]:
        """Start the process (a template when ``control``, its control socket's end,
        is given: then as its stdin, with no stdout); ``(from_worker_r, to_worker_w)``
        (both -1 for a template).

        Raises:
            WorkerStartError: it could not start.
        """
        if control is None:
            to_worker_r, to_worker_w = os.pipe2(os.O_CLOEXEC)
            from_worker_r, from_worker_w = os.pipe2(os.O_CLOEXEC)
        else:
            to_worker_r, to_worker_w = os.dup(control.fileno()), -1
            from_worker_r, from_worker_w = -1, os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        try:
            argv, env, pass_fds = self._argv_env()
            err_r, err_w = os.pipe2(os.O_CLOEXEC)
            self._stderr_r = err_r
            self._stderr_w = err_w
            self._proc = subprocess.Popen(
                argv,
                stdin=to_worker_r,
                stdout=from_worker_w,
                stderr=err_w,
                cwd=str(self.settings.root),
                env=env,
                close_fds=True,
                pass_fds=pass_fds,
                # A session and process group of its own, with no controlling terminal:
                # kill(0, ...), killpg of its group or job control reach only the worker.
                start_new_session=True,
            )
        except OSError as exc:
            for fd in (to_worker_w, from_worker_r, self._stderr_r):
                if fd >= 0:
                    os.close(fd)
            self._stderr_r = -1
            raise WorkerStartError(
                f"its worker process could not start: {exc}", import_failed=False
            ) from None
        finally:
            os.close(to_worker_r)
            os.close(from_worker_w)
            if self._stderr_w >= 0:
                os.close(self._stderr_w)
                self._stderr_w = -1
            if self._wrapped is not None:
                self._wrapped.close_fds()
                os.close(self._info_w)
            if self._source_fd >= 0:
                os.close(self._source_fd)
                self._source_fd = -1
        self.pid = self._proc.pid
        with contextlib.suppress(AttributeError, OSError):
            self._pidfd = os.pidfd_open(self.pid)
        return from_worker_r, to_worker_w

    async def _start_template(self, tg: TaskGroup, began: float) -> None:
        """Start this template process and wait until it can fork workers."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._spawn(theirs)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        link = self.link = TemplateLink(ours)
        tg.start_soon(link.run)
        tg.start_soon(self._watch_exit)
        tg.start_soon(copy_stderr, self._stderr_r)
        self._stderr_r = -1  # copy_stderr owns it
        with anyio.move_on_after(self.settings.start_timeout):
            async with anyio.create_task_group() as wait:

                async def gone() -> None:
                    await link.closed.wait()
                    wait.cancel_scope.cancel()

                wait.start_soon(gone)
                await link.ready.wait()
                wait.cancel_scope.cancel()
        if not link.ready.is_set():
            what = (
                await self.death()
                if link.closed.is_set()
                else f"did not start within {self.settings.start_timeout:g} s"
            )
            raise WorkerStartError(f"its worker template {what}", import_failed=False)
        self._read_sandbox_pids()
        log.info(
            "worker template %s ready in %.0f ms (pid %d)",
            self.settings.module.label,
            (time.monotonic() - began) * 1000,
            self.pid,
        )

    def process_pids(self) -> list[int]:
        """This worker's host pids: its own first, then, when sandboxed, the processes
        bubblewrap started for it (outermost first). A health check looks at each."""
        return [self.pid, *self._sandbox_pids]

    def _template_pid(self) -> int:
        """The host pid of this template's own python (under bubblewrap, below its
        wrappers)."""
        return self._sandbox_pids[-1] if self._sandbox_pids else self.pid

    async def _fork(self) -> tuple[int, int]:
        """Have :attr:`template` fork this worker: its pipes, its own cgroups (made here,
        joined by the worker before it runs anything else) and the module's source;
        ``(from_worker_r, to_worker_w)``.

        Raises:
            WorkerStartError: the template did not fork it (it is then killed, and the
                pool's next start makes a new one).
        """
        template = self.template
        assert template is not None and template.link is not None
        sandbox = self.settings.sandbox
        to_worker_r, to_worker_w = os.pipe2(os.O_CLOEXEC)
        from_worker_r, from_worker_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        fds = [to_worker_r, from_worker_w, err_w]
        request: dict[str, Any] = {}
        source_fd = -1
        groups = None
        try:
            if sandbox is not None:
                groups = sandbox.forked_groups()
                self._wrapped = groups
                if groups.cgroup_fd is not None:
                    request["cgroupFd"] = len(fds)
                    fds.append(groups.cgroup_fd)
                if groups.memory_cgroup_fd is not None:
                    request["memoryCgroupFd"] = len(fds)
                    fds.append(groups.memory_cgroup_fd)
            if self.settings.source is not None:
                source_fd = os.memfd_create("toolwire-module", os.MFD_CLOEXEC)
                os.write(source_fd, self.settings.source)
                os.lseek(source_fd, 0, os.SEEK_SET)
                request["sourceFd"] = len(fds)
                fds.append(source_fd)
            inner, worker = await template.link.fork(request, fds)
        except OSError as exc:
            for fd in (to_worker_w, from_worker_r, err_r):
                os.close(fd)
            template.kill(f"it did not fork a worker ({exc})")
            raise WorkerStartError(
                f"its worker process could not start: {exc}", import_failed=False
            ) from None
        finally:
            for fd in (to_worker_r, from_worker_w, err_w, source_fd):
                if fd >= 0:
                    os.close(fd)
            if groups is not None:
                groups.close_fds()
        self._inner_pid = inner
        self._stderr_r = err_r
        self.pid = host_pid_of(template._template_pid(), inner) or 0
        if worker and self.pid:
            # A sandbox of its own: ``inner`` is its init, the worker that init's child.
            self.pid = host_pid_of(self.pid, worker) or 0
        if self.pid:
            with contextlib.suppress(AttributeError, OSError):
                self._pidfd = os.pidfd_open(self.pid)
        return from_worker_r, to_worker_w

    def _open_session(self, tg: TaskGroup, from_worker_r: int, to_worker_w: int) -> None:
        router = Router()
        router.on_request(ASK, self._answer_ask)
        router.on_notification(TOOLS_CHANGED, self._tools_changed)
        router.on_notification(PROGRESS, self._progress)
        router.on_notification(LOG, self._log)
        router.on_unknown_request(self._unexpected)
        router.on_malformed(self._malformed)
        session = Session(
            FdReceiveStream(from_worker_r),
            FdSendStream(to_worker_w),
            router=router,
            framing="ndjson",
            max_message_size=self.settings.accepted_size,
            cancel_dialect="lsp",
            name=f"worker {self.settings.module.label} #{self.number}",
            max_queued=MAX_QUEUED_FOR_WORKER,
            replace_surrogates=False,  # the host's own process: arguments as sent
        )
        self.session = session
        tg.start_soon(self._serve, session)
        tg.start_soon(self._watch_exit)
        tg.start_soon(copy_stderr, self._stderr_r)
        self._stderr_r = -1  # copy_stderr owns it

    async def _initialize(self, began: float) -> None:
        session = self.session
        assert session is not None
        try:
            with anyio.fail_after(self.settings.start_timeout):
                info = await session.request("initialize", {"protocolVersion": PROTOCOL})
        except JsonRpcError as exc:
            if exc.code == IMPORT_FAILED:
                data = exc.data if isinstance(exc.data, dict) else {}
                raise WorkerStartError(
                    exc.message, import_failed=True, traceback=str(data.get("traceback", ""))
                ) from None
            what = await self.death()
            raise WorkerStartError(
                f"its worker process {what} while starting", import_failed=False
            ) from None
        except TimeoutError:
            raise WorkerStartError(
                f"its worker process did not start within {self.settings.start_timeout:g} s",
                import_failed=False,
            ) from None
        self.info = info if isinstance(info, dict) else {}
        self._read_sandbox_pids()
        log.info(
            "worker %s #%d ready in %.0f ms (pid %d)",
            self.settings.module.label,
            self.number,
            (time.monotonic() - began) * 1000,
            self.pid,
        )

    async def _answer_ask(self, params: Any, rctx: RequestContext) -> Any:
        """A question from a call in flight in *this* worker (never another's)."""
        ref = params.get("ref") if type(params) is dict else None
        if type(ref) is not int or ref not in self.refs:
            raise JsonRpcError(TOOL_ERROR, "no call of this worker has that reference")
        return await self.owner.answer_ask(params, rctx)

    def _unexpected(self, params: Any, ctx: RequestContext) -> Any:
        """A request the host never serves for a worker: the worker broke the protocol.

        Raises:
            JsonRpcError: -32601, always.
        """
        self._malformed(f"an unexpected request {ctx.method[:64]!r}")
        raise JsonRpcError(METHOD_NOT_FOUND, "Method not found")

    def _call_of(self, params: Any) -> ToolContext | None:
        """The context of the call ``params["ref"]`` names, if it is in flight here."""
        ref = params.get("ref") if type(params) is dict else None
        if type(ref) is not int or ref not in self.refs:
            return None
        return self.owner.call_context(ref)

    def _progress(self, params: Any) -> None:
        ctx = self._call_of(params)
        if ctx is None or self.owner.client_backlogged():
            return  # progress is lossy: never queued for a client that is not reading
        progress, total, message = (
            params.get("progress"),
            params.get("total"),
            params.get("message"),
        )
        if isinstance(progress, (int, float)) and not isinstance(progress, bool):
            ctx.channel.progress(
                progress,
                total if isinstance(total, (int, float)) and not isinstance(total, bool) else None,
                redact_text(message) if isinstance(message, str) else None,
            )

    def _log(self, params: Any) -> None:
        ctx = self._call_of(params)
        if ctx is not None and self.owner.client_backlogged():
            return  # never queued without bound for a client that is not reading
        level = params.get("level") if ctx is not None else None
        if ctx is None or not isinstance(level, str) or level not in LOG_LEVELS:
            return
        logger = params.get("logger")
        ctx.channel.log(level, params.get("data"), logger if isinstance(logger, str) else None)

    def _tools_changed(self, params: Any) -> None:
        tools = params.get("tools") if type(params) is dict else None
        if isinstance(tools, list) and not self.retiring:
            self.owner.tools_changed(tools)

    def _malformed(self, what: str) -> None:
        log.warning(
            "worker %s #%d broke the protocol (%s); killing it",
            self.settings.module.label,
            self.number,
            what,
        )
        self.kill(f"it sent a malformed message ({what})")

    async def _serve(self, session: Session) -> None:
        await session.serve()
        # The worker closed its end: it is gone or going; make sure of it.
        if not self.exited.is_set():
            with anyio.move_on_after(1.0):
                await self.exited.wait()
            if not self.exited.is_set():
                self.kill("it stopped answering")

    async def _watch_exit(self) -> None:
        proc = self._proc
        if proc is None:
            await self._watch_forked_exit()
        elif self._pidfd is not None:
            await anyio.wait_readable(self._pidfd)
            self.returncode = proc.wait()
        else:
            while proc.poll() is None:
                await anyio.sleep(0.05)
            self.returncode = proc.wait()
        self._cleanup()
        self.exited.set()
        if self.session is not None:
            self.session.close()
        if self.link is not None:
            self.link.close()
        self.owner.worker_gone(self)

    async def _watch_forked_exit(self) -> None:
        """Wait for a forked worker's end: its exit (pidfd) and its exit code, which
        its template (its parent) reaps and reports."""
        template = self.template
        assert template is not None and template.link is not None
        if self._pidfd is not None:
            await anyio.wait_readable(self._pidfd)
        code = None
        with anyio.move_on_after(2.0):
            code = await template.link.exit_code(self._inner_pid)
        if code is None:  # the template is gone (and its workers with it) or wedged
            code = 128 + signal.SIGKILL if self.settings.sandboxed else -signal.SIGKILL
            if self.pid:
                # Without bubblewrap its orphans come to the host (a child subreaper).
                self.owner.spawn(_reap_soon, [self.pid])
        self.returncode = code

    def _cleanup(self) -> None:
        if self._pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
            self._pidfd = None
        self._read_sandbox_pids()
        if self._info_r >= 0:
            os.close(self._info_r)
            self._info_r = -1
        if self._wrapped is not None:
            self.memory_exceeded = Sandbox.memory_exceeded(self._wrapped)
            Sandbox.cleanup(self._wrapped)
            self._wrapped = None
        if self._sandbox_pids:
            # Once bubblewrap is gone its processes are handed to the host (a child
            # subreaper): reap them, or they stay zombies.
            self.owner.spawn(_reap_soon, list(self._sandbox_pids))
            self._sandbox_pids = []

    def _read_sandbox_pids(self) -> None:
        """Learn the host pids of the sandbox's first process and of the worker python
        under it (bubblewrap's ``--info-fd`` and ``/proc/<pid>/task/<pid>/children``)."""
        if self._info_r < 0 or self._sandbox_pids:
            return
        try:
            data = os.read(self._info_r, 4096)
        except OSError:
            return
        child = child_pid_from_info(data)
        if child is None:
            return
        pids = [child]
        with (
            contextlib.suppress(OSError, ValueError),
            open(f"/proc/{child}/task/{child}/children") as f,
        ):
            pids += [int(p) for p in f.read().split()]
        self._sandbox_pids = pids

    def kill(self, reason: str) -> None:
        """SIGKILL the worker (its calls in flight fail with ``reason``)."""
        if self.stop_reason is None:
            self.stop_reason = reason
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                proc.send_signal(signal.SIGKILL)
        elif proc is None and not self.exited.is_set() and self.template is not None:
            if self._pidfd is not None:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            elif self._inner_pid and self.template.link is not None:
                self.template.link.kill(self._inner_pid)
        if self.session is not None:
            self.session.close()

    def close(self) -> None:
        """Let the worker finish: close its stdin (it exits at end of input)."""
        if self.session is not None:
            self.session.close()

    async def death(self) -> str:
        """What ended this worker, once it has ended (killed if not gone within 2 s)."""
        with anyio.move_on_after(2.0):
            await self.exited.wait()
        if not self.exited.is_set():
            self.kill("it stopped answering")
            await self.exited.wait()
        if self.stop_reason is not None:
            return f"was stopped because {self.stop_reason}"
        if self.memory_exceeded is not None:
            return f"was killed: {memory_exceeded_message(self.memory_exceeded)}"
        sandboxed = self._info_r >= 0 or self._wrapped is not None or self.settings.sandboxed
        return f"died ({describe_status(self.returncode or 0, sandboxed)})"

    async def settle(self, answered: anyio.Event) -> None:
        """A call in this worker was cancelled (by the client, its timeout or the host):
        wait up to :data:`STOP_GRACE` seconds for the worker to confirm that the handler
        stopped (its -32800 answer), and kill the worker if it does not. Until then no
        new call is sent here. Returns at once while the host is shutting down."""
        self.unsettled += 1
        try:
            with anyio.CancelScope(shield=True):
                settings = self.settings
                grace = settings.closing_grace if self.owner.host_closing() else settings.stop_grace
                with anyio.move_on_after(grace):
                    await answered.wait()
        finally:
            self.unsettled -= 1
        if not answered.is_set() and self.alive:
            log.warning(
                "worker %s #%d: a cancelled call did not stop within %g s; killing it",
                self.settings.module.label,
                self.number,
                self.settings.stop_grace,
            )
            self.kill(
                f"a call in it did not stop within {self.settings.stop_grace:g} s"
                " of being cancelled"
            )

    def settle_soon(self, answered: anyio.Event) -> None:
        """:meth:`settle` in the background, for a call answered at once: the worker
        takes no new call from this moment until it is settled."""
        self.unsettled += 1

        async def run() -> None:
            try:
                await self.settle(answered)
            finally:
                self.unsettled -= 1

        if not self.owner.spawn(run):
            self.unsettled -= 1  # the host is closing: every worker is ended anyway


class _Flight:
    """One request sent to a worker, from :meth:`WorkerPool._begin` until its answer is
    taken (:meth:`WorkerPool._finish`) or it is given up (:meth:`WorkerPool.release`)."""

    __slots__ = (
        "began",
        "ended",
        "error",
        "outbound",
        "pool",
        "ref",
        "stopped",
        "taken",
        "worker",
    )

    def __init__(self, pool: WorkerOwner, worker: WorkerProcess, ref: int) -> None:
        self.pool = pool
        self.worker = worker
        self.ref = ref
        self.outbound: OutboundRequest | None = None
        self.error: JsonRpcError | None = None
        self.began = time.monotonic()
        self.taken = False
        self.ended = False
        self.stopped = False  # stopping() counts it in its worker's ``unsettled``

    def give_up(self) -> None:
        """:class:`~toolwire.host.tools.context.EarlyStart`: the request of an early call
        ended before its handler took it (:meth:`WorkerPool.release`)."""
        self.pool.release(self)

    def stopping(self) -> None:
        """:attr:`ToolContext.on_cancel <toolwire.host.tools.context.ToolContext.on_cancel>`:
        the call's request was just cancelled. Its worker takes no new call from this
        moment (counted in ``unsettled`` until the flight ends, by which time the
        cancellation's own settling holds it, :meth:`WorkerPool._finish` and
        :meth:`WorkerPool.release`): the handler hears of the cancellation only a few
        event-loop turns later, and a call read meanwhile must not be sent where the
        cancelled one may still run."""
        if self.ended or self.stopped:
            return
        self.stopped = True
        self.worker.unsettled += 1

    def when_answered(self, callback: Callable[[], None]) -> bool:
        """:class:`~toolwire.host.tools.context.EarlyStart`: ``callback()`` once the
        worker's answer is in (:meth:`OutboundRequest.when_answered`); False when it is
        already, or the request was never sent."""
        if self.outbound is None or self.error is not None:
            return False
        return self.outbound.when_answered(callback)


def _check_due(worker: WorkerProcess, calls: int = 0) -> bool:
    """Whether ``worker`` (with ``calls`` in flight counted for the caller) is checked
    (:meth:`WorkerPool.confirm`) before it gets a call: a check is under way, or it has
    been idle :data:`~.health.IDLE_CHECK` seconds since its last answer or check."""
    if worker.check is not None:
        return True
    if worker.in_flight != calls:
        return False
    since = max(worker.last_done, worker.checked_at, worker.started_at)
    return time.monotonic() - since >= health.IDLE_CHECK


def _takes_quick_call(worker: WorkerProcess) -> bool:
    """Whether a ready worker takes one more quick call: it has fewer than
    :data:`QUICK_BATCH` in flight and has answered within :data:`QUICK_STALL`."""
    return worker.in_flight < QUICK_BATCH and (
        worker.in_flight == 0 or time.monotonic() - worker.last_done < QUICK_STALL
    )


def _call_params(name: str, arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """The params of a worker's ``tools/call`` (:mod:`.workerwire`; ``ref`` added on send)."""
    return {
        "name": name,
        "arguments": arguments,
        "callId": ctx.call_id,
        "capabilities": ctx.client_capabilities,
    }

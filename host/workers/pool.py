"""Tool modules in worker processes (``toolwire serve --isolation process``, the default).

Each ``--tools`` module and each ``toolwire.tools`` entry point gets a :class:`WorkerPool`:
up to ``--workers`` child processes (:mod:`.worker`) that import the module and serve its
tools to the host over a pipe pair, in JSON-RPC on :class:`toolwire.session.Session`
(the host is their client, :mod:`.workerwire`). The host registers a stand-in
:class:`~.definition.Tool` for every tool a worker reports: the definition as the module
declared it, validation against its input schema, hooks, approval, the mutation queue and
the timeout all stay in the host; only the handler (and the module's hooks and
``prepare_arguments``) run in the worker.

What a worker's failure costs (protocol.md §12):

* a worker that dies (a signal, ``os._exit``, the memory limit) fails the calls it had in
  flight with an error result naming what happened; the next call starts a new worker,
  after a pause that doubles with each death in a row (:data:`RESTART_BACKOFF`);
* a call that times out or is cancelled is answered at once (a call of a tool that
  ``mutates`` files: once its handler has stopped, so no write can follow the answer);
  when its handler has not stopped :data:`STOP_GRACE` seconds later, the worker is
  killed (and restarted), and until then it takes no new call;
* a module that no longer imports when a worker starts is reported once (stderr and a
  ``notifications/message``) and its tools fail with that reason until it imports again.

Workers run under bubblewrap when the sandbox is active, with the policy commands get
(SECURITY.md "Worker processes").
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
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from toolwire.errors import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    JsonRpcError,
    RequestTimeout,
)
from toolwire.framing import DEFAULT_MAX_MESSAGE_SIZE
from toolwire.router import Router
from toolwire.session import OutboundRequest, RequestContext, Session
from toolwire.streams import FdReceiveStream, FdSendStream

from ..sandbox.bubblewrap import Sandbox, child_pid_from_info, memory_exceeded_message, path_under
from ..schema import ArgumentSchema
from ..tools.arguments import Arguments
from ..tools.channel import LOG_LEVELS
from ..tools.context import ToolContext
from ..tools.definition import Tool
from ..tools.hooks import Block, IncomingCall, ResultPatch, after_tool_call, before_tool_call
from ..tools.loading import ENTRY_POINT_GROUP
from ..tools.registry import Registry
from ..tools.results import ProtocolFailure, ToolError, WireResult, error_result
from ..tools.rounds import InputNeeded
from . import health
from .template import TemplateLink, host_pid_of
from .workerwire import (
    ASK,
    HOOK,
    IMPORT_FAILED,
    INPUT_NEEDED,
    LOG,
    PREPARE,
    PROGRESS,
    PROTOCOL,
    TOOL_ERROR,
    TOOLS_CHANGED,
    WORKER_MODULE,
)

__all__ = [
    "RESTART_BACKOFF",
    "START_TIMEOUT",
    "STOP_GRACE",
    "ModuleSpec",
    "WorkerPool",
    "WorkerStartError",
    "Workers",
]

log = logging.getLogger("toolwire.workers")

STOP_GRACE = 0.5
"""Seconds a cancelled or timed-out handler has to stop before its worker is killed."""

CLOSING_GRACE = 0.3
"""Seconds a cancelled handler has to stop while the host shuts down (it must exit within
1 s; protocol.md §3.5)."""

START_TIMEOUT = 60.0
"""Seconds a worker may take to import its module and answer ``initialize``."""

RESTART_BACKOFF = (0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
"""Pause before starting a worker after 0, 1, 2, ... deaths in a row (seconds)."""

QUICK_CALL = 0.001
"""Calls of a module that typically take less than this (seconds) go to its first worker
while it has fewer than :data:`QUICK_BATCH` in flight (:meth:`WorkerPool.acquire`)."""

QUICK_BATCH = 64

QUICK_STALL = 0.02
"""Seconds without an answer after which a busy first worker is passed over even for
quick calls (one of its calls is slow after all)."""

MAX_QUEUED_FOR_WORKER = 256 * 1024 * 1024
"""Bytes the host queues for a worker that does not read, before it kills it (256 MiB)."""

RELOAD_TIMEOUT = 10.0
"""Seconds a new generation's first worker may take to load its module (``--reload``):
past it the worker is killed and the previous generation keeps serving."""

HEALTHY_SECONDS = 10.0
"""A worker that lived this long resets the count of deaths in a row."""

FORK_SUPPORTED = sys.platform.startswith("linux")
"""Whether ``start="fork"`` (:class:`Workers`) is available here: a pool forks its
workers from a template process (:mod:`.template`) only on Linux (it finds a forked
worker's pid in ``/proc`` and watches it by pidfd)."""


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


MAX_SIBLINGS = 512
"""Most Python files and packages beside a ``--tools`` file made visible to its workers."""


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


def _module_location(name: str) -> list[str]:
    """Where the top-level package (its directories) or module (its file) of the dotted
    ``name`` lies; found without importing anything (a top-level name imports nothing)."""
    import importlib.util

    top = name.split(".", 1)[0]
    if not top:
        return []
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if found is None:
        return []
    if found.submodule_search_locations:
        return [os.path.realpath(p) for p in found.submodule_search_locations]
    if found.origin and os.path.isabs(found.origin):
        return [os.path.realpath(found.origin)]
    return []


def importable_beside(module_file: str) -> list[str]:
    """``module_file`` and the Python modules (``*.py``) and packages (directories with an
    ``__init__.py``) in its directory, the module file first; at most
    :data:`MAX_SIBLINGS` of them, then the rest is left out (with a warning)."""
    out = [module_file]
    folder = os.path.dirname(module_file)
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return out
    for entry in entries:
        path = entry.path
        if path == module_file or entry.name.startswith("."):
            continue
        try:
            if (entry.is_file() and entry.name.endswith(".py")) or (
                entry.is_dir() and os.path.isfile(os.path.join(path, "__init__.py"))
            ):
                out.append(path)
        except OSError:
            continue
        if len(out) > MAX_SIBLINGS:
            log.warning(
                "more than %d modules beside %s: the rest are not visible to its workers",
                MAX_SIBLINGS,
                module_file,
            )
            break
    return out


_PATTERN_KEYS = ("pattern", "patternProperties", "propertyNames", "format")


_SUBSCHEMA: tuple[str, ...] = ("items", "additionalProperties", "contains", "not", "if")
_SUBSCHEMA += ("then", "else", "unevaluatedItems", "unevaluatedProperties", "additionalItems")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "dependentSchemas")


def without_patterns(schema: Any) -> Any:
    """A copy of a JSON Schema without regular expressions or formats (``pattern``,
    ``patternProperties``, ``propertyNames``, ``format``), loosened where they mattered
    (``additionalProperties`` beside ``patternProperties``): what the host checks of a
    worker's tool, whose worker then checks the whole schema. Python's regular
    expressions can take exponential time on a crafted input, and the host must not
    spend it on a pattern a tool module chose. Only subschemas are rewritten; values
    (``enum``, ``const``, ``default``) and property names are kept as they are."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _PATTERN_KEYS:
            continue
        if key in _SUBSCHEMA:
            out[key] = without_patterns(value)
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [without_patterns(v) for v in value]
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: without_patterns(v) for k, v in value.items()}
        else:
            out[key] = value
    if "patternProperties" in schema or "propertyNames" in schema:
        out.pop("additionalProperties", None)
        out.pop("unevaluatedProperties", None)
    return out


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


class _LiveCalls:
    """Calls in flight in some worker, by the reference the worker knows them by."""

    def __init__(self) -> None:
        self._next = 0
        self.contexts: dict[int, ToolContext] = {}

    def add(self, ctx: ToolContext) -> int:
        self._next += 1
        self.contexts[self._next] = ctx
        return self._next

    def remove(self, ref: int) -> None:
        self.contexts.pop(ref, None)


class WorkerProcess:
    """One worker process and the session with it.

    Attributes:
        number: its number within the pool (1, 2, ...), for messages.
        in_flight: requests sent to it and not yet answered.
        pid: the process id (bubblewrap's when sandboxed).
        info: the worker's ``initialize`` answer once started.
    """

    def __init__(
        self, pool: WorkerPool, number: int, *, template: WorkerProcess | None = None
    ) -> None:
        self.pool = pool
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
        workers = self.pool.workers_owner
        module = self.pool.module
        config: dict[str, Any] = {
            "spec": module.file or module.spec,
            "kind": self.pool.module.kind,
            "root": str(workers.root),
            "sysPath": workers.sys_path,
            "maxThreads": workers.max_threads,
            "logLevel": workers.log_level,
            # What the host accepts from it (below): a larger reply becomes an error.
            "maxMessageSize": max(workers.max_message_size, DEFAULT_MAX_MESSAGE_SIZE),
        }
        if self.is_template:
            config["template"] = True
        sandbox = workers.sandbox
        if sandbox is not None and sandbox.active:
            config["boxed"] = True
        extra_fds: tuple[int, ...] = ()
        if self.pool.source is not None and not self.is_template:
            # Every worker of a generation runs the source it was created with, even
            # when the file changed since (a worker restarted after a broken edit).
            fd = os.memfd_create("toolwire-module", os.MFD_CLOEXEC)
            os.write(fd, self.pool.source)
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
                    argv, root=workers.root, cwd=workers.root, env=env, skip_limits=("cpu_seconds",)
                )
                return wrapped.argv, wrapped.env, extra_fds
            return argv, env, extra_fds
        info_r, info_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._info_r = info_r
        from pathlib import Path

        from ..sandbox.egress import EgressScope, egress_scope, loop_reporter

        # [network.modules.NAME]: NAME is the file's stem, or the module or entry point name;
        # a refused connection is a host log record (logger "toolwire").
        notify = workers.notify
        scope = EgressScope(
            module=Path(module.file).stem if module.file else module.spec,
            on_refused=loop_reporter(
                None if notify is None else lambda message: notify("warning", message)
            ),
        )
        try:
            with egress_scope(scope):
                wrapped = sandbox.wrap(
                    argv,
                    root=workers.root,
                    cwd=workers.root,
                    env=env,
                    info_fd=info_w,
                    extra_ro=self.pool.visible_paths(),
                    skip_limits=("cpu_seconds",),
                    join_by_fd=True,
                )
        except BaseException:
            os.close(info_w)
            raise
        if wrapped.cgroup_fd is not None or wrapped.memory_cgroup_fd is not None:
            # The worker joins its process-count and memory cgroups itself, while it
            # imports, and before it imports the tool module (worker.py).
            assert wrapped.argv[-1] == argv[-1]
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
        workers = self.pool.workers_owner
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
                cwd=str(workers.root),
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
        with anyio.move_on_after(START_TIMEOUT):
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
                else f"did not start within {START_TIMEOUT:g} s"
            )
            raise WorkerStartError(f"its worker template {what}", import_failed=False)
        self._read_sandbox_pids()
        log.info(
            "worker template %s ready in %.0f ms (pid %d)",
            self.pool.module.label,
            (time.monotonic() - began) * 1000,
            self.pid,
        )

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
        sandbox = self.pool.workers_owner.sandbox
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
            if self.pool.source is not None:
                source_fd = os.memfd_create("toolwire-module", os.MFD_CLOEXEC)
                os.write(source_fd, self.pool.source)
                os.lseek(source_fd, 0, os.SEEK_SET)
                request["sourceFd"] = len(fds)
                fds.append(source_fd)
            inner = await template.link.fork(request, fds)
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
        if self.pid:
            with contextlib.suppress(AttributeError, OSError):
                self._pidfd = os.pidfd_open(self.pid)
        return from_worker_r, to_worker_w

    def _open_session(self, tg: TaskGroup, from_worker_r: int, to_worker_w: int) -> None:
        workers = self.pool.workers_owner
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
            max_message_size=max(workers.max_message_size, DEFAULT_MAX_MESSAGE_SIZE),
            cancel_dialect="lsp",
            name=f"worker {self.pool.module.label} #{self.number}",
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
            with anyio.fail_after(START_TIMEOUT):
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
                f"its worker process did not start within {START_TIMEOUT:g} s", import_failed=False
            ) from None
        self.info = info if isinstance(info, dict) else {}
        self._read_sandbox_pids()
        log.info(
            "worker %s #%d ready in %.0f ms (pid %d)",
            self.pool.module.label,
            self.number,
            (time.monotonic() - began) * 1000,
            self.pid,
        )

    async def _answer_ask(self, params: Any, rctx: RequestContext) -> Any:
        """A question from a call in flight in *this* worker (never another's)."""
        ref = params.get("ref") if type(params) is dict else None
        if type(ref) is not int or ref not in self.refs:
            raise JsonRpcError(TOOL_ERROR, "no call of this worker has that reference")
        return await self.pool.workers_owner.answer_ask(params, rctx)

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
        return self.pool.workers_owner.live.contexts.get(ref)

    def _progress(self, params: Any) -> None:
        ctx = self._call_of(params)
        if ctx is None or self.pool.workers_owner.client_backlogged():
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
                message if isinstance(message, str) else None,
            )

    def _log(self, params: Any) -> None:
        ctx = self._call_of(params)
        if ctx is not None and self.pool.workers_owner.client_backlogged():
            return  # never queued without bound for a client that is not reading
        level = params.get("level") if ctx is not None else None
        if ctx is None or not isinstance(level, str) or level not in LOG_LEVELS:
            return
        logger = params.get("logger")
        ctx.channel.log(level, params.get("data"), logger if isinstance(logger, str) else None)

    def _tools_changed(self, params: Any) -> None:
        tools = params.get("tools") if type(params) is dict else None
        if isinstance(tools, list) and not self.retiring:
            self.pool.workers_owner.resync(self.pool, tools)

    def _malformed(self, what: str) -> None:
        log.warning(
            "worker %s #%d broke the protocol (%s); killing it",
            self.pool.module.label,
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
        self.pool.worker_gone(self)

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
            code = 128 + signal.SIGKILL if self.pool.sandboxed else -signal.SIGKILL
            if self.pid:
                # Without bubblewrap its orphans come to the host (a child subreaper).
                self.pool.workers_owner.spawn(_reap_soon, [self.pid])
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
            self.pool.workers_owner.spawn(_reap_soon, list(self._sandbox_pids))
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
        sandboxed = self._info_r >= 0 or self._wrapped is not None or self.pool.sandboxed
        return f"died ({describe_status(self.returncode or 0, sandboxed)})"

    async def settle(self, answered: anyio.Event) -> None:
        """A call in this worker was cancelled (by the client, its timeout or the host):
        wait up to :data:`STOP_GRACE` seconds for the worker to confirm that the handler
        stopped (its -32800 answer), and kill the worker if it does not. Until then no
        new call is sent here. Returns at once while the host is shutting down."""
        self.unsettled += 1
        try:
            with anyio.CancelScope(shield=True):
                grace = CLOSING_GRACE if self.pool.workers_owner.host_closing() else STOP_GRACE
                with anyio.move_on_after(grace):
                    await answered.wait()
        finally:
            self.unsettled -= 1
        if not answered.is_set() and self.alive:
            log.warning(
                "worker %s #%d: a cancelled call did not stop within %g s; killing it",
                self.pool.module.label,
                self.number,
                STOP_GRACE,
            )
            self.kill(f"a call in it did not stop within {STOP_GRACE:g} s of being cancelled")

    def settle_soon(self, answered: anyio.Event) -> None:
        """:meth:`settle` in the background, for a call answered at once: the worker
        takes no new call from this moment until it is settled."""
        self.unsettled += 1

        async def run() -> None:
            try:
                await self.settle(answered)
            finally:
                self.unsettled -= 1

        owner = self.pool.workers_owner
        if owner._tg is None or owner.closing:
            self.unsettled -= 1  # the host is closing: every worker is ended anyway
            return
        owner.spawn(run)


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
        "taken",
        "worker",
    )

    def __init__(self, pool: WorkerPool, worker: WorkerProcess, ref: int) -> None:
        self.pool = pool
        self.worker = worker
        self.ref = ref
        self.outbound: OutboundRequest | None = None
        self.error: JsonRpcError | None = None
        self.began = time.monotonic()
        self.taken = False
        self.ended = False


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


class WorkerPool:
    """The workers of one tool module: started on demand up to ``size``, restarted
    after a death with a growing pause.

    Attributes:
        module: the module served.
        size: at most this many workers at once.
        tools: the stand-in tools registered for the module (by name).
        unavailable: why the module cannot serve calls now (it failed to import).
    """

    def __init__(self, owner: Workers, module: ModuleSpec, size: int) -> None:
        self.workers_owner = owner
        self.module = module
        self.size = max(1, size)
        self.workers: list[WorkerProcess] = []
        self.tools: dict[str, Tool] = {}
        self.unavailable: str | None = None
        self.hooks: list[Callable[..., Any]] = []
        self.watch_paths: list[str] = []
        self.retired = False
        self._numbers = 0
        self._deaths = 0
        self._not_before = 0.0
        self.sandboxed = owner.sandbox is not None and owner.sandbox.active
        self.source: bytes | None = None
        """The ``--tools`` file's source as this generation read it (None for modules)."""
        if module.file is not None:
            # A file that cannot be read is reported by the worker.
            with contextlib.suppress(OSError), open(module.file, "rb") as f:
                self.source = f.read()
        self.typical: float | None = None
        """A moving average of how long this module's calls take in a worker (seconds)."""
        self.crashes = health.CrashBudget()
        self.template: WorkerProcess | None = None
        """The process this generation's workers are forked from (:mod:`.template`),
        once started; replaced when it dies."""

    def own_paths(self) -> list[str]:
        """What ``--reload`` watches for this module, decided by the host (never by what
        the worker says): a ``--tools`` file itself, or the package directory or module
        file a module name or an entry point's module resolves to."""
        if self.module.file is not None:
            return [os.path.realpath(self.module.file)]
        name = self.module.spec
        if self.module.kind == "entry_point":
            import importlib.metadata

            eps = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP, name=name)
            name = next((ep.module for ep in eps), "")
        return _module_location(name)

    def visible_paths(self) -> list[str]:
        """Host paths the worker must see read-only: a ``--tools`` file with the Python
        modules and packages beside it (what it can import; not the other files of its
        directory, which may be a home directory), or the directory a top-level module
        or package lives in."""
        if self.module.file is not None:
            return importable_beside(os.path.realpath(self.module.file))
        return _module_location(self.module.spec) if self.module.kind == "tools" else []

    async def start_first(self) -> WorkerProcess:
        """Start the pool's first worker (at host start-up or after a reload).

        Raises:
            WorkerStartError: see :meth:`WorkerProcess.start`.
        """
        worker = self._new_worker()
        if self.size < 2:
            await self._start(worker)
            return worker
        # Two at once (as fast as one on two cores): the first concurrent calls after
        # start-up or a reload then find two ready workers.
        second = self._new_worker()
        failed: WorkerStartError | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._start_spare, second, False)
            try:
                await self._start(worker)
            except WorkerStartError as exc:
                failed = exc  # raised below, outside the task group
                second.kill("its module did not load")
        if failed is not None:
            raise failed
        return worker

    def _new_worker(self) -> WorkerProcess:
        self._numbers += 1
        worker = WorkerProcess(self, self._numbers)
        worker.retiring = self.retired
        self.workers.append(worker)
        return worker

    async def _start(self, worker: WorkerProcess) -> None:
        try:
            if self.workers_owner.worker_start == "fork":
                worker.began = time.monotonic()
                worker.template = await self._ready_template()
            await worker.start(self.workers_owner.task_group)
        except WorkerStartError:
            if worker in self.workers:
                self.workers.remove(worker)
            raise

    async def _ready_template(self) -> WorkerProcess:
        """This generation's template, started first when there is none alive (callers
        starting workers at once share one start).

        Raises:
            WorkerStartError: it did not start.
        """
        template = self.template
        if template is None or not template.alive:
            template = self.template = WorkerProcess(self, 0)
            try:
                await template.start(self.workers_owner.task_group)
            except WorkerStartError:
                if self.template is template:
                    self.template = None
                raise
            return template
        if not template.ready.is_set():
            await template.ready.wait()
            if template.start_error is not None:
                raise WorkerStartError(str(template.start_error), import_failed=False)
        return template

    def kill_template(self, reason: str) -> None:
        """Kill this generation's template (its workers end with it)."""
        if self.template is not None:
            self.template.kill(reason)

    def worker_gone(self, worker: WorkerProcess) -> None:
        """Called when a worker's process has exited."""
        if worker.is_template:
            if self.template is worker:
                self.template = None
            return
        if worker in self.workers:
            self.workers.remove(worker)
        if self.retired and not self.workers:
            self.kill_template("its generation of workers has ended")
        if worker.retiring or worker.start_error is not None:
            return
        lived = time.monotonic() - worker.started_at
        if lived >= HEALTHY_SECONDS:
            self._deaths = 0
        self._deaths += 1
        pause = RESTART_BACKOFF[min(self._deaths - 1, len(RESTART_BACKOFF) - 1)]
        self._not_before = time.monotonic() + pause
        if self.workers_owner.closing:
            return
        what = (
            (worker.stop_reason and f"was stopped: {worker.stop_reason}")
            or (
                worker.memory_exceeded is not None
                and f"was killed: {memory_exceeded_message(worker.memory_exceeded)}"
            )
            or f"died ({describe_status(worker.returncode or 0, self.sandboxed)})"
        )
        log.warning("worker %s #%d %s", self.module.label, worker.number, what)
        if worker.stop_reason is None:
            # The host did not stop it: a crash (a signal, an exit, the memory limit).
            self.crashed(what)

    def crashed(self, what: str) -> None:
        """One of this module's workers crashed (``what`` says how); past the crash
        budget (:class:`~.health.CrashBudget`) the module is marked broken: its calls fail
        with a message naming it, said once in the log, and no worker is started again
        until the module changes (``--reload``) or the host restarts."""
        if not self.crashes.crashed() or self.unavailable is not None or self.retired:
            return
        self.unavailable = (
            f"The tools of {self.module.label} are unavailable: its worker process crashed"
            f" {self.crashes.describe()} (last: {what}); it is not restarted until the"
            " module changes (--reload) or the host restarts"
        )
        log.error("%s", self.unavailable)
        self.kill_template("its workers keep crashing")
        notify = self.workers_owner.notify
        if notify is not None:
            notify("error", self.unavailable)

    async def confirm(self, worker: WorkerProcess) -> bool:
        """Check an idle worker before it gets a call: not stopped (``/proc``), and
        answering a heartbeat within :data:`~.health.HEARTBEAT_TIMEOUT`; a worker that
        fails is killed (to be replaced). Concurrent callers share one check."""
        check = worker.check
        if check is not None:
            await check.done.wait()
            return check.healthy
        check = worker.check = health.Check()
        try:
            with anyio.CancelScope(shield=True):
                check.healthy = await self._heartbeat(worker)
        finally:
            worker.checked_at = time.monotonic()
            worker.check = None
            check.done.set()
        return check.healthy

    async def _heartbeat(self, worker: WorkerProcess) -> bool:
        pid = health.stopped([worker.pid, *worker._sandbox_pids])
        reason = None
        if pid is not None:
            reason = f"it was found stopped while idle (process {pid} in state T)"
        elif worker.session is not None and worker.alive:
            try:
                with anyio.fail_after(health.HEARTBEAT_TIMEOUT):
                    await worker.session.request(health.HEARTBEAT, {})
            except TimeoutError:
                reason = (
                    "it did not answer a heartbeat within"
                    f" {health.HEARTBEAT_TIMEOUT:g} s while idle"
                )
            except JsonRpcError:
                pass  # an answer all the same (or its death, seen below)
        if reason is None:
            return worker.alive
        log.warning("worker %s #%d: %s; replacing it", self.module.label, worker.number, reason)
        worker.kill(reason)
        return False

    def _choose(self) -> WorkerProcess | None:
        """:meth:`acquire`'s choice among the workers there are (None: start one)."""
        quick = self.typical is not None and self.typical < QUICK_CALL
        alive = [w for w in self.workers if w.alive and not w.unsettled]
        ready = [w for w in alive if w.ready.is_set()]
        idle = [w for w in ready if w.in_flight == 0]
        first = ready[0] if ready else None
        if quick and first is not None and _takes_quick_call(first):
            # Calls that take well under a millisecond: one worker answers a burst of
            # them faster than two that each wake up per call.
            return first
        if idle:
            return idle[0]
        # A worker that is starting and has nothing to do yet takes the call (it is
        # ready within a fraction of a second; a busy one may stay busy); else the
        # least busy ready one.
        starting = [w for w in alive if not w.ready.is_set() and w.in_flight == 0]
        if starting:
            return starting[0]
        if ready:
            return min(ready, key=lambda w: w.in_flight)
        return alive[0] if alive else None

    def pick_now(self) -> WorkerProcess | None:
        """The worker :meth:`acquire` would take, when it can take the call at once
        (its ``in_flight`` then counted); None when acquiring would mean waiting (a
        worker starting, or one to start) or the module is unavailable."""
        if self.unavailable is not None:
            return None
        head = self.quick_pick()
        if head is not None:
            return head
        pick = self._choose()
        if pick is None or not pick.ready.is_set() or _check_due(pick):
            return None
        pick.in_flight += 1
        self.keep_spare()
        return pick

    async def acquire(self) -> WorkerProcess:
        """A worker for one more request (its ``in_flight`` already counted).

        For a module whose calls typically take under :data:`QUICK_CALL`, the first ready
        worker while it has fewer than :data:`QUICK_BATCH` calls in flight. Otherwise an
        idle ready worker; else an idle worker still starting (waited for); else the
        least busy ready worker (a busy worker still runs the call, in a thread or beside
        its other coroutines). When no worker is alive, one is started and waited for,
        after the restart pause. Whenever a call takes the last idle worker, one more
        starts in the background while the pool is below its size, so the next
        concurrent call finds an idle one (CPU-bound calls then run in parallel).

        Raises:
            ToolError: the module is unavailable or no worker could start.
        """
        if self.unavailable is not None:
            raise ToolError(self.unavailable)
        pick = self.pick_now()
        if pick is not None:
            return pick
        pick = self._choose()  # a worker still starting or to be checked, or none
        if pick is not None:
            pick.in_flight += 1
            self.keep_spare()
            if not pick.ready.is_set():
                await pick.ready.wait()
                if pick.start_error is not None:
                    pick.in_flight -= 1
                    return await self.acquire()
            elif _check_due(pick, 1) and not await self.confirm(pick):
                pick.in_flight -= 1
                return await self.acquire()
            return pick
        pick = self._new_worker()
        pick.in_flight += 1
        try:
            wait = self._not_before - time.monotonic()
            if wait > 0:
                await anyio.sleep(wait)
            await self._start(pick)
        except WorkerStartError as exc:
            pick.in_flight -= 1
            if exc.import_failed:
                self.workers_owner.module_broken(self, exc)
                raise ToolError(self.unavailable or str(exc)) from None
            self.crashed(str(exc))
            raise ToolError(self.unavailable or f"{self.module.label}: {exc}") from None
        except BaseException:
            pick.in_flight -= 1
            pick.kill("the call that started it was cancelled")
            raise
        self.keep_spare()
        return pick

    def quick_pick(self) -> WorkerProcess | None:
        """The usual choice of :meth:`acquire`, made without building its lists: for a
        module of quick calls, the first worker when it is ready and takes one more
        (its ``in_flight`` then counted); None when that does not apply."""
        if self.typical is None or self.typical >= QUICK_CALL or not self.workers:
            return None
        if self.unavailable is not None:
            return None
        head = self.workers[0]
        if (
            head.alive
            and not head.unsettled
            and head.ready.is_set()
            and _takes_quick_call(head)
            and not _check_due(head)
        ):
            head.in_flight += 1
            self.keep_spare()
            return head
        return None

    def keep_spare(self) -> None:
        """Start one more worker in the background when none is idle (or starting) and
        the pool is below its size."""
        if self.retired or self.unavailable is not None or self.workers_owner.closing:
            return
        alive = [w for w in self.workers if w.alive and not w.unsettled]
        if len(alive) >= self.size or any(w.in_flight == 0 for w in alive):
            return
        worker = self._new_worker()
        self.workers_owner.spawn(self._start_spare, worker)

    async def _start_spare(self, worker: WorkerProcess, report: bool = True) -> None:
        wait = self._not_before - time.monotonic()
        if wait > 0:
            await anyio.sleep(wait)
        try:
            await self._start(worker)
        except WorkerStartError as exc:
            serving = any(w.alive and w.ready.is_set() for w in self.workers)
            if exc.import_failed and not serving and report:
                self.workers_owner.module_broken(self, exc)
            else:
                # The workers already running keep serving (a file changed under them
                # is reloaded, or reported, by --reload).
                log.warning("%s: a spare worker did not start: %s", self.module.label, exc)

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        ctx: ToolContext | None,
        tool_name: str,
        *,
        timeout: float | None = None,
    ) -> Any:
        """Send one request to a worker of this pool, forwarding the call's progress and
        log records to ``ctx``'s channel.

        Raises:
            ToolError: the worker died or was stopped meanwhile, or the module is
                unavailable; the message says which.
            JsonRpcError: the worker's own error answer.
        """
        worker = await self.acquire()
        return await self._finish(self._begin(worker, method, params, ctx, timeout), tool_name)

    def _begin(
        self,
        worker: WorkerProcess,
        method: str,
        params: dict[str, Any],
        ctx: ToolContext | None,
        timeout: float | None,
    ) -> _Flight:
        """Send ``method`` to ``worker`` (counted in its ``in_flight`` by
        :meth:`acquire`) now; a send that fails is kept for :meth:`_finish` to report."""
        owner = self.workers_owner
        ref = owner.live.add(ctx) if ctx is not None else 0
        params["ref"] = ref
        if ref:
            worker.refs.add(ref)
        flight = _Flight(self, worker, ref)
        try:
            assert worker.session is not None
            flight.outbound = worker.session.start_request(method, params, timeout=timeout)
        except JsonRpcError as exc:
            flight.error = exc
        except BaseException:
            self._end(flight)
            raise
        return flight

    async def _finish(self, flight: _Flight, tool_name: str, *, wait_stop: bool = True) -> Any:
        """Wait for the answer to a request :meth:`_begin` sent.

        Args:
            wait_stop: on timeout or cancellation, answer only once the handler has
                stopped (or its worker is gone, :meth:`WorkerProcess.settle`), as a
                handler in the host would: needed by a tool that changes files (its
                answer must not come while it may still write). False: answer at
                once and settle the worker in the background (it takes no new call
                meanwhile).

        Raises:
            _TimedOut: its deadline passed.
            ToolError: the worker died or was stopped meanwhile.
            JsonRpcError: the worker's own error answer.
        """
        worker = flight.worker
        abandoned: list[anyio.Event] = []
        try:
            if flight.error is not None:
                raise flight.error
            assert flight.outbound is not None
            return await flight.outbound.wait(abandoned.append)
        except RequestTimeout:
            if abandoned:
                if wait_stop:
                    await worker.settle(abandoned[0])
                else:
                    worker.settle_soon(abandoned[0])
            raise _TimedOut from None
        except anyio.get_cancelled_exc_class():
            if abandoned:
                if wait_stop:
                    await worker.settle(abandoned[0])
                else:
                    worker.settle_soon(abandoned[0])
            raise
        except JsonRpcError as exc:
            if exc.code != CONNECTION_CLOSED:
                raise
            what = await worker.death()
            raise ToolError(f'Tool "{tool_name}" failed: its worker process {what}') from None
        finally:
            self._end(flight)

    def _end(self, flight: _Flight) -> None:
        if flight.ended:
            return
        flight.ended = True
        worker = flight.worker
        worker.in_flight -= 1
        worker.last_done = time.monotonic()
        if flight.ref:
            self.workers_owner.live.remove(flight.ref)
            worker.refs.discard(flight.ref)
        if worker.retiring and worker.in_flight == 0:
            worker.close()

    def start_early(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext, timeout: float | None
    ) -> _Flight | None:
        """Send a call of tool ``name`` now when a worker can take it without waiting
        (:meth:`pick_now`); :meth:`call` takes it over through ``ctx``, or
        :meth:`release` gives it up. None when no worker can take it at once."""
        worker = self.pick_now()
        if worker is None:
            return None
        return self._begin(worker, "tools/call", _call_params(name, arguments, ctx), ctx, timeout)

    def release(self, flight: _Flight) -> None:
        """Give up an early call nobody took (its request was cancelled or closed before
        its handler ran): the worker is told to stop it, and is not sent new calls
        until it has (or is killed, as for any cancelled call)."""
        if flight.taken or flight.ended:
            return
        abandoned: list[anyio.Event] = []
        if flight.outbound is not None:
            flight.outbound.abandon(abandoned.append)
        if abandoned:
            self.workers_owner.spawn(flight.worker.settle, abandoned[0])
        self._end(flight)

    async def call(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext, *, mutates: bool = True
    ) -> WireResult:
        """Run one call of tool ``name`` in a worker, under ``ctx.timeout`` counted from
        the moment a worker is there; its wire result. A call :meth:`start_early` sent
        for this context is taken over. A timeout or cancellation is answered at its
        moment, unless the tool ``mutates`` files: then once its handler has stopped
        (at most :data:`STOP_GRACE` seconds later, when its worker is killed).

        Raises:
            ToolError: the worker died or was stopped, or the module is unavailable.
            ProtocolFailure: the worker could not encode the result (-32603).
        """
        began = time.monotonic()
        early: _Flight | None = ctx._early
        try:
            if early is not None:
                # Sent as its request was read, to the pool of that moment (a reload may
                # have replaced this one since): taken over, never sent again.
                ctx._early = None
                early.taken = True
                began = early.began
                result = await early.pool._finish(early, name, wait_stop=mutates)
            else:
                worker = await self.acquire()
                params = _call_params(name, arguments, ctx)
                flight = self._begin(worker, "tools/call", params, ctx, ctx.timeout)
                result = await self._finish(flight, name, wait_stop=mutates)
            took = time.monotonic() - began
            self.typical = took if self.typical is None else 0.8 * self.typical + 0.2 * took
        except _TimedOut:
            return WireResult(
                error_result(
                    f'Tool "{name}" timed out after {ctx.timeout:g} seconds and was cancelled'
                )
            )
        except JsonRpcError as exc:
            if exc.code == INTERNAL_ERROR:
                raise ProtocolFailure(exc.code, exc.message) from None
            raise ToolError(f'Tool "{name}" failed in its worker process: {exc.message}') from None
        if type(result) is not dict:
            raise ToolError(f'Tool "{name}" failed: its worker process answered {result!r}')
        return WireResult(result)

    def retire(self) -> None:
        """Stop using this pool's workers; each exits once its calls in flight finish."""
        self.retired = True
        for worker in list(self.workers):
            worker.retiring = True
            if worker.in_flight == 0:
                worker.close()
        if not self.workers:
            self.kill_template("its generation of workers has ended")


def _python_source(change: Any, path: str) -> bool:
    """watchfiles filter: Python sources only (no caches, no editor swap files)."""
    return path.endswith(".py") and "__pycache__" not in path


def remote_tool(pool: WorkerPool, description: dict[str, Any]) -> Tool:
    """The host's stand-in for one tool a worker serves: its definition as the module
    declared it, a handler that runs the call in the pool.

    Raises:
        ValueError: the worker's description is malformed.
    """
    d = description.get("definition")
    if not isinstance(d, dict) or not isinstance(d.get("name"), str):
        raise ValueError(f"malformed tool description from {pool.module.label}")
    name: str = d["name"]
    schema = d.get("inputSchema")
    if not isinstance(schema, dict):
        raise ValueError(f"tool {name!r} from {pool.module.label} has no input schema")
    mutates = description.get("mutates") or []
    timeout = description.get("timeout")
    mode = description.get("executionMode", "parallel")
    if (
        not isinstance(mutates, list)
        or not all(isinstance(m, str) for m in mutates)
        or not (timeout is None or (isinstance(timeout, (int, float)) and timeout > 0))
        or mode not in ("parallel", "sequential")
        or not isinstance(d.get("description", ""), str)
        or not (d.get("annotations") is None or isinstance(d.get("annotations"), dict))
        or not (d.get("outputSchema") is None or isinstance(d.get("outputSchema"), dict))
        or not (d.get("_meta") is None or isinstance(d.get("_meta"), dict))
        or not (d.get("title") is None or isinstance(d.get("title"), str))
    ):
        raise ValueError(f"malformed description of tool {name!r} from {pool.module.label}")

    async def handler(arguments: dict[str, Any], ctx: ToolContext) -> WireResult:
        return await pool.call(name, arguments, ctx, mutates=bool(mutates))

    def early_start(
        arguments: dict[str, Any], ctx: ToolContext, timeout: float | None
    ) -> _Flight | None:
        return pool.start_early(name, arguments, ctx, timeout)

    prepare: Callable[[Any], Awaitable[Any]] | None = None
    if description.get("prepareArguments"):

        async def prepare(arguments: Any) -> Any:
            try:
                out = await pool.request(
                    PREPARE, {"name": name, "arguments": arguments}, None, name
                )
            except JsonRpcError as exc:
                raise ToolError(exc.message) from None
            return out.get("arguments") if isinstance(out, dict) else None

    t = Tool(
        name=name,
        description=str(d.get("description", "")),
        input_schema=schema,
        handler=handler,
        is_async=True,
        # Checked here without the schema's regular expressions (the worker checks them):
        # a pattern the module chose must not be able to hold the host (ReDoS).
        validator=Arguments(ArgumentSchema(without_patterns(schema)), "schema", param="arguments"),
        context_param="ctx",
        output_schema=d.get("outputSchema"),
        annotations=d.get("annotations"),
        title=d.get("title"),
        timeout=timeout,
        mutates=tuple(mutates),
        execution_mode=mode,
        meta=d.get("_meta"),
        prepare_arguments=prepare,
        own_timeout=True,
        early_start=early_start,
    )
    t._definition = d
    return t


def remote_hook(pool: WorkerPool, info: dict[str, Any]) -> Callable[..., Awaitable[Any]]:
    """The host's stand-in for one hook of a worker's module (same kind, tools, name)."""
    index = info.get("index")
    kind = info.get("kind")
    tools = info.get("tools")
    if (
        type(index) is not int
        or kind not in ("before", "after")
        or not (
            tools is None or (isinstance(tools, list) and all(isinstance(t, str) for t in tools))
        )
        or not isinstance(info.get("name", ""), str)
    ):
        raise ValueError(f"malformed hook description from {pool.module.label}")

    async def run(call: IncomingCall, args: dict[str, Any], *rest: Any) -> Any:
        ctx: ToolContext = rest[-1]
        params: dict[str, Any] = {
            "hook": index,
            "call": {
                "id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "batchId": call.batch_id,
            },
            "args": args,
            "capabilities": ctx.client_capabilities,
        }
        if kind == "after":
            params["result"] = rest[0].to_wire()
        try:
            out = await pool.request(HOOK, params, ctx, call.name)
        except JsonRpcError as exc:
            raise ToolError(exc.message) from None
        out = out if isinstance(out, dict) else {}
        if "block" in out:
            reason = out["block"]
            return Block(reason if isinstance(reason, str) else None)
        if "arguments" in out:
            if type(out["arguments"]) is not dict:
                return _Unusable()
            if kind == "before" and out["arguments"] is not args and type(args) is dict:
                # The hook changed the arguments in place or returned new ones.
                args.clear()
                args.update(out["arguments"])
            return None
        if "unusable" in out:
            return type(str(out["unusable"]), (), {})()
        if "badContent" in out:
            return _BadPatch(str(out["badContent"]))
        if "patch" in out:
            patch = out["patch"]
            fields: dict[str, Any] = {}
            for key, field in (
                ("content", "content"),
                ("details", "details"),
                ("isError", "is_error"),
                ("terminate", "terminate"),
            ):
                if key in patch:
                    fields[field] = patch[key]
            return ResultPatch(**fields)
        return None

    run.__qualname__ = str(info.get("name", "hook"))
    mark = before_tool_call if kind == "before" else after_tool_call
    return mark(tools=None if tools is None else list(tools))(run)


class _Unusable:
    """What a worker's malformed hook answer becomes (the pipeline refuses it by type)."""


@dataclass(frozen=True)
class _BadPatch(ResultPatch):
    message: str = ""

    def apply(self, result: Any) -> Any:
        raise TypeError(self.message)


class Workers:
    """Every worker pool of one host, the calls in flight in them, and their tools.

    Args:
        registry: where the modules' stand-in tools and hooks are registered.
        root: the directory tools act in.
        sandbox: the host's sandbox (workers run in it when it is active).
        size: workers per module at most (``--workers``).
        max_threads: threads for synchronous handlers, per worker.
        max_message_size: largest message accepted from a worker, in bytes.
        log_level: the workers' stderr log threshold.
        notify: ``notify(level, text)`` sends a log record to the client (None: stderr only).
        host_closing: whether the host is shutting down (then a cancelled call's worker
            is waited for only briefly).
        client_backlogged: whether the client is behind in reading.
        start: how a worker starts (``--worker-start``): "spawn" (default), each as a
            process of its own in a sandbox of its own (bubblewrap, when active);
            "fork", forked from its module's template process (:mod:`.template`),
            sharing the template's sandbox with the module's other workers.

    Raises:
        ValueError: ``start`` is not "spawn" or "fork", or "fork" where it is not
            supported (:data:`FORK_SUPPORTED`).
    """

    def __init__(
        self,
        registry: Registry,
        root: os.PathLike[str] | str,
        sandbox: Sandbox | None,
        *,
        size: int,
        max_threads: int = 256,
        max_message_size: int = 64 * 1024 * 1024,
        log_level: str = "warning",
        notify: Callable[[str, str], None] | None = None,
        host_closing: Callable[[], bool] | None = None,
        client_backlogged: Callable[[], bool] | None = None,
        start: Literal["spawn", "fork"] = "spawn",
    ) -> None:
        if start not in ("spawn", "fork") or (start == "fork" and not FORK_SUPPORTED):
            raise ValueError(f"worker start {start!r} is not available here")
        self.worker_start: Literal["spawn", "fork"] = start
        self._host_closing = host_closing
        self._client_backlogged = client_backlogged
        self._watch_stop: anyio.Event | None = None
        self._reloading: dict[ModuleSpec, anyio.CancelScope] = {}
        self.registry = registry
        self.root = os.path.realpath(root)
        self.sandbox = sandbox
        self.size = size
        self.max_threads = max_threads
        self.max_message_size = max_message_size
        self.log_level = log_level
        self.notify = notify
        self.sys_path = list(sys.path)
        self.pools: list[WorkerPool] = []
        self.live = _LiveCalls()
        self.closing = False
        self._tg: TaskGroup | None = None

    def client_backlogged(self) -> bool:
        """Whether the client is behind in reading (then workers' progress and log
        records are dropped rather than queued)."""
        return self._client_backlogged is not None and self._client_backlogged()

    def host_closing(self) -> bool:
        """Whether the host (or these workers) are shutting down."""
        return self.closing or (self._host_closing is not None and self._host_closing())

    @property
    def task_group(self) -> TaskGroup:
        """The task group the workers' sessions run in (inside :meth:`running`)."""
        assert self._tg is not None, "Workers used outside running()"
        return self._tg

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Run ``fn(*args)`` in the workers' task group."""
        if self._tg is not None and not self.closing:
            self._tg.start_soon(fn, *args)

    @contextlib.asynccontextmanager
    async def running(self) -> Any:
        """Own the workers for the body of ``async with``; on exit every worker is told
        to finish and killed if it has not within a moment."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield self
            finally:
                self.closing = True
                if self._watch_stop is not None:
                    self._watch_stop.set()
                for pool in self.pools:
                    for worker in list(pool.workers):
                        worker.kill("the host is shutting down")
                    pool.kill_template("the host is shutting down")
                tg.cancel_scope.cancel()

    async def add_modules(self, modules: Sequence[ModuleSpec], *, strict: bool) -> None:
        """Start one worker per module (concurrently) and register their tools and hooks.

        Args:
            modules: the modules.
            strict: raise for a module that does not start (``--tools``); else log it and
                go on (entry points: one broken plugin never stops the host).

        Raises:
            WorkerStartError: (``strict``) the first module that did not start; its
                message names the module.
        """
        pools = [WorkerPool(self, m, self.size) for m in modules]
        failures: list[tuple[WorkerPool, WorkerStartError]] = []

        async def start(pool: WorkerPool) -> None:
            try:
                await pool.start_first()
            except WorkerStartError as exc:
                failures.append((pool, exc))

        async with anyio.create_task_group() as tg:
            for pool in pools:
                tg.start_soon(start, pool)
        failed = {id(p) for p, _ in failures}
        if failures and strict:
            pool, exc = failures[0]
            for p in pools:
                for w in p.workers:
                    w.kill("the host did not start")
                p.kill_template("the host did not start")
            detail = f"\n{exc.traceback.rstrip()}" if exc.traceback else ""
            raise WorkerStartError(
                f"{pool.module.label}: {exc}{detail}", import_failed=exc.import_failed
            )
        for pool, exc in failures:
            log.error("%s failed to load in its worker process: %s", pool.module.label, exc)
        for pool in pools:
            if id(pool) in failed:
                continue
            try:
                self.register(pool, pool.workers[0].info)
            except Exception as exc:  # a duplicate name, or a malformed answer
                for p in pools:
                    for w in p.workers if (strict or p is pool) else ():
                        w.kill("its tools could not be registered")
                    if strict or p is pool:
                        p.kill_template("its tools could not be registered")
                if strict:
                    raise WorkerStartError(
                        f"{pool.module.label}: {exc}", import_failed=False
                    ) from None
                log.error("%s: %s", pool.module.label, exc)
                continue
            self.pools.append(pool)

    def register(self, pool: WorkerPool, info: dict[str, Any]) -> None:
        """Register the tools and hooks a worker of ``pool`` reported.

        Raises:
            ToolDefinitionError: a tool name is taken already.
            ValueError: the worker's answer is malformed.
        """
        self._install(pool, info, replacing=None)

    def _install(
        self, pool: WorkerPool, info: dict[str, Any], replacing: WorkerPool | None
    ) -> None:
        """Register ``pool``'s tools and hooks (from its first worker's ``initialize``
        answer) in one registry change, in place of ``replacing``'s when given.

        Raises:
            ToolDefinitionError: a tool name is taken already.
            ValueError: the worker's answer is malformed.
        """
        tools = [remote_tool(pool, d) for d in info.get("tools") or []]
        hooks = [remote_hook(pool, h) for h in info.get("hooks") or []]
        self.registry.swap(
            list(replacing.tools) if replacing is not None else [],
            tools,
            remove_hooks=replacing.hooks if replacing is not None else (),
            add_hooks=hooks,
        )
        pool.tools = {t.name: t for t in tools}
        pool.hooks = hooks
        pool.watch_paths = pool.own_paths()

    # ------------------------------------------------------------------ --reload

    async def watch(self) -> None:
        """Reload a module whenever one of its files changes (``--reload``); runs until
        cancelled. Changes are noticed within about 100 ms (watchfiles)."""
        import watchfiles

        while not self.closing:
            paths = {p for pool in self.pools for p in pool.watch_paths}
            # Watch directories: an editor that saves by renaming replaces the file.
            dirs = sorted({p if os.path.isdir(p) else os.path.dirname(p) for p in paths})
            dirs = [d for d in dirs if os.path.isdir(d)]
            if not dirs:
                return
            restart = anyio.Event()
            self._watch_stop = restart
            async for changes in watchfiles.awatch(
                *dirs,
                watch_filter=_python_source,
                debounce=50,
                step=20,
                stop_event=restart,
            ):
                changed = {os.path.realpath(path) for _, path in changes}
                for pool in list(self.pools):
                    if any(path_under(c, w) for c in changed for w in pool.watch_paths):
                        self._schedule_reload(pool.module)

    def _schedule_reload(self, module: ModuleSpec) -> None:
        """Reload ``module`` in the background; the newest save wins: a reload of it
        still loading is cancelled (its workers killed), so generations are installed in
        the order of the saves and a slow one never holds a later one."""
        pending = self._reloading.pop(module, None)
        if pending is not None:
            pending.cancel()
        scope = anyio.CancelScope()
        self._reloading[module] = scope
        self.spawn(self._reload_in, module, scope)

    async def _reload_in(self, module: ModuleSpec, scope: anyio.CancelScope) -> None:
        pool = self._current(module)
        before = list(pool.watch_paths) if pool is not None else []
        with scope:
            if pool is not None:
                await self.reload(pool)
        if self._reloading.get(module) is scope:
            del self._reloading[module]
        current = self._current(module)
        if current is not None and current.watch_paths != before and self._watch_stop:
            self._watch_stop.set()  # watch the new generation's paths

    def _current(self, module: ModuleSpec) -> WorkerPool | None:
        return next((p for p in self.pools if p.module == module), None)

    async def reload(self, pool: WorkerPool) -> bool:
        """Load ``pool``'s module again in a new generation of workers and swap its tools
        in; the old workers finish their calls in flight, then exit. A module that no
        longer loads leaves the old generation serving, said in a log record.

        Returns:
            Whether the new generation took over.
        """
        new = WorkerPool(self, pool.module, self.size)
        label = pool.module.label
        try:
            try:
                with anyio.fail_after(RELOAD_TIMEOUT):
                    await new.start_first()
            except TimeoutError:
                raise WorkerStartError(
                    f"its module did not load within {RELOAD_TIMEOUT:g} s (an import that"
                    " hangs?); its worker process was killed",
                    import_failed=True,
                ) from None
            info = new.workers[0].info
            current = self._current(pool.module) or pool
            if not info.get("tools") and current.tools:
                # An empty save (a common moment in an editor) is not a module without
                # tools: one that had tools keeps its previous generation.
                raise WorkerStartError(
                    "the module defines no tools now (an empty or unfinished save?); save"
                    " it with its tools, or restart the host to serve it without any",
                    import_failed=True,
                )
            self._install(new, info, replacing=current)
            pool = current
        except BaseException as exc:
            for worker in list(new.workers):
                worker.kill("its module failed to reload")
            new.kill_template("its module failed to reload")
            if not isinstance(exc, Exception):
                raise  # cancelled by a newer save (or the host closing)
            # a malformed answer must never end the host
            detail = getattr(exc, "traceback", "")
            text = f"Reloading {label} failed; the previous version keeps serving: {exc}"
            log.error("%s%s", text, f"\n{detail}" if detail else "")
            if self.notify is not None:
                self.notify("error", text)
            return False
        self.pools[self.pools.index(pool)] = new
        pool.retire()
        log.info("reloaded %s: %d tools", label, len(new.tools))
        if self.notify is not None:
            self.notify("info", f"Reloaded {label}: {len(new.tools)} tools")
        return True

    def resync(self, pool: WorkerPool, descriptions: list[Any]) -> None:
        """A worker of ``pool`` reports the module's tools changed at run time (its
        ``register`` added or removed some): make the host's stand-ins match. Each worker
        has its own registry, so a tool added in one exists in that worker only
        (README "Where your tool runs")."""
        if self._current(pool.module) is not pool:
            return
        try:
            tools = [remote_tool(pool, d) for d in descriptions if isinstance(d, dict)]
            self.registry.swap(list(pool.tools), tools)
        except Exception as exc:  # a malformed answer must never end the host
            log.error("%s changed its tools wrongly: %s", pool.module.label, exc)
            return
        pool.tools = {t.name: t for t in tools}

    def module_broken(self, pool: WorkerPool, exc: WorkerStartError) -> None:
        """A restarted worker's module no longer imports: say so once, fail its calls."""
        first = pool.unavailable is None
        pool.unavailable = (
            f"The tools of {pool.module.label} are unavailable: the module failed to import"
            f" in a new worker process: {exc}"
        )
        pool.kill_template("its module no longer imports")
        if first:
            log.error("%s%s", pool.unavailable, f"\n{exc.traceback}" if exc.traceback else "")
            if self.notify is not None:
                self.notify("error", pool.unavailable)

    async def answer_ask(self, params: Any, rctx: RequestContext) -> Any:
        """A worker's tool asks the client (:data:`~.workerwire.ASK`)."""
        ref = params.get("ref") if type(params) is dict else None
        ctx = self.live.contexts.get(ref) if type(ref) is int else None
        if ctx is None:
            raise JsonRpcError(TOOL_ERROR, "the call that asked has ended")
        method = params.get("method")
        ask_params = params.get("params")
        key = params.get("key")
        if not isinstance(method, str) or not isinstance(key, str) or type(ask_params) is not dict:
            raise JsonRpcError(TOOL_ERROR, "malformed question from a worker process")
        try:
            return await ctx.channel.ask(method, ask_params, key)
        except InputNeeded:
            raise JsonRpcError(INPUT_NEEDED, "input required") from None
        except (ToolError, KeyError) as exc:
            raise JsonRpcError(TOOL_ERROR, str(exc)) from None

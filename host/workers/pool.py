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
import logging
import os
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any, Literal, Protocol, cast

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from toolwire.errors import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    JsonRpcError,
    RequestTimeout,
)
from toolwire.session import RequestContext

from ..sandbox.bubblewrap import Sandbox, memory_exceeded_message
from ..tools.context import ToolContext
from ..tools.definition import Tool
from ..tools.loading import ENTRY_POINT_GROUP
from ..tools.results import ProtocolFailure, ToolError, WireResult, error_result
from . import health
from .process import (
    START_TIMEOUT,
    STOP_GRACE,
    LiveCalls,
    ModuleSpec,
    WorkerProcess,
    WorkerSettings,
    WorkerStartError,
    _call_params,
    _check_due,
    _Flight,
    _takes_quick_call,
    _TimedOut,
    describe_status,
)
from .remote import (
    _module_location,
    importable_beside,
)

__all__ = [
    "RESTART_BACKOFF",
    "START_TIMEOUT",
    "STOP_GRACE",
    "ModuleSpec",
    "PoolOwner",
    "WorkerPool",
    "WorkerStartError",
]

log = logging.getLogger("toolwire.workers")


RESTART_BACKOFF = (0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
"""Pause before starting a worker after 0, 1, 2, ... deaths in a row (seconds)."""

QUICK_CALL = 0.001
"""Calls of a module that typically take less than this (seconds) go to its first worker
while it has fewer than :data:`QUICK_BATCH` in flight (:meth:`WorkerPool.acquire`)."""


RELOAD_TIMEOUT = 10.0
"""Seconds a new generation's first worker may take to load its module (``--reload``) by
default (``[workers] reload_timeout``): past it the worker is killed and the previous
generation keeps serving."""

HEALTHY_SECONDS = 10.0
"""A worker that lived this long resets the count of deaths in a row."""

FORK_SUPPORTED = sys.platform.startswith("linux")
"""Whether ``start="fork"`` (:class:`~.manager.Workers`) is available here: a pool forks its
workers from a template process (:mod:`.template`) only on Linux (it finds a forked
worker's pid in ``/proc`` and watches it by pidfd)."""


class PoolOwner(Protocol):
    """What a :class:`WorkerPool` needs of the host's workers as a whole (the
    :class:`~.manager.Workers` that made it): the settings every worker shares, the
    registry of calls in flight, the task group, and the way back to the client. This
    module never imports :mod:`.manager`, which imports it."""

    root: str
    sandbox: Sandbox | None
    sys_path: list[str]
    max_threads: int
    max_message_size: int
    log_level: str
    worker_start: Literal["spawn", "fork"]
    """How workers start; a pool whose template cannot fork turns it to "spawn"."""
    live: LiveCalls
    closing: bool
    notify: Callable[[str, str], None] | None

    @property
    def task_group(self) -> TaskGroup:
        """The task group the workers' sessions run in."""
        ...

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> bool:
        """Run ``fn(*args)`` in the workers' task group; False when closing."""
        ...

    def host_closing(self) -> bool:
        """Whether the host (or its workers) are shutting down."""
        ...

    def client_backlogged(self) -> bool:
        """Whether the client is behind in reading."""
        ...

    async def answer_ask(self, params: Any, rctx: RequestContext) -> Any:
        """Put a worker's question to the client."""
        ...

    def resync(self, pool: WorkerPool, descriptions: list[Any]) -> None:
        """A worker of ``pool`` reports the module's tools changed at run time."""
        ...

    def module_broken(self, pool: WorkerPool, exc: WorkerStartError) -> None:
        """A restarted worker's module no longer imports."""
        ...


class WorkerPool:
    """The workers of one tool module: started on demand up to ``size``, restarted
    after a death with a growing pause.

    Attributes:
        module: the module served.
        size: at most this many workers at once.
        tools: the stand-in tools registered for the module (by name).
        unavailable: why the module cannot serve calls now (it failed to import).
    """

    def __init__(self, owner: PoolOwner, module: ModuleSpec, size: int) -> None:
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
        self.settings = WorkerSettings(
            module=module,
            root=owner.root,
            sys_path=tuple(owner.sys_path),
            max_threads=owner.max_threads,
            log_level=owner.log_level,
            max_message_size=owner.max_message_size,
            sandbox=owner.sandbox,
            sandboxed=self.sandboxed,
            source=self.source,
            start=owner.worker_start,
        )
        """What this generation's workers start and run with, fixed (built once here)."""
        self.typical: float | None = None
        """A moving average of how long this module's calls take in a worker (seconds)."""
        self.crashes = health.CrashBudget()
        self.template: WorkerProcess | None = None
        """The process this generation's workers are forked from (:mod:`.template`),
        once started; replaced when it dies."""
        self.cache_key: str | None = None
        """This generation's key in the definition cache (:mod:`.listcache`), taken
        before its first worker started; None when not cached."""

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

    async def start_first(
        self, first_ready: Callable[[WorkerProcess], None] | None = None
    ) -> WorkerProcess:
        """Start the pool's first worker (at host start-up or after a reload).

        Args:
            first_ready: called once the first worker has answered ``initialize``
                (before the second of a pool of two or more has).

        Raises:
            WorkerStartError: see :meth:`WorkerProcess.start`.
        """
        worker = self._new_worker()
        if self.size < 2:
            await self._start(worker)
            if first_ready is not None:
                first_ready(worker)
            return worker
        # Two at once (as fast as one on two cores): the first concurrent calls after
        # start-up or a reload then find two ready workers.
        second = self._new_worker()
        failed: WorkerStartError | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._start_spare, second, False)
            try:
                await self._start(worker)
                if first_ready is not None:
                    first_ready(worker)
            except WorkerStartError as exc:
                failed = exc  # raised below, outside the task group
                # The first worker's failure is the one reported; the second is ended
                # for it, quietly (retiring: its end is not a crash to warn about).
                second.retiring = True
                second.kill("its module did not load")
        if failed is not None:
            raise failed
        return worker

    def _new_worker(self) -> WorkerProcess:
        self._numbers += 1
        worker = WorkerProcess(self, self.settings, self._numbers)
        worker.retiring = self.retired
        self.workers.append(worker)
        return worker

    async def _start(self, worker: WorkerProcess) -> None:
        try:
            if self.settings.start == "fork":
                worker.began = time.monotonic()
                try:
                    worker.template = await self._ready_template()
                except WorkerStartError as exc:
                    if not self.sandboxed or exc.import_failed:
                        raise
                    self._fall_back_to_spawn(exc)
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
            template = self.template = WorkerProcess(self, self.settings, 0)
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

    def _fall_back_to_spawn(self, exc: WorkerStartError) -> None:
        """A template that cannot give its workers a sandbox each here (the kernel or
        bubblewrap refuses what :mod:`toolwire.host.sandbox.linux.nsfork` needs: it checks at
        its start) makes this generation's later workers and every later generation's
        start from scratch."""
        if self.settings.start != "spawn":
            import dataclasses

            self.settings = dataclasses.replace(self.settings, start="spawn")
        if self.workers_owner.worker_start != "spawn":
            log.warning(
                "workers cannot be forked with a sandbox each here (%s); they start "
                "from scratch instead (--worker-start spawn)",
                exc,
            )
            self.workers_owner.worker_start = "spawn"

    def kill_template(self, reason: str) -> None:
        """Kill this generation's template (its workers end with it)."""
        if self.template is not None:
            self.template.kill(reason)

    # ------------------------------------------------ what its workers call (WorkerOwner)

    def call_context(self, ref: int) -> ToolContext | None:
        """The context of the call in flight that ``ref`` names (None once it ended)."""
        return self.workers_owner.live.contexts.get(ref)

    async def answer_ask(self, params: Any, rctx: RequestContext) -> Any:
        """A worker's tool asks the client (:meth:`PoolOwner.answer_ask`)."""
        return await self.workers_owner.answer_ask(params, rctx)

    def tools_changed(self, descriptions: list[Any]) -> None:
        """A worker reports the module's tools changed (:meth:`PoolOwner.resync`)."""
        self.workers_owner.resync(self, descriptions)

    def notify(self, level: str, text: str) -> None:
        """Send ``text`` to the client as a log record of ``level`` (nothing without one)."""
        notify = self.workers_owner.notify
        if notify is not None:
            notify(level, text)

    def client_backlogged(self) -> bool:
        """Whether the client is behind in reading (:meth:`PoolOwner.client_backlogged`)."""
        return self.workers_owner.client_backlogged()

    def host_closing(self) -> bool:
        """Whether the host or its workers are shutting down."""
        return self.workers_owner.host_closing()

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> bool:
        """Run ``fn(*args)`` in the workers' task group (:meth:`PoolOwner.spawn`)."""
        return self.workers_owner.spawn(fn, *args)

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
        self.notify("error", self.unavailable)

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
        pid = health.stopped(worker.process_pids())
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
        """:meth:`acquire`'s choice among the workers there are (None: start one).

        In order: for a module of quick calls, the first ready worker while it takes one
        more; else the first idle ready worker; else the first worker still starting with
        nothing to do; else the least busy ready one (the first of those); else the first
        alive. Made in one pass over the workers, without building lists: it runs for
        every call of a module whose calls are not quick."""
        quick = self.typical is not None and self.typical < QUICK_CALL
        seen_ready = False
        starting: WorkerProcess | None = None
        least: WorkerProcess | None = None
        first: WorkerProcess | None = None
        for w in self.workers:
            if w.unsettled or not w.alive:
                continue
            if first is None:
                first = w
            if w.ready.is_set():
                if not seen_ready:
                    seen_ready = True
                    if quick and _takes_quick_call(w):
                        # Calls that take well under a millisecond: one worker answers a
                        # burst of them faster than two that each wake up per call.
                        return w
                if w.in_flight == 0:
                    return w  # the first idle ready worker
                if least is None or w.in_flight < least.in_flight:
                    least = w
            elif starting is None and w.in_flight == 0:
                starting = w
        # A worker that is starting and has nothing to do yet takes the call (it is
        # ready within a fraction of a second; a busy one may stay busy); else the
        # least busy ready one.
        if starting is not None:
            return starting
        if least is not None:
            return least
        return first

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
        alive = 0
        for w in self.workers:
            if w.alive and not w.unsettled:
                if w.in_flight == 0:
                    return  # one is idle (or starting with nothing to do)
                alive += 1
        if alive >= self.size:
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
            if worker.retiring or (exc.import_failed and not report):
                # Ended by the pool on purpose (start_first's second, a reload), or
                # start_first's second, whose import failure the first one reports
                # (a module that fails in one fails in both; a later spare says so if not).
                return
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
        if ctx is not None:
            ctx.on_cancel = flight.stopping
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
        if flight.stopped:
            worker.unsettled -= 1  # held by stopping() until what settles it took over
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
            flight.worker.settle_soon(abandoned[0])
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
        # Only this package starts early calls: what ctx.early holds is a _Flight.
        early = cast("_Flight | None", ctx.early)
        try:
            if early is not None:
                # Sent as its request was read, to the pool of that moment (a reload may
                # have replaced this one since): taken over, never sent again.
                ctx.early = None
                early.taken = True
                began = early.began
                pool = cast(WorkerPool, early.pool)  # a flight's pool is a WorkerPool
                result = await pool._finish(early, name, wait_stop=mutates)
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

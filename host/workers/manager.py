"""All the worker pools of one host (:class:`Workers`): the modules' pools, the calls in
flight in them (by the ``ref`` a worker's request names), reloads of a module's files
(watchfiles), the definition cache, and the asks and tool-list changes workers send up.

One :class:`~.pool.WorkerPool` per module does the rest (start, choice, restart, calls);
a pool sees this class only through :class:`~.pool.PoolOwner`. Imports :mod:`.pool`,
which never imports this module.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Literal

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from toolwire.errors import (
    JsonRpcError,
)
from toolwire.session import RequestContext

from ..sandbox.bubblewrap import Sandbox, path_under
from ..tools.registry import Registry
from ..tools.results import ToolError
from ..tools.rounds import InputNeeded
from .listcache import DefinitionCache
from .pool import FORK_SUPPORTED, RELOAD_TIMEOUT, WorkerPool
from .process import (
    LiveCalls,
    ModuleSpec,
    WorkerProcess,
    WorkerStartError,
)
from .remote import (
    remote_hook,
    remote_tool,
)
from .workerwire import (
    INPUT_NEEDED,
    TOOL_ERROR,
)

__all__ = ["Workers"]

log = logging.getLogger("toolwire.workers")


def _python_source(change: Any, path: str) -> bool:
    """watchfiles filter: Python sources only (no caches, no editor swap files)."""
    return path.endswith(".py") and "__pycache__" not in path


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
        start: how a worker starts (``--worker-start``): "spawn" (this class's
            default), each as a process of its own in a sandbox of its own (bubblewrap,
            when active); "fork", forked from its module's template process
            (:mod:`.template`), each in a sandbox of its own too when the sandbox is active
            (:mod:`toolwire.host.sandbox.linux.nsfork`). A template that cannot make those (it
            checks at its start) turns the host's later starts to "spawn", logged.
        list_cache: the definition cache (:mod:`.listcache`; None: off): a module
            found there has its tools registered at once, before its first worker is up,
            and checked against that worker's answer when it comes.
        reload_timeout: seconds a new generation's first worker may take to load its
            module on a reload (:data:`~.pool.RELOAD_TIMEOUT` by default).

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
        list_cache: DefinitionCache | None = None,
        reload_timeout: float = RELOAD_TIMEOUT,
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
        self.live = LiveCalls()
        self.closing = False
        self._tg: TaskGroup | None = None
        self.list_cache = list_cache
        self.reload_timeout = reload_timeout
        self._unconfirmed: set[WorkerPool] = set()
        """Pools whose tools were registered from the definition cache and whose first
        worker has not answered yet (:meth:`_confirm_cached`)."""

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

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> bool:
        """Run ``fn(*args)`` in the workers' task group; False (not run) outside
        :meth:`running` or once closing."""
        if self._tg is None or self.closing:
            return False
        self._tg.start_soon(fn, *args)
        return True

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
        cache = self.list_cache
        if cache is not None:
            waiting = []
            for pool in pools:
                pool.cache_key = cache.key(pool)
                cached = cache.load(pool.cache_key) if pool.cache_key is not None else None
                if cached is not None and self._register_cached(pool, *cached):
                    continue
                waiting.append(pool)
            pools = waiting
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
            self._cache_soon(pool, pool.workers[0].info)

    # ------------------------------------------------------------------ definition cache

    def _register_cached(self, pool: WorkerPool, cached: dict[str, Any], entry: bytes) -> bool:
        """Register ``pool``'s tools and hooks from its definition-cache entry (``cached``,
        decoded from the bytes ``entry``), mark them
        provisional (:attr:`Registry.pending`) and start its first worker in the
        background to confirm them (:meth:`_confirm_cached`). False when the entry
        cannot be registered (malformed, or a name taken): the module then starts as
        without a cache."""
        try:
            self._install(pool, cached, replacing=None)
        except Exception as exc:
            log.info("%s: its cached definitions are not used: %s", pool.module.label, exc)
            return False
        self.pools.append(pool)
        self._unconfirmed.add(pool)
        if self.registry.pending is None:
            self.registry.pending = anyio.Event()
        log.info(
            "%s: %d tools listed from the definition cache", pool.module.label, len(pool.tools)
        )
        self.spawn(self._confirm_cached, pool, entry)
        return True

    async def _confirm_cached(self, pool: WorkerPool, entry: bytes) -> None:
        """Start the first worker of a pool registered from the cache and check its answer
        against the entry: the same changes nothing; a different one replaces the
        stand-ins (one registry change: ``notifications/tools/list_changed``) and is
        stored; a module that does not load loses its tools (the same notification) and
        its entry. Then the pool is no longer provisional. The answer is compared by its
        encoding (:func:`~.listcache.encode_entry`: the same answer, the same bytes), which
        also proves every input schema the host sends from the entry as it is."""
        from .listcache import encode_entry

        def check(worker: WorkerProcess) -> None:
            info = worker.info
            assert pool.cache_key is not None
            if self._current(pool.module) is not pool:
                pass  # a --reload replaced this generation meanwhile: its tools are gone
            elif encode_entry(pool.cache_key, info) == entry:
                log.info("%s: its cached definitions are confirmed", pool.module.label)
            else:
                log.info(
                    "%s: its cached definitions differ from its worker's; replaced",
                    pool.module.label,
                )
                try:
                    self._install(pool, info, replacing=pool)
                except Exception as exc:  # a duplicate name, or a malformed answer
                    self._withdraw(pool, f"its tools could not be registered: {exc}")
                    return
                self._cache_soon(pool, info)
            self._confirmed(pool)

        try:
            await pool.start_first(check)
        except WorkerStartError as exc:
            if pool in self._unconfirmed and self._current(pool.module) is pool:
                detail = f"\n{exc.traceback.rstrip()}" if exc.traceback else ""
                self._withdraw(pool, f"it did not load in its worker process: {exc}{detail}")
        finally:
            self._confirmed(pool)

    def _withdraw(self, pool: WorkerPool, why: str) -> None:
        """Remove the tools and hooks a pool registered from the cache (its worker did not
        confirm them), drop its entry and make it unavailable, said once."""
        if self.list_cache is not None and pool.cache_key is not None:
            self.list_cache.drop(pool.cache_key)
        self.registry.swap(list(pool.tools), [], remove_hooks=pool.hooks)
        pool.tools = {}
        pool.hooks = []
        for worker in list(pool.workers):
            worker.kill("its module's tools were withdrawn")
        pool.unavailable = f"The tools of {pool.module.label} are unavailable: {why}"
        pool.kill_template("its module did not load")
        log.error("%s", pool.unavailable)
        if self.notify is not None:
            self.notify("error", pool.unavailable)
        self._confirmed(pool)

    def _confirmed(self, pool: WorkerPool) -> None:
        """``pool`` is no longer provisional; the last one releases the calls waiting."""
        self._unconfirmed.discard(pool)
        pending = self.registry.pending
        if not self._unconfirmed and pending is not None:
            self.registry.pending = None
            pending.set()

    def _cache_soon(self, pool: WorkerPool, info: dict[str, Any]) -> None:
        """Store ``info``, the answer of ``pool``'s first worker, in the definition cache
        (in a thread, off the event loop), when the module's key is still the one taken
        before that worker started: a sibling changed meanwhile may or may not be what
        the worker imported, so nothing is stored then."""
        cache, key = self.list_cache, pool.cache_key
        if cache is None or key is None:
            return

        def store() -> None:
            from .listcache import encode_entry

            data = encode_entry(key, info)
            if data is not None and cache.key(pool) == key:
                cache.store(key, data)

        async def run() -> None:
            await anyio.to_thread.run_sync(store)

        self.spawn(run)

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
        if self.list_cache is not None:
            new.cache_key = self.list_cache.key(new)
        label = pool.module.label
        try:
            try:
                with anyio.fail_after(self.reload_timeout):
                    await new.start_first()
            except TimeoutError:
                raise WorkerStartError(
                    f"its module did not load within {self.reload_timeout:g} s (an import"
                    " that hangs? a slow one needs [workers] reload_timeout); its worker"
                    " process was killed",
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
        self._cache_soon(new, new.workers[0].info)
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

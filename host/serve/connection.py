"""The host serving one connection: :func:`run_host`, embeddable in a process of your own.

``run_host`` reads requests from one descriptor and writes responses to another until
end-of-file, ``exit`` or ``shutdown`` completes. The process around it in ``toolwire
serve`` — options, taking over stdin/stdout before any tool module is imported, the
sandbox probe, the watchdog that ends the process when a tool will not stop, the exit
codes — is :mod:`toolwire.host.serve.process`, which hands ``run_host`` a
:class:`ProcessGuard`. The method handlers are :mod:`toolwire.host.methods.server`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from toolwire.session import Session
from toolwire.streams import FdReceiveStream, FdSendStream

from ..builtins import load_builtins
from ..calls.approval import ApprovalPolicy
from ..calls.executor import Executor
from ..methods.server import HostServer
from ..sandbox.bubblewrap import Sandbox
from ..sandbox.env import ExecEnv
from ..sandbox.inputs import HostInputs, activate, deactivate, source_only_imports
from ..sandbox.probe import resolve_sandbox
from ..tools.definition import ToolDefinitionError
from ..tools.loading import entry_point_names, load_entry_points, load_tools
from ..tools.registry import Registry
from ..workers.listcache import DefinitionCache
from ..workers.manager import Workers
from ..workers.pool import ModuleSpec, WorkerStartError
from .inputs_collect import check_configured_bwrap, collect
from .options import HostConfig, StartupError

__all__ = [
    "HostConfig",
    "ProcessGuard",
    "StartupError",
    "build_registry",
    "describe",
    "run_host",
    "serve_connection",
]

log = logging.getLogger("toolwire.host")


class ProcessGuard(Protocol):
    """What owns the process around :func:`run_host` (``toolwire serve``'s is in
    :mod:`toolwire.host.serve.process`): it takes over the signals and makes sure the process
    ends once the connection starts closing, even when a tool will not stop."""

    def watch(
        self,
        close: Callable[[], None],
        seconds_to_exit: Callable[[], float],
        exit_code: Callable[[], int],
    ) -> None:
        """Called once, in the event loop's thread, when serving starts.

        Args:
            close: starts closing the connection; safe to call from any thread and from
                a signal handler.
            seconds_to_exit: seconds the host still needs for answers it owes after
                ``exit`` (protocol.md §3.4); 0 when it owes none.
            exit_code: the process exit code as things stand (0, or 1 for an LSP
                ``exit`` without ``shutdown``).
        """

    def closing(self) -> None:
        """The connection has started closing (EOF, ``exit``, a signal)."""


def build_registry(config: HostConfig) -> Registry:
    """A registry with the built-ins (unless disabled), entry points and ``--tools``.

    With ``config.isolation == "process"`` only the built-ins: :func:`run_host` starts
    the worker processes that serve the modules' tools.

    Raises:
        StartupError: a ``--tools`` file or module is missing or declares a tool wrongly.
        Exception: whatever a tool module raises while it is imported (its traceback is
            what its author needs).
    """
    registry = Registry()
    if config.builtins:
        load_builtins(registry)
    if config.isolation == "process":
        return registry
    source_only_imports()  # tool modules imported here: from source, never a cache
    if config.entry_points:
        load_entry_points(registry)
    for spec in config.tools:
        try:
            load_tools(registry, spec)
        except ToolDefinitionError as exc:
            raise StartupError(f"toolwire serve: --tools {spec}: {exc}") from None
        except ImportError as exc:
            # A missing file or module is a usage error; an import failing *inside* the
            # module keeps its traceback (logged by main), which is what its author needs.
            name = exc.name if isinstance(exc, ModuleNotFoundError) else None
            missing = name is not None and (spec == name or spec.startswith(name + "."))
            if missing or str(exc).startswith("tool file not found"):
                hint = _not_importable_hint(spec, config.root) if missing else ""
                raise StartupError(f"toolwire serve: --tools {spec}: {exc}{hint}") from None
            raise
    return registry


def _not_importable_hint(spec: str, root: Path) -> str:
    """A hint when a ``--tools`` module name exists as a file only in the root or the
    working directory, which the host never imports from (:mod:`.importpath`)."""
    top = spec.split(".", 1)[0]
    for base in {Path.cwd(), root}:
        if (base / top).is_dir() or (base / f"{top}.py").is_file():
            return (
                f" ({top} is in {base}, which is not on the host's import path so that"
                " the model cannot plant modules there: give the file's path, e.g."
                f" --tools {spec.replace('.', '/')}.py, or install the package)"
            )
    return ""


def describe(config: HostConfig, env: ExecEnv, inputs: HostInputs | None = None) -> str:
    """The ``instructions`` text sent in ``initialize`` (with ``inputs``: also the
    sentence naming the host inputs inside the root, :meth:`HostInputs.notice`)."""
    text = (
        f"Tools run in a separate host process and act inside the directory {env.root}. "
        "Relative paths are resolved against it; paths outside it are refused."
    )
    if env.sandbox is not None:
        text += " " + env.sandbox.describe()
    if inputs is not None and (notice := inputs.notice(env.root)):
        text += " " + notice
    return text


async def run_host(
    config: HostConfig,
    read_fd: int,
    write_fd: int,
    registry: Registry | None = None,
    *,
    sandbox: Sandbox | None = None,
    guard: ProcessGuard | None = None,
    inputs: HostInputs | None = None,
) -> int:
    """Serve one connection on the given descriptors until EOF, ``exit`` or a signal.

    The same as :func:`serve_connection` on :class:`~toolwire.streams.FdReceiveStream`
    (``read_fd``: a pipe, a socket, a file) and :class:`~toolwire.streams.FdSendStream`
    (``write_fd``); the other arguments, the result and the errors are that function's.
    """
    return await serve_connection(
        config,
        FdReceiveStream(read_fd),
        FdSendStream(write_fd),
        registry,
        sandbox=sandbox,
        guard=guard,
        inputs=inputs,
    )


async def serve_connection(
    config: HostConfig,
    receive: ByteReceiveStream,
    send: ByteSendStream,
    registry: Registry | None = None,
    *,
    sandbox: Sandbox | None = None,
    guard: ProcessGuard | None = None,
    inputs: HostInputs | None = None,
) -> int:
    """Serve one connection on the given byte streams until EOF, ``exit`` or a signal.

    The streams carry the framed protocol (``config.framing``; "auto" detects it from
    the first bytes); ``receive`` ending is the client's end-of-file. Both streams are
    the caller's: they are left open when the host stops serving. Any anyio byte
    streams do: the descriptors of :func:`run_host`, a socket, or memory streams (how
    the tests run the host in their own process).

    Args:
        config: the host's options (``config.root`` must be a directory).
        receive: the stream requests arrive on.
        send: the stream responses are written to.
        registry: the tools (built from ``config`` with :func:`build_registry` when None).
        sandbox: the resolved sandbox (resolved from ``config.sandbox`` when None).
        guard: the owner of the process (``toolwire serve`` passes its own). When None,
            as when embedding the host in a process of your own, SIGTERM, SIGINT and
            SIGHUP received while serving close the connection through anyio, and
            nothing outside the event loop ends the process.
        inputs: the host inputs (:mod:`toolwire.host.sandbox.inputs`; collected from ``config``
            when None): while serving, the file tools refuse them and the sandbox
            mounts them read-only.

    Returns:
        The exit code the host asks for: 0, or 1 for an LSP ``exit`` without ``shutdown``.

    Raises:
        StartupError: see :func:`build_registry`; with ``config.isolation == "process"``
            also a ``--tools`` module that does not load in its worker process.
        SandboxUnavailable: ``config.sandbox`` requires a sandbox this machine cannot give.
    """
    if sandbox is None:
        check_configured_bwrap(config)
        sandbox = resolve_sandbox(config.sandbox)
    env = ExecEnv.at(config.root, default_timeout=None, sandbox=sandbox)
    if registry is None:
        registry = build_registry(config)
    if inputs is None:
        inputs = collect(config)
    if env.sandbox is not None:
        env.sandbox.protected_paths = inputs.paths()
    activate(inputs)
    try:
        return await _run(config, receive, send, registry, env, inputs, guard)
    finally:
        deactivate(inputs)


async def _run(
    config: HostConfig,
    receive: ByteReceiveStream,
    send: ByteSendStream,
    registry: Registry,
    env: ExecEnv,
    inputs: HostInputs,
    guard: ProcessGuard | None,
) -> int:
    server = HostServer(
        registry,
        env,
        Executor(default_timeout=config.timeout, max_threads=config.max_threads),
        instructions=describe(config, env, inputs),
        page_size=config.page_size,
        approval=ApprovalPolicy.parse(config.approve),
        approval_timeout=config.approval_timeout,
        shutdown_grace=config.shutdown_grace,
        server_description=env.sandbox.describe() if env.sandbox is not None else None,
    )
    session = server.open_session(
        receive,
        send,
        framing=config.framing,
        max_message_size=config.max_message_size,
        name="host",
    )
    failed: StartupError | None = None
    async with contextlib.AsyncExitStack() as stack:
        if config.isolation == "process":
            workers = await stack.enter_async_context(
                start_workers(config, registry, env, server).running()
            )
            try:
                await _load_modules(workers, config)
            except StartupError as exc:
                failed = exc  # raised below, outside the workers' task group
        if failed is None and (unknown := server.approval.unknown_names(t.name for t in registry)):
            failed = StartupError(f"toolwire serve: {unknown}")
        if failed is None:
            # --approve NAMES: a tool a --reload adds later needs approval too.
            server.approval.settle(t.name for t in registry)
            log.info("serving %d tools in %s", len(registry), env.root)
            return await _serve(session, server, guard)
    raise failed


def start_workers(
    config: HostConfig, registry: Registry, env: ExecEnv, server: HostServer
) -> Workers:
    """The :class:`Workers` of a host with ``--isolation process``."""
    return Workers(
        registry,
        env.root,
        env.sandbox,
        size=config.workers,
        max_threads=config.max_threads,
        max_message_size=config.max_message_size,
        log_level=config.log_level,
        start=config.worker_start,
        list_cache=DefinitionCache(root=str(env.root)) if config.list_cache else None,
        reload_timeout=config.reload_timeout,
        notify=lambda level, text: server.send_log(level, text, "toolwire"),
        host_closing=lambda: server.session is not None and server.session.closing,
        client_backlogged=lambda: (
            server.session is not None
            and server.session.queued_bytes > server.session.output.high_water
        ),
    )


async def _load_modules(workers: Workers, config: HostConfig) -> None:
    """Start the workers of the entry points and the ``--tools`` modules.

    Raises:
        StartupError: a ``--tools`` module that does not load (entry points are logged).
    """
    if config.entry_points:
        names = entry_point_names()
        await workers.add_modules([ModuleSpec(n, "entry_point") for n in names], strict=False)
    try:
        await workers.add_modules([ModuleSpec(spec) for spec in config.tools], strict=True)
    except WorkerStartError as exc:
        hint = ""
        text = str(exc)
        missing = re.search(r"No module named '([^']+)'", text.split("\n", 1)[0])
        for spec in config.tools:
            if missing and (spec == missing[1] or spec.startswith(missing[1] + ".")):
                hint = _not_importable_hint(spec, config.root)
                # The module itself is missing: the import's traceback says nothing more.
                text = text.split("\n", 1)[0]
        raise StartupError(f"toolwire serve: --tools {text}{hint}") from None
    except ToolDefinitionError as exc:
        raise StartupError(f"toolwire serve: --tools: {exc}") from None
    if config.reload:
        workers.spawn(workers.watch)


async def _serve(session: Session, server: HostServer, guard: ProcessGuard | None) -> int:
    """Serve ``session`` until it closes; the exit code (see :func:`run_host`)."""

    def exit_code() -> int:
        return server.exit_code if server.exit_code is not None else 0

    async with anyio.create_task_group() as tg:
        if guard is None:
            # Embedded: leave the process's signal handling to anyio and the embedder.
            async def watch_signals() -> None:
                with anyio.open_signal_receiver(
                    signal.SIGTERM, signal.SIGINT, signal.SIGHUP
                ) as sigs:
                    async for signum in sigs:
                        log.info("signal %d: shutting down", signum)
                        session.close()
                        return

            tg.start_soon(watch_signals)
        else:
            owner = guard
            loop = asyncio.get_running_loop()

            def close() -> None:
                loop.call_soon_threadsafe(session.close)

            owner.watch(close, server.seconds_to_exit, exit_code)

            async def tell_closing() -> None:
                await session.wait_closing()
                owner.closing()

            tg.start_soon(tell_closing)
        await session.serve()
        tg.cancel_scope.cancel()
    return exit_code()

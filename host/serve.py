"""``toolwire serve``: the host serving one connection on stdio (:func:`run_host`).

The process around it — options, taking over stdin/stdout before any tool module is
imported (so a ``print()`` in tool code, a C extension writing to fd 1, or a child
inheriting fd 1 lands on stderr, never in the protocol stream), the sandbox probe and
the exit path — is :mod:`toolwire.host.launch`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import select
import signal
import stat
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio

from toolwire.session import Session
from toolwire.streams import FdReceiveStream, FdSendStream

from . import outputs
from .approval import ApprovalPolicy
from .context import ExecEnv
from .definition import ToolDefinitionError
from .executor import Executor
from .loading import load_builtins, load_entry_points, load_tools
from .options import HostConfig, build_parser, take_over_stdio
from .procs import kill_descendants
from .registry import Registry
from .sandbox import Sandbox, resolve_sandbox
from .server import HostServer

__all__ = ["HostConfig", "build_parser", "main", "run_host", "take_over_stdio"]

log = logging.getLogger("toolwire.host")

EXIT_GRACE = 0.7
"""Seconds ``toolwire serve`` waits for handlers to end after EOF, ``exit`` or SIGTERM
before it ends every descendant and exits regardless (the issue asks for exit within 1 s)."""


def build_registry(config: HostConfig) -> Registry:
    """A registry with the built-ins (unless disabled), entry points and ``--tools``."""
    registry = Registry()
    if config.builtins:
        load_builtins(registry)
    if config.entry_points:
        load_entry_points(registry)
    for spec in config.tools:
        try:
            load_tools(registry, spec)
        except ToolDefinitionError as exc:
            raise SystemExit(f"toolwire serve: --tools {spec}: {exc}") from None
        except ImportError as exc:
            # A missing file or module is a usage error; an import failing *inside* the
            # module keeps its traceback (logged by main), which is what its author needs.
            name = exc.name if isinstance(exc, ModuleNotFoundError) else None
            missing = name is not None and (spec == name or spec.startswith(name + "."))
            if missing or str(exc).startswith("tool file not found"):
                hint = _not_importable_hint(spec, config.root) if missing else ""
                raise SystemExit(f"toolwire serve: --tools {spec}: {exc}{hint}") from None
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


def describe(config: HostConfig, env: ExecEnv) -> str:
    """The ``instructions`` text sent in ``initialize``."""
    text = (
        f"Tools run in a separate host process and act inside the directory {env.root}. "
        "Relative paths are resolved against it; paths outside it are refused."
    )
    if env.sandbox is not None:
        text += " " + env.sandbox.describe()
    return text


async def run_host(
    config: HostConfig,
    read_fd: int,
    write_fd: int,
    registry: Registry | None = None,
    *,
    exit_grace: float | None = None,
    sandbox: Sandbox | None = None,
) -> int:
    """Serve one connection on the given descriptors until EOF, ``exit`` or SIGTERM.

    Args:
        sandbox: the resolved sandbox (resolved from ``config.sandbox`` when None).
        exit_grace: when set (``main`` does), seconds the process is given to wind
            down once the connection starts closing; a handler that shields itself
            from cancellation cannot hold the process longer: a watchdog thread then
            ends every descendant process and calls ``os._exit``. Leave it None when
            embedding the host in a process of your own.

    Returns:
        The process exit code: 0, or 1 for an LSP ``exit`` without ``shutdown``.
    """
    env = ExecEnv.at(
        config.root, default_timeout=None, sandbox=sandbox or resolve_sandbox(config.sandbox)
    )
    if registry is None:
        registry = build_registry(config)
    server = HostServer(
        registry,
        env,
        Executor(default_timeout=config.timeout, max_threads=config.max_threads),
        instructions=describe(config, env),
        page_size=config.page_size,
        approval=ApprovalPolicy.parse(config.approve),
        approval_timeout=config.approval_timeout,
        server_description=env.sandbox.describe() if env.sandbox is not None else None,
    )
    session = Session(
        FdReceiveStream(read_fd),
        FdSendStream(write_fd),
        framing=config.framing,
        max_message_size=config.max_message_size,
        name="host",
    )
    server.attach(session)
    log.info("serving %d tools in %s", len(registry), env.root)

    def exit_code() -> int:
        return server.exit_code if server.exit_code is not None else 0

    async with anyio.create_task_group() as tg:
        if exit_grace is None:
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
            # The process's own host: end within ``exit_grace`` seconds of a signal, of
            # the client hanging up, or of the session closing — even when a tool keeps
            # the event loop busy (an async tool that never awaits): the signal handler
            # and the hang-up watcher run outside the loop and arm a watchdog thread.
            watchdog = _Watchdog(exit_grace, exit_code)
            loop = asyncio.get_running_loop()

            def on_signal(signum: int, frame: object) -> None:
                log.info("signal %d: shutting down", signum)
                watchdog.arm()
                loop.call_soon_threadsafe(session.close)

            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, on_signal)
            # A client that hangs up after `exit` may still read the answers the host
            # owes (protocol.md §3.4): give those their time before the grace.
            _watch_hangup(read_fd, watchdog, server.seconds_to_exit)

            async def arm_on_close() -> None:
                await session.wait_closing()
                watchdog.arm()

            tg.start_soon(arm_on_close)
        await session.serve()
        tg.cancel_scope.cancel()
    return server.exit_code if server.exit_code is not None else 0


class _Watchdog:
    """Ends the process ``grace`` seconds after :meth:`arm`, whatever the event loop is
    doing: every descendant process is killed and ``os._exit`` is called."""

    def __init__(self, grace: float, code: Callable[[], int]) -> None:
        self.grace = grace
        self.code = code
        self._lock = threading.Lock()
        self._armed = False

    def arm(self, postpone: Callable[[], float] | None = None) -> None:
        """Start the countdown (once; later calls do nothing). Safe in signal handlers.

        Args:
            postpone: asked when the countdown ends; while it returns more than 0, the
                end waits that many seconds more (answers still owed after ``exit``).
        """
        with self._lock:
            if self._armed:
                return
            self._armed = True
        self._start(self.grace, postpone)

    def _start(self, seconds: float, postpone: Callable[[], float] | None) -> None:
        timer = threading.Timer(seconds, self._fire, (postpone,))
        timer.daemon = True
        timer.start()

    def _fire(self, postpone: Callable[[], float] | None) -> None:
        more = postpone() if postpone is not None else 0.0
        if more > 0:
            self._start(more, None)
            return
        log.warning("still running %.2gs after shutdown began; exiting now", self.grace)
        kill_descendants()
        outputs.remove_directory()
        logging.shutdown()
        os._exit(self.code())


def _watch_hangup(fd: int, watchdog: _Watchdog, postpone: Callable[[], float]) -> None:
    """Arm ``watchdog`` when the client closes its end of the pipe ``fd``, seen with
    ``poll`` (POLLHUP) in a thread, without reading: the event loop reads the data.
    ``postpone`` is passed on to :meth:`_Watchdog.arm`."""
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode) or not hasattr(select, "poll"):
            return
    except OSError:
        return

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, 0)  # no events asked for: POLLHUP and POLLERR always report
        try:
            while not poller.poll():
                pass
        except (OSError, ValueError):
            return
        watchdog.arm(postpone)

    threading.Thread(target=watch, name="hangup-watch", daemon=True).start()


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``toolwire serve``; see :func:`toolwire.host.launch.main`."""
    from .launch import main as launch_main

    launch_main(argv)

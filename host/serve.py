"""``toolwire serve``: run the host on stdio.

Start-up order matters for stdout hygiene: the protocol's stdin/stdout are moved to
private descriptors *before* any tool module is imported, fd 1 and ``sys.stdout``
are pointed at stderr, and fd 0 at /dev/null. A ``print()`` in tool code, a C
extension writing to fd 1, or a child process inheriting fd 1 therefore lands on
stderr, never in the protocol stream.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import functools
import logging
import os
import select
import signal
import stat
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from toolwire.framing import DEFAULT_MAX_MESSAGE_SIZE
from toolwire.session import Session
from toolwire.streams import FdReceiveStream, FdSendStream

from .approval import ApprovalPolicy
from .config import load_config_file
from .context import ExecEnv
from .executor import Executor
from .loading import load_builtins, load_entry_points, load_tools
from .procs import kill_descendants, set_subreaper
from .registry import Registry
from .sandbox import Sandbox, SandboxSettings, SandboxUnavailable, resolve_sandbox
from .server import HostServer
from .tools import ToolDefinitionError

__all__ = ["HostConfig", "build_parser", "main", "run_host", "take_over_stdio"]

log = logging.getLogger("toolwire.host")

EXIT_GRACE = 0.7
"""Seconds ``toolwire serve`` waits for handlers to end after EOF, ``exit`` or SIGTERM
before it ends every descendant and exits regardless (the issue asks for exit within 1 s)."""


@dataclass
class HostConfig:
    """Everything ``toolwire serve`` is configured with.

    Attributes:
        root: directory the tools act in (default: the current directory).
        tools: files (``path/to/tools.py``) or module names to load tools from.
        builtins: register the built-in tools.
        entry_points: load tools from the ``toolwire.tools`` entry-point group.
        framing: "auto" (detect from the first bytes), "lsp" or "ndjson".
        log_level: stderr log threshold (Python logging level name, lower-case).
        timeout: default seconds per call; None for no limit.
        max_message_size: largest inbound message, in bytes.
        max_threads: worker threads for synchronous tools.
        page_size: tool definitions per ``tools/list`` page.
        sandbox: settings for the processes tools start.
        approve: which calls need the client's approval: tool names, "destructive"
            or "all" (empty: none).
        approval_timeout: seconds to wait for the client's approval answer.
    """

    root: Path = field(default_factory=Path.cwd)
    tools: list[str] = field(default_factory=list)
    builtins: bool = True
    entry_points: bool = True
    framing: Literal["auto", "lsp", "ndjson"] = "auto"
    log_level: str = "warning"
    timeout: float | None = 600.0
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_threads: int = 256
    page_size: int = 500
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    approve: list[str] = field(default_factory=list)
    approval_timeout: float = 120.0


def _message_size(text: str) -> int:
    """argparse type: a message size limit in bytes, at least 1 KiB."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of bytes: {text!r}") from None
    if value < 1024:
        raise argparse.ArgumentTypeError(f"must be at least 1024 bytes, not {value}")
    return value


def build_parser(prog: str = "toolwire serve") -> argparse.ArgumentParser:
    """The argument parser of ``toolwire serve``."""
    p = argparse.ArgumentParser(
        prog=prog,
        description="Run the toolwire host: JSON-RPC 2.0 (MCP tool subset) on stdin/stdout.",
    )
    p.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="read settings from a toolwire.toml (command-line options win)",
    )
    p.add_argument("--root", type=Path, default=None, help="directory tools act in (default: cwd)")
    p.add_argument(
        "--tools",
        nargs="+",
        action="extend",
        default=[],
        metavar="FILE.py|MODULE",
        help="load every @tool from these files or modules",
    )
    p.add_argument("--no-builtins", action="store_true", help="do not register built-in tools")
    p.add_argument(
        "--no-entry-points",
        action="store_true",
        help="do not load tools from the 'toolwire.tools' entry-point group",
    )
    p.add_argument(
        "--framing",
        choices=["auto", "lsp", "ndjson"],
        default=None,
        help="message framing (default: detect from the client's first bytes)",
    )
    p.add_argument(
        "--log-level",
        default=None,
        choices=["debug", "info", "warning", "error", "critical"],
        help="stderr log threshold (default: warning)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="default seconds a call may run; 0 for no limit (default: 600)",
    )
    p.add_argument(
        "--max-message-size",
        type=_message_size,
        default=None,
        help="largest accepted message in bytes (default: 64 MiB)",
    )
    p.add_argument("--max-threads", type=int, default=None, help="threads for sync tools")
    p.add_argument("--page-size", type=int, default=None, help="tools per tools/list page")
    p.add_argument(
        "--sandbox",
        choices=["auto", "bwrap", "none"],
        default=None,
        help="run tool processes in bubblewrap: auto (when it works here, else say so), "
        "bwrap (refuse to start without it), none (default: auto)",
    )
    p.add_argument(
        "--approve",
        action="append",
        default=None,
        metavar="NAMES|destructive|all",
        help="calls that need the client's approval: comma-separated tool names, "
        "'destructive' (tools not annotated read-only) or 'all' (default: none)",
    )
    p.add_argument(
        "--approval-timeout",
        type=float,
        default=None,
        help="seconds to wait for the client's approval answer (default: 120)",
    )
    return p


def config_from_args(ns: argparse.Namespace) -> HostConfig:
    """Build a :class:`HostConfig` from parsed ``toolwire serve`` arguments.

    Settings come from, in increasing priority: defaults, the ``--config`` file,
    the command line.

    Raises:
        toolwire.host.config.ConfigError: the config file is unusable.
        ValueError: a setting has an invalid value.
    """
    tables: dict[str, dict[str, Any]] = {"host": {}, "sandbox": {}, "approval": {}}
    if getattr(ns, "config", None) is not None:
        tables = load_config_file(ns.config)
    host = dict(tables["host"])
    known = set(HostConfig.__dataclass_fields__) - {"sandbox", "approve", "approval_timeout"}
    unknown = set(host) - known
    if unknown:
        raise ValueError(f"unknown [host] settings: {sorted(unknown)}")

    def pick(flag: Any, key: str, default: Any) -> Any:
        if flag is not None:
            return flag
        return host.get(key, default)

    timeout = pick(ns.timeout, "timeout", 600.0)
    approve = ns.approve if ns.approve is not None else tables["approval"].get("policy", [])
    if isinstance(approve, str):
        approve = [approve]
    approval_timeout = ns.approval_timeout
    if approval_timeout is None:
        approval_timeout = float(tables["approval"].get("timeout", 120.0))
    return HostConfig(
        root=Path(pick(ns.root, "root", Path.cwd())),
        tools=list(host.get("tools", [])) + list(ns.tools),
        builtins=not ns.no_builtins and bool(host.get("builtins", True)),
        entry_points=not ns.no_entry_points and bool(host.get("entry_points", True)),
        framing=pick(ns.framing, "framing", "auto"),
        log_level=pick(ns.log_level, "log_level", "warning"),
        timeout=float(timeout) if timeout and float(timeout) > 0 else None,
        max_message_size=int(
            pick(ns.max_message_size, "max_message_size", DEFAULT_MAX_MESSAGE_SIZE)
        ),
        max_threads=int(pick(ns.max_threads, "max_threads", 256)),
        page_size=max(1, int(pick(ns.page_size, "page_size", 500))),
        sandbox=SandboxSettings.from_table(tables["sandbox"], ns.sandbox),
        approve=[name.strip() for item in approve for name in str(item).split(",") if name.strip()],
        approval_timeout=approval_timeout,
    )


def take_over_stdio() -> tuple[int, int]:
    """Move the protocol streams to private descriptors; returns ``(read_fd, write_fd)``.

    Afterwards fd 1 and ``sys.stdout`` write to stderr, and fd 0 / ``sys.stdin`` read
    /dev/null, so nothing but the host's writer reaches the protocol stream.
    """
    sys.stdout.flush()
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives for the process
    return proto_in, proto_out


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
                raise SystemExit(f"toolwire serve: --tools {spec}: {exc}") from None
            raise
    return registry


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
            _watch_hangup(read_fd, watchdog)

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

    def arm(self) -> None:
        """Start the countdown (once; later calls do nothing). Safe in signal handlers."""
        with self._lock:
            if self._armed:
                return
            self._armed = True
        timer = threading.Timer(self.grace, self._fire)
        timer.daemon = True
        timer.start()

    def _fire(self) -> None:
        log.warning("still running %.2gs after shutdown began; exiting now", self.grace)
        kill_descendants()
        logging.shutdown()
        os._exit(self.code())


def _watch_hangup(fd: int, watchdog: _Watchdog) -> None:
    """Arm ``watchdog`` when the client closes its end of the pipe ``fd``, seen with
    ``poll`` (POLLHUP) in a thread, without reading: the event loop reads the data."""
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
        watchdog.arm()

    threading.Thread(target=watch, name="hangup-watch", daemon=True).start()


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``toolwire serve`` / ``python -m toolwire.host``; never returns."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        config = config_from_args(ns)
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    read_fd, write_fd = take_over_stdio()
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, config.log_level.upper()),
        format="toolwire[%(process)d] %(levelname)s %(name)s: %(message)s",
    )
    set_subreaper()
    code = 0
    try:
        if not config.root.is_dir():
            raise SystemExit(f"toolwire serve: --root {config.root} is not a directory")
        # Probing bubblewrap means starting a process (tens of ms): do it in a thread
        # while the tools load, and wait for it before serving.
        probe: concurrent.futures.Future[Sandbox] = concurrent.futures.Future()

        def resolve() -> None:
            try:
                probe.set_result(resolve_sandbox(config.sandbox))
            except BaseException as exc:
                probe.set_exception(exc)

        threading.Thread(target=resolve, name="sandbox-probe", daemon=True).start()
        registry = build_registry(config)
        try:
            sandbox = probe.result()
        except SandboxUnavailable as exc:
            raise SystemExit(f"toolwire serve: {exc}; refusing to run unsandboxed") from None
        if not sandbox.active and config.sandbox.mode != "none":
            log.warning("%s", sandbox.describe())
        code = anyio.run(
            functools.partial(run_host, exit_grace=EXIT_GRACE, sandbox=sandbox),
            config,
            read_fd,
            write_fd,
            registry,
            backend="asyncio",
        )
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            code = 2
        else:
            code = int(exc.code or 0)
    except Exception as exc:  # report, never hang
        log.exception("host failed: %s", exc)
        code = 1
    finally:
        kill_descendants()
        logging.shutdown()
        sys.stderr.flush()
    # Worker threads stuck in synchronous tools must not keep the process alive.
    os._exit(code)

"""The ``toolwire serve`` / ``python -m toolwire.host`` process: the one owner of it.

It owns the options, the standard streams, the sandbox probe, the signals, the watchdog
and the exit code; the connection itself is served by the embeddable
:func:`toolwire.host.serve.connection.run_host`. Start-up order:

0. The entry point (``__main__``, ``toolwire serve`` in :mod:`toolwire.cli`) removes the
   root, the working directory and the script's directory from ``sys.path``
   (:mod:`.importpath`); launchers also start the interpreter with ``-P`` /
   ``PYTHONSAFEPATH=1``.
1. Parse the options (standard library only), remove the configured root from
   ``sys.path`` too, and take over stdin/stdout (:func:`take_over_stdio`), so nothing a
   tool module prints at import time can reach the protocol stream.
2. Start probing the sandbox in a thread: it runs a process (tens of milliseconds), which
   then overlaps the imports and the loading of the tools.
3. Import the host (anyio, the session, the pipeline) and load the tools.
4. Wait for the probe, then serve until EOF, ``exit`` or a signal; from the moment the
   connection starts closing, a watchdog ends the process within :data:`EXIT_GRACE`
   seconds even when a tool will not stop.

Exit codes: :data:`EXIT_OK` (0), :data:`EXIT_FAILED` (1: the host failed, or an LSP
``exit`` came without ``shutdown``), :data:`EXIT_USAGE` (2: bad options, tools that do not
load, no sandbox where one is required).
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import os
import select
import stat
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..sandbox import outputs
from ..sandbox.importpath import scrub_import_path
from ..sandbox.inputs import configured_bwrap_refusal
from ..sandbox.probe import resolve_sandbox
from ..sandbox.procs import kill_descendants, set_subreaper
from ..sandbox.settings import SandboxUnavailable
from ..workers.stdio import take_over_stdio
from .errpump import buffer_stderr, flush_stderr
from .options import StartupError, build_parser, check_tool_specs, config_from_args

if TYPE_CHECKING:
    from ..sandbox.bubblewrap import Sandbox

__all__ = ["EXIT_FAILED", "EXIT_GRACE", "EXIT_OK", "EXIT_USAGE", "main", "take_over_stdio"]

log = logging.getLogger("toolwire.host")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

EXIT_GRACE = 0.7
"""Seconds ``toolwire serve`` waits for handlers to end after EOF, ``exit`` or SIGTERM
before it ends every descendant and exits regardless (the issue asks for exit within 1 s)."""


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``toolwire serve`` / ``python -m toolwire.host``; never returns.

    ``argv`` are the host's arguments (``toolwire serve --help``); the process exits
    with :data:`EXIT_OK`, :data:`EXIT_FAILED` or :data:`EXIT_USAGE`.
    """
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        config = config_from_args(ns)
    except (ValueError, TypeError) as exc:
        # A usage error: the reason, one line per problem, and exit 2 (no usage text:
        # the options were well formed, their values are not).
        for line in str(exc).splitlines():
            print(f"toolwire serve: {line}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    # The entry point scrubbed the path for the --root it saw; a config file may name
    # another root. Nothing below may import a module from the root (issue: a `write`
    # of PIL/__init__.py ran the model's code in the host at the next image read).
    scrub_import_path([config.root])
    read_fd, write_fd = take_over_stdio()
    buffer_stderr()  # no write to stderr ever waits for the client to read it
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, config.log_level.upper()),
        format="toolwire[%(process)d] %(levelname)s %(name)s: %(message)s",
    )
    set_subreaper()
    code = EXIT_OK
    probe: concurrent.futures.Future[Sandbox] = concurrent.futures.Future()
    probe_started = False
    try:
        if (no_tmp := outputs.temp_dir_problem()) is not None:
            raise StartupError(f"toolwire serve: {no_tmp}")
        outputs.sweep_stale()  # bash full-output files of this user's hosts that were killed
        if not config.root.is_dir():
            raise StartupError(f"toolwire serve: --root {config.root} is not a directory")
        check_tool_specs(config.tools)
        settings = config.sandbox
        writable: list[str | os.PathLike[str]] = [config.root, *settings.extra_rw_paths]
        if refusal := configured_bwrap_refusal(settings.bwrap, settings.mode, writable):
            raise StartupError(refusal)  # before the probe runs it
        # Probing bubblewrap means starting a process (tens of ms): do it in a thread
        # while the host's modules import and the tools load; wait for it before serving.

        def resolve() -> None:
            try:
                probe.set_result(resolve_sandbox(config.sandbox))
            except BaseException as exc:
                probe.set_exception(exc)

        threading.Thread(target=resolve, name="sandbox-probe", daemon=True).start()
        probe_started = True
        import anyio

        from .connection import build_registry, run_host
        from .inputs_collect import collect

        registry = build_registry(config)
        inputs = collect(config)
        try:
            sandbox = probe.result()
        except SandboxUnavailable as exc:
            raise StartupError(f"toolwire serve: {exc}; refusing to run unsandboxed") from None
        if not sandbox.active and config.sandbox.mode != "none":
            log.warning("%s", sandbox.describe())
        elif sandbox.active and log.isEnabledFor(logging.WARNING):
            # The start-up banner: which bubblewrap runs the commands.
            print(f"toolwire serve: {sandbox.banner()}", file=sys.stderr, flush=True)
        if notice := inputs.notice(config.root):
            print(f"toolwire serve: {notice}", file=sys.stderr, flush=True)
        if config.http is not None:
            from .http.app import serve_http

            code = anyio.run(
                functools.partial(serve_http, sandbox=sandbox, inputs=inputs),
                config,
                registry,
                backend="asyncio",
            )
        else:
            code = anyio.run(
                functools.partial(
                    run_host,
                    sandbox=sandbox,
                    guard=_ProcessGuard(EXIT_GRACE, read_fd),
                    inputs=inputs,
                ),
                config,
                read_fd,
                write_fd,
                registry,
                backend="asyncio",
            )
    except StartupError as exc:
        print(exc, file=sys.stderr)
        code = EXIT_USAGE
    except SystemExit as exc:  # a tool module calling sys.exit() while it is imported
        code = int(exc.code) if isinstance(exc.code, int) else EXIT_FAILED
    except Exception as exc:  # report, never hang
        log.exception("host failed: %s", exc)
        code = EXIT_FAILED
    finally:
        # A start-up that fails while the probe is still starting its process must not
        # leave that process behind: let the probe finish (it has its own timeout), then
        # end every descendant.
        if probe_started and not probe.done():
            concurrent.futures.wait([probe], timeout=5)
        kill_descendants()
        outputs.remove_directory()
        logging.shutdown()
        sys.stderr.flush()
        flush_stderr()
    # Worker threads stuck in synchronous tools must not keep the process alive.
    os._exit(code)


# --------------------------------------------------------------------------- ending


class _ProcessGuard:
    """``toolwire serve``'s :class:`~toolwire.host.serve.connection.ProcessGuard`: end within
    ``grace`` seconds of a signal, of the client hanging up, or of the connection
    closing — even when a tool keeps the event loop busy (an async tool that never
    awaits): the signal handlers and the hang-up watcher run outside the loop and arm a
    watchdog thread."""

    def __init__(self, grace: float, read_fd: int) -> None:
        self.grace = grace
        self.read_fd = read_fd
        self._watchdog: _Watchdog | None = None

    def watch(
        self,
        close: Callable[[], None],
        seconds_to_exit: Callable[[], float],
        exit_code: Callable[[], int],
    ) -> None:
        import signal

        watchdog = self._watchdog = _Watchdog(self.grace, exit_code)

        def on_signal(signum: int, frame: object) -> None:
            log.info("signal %d: shutting down", signum)
            watchdog.arm()
            close()

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, on_signal)
        # A client that hangs up after `exit` may still read the answers the host
        # owes (protocol.md §3.4): give those their time before the grace.
        _watch_hangup(self.read_fd, watchdog, seconds_to_exit)

    def closing(self) -> None:
        if self._watchdog is not None:
            self._watchdog.arm()


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
        # A tool holding the event loop also holds the GIL between switches: this
        # thread gives it back at every file read below (/proc, the output directory),
        # and waits a whole switch interval (5 ms) to get it again. Shorten it so the
        # exit takes milliseconds, not a second, on a machine with many processes.
        sys.setswitchinterval(1e-4)
        more = postpone() if postpone is not None else 0.0
        if more > 0:
            self._start(more, None)
            return
        log.warning("still running %.2gs after shutdown began; exiting now", self.grace)
        kill_descendants()
        outputs.remove_directory()
        logging.shutdown()
        flush_stderr(0.5)  # the warning above says why the host ended: let it out
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

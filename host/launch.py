"""The ``toolwire serve`` / ``python -m toolwire.host`` process: start-up order.

0. The entry point (``__main__``, ``toolwire serve``) removes the root, the working
   directory and the script's directory from ``sys.path`` (:mod:`.importpath`);
   launchers also start the interpreter with ``-P`` / ``PYTHONSAFEPATH=1``.
1. Parse the options (standard library only), remove the configured root from
   ``sys.path`` too, and take over stdin/stdout, so nothing a tool module prints at
   import time can reach the protocol stream.
2. Start probing the sandbox in a thread: it runs a process (tens of milliseconds), which
   then overlaps the imports and the loading of the tools.
3. Import the host (anyio, the session, the pipeline) and load the tools.
4. Wait for the probe, then serve until EOF, ``exit`` or a signal.
"""

from __future__ import annotations

import concurrent.futures
import functools
import logging
import os
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import outputs
from .importpath import scrub_import_path
from .options import build_parser, config_from_args, take_over_stdio
from .procs import kill_descendants, set_subreaper
from .sandbox import SandboxUnavailable, resolve_sandbox

if TYPE_CHECKING:
    from .sandbox import Sandbox

__all__ = ["main"]

log = logging.getLogger("toolwire.host")


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of ``toolwire serve`` / ``python -m toolwire.host``; never returns."""
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        config = config_from_args(ns)
    except (ValueError, TypeError) as exc:
        parser.error(str(exc))
    # The entry point scrubbed the path for the --root it saw; a config file may name
    # another root. Nothing below may import a module from the root (issue: a `write`
    # of PIL/__init__.py ran the model's code in the host at the next image read).
    scrub_import_path([config.root])
    read_fd, write_fd = take_over_stdio()
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, config.log_level.upper()),
        format="toolwire[%(process)d] %(levelname)s %(name)s: %(message)s",
    )
    set_subreaper()
    outputs.sweep_stale()  # bash full-output files of this user's hosts that were killed
    code = 0
    probe: concurrent.futures.Future[Sandbox] = concurrent.futures.Future()
    probe_started = False
    try:
        if not config.root.is_dir():
            raise SystemExit(f"toolwire serve: --root {config.root} is not a directory")
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

        from .serve import EXIT_GRACE, build_registry, run_host

        registry = build_registry(config)
        try:
            sandbox = probe.result()
        except SandboxUnavailable as exc:
            raise SystemExit(f"toolwire serve: {exc}; refusing to run unsandboxed") from None
        if not sandbox.active and config.sandbox.mode != "none":
            log.warning("%s", sandbox.describe())
        elif sandbox.active and log.isEnabledFor(logging.WARNING):
            # The start-up banner: which bubblewrap runs the commands.
            print(f"toolwire serve: {sandbox.banner()}", file=sys.stderr, flush=True)
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
        # A start-up that fails while the probe is still starting its process must not
        # leave that process behind: let the probe finish (it has its own timeout), then
        # end every descendant.
        if probe_started and not probe.done():
            concurrent.futures.wait([probe], timeout=5)
        kill_descendants()
        outputs.remove_directory()
        logging.shutdown()
        sys.stderr.flush()
    # Worker threads stuck in synchronous tools must not keep the process alive.
    os._exit(code)

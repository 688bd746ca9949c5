"""The transport of a spawned host: start the process, give its stdout/stdin to the
session as byte streams, keep its stderr, and end it in order.

:class:`StdioTransport` is what :meth:`toolwire.client.Client.spawn` uses (the way an
``httpx.Client`` takes a transport): the client speaks JSON-RPC over the streams, the
transport owns the process. Ending follows the MCP stdio shutdown sequence (MCP
2025-11-25, "Transports › stdio"): close the host's stdin, wait, SIGTERM, wait, then
SIGKILL its whole process group.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Literal

import anyio
import anyio.abc
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = [
    "SAFE_PATH_ENV",
    "STDERR_CAPTURE_LIMIT",
    "TERMINATE_GRACE",
    "EndedBy",
    "StderrMode",
    "StdioTransport",
    "host_command",
    "is_host_command",
]

log = logging.getLogger("toolwire.client")

StderrMode = Literal["inherit", "capture", "discard"]
"""What happens to a spawned host's stderr: passed through to ours, kept in memory
(:attr:`StdioTransport.stderr_output`), or dropped. It is never left as an unread pipe."""

EndedBy = Literal["eof", "sigterm", "sigkill"]
"""How a spawned host ended: it exited after stdin EOF, after SIGTERM, or was killed."""

STDERR_CAPTURE_LIMIT = 1024 * 1024
"""Bytes of a captured stderr kept in memory (the most recent ones), 1 MiB."""

TERMINATE_GRACE = 2.0
"""Seconds to wait after closing the host's stdin, and again after SIGTERM, before the
next step (the MCP stdio shutdown sequence, as both official SDK clients do it)."""

SAFE_PATH_ENV = "PYTHONSAFEPATH"
"""Set to "1" for a spawned toolwire host: the equivalent of ``python -P``."""


def host_command(
    *,
    root: str | os.PathLike[str] | None = None,
    tools: Sequence[str | os.PathLike[str]] = (),
    builtins: bool = True,
    extra_args: Sequence[str] = (),
    python: str | os.PathLike[str] | None = None,
) -> list[str]:
    """The command line that runs a toolwire host with this interpreter.

    Args:
        root: ``--root``: the directory the tools act in (default: the host's cwd).
        tools: ``--tools``: files or module names to load tools from.
        builtins: False adds ``--no-builtins``.
        extra_args: any further ``toolwire serve`` arguments, appended as given.
        python: the interpreter (default: :data:`sys.executable`).

    Returns:
        ``[python, "-P", "-m", "toolwire.host", ...]``: ``-P`` (Python >= 3.11) keeps the
        working directory, usually the root the tools write to, off the host's import
        path, so a module the model wrote there is never imported by the host.
    """
    cmd = [os.fspath(python or sys.executable), "-P", "-m", "toolwire.host"]
    if root is not None:
        cmd += ["--root", os.fspath(root)]
    if tools:
        cmd += ["--tools", *(os.fspath(t) for t in tools)]
    if not builtins:
        cmd.append("--no-builtins")
    cmd += list(extra_args)
    return cmd


def is_host_command(argv: Sequence[str]) -> bool:
    """Whether ``argv`` starts a toolwire host: ``... -m toolwire.host ...`` or
    ``.../toolwire serve ...``. Only those get ``PYTHONSAFEPATH=1`` from
    :meth:`Client.spawn`: another Python server may rely on its script's directory."""
    if any(pair == ("-m", "toolwire.host") for pair in itertools.pairwise(argv)):
        return True
    return len(argv) >= 2 and os.path.basename(argv[0]) == "toolwire" and argv[1] == "serve"


class StdioTransport:
    """Spawns a host and ends it: the process side of a client over stdio.

    Args:
        command: argv of the host (default: :func:`host_command` with no options, i.e.
            this interpreter's ``-P -m toolwire.host`` rooted at its cwd). A toolwire
            host (:func:`is_host_command`) is started with ``PYTHONSAFEPATH=1`` in its
            environment.
        cwd: working directory of the process.
        env: variables added to (overriding) the inherited environment.
        stderr: "inherit" (default), "capture" or "discard"; see :data:`StderrMode`.
        terminate_grace: seconds waited after closing stdin and again after SIGTERM
            before escalating (default 2, the MCP stdio shutdown sequence).

    The host runs in its own session (process group), so a terminal's Ctrl-C reaches
    only the client, which then ends the host in order. At the SIGKILL step, and after
    the host ended in any way, the rest of its process group is killed, so nothing it
    started outlives it (a process that left the group with ``setsid`` is the host's
    own business; toolwire's host ends those itself). One transport serves one
    connection.
    """

    def __init__(
        self,
        command: Sequence[str | os.PathLike[str]] | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        stderr: StderrMode = "inherit",
        terminate_grace: float = TERMINATE_GRACE,
    ) -> None:
        self.command = [os.fspath(a) for a in (command or host_command())]
        full_env: dict[str, str] | None = None
        if env is not None:
            full_env = dict(os.environ)
            full_env.update(env)
        if is_host_command(self.command):
            # Also for `toolwire serve` (a console script, which cannot take -P): Python
            # then leaves the script's and the working directory off sys.path.
            full_env = dict(os.environ) if full_env is None else full_env
            full_env[SAFE_PATH_ENV] = "1"
        self.env = full_env
        """The complete environment of the process; None inherits the client's."""
        self.cwd = os.fspath(cwd) if cwd else None
        self.stderr: StderrMode = stderr
        self.terminate_grace = terminate_grace
        self.process: anyio.abc.Process | None = None
        """The host process once started."""
        self.ended_by: EndedBy | None = None
        """How the host ended on :meth:`end`; None before."""
        self._stderr_buf = bytearray()
        self._stderr_done = anyio.Event()

    @property
    def stderr_output(self) -> str:
        """The captured stderr (``stderr="capture"``; the last
        :data:`STDERR_CAPTURE_LIMIT` bytes, decoded as UTF-8 with replacement)."""
        return self._stderr_buf.decode("utf-8", "replace")

    async def start(self, tg: anyio.abc.TaskGroup) -> tuple[ByteReceiveStream, ByteSendStream]:
        """Start the host; returns ``(its stdout, its stdin)``. A captured stderr is
        read by a task in ``tg`` until the pipe closes.

        Raises:
            OSError: the process could not be started (FileNotFoundError for a missing
                program).
        """
        stderr: int | None
        if self.stderr == "inherit":
            stderr = None
        elif self.stderr == "capture":
            stderr = subprocess.PIPE
        else:
            stderr = subprocess.DEVNULL
        proc = await anyio.open_process(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=self.cwd,
            env=self.env,
            start_new_session=True,
        )
        self.process = proc
        if proc.stderr is not None:
            tg.start_soon(self._drain_stderr, proc.stderr)
        else:
            self._stderr_done.set()
        assert proc.stdout is not None and proc.stdin is not None
        return proc.stdout, proc.stdin

    async def _drain_stderr(self, stream: ByteReceiveStream) -> None:
        buf = self._stderr_buf
        try:
            async for chunk in stream:
                buf += chunk
                if len(buf) > STDERR_CAPTURE_LIMIT:
                    del buf[: len(buf) - STDERR_CAPTURE_LIMIT]
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self._stderr_done.set()

    async def end(self) -> None:
        """End the host, shielded from cancellation: close its stdin, wait
        :attr:`terminate_grace`, SIGTERM, wait again, SIGKILL its process group; then
        kill what it left in its group. Sets :attr:`ended_by`."""
        if self.process is None:
            return
        with anyio.CancelScope(shield=True):
            await self._end_steps(self.process)

    async def _end_steps(self, proc: anyio.abc.Process) -> None:
        grace = self.terminate_grace
        if proc.stdin is not None:
            with contextlib.suppress(Exception):
                await proc.stdin.aclose()
        if await _wait_exit(proc, grace):
            self.ended_by = "eof"
        else:
            log.info("host %d still running %gs after EOF; sending SIGTERM", proc.pid, grace)
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            if await _wait_exit(proc, grace):
                self.ended_by = "sigterm"
            else:
                log.warning("host %d ignored SIGTERM; killing its process group", proc.pid)
                _kill_group(proc.pid)
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
                self.ended_by = "sigkill"
        # The host ran as the leader of its own process group: whatever it started and
        # left behind in that group is an orphan now. Linux does not hand out a number
        # still used as a process group id, so this reaches only those leftovers.
        _kill_group(proc.pid)
        # A grandchild may still hold the stderr pipe; do not wait on it for long.
        with anyio.move_on_after(1.0):
            await self._stderr_done.wait()

    async def stderr_ended(self) -> None:
        """Wait until the captured stderr reached its end (at once when not captured).

        Callers bound the wait: a grandchild of the host may hold the pipe open.
        """
        await self._stderr_done.wait()

    async def close_streams(self) -> None:
        """Close the pipes to and from the host (shielded; errors ignored)."""
        proc = self.process
        if proc is None:
            return
        with anyio.CancelScope(shield=True):
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(Exception):
                        await stream.aclose()


def _kill_group(pgid: int) -> None:
    """SIGKILL every process in process group ``pgid`` (nothing when it is empty)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


async def _wait_exit(proc: anyio.abc.Process, seconds: float) -> bool:
    """Wait up to ``seconds`` for ``proc`` to exit; True when it did."""
    with anyio.move_on_after(seconds):
        await proc.wait()
        return True
    return False

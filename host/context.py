"""What a tool handler receives besides its arguments: :class:`ToolContext` and :class:`ExecEnv`."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.from_thread
import anyio.lowlevel

from toolwire.messages import RequestId

from .sandbox import Sandbox

if TYPE_CHECKING:
    from .modern import ModernCall
    from .server import HostServer

__all__ = ["LOG_LEVELS", "ExecEnv", "ToolContext"]

LOG_LEVELS: dict[str, int] = {
    "debug": 0,
    "info": 1,
    "notice": 2,
    "warning": 3,
    "error": 4,
    "critical": 5,
    "alert": 6,
    "emergency": 7,
}
"""RFC 5424 severities as MCP names them, mapped to their order (higher is more severe)."""

_log = logging.getLogger("toolwire.tools")


@dataclass
class ExecEnv:
    """The execution environment tools act in.

    Attributes:
        root: the directory tools may touch (a resolved, absolute real path). File
            tools refuse paths whose real path leaves it.
        cwd: the directory relative paths and commands start from (inside ``root``).
        default_timeout: seconds a shell command may run when its call gives no
            timeout; None means no limit.
        env: extra environment variables for processes tools start.
        sandbox: the sandbox processes run in (None: not configured, run directly).
    """

    root: Path
    cwd: Path
    default_timeout: float | None = None
    env: dict[str, str] = field(default_factory=dict)
    sandbox: Sandbox | None = None

    @classmethod
    def at(cls, root: str | Path, **kwargs: Any) -> ExecEnv:
        """An environment rooted at ``root`` (resolved), with cwd = root."""
        real = Path(root).expanduser().resolve()
        return cls(root=real, cwd=real, **kwargs)

    def resolve(self, path: str, *, must_exist: bool = False) -> Path:
        """Resolve a tool's path argument to a real path inside :attr:`root`.

        The one path-resolution rule every file tool uses (see
        :func:`toolwire.host.paths.resolve_path`).

        Raises:
            toolwire.host.paths.PathError: the path leaves the root, or (with
                ``must_exist``) does not exist.
        """
        from .paths import resolve_path

        return resolve_path(self, path, must_exist=must_exist)


class ToolContext:
    """Injected into a handler parameter annotated ``ToolContext``; never in the schema.

    Attributes:
        call_id: the id of this call (the ``tools/call`` request id as sent).
        tool_name: the name the call addressed.
        env: the :class:`ExecEnv` the tool acts in.
    """

    __slots__ = ("_modern", "_request", "_server", "call_id", "env", "tool_name")

    def __init__(
        self,
        call_id: RequestId,
        tool_name: str,
        env: ExecEnv,
        server: HostServer | None = None,
        request: Any = None,
        modern: ModernCall | None = None,
    ) -> None:
        self.call_id = call_id
        self.tool_name = tool_name
        self.env = env
        self._server = server
        self._request = request  # toolwire.session.RequestContext, when over the wire
        self._modern = modern  # set for an MCP 2026-07-28 request (host/modern.py)

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress; becomes ``notifications/progress`` when the caller sent a token.

        ``progress`` must increase from one report to the next; a report that does not
        is dropped, as is any report after the call finished (MCP 2025-11-25 "Progress").
        """
        if self._request is not None:
            self._request.report_progress(progress, total, message)
            await self._drain()
        # Always a scheduling point: a tool that reports progress in a loop without
        # awaiting anything else still lets the host answer, cancel and time it out.
        await anyio.lowlevel.checkpoint()

    async def _drain(self) -> None:
        """Wait while the client is not reading (bounded output queue, see Session.drain)."""
        session = self._server.session if self._server is not None else None
        if session is not None:
            await session.drain()

    def report_progress_from_thread(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """:meth:`report_progress` for synchronous tools running in a worker thread
        (waits, like it, while the client is not reading)."""
        anyio.from_thread.run(self.report_progress, progress, total, message)

    def log_from_thread(self, level: str, data: Any, logger: str | None = None) -> None:
        """:meth:`log` for synchronous tools running in a worker thread.

        Raises:
            ValueError: ``level`` is not one of the RFC 5424 names in :data:`LOG_LEVELS`.
        """
        anyio.from_thread.run(self.log, level, data, logger)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message {level, logger?, data}`` to the client.

        Sent only when ``level`` is at or above the level the client chose with
        ``logging/setLevel`` (default "info"). Also written to the host's stderr log.

        Raises:
            ValueError: ``level`` is not one of the RFC 5424 names in :data:`LOG_LEVELS`.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {list(LOG_LEVELS)}")
        _log.log(
            logging.WARNING if LOG_LEVELS[level] >= 3 else logging.INFO,
            "[%s] %s",
            self.tool_name,
            data,
        )
        if self._modern is not None:
            # 2026-07-28: only when this request asked, with _meta logLevel.
            self._modern.send_log(level, data, logger or self.tool_name)
            await self._drain()
        elif self._server is not None:
            self._server.send_log(level, data, logger or self.tool_name)
            await self._drain()
        await anyio.lowlevel.checkpoint()

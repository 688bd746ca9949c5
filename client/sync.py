"""A small synchronous facade over :class:`~toolwire.client.Client`, for scripts.

The asynchronous client runs in an event loop on a background thread (an anyio
blocking portal); each method here submits one coroutine to it and waits::

    with connect_sync(host_command(root=".")) as c:
        print([t.name for t in c.list_tools()])
        print(c.call_tool("read", {"path": "README.md"}).text)

Callbacks (``on_progress``, ``on_log``) run on the portal's thread.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal

from toolwire.models import Implementation, ToolDefinition

from .client import Client, ProgressCallback, ToolReply

__all__ = ["SyncClient", "connect_sync"]


class SyncClient:
    """A blocking wrapper of a :class:`Client`; a context manager.

    Args:
        client: a client that was not entered yet (from :meth:`Client.spawn` or
            :meth:`Client.connect`). :meth:`start` (or ``with``) connects it.
    """

    def __init__(self, client: Client) -> None:
        self.client = client
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._client_cm: AbstractContextManager[Client] | None = None

    @classmethod
    def spawn(
        cls, command: Sequence[str | os.PathLike[str]] | None = None, **options: Any
    ) -> SyncClient:
        """Start a host with :meth:`Client.spawn` (same arguments) and connect to it."""
        return cls(Client.spawn(command, **options)).start()

    def start(self) -> SyncClient:
        """Start the event-loop thread, spawn/connect and do the handshake.

        Raises:
            RuntimeError: already started.
            JsonRpcError: the handshake failed (the loop thread is stopped again).
        """
        if self._portal_cm is not None:
            raise RuntimeError("this SyncClient was already started")
        self._portal_cm = start_blocking_portal(backend="asyncio")
        self._portal = self._portal_cm.__enter__()
        try:
            cm = self._portal.wrap_async_context_manager(self.client)
            cm.__enter__()
            self._client_cm = cm
        except BaseException as exc:
            self._portal_cm.__exit__(type(exc), exc, exc.__traceback__)
            self._portal_cm = self._portal = None
            raise
        return self

    def close(self) -> None:
        """Close the connection (ending a spawned host) and stop the loop thread."""
        client_cm, portal_cm = self._client_cm, self._portal_cm
        self._client_cm = None
        self._portal_cm = self._portal = None
        try:
            if client_cm is not None:
                client_cm.__exit__(None, None, None)
        finally:
            if portal_cm is not None:
                portal_cm.__exit__(None, None, None)

    def __enter__(self) -> SyncClient:
        if self._portal_cm is None:
            self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self, func: Any, *args: Any, **kwargs: Any) -> Any:
        if self._portal is None:
            raise RuntimeError("the SyncClient is not started (or already closed)")
        return self._portal.call(functools.partial(func, *args, **kwargs))

    # ------------------------------------------------------------------ API

    @property
    def server_info(self) -> Implementation:
        """``serverInfo`` from the handshake."""
        return self.client.server_info

    @property
    def instructions(self) -> str | None:
        """The host's ``instructions``, if any."""
        return self.client.instructions

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The host's ``capabilities``."""
        return self.client.server_capabilities

    def ping(self, *, timeout: float | None = 10.0) -> None:
        """Blocking :meth:`Client.ping`."""
        self._run(self.client.ping, timeout=timeout)

    def list_tools(self, *, timeout: float | None = 60.0) -> list[ToolDefinition]:
        """Blocking :meth:`Client.list_tools`: every tool definition, all pages."""
        tools: list[ToolDefinition] = self._run(self.client.list_tools, timeout=timeout)
        return tools

    def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
        raise_on_protocol_error: bool | None = None,
    ) -> ToolReply:
        """Blocking :meth:`Client.call_tool` (same arguments, results and errors)."""
        result: ToolReply = self._run(
            self.client.call_tool,
            name,
            arguments,
            on_progress=on_progress,
            timeout=timeout,
            raise_on_protocol_error=raise_on_protocol_error,
        )
        return result


def connect_sync(
    command: Sequence[str | os.PathLike[str]] | None = None, **options: Any
) -> SyncClient:
    """Spawn a host (default: :func:`~toolwire.client.host_command`) and return a
    connected :class:`SyncClient`; the options are those of :meth:`Client.spawn`."""
    return SyncClient.spawn(command, **options)

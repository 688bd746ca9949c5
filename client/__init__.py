"""toolwire.client: talk to a toolwire host (or any MCP tool server) from Python.

Asynchronous (anyio)::

    from toolwire.client import Client, host_command

    async with Client.spawn(host_command(root=".")) as c:
        for t in await c.list_tools():
            print(t.name)
        res = await c.call_tool("ls", {"path": "."})
        print(res.call_id, res.text)

Synchronous, for scripts::

    from toolwire.client import connect_sync

    with connect_sync(host_command(root=".")) as c:
        print(c.call_tool("ls", {"path": "."}).text)

The command line (``toolwire serve|list|call|demo``) lives in
:mod:`toolwire.client.cli`.
"""

from __future__ import annotations

from .client import (
    MODEL_ERROR_CODES,
    CallTimeout,
    Client,
    LogMessage,
    Progress,
    ProgressCallback,
    StderrMode,
    ToolCallResult,
    host_command,
)
from .sync import SyncClient, connect_sync

__all__ = [
    "MODEL_ERROR_CODES",
    "CallTimeout",
    "Client",
    "LogMessage",
    "Progress",
    "ProgressCallback",
    "StderrMode",
    "SyncClient",
    "ToolCallResult",
    "connect_sync",
    "host_command",
]

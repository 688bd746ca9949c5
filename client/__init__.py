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

Approval of calls the host's policy marks (``toolwire serve --approve ...``)::

    async def approve(req: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.allow() if req.read_only else ApprovalDecision.deny("no")

    async with Client.spawn(host_command(extra_args=["--approve", "all"]),
                            on_approval=approve) as c: ...

Batches (``tools/callBatch``, with a fallback to concurrent ``tools/call``)::

    batch = await c.call_batch([{"id": "a", "name": "ls", "arguments": {}}], on_event=print)

The agent loop and model providers: :mod:`toolwire.client.agent`,
:mod:`toolwire.client.providers`, :mod:`toolwire.client.adapters`. The client's command
line (``toolwire list|call|agent|demo``) lives in :mod:`toolwire.client.cli`; the
``toolwire`` command itself is :mod:`toolwire.cli`, which runs ``serve`` with the host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire._lazy import lazy_exports

__all__ = [
    "MODEL_ERROR_CODES",
    "ApprovalCallback",
    "ApprovalDecision",
    "ApprovalRequest",
    "BatchCall",
    "BatchEvent",
    "BatchProgress",
    "BatchResult",
    "CallEnded",
    "CallProgress",
    "CallStarted",
    "CallTimeout",
    "Client",
    "LogMessage",
    "Progress",
    "ProgressCallback",
    "StderrMode",
    "StdioTransport",
    "SyncClient",
    "ToolReply",
    "connect_sync",
    "host_command",
]

# Imported on first use, so `toolwire serve` (whose CLI lives in this package) does not
# load the client, pydantic and its models before the host starts.
__getattr__ = lazy_exports(
    __name__,
    {
        "ApprovalCallback": ".approval",
        "ApprovalDecision": ".approval",
        "ApprovalRequest": ".approval",
        "BatchCall": ".batch",
        "BatchEvent": ".batch",
        "BatchProgress": ".batch",
        "BatchResult": ".batch",
        "CallEnded": ".batch",
        "CallProgress": ".batch",
        "CallStarted": ".batch",
        "CallTimeout": ".client",
        "Client": ".client",
        "LogMessage": ".client",
        "MODEL_ERROR_CODES": ".client",
        "Progress": ".client",
        "ProgressCallback": ".client",
        "StderrMode": ".transport",
        "StdioTransport": ".transport",
        "SyncClient": ".sync",
        "ToolReply": ".client",
        "connect_sync": ".sync",
        "host_command": ".transport",
    },
)

if TYPE_CHECKING:
    from .approval import ApprovalCallback, ApprovalDecision, ApprovalRequest
    from .batch import (
        BatchCall,
        BatchEvent,
        BatchProgress,
        BatchResult,
        CallEnded,
        CallProgress,
        CallStarted,
    )
    from .client import (
        MODEL_ERROR_CODES,
        CallTimeout,
        Client,
        LogMessage,
        Progress,
        ProgressCallback,
        ToolReply,
    )
    from .sync import SyncClient, connect_sync
    from .transport import StderrMode, StdioTransport, host_command

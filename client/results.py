"""What a call gives back on the client side: a call's result and its progress.

Shared by :mod:`toolwire.client.client` (single calls) and :mod:`toolwire.client.batch`
(batches), which therefore need not import each other at module level.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolwire.errors import JsonRpcError
from toolwire.messages import RequestId
from toolwire.models import CallToolResult, TextContent, dump

from .conversation import ResultView

__all__ = ["Progress", "ProgressCallback", "ToolReply"]


@dataclass(frozen=True, slots=True)
class Progress:
    """One ``notifications/progress`` for a call (MCP 2025-11-25 "Progress").

    Attributes:
        progress: the progress so far; strictly increasing within one call.
        total: the total, when the tool knows it.
        message: a short human-readable status, when given.
    """

    progress: float
    total: float | None = None
    message: str | None = None


ProgressCallback = Callable[[Progress], object]
"""Called with each :class:`Progress` of a call, in order, inside the client's read loop:
keep it quick and non-blocking (to do async work, push into a memory object stream).
An exception it raises is logged and otherwise ignored, so a display bug never loses a
tool's result."""


@dataclass(frozen=True, slots=True)
class ToolReply(ResultView):
    """A ``tools/call`` result paired with the call's id.

    Attributes:
        call_id: the JSON-RPC id of the ``tools/call`` request (the host's ``ctx.call_id``).
        name: the tool name that was called.
        result: the typed MCP ``CallToolResult``.
        protocol_error: set when the host answered with a JSON-RPC error that
            :data:`~toolwire.client.client.MODEL_ERROR_CODES` turns into this error result (unknown tool,
            malformed params); None for a normal result.
    """

    call_id: RequestId
    name: str
    result: CallToolResult
    protocol_error: JsonRpcError | None = None

    def to_wire(self) -> dict[str, Any]:
        """The result in its wire form (a JSON object shaped like MCP ``CallToolResult``)."""
        return dump(self.result)

    @classmethod
    def from_protocol_error(cls, call_id: RequestId, name: str, error: JsonRpcError) -> ToolReply:
        """An error result whose text is ``error.message``."""
        result = CallToolResult(content=[TextContent(text=error.message)], is_error=True)
        return cls(call_id, name, result, error)

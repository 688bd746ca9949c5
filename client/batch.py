"""Types of ``tools/callBatch`` on the client: the calls, the result and the live events.

A batch runs several tool calls in one request (protocol.md, "Batches"): the host
checks them in source order, runs the rest concurrently (or one by one) and answers
with one result per call, in source order, each paired with its id. While it runs,
a batch sent with a progress token gets per-call notifications, which
:meth:`~toolwire.client.Client.call_batch` hands to its ``on_event`` callback as the
event objects below.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from toolwire.extensions import BatchCall
from toolwire.messages import RequestId

from .results import Progress, ToolReply

__all__ = [
    "BatchCall",
    "BatchEvent",
    "BatchEventCallback",
    "BatchMode",
    "BatchProgress",
    "BatchResult",
    "CallEnded",
    "CallProgress",
    "CallStarted",
]

BatchMode = Literal["parallel", "sequential"]
"""How the host runs a batch's calls once they pass preflight."""


@dataclass(frozen=True)
class BatchResult:
    """The answer to a batch.

    Attributes:
        results: one per call, in source order; ``call_id`` is the batch call's id.
        terminate: True when every result asked the agent loop to stop and none is an
            error (the host's rule, applied locally when the batch was emulated).
        emulated: True when the host had no ``tools/callBatch`` (-32601) and the client
            ran the calls as concurrent ``tools/call`` requests instead.
    """

    results: list[ToolReply]
    terminate: bool = False
    emulated: bool = False

    def by_id(self) -> dict[RequestId, ToolReply]:
        """The results keyed by call id."""
        return {r.call_id: r for r in self.results}


@dataclass(frozen=True)
class CallStarted:
    """A call of the batch started executing (``notifications/toolwire/callStarted``)."""

    call_id: RequestId
    name: str


@dataclass(frozen=True)
class CallProgress:
    """A running call reported progress (``notifications/toolwire/callProgress``)."""

    call_id: RequestId
    progress: Progress


@dataclass(frozen=True)
class CallEnded:
    """A call's result is final (``notifications/toolwire/callEnded``); completion order."""

    call_id: RequestId
    is_error: bool


@dataclass(frozen=True)
class BatchProgress:
    """The batch's own ``notifications/progress``: ``progress`` calls of ``total`` finished."""

    progress: float
    total: float | None = None
    message: str | None = None


BatchEvent = CallStarted | CallProgress | CallEnded | BatchProgress
"""Anything :meth:`~toolwire.client.Client.call_batch` reports while a batch runs."""

BatchEventCallback = Callable[[BatchEvent], object]
"""Called with each :data:`BatchEvent`, in arrival order, inside the client's read loop:
keep it quick. An exception it raises is logged and ignored."""

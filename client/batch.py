"""Types of ``tools/callBatch`` on the client: the calls, the result and the live events.

A batch runs several tool calls in one request (protocol.md, "Batches"): the host
checks them in source order, runs the rest concurrently (or one by one) and answers
with one result per call, in source order, each paired with its id. While it runs,
a batch sent with a progress token gets per-call notifications, which
:meth:`~toolwire.client.Client.call_batch` hands to its ``on_event`` callback as the
event objects below.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolwire.messages import RequestId

from .results import Progress, ToolCallResult

__all__ = [
    "LENGTH_NOT_RUN_MESSAGE",
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

LENGTH_NOT_RUN_MESSAGE = (
    'Tool call "{name}" was not run: the model\'s output reached its length limit, so the '
    "arguments may be incomplete. Send the call again with complete arguments."
)
"""The error text a call of a length-truncated message gets when the client itself
applies the rule (a host without ``tools/callBatch``); ``{name}`` is the tool's name."""


@dataclass(frozen=True)
class BatchCall:
    """One call of a batch.

    Attributes:
        id: the call id, unique in the batch (an agent uses the model's tool-call id).
        name: the tool's name.
        arguments: its arguments (a JSON object).
    """

    id: RequestId
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, value: BatchCall | Mapping[str, Any]) -> BatchCall:
        """A BatchCall from itself or a mapping ``{id, name, arguments?}``.

        Raises:
            TypeError: the mapping lacks a string name or a string/integer id.
        """
        if isinstance(value, BatchCall):
            return value
        call_id, name = value.get("id"), value.get("name")
        if not isinstance(call_id, str | int) or isinstance(call_id, bool):
            raise TypeError(f"a batch call needs a string or integer id, got {call_id!r}")
        if not isinstance(name, str):
            raise TypeError(f"a batch call needs a string name, got {name!r}")
        return cls(call_id, name, dict(value.get("arguments") or {}))

    def to_wire(self) -> dict[str, Any]:
        """``{id, name, arguments}``."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


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

    results: list[ToolCallResult]
    terminate: bool = False
    emulated: bool = False

    def by_id(self) -> dict[RequestId, ToolCallResult]:
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

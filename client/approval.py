"""Approving tool calls on the client: the ``toolwire/approve`` request the host sends.

A host started with ``--approve NAMES|destructive|all`` asks the client, before it
runs a call its policy marks, with a host→client request (protocol.md, "Approval")::

    toolwire/approve {callId, name, arguments, annotations?}
    -> {decision: "allow" | "deny", reason?, arguments?}

The host sends it only to a client that declared ``{"toolwire": {"approval": true}}``
in its ``initialize`` capabilities, which :class:`~toolwire.client.Client` does when it
is given an ``on_approval`` callback. The callback receives an
:class:`ApprovalRequest` and returns an :class:`ApprovalDecision` (or a bool). A
callback that raises, or returns anything else, denies the call with a reason saying
so: a broken approver never lets a call through.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from toolwire.errors import INVALID_PARAMS, JsonRpcError
from toolwire.messages import RequestId, is_valid_id

__all__ = [
    "APPROVAL_CAPABILITY",
    "ApprovalCallback",
    "ApprovalDecision",
    "ApprovalRequest",
    "decide",
]

log = logging.getLogger("toolwire.client")

APPROVAL_CAPABILITY: dict[str, Any] = {"toolwire": {"approval": True}}
"""The ``initialize`` client capability that asks the host for ``toolwire/approve``."""


@dataclass(frozen=True)
class ApprovalRequest:
    """A call the host wants approved before it runs it.

    Attributes:
        call_id: the call's id: the ``tools/call`` request id, or the call's ``id`` in a
            ``tools/callBatch``.
        name: the tool's name.
        arguments: the arguments as validated by the host (a JSON object).
        annotations: the tool's annotations (``readOnlyHint``, ``destructiveHint``, ...),
            empty when it has none.
    """

    call_id: RequestId
    name: str
    arguments: dict[str, Any]
    annotations: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_params(cls, params: Any) -> ApprovalRequest:
        """Read ``toolwire/approve`` params.

        Raises:
            JsonRpcError: -32602 when they are malformed (no string ``name``, ``callId``
                not a string or integer, ``arguments``/``annotations`` not objects).
        """
        if type(params) is not dict:
            raise JsonRpcError(INVALID_PARAMS, "toolwire/approve params must be an object")
        call_id = params.get("callId")
        name = params.get("name")
        arguments = params.get("arguments", {})
        annotations = params.get("annotations") or {}
        if not is_valid_id(call_id) or call_id is None:
            raise JsonRpcError(INVALID_PARAMS, "toolwire/approve needs a string or integer callId")
        if not isinstance(name, str):
            raise JsonRpcError(INVALID_PARAMS, "toolwire/approve needs a string name")
        if not isinstance(arguments, dict) or not isinstance(annotations, dict):
            raise JsonRpcError(
                INVALID_PARAMS, "toolwire/approve arguments and annotations must be objects"
            )
        return cls(call_id, name, arguments, annotations)

    @property
    def read_only(self) -> bool:
        """True when the tool declares ``readOnlyHint: true``."""
        return self.annotations.get("readOnlyHint") is True


@dataclass(frozen=True)
class ApprovalDecision:
    """The client's answer: allow (optionally with replacement arguments) or deny.

    Attributes:
        allowed: True to let the call run.
        reason: why (shown to the model in the error result of a denied call).
        arguments: replacement arguments for an allowed call; the host validates them
            again before use. None keeps the original arguments.
    """

    allowed: bool
    reason: str | None = None
    arguments: dict[str, Any] | None = None

    @classmethod
    def allow(
        cls, arguments: Mapping[str, Any] | None = None, reason: str | None = None
    ) -> ApprovalDecision:
        """Allow the call, optionally with replacement ``arguments``."""
        return cls(True, reason, dict(arguments) if arguments is not None else None)

    @classmethod
    def deny(cls, reason: str = "denied by the user") -> ApprovalDecision:
        """Deny the call; ``reason`` reaches the model."""
        return cls(False, reason)

    def to_wire(self) -> dict[str, Any]:
        """The ``toolwire/approve`` result object."""
        out: dict[str, Any] = {"decision": "allow" if self.allowed else "deny"}
        if self.reason:
            out["reason"] = self.reason
        if self.allowed and self.arguments is not None:
            out["arguments"] = self.arguments
        return out


ApprovalCallback = Callable[
    [ApprovalRequest], ApprovalDecision | bool | Awaitable[ApprovalDecision | bool]
]
"""``callback(request) -> ApprovalDecision | bool`` (or a coroutine giving one). True and
False are short for allow and deny. It runs in the client's event loop: a callback that
blocks (a terminal prompt) should be a coroutine that moves the blocking part to a
worker thread (``anyio.to_thread.run_sync``)."""


async def decide(callback: ApprovalCallback, request: ApprovalRequest) -> ApprovalDecision:
    """Run ``callback`` for ``request`` and return a well-formed decision.

    Never raises for the callback's faults: an exception, a result that is neither an
    :class:`ApprovalDecision` nor a bool, or replacement arguments that are not an
    object all give a denial whose reason says what went wrong.
    """
    try:
        answer: Any = callback(request)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:
        log.exception("approval callback failed for call %r (%s)", request.call_id, request.name)
        return ApprovalDecision.deny(
            f"the approval callback failed ({type(exc).__name__}: {_safe_str(exc)})"
        )
    if isinstance(answer, bool):
        return ApprovalDecision(answer, None if answer else "denied by the client")
    if isinstance(answer, ApprovalDecision):
        if answer.arguments is not None and not isinstance(answer.arguments, dict):
            return ApprovalDecision.deny(
                "the approval callback gave replacement arguments that are not an object"
            )
        return answer
    return ApprovalDecision.deny(
        f"the approval callback returned {type(answer).__name__}, not a decision"
    )


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return "(unprintable)"

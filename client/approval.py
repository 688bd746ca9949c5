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
from collections.abc import Awaitable, Callable
from typing import Any

from toolwire.extensions import APPROVAL_CAPABILITY, ApprovalDecision, ApprovalRequest

__all__ = [
    "APPROVAL_CAPABILITY",
    "ApprovalCallback",
    "ApprovalDecision",
    "ApprovalRequest",
    "decide",
]

log = logging.getLogger("toolwire.client")

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

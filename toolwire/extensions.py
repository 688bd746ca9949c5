"""toolwire's own protocol beside MCP: its method names, ``_meta`` keys, shapes and rules.

The home of everything toolwire adds to MCP (protocol.md, "Batches", "Approval",
"Results"); the host and the client both import it, so a name or a rule is written
once. The names are defined in :mod:`toolwire.constants` (which a worker process
imports without the shapes below) and re-exported here. ``_meta`` keys follow MCP 2025-11-25 "_meta": a prefix, a slash, a name.

* ``tools/callBatch {calls: [{id, name, arguments?}], mode?, stopReason?}`` ->
  ``{results: [{id, name, result}], terminate?}``; with ``_meta.progressToken`` the host
  sends ``notifications/toolwire/call{Started,Progress,Ended}`` while it runs.
* ``toolwire/approve {callId, name, arguments, annotations?}`` (host -> client) ->
  ``{decision: "allow" | "deny", reason?, arguments?}``, sent only to a client that
  declared :data:`APPROVAL_CAPABILITY`.
* result ``_meta``: ``toolwire/details`` (data for programs, not the model) and
  ``toolwire/terminate`` (the tool asks the agent loop to stop);
* definition ``_meta``: ``toolwire/promptSnippet`` and ``toolwire/promptGuidelines``.

No third-party imports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .constants import (
    APPROVAL_CAPABILITY,
    APPROVE,
    CALL_BATCH,
    CALL_ENDED,
    CALL_PROGRESS,
    CALL_STARTED,
    DETAILS_META_KEY,
    EXTENSION_CAPABILITY,
    PROMPT_GUIDELINES_META_KEY,
    PROMPT_SNIPPET_META_KEY,
    TERMINATE_META_KEY,
)
from .errors import INVALID_PARAMS, JsonRpcError
from .messages import RequestId, empty_or_object, is_valid_id

__all__ = [
    "APPROVAL_CAPABILITY",
    "APPROVE",
    "CALL_BATCH",
    "CALL_ENDED",
    "CALL_PROGRESS",
    "CALL_STARTED",
    "DETAILS_META_KEY",
    "EXTENSION_CAPABILITY",
    "PROMPT_GUIDELINES_META_KEY",
    "PROMPT_SNIPPET_META_KEY",
    "TERMINATE_META_KEY",
    "ApprovalDecision",
    "ApprovalRequest",
    "BatchCall",
    "CallBatchRequest",
    "batch_terminates",
    "declares_approval",
    "length_stop_text",
    "parse_call_batch",
    "result_terminates",
]


def declares_approval(capabilities: Mapping[str, Any]) -> bool:
    """Whether client ``capabilities`` hold ``{"toolwire": {"approval": true}}``."""
    ext = capabilities.get(EXTENSION_CAPABILITY)
    return type(ext) is dict and ext.get("approval") is True


# ------------------------------------------------------------------ tools/callBatch


@dataclass(frozen=True)
class BatchCall:
    """One call of a ``tools/callBatch``: ``{id, name, arguments?}``.

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
class CallBatchRequest:
    """``tools/callBatch`` params, checked.

    Attributes:
        calls: the calls in source order.
        sequential: True for ``mode: "sequential"``.
        stop_reason: the model message's stop reason, or None.
        malformed: indices of calls whose ``arguments`` was not an object (their
            :attr:`BatchCall.arguments` is ``{}``; they get an error result and never run).
    """

    calls: list[BatchCall]
    sequential: bool = False
    stop_reason: str | None = None
    malformed: frozenset[int] = frozenset()


def parse_call_batch(params: Any) -> CallBatchRequest:
    """Check ``tools/callBatch`` params.

    Raises:
        JsonRpcError: -32602 for params that are not an object, ``calls`` not an array,
            an entry that is not an object or lacks a string/integer ``id`` or a string
            ``name``, duplicate ids, an unknown ``mode``, a ``stopReason`` that is not a
            string.
    """
    if type(params) is not dict:
        raise JsonRpcError(
            INVALID_PARAMS, f"{CALL_BATCH} params must be an object {{calls, mode?, stopReason?}}"
        )
    calls = params.get("calls")
    if type(calls) is not list:
        raise JsonRpcError(INVALID_PARAMS, f"{CALL_BATCH} needs 'calls', an array")
    mode = params.get("mode")
    if mode is None:
        mode = "parallel"
    if mode not in ("parallel", "sequential"):
        raise JsonRpcError(INVALID_PARAMS, f'Unknown mode {mode!r}: use "parallel" or "sequential"')
    stop_reason = params.get("stopReason")
    if stop_reason is not None and type(stop_reason) is not str:
        raise JsonRpcError(INVALID_PARAMS, "'stopReason' must be a string")
    out: list[BatchCall] = []
    malformed: set[int] = set()
    seen: set[RequestId] = set()
    for i, entry in enumerate(calls):
        if type(entry) is not dict:
            raise JsonRpcError(
                INVALID_PARAMS, f"calls[{i}] must be an object {{id, name, arguments?}}"
            )
        call_id = entry.get("id")
        if not is_valid_id(call_id):
            raise JsonRpcError(INVALID_PARAMS, f"calls[{i}].id must be a string or an integer")
        if call_id in seen:
            raise JsonRpcError(INVALID_PARAMS, f"Duplicate call id {call_id!r} in the batch")
        seen.add(call_id)
        name = entry.get("name")
        if type(name) is not str:
            raise JsonRpcError(INVALID_PARAMS, f"calls[{i}].name must be a string")
        arguments = empty_or_object(entry.get("arguments"))  # [] counts as {}
        if arguments is None:
            malformed.add(i)
            arguments = {}
        out.append(BatchCall(call_id, name, arguments))
    return CallBatchRequest(out, mode == "sequential", stop_reason, frozenset(malformed))


def length_stop_text(name: str) -> str:
    """The error result text of a call not run because the model's output was cut off
    (``stopReason: "length"``: its arguments may be incomplete)."""
    return (
        f'Tool call "{name}" was not executed: the model\'s output reached its length limit, '
        "so its arguments may be incomplete. Issue the call again with complete arguments."
    )


def result_terminates(result: Mapping[str, Any]) -> bool:
    """Whether a ``tools/call`` result (wire form) asks the agent loop to stop: not an
    error, and ``_meta["toolwire/terminate"]`` is true."""
    meta = result.get("_meta")
    return (
        result.get("isError") is not True
        and isinstance(meta, Mapping)
        and meta.get(TERMINATE_META_KEY) is True
    )


def batch_terminates(results: Iterable[Mapping[str, Any]]) -> bool:
    """The terminate rule of a batch: at least one result, and every result asks to stop
    (:func:`result_terminates`); one error or one result without the flag keeps going."""
    seen = False
    for result in results:
        if not result_terminates(result):
            return False
        seen = True
    return seen


# ------------------------------------------------------------------ toolwire/approve


@dataclass(frozen=True)
class ApprovalRequest:
    """``toolwire/approve`` params: a call the host wants approved before it runs it.

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
            raise JsonRpcError(INVALID_PARAMS, f"{APPROVE} params must be an object")
        call_id = params.get("callId")
        name = params.get("name")
        arguments = params.get("arguments", {})
        annotations = params.get("annotations") or {}
        if not is_valid_id(call_id) or call_id is None:
            raise JsonRpcError(INVALID_PARAMS, f"{APPROVE} needs a string or integer callId")
        if not isinstance(name, str):
            raise JsonRpcError(INVALID_PARAMS, f"{APPROVE} needs a string name")
        if not isinstance(arguments, dict) or not isinstance(annotations, dict):
            raise JsonRpcError(
                INVALID_PARAMS, f"{APPROVE} arguments and annotations must be objects"
            )
        return cls(call_id, name, arguments, annotations)

    def to_params(self) -> dict[str, Any]:
        """``{callId, name, arguments, annotations?}`` (annotations only when non-empty)."""
        out: dict[str, Any] = {"callId": self.call_id, "name": self.name}
        out["arguments"] = self.arguments
        if self.annotations:
            out["annotations"] = self.annotations
        return out

    @property
    def read_only(self) -> bool:
        """True when the tool declares ``readOnlyHint: true``."""
        return self.annotations.get("readOnlyHint") is True


@dataclass(frozen=True)
class ApprovalDecision:
    """The answer to ``toolwire/approve``: allow (optionally with replacement arguments)
    or deny.

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

    @classmethod
    def from_wire(cls, result: Any) -> ApprovalDecision:
        """Check a ``toolwire/approve`` result.

        Raises:
            ValueError: the result is malformed; the message says why.
        """
        if type(result) is not dict:
            raise ValueError("the answer is not an object")
        decision = result.get("decision")
        if decision not in ("allow", "deny"):
            raise ValueError(f'\'decision\' must be "allow" or "deny", not {decision!r}')
        reason = result.get("reason")
        if reason is not None and type(reason) is not str:
            raise ValueError("'reason' must be a string")
        arguments = result.get("arguments")
        if arguments is not None and type(arguments) is not dict:
            raise ValueError("'arguments' must be an object")
        return cls(decision == "allow", reason, arguments)

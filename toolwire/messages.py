"""JSON-RPC 2.0 message types and envelope validation (JSON-RPC 2.0 §4–§6).

Messages are kept as the decoded JSON objects (dicts) for speed; these classes are
thin typed views made once per message. :func:`classify` turns one decoded JSON
value into a :class:`Request`, :class:`Notification`, :class:`Response` or an
:class:`Invalid` describing the error reply it deserves.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from ._record import Record
from .errors import INVALID_REQUEST, JsonRpcError

__all__ = [
    "Invalid",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "classify",
    "empty_or_object",
    "error_response",
    "is_valid_id",
    "notification",
    "request",
    "response",
]

RequestId = str | int
"""A request id: any JSON string or integer (0 and negatives included), echoed exactly."""


class Request(Record):
    """A call expecting a response. ``params`` is None when the member was absent or null."""

    __slots__ = __match_args__ = ("id", "method", "params")

    def __init__(
        self, id: RequestId, method: str, params: dict[str, Any] | list[Any] | None
    ) -> None:
        self.id = id
        self.method = method
        self.params = params


class Notification(Record):
    """A call with no ``id``: it is never answered (JSON-RPC 2.0 §4.1)."""

    __slots__ = __match_args__ = ("method", "params")

    def __init__(self, method: str, params: dict[str, Any] | list[Any] | None) -> None:
        self.method = method
        self.params = params


class Response(Record):
    """A reply to one of our requests: exactly one of ``result`` / ``error`` applies."""

    __slots__ = __match_args__ = ("id", "result", "error")

    def __init__(self, id: RequestId | None, result: Any, error: JsonRpcError | None) -> None:
        self.id = id
        self.result = result
        self.error = error


class Invalid(Record):
    """A message that must be answered with an error (or dropped when ``id`` is unknown).

    Attributes:
        id: the id to answer with; None answers with ``"id": null``.
        error: the error to send.
    """

    __slots__ = __match_args__ = ("id", "error")

    def __init__(self, id: RequestId | None, error: JsonRpcError) -> None:
        self.id = id
        self.error = error


Message = Request | Notification | Response


def is_valid_id(value: Any) -> TypeGuard[RequestId]:
    """True for a JSON string or integer (bool excluded: it is not a JSON number)."""
    t = type(value)
    return t is str or t is int


def classify(obj: Any) -> Message | Invalid:
    """Validate one decoded JSON-RPC object (not a batch) and type it.

    Rules (JSON-RPC 2.0 §4, §5): ``jsonrpc`` must be exactly ``"2.0"``; a request's
    ``method`` is a string; ``id`` is a string or integer (null and fractional ids are
    refused with -32600); ``params``, when present, is an object or array; ``"params": null`` counts as
    absent (clients send it for "no params"; JSON-RPC 2.0 §4.2 makes the member
    optional, and null carries no argument), for requests and notifications alike. A response
    (no ``method``; ``result`` or ``error``) carries ``id`` and exactly one of
    ``result`` / ``error``; a malformed one is typed as a :class:`Response` with an
    error, never as :class:`Invalid`, because responses are never answered.
    """
    if type(obj) is not dict:
        return Invalid(None, JsonRpcError(INVALID_REQUEST, "Message must be a JSON object"))
    raw_id = obj.get("id")
    has_id = "id" in obj
    good_id: RequestId | None = raw_id if is_valid_id(raw_id) else None
    if "method" not in obj and ("result" in obj or "error" in obj):
        return _response(obj, good_id)
    if obj.get("jsonrpc") != "2.0":
        return Invalid(good_id, JsonRpcError(INVALID_REQUEST, 'The "jsonrpc" member must be "2.0"'))
    method = obj.get("method")
    if method is not None:
        if type(method) is not str:
            return Invalid(good_id, JsonRpcError(INVALID_REQUEST, '"method" must be a string'))
        params = obj.get("params")
        if params is not None and type(params) is not dict and type(params) is not list:
            return Invalid(
                good_id,
                JsonRpcError(INVALID_REQUEST, '"params" must be an object or an array'),
            )
        if not has_id:
            return Notification(method, params)
        if good_id is None:
            return Invalid(
                None, JsonRpcError(INVALID_REQUEST, '"id" must be a string or an integer')
            )
        return Request(good_id, method, params)
    return Invalid(good_id, JsonRpcError(INVALID_REQUEST, 'Missing "method"'))


def _response(obj: dict[str, Any], id: RequestId | None) -> Response:
    """Type a response. A response is never answered (JSON-RPC 2.0 §5), so a malformed
    one becomes a :class:`Response` carrying an error for the request it names (its id
    is None when unusable, and the session then only logs it)."""
    if obj.get("jsonrpc") != "2.0":
        return Response(
            id, None, JsonRpcError(INVALID_REQUEST, 'Malformed response: "jsonrpc" must be "2.0"')
        )
    if ("result" in obj) == ("error" in obj):
        return Response(
            id,
            None,
            JsonRpcError(
                INVALID_REQUEST, 'Malformed response: it must have exactly one of "result", "error"'
            ),
        )
    if "error" in obj:  # an error may carry "id": null (the peer could not read ours)
        return Response(id, None, JsonRpcError.from_dict(obj["error"]))
    if id is None:
        return Response(
            None, None, JsonRpcError(INVALID_REQUEST, "Malformed response: missing or invalid id")
        )
    return Response(id, obj["result"], None)


def empty_or_object(value: Any) -> dict[str, Any] | None:
    """A member that must be a JSON object (a call's ``arguments``), as one.

    Returns ``value`` itself when it is an object, ``{}`` when it is absent (None) or an
    *empty* array (Neovim's Lua encodes an empty table as ``[]``, so ``[]`` is what such
    a client sends for "no arguments"), and None for anything else (a non-empty array, a
    string, a number), which the caller refuses.
    """
    t = type(value)
    if t is dict:
        return value  # type: ignore[no-any-return]
    if value is None or (t is list and not value):
        return {}
    return None


def request(id: RequestId, method: str, params: Any = None) -> dict[str, Any]:
    """Build a request object; ``params`` is omitted when None."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: Any = None) -> dict[str, Any]:
    """Build a notification object; ``params`` is omitted when None."""
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def response(id: RequestId, result: Any) -> dict[str, Any]:
    """Build a success response."""
    return {"jsonrpc": "2.0", "id": id, "result": result}


def error_response(id: RequestId | None, error: JsonRpcError) -> dict[str, Any]:
    """Build an error response; ``id`` None becomes ``"id": null`` (JSON-RPC 2.0 §5)."""
    return {"jsonrpc": "2.0", "id": id, "error": error.to_dict()}

"""JSON-RPC 2.0 error codes and the exception that carries one.

Codes come from JSON-RPC 2.0 §5.1 (-32700 .. -32603), the LSP specification
(-32800 RequestCancelled, -32002 ServerNotInitialized) and toolwire's own range
(-32000 .. -32019, "implementation-defined server errors" in JSON-RPC 2.0).
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
"""Invalid JSON was received (JSON-RPC 2.0 §5.1). The reply's id is null."""
INVALID_REQUEST = -32600
"""The JSON is not a valid Request object (JSON-RPC 2.0 §5.1)."""
METHOD_NOT_FOUND = -32601
"""The method does not exist or is not available (JSON-RPC 2.0 §5.1)."""
INVALID_PARAMS = -32602
"""Invalid method parameters (JSON-RPC 2.0 §5.1); also MCP's code for an unknown tool."""
INTERNAL_ERROR = -32603
"""Internal JSON-RPC error (JSON-RPC 2.0 §5.1). Details go to the log, never the wire."""
SERVER_NOT_INITIALIZED = -32002
"""LSP: a request arrived that needs a lifecycle state the peer is not in."""
REQUEST_CANCELLED = -32800
"""LSP: the request was cancelled by a `$/cancelRequest` notification."""
REQUEST_TIMEOUT = -32001
"""toolwire/MCP SDKs: a peer→peer request got no response within its timeout."""
CONNECTION_CLOSED = -32000
"""toolwire: the connection closed before a response arrived."""

MESSAGES: dict[int, str] = {
    PARSE_ERROR: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
    SERVER_NOT_INITIALIZED: "Server not initialized",
    REQUEST_CANCELLED: "Request cancelled",
    REQUEST_TIMEOUT: "Request timed out",
    CONNECTION_CLOSED: "Connection closed",
}


class JsonRpcError(Exception):
    """A JSON-RPC error response, raised by a method handler or received from a peer.

    Args:
        code: the integer error code (see the constants in this module).
        message: a short, single-sentence description for humans.
        data: optional JSON-serialisable detail; omitted from the wire when None.
    """

    def __init__(self, code: int, message: str | None = None, data: Any = None) -> None:
        self.code = code
        self.message = message if message is not None else MESSAGES.get(code, "Error")
        self.data = data
        super().__init__(f"{self.message} ({code})")

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-RPC `error` member: `{code, message, data?}`."""
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err

    @classmethod
    def from_dict(cls, err: Any) -> JsonRpcError:
        """Build from a received `error` member; a malformed one becomes -32603."""
        if isinstance(err, dict) and isinstance(err.get("code"), int):
            msg = err.get("message")
            return cls(err["code"], msg if isinstance(msg, str) else None, err.get("data"))
        return cls(INTERNAL_ERROR, "Malformed error object from peer", err)


class RequestTimeout(JsonRpcError):
    """Raised by :meth:`toolwire.session.Session.request` when the peer did not answer
    within the request's timeout (code -32001); an error answer from the peer that
    happens to carry -32001 is a plain :class:`JsonRpcError`."""

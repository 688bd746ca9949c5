"""MCP 2026-07-28 (the stateless revision): shapes, keys and codes host and client share.

In that revision there is no ``initialize`` handshake: every client request carries its
protocol version and client capabilities in ``params._meta`` (the *envelope*), results
carry ``resultType``, list results carry caching hints, list changes arrive on a
``subscriptions/listen`` stream, and a tool that needs the user or the model answers
with an *input-required* result the client retries (multi-round-trip requests,
SEP-2322). Sources: the MCP specification 2026-07-28 (``basic/index``,
``basic/versioning``, ``server/discover``, ``server/utilities/caching``,
``basic/patterns/{mrtr,subscriptions}``) and its ``schema.ts``; protocol.md §11 says
which choices toolwire made where the specification leaves room.

No third-party imports: both the host and the client use this module.
"""

from __future__ import annotations

from typing import Any

from ._record import FrozenRecord
from .errors import INVALID_PARAMS, JsonRpcError

__all__ = [
    "ACKNOWLEDGED",
    "CLIENT_CAPABILITIES_KEY",
    "CLIENT_INFO_KEY",
    "DISCOVER",
    "INPUT_METHODS",
    "LISTEN",
    "LOG_LEVEL_KEY",
    "MISSING_CLIENT_CAPABILITY",
    "MODERN_PROTOCOL_VERSION",
    "MODERN_PROTOCOL_VERSIONS",
    "NAMED_BY_HEADER",
    "PROTOCOL_VERSION_KEY",
    "RESULT_COMPLETE",
    "RESULT_INPUT_REQUIRED",
    "SERVER_INFO_KEY",
    "SUBSCRIPTION_ID_KEY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Envelope",
    "envelope_meta",
    "is_modern_request",
    "parse_envelope",
]

MODERN_PROTOCOL_VERSION = "2026-07-28"
"""The MCP revision served statelessly."""
MODERN_PROTOCOL_VERSIONS: tuple[str, ...] = (MODERN_PROTOCOL_VERSION,)
"""Versions accepted in a request's envelope (and listed by ``server/discover``)."""

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
"""``_meta`` key of a request's protocol version; its presence marks a modern request."""
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
"""``_meta`` key of the client's capabilities for this request (required, ``{}`` = none)."""
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
"""``_meta`` key of the client's ``{name, version}`` (optional; display and logs only)."""
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
"""``_meta`` key asking for ``notifications/message`` at or above a level, for one request."""
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
"""Result ``_meta`` key carrying the server's ``{name, version}``."""
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"
"""Notification ``_meta`` key naming the ``subscriptions/listen`` request it belongs to."""

DISCOVER = "server/discover"
LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"

NAMED_BY_HEADER = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""Methods whose ``Mcp-Name`` HTTP header repeats one ``params`` member, and which one
(MCP 2026-07-28 "transports/streamable-http": the header must match the body)."""

RESULT_COMPLETE = "complete"
RESULT_INPUT_REQUIRED = "input_required"

MISSING_CLIENT_CAPABILITY = -32021
"""The request needs a client capability it did not declare; ``data.requiredCapabilities``
is an object keyed by capability, e.g. ``{"elicitation": {}}``."""
UNSUPPORTED_PROTOCOL_VERSION = -32022
"""The envelope names a version the server does not serve; ``data = {supported, requested}``."""

INPUT_METHODS: dict[str, str] = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
"""The requests a server may put in ``inputRequests``, each with the client capability it needs."""


def is_modern_request(params: Any) -> bool:
    """True when ``params._meta`` carries the protocol-version key (a modern claim).

    A bare ``_meta`` with only ``progressToken`` is not a claim (legacy traffic never uses
    the reserved ``io.modelcontextprotocol/`` prefix).
    """
    if type(params) is not dict:
        return False
    meta = params.get("_meta")
    return type(meta) is dict and PROTOCOL_VERSION_KEY in meta


class Envelope(FrozenRecord):
    """A modern request's ``_meta``, checked.

    Attributes:
        version: the protocol version the request claims.
        capabilities: the client's capabilities for this request (a new empty dict
            when not given).
        client_info: ``{name, version, ...}`` when sent (self-reported; logs only).
        log_level: the level asked for with ``io.modelcontextprotocol/logLevel``, or None
            (then no log notification is sent for the request). Not checked here.
    """

    __slots__ = __match_args__ = ("version", "capabilities", "client_info", "log_level")
    version: str
    capabilities: dict[str, Any]
    client_info: dict[str, Any] | None
    log_level: Any

    def __init__(
        self,
        version: str,
        capabilities: dict[str, Any] | None = None,
        client_info: dict[str, Any] | None = None,
        log_level: Any = None,
    ) -> None:
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "capabilities", {} if capabilities is None else capabilities)
        object.__setattr__(self, "client_info", client_info)
        object.__setattr__(self, "log_level", log_level)

    def declares(self, capability: str) -> bool:
        """Whether the client declared ``capability`` (a top-level key, e.g. "elicitation")."""
        return type(self.capabilities.get(capability)) is dict


def parse_envelope(params: Any) -> Envelope:
    """Check the envelope of a request (MCP 2026-07-28 "basic/index", per-request metadata).

    Only the shape is checked here; whether the version is served is the caller's next
    step (so the error order is: malformed envelope, then unsupported version).

    Raises:
        JsonRpcError: -32602 when ``params`` is not an object, ``_meta`` is missing or not
            an object, the protocol version is missing or not a string, the client
            capabilities are missing or not an object, or ``clientInfo`` is present but
            not an object.
    """
    if type(params) is not dict:
        raise JsonRpcError(INVALID_PARAMS, "params must be an object carrying _meta")
    meta = params.get("_meta")
    if type(meta) is not dict:
        raise JsonRpcError(INVALID_PARAMS, "params._meta must be an object")
    version = meta.get(PROTOCOL_VERSION_KEY)
    if type(version) is not str:
        raise JsonRpcError(INVALID_PARAMS, f"_meta[{PROTOCOL_VERSION_KEY!r}] must be a string")
    caps = meta.get(CLIENT_CAPABILITIES_KEY)
    if type(caps) is not dict:
        raise JsonRpcError(
            INVALID_PARAMS, f"_meta[{CLIENT_CAPABILITIES_KEY!r}] must be an object ({{}} = none)"
        )
    info = meta.get(CLIENT_INFO_KEY)
    if info is not None and type(info) is not dict:
        raise JsonRpcError(INVALID_PARAMS, f"_meta[{CLIENT_INFO_KEY!r}] must be an object")
    return Envelope(version, caps, info, meta.get(LOG_LEVEL_KEY))


def envelope_meta(
    capabilities: dict[str, Any],
    client_info: dict[str, Any] | None = None,
    *,
    version: str = MODERN_PROTOCOL_VERSION,
    log_level: str | None = None,
) -> dict[str, Any]:
    """The ``_meta`` members a client puts in every modern request."""
    meta: dict[str, Any] = {
        PROTOCOL_VERSION_KEY: version,
        CLIENT_CAPABILITIES_KEY: capabilities,
    }
    if client_info is not None:
        meta[CLIENT_INFO_KEY] = client_info
    if log_level is not None:
        meta[LOG_LEVEL_KEY] = log_level
    return meta

"""toolwire: a JSON-RPC 2.0 tool host and client speaking the MCP tool subset.

This top-level package holds the two lowest layers, shared by host and client:

* wire — :mod:`toolwire.messages`, :mod:`toolwire.framing`, :mod:`toolwire.errors`,
  :mod:`toolwire.models` (sans-IO: no sockets, no tasks);
* session — :mod:`toolwire.session` (an anyio JSON-RPC peer), dispatching by a
  :mod:`toolwire.router` table and writing through one :mod:`toolwire.output` queue,
  with its requests in :mod:`toolwire.inbound` and :mod:`toolwire.outbound`, and
  :mod:`toolwire.streams` (byte streams over file descriptors).

The host lives in :mod:`toolwire.host`, the client in :mod:`toolwire.client`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

__version__ = "0.1.0"

__all__ = [
    "Framing",
    "JsonRpcError",
    "RequestContext",
    "RequestId",
    "Router",
    "Session",
    "__version__",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "Framing": ".framing",
        "JsonRpcError": ".errors",
        "RequestContext": ".session",
        "RequestId": ".messages",
        "Router": ".router",
        "Session": ".session",
    },
)

if TYPE_CHECKING:
    from .errors import JsonRpcError
    from .framing import Framing
    from .messages import RequestId
    from .router import Router
    from .session import RequestContext, Session

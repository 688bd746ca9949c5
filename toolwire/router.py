"""Which handler serves each inbound JSON-RPC method: the table a session dispatches by.

A :class:`Router` is filled before its :class:`~toolwire.session.Session` is made and
handed to it (``Session(..., router=router)``). The session looks each inbound message's
method up once in it and knows nothing else of what methods mean. The kinds of entry:

* a **request handler** (:meth:`Router.on_request`): ``async def handler(params, ctx)``,
  run in a task of its own, concurrently with the others and cancellable;
* an **inline request handler** (:meth:`Router.on_inline_request`):
  ``def handler(params, ctx)``, run in the read loop as the request is read, so its
  effects happen in the order requests arrive; it returns the result, raises
  :class:`~toolwire.errors.JsonRpcError`, or returns a :class:`Deferred` to be answered
  by a task after all;
* a **notification handler** (:meth:`Router.on_notification`): ``def handler(params)``,
  run in the read loop;
* **one handler for requests of any other method** (:meth:`Router.on_unknown_request`),
  an inline handler; the default answers -32601 (JSON-RPC 2.0 §5.1,
  :func:`method_not_found`);
* **one handler for input that is not JSON-RPC** (:meth:`Router.on_malformed`), told
  after the error reply is queued.

Notifications of no entry are dropped (JSON-RPC 2.0 §4.1: a notification gets no reply).
Handlers get ``params`` as received, but for a registered method an empty array arrives
as ``{}`` and a non-empty one is refused before the handler runs (see
:data:`toolwire.session.PARAMS_NOT_AN_OBJECT`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from .errors import METHOD_NOT_FOUND, JsonRpcError

if TYPE_CHECKING:
    from .session import RequestContext

__all__ = [
    "Deferred",
    "InlineHandler",
    "NotificationHandler",
    "RequestHandler",
    "Route",
    "Router",
    "method_not_found",
]

RequestHandler = Callable[[Any, "RequestContext"], Awaitable[Any]]
"""``async def handler(params, ctx) -> result``; raise :class:`JsonRpcError` for an error reply."""

InlineHandler = Callable[[Any, "RequestContext"], Any]
"""``def handler(params, ctx) -> result | Deferred``, run in the read loop: it must not
await; raise :class:`JsonRpcError` for an error reply."""

NotificationHandler = Callable[[Any], Any]
"""``def handler(params) -> None``, run inline in the read loop; keep it short."""

Route = tuple[Callable[[Any, "RequestContext"], Any], bool]
"""One request entry: ``(handler, inline)``; ``inline`` tells an :data:`InlineHandler`
from a :data:`RequestHandler`."""


def method_not_found(method: str) -> JsonRpcError:
    """-32601 ``Method not found: <method>`` with ``data.method`` (JSON-RPC 2.0 §5.1)."""
    return JsonRpcError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})


def _unknown(params: Any, ctx: RequestContext) -> Any:
    raise method_not_found(ctx.method)


class Deferred:
    """What an inline request handler returns to answer later, from a task.

    The inline handler ran in the read loop, so its effects happened in the order the
    requests arrived (LSP ``shutdown`` refuses every request read after it); the answer
    is then made like an ordinary request's (concurrently, cancellable, in flight until
    answered). ``Deferred(answer)`` answers with ``await answer()``;
    :meth:`to` with ``await handler(params, ctx)`` (one instance serves every request).

    ``hold``: for an answer that would only wait at first (for a peer's response already
    requested): ``hold(release)`` returns True when it will call ``release()`` once the
    wait is over, and the answer is only handed to a task then (or at once when the
    request is cancelled or aborted first), so its task runs once instead of twice;
    False to hand it over at once. The request is in flight meanwhile.
    """

    __slots__ = ("handler", "hold")

    def __init__(
        self,
        answer: Callable[[], Awaitable[Any]],
        hold: Callable[[Callable[[], None]], bool] | None = None,
    ) -> None:
        self.handler: RequestHandler = lambda params, ctx: answer()
        self.hold = hold

    @classmethod
    def to(cls, handler: RequestHandler) -> Deferred:
        """A Deferred that has ``handler(params, ctx)`` answer the request."""
        deferred = cls.__new__(cls)
        deferred.handler = handler
        deferred.hold = None
        return deferred


class Router:
    """A table from method name to the handler that serves it (see the module docstring).

    Registering a method again replaces its entry, of either kind.
    """

    __slots__ = ("_malformed", "_notifications", "_requests", "_unknown")

    def __init__(self) -> None:
        self._requests: dict[str, Route] = {}
        self._notifications: dict[str, NotificationHandler] = {}
        self._unknown: InlineHandler = _unknown
        self._malformed: Callable[[str], None] | None = None

    def on_request(self, method: str, handler: RequestHandler) -> None:
        """Serve requests for ``method`` with ``handler`` in a task of their own."""
        self._requests[method] = (handler, False)

    def on_inline_request(self, method: str, handler: InlineHandler) -> None:
        """Serve requests for ``method`` with ``handler`` in the read loop, as they are read."""
        self._requests[method] = (handler, True)

    def on_notification(self, method: str, handler: NotificationHandler) -> None:
        """Hand notifications for ``method`` to ``handler`` (in the read loop)."""
        self._notifications[method] = handler

    def on_unknown_request(self, handler: InlineHandler) -> None:
        """Serve requests for every method of no entry with the inline ``handler`` (it
        reads the method from ``ctx.method``, and gets ``params`` exactly as received)."""
        self._unknown = handler

    def on_malformed(self, handler: Callable[[str], None]) -> None:
        """Call ``handler(description)`` whenever the peer sends something that is not a
        JSON-RPC message (a framing error, invalid JSON, an invalid message), after the
        error reply is queued."""
        self._malformed = handler

    @property
    def requests(self) -> Mapping[str, Route]:
        """The request entries, method → :data:`Route` (live: later registrations show)."""
        return self._requests

    @property
    def notifications(self) -> Mapping[str, NotificationHandler]:
        """The notification entries, method → handler (live)."""
        return self._notifications

    @property
    def unknown(self) -> InlineHandler:
        """The handler of requests for methods of no entry."""
        return self._unknown

    @property
    def malformed(self) -> Callable[[str], None] | None:
        """The handler told of input that is not JSON-RPC, if any."""
        return self._malformed

"""The direct path of a 2026-07-28 POST: the request's handler awaited in the request's task.

A stateless 2026-07-28 request that can produce nothing but its response — it carries
no ``progressToken`` and no ``io.modelcontextprotocol/logLevel``, and it is not
``subscriptions/listen`` — needs no :class:`~toolwire.session.Session` of its own, no
in-memory streams and no tasks: :func:`answer_direct` calls the host's 2026-07-28
handler (:meth:`~toolwire.host.methods.modern.ModernServer.route`) with a fresh
:class:`~toolwire.session.RequestContext` and writes the JSON answer. Requests that may
stream (progress, logs, listen) keep the per-request session and its SSE answer
(:mod:`toolwire.host.serve.http`).

What stays as on the session path: the answer is the same JSON-RPC message, encoded the
same way (lone surrogates replaced, a result JSON cannot hold answered -32603); its HTTP
status follows the error code (MCP 2026-07-28 "transports/streamable-http"); a client
that disconnects cancels the call and gets nothing (MCP 2026-07-28: closing the response
is the cancellation).

The disconnect is watched by one plain asyncio task per request (a few µs, against ~40 µs
for an anyio task group and its task); on another event loop :func:`answer_direct`
declines and the session path serves the request.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
from anyio.abc import ByteSendStream

from toolwire.errors import INTERNAL_ERROR, JsonRpcError
from toolwire.messages import RequestId, error_response, is_valid_id, response
from toolwire.modern import LISTEN, Envelope
from toolwire.session import RequestContext, RequestHandler, Session, is_stray_cancellation
from toolwire.streams import MemoryReceiveStream

__all__ = ["answer_direct", "direct_session", "goes_direct"]

log = logging.getLogger("toolwire.host.http")

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class _Nowhere(ByteSendStream):
    """Where the direct session's messages would go: nowhere (none is expected; one
    that comes is a host bug, logged and dropped)."""

    def try_send(self, data: bytes) -> int:
        log.warning("http: a direct request sent a message besides its answer; dropped")
        return len(data)

    async def send(self, item: bytes) -> None:
        self.try_send(item)

    async def aclose(self) -> None:
        pass


def direct_session() -> Session:
    """The session the direct path's request contexts name (never served).

    Handlers reach the session only to send progress, logs or server→client requests,
    which a direct request cannot produce (:func:`goes_direct`); nothing is registered
    in it, so no request sees another's state through it.
    """
    return Session(MemoryReceiveStream(), _Nowhere(), framing="ndjson", name="http-direct")


def goes_direct(method: str, params: dict[str, Any], envelope: Envelope) -> bool:
    """Whether a checked 2026-07-28 request can only produce its response: not
    ``subscriptions/listen``, no valid ``_meta.progressToken``, no ``logLevel``."""
    if method == LISTEN or envelope.log_level is not None:
        return False
    meta = params.get("_meta")
    return not (type(meta) is dict and is_valid_id(meta.get("progressToken")))


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def answer_direct(
    session: Session,
    handler: RequestHandler,
    rid: RequestId,
    method: str,
    params: dict[str, Any],
    receive: Receive,
    send: Send,
    status_of: Callable[[int], int],
) -> bool:
    """Serve one request with ``handler`` in this task and write its JSON answer.

    Args:
        session: :func:`direct_session`.
        handler: the host's 2026-07-28 handler for the request.
        rid, method, params: the request (params checked to be an object).
        receive, send: the ASGI exchange.
        status_of: the HTTP status of a JSON-RPC error code.

    Returns:
        False, having done nothing, when the event loop is not asyncio (the caller then
        serves the request on a session); True once the request was served (answered,
        or cancelled by the client's disconnect).
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    ctx = RequestContext(session, rid, method, params, None)
    reply: dict[str, Any] | None = None
    watcher: asyncio.Task[None] | None = None
    with anyio.CancelScope() as scope:
        ctx.bind_scope(scope)

        def gone(task: asyncio.Task[None]) -> None:
            if not task.cancelled():
                task.exception()  # retrieved: a failed receive counts as a disconnect
                scope.cancel()

        def watch() -> None:
            nonlocal watcher
            watcher = loop.create_task(_until_disconnect(receive))
            watcher.add_done_callback(gone)

        # The watcher starts once the handler yields to the loop: a handler that answers
        # without waiting (most in-process calls) costs no task at all.
        start = loop.call_soon(watch)
        try:
            try:
                reply = response(rid, await handler(params, ctx))
            except JsonRpcError as exc:
                reply = error_response(rid, exc)
            except anyio.get_cancelled_exc_class():
                if not is_stray_cancellation():
                    raise
                log.exception("http: handler for %s raised a stray cancellation", method)
                reply = error_response(rid, JsonRpcError(INTERNAL_ERROR, "Internal error"))
            except Exception:
                log.exception("http: handler for %s failed", method)
                reply = error_response(rid, JsonRpcError(INTERNAL_ERROR, "Internal error"))
        finally:
            ctx.mark_done()
            start.cancel()
            if watcher is None:
                pass
            elif not watcher.done():
                watcher.remove_done_callback(gone)
                watcher.cancel()
            elif not watcher.cancelled():
                reply = None  # the client left: nothing more is sent
    if reply is None or scope.cancelled_caught:
        return True
    raw = session.output.encode_reply(reply)
    status = 200
    error = reply.get("error")
    if type(error) is dict and type(error.get("code")) is int:
        status = status_of(error["code"])
    try:
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(raw)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": raw})
    except OSError:
        pass  # the client went away while we wrote
    return True

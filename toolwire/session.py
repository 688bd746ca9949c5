"""A JSON-RPC 2.0 peer on anyio byte streams: the session layer.

One :class:`Session` serves one connection, in either direction (the host, its worker
processes and the client all use it). What it owns, and the rules it keeps:

* **reading**: framing detection (:mod:`toolwire.framing`), decoding, envelope validation
  (:mod:`toolwire.messages`) and the error replies for what is not JSON-RPC; batches are
  answered with one array once all their requests are (JSON-RPC 2.0 §6);
* **dispatch** by one :class:`~toolwire.router.Router`, given at construction: one
  table lookup per message picks the request, inline or notification handler (or the
  router's handler for unknown methods, which gets params as sent); one rule for array
  params of a registered method: ``[]`` reaches its handler as ``{}``, a non-empty array
  is refused with -32602 "params must be an object" (:data:`PARAMS_NOT_AN_OBJECT`);
* **inbound requests in flight** (:class:`~toolwire.inbound.RequestContext`, by id; a
  duplicate id is refused): each runs in a worker task of one anyio task group, one
  request per task at a time, under a cancel scope that only its own cancellation
  cancels (one scope serves a task's requests until one is cancelled); whenever a
  request is taken while others wait and no worker is free, another worker starts, so a
  slow request never delays another (idle workers are parked);
* **cancellation** of inbound requests in both dialects: MCP
  ``notifications/cancelled {requestId, reason?}`` (nothing more is sent for that
  request, MCP 2025-11-25 "Cancellation") and LSP ``$/cancelRequest {id}`` (the
  request is answered with -32800, LSP 3.17 "Cancellation Support"); the host's own
  aborts and the settling of what is in flight at shutdown (:meth:`Session.settle`);
* **progress** for inbound requests that carry ``params._meta.progressToken``, and the
  routing of progress notifications to the outbound request whose token they carry;
* **outbound requests** (:mod:`toolwire.outbound`): ids (never reused), awaitable
  responses, deadlines (one heap watched by one task), cancellation on timeout in the
  session's dialect;
* **the writer**: one :class:`~toolwire.output.OutputQueue` per session, so frames never
  interleave (its module states its rules).

What it does not know: MCP beyond the two cancellation notifications and the progress
token, the protocol eras (2025-11-25 or 2026-07-28), initialization, tools, approval or
any other method's meaning; those are the router's handlers' business.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup

from . import _json
from .errors import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    JsonRpcError,
)
from .framing import (
    DEFAULT_MAX_MESSAGE_SIZE,
    Decoder,
    Framing,
    FramingError,
    detect_framing,
    make_decoder,
)
from .inbound import CancelDialect, RequestContext, is_stray_cancellation, progress_accepted
from .messages import (
    Invalid,
    Notification,
    Request,
    RequestId,
    Response,
    classify,
    error_response,
    is_valid_id,
    request,
    response,
)
from .outbound import Deadlines, OutboundRequest, Pending
from .output import LOSSY_LIMIT, OutputQueue, size_text
from .router import Deferred, NotificationHandler, RequestHandler, Router

__all__ = [
    "LOSSY_LIMIT",
    "PARAMS_NOT_AN_OBJECT",
    "Deferred",
    "NotificationHandler",
    "OutboundRequest",
    "ProgressListener",
    "RequestContext",
    "RequestHandler",
    "Router",
    "Session",
    "is_stray_cancellation",
    "progress_accepted",
    "size_text",
]

log = logging.getLogger("toolwire.session")

ProgressListener = Callable[[str, dict[str, Any]], object]
"""``listener(method, params)`` for notifications tied to an outbound request by its
progress token (see :meth:`Session.request`)."""

_MAX_PARKED_WORKERS = 32
"""Idle request workers kept parked for reuse; more than this many exit."""

ABORT_WAIT = 1.0
"""Seconds :meth:`Session.settle` gives aborted handlers to unwind before it answers
for them (a handler that shields itself from cancellation)."""


PARAMS_NOT_AN_OBJECT = "params must be an object"
"""The -32602 message for a request whose ``params`` is a non-empty array.

Every method toolwire serves or calls (MCP, the LSP lifecycle, toolwire's own) takes its
params by name, as an object. JSON-RPC 2.0 §4.2 also allows an array (by position); an
*empty* array carries no argument at all and is what some clients send for "no params"
(Neovim's Lua encodes an empty table as ``[]``), so it is handed to every registered handler as
``{}``. A non-empty array is refused with this message before any handler runs."""


def _backend_types() -> tuple[Callable[[], anyio.Event], Callable[[], anyio.CancelScope]]:
    """The running anyio backend's own ``Event`` and ``CancelScope`` classes.

    ``anyio.Event()`` and ``anyio.CancelScope()`` find the backend of the running event
    loop each time they are called (through sniffio); the classes they return construct
    without that look-up. Call from within a running backend (else the Event is anyio's
    adapter for code outside a loop).
    """
    return type(anyio.Event()), type(anyio.CancelScope())


class _Batch:
    """Collects the encoded responses of one JSON-RPC batch until all its requests finish.

    JSON-RPC 2.0 §6: the reply to a batch is one array holding a response for every
    request (and every invalid member) in any order; notifications get none, and a
    batch of notifications only gets no reply at all.
    """

    __slots__ = ("bodies", "outstanding", "session")

    def __init__(self, session: Session) -> None:
        self.session = session
        self.outstanding = 0
        self.bodies: list[bytes] = []

    def add(self, reply: dict[str, Any] | None) -> None:
        if reply is not None:
            self.bodies.append(self.session.output.encode_reply(reply))

    def finish_one(self, reply: dict[str, Any] | None) -> None:
        self.add(reply)
        self.outstanding -= 1
        self.flush_if_done()

    def flush_if_done(self) -> None:
        if self.outstanding == 0 and self.bodies:
            bodies, self.bodies = self.bodies, []
            self.session.output.send_body(b"[" + b",".join(bodies) + b"]")


class Session:
    """A JSON-RPC 2.0 peer over a pair of anyio byte streams (see the module docstring).

    Args:
        receive: bytes from the peer.
        send: bytes to the peer.
        router: the handlers of inbound methods (:class:`~toolwire.router.Router`);
            None serves no method (every request is answered -32601).
        framing: "auto" detects the peer's framing from its first bytes and answers
            in kind (writes before detection use ndjson); "lsp" or "ndjson" force one.
        max_message_size: largest inbound message body, in bytes (default 64 MiB).
        cancel_dialect: how :meth:`request` cancels an outbound request on timeout or
            cancellation: "mcp" sends ``notifications/cancelled``, "lsp" sends
            ``$/cancelRequest``.
        name: used in log records.
        replace_surrogates: every lone surrogate in a string of an outgoing message
            becomes U+FFFD (a request's echoed ``id`` aside), so no text the peer
            receives holds one, whatever a handler put in it (default). A host's
            sessions with its own worker processes turn it off, so a worker's tool gets
            its arguments as the client sent them (:func:`toolwire._json.dumps`).
        max_send_size: largest message body sent, in bytes (None: no bound), so the peer
            never receives a frame it must refuse (a worker process bounds what it sends
            by what its host accepts). A larger response is replaced by the error
            ``oversized_reply`` makes of its size (default -32603 naming the size and the
            limit); a larger notification or request is a ValueError of :meth:`notify` /
            :meth:`request`, naming the size and limit.
        oversized_reply: see ``max_send_size``.
        max_queued: bytes queued for a peer that does not read above which the router's
            malformed-input handler is called (None: no bound; the host bounds what it
            queues for a worker process).
        unsolicited: whether the peer may now get a notification tied to no request (the
            count of dropped lossy ones); None: always. MCP 2026-07-28 sends
            ``notifications/message`` only for a request that asked, so a host serving
            only that revision says no.

    Attributes:
        output: the session's writer (:class:`~toolwire.output.OutputQueue`): its
            ``high_water`` and ``lossy_limit`` may be tuned.
        flush_timeout: seconds :meth:`serve` waits, at the end, for queued output to be
            written to a peer that may have stopped reading.
    """

    def __init__(
        self,
        receive: ByteReceiveStream,
        send: ByteSendStream,
        *,
        router: Router | None = None,
        framing: Framing | Literal["auto"] = "auto",
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        cancel_dialect: CancelDialect = "mcp",
        name: str = "session",
        replace_surrogates: bool = True,
        max_send_size: int | None = None,
        oversized_reply: Callable[[int], JsonRpcError] | None = None,
        max_queued: int | None = None,
        unsolicited: Callable[[], bool] | None = None,
    ) -> None:
        self._receive = receive
        self._send = send
        self._max = max_message_size
        self.cancel_dialect: CancelDialect = cancel_dialect
        self.name = name
        self._router = router if router is not None else Router()
        self._routes = self._router.requests  # the hot path's one lookup
        self._notes = self._router.notifications
        self._refusal: Callable[[str], JsonRpcError] | None = None
        self._in_flight: dict[RequestId, RequestContext] = {}
        self._pending: dict[RequestId, Pending] = {}
        self._progress_listeners: dict[RequestId, ProgressListener] = {}
        self._next_id = 0
        self.output = OutputQueue(
            send,
            name=name,
            framing=None if framing == "auto" else framing,
            busy=(self._pending, self._in_flight),
            replace_surrogates=replace_surrogates,
            max_send_size=max_send_size,
            oversized_reply=oversized_reply,
            max_queued=max_queued,
            on_overflow=self._malformed,
            unsolicited=unsolicited,
        )
        out = self.output
        self._send_obj = out.send_obj
        self._send_reply = out.send_reply
        self._closing = False
        self._closed = anyio.Event()
        self._closing_event = anyio.Event()
        self.flush_timeout = 1.0
        self._requests_tg: TaskGroup | None = None
        # Worker pool: queued request jobs, parked idle workers, workers about to take a job.
        self._jobs: deque[tuple[RequestHandler, Any, RequestContext]] = deque()
        self._parked: deque[anyio.Event] = deque()
        self._ready = 0
        self._read_scope: anyio.CancelScope | None = None
        self._flight_changed: anyio.Event | None = None
        self._finish: tuple[float, JsonRpcError] | None = None
        self._deadlines = Deadlines()
        # What the hot path makes per request: anyio.Event() and anyio.CancelScope() look
        # the running backend up at every construction (sniffio, a few µs a time); serve()
        # swaps in the backend's own classes, found once.
        self._new_event: Callable[[], anyio.Event] = anyio.Event
        self._new_scope: Callable[[], anyio.CancelScope] = anyio.CancelScope

    # ----------------------------------------------------------------- properties

    @property
    def framing(self) -> Framing | None:
        """The framing in use, or None before the peer's first bytes in auto mode."""
        return self.output.framing

    @property
    def router(self) -> Router:
        """The router this session dispatches by (entries added later take effect)."""
        return self._router

    @property
    def in_flight(self) -> int:
        """Inbound requests currently being handled."""
        return len(self._in_flight)

    @property
    def queued_bytes(self) -> int:
        """Bytes of messages waiting for (or being given to) the writer."""
        return self.output.queued

    # ----------------------------------------------------------------- output

    def notify(self, method: str, params: Any = None) -> None:
        """Queue a notification for the peer. Never blocks; frames keep their order.

        Raises:
            TypeError, ValueError: ``params`` is not JSON-serialisable, or the message is
                over ``max_send_size``.
        """
        self.output.notify(method, params)

    def notify_lossy(self, method: str, params: Any = None, key: Any = None) -> bool:
        """Queue a notification the peer may miss when it is not reading fast enough
        (progress with its token as ``key``, logs without); True when queued at once.
        See :meth:`toolwire.output.OutputQueue.notify_lossy`."""
        return self.output.notify_lossy(method, params, key)

    def forget_lossy(self, key: Any) -> None:
        """Discard the notification held back for ``key`` (its request was answered:
        no progress may follow the response, MCP 2025-11-25 "Progress")."""
        self.output.forget_lossy(key)

    async def drain(self) -> None:
        """Wait while more than ``output.high_water`` bytes are queued for the peer;
        returns at once when the session is closing (:meth:`OutputQueue.drain`)."""
        await self.output.drain()

    # ----------------------------------------------------------------- outbound requests

    def new_request_id(self) -> int:
        """Reserve an id for an outbound request (pass it to :meth:`request` as
        ``request_id``); ids are never reused within a session."""
        req_id = self._next_id
        self._next_id += 1
        return req_id

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressListener | None = None,
        request_id: int | None = None,
        on_abandon: Callable[[anyio.Event], None] | None = None,
    ) -> Any:
        """Send a request to the peer and wait for its result.

        Args:
            method: the method name.
            params: a JSON object or array, or None to omit ``params``.
            timeout: seconds to wait; None waits until the connection closes.
            on_progress: asks for progress (MCP 2025-11-25 "Progress"): the request
                goes out with ``params._meta.progressToken`` (the request's id, unless
                ``params._meta`` names a token already; ``params`` must then be an
                object or None), and until the response arrives every notification
                from the peer whose ``params.progressToken`` is that token is handed to
                ``on_progress(method, params)`` instead of the router's handler
                (``notifications/progress``, and extension notifications tied to a
                request the same way). It runs in the read loop: keep it short; an
                exception it raises is logged.
            request_id: an id from :meth:`new_request_id` (for a caller that needs the
                id before the request is sent); None takes the next one.
            on_abandon: for a caller that must know whether the peer stopped: when the
                wait is cancelled or times out before the response came, the
                cancellation is sent and ``on_abandon(event)`` is called; ``event`` is
                set when the peer's response arrives after all (with the LSP dialect,
                its -32800 once the request really stopped) or the connection closes.

        Returns:
            The ``result`` member of the response.

        Raises:
            RequestTimeout: no response within ``timeout`` (code -32001; a cancellation
                is then sent in :attr:`cancel_dialect`). Measured while :meth:`serve`
                runs.
            JsonRpcError: the peer answered with an error; -32000 when the connection
                closed first.
        """
        outbound = self.start_request(
            method, params, timeout=timeout, on_progress=on_progress, request_id=request_id
        )
        return await outbound.wait(on_abandon)

    def start_request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressListener | None = None,
        request_id: int | None = None,
    ) -> OutboundRequest:
        """Send a request now, without waiting: :meth:`OutboundRequest.wait` waits for
        its result (or :meth:`OutboundRequest.abandon` gives it up). The arguments are
        those of :meth:`request`; its deadline counts from now.

        Raises:
            JsonRpcError: -32000 when the connection is closing.
            TypeError, ValueError: ``params`` is not JSON-serialisable, or the message is over
                :attr:`max_send_size`.
        """
        if self._closing:
            raise JsonRpcError(CONNECTION_CLOSED, "Connection closed")
        req_id = self.new_request_id() if request_id is None else request_id
        token: RequestId | None = None
        if on_progress is not None:
            params = dict(params or {})
            meta = dict(params.get("_meta") or {})
            token = meta.setdefault("progressToken", req_id)
            params["_meta"] = meta
            self._progress_listeners[token] = on_progress
        pending = Pending(self._new_event())
        self._pending[req_id] = pending
        try:
            self._send_obj(request(req_id, method, params))
        except BaseException:
            self._pending.pop(req_id, None)
            if token is not None:
                self._progress_listeners.pop(token, None)
            raise
        if timeout is not None:
            self._deadlines.add(timeout, pending)
        return OutboundRequest(self, req_id, pending, timeout, token)

    def _send_cancel(self, req_id: RequestId, reason: str) -> None:
        if self._closing:
            return
        if self.cancel_dialect == "lsp":
            self.notify("$/cancelRequest", {"id": req_id})
        else:
            self.notify("notifications/cancelled", {"requestId": req_id, "reason": reason})

    # ----------------------------------------------------------------- lifecycle

    def refuse_requests(self, refusal: Callable[[str], JsonRpcError]) -> None:
        """Answer every request read from now on with the error ``refusal(method)``,
        whatever its method (LSP ``shutdown``); requests already taken are unaffected,
        notifications and responses are still handled."""
        self._refusal = refusal

    def close(self) -> None:
        """Stop reading, cancel in-flight requests, flush queued output; serve() returns."""
        if self._closing:
            return
        self._closing = True
        self.output.close()
        self._closing_event.set()
        if self._read_scope is not None:
            self._read_scope.cancel()
        if self._requests_tg is not None:
            self._requests_tg.cancel_scope.cancel()
        for pending in self._pending.values():
            pending.error = JsonRpcError(CONNECTION_CLOSED, "Connection closed")
            pending.set()

    def close_when_answered(self, grace: float, error: JsonRpcError) -> None:
        """Stop reading now, and close once every inbound request has been answered.

        Requests in flight get ``grace`` seconds to end; then they are aborted and
        answered with ``error`` (see :meth:`settle`). Input after this call is not read.
        Used for LSP ``exit``: the host ends only once it answered everything.
        """
        if self._closing or self._finish is not None:
            return
        self._finish = (grace, error)
        if self._read_scope is not None:
            self._read_scope.cancel()

    def _note_flight_change(self) -> None:
        event = self._flight_changed
        if event is not None:  # only settle() waits for it
            self._flight_changed = None
            event.set()

    async def settle(
        self, grace: float, error: JsonRpcError, *, exclude: RequestContext | None = None
    ) -> None:
        """Make sure every inbound request in flight (but ``exclude``) gets its response.

        Waits up to ``grace`` seconds for them to end by themselves; the rest are
        aborted (:meth:`RequestContext.abort`) and answered with ``error``. A handler
        still running :data:`ABORT_WAIT` seconds after its abort is answered for at
        once; its late result is then dropped, so no request is answered twice.
        Requests the peer cancelled in the MCP dialect are owed nothing and not waited for.
        """

        def others() -> list[RequestContext]:
            return [c for c in self._in_flight.values() if c is not exclude]

        async def wait_until_none(seconds: float) -> None:
            with anyio.move_on_after(seconds):
                while True:
                    if not others():
                        return
                    if self._flight_changed is None:
                        self._flight_changed = anyio.Event()
                    await self._flight_changed.wait()

        await wait_until_none(grace)
        rest = others()
        if not rest:
            return
        log.warning(
            "%s: %d request(s) still running after %gs; cancelling them",
            self.name,
            len(rest),
            grace,
        )
        for ctx in rest:
            ctx.abort(error)
        await wait_until_none(ABORT_WAIT)
        for ctx in others():
            self._answer_now(ctx, error)

    def _answer_now(self, ctx: RequestContext, error: JsonRpcError) -> None:
        """Answer a request whose handler is still running; its own reply is dropped."""
        ctx._answered = True
        ctx._done = True
        if self._in_flight.get(ctx.id) is ctx:
            del self._in_flight[ctx.id]
        reply = error_response(ctx.id, error)
        if ctx._batch is not None:
            ctx._batch.finish_one(reply)
        else:
            self._send_reply(reply)
        self._note_flight_change()

    async def serve(self) -> None:
        """Run the connection until the peer's EOF or :meth:`close`.

        On EOF every in-flight inbound request is cancelled (its handler interrupted),
        queued output is flushed, and outbound requests fail with -32000.
        """
        self._new_event, self._new_scope = _backend_types()
        try:
            async with anyio.create_task_group() as outer:
                outer.start_soon(self.output.run, self.close)
                outer.start_soon(self._deadlines.run)
                try:
                    async with anyio.create_task_group() as tg:
                        self._requests_tg = tg
                        with anyio.CancelScope() as read_scope:
                            self._read_scope = read_scope
                            if not self._closing:
                                await self._read_loop(tg)
                        if self._finish is not None and not self._closing:
                            # close_when_answered(): answer everything, then close.
                            await self.settle(*self._finish)
                        # EOF or close(): interrupt whatever is still running.
                        if self._in_flight and not self._closing:
                            # The peer's input ended under running requests: say so,
                            # or their cancellation leaves no trace anywhere.
                            ids = sorted(map(repr, self._in_flight))
                            log.warning(
                                "%s: input ended with %d request(s) still running "
                                "(ids %s): cancelled",
                                self.name,
                                len(ids),
                                ", ".join(ids[:10]) + (", ..." if len(ids) > 10 else ""),
                            )
                        self.close()
                finally:
                    self.close()
                    # Flush what is queued, but never wait forever on a peer that
                    # stopped reading.
                    with anyio.move_on_after(self.flush_timeout, shield=True):
                        await self.output.done.wait()
                    outer.cancel_scope.cancel()
        finally:
            self._closed.set()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Session]:
        """Serve in the background for the body of an ``async with`` block.

        On exit the send stream is closed (the peer sees EOF) and the session stops.
        """
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.serve)
            try:
                yield self
            finally:
                self.close()
                with anyio.CancelScope(shield=True):
                    await self._closed.wait()
                    with contextlib.suppress(Exception):
                        await self._send.aclose()

    @property
    def closing(self) -> bool:
        """True once the session started closing (peer EOF, :meth:`close`, write failure)."""
        return self._closing

    async def wait_closing(self) -> None:
        """Wait until the session starts closing (see :attr:`closing`)."""
        await self._closing_event.wait()

    # ----------------------------------------------------------------- input

    async def _read_loop(self, tg: TaskGroup) -> None:
        decoder: Decoder | None = None
        if self.output.framing is not None:
            decoder = make_decoder(self.output.framing, self._max)
        prefix = b""

        def feed(data: bytes) -> None:
            nonlocal decoder, prefix
            if decoder is None:
                prefix += data
                framing = detect_framing(prefix)
                if framing is None:
                    return
                self.output.framing = framing
                log.debug("%s: detected %s framing", self.name, framing)
                decoder = make_decoder(framing, self._max)
                data, prefix = prefix, b""
            for frame in decoder.feed(data):
                if type(frame) is bytes:
                    self._handle_body(frame, tg)
                else:
                    assert isinstance(frame, FramingError)
                    log.warning("%s: framing error: %s", self.name, frame.message)
                    self._send_obj(error_response(None, JsonRpcError(frame.code, frame.message)))
                    self._malformed(frame.message)

        receive = self._receive
        # A stream that can hand each chunk to a callback of the event loop (our
        # descriptor streams on asyncio) saves a task switch per chunk read; messages
        # are handled in the same order either way, without awaiting.
        each: Callable[[Callable[[bytes], None]], Awaitable[None]] | None = getattr(
            receive, "receive_each", None
        )
        try:
            if each is not None:
                await each(feed)
            else:
                while True:
                    feed(await receive.receive())
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        log.debug("%s: end of input", self.name)

    def _handle_body(self, body: bytes, tg: TaskGroup) -> None:
        try:
            obj = _json.loads(body)
        except _json.IntegerTooLong as exc:
            # Valid JSON, but no request the host can hold (protocol.md §2): its id
            # cannot be known, so the answer carries id null, as for any invalid request.
            log.warning("%s: invalid request: %s", self.name, exc)
            self._send_obj(
                error_response(None, JsonRpcError(INVALID_REQUEST, f"Invalid Request: {exc}"))
            )
            self._malformed(f"Invalid Request: {exc}")
            return
        except ValueError as exc:
            log.warning("%s: parse error: %s", self.name, exc)
            self._send_obj(error_response(None, JsonRpcError(PARSE_ERROR, f"Parse error: {exc}")))
            self._malformed(f"Parse error: {exc}")
            return
        if type(obj) is list:
            self._handle_batch(obj, tg)
            return
        self._handle_message(obj, tg, None)

    def _handle_batch(self, items: list[Any], tg: TaskGroup) -> None:
        if not items:
            self._send_obj(error_response(None, JsonRpcError(INVALID_REQUEST, "Empty batch")))
            return
        batch = _Batch(self)
        batch.outstanding = 1  # held until every item is dispatched
        for item in items:
            self._handle_message(item, tg, batch)
        batch.finish_one(None)

    def _handle_message(self, obj: Any, tg: TaskGroup, batch: _Batch | None) -> None:
        msg = classify(obj)
        t = type(msg)
        if t is Request:
            assert isinstance(msg, Request)
            self._dispatch_request(msg, tg, batch)
        elif t is Notification:
            assert isinstance(msg, Notification)
            self._dispatch_notification(msg)
        elif t is Response:
            assert isinstance(msg, Response)
            self._dispatch_response(msg)
        else:
            assert isinstance(msg, Invalid)
            log.warning("%s: invalid message: %s", self.name, msg.error.message)
            reply = error_response(msg.id, msg.error)
            if batch is not None:
                batch.add(reply)
            else:
                self._send_reply(reply)
            self._malformed(msg.error.message)

    def _malformed(self, what: str) -> None:
        handler = self._router.malformed
        if handler is not None:
            try:
                handler(what)
            except Exception:
                log.exception("%s: the malformed-input handler failed", self.name)

    def _reply(self, batch: _Batch | None, reply: dict[str, Any] | None) -> None:
        if batch is not None:
            batch.finish_one(reply)
        elif reply is not None:
            self._send_reply(reply)

    def _dispatch_request(self, req: Request, tg: TaskGroup, batch: _Batch | None) -> None:
        if batch is not None:
            batch.outstanding += 1
        if req.id in self._in_flight:
            self._reply(
                batch,
                error_response(
                    req.id,
                    JsonRpcError(INVALID_REQUEST, f"Request id {req.id!r} is already in use"),
                ),
            )
            return
        if self._refusal is not None:
            self._reply(batch, error_response(req.id, self._refusal(req.method)))
            return
        params = req.params
        route = self._routes.get(req.method)
        if route is None:
            # The router's handler for other methods: inline, params as received.
            handler, inline = self._router.unknown, True
        else:
            handler, inline = route
            if type(params) is list:
                if params:
                    self._reply(
                        batch,
                        error_response(req.id, JsonRpcError(INVALID_PARAMS, PARAMS_NOT_AN_OBJECT)),
                    )
                    return
                params = {}
        ctx = RequestContext(self, req.id, req.method, params, batch)
        if not inline:
            self._queue_job(handler, params, ctx, tg)
            return
        ctx._done = True
        try:
            result = handler(params, ctx)
            if type(result) is Deferred:
                # Its effects happened in order; the answer comes when it is ready.
                ctx._done = False
                if result.hold is not None:
                    self._hold_job(result.handler, result.hold, params, ctx, tg)
                else:
                    self._queue_job(result.handler, params, ctx, tg)
                return
            reply = response(req.id, result)
        except JsonRpcError as exc:
            reply = error_response(req.id, exc)
        except Exception:
            log.exception("%s: handler for %s failed", self.name, req.method)
            reply = error_response(req.id, JsonRpcError(INTERNAL_ERROR, "Internal error"))
        self._reply(batch, reply)

    def _hold_job(
        self,
        handler: RequestHandler,
        hold: Callable[[Callable[[], None]], bool],
        params: Any,
        ctx: RequestContext,
        tg: TaskGroup,
    ) -> None:
        """A request in flight whose handler is queued only once ``hold`` calls back
        (:attr:`Deferred.hold`), or at once when it is cancelled or aborted first."""
        self._in_flight[ctx.id] = ctx

        def release() -> None:
            if ctx._release is None:
                return
            ctx._release = None
            if self._closing:
                return  # the session's requests end with it, queued or not
            self._take_job(handler, params, ctx, tg)

        ctx._release = release
        if not hold(release):
            release()

    def _queue_job(
        self, handler: RequestHandler, params: Any, ctx: RequestContext, tg: TaskGroup
    ) -> None:
        self._in_flight[ctx.id] = ctx
        self._take_job(handler, params, ctx, tg)

    def _take_job(
        self, handler: RequestHandler, params: Any, ctx: RequestContext, tg: TaskGroup
    ) -> None:
        """Hand a request in flight to a worker task (a parked one, or a new one)."""
        self._jobs.append((handler, params, ctx))
        if self._parked:
            self._ready += 1
            self._parked.popleft().set()
        elif self._ready == 0:
            self._ready += 1
            tg.start_soon(self._worker, tg)

    async def _worker(self, tg: TaskGroup) -> None:
        """Run queued requests, one at a time, in this task of the requests' task group.

        A worker that takes a job while more are waiting and no other worker is about
        to take them starts one more worker first, so a request that suspends (a slow
        tool) never holds up the ones behind it: each waits at most one scheduling
        round. Spawning an anyio task costs ~15-50 µs; handing a job to a ready worker
        costs ~1 µs, which is where the pipelined throughput comes from.

        The requests run one after the other under one cancel scope of this task, a new
        one only after a request cancelled or aborted ended the last: a handler runs
        under a scope that only its own cancellation cancels, as with a scope of its
        own, and entering and leaving an anyio scope per request cost more than the rest
        of a quick request's dispatch.
        """
        self._ready -= 1
        jobs = self._jobs
        streak = 0
        while True:
            current: RequestContext | None = None
            try:
                with self._new_scope() as scope:
                    while True:
                        if not jobs:
                            if len(self._parked) >= _MAX_PARKED_WORKERS:
                                return
                            event = self._new_event()
                            self._parked.append(event)
                            try:
                                await event.wait()
                            except BaseException:
                                if event in self._parked:
                                    self._parked.remove(event)
                                elif event.is_set():
                                    self._ready -= 1  # woken for a job it will never take
                                raise
                            self._ready -= 1
                            streak = 0
                            continue
                        handler, params, ctx = jobs.popleft()
                        if jobs and self._ready == 0:
                            self._ready += 1
                            tg.start_soon(self._worker, tg)
                        current = ctx
                        ctx._scope = scope
                        if ctx.cancelled_by is not None or ctx._abort_error is not None:
                            scope.cancel()
                        reply = await self._run_handler(handler, params, ctx)
                        current = None
                        self._finish_request(ctx, reply, caught=False)
                        if scope.cancel_called:
                            break  # its cancellation came too late to interrupt it
                        streak += 1
                        if streak >= 64:  # let the reader and writer run during a long burst
                            streak = 0
                            await anyio.lowlevel.checkpoint()
            except BaseException:
                if current is not None:
                    self._request_ended(current)  # cancelled with the session: no answer
                raise
            if current is not None:
                # Its cancellation (or abort) went through the handler and ended the scope.
                self._finish_request(current, None, caught=scope.cancelled_caught)

    async def _run_handler(
        self, handler: RequestHandler, params: Any, ctx: RequestContext
    ) -> dict[str, Any] | None:
        """The handler's answer to one request, as a reply (its result or its error); a
        cancellation of the request's scope goes through (to :meth:`_worker`)."""
        try:
            result = await handler(params, ctx)
            return response(ctx.id, result)
        except JsonRpcError as exc:
            return error_response(ctx.id, exc)
        except anyio.get_cancelled_exc_class():
            if not is_stray_cancellation():
                raise
            log.exception("%s: handler for %s raised a stray cancellation", self.name, ctx.method)
            return error_response(ctx.id, JsonRpcError(INTERNAL_ERROR, "Internal error"))
        except Exception:
            log.exception("%s: handler for %s failed", self.name, ctx.method)
            return error_response(ctx.id, JsonRpcError(INTERNAL_ERROR, "Internal error"))

    def _finish_request(
        self, ctx: RequestContext, reply: dict[str, Any] | None, *, caught: bool
    ) -> None:
        """Answer a request whose handler ended: with ``reply`` (None when a cancellation
        went through it: ``caught``), unless its state says otherwise."""
        if ctx._committed and reply is not None:
            pass  # the change was made: its answer is owed, cancelled or not
        elif ctx._abort_error is not None and (reply is None or caught):
            reply = error_response(ctx.id, ctx._abort_error)
        elif ctx.cancelled_by == "lsp":
            reply = error_response(ctx.id, JsonRpcError(REQUEST_CANCELLED, "Request cancelled"))
        elif ctx.cancelled_by == "mcp":
            reply = None  # MCP: nothing more is sent for a cancelled request
        answered = self._request_ended(ctx)
        if answered:
            return
        if ctx._batch is not None:
            ctx._batch.add(reply)
            ctx._batch.flush_if_done()
        elif reply is not None:
            self._send_reply(reply)

    def _request_ended(self, ctx: RequestContext) -> bool:
        """A request's handler is over: it is no longer in flight. True when
        :meth:`settle` answered for it already (its own reply is dropped)."""
        answered = ctx._answered
        ctx._done = True
        if ctx.progress_token is not None:
            self.output.forget_lossy(ctx.progress_token)
        if self._in_flight.get(ctx.id) is ctx:
            del self._in_flight[ctx.id]
        if ctx._batch is not None and not answered:
            ctx._batch.outstanding -= 1
        self._note_flight_change()
        if ctx.on_done is not None:
            try:
                ctx.on_done()
            except Exception:
                log.exception("%s: on_done failed for %s", self.name, ctx.method)
        return answered

    def _dispatch_notification(self, note: Notification) -> None:
        method = note.method
        params = note.params
        if type(params) is list:
            if params:
                log.warning(
                    "%s: ignoring notification %s: %s", self.name, method, PARAMS_NOT_AN_OBJECT
                )
                return
            params = {}
        if method == "notifications/cancelled":
            if type(params) is dict:
                rid = params.get("requestId")
                target = self._in_flight.get(rid) if is_valid_id(rid) else None
                if target is not None and target.method != "initialize":
                    log.debug("%s: request %r cancelled (mcp)", self.name, target.id)
                    target.cancel("mcp")
                    if not target._committed:
                        # Nothing more is sent for it, so its id is free at once.
                        del self._in_flight[target.id]
                        self._note_flight_change()
            return
        if method == "$/cancelRequest":
            if type(params) is dict:
                rid = params.get("id")
                target = self._in_flight.get(rid) if is_valid_id(rid) else None
                if target is not None and target.method != "initialize":
                    log.debug("%s: request %r cancelled (lsp)", self.name, target.id)
                    target.cancel("lsp")
            return
        if self._progress_listeners and type(params) is dict:
            token = params.get("progressToken")
            # A valid id only: True or 1.0 would find the listener of token 1.
            listener = self._progress_listeners.get(token) if is_valid_id(token) else None
            if listener is not None:
                try:
                    listener(method, params)
                except Exception:
                    log.exception("%s: progress listener for %s failed", self.name, method)
                return
        handler = self._notes.get(method)
        if handler is None:
            log.debug("%s: ignoring notification %s", self.name, method)
            return
        try:
            handler(params)
        except Exception:
            log.exception("%s: notification handler for %s failed", self.name, method)

    def _dispatch_response(self, resp: Response) -> None:
        # pop: the first response settles the request; a second one for the same id
        # (or one for an id never sent) is logged and dropped, never answered.
        pending = self._pending.pop(resp.id, None) if resp.id is not None else None
        if pending is None or pending.event.is_set():
            if resp.error is not None:
                log.warning(
                    "%s: dropped response (id %r): %s", self.name, resp.id, resp.error.message
                )
            else:
                log.debug("%s: dropped response for unknown or settled id %r", self.name, resp.id)
            return
        pending.result = resp.result
        pending.error = resp.error
        pending.set()

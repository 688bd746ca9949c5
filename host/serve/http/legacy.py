"""The 2025-11-25 leg of :mod:`toolwire.host.serve.http`: ``initialize``, ``Mcp-Session-Id``
sessions with expiry, the session's GET stream, DELETE (MCP 2025-11-25
"transports/streamable-http").

One :class:`~toolwire.host.methods.server.HostServer` and one :class:`~toolwire.session.Session`
per HTTP session, exactly like one stdio connection; each POSTed request is answered on
its own response (JSON, or SSE once it sends progress, logs or a server→client request).
A disconnect is not a cancellation (``notifications/cancelled`` is). Responses are bound
to the HTTP exchange that carried the request, never to its id alone: two concurrent
requests with one id in one session get 409.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import time
from collections import deque
from typing import Any

import anyio
from anyio.abc import TaskGroup

from toolwire import _json
from toolwire.errors import INTERNAL_ERROR, INVALID_REQUEST
from toolwire.messages import is_valid_id
from toolwire.streams import MemoryReceiveStream

from ...methods.server import HostServer
from ...tools.registry import Registry
from ..options import HostConfig
from .auth import Principal
from .config import HttpSettings
from .wire import (
    Receive,
    Send,
    _answer,
    _EventLog,
    _Exchange,
    _Headers,
    _media_types,
    _Outbox,
    _Refusal,
    _resume,
    _send_json,
)

__all__: list[str] = []

log = logging.getLogger("toolwire.host.http")

KEPT_FINISHED = 8
"""Answered resumable streams a session keeps for ``Last-Event-ID`` replay (a response
written just as the connection dropped may never have arrived)."""

# --------------------------------------------------------------------------- sessions


class _LegacySession:
    """One 2025-11-25 HTTP session: a host server on a session, its open exchanges."""

    def __init__(self, sid: str, principal: str, server: HostServer, max_size: int) -> None:
        self.id = sid
        self.principal = principal
        self.server = server
        self.inbox = MemoryReceiveStream()
        self.session = server.open_session(
            self.inbox,
            _Outbox(self._route),
            framing="ndjson",
            max_message_size=max_size,
            name=f"http-session-{sid[:8]}",
        )
        self.exchanges: dict[Any, _Exchange] = {}
        self.tokens: dict[Any, _Exchange] = {}
        self.stream: _Exchange | None = None
        self.resumable: dict[str, _Exchange] = {}
        """POST streams a client may resume (GET + Last-Event-ID), by stream id."""
        self._streams = 0
        self._finished: deque[str] = deque()
        self.last_used = time.monotonic()
        self.ended = anyio.Event()

    def _route(self, raw: bytes) -> None:
        """Send one message of the session to the HTTP response it belongs to."""
        try:
            obj = _json.loads(raw)
        except ValueError:  # pragma: no cover - the session writes JSON
            return
        if type(obj) is not dict:
            return
        if "method" not in obj:  # a response: to the exchange of its request
            exchange = self.exchanges.pop(obj.get("id"), None)
            if exchange is not None:
                self._forget_tokens(exchange)
                exchange.deliver(raw, final=True)
            return
        params = obj.get("params")
        if "id" not in obj and type(params) is dict and "progressToken" in params:
            token = params["progressToken"]
            exchange = self.tokens.get(token) if is_valid_id(token) else None
            if exchange is not None:
                exchange.deliver(raw)
                return
        # Logs, list changes and server→client requests: to the one request in flight,
        # else to the session's GET stream, else to the oldest request in flight.
        target: _Exchange | None = None
        if len(self.exchanges) == 1:
            target = next(iter(self.exchanges.values()))
        elif self.stream is not None:
            target = self.stream
        elif self.exchanges:
            target = next(iter(self.exchanges.values()))
        if target is not None:
            target.deliver(raw)
        else:
            log.debug("%s: no stream for %s; dropped", self.session.name, obj.get("method"))

    def finished(self, stream: str) -> None:
        """A resumable stream was answered on some connection: keep it for replay (the
        client may not have received the end), the last :data:`KEPT_FINISHED` only."""
        if stream in self._finished:
            return
        self._finished.append(stream)
        while len(self._finished) > KEPT_FINISHED:
            self.resumable.pop(self._finished.popleft(), None)

    def _forget_tokens(self, exchange: _Exchange) -> None:
        for token in [t for t, e in self.tokens.items() if e is exchange]:
            del self.tokens[token]

    @property
    def idle(self) -> bool:
        return not self.exchanges and self.stream is None

    def end(self) -> None:
        """End the session: its calls are cancelled, its streams closed."""
        self.session.close()
        self.inbox.end()
        for exchange in list(self.exchanges.values()):
            exchange.close()
        self.exchanges.clear()
        self.tokens.clear()
        for exchange in self.resumable.values():
            exchange.close()
        self.resumable.clear()
        if self.stream is not None:
            self.stream.close()


class _LegacyLeg:
    """The 2025-11-25 methods of :class:`~toolwire.host.serve.http.HttpHost` (a mixin: the
    attributes below are the host's)."""

    config: HostConfig
    settings: HttpSettings
    sessions: dict[str, _LegacySession]
    _tg: TaskGroup | None
    _registry: Registry | None

    def _new_server(self) -> HostServer:
        """A host server for one session (the host's)."""
        raise NotImplementedError

    def _session(
        self, headers: _Headers, principal: Principal, *, required_for: str
    ) -> _LegacySession:
        sid = headers.get("mcp-session-id")
        if sid is None:
            if required_for in ("GET", "DELETE"):
                raise _Refusal(
                    405,
                    INVALID_REQUEST,
                    f"{required_for} needs an Mcp-Session-Id (MCP 2025-11-25)",
                    headers=[(b"allow", b"POST")],
                )
            raise _Refusal(400, INVALID_REQUEST, "Bad Request: Missing session ID")
        session = self.sessions.get(sid)
        # A session is its creator's: another principal gets the answer of an
        # unknown id (MCP 2025-11-25 security best practices, session hijacking).
        if session is None or not hmac.compare_digest(session.principal, principal.name):
            raise _Refusal(404, INVALID_REQUEST, "Session not found")
        session.last_used = time.monotonic()
        return session

    # ------------------------------------------------------------------ requests

    async def _initialize(
        self,
        obj: dict[str, Any],
        body: bytes,
        principal: Principal,
        receive: Receive,
        send: Send,
        sse: bool,
    ) -> None:
        if not is_valid_id(obj.get("id")):
            raise _Refusal(400, INVALID_REQUEST, "Invalid Request: initialize needs an id")
        if len(self.sessions) >= self.settings.max_sessions:
            raise _Refusal(503, INTERNAL_ERROR, "Too many sessions open", id=obj.get("id"))
        assert self._tg is not None
        sid = secrets.token_urlsafe(24)
        session = _LegacySession(
            sid, principal.name, self._new_server(), self.config.max_message_size
        )
        self.sessions[sid] = session

        async def run() -> None:
            try:
                await session.session.serve()
            finally:
                self._end_session(session)

        self._tg.start_soon(run)
        log.info("session %s… opened", sid[:8])
        await self._post_legacy(
            session, obj, body, receive, send, sse, headers=[(b"mcp-session-id", sid.encode())]
        )

    async def _post_legacy(
        self,
        session: _LegacySession,
        obj: dict[str, Any],
        body: bytes,
        receive: Receive,
        send: Send,
        sse: bool,
        headers: list[tuple[bytes, bytes]] | None = None,
        *,
        resumable: bool = False,
    ) -> None:
        """Serve one POSTed message of a session. ``resumable`` (a 2025-11-25 client):
        an answer streamed as SSE carries event ids, starts with a priming event and a
        ``retry`` hint, and can be resumed after a dropped connection (:meth:`_get`)."""
        method = obj.get("method")
        if "id" not in obj or method is None:
            # A notification, or the answer to a server→client request.
            session.inbox.put(body + b"\n")
            if method == "notifications/cancelled":
                # Nothing more is sent for a cancelled request, not even a response (MCP
                # 2025-11-25, cancellation: receivers SHOULD NOT respond): its open SSE
                # response just ends (see _answer).
                params = obj.get("params")
                rid = params.get("requestId") if type(params) is dict else None
                exchange = session.exchanges.pop(rid, None) if is_valid_id(rid) else None
                if exchange is not None:
                    session._forget_tokens(exchange)
                    exchange.cancelled = True
                    exchange.close()
            await _send_json(send, 202, None)
            return
        rid = obj.get("id")
        if not is_valid_id(rid):
            raise _Refusal(400, INVALID_REQUEST, "Invalid Request: id must be a string or integer")
        if rid in session.exchanges:
            raise _Refusal(
                409,
                INVALID_REQUEST,
                f"Request id {rid!r} is already in use in this session",
                id=rid,
            )
        log = None
        if resumable:
            session._streams += 1
            log = _EventLog(str(session._streams))
        exchange = _Exchange(rid, log)
        session.exchanges[rid] = exchange
        params = obj.get("params")
        meta = params.get("_meta") if type(params) is dict else None
        if type(meta) is dict and is_valid_id(meta.get("progressToken")):
            session.tokens[meta["progressToken"]] = exchange
        session.inbox.put(body + b"\n")
        try:
            # A disconnect is not a cancellation here (MCP 2025-11-25): the call goes
            # on; its answer has nowhere to go and is dropped.
            if log is not None:
                session.resumable[log.stream] = exchange
            await _answer(exchange, receive, send, sse, modern=False, headers=headers)
        finally:
            if log is not None and not log.started:
                session.resumable.pop(log.stream, None)  # answered as JSON: no ids
            elif log is not None and log.finished:
                session.finished(log.stream)
            session.last_used = time.monotonic()

    async def _get(
        self, session: _LegacySession, headers: _Headers, receive: Receive, send: Send
    ) -> None:
        if not _media_types(headers.get("accept")) & {"text/event-stream", "text/*", "*/*"}:
            raise _Refusal(406, INVALID_REQUEST, "Not Acceptable: GET streams text/event-stream")
        last = headers.get("last-event-id")
        if last is not None:
            await self._resume(session, last, receive, send)
            return
        if session.stream is not None:
            raise _Refusal(409, INVALID_REQUEST, "This session's stream is already open")
        stream = session.stream = _Exchange()
        try:
            await _answer(stream, receive, send, True, modern=False, standalone=True)
        finally:
            if session.stream is stream:
                session.stream = None
            session.last_used = time.monotonic()

    async def _resume(
        self, session: _LegacySession, last: str, receive: Receive, send: Send
    ) -> None:
        """``GET`` + ``Last-Event-ID``: the rest of the POST stream that event belongs
        to, never another stream's or another session's (MCP 2025-11-25, resumability).

        Raises:
            _Refusal: 400 for an id of no resumable stream of this session (unknown,
                or answered and no longer kept: :data:`KEPT_FINISHED`).
        """
        exchange = session.resumable.get(last.rpartition("-")[0])
        after = exchange.log.parse(last) if exchange is not None and exchange.log else None
        if exchange is None or exchange.log is None or after is None:
            raise _Refusal(400, INVALID_REQUEST, "Last-Event-ID names no stream to resume")
        try:
            await _resume(exchange, after, receive, send)
        finally:
            if exchange.log.finished:
                session.finished(exchange.log.stream)
            session.last_used = time.monotonic()

    def _end_session(self, session: _LegacySession) -> None:
        if self.sessions.get(session.id) is session:
            del self.sessions[session.id]
            log.info("session %s… ended", session.id[:8])
        session.end()
        registry = self._registry
        if registry is not None:
            registry.off_change(session.server.tools_changed)
            registry.off_change(session.server.modern.tools_changed)

    async def _expire_sessions(self) -> None:
        timeout = self.settings.session_idle_timeout
        while True:
            await anyio.sleep(min(60.0, timeout / 4))
            now = time.monotonic()
            for session in list(self.sessions.values()):
                if session.idle and now - session.last_used > timeout:
                    log.info("session %s… expired", session.id[:8])
                    self._end_session(session)

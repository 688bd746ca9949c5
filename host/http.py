"""MCP Streamable HTTP for the host: an ASGI application, both eras, secure by default.

:func:`create_app` returns the application (``toolwire serve --http`` runs it with
uvicorn; users who run their own ASGI server import it). It serves the same host as
stdio — the same registry, workers, sandbox, approval policy, batches — at one
endpoint (``/mcp``), plus ``/healthz`` and ``/readyz``. toolwire writes only the MCP
transport rules here; HTTP parsing is the ASGI server's.

How requests are served (protocol.md §12 has the statuses and examples):

* **2026-07-28** (a ``MCP-Protocol-Version`` header outside the 2025 set, or a modern
  ``_meta`` claim): per request, statelessly. Each POST gets a
  :class:`~toolwire.session.Session` of its own over in-memory streams, routed to the
  host's 2026-07-28 handlers (:mod:`toolwire.host.modern`), so nothing — ids, progress
  tokens, log levels — is shared with another request. The headers ``MCP-Protocol-Version``,
  ``Mcp-Method`` and ``Mcp-Name`` must match the body (400 + -32020). Closing the response
  is the cancellation.
* **2025-11-25** (``initialize``, then ``Mcp-Session-Id``): one
  :class:`~toolwire.host.server.HostServer` and one Session per HTTP session, exactly
  like one stdio connection; each POSTed request is answered on its own response (JSON,
  or SSE once it sends progress, logs or a server→client request); GET opens the
  session's stream for messages not tied to a request; DELETE ends the session; idle
  sessions expire. A disconnect is not a cancellation (``notifications/cancelled`` is).
  Responses are bound to the HTTP exchange that carried the request, never to its id
  alone: two concurrent requests with one id in one session get 409.

Security (SECURITY.md): ``Host`` and ``Origin`` are checked against allowlists on every
request (421 / 403); a static bearer token is compared in constant time (401 with
``WWW-Authenticate``); bodies are bounded (413) and must arrive within a deadline (408).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import logging
import math
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any

import anyio
from anyio.abc import ByteSendStream, TaskGroup

from toolwire import _json
from toolwire.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    JsonRpcError,
)
from toolwire.extensions import CALL_BATCH
from toolwire.messages import error_response, is_valid_id
from toolwire.modern import (
    DISCOVER,
    LISTEN,
    MISSING_CLIENT_CAPABILITY,
    NAMED_BY_HEADER,
    UNSUPPORTED_PROTOCOL_VERSION,
    is_modern_request,
    parse_envelope,
)
from toolwire.session import Session
from toolwire.streams import MemoryReceiveStream

from .approval import ApprovalPolicy
from .connection import _load_modules, build_registry, describe, start_workers
from .context import ExecEnv
from .executor import Executor
from .http_direct import answer_direct, direct_session, goes_direct
from .httpauth import (
    Authenticator,
    AuthFailure,
    Principal,
    PrincipalSigner,
    current_principal,
    metadata_path,
)
from .httpconfig import LOOPBACK_NAMES, HttpSettings
from .inputs import HostInputs, activate, deactivate
from .inputs_collect import check_configured_bwrap, collect
from .options import HostConfig, StartupError
from .registry import Registry
from .sandbox import Sandbox, resolve_sandbox
from .server import HostServer

__all__ = [
    "HEADER_MISMATCH",
    "LEGACY_PROTOCOL_VERSIONS",
    "HttpHost",
    "create_app",
    "serve_http",
]

log = logging.getLogger("toolwire.host.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

HEADER_MISMATCH = -32020
"""MCP 2026-07-28 ``HeaderMismatchError``: a routing header is missing, duplicated,
malformed or contradicts the body (HTTP 400)."""

LEGACY_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""``MCP-Protocol-Version`` values served by the session (2025-11-25) leg."""

KEEPALIVE_SECONDS = 15.0
"""Seconds of silence on an SSE stream after which a comment line is sent, so proxies
and clients do not time the stream out (mcp-http.md §7)."""

_MODERN_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    METHOD_NOT_FOUND: 404,
    HEADER_MISMATCH: 400,
    MISSING_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
}
"""HTTP status of a 2026-07-28 JSON-RPC error answered as JSON (MCP 2026-07-28
"transports/streamable-http"; codes not named there: 200)."""


def _modern_status(code: int) -> int:
    """The HTTP status of a 2026-07-28 JSON-RPC error answered as JSON."""
    return _MODERN_STATUS.get(code, 200)


_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]


# --------------------------------------------------------------------------- streams


class _Outbox(ByteSendStream):
    """The bytes a Session writes, cut into messages and handed to ``deliver`` at once
    (``try_send``: the session never waits for its writer task)."""

    def __init__(self, deliver: Callable[[bytes], None]) -> None:
        self._deliver = deliver
        self._buf = b""

    def try_send(self, data: bytes) -> int:
        self._feed(bytes(data))
        return len(data)

    async def send(self, item: bytes) -> None:
        self._feed(bytes(item))

    def _feed(self, data: bytes) -> None:
        buf = self._buf + data if self._buf else data
        start = 0
        while (end := buf.find(b"\n", start)) != -1:
            if end > start:
                self._deliver(buf[start:end])
            start = end + 1
        self._buf = buf[start:]

    async def aclose(self) -> None:
        pass


class _Exchange:
    """Messages owed to one HTTP response: the server's messages about one request,
    then its response (``final``), or a 2025 session's standalone GET stream."""

    def __init__(self, request_id: Any = None) -> None:
        self.request_id = request_id
        self._tx, self._rx = anyio.create_memory_object_stream[tuple[bytes, bool]](math.inf)
        self.done = False
        self.cancelled = False

    def deliver(self, raw: bytes, final: bool = False) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._tx.send_nowait((raw, final))
        if final:
            self.done = True
            self._tx.close()

    def close(self) -> None:
        self.done = True
        self._tx.close()

    async def next(self) -> tuple[bytes, bool] | None:
        """The next message and whether it is the response; None once closed."""
        try:
            return await self._rx.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return None


# --------------------------------------------------------------------------- requests


class _Headers:
    """An ASGI request's headers: lower-case names → values (latin-1), all of them."""

    def __init__(self, scope: Scope) -> None:
        self.values: dict[str, list[str]] = {}
        for name, value in scope.get("headers", []):
            self.values.setdefault(name.decode("latin-1").lower(), []).append(
                value.decode("latin-1")
            )

    def get(self, name: str) -> str | None:
        values = self.values.get(name)
        return values[0].strip() if values else None

    def count(self, name: str) -> int:
        return len(self.values.get(name, ()))


class _Refusal(Exception):
    """An HTTP error answer: status, JSON-RPC error (id echoed when known), headers."""

    def __init__(
        self,
        status: int,
        code: int,
        message: str,
        *,
        id: Any = None,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error = JsonRpcError(code, message)
        self.id = id
        self.headers = headers or []


async def _send_json(
    send: Send, status: int, body: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = b"" if body is None else _json.dumps(body)
    out = [(b"content-length", str(len(payload)).encode())]
    if body is not None:
        out.append((b"content-type", b"application/json"))
    await send({"type": "http.response.start", "status": status, "headers": out + (headers or [])})
    await send({"type": "http.response.body", "body": payload})


def _media_types(value: str | None) -> set[str]:
    if value is None:
        return set()
    return {part.split(";", 1)[0].strip().lower() for part in value.split(",") if part.strip()}


def _decode_header_value(value: str) -> str:
    """An ``Mcp-Name`` value, its base64 sentinel ``=?base64?…?=`` decoded (MCP
    2026-07-28 "transports/streamable-http", header value encoding).

    Raises:
        ValueError: a sentinel whose content is not canonical base64 of UTF-8.
    """
    if value.startswith("=?base64?") and value.endswith("?=") and len(value) >= 11:
        inner = value[9:-2]
        try:
            raw = base64.b64decode(inner, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("invalid base64 sentinel") from None
        if base64.b64encode(raw).decode("ascii") != inner:
            raise ValueError("non-canonical base64 sentinel")
        return raw.decode("utf-8")
    return value


def _host_allowed(host: str | None, allowed: list[str]) -> bool:
    if not host:
        return False
    host = host.lower()
    name, port = _split_host(host)
    for entry in allowed:
        e_name, e_port = _split_host(entry.lower())
        if e_name == name and (e_port is None or e_port == port):
            return True
    return False


def _split_host(value: str) -> tuple[str, str | None]:
    if value.startswith("["):
        end = value.find("]")
        if end == -1:
            return value, None
        rest = value[end + 1 :]
        return value[: end + 1], rest[1:] if rest.startswith(":") else None
    name, sep, port = value.rpartition(":")
    if not sep or ":" in name:
        return value, None
    return name, port


def _origin_allowed(origin: str, allowed: list[str]) -> bool:
    origin = origin.lower()
    scheme, sep, rest = origin.partition("://")
    if not sep or scheme not in ("http", "https") or "/" in rest:
        return False
    for entry in allowed:
        e_scheme, e_sep, e_rest = entry.lower().rstrip("/").partition("://")
        if e_sep and e_scheme == scheme and _host_allowed(rest, [e_rest]):
            return True
    return False


# --------------------------------------------------------------------------- sessions


class _LegacySession:
    """One 2025-11-25 HTTP session: a host server on a session, its open exchanges."""

    def __init__(self, sid: str, principal: str, server: HostServer, max_size: int) -> None:
        self.id = sid
        self.principal = principal
        self.server = server
        self.inbox = MemoryReceiveStream()
        self.session = Session(
            self.inbox,
            _Outbox(self._route),
            framing="ndjson",
            max_message_size=max_size,
            name=f"http-session-{sid[:8]}",
        )
        server.attach(self.session)
        self.exchanges: dict[Any, _Exchange] = {}
        self.tokens: dict[Any, _Exchange] = {}
        self.stream: _Exchange | None = None
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
        if self.stream is not None:
            self.stream.close()


# --------------------------------------------------------------------------- the app


class HttpHost:
    """The ASGI application serving the host over Streamable HTTP (see the module).

    Args:
        config: the host's options (``config.root`` must be a directory).
        settings: how to listen and whom to let in.
        registry: the tools (built from ``config`` at start-up when None).
        sandbox: the resolved sandbox (resolved from ``config.sandbox`` when None).
        inputs: the host inputs (collected from ``config`` when None).

    The host starts in the ASGI lifespan (the server must run it: uvicorn does by
    default); requests before start-up completes get 503.
    """

    def __init__(
        self,
        config: HostConfig,
        settings: HttpSettings,
        *,
        registry: Registry | None = None,
        sandbox: Sandbox | None = None,
        inputs: HostInputs | None = None,
    ) -> None:
        self.config = config
        self.settings = settings
        self._registry = registry
        self._sandbox = sandbox
        self._inputs = inputs
        hosts = [*LOOPBACK_NAMES, *settings.allowed_hosts]
        if not settings.loopback and settings.host not in ("0.0.0.0", "::", ""):
            hosts.append(settings.host if ":" not in settings.host else f"[{settings.host}]")
        self.allowed_hosts = hosts
        self.allowed_origins = [
            *(f"{s}://{n}" for s in ("http", "https") for n in LOOPBACK_NAMES),
            *settings.allowed_origins,
        ]
        shown = f"[{settings.host}]" if ":" in settings.host else settings.host
        self.auth = Authenticator(settings, f"http://{shown}:{settings.port}{settings.path}")
        self.ready = False
        self.startup_error: BaseException | None = None
        self.sessions: dict[str, _LegacySession] = {}
        self._primary: HostServer | None = None
        self._direct: Session | None = None
        self._tg: TaskGroup | None = None
        self._env: ExecEnv | None = None
        self._executor: Executor | None = None
        self._approval: ApprovalPolicy | None = None
        self._instructions: str | None = None

    # ------------------------------------------------------------------ lifespan

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[HttpHost]:
        """Start the host (sandbox, registry, workers) for the body of the block.

        Raises:
            StartupError: see :func:`toolwire.host.connection.run_host`.
            SandboxUnavailable: the configured sandbox is not available.
        """
        config = self.config
        sandbox = self._sandbox
        if sandbox is None:
            check_configured_bwrap(config)
            sandbox = resolve_sandbox(config.sandbox)
        env = ExecEnv.at(config.root, default_timeout=None, sandbox=sandbox)
        registry = self._registry if self._registry is not None else build_registry(config)
        inputs = self._inputs if self._inputs is not None else collect(config)
        if env.sandbox is not None:
            env.sandbox.protected_paths = inputs.paths()
        self._env = env
        self._registry = registry
        self._executor = Executor(default_timeout=config.timeout, max_threads=config.max_threads)
        self._approval = ApprovalPolicy.parse(config.approve)
        self._instructions = describe(config, env, inputs)
        self._primary = self._new_server()
        self._primary.modern.signer = PrincipalSigner()  # rounds bound to their principal
        self._direct = direct_session()
        activate(inputs)
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                if config.isolation == "process":
                    workers = start_workers(config, registry, env, self._primary)
                    async with workers.running():
                        await _load_modules(workers, config)
                        async with self._serving(tg, registry):
                            yield self
                else:
                    async with self._serving(tg, registry):
                        yield self
                tg.cancel_scope.cancel()
        finally:
            deactivate(inputs)

    @contextlib.asynccontextmanager
    async def _serving(self, tg: TaskGroup, registry: Registry) -> AsyncIterator[None]:
        assert self._approval is not None
        self._approval.settle(t.name for t in registry)
        tg.start_soon(self._expire_sessions)
        self.ready = True
        log.info("serving %d tools over HTTP", len(registry))
        try:
            yield
        finally:
            self.ready = False
            for session in list(self.sessions.values()):
                self._end_session(session)

    def _new_server(self) -> HostServer:
        assert self._registry is not None and self._env is not None
        env = self._env
        return HostServer(
            self._registry,
            env,
            self._executor,
            instructions=self._instructions,
            page_size=self.config.page_size,
            approval=self._approval,
            approval_timeout=self.config.approval_timeout,
            server_description=env.sandbox.describe() if env.sandbox is not None else None,
        )

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] != "lifespan.startup":  # pragma: no cover - ASGI order
            return
        started = False
        try:
            async with self.running():
                started = True
                await send({"type": "lifespan.startup.complete"})
                while (await receive())["type"] != "lifespan.shutdown":
                    pass
        except BaseException as exc:
            if started:
                raise
            self.startup_error = exc
            text = str(exc) if isinstance(exc, StartupError) else f"host failed: {exc!r}"
            await send({"type": "lifespan.startup.failed", "message": text})
            return
        await send({"type": "lifespan.shutdown.complete"})

    # ------------------------------------------------------------------ dispatch

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI 3 entry point (``lifespan`` and ``http`` scopes)."""
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return  # websockets are not served
        try:
            await self._http(scope, receive, send)
        except _Refusal as refusal:
            await _send_json(
                send,
                refusal.status,
                error_response(refusal.id, refusal.error),
                refusal.headers,
            )

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        method = scope.get("method", "GET")
        if path in ("/healthz", "/readyz"):
            ok = path == "/healthz" or self.ready
            await _send_json(send, 200 if ok else 503, {"status": "ok" if ok else "starting"})
            return
        headers = _Headers(scope)
        if headers.count("host") != 1 or not _host_allowed(headers.get("host"), self.allowed_hosts):
            raise _Refusal(421, INVALID_REQUEST, "Invalid Host header")
        if self.auth.oauth is not None and path == metadata_path(self.auth.resource):
            if method not in ("GET", "HEAD"):
                raise _Refusal(
                    405, INVALID_REQUEST, "Method not allowed", headers=[(b"allow", b"GET")]
                )
            await _send_json(
                send,
                200,
                self.auth.metadata(),
                [
                    (b"access-control-allow-origin", b"*"),
                    (b"cache-control", b"public, max-age=3600"),
                ],
            )
            return
        origin = headers.get("origin")
        if headers.count("origin") > 1 or (
            origin is not None and not _origin_allowed(origin, self.allowed_origins)
        ):
            raise _Refusal(403, INVALID_REQUEST, "Invalid Origin header")
        if path.rstrip("/") != self.settings.path.rstrip("/"):
            raise _Refusal(
                404,
                INVALID_REQUEST,
                f"Not found: {path} (the MCP endpoint is {self.settings.path})",
            )
        principal = await self._authenticate(headers)
        current_principal.set(principal.name)
        if not self.ready:
            raise _Refusal(503, INTERNAL_ERROR, "The host is starting or stopping")
        version = headers.get("mcp-protocol-version")
        modern_header = version is not None and version not in LEGACY_PROTOCOL_VERSIONS
        if method == "POST":
            await self._post(scope, headers, receive, send, principal, modern_header)
        elif method in ("GET", "DELETE"):
            if modern_header:
                raise _Refusal(
                    405,
                    INVALID_REQUEST,
                    f"{method} is not part of MCP {version}",
                    headers=[(b"allow", b"POST")],
                )
            session = self._session(headers, principal, required_for=method)
            if method == "GET":
                await self._get(session, headers, receive, send)
            else:
                self._end_session(session)
                await _send_json(send, 200, None)
        else:
            raise _Refusal(
                405,
                INVALID_REQUEST,
                f"Method not allowed: {method}",
                headers=[(b"allow", b"GET, POST, DELETE")],
            )

    async def _authenticate(self, headers: _Headers) -> Principal:
        """The principal of a request (anonymous without authentication).

        Raises:
            _Refusal: 401 with ``WWW-Authenticate`` (RFC 6750 §3) when a token is needed
                and missing or invalid.
        """
        try:
            return await self.auth.authenticate(headers.values.get("authorization", []))
        except AuthFailure as exc:
            raise _Refusal(
                exc.status,
                INVALID_REQUEST,
                str(exc),
                headers=[(b"www-authenticate", exc.challenge.encode("latin-1"))],
            ) from None

    def _check_scopes(self, principal: Principal, obj: dict[str, Any]) -> None:
        """403 ``insufficient_scope`` before a call whose tool needs scopes the token
        lacks (checked before any response byte: a 403 cannot follow a 200)."""
        if self.auth.oauth is None:
            return
        method = obj.get("method")
        params = obj.get("params")
        if type(params) is not dict:
            return
        names: list[str] = []
        if method == "tools/call" and type(params.get("name")) is str:
            names.append(params["name"])
        elif method == CALL_BATCH and type(params.get("calls")) is list:
            names.extend(
                c["name"] for c in params["calls"] if type(c) is dict and type(c.get("name")) is str
            )
        try:
            self.auth.check_scopes(principal, names)
        except AuthFailure as exc:
            raise _Refusal(
                exc.status,
                INVALID_REQUEST,
                str(exc),
                id=obj.get("id"),
                headers=[(b"www-authenticate", exc.challenge.encode("latin-1"))],
            ) from None

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

    # ------------------------------------------------------------------ POST

    async def _read_body(self, headers: _Headers, receive: Receive) -> bytes | None:
        """The request body (None: the client went away).

        Raises:
            _Refusal: 413 over ``--max-message-size``, 408 past the body deadline.
        """
        limit = self.config.max_message_size
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise _Refusal(413, INVALID_REQUEST, f"Request body too large (limit {limit} bytes)")
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.settings.body_timeout) as deadline:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return None
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise _Refusal(
                        413, INVALID_REQUEST, f"Request body too large (limit {limit} bytes)"
                    )
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        if deadline.cancelled_caught:
            raise _Refusal(408, INVALID_REQUEST, "Request body not received in time")
        return b"".join(chunks)

    async def _post(
        self,
        scope: Scope,
        headers: _Headers,
        receive: Receive,
        send: Send,
        principal: Principal,
        modern_header: bool,
    ) -> None:
        content_type = _media_types(headers.get("content-type"))
        if content_type != {"application/json"}:
            raise _Refusal(
                415, INVALID_REQUEST, "Unsupported Media Type: the body must be application/json"
            )
        accept = _media_types(headers.get("accept"))
        sse = bool(accept & {"text/event-stream", "text/*", "*/*"})
        json_ok = bool(accept & {"application/json", "application/*", "*/*"})
        if not sse and not json_ok:
            raise _Refusal(
                406,
                INVALID_REQUEST,
                "Not Acceptable: Accept must list application/json and text/event-stream",
            )
        body = await self._read_body(headers, receive)
        if body is None:
            return
        try:
            obj = _json.loads(body)
        except ValueError as exc:
            raise _Refusal(400, PARSE_ERROR, f"Parse error: {exc}") from None
        if type(obj) is list:
            raise _Refusal(
                400, INVALID_REQUEST, "Invalid Request: batches are not served over HTTP"
            )
        if type(obj) is not dict:
            raise _Refusal(400, INVALID_REQUEST, "Invalid Request: not a JSON-RPC object")
        params = obj.get("params")
        has_session = headers.get("mcp-session-id") is not None
        modern = modern_header or (
            not has_session
            and headers.get("mcp-protocol-version") is None
            and (is_modern_request(params) or obj.get("method") in (DISCOVER, LISTEN))
        )
        self._check_scopes(principal, obj)
        if modern:
            await self._post_modern(obj, body, headers, receive, send, sse)
            return
        if obj.get("method") == "initialize" and not has_session:
            await self._initialize(obj, body, principal, receive, send, sse)
            return
        session = self._session(headers, principal, required_for="POST")
        await self._post_legacy(session, obj, body, receive, send, sse)

    # ------------------------------------------------------------------ 2026-07-28

    async def _post_modern(
        self,
        obj: dict[str, Any],
        body: bytes,
        headers: _Headers,
        receive: Receive,
        send: Send,
        sse: bool,
    ) -> None:
        method = obj.get("method")
        if type(method) is not str:
            raise _Refusal(400, INVALID_REQUEST, "Invalid Request: a client sends requests only")
        if "id" not in obj:
            await _send_json(send, 202, None)  # no client notification is defined: dropped
            return
        rid = obj["id"]
        if not is_valid_id(rid):
            raise _Refusal(400, INVALID_REQUEST, "Invalid Request: id must be a string or integer")
        for name in ("mcp-protocol-version", "mcp-method", "mcp-name"):
            if headers.count(name) > 1:
                raise _Refusal(400, HEADER_MISMATCH, f"Header mismatch: {name} sent twice", id=rid)
        params = obj.get("params")
        try:
            envelope = parse_envelope(params)
        except JsonRpcError as exc:
            raise _Refusal(400, exc.code, exc.message, id=rid) from None
        assert type(params) is dict
        version = headers.get("mcp-protocol-version")
        if version is None:
            raise _Refusal(
                400, HEADER_MISMATCH, "Header mismatch: MCP-Protocol-Version header missing", id=rid
            )
        if version != envelope.version:
            raise _Refusal(
                400,
                HEADER_MISMATCH,
                f"Header mismatch: MCP-Protocol-Version header value {version!r} does not "
                f"match body value {envelope.version!r}",
                id=rid,
            )
        header_method = headers.get("mcp-method")
        if header_method != method:
            what = "missing" if header_method is None else f"value {header_method!r}"
            raise _Refusal(
                400,
                HEADER_MISMATCH,
                f"Header mismatch: Mcp-Method header {what} does not match body value {method!r}",
                id=rid,
            )
        member = NAMED_BY_HEADER.get(method)
        if member is not None:
            raw_name = headers.get("mcp-name")
            try:
                header_name = None if raw_name is None else _decode_header_value(raw_name)
            except ValueError as exc:
                raise _Refusal(
                    400, HEADER_MISMATCH, f"Header mismatch: Mcp-Name: {exc}", id=rid
                ) from None
            body_name = params.get(member)
            if header_name is None or header_name != body_name:
                what = "missing" if header_name is None else f"value {header_name!r}"
                raise _Refusal(
                    400,
                    HEADER_MISMATCH,
                    f"Header mismatch: Mcp-Name header {what} does not match body value "
                    f"{body_name!r}",
                    id=rid,
                )
        if method == LISTEN and not sse:
            raise _Refusal(
                406, INVALID_REQUEST, "Not Acceptable: subscriptions/listen answers as SSE", id=rid
            )
        assert self._primary is not None
        if self._direct is not None and goes_direct(method, params, envelope):
            handler = self._primary.modern.route(method, params)
            if handler is not None and await answer_direct(
                self._direct, handler, rid, method, params, receive, send, _modern_status
            ):
                return
        exchange = _Exchange(rid)
        inbox = MemoryReceiveStream()

        def deliver(raw: bytes) -> None:
            final = False
            with contextlib.suppress(ValueError):
                msg = _json.loads(raw)
                final = type(msg) is dict and "method" not in msg
            exchange.deliver(raw, final)

        session = Session(
            inbox,
            _Outbox(deliver),
            framing="ndjson",
            max_message_size=self.config.max_message_size,
            name="http",
        )
        session.request_router = self._primary.modern.route
        session.unsolicited = lambda: False  # 2026-07-28: only what the request asked for
        inbox.put(body + b"\n")
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.serve)
            try:
                # A disconnect is the cancellation (MCP 2026-07-28): the session closes,
                # which interrupts the call, and nothing more is sent.
                await self._answer(exchange, receive, send, sse, modern=True)
            finally:
                exchange.close()
                session.close()
                inbox.end()

    # ------------------------------------------------------------------ 2025-11-25

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
    ) -> None:
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
        exchange = _Exchange(rid)
        session.exchanges[rid] = exchange
        params = obj.get("params")
        meta = params.get("_meta") if type(params) is dict else None
        if type(meta) is dict and is_valid_id(meta.get("progressToken")):
            session.tokens[meta["progressToken"]] = exchange
        session.inbox.put(body + b"\n")
        try:
            # A disconnect is not a cancellation here (MCP 2025-11-25): the call goes
            # on; its answer has nowhere to go and is dropped.
            await self._answer(exchange, receive, send, sse, modern=False, headers=headers)
        finally:
            session.last_used = time.monotonic()

    async def _get(
        self, session: _LegacySession, headers: _Headers, receive: Receive, send: Send
    ) -> None:
        if not _media_types(headers.get("accept")) & {"text/event-stream", "text/*", "*/*"}:
            raise _Refusal(406, INVALID_REQUEST, "Not Acceptable: GET streams text/event-stream")
        if session.stream is not None:
            raise _Refusal(409, INVALID_REQUEST, "This session's stream is already open")
        stream = session.stream = _Exchange()
        try:
            await self._answer(stream, receive, send, True, modern=False, standalone=True)
        finally:
            if session.stream is stream:
                session.stream = None
            session.last_used = time.monotonic()

    def _end_session(self, session: _LegacySession) -> None:
        if self.sessions.get(session.id) is session:
            del self.sessions[session.id]
            log.info("session %s… ended", session.id[:8])
        session.end()
        registry = self._registry
        if registry is not None:
            registry.off_change(session.server._tools_changed)
            registry.off_change(session.server.modern._tools_changed)

    async def _expire_sessions(self) -> None:
        timeout = self.settings.session_idle_timeout
        while True:
            await anyio.sleep(min(60.0, timeout / 4))
            now = time.monotonic()
            for session in list(self.sessions.values()):
                if session.idle and now - session.last_used > timeout:
                    log.info("session %s… expired", session.id[:8])
                    self._end_session(session)

    # ------------------------------------------------------------------ responses

    async def _answer(
        self,
        exchange: _Exchange,
        receive: Receive,
        send: Send,
        sse: bool,
        *,
        modern: bool,
        headers: list[tuple[bytes, bytes]] | None = None,
        standalone: bool = False,
    ) -> None:
        """Answer an exchange: JSON when its response comes first, else an SSE stream
        of its messages ending with the response (or, ``standalone``, open until the
        client leaves or the session ends)."""
        extra = headers or []
        gone = anyio.Event()

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()
            exchange.close()

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            try:
                first = None if standalone else await exchange.next()
                if first is not None and first[1]:
                    raw = first[0]
                    status = 200
                    if modern:
                        msg = _json.loads(raw)
                        error = msg.get("error") if type(msg) is dict else None
                        if type(error) is dict and type(error.get("code")) is int:
                            status = _modern_status(error["code"])
                    await send(
                        {
                            "type": "http.response.start",
                            "status": status,
                            "headers": [
                                (b"content-type", b"application/json"),
                                (b"content-length", str(len(raw)).encode()),
                                *extra,
                            ],
                        }
                    )
                    await send({"type": "http.response.body", "body": raw})
                    return
                if gone.is_set():
                    return
                if first is None and exchange.cancelled:
                    # Cancelled before anything was sent: an empty SSE stream, which ends
                    # the POST without a response; a client that takes JSON only needs a
                    # body, so it gets -32800.
                    if sse:
                        await send(
                            {
                                "type": "http.response.start",
                                "status": 200,
                                "headers": _SSE_HEADERS + extra,
                            }
                        )
                        await send({"type": "http.response.body", "body": b""})
                    else:
                        cancelled = error_response(
                            exchange.request_id,
                            JsonRpcError(REQUEST_CANCELLED, "Request cancelled"),
                        )
                        await _send_json(send, 200, cancelled, extra)
                    return
                if first is None and not standalone:
                    # The session ended before answering (DELETE, shutdown).
                    await _send_json(
                        send,
                        503 if not modern else 500,
                        error_response(
                            exchange.request_id,
                            JsonRpcError(INTERNAL_ERROR, "The request ended without an answer"),
                        ),
                        extra,
                    )
                    return
                if not sse:
                    # The client takes JSON only: what is not the response is dropped.
                    while first is not None and not first[1]:
                        first = await exchange.next()
                    if first is not None:
                        await send(
                            {
                                "type": "http.response.start",
                                "status": 200,
                                "headers": [(b"content-type", b"application/json"), *extra],
                            }
                        )
                        await send({"type": "http.response.body", "body": first[0]})
                    return
                await send(
                    {"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS + extra}
                )
                item = first
                while True:
                    if item is not None:
                        event = b"event: message\ndata: " + item[0] + b"\n\n"
                        await send({"type": "http.response.body", "body": event, "more_body": True})
                        if item[1]:
                            break
                    item = None
                    with anyio.move_on_after(KEEPALIVE_SECONDS):
                        item = await exchange.next()
                        if item is None:
                            break
                    if item is None:
                        await send(
                            {"type": "http.response.body", "body": b": ping\n\n", "more_body": True}
                        )
                if not gone.is_set():
                    await send({"type": "http.response.body", "body": b""})
            except OSError:
                pass  # the client went away while we wrote
            finally:
                tg.cancel_scope.cancel()


def create_app(
    config: HostConfig | None = None,
    settings: HttpSettings | None = None,
    *,
    registry: Registry | None = None,
    sandbox: Sandbox | None = None,
    inputs: HostInputs | None = None,
) -> HttpHost:
    """The host as an ASGI 3 application (run the lifespan: the host starts there).

    Args:
        config: the host's options (default: :class:`HostConfig` defaults, i.e. the
            current directory with the built-in tools).
        settings: listening and access settings (default: ``config.http``, else
            loopback defaults with no token).
        registry, sandbox, inputs: see :class:`HttpHost`.
    """
    config = config if config is not None else HostConfig()
    settings = settings or config.http or HttpSettings()
    return HttpHost(config, settings, registry=registry, sandbox=sandbox, inputs=inputs)


async def serve_http(
    config: HostConfig,
    registry: Registry | None = None,
    *,
    sandbox: Sandbox | None = None,
    inputs: HostInputs | None = None,
) -> int:
    """``toolwire serve --http``: serve ``config.http`` with uvicorn until SIGINT/SIGTERM.

    Prints ``toolwire serve: listening on http://HOST:PORT/mcp`` on stderr once the
    host is ready (with the port the system chose for port 0).

    Returns:
        The exit code: 0.

    Raises:
        StartupError: a non-loopback bind without authentication (unless
            ``allow_unauthenticated``), an address that cannot be bound, or a host that
            does not start.
    """
    import socket
    import sys

    import uvicorn

    settings = config.http
    assert settings is not None
    if not settings.loopback and not settings.authenticated and not settings.allow_unauthenticated:
        raise StartupError(
            f"toolwire serve: refusing to serve {settings.host} without authentication: "
            "give --token-file FILE (or TOOLWIRE_TOKEN), or --allow-unauthenticated"
        )
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    # IPPROTO_TCP, not 0: the event loop sets TCP_NODELAY only on sockets whose proto
    # says TCP, and accepted sockets inherit it; Linux also passes a listening socket's
    # TCP_NODELAY on to them. Without it Nagle holds the body of every response behind
    # the client's delayed ACK of its headers (~40 ms per request on keep-alive).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((settings.host, settings.port))
    except OSError as exc:
        sock.close()
        raise StartupError(
            f"toolwire serve: cannot listen on {settings.host}:{settings.port}: {exc.strerror}"
        ) from None
    sock.listen(128)
    sock.setblocking(False)
    port = sock.getsockname()[1]
    settings.port = port
    try:
        app = create_app(config, settings, registry=registry, sandbox=sandbox, inputs=inputs)
    except ValueError as exc:
        sock.close()
        raise StartupError(f"toolwire serve: {exc}") from None
    uv_config = uvicorn.Config(
        app,
        lifespan="on",
        log_level="warning",
        access_log=False,
        timeout_keep_alive=30,
        timeout_graceful_shutdown=3,
        h11_max_incomplete_event_size=64 * 1024,
        ws="none",
        server_header=False,
        proxy_headers=False,
        date_header=False,
    )
    server = uvicorn.Server(uv_config)

    async def announce() -> None:
        while not server.started and not server.should_exit:
            await anyio.sleep(0.01)
        if server.started:
            shown = f"[{settings.host}]" if ":" in settings.host else settings.host
            print(
                f"toolwire serve: listening on http://{shown}:{port}{settings.path}",
                file=sys.stderr,
                flush=True,
            )

    async with anyio.create_task_group() as tg:
        tg.start_soon(announce)
        await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()
    if app.startup_error is not None:
        if isinstance(app.startup_error, StartupError):
            raise app.startup_error
        raise StartupError(f"toolwire serve: the host did not start: {app.startup_error}")
    return 0

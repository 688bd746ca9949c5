"""MCP Streamable HTTP for the host: an ASGI application, both eras, secure by default.

:func:`create_app` returns the application (``toolwire serve --http`` runs it with
uvicorn; users who run their own ASGI server import it). It serves the same host as
stdio — the same registry, workers, sandbox, approval policy, batches — at one
endpoint (``/mcp``), plus ``/healthz`` and ``/readyz``. toolwire writes only the MCP
transport rules here; HTTP parsing is the ASGI server's.

How requests are served (protocol.md §12 has the statuses and examples):

* **2026-07-28** (a ``MCP-Protocol-Version`` header outside the 2025 set, or a modern
  ``_meta`` claim): per request, statelessly, routed to the host's 2026-07-28 handlers
  (:mod:`toolwire.host.methods.modern`), so nothing — ids, progress tokens, log levels — is
  shared with another request. The headers ``MCP-Protocol-Version``, ``Mcp-Method`` and
  ``Mcp-Name`` must match the body (400 + -32020). Closing the response is the
  cancellation. A request that can produce nothing but its answer (no progress token,
  no log level, not ``subscriptions/listen``) is served directly in its own task
  (:mod:`toolwire.host.serve.http.direct`); the others get a
  :class:`~toolwire.session.Session` of their own over in-memory streams, answered as
  JSON or SSE.
* **2025-11-25** (``initialize``, then ``Mcp-Session-Id``): one host server and one
  Session per HTTP session, exactly like one stdio connection; GET opens the session's
  stream, DELETE ends it, idle sessions expire (:mod:`toolwire.host.serve.http.legacy`).

The plumbing both share (headers, refusals, Host/Origin checks, JSON and SSE answers) is
:mod:`toolwire.host.serve.http.wire`.

Security (SECURITY.md): ``Host`` and ``Origin`` are checked against allowlists on every
request (421 / 403); a static bearer token is compared in constant time (401 with
``WWW-Authenticate``); bodies are bounded (413) and must arrive within a deadline (408).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
from anyio.abc import TaskGroup

from toolwire import _json
from toolwire.errors import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, JsonRpcError
from toolwire.extensions import CALL_BATCH
from toolwire.messages import error_response, is_valid_id
from toolwire.modern import DISCOVER, LISTEN, NAMED_BY_HEADER, is_modern_request, parse_envelope
from toolwire.session import Session
from toolwire.streams import MemoryReceiveStream

from ...calls.approval import ApprovalPolicy
from ...calls.executor import Executor
from ...methods.server import HostServer
from ...sandbox.bubblewrap import Sandbox
from ...sandbox.env import ExecEnv
from ...sandbox.inputs import HostInputs, activate, deactivate
from ...sandbox.probe import resolve_sandbox
from ...tools.registry import Registry
from ..connection import _load_modules, build_registry, describe, start_workers
from ..inputs_collect import check_configured_bwrap, collect
from ..options import HostConfig, StartupError
from .auth import (
    Authenticator,
    AuthFailure,
    Principal,
    PrincipalSigner,
    current_principal,
    metadata_path,
)
from .bus import open_bus, relaying
from .config import LOOPBACK_NAMES, HttpSettings
from .direct import answer_direct, direct_session, goes_direct
from .legacy import _LegacyLeg, _LegacySession
from .wire import (
    HEADER_MISMATCH,
    LEGACY_PROTOCOL_VERSIONS,
    Receive,
    Scope,
    Send,
    _answer,
    _decode_header_value,
    _Exchange,
    _Headers,
    _HostAllowlist,
    _media_types,
    _modern_status,
    _origin_allowed,
    _Outbox,
    _param_header_problem,
    _Refusal,
    _send_json,
)

__all__ = [
    "HEADER_MISMATCH",
    "LEGACY_PROTOCOL_VERSIONS",
    "HttpHost",
    "create_app",
    "serve_http",
]

log = logging.getLogger("toolwire.host.http")


# --------------------------------------------------------------------------- the app


class HttpHost(_LegacyLeg):
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
        self._host_allowlist = _HostAllowlist(hosts)
        self.allowed_origins = [
            *(f"{s}://{n}" for s in ("http", "https") for n in LOOPBACK_NAMES),
            *settings.allowed_origins,
        ]
        shown = f"[{settings.host}]" if ":" in settings.host else settings.host
        fleet = config.fleet  # the fleet's audience is the default OAuth resource
        url = fleet.audience or f"http://{shown}:{settings.port}{settings.path}"
        self.auth = Authenticator(settings, url)
        self.bus = open_bus(fleet.bus)
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
            StartupError: see :func:`toolwire.host.serve.connection.run_host`.
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
        # Rounds bound to their principal and the fleet's audience, signed with its key
        # ring (or a key of this process's own).
        audience = config.fleet.audience or self.auth.resource
        self._primary.modern.signer = PrincipalSigner(keys=config.fleet.keys, audience=audience)
        await self.bus.connect()  # an unreachable bus stops the start (StartupError)
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
            await self.bus.aclose()

    @contextlib.asynccontextmanager
    async def _serving(self, tg: TaskGroup, registry: Registry) -> AsyncIterator[None]:
        assert self._approval is not None
        self._approval.settle(t.name for t in registry)
        tg.start_soon(self._expire_sessions)
        assert self._primary is not None
        listen = self._primary.modern
        registry.off_change(listen.tools_changed)  # the bus tells the listen streams
        async with relaying(self.bus, registry, listen.tools_changed):
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
            shutdown_grace=self.config.shutdown_grace,
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
            while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
                exc = exc.exceptions[0]  # a start-up task's one failure, not its group
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
            if refusal.status in (401, 403, 421):
                # The operator sees who was turned away and why (never a token).
                client = scope.get("client") or ("?", 0)
                log.warning(
                    "refused %s %s from %s: %d %s",
                    scope.get("method", "?"),
                    scope.get("path", "?"),
                    client[0],
                    refusal.status,
                    refusal.error.message,
                )
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
        if headers.count("host") != 1 or not self._host_allowlist.allows(headers.get("host")):
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
            shown = "several" if origin is None else repr(origin[:200])
            raise _Refusal(
                403,
                INVALID_REQUEST,
                f"Invalid Origin header: {shown} is not an allowed origin "
                "(the host allows loopback origins and those given with --allowed-origin)",
            )
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
        try:
            task = asyncio.current_task()
        except RuntimeError:  # another event loop than asyncio
            task = None
        if task is None:
            with anyio.move_on_after(self.settings.body_timeout):
                return await _receive_body(receive, limit)
            raise _Refusal(408, INVALID_REQUEST, "Request body not received in time")
        # On asyncio the deadline is one timer that cancels this task (~5 µs, against
        # ~30 µs for an anyio scope with its deadline); the cancellation is taken back
        # only when it was the timer's alone, as asyncio.timeout() does.
        loop = task.get_loop()
        expired = False

        def expire() -> None:
            nonlocal expired
            expired = True
            task.cancel()

        timer = loop.call_at(loop.time() + self.settings.body_timeout, expire)
        try:
            return await _receive_body(receive, limit)
        except asyncio.CancelledError:
            if expired and task.uncancel() == 0:
                raise _Refusal(408, INVALID_REQUEST, "Request body not received in time") from None
            raise
        finally:
            timer.cancel()

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
        # Resumable streams (event ids, priming, Last-Event-ID) only for clients of
        # 2025-11-25: older ones cannot parse a priming event's empty data.
        resumable = headers.get("mcp-protocol-version") == "2025-11-25"
        await self._post_legacy(session, obj, body, receive, send, sse, resumable=resumable)

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
        tool_name = params.get("name")
        if method == "tools/call" and type(tool_name) is str and self._registry is not None:
            called = self._registry.get(tool_name)
            problem = called and _param_header_problem(
                called.input_schema, params.get("arguments"), headers
            )
            if problem:
                raise _Refusal(400, HEADER_MISMATCH, problem, id=rid)
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
            router=self._primary.modern.router(),
            framing="ndjson",
            max_message_size=self.config.max_message_size,
            name="http",
            unsolicited=lambda: False,  # 2026-07-28: only what the request asked for
        )
        inbox.put(body + b"\n")
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.serve)
            try:
                # A disconnect is the cancellation (MCP 2026-07-28): the session closes,
                # which interrupts the call, and nothing more is sent.
                await _answer(exchange, receive, send, sse, modern=True)
            finally:
                exchange.close()
                session.close()
                inbox.end()


async def _receive_body(receive: Receive, limit: int) -> bytes | None:
    """The body of an ASGI request, its chunks joined (None: the client went away).

    Raises:
        _Refusal: 413 once more than ``limit`` bytes arrived.
    """
    message = await receive()
    if message["type"] == "http.disconnect":
        return None
    body: bytes = message.get("body", b"")
    if len(body) > limit:
        raise _Refusal(413, INVALID_REQUEST, f"Request body too large (limit {limit} bytes)")
    if not message.get("more_body", False):
        return body
    chunks = [body]
    size = len(body)
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _Refusal(413, INVALID_REQUEST, f"Request body too large (limit {limit} bytes)")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


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

    def not_after_a_failed_start(record: logging.LogRecord) -> bool:
        # A failed start is reported once, by serve's own one line (the StartupError
        # below): uvicorn's lifespan would print the same reason again, then its own.
        return app.startup_error is None

    uvicorn_log = logging.getLogger("uvicorn.error")  # configured by uvicorn.Config above
    uvicorn_log.addFilter(not_after_a_failed_start)

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
        try:
            await server.serve(sockets=[sock])
        except SystemExit:  # uvicorn exits (3) when the lifespan startup failed
            if app.startup_error is None:
                raise
        tg.cancel_scope.cancel()
    uvicorn_log.removeFilter(not_after_a_failed_start)
    if app.startup_error is not None:
        if isinstance(app.startup_error, StartupError):
            raise app.startup_error
        raise StartupError(f"toolwire serve: the host did not start: {app.startup_error}")
    return 0

"""The plumbing both eras of :mod:`toolwire.host.serve.http` share: ASGI types, request
headers, HTTP refusals, the Host/Origin allowlist checks, the in-memory bridge between a
:class:`~toolwire.session.Session` and an HTTP response (:class:`_Outbox`,
:class:`_Exchange`), and :func:`_answer`, which writes an exchange as JSON or as an SSE
stream (MCP 2025-11-25 and 2026-07-28 "transports/streamable-http")."""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import math
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
from anyio.abc import ByteSendStream

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
from toolwire.messages import error_response
from toolwire.modern import MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION

__all__ = ["HEADER_MISMATCH", "KEEPALIVE_SECONDS", "LEGACY_PROTOCOL_VERSIONS", "RETRY_MS"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

HEADER_MISMATCH = -32020
"""MCP 2026-07-28 ``HeaderMismatchError``: a routing header is missing, duplicated,
malformed or contradicts the body (HTTP 400)."""

LEGACY_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""``MCP-Protocol-Version`` values served by the session (2025-11-25) leg."""

KEPT_EVENTS = 256
"""Messages a resumable SSE stream keeps for replay: a resume from an older event
is refused (a call that reports progress in a loop holds no unbounded buffer)."""

RETRY_MS = 1000
"""The ``retry`` hint of a resumable SSE stream's priming event: milliseconds a client
waits before reconnecting with ``Last-Event-ID`` (MCP 2025-11-25, polling)."""

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


class _EventLog:
    """The SSE events of one resumable 2025-11-25 POST stream: its id in the session
    and every message sent on it, so a client that lost the connection can resume with
    ``GET`` + ``Last-Event-ID`` (MCP 2025-11-25 "transports/streamable-http",
    resumability and redelivery).

    Event ids are ``<stream>-<n>``: ``n`` = 0 for the priming event (an id and empty
    data), then 1, 2, … for the stream's messages; unique across the session's streams
    because ``stream`` is.
    """

    def __init__(self, stream: str) -> None:
        self.stream = stream
        self.events: deque[bytes] = deque(maxlen=KEPT_EVENTS)
        """The last :data:`KEPT_EVENTS` messages sent (event ``n`` is
        ``events[n - self.first]``)."""
        self.sent = 0
        """Events sent so far (the number of the last one)."""
        self.started = False
        """The priming event was sent: the client holds an id it can resume from."""
        self.finished = False
        """The response was written on a connection (it may still be replayed)."""
        self._writer: tuple[anyio.CancelScope, anyio.Event] | None = None

    async def take(self, scope: anyio.CancelScope) -> None:
        """Make the connection that ``scope`` writes for this stream's only writer,
        ending the one writing it so far (a client resuming has lost that one, even if
        the host has not noticed yet: a half-open TCP connection)."""
        while self._writer is not None:
            old, released = self._writer
            old.cancel()
            await released.wait()
        self._writer = (scope, anyio.Event())

    def release(self, scope: anyio.CancelScope) -> None:
        """``scope``'s connection no longer writes this stream."""
        if self._writer is not None and self._writer[0] is scope:
            self._writer[1].set()
            self._writer = None

    def event_id(self, n: int) -> bytes:
        return f"{self.stream}-{n}".encode()

    def parse(self, last_event_id: str) -> int | None:
        """The event number of ``last_event_id`` on this stream, or None."""
        stream, _, n = last_event_id.rpartition("-")
        if stream != self.stream or not n.isdigit():
            return None
        if not self.first - 1 <= int(n) <= self.sent:
            return None  # not sent yet, or older than what is kept
        return int(n)

    @property
    def first(self) -> int:
        """The number of the oldest event kept."""
        return self.sent - len(self.events) + 1

    def add(self, raw: bytes) -> int:
        """Keep one more message; its event number."""
        self.events.append(raw)
        self.sent += 1
        return self.sent


class _Exchange:
    """Messages owed to one HTTP response: the server's messages about one request,
    then its response (``final``), or a 2025 session's standalone GET stream. With an
    :class:`_EventLog` (``log``), its SSE events carry ids and it outlives a dropped
    connection."""

    def __init__(self, request_id: Any = None, log: _EventLog | None = None) -> None:
        self.request_id = request_id
        self._tx, self._rx = anyio.create_memory_object_stream[tuple[bytes, bool]](math.inf)
        self.done = False
        self.cancelled = False
        self.log = log

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

    __slots__ = ("values",)

    def __init__(self, scope: Scope) -> None:
        values: dict[str, list[str]] = {}
        for name, value in scope.get("headers", ()):
            key = name.decode("latin-1").lower()
            got = values.get(key)
            if got is None:
                values[key] = [value.decode("latin-1")]
            else:
                got.append(value.decode("latin-1"))
        self.values = values

    def get(self, name: str) -> str | None:
        values = self.values.get(name)
        return values[0].strip() if values else None

    def count(self, name: str) -> int:
        values = self.values.get(name)
        return 0 if values is None else len(values)


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


def _media_types(value: str | None) -> frozenset[str]:
    """The media types a ``Content-Type`` or ``Accept`` value names, lower-case, their
    parameters dropped (empty for None)."""
    if value is None:
        return frozenset()
    return _parsed_media_types(value)


def _parsed_media_types(value: str) -> frozenset[str]:
    if len(value) <= 256:
        return _cached_media_types(value)
    return _split_media_types(value)


def _split_media_types(value: str) -> frozenset[str]:
    return frozenset(
        part.split(";", 1)[0].strip().lower() for part in value.split(",") if part.strip()
    )


# Clients send the same few values on every request; the cache is bounded in entries and
# in their length, so values a client makes up only evict each other.
_cached_media_types = functools.lru_cache(maxsize=64)(_split_media_types)


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


def _header_params(schema: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """The ``x-mcp-header`` annotations of a tool's ``inputSchema``: (property path from
    the root, header name) for each, found through ``properties`` keys only (MCP
    2026-07-28 "server/tools", ``x-mcp-header``)."""
    found: list[tuple[tuple[str, ...], str]] = []
    properties = schema.get("properties") if type(schema) is dict else None
    if type(properties) is not dict:
        return found
    for key, field in properties.items():
        if type(field) is not dict:
            continue
        name = field.get("x-mcp-header")
        if type(name) is str and name:
            found.append(((*path, key), name))
        found.extend(_header_params(field, (*path, key)))
    return found


_HEADER_PARAMS: dict[int, tuple[Any, list[tuple[tuple[str, ...], str]]]] = {}
""":func:`_header_params` of the input schemas seen, by ``id`` (with the schema itself,
so an id reused by another object is not mistaken for it). Schemas come from the
registry, never from a request; the cache is emptied when it reaches
:data:`_HEADER_PARAMS_KEPT` entries (tool sets replaced by reloads)."""
_HEADER_PARAMS_KEPT = 4096


def _schema_header_params(schema: Any) -> list[tuple[tuple[str, ...], str]]:
    """:func:`_header_params` of a tool's ``inputSchema``, walked once per schema object
    (a registered tool's schema is not changed in place)."""
    cached = _HEADER_PARAMS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    found = _header_params(schema)
    if len(_HEADER_PARAMS) >= _HEADER_PARAMS_KEPT:
        _HEADER_PARAMS.clear()
    _HEADER_PARAMS[id(schema)] = (schema, found)
    return found


def _header_form(value: Any) -> str | None:
    """How a client writes a body value in an ``Mcp-Param-*`` header, before any base64
    sentinel: strings as they are, integers in decimal, booleans ``true``/``false``
    (None: not a primitive such a header can carry)."""
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float and value.is_integer():
        return str(int(value))
    if type(value) is str:
        return value
    return None


def _param_header_problem(schema: Any, arguments: Any, headers: _Headers) -> str | None:
    """Why a ``tools/call``'s ``Mcp-Param-{Name}`` headers disagree with its arguments
    (None: they agree), for each property the tool's schema annotates with
    ``x-mcp-header`` (MCP 2026-07-28 "transports/streamable-http", custom headers):

    * a value in the body needs the header, equal after decoding the base64 sentinel
      (integers compared as numbers, so ``42.0`` matches ``42``);
    * a header sent twice, a malformed sentinel, or a header for a value the body leaves
      out or sets to null is refused too.

    The caller answers a problem with HTTP 400 and -32020.
    """
    for path, name in _schema_header_params(schema):
        value: Any = arguments
        for key in path:
            value = value.get(key) if type(value) is dict else None
        header = f"mcp-param-{name.lower()}"
        if headers.count(header) > 1:
            return f"Header mismatch: Mcp-Param-{name} sent twice"
        raw = headers.get(header)
        if raw is None:
            if value is None:
                continue
            return f"Header mismatch: Mcp-Param-{name} header missing for {'.'.join(path)!r}"
        try:
            sent = _decode_header_value(raw)
        except ValueError as exc:
            return f"Header mismatch: Mcp-Param-{name}: {exc}"
        if value is None:
            return f"Header mismatch: Mcp-Param-{name} sent but {'.'.join(path)!r} has no value"
        expected = _header_form(value)
        if expected is None or sent == expected:
            continue
        if type(value) in (int, float) and type(value) is not bool:
            try:
                if float(sent) == value:
                    continue
            except ValueError:
                pass
        return (
            f"Header mismatch: Mcp-Param-{name} header value {sent!r} does not match body "
            f"value {value!r}"
        )
    return None


class _HostAllowlist:
    """An allowlist of ``Host`` values (``NAME``: any port, ``NAME:PORT``: that port
    only), matched like :func:`_host_allowed` in two set look-ups."""

    __slots__ = ("_any_port", "_with_port")

    def __init__(self, allowed: list[str]) -> None:
        self._any_port: set[str] = set()
        self._with_port: set[tuple[str, str]] = set()
        for entry in allowed:
            name, port = _split_host(entry.lower())
            if port is None:
                self._any_port.add(name)
            else:
                self._with_port.add((name, port))

    def allows(self, host: str | None) -> bool:
        """Whether a request's ``Host`` value is on the list (never an empty one)."""
        if not host:
            return False
        name, port = _split_host(host.lower())
        return name in self._any_port or (port is not None and (name, port) in self._with_port)


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


# --------------------------------------------------------------------------- responses


async def _answer(
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
    client leaves or the session ends). With an event log, the stream starts with a
    priming event (id ``<stream>-0``, ``retry``, empty data), its events carry ids, and
    a dropped connection leaves the exchange for :func:`_resume`."""
    extra = headers or []
    gone = anyio.Event()
    writing = anyio.CancelScope()
    log = None if standalone else exchange.log

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        gone.set()
        if log is not None and log.started:
            writing.cancel()  # resumable: the call goes on, its events are kept
        else:
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
            with writing:
                if log is not None:
                    priming = b"id: " + log.event_id(0) + b"\nretry: %d\ndata: \n\n" % RETRY_MS
                    log.started = True
                    await log.take(writing)
                    await send({"type": "http.response.body", "body": priming, "more_body": True})
                await _write_events(exchange, send, first)
            if log is not None:
                log.release(writing)
            if not gone.is_set():  # (after release: a stuck write holds no resumer)
                await send({"type": "http.response.body", "body": b""})
        except OSError:
            pass  # the client went away while we wrote
        finally:
            if log is not None:
                log.release(writing)
            tg.cancel_scope.cancel()


async def _write_events(
    exchange: _Exchange, send: Send, item: tuple[bytes, bool] | None, replay: int | None = None
) -> None:
    """Write an exchange's messages as SSE events, starting with ``item``, until its
    response (``: ping`` after each :data:`KEEPALIVE_SECONDS` of silence). With an event
    log, each event carries its id and is kept; ``replay`` = n first re-sends the kept
    events after event n."""
    log = exchange.log
    if log is not None and replay is not None:
        for n in range(replay + 1, log.sent + 1):
            raw = log.events[n - log.first]
            event = b"id: " + log.event_id(n) + b"\nevent: message\ndata: " + raw + b"\n\n"
            await send({"type": "http.response.body", "body": event, "more_body": True})
            if _is_response(raw):
                log.finished = True
                return
    while True:
        if item is not None:
            event = b"event: message\ndata: " + item[0] + b"\n\n"
            if log is not None:
                event = b"id: " + log.event_id(log.add(item[0])) + b"\n" + event
            await send({"type": "http.response.body", "body": event, "more_body": True})
            if item[1]:
                if log is not None:
                    log.finished = True
                break
        item = None
        with anyio.move_on_after(KEEPALIVE_SECONDS):
            item = await exchange.next()
            if item is None:
                break
        if item is None:
            await send({"type": "http.response.body", "body": b": ping\n\n", "more_body": True})


def _is_response(raw: bytes) -> bool:
    with contextlib.suppress(ValueError):
        msg = _json.loads(raw)
        return type(msg) is dict and "method" not in msg
    return False


async def _resume(exchange: _Exchange, after: int, receive: Receive, send: Send) -> None:
    """Answer ``GET`` + ``Last-Event-ID``: a resumable exchange's events after event
    ``after`` again, then the rest of its messages as they come, ending with its
    response (MCP 2025-11-25 "transports/streamable-http", resumability). The
    connection that wrote the stream so far is ended; a dropped connection leaves it
    resumable again."""
    log = exchange.log
    assert log is not None
    writing = anyio.CancelScope()

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        writing.cancel()

    await log.take(writing)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            try:
                await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
                with writing:
                    await _write_events(exchange, send, None, replay=after)
                log.release(writing)
                await send({"type": "http.response.body", "body": b""})
            except OSError:
                pass
            finally:
                tg.cancel_scope.cancel()
    finally:
        log.release(writing)

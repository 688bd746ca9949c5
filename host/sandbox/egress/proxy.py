"""The host's egress proxy: the only way out of a sandbox with a ``[network]`` policy.

A sandboxed command or worker keeps a network namespace of its own with only loopback
(bubblewrap's ``--unshare-net``): it has no route anywhere and resolves no names.
What it may reach, it reaches through this proxy, which runs in the host process (an
asyncio loop on a thread of its own) and listens on Unix sockets, one per sandboxed
command or worker process (:meth:`EgressProxy.grant`), each bound into that one
sandbox at :data:`SANDBOX_SOCKET`. Inside, :mod:`toolwire.host.sandbox.egress.relay` listens
on ``127.0.0.1:``:data:`RELAY_PORT` and relays to the socket, and the environment
points every usual proxy setting at it (:func:`proxy_env`).

Per connection, one request (HTTP/1.1, parsed by ``h11``):

* ``CONNECT host:port`` — a tunnel (HTTPS, or anything the client speaks inside it);
* an absolute-form request (``GET http://host[:port]/path``) — plain HTTP forwarding,
  sent upstream in origin form with ``Connection: close``; the response is relayed as
  it comes and the connection then closes, so every request is checked (a redirect is
  the client's next request, checked like any other: the proxy follows none);
* a SOCKS5 ``CONNECT`` (``socks5h://127.0.0.1:``:data:`RELAY_PORT`, on the same port):
  checked the same way; a refusal is SOCKS reply code 2 (the reason is still reported);
* anything else (an origin-form request to the proxy itself, a scheme other than
  ``http``): refused — the proxy has no pages, status or admin surface of its own.

The check (:class:`~toolwire.host.sandbox.egress.policy.ScopePolicy`) comes before any lookup;
an allowed name is then resolved once by the host (or taken from ``[network.resolve]``)
and the connection goes to that address, refused when it is not public and not pinned.
A refusal is answered ``403 Forbidden`` with the reason as a ``text/plain`` body (``502 Bad
Gateway`` when an allowed name cannot be resolved or reached, or its upstream TLS fails), and
reported to the grant's ``on_refused`` (the bash tool sends it to the client as a
``notifications/message`` log at level ``warning``, logger ``egress``).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import http
import ipaddress
import logging
import os
import shutil
import socket
import ssl
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import h11

from .credentials import BodyCheck, MintingCA, SecretRefused, SecretSet, upstream_context
from .policy import NetworkPolicy, ScopePolicy, address_problem
from .scope import _SCOPE, EgressScope, egress_scope, loop_reporter

__all__ = [
    "RELAY_PORT",
    "RELAY_SCRIPT",
    "SANDBOX_SOCKET",
    "EgressGrant",
    "EgressProxy",
    "EgressScope",
    "SandboxEgress",
    "egress_scope",
    "loop_reporter",
    "proxy_env",
    "sandbox_egress",
]

log = logging.getLogger("toolwire.egress")

SANDBOX_SOCKET = "/run/toolwire/egress.sock"
"""Where a grant's Unix socket appears inside the sandbox."""

SANDBOX_CA = "/run/toolwire/egress-ca.pem"
"""Where the proxy's CA certificate appears (read-only) inside a sandbox with ``[secrets]``."""

CA_ENV_NAMES = (
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    "CURL_CA_BUNDLE",
)
"""The variables pointed at :data:`SANDBOX_CA` (OpenSSL and Python, requests, pip,
Node, git, curl)."""

RELAY_PORT = 3128
"""The port of the in-sandbox relay on 127.0.0.1 (the sandbox's own loopback)."""

RELAY_SCRIPT = str(Path(__file__).with_name("relay.py"))
"""The relay program, run inside the sandbox by the host's Python with ``-I -S``."""

HEAD_TIMEOUT = 30.0
"""Seconds a client has to send a request's head."""

CONNECT_TIMEOUT = 30.0
"""Seconds to reach the upstream host."""

_MAX_HEAD = 64 * 1024
_CHUNK = 1 << 16
_HOP_BY_HOP = {
    b"connection",
    b"keep-alive",
    b"proxy-authenticate",
    b"proxy-authorization",
    b"proxy-connection",
    b"te",
    b"trailer",
    b"upgrade",
    b"host",
}


def proxy_env(port: int = RELAY_PORT) -> dict[str, str]:
    """The environment variables that send HTTP clients to the relay: the
    ``*_PROXY`` variables in both cases (curl reads only lower-case ``http_proxy``),
    pip's ``PIP_PROXY``, npm's ``npm_config_proxy`` / ``npm_config_https_proxy``; git
    uses the curl variables. ``NO_PROXY`` is emptied, so nothing bypasses it."""
    url = f"http://127.0.0.1:{port}"
    env = {}
    for name in ("http_proxy", "https_proxy", "all_proxy"):
        env[name] = env[name.upper()] = url
    env["no_proxy"] = env["NO_PROXY"] = ""
    env["PIP_PROXY"] = url
    env["npm_config_proxy"] = env["npm_config_https_proxy"] = url
    return env


SOCKET_PATH_ROOM = 80
"""Bytes of directory a proxy socket's path may take: a Unix socket address holds at most
107 (Linux ``sun_path``, unix(7)), and the directory gets a 25-byte name and a file name."""


def _socket_parent() -> str | None:
    """Where the proxy's socket directory goes: the temporary directory, or ``/tmp`` when
    that path is too long for a socket address (None: the temporary directory)."""
    if len(tempfile.gettempdir().encode()) <= SOCKET_PATH_ROOM or not os.access("/tmp", os.W_OK):
        return None
    return "/tmp"


def _reason(status: int) -> bytes:
    """The reason phrase of a status the proxy sends (``b"Forbidden"`` for 403)."""
    try:
        return http.HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


@dataclass
class EgressGrant:
    """One sandbox's way out: a Unix socket of its own, under one policy.

    Attributes:
        path: the socket on the host (bind it into the sandbox at :data:`SANDBOX_SOCKET`).
        policy: what it may reach.
        on_refused: called (on the proxy's thread) with the reason of each refusal.
    """

    path: str
    policy: ScopePolicy
    on_refused: Callable[[str], None] | None = None
    server: asyncio.AbstractServer | None = None


class _Refused(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class EgressProxy:
    """The proxy: an asyncio loop on a daemon thread, started on the first grant.

    Args:
        resolver: ``(host, port) -> [address, ...]`` (blocking; run in the loop's
            executor). Default: the host's ``getaddrinfo`` for TCP.
    """

    def __init__(self, resolver: Callable[[str, int], list[str]] | None = None) -> None:
        self._resolver = resolver or _system_resolve
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._dir: str | None = None
        self._count = 0
        self._ca: MintingCA | None = None
        self._upstream: dict[tuple[str, ...], ssl.SSLContext] = {}

    def _ensure_started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._dir = tempfile.mkdtemp(prefix="toolwire-egress-", dir=_socket_parent())
                os.chmod(self._dir, 0o711)
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="toolwire-egress", daemon=True
                )
                thread.start()
                self._loop = loop
            return self._loop

    def grant(
        self, policy: ScopePolicy, on_refused: Callable[[str], None] | None = None
    ) -> EgressGrant:
        """A new Unix socket serving ``policy``; :meth:`release` it when the sandbox ends.

        Raises:
            OSError: the socket cannot be made.
        """
        loop = self._ensure_started()
        assert self._dir is not None
        with self._lock:
            self._count += 1
            path = os.path.join(self._dir, f"s{self._count}.sock")
        grant = EgressGrant(path, policy, on_refused)

        async def start() -> asyncio.AbstractServer:
            return await asyncio.start_unix_server(
                lambda r, w: self._handle(grant, r, w), path=path
            )

        grant.server = asyncio.run_coroutine_threadsafe(start(), loop).result()
        # Anyone in the sandbox may connect (as root there, or an unprivileged user).
        os.chmod(path, 0o666)
        return grant

    def ca_file(self) -> str:
        """The path of the proxy's CA certificate (PEM), made on first use.

        Raises:
            OSError: it cannot be written.
        """
        self._ensure_started()
        with self._lock:
            if self._ca is None:
                assert self._dir is not None
                self._ca = MintingCA(self._dir)
            return self._ca.cert_path

    def _upstream_context(self, extra: tuple[str, ...]) -> ssl.SSLContext:
        with self._lock:
            if extra not in self._upstream:
                self._upstream[extra] = upstream_context(extra)
            return self._upstream[extra]

    def release(self, grant: EgressGrant) -> None:
        """Stop listening on ``grant``'s socket and remove it (open tunnels end with
        their peers)."""
        server, grant.server = grant.server, None
        if server is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(server.close)
        with contextlib.suppress(OSError):
            os.unlink(grant.path)

    def close(self) -> None:
        """Stop the loop and remove the socket directory."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    # ------------------------------------------------------------ one connection

    async def _handle(
        self, grant: EgressGrant, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
        request: Any = None
        try:
            try:
                first = await asyncio.wait_for(reader.read(1), HEAD_TIMEOUT)
                if first == b"\x05":
                    await self._socks5(grant, reader, writer)
                    return
                conn.receive_data(first)
                request = await asyncio.wait_for(_next_event(conn, reader), HEAD_TIMEOUT)
                if not isinstance(request, h11.Request):
                    return
                await self._serve(grant, conn, request, reader, writer)
            except _Refused as refused:
                self._report(grant, request_line(request), refused.reason)
                _answer(conn, writer, refused.status, refused.reason)
                await writer.drain()
            except h11.RemoteProtocolError as exc:
                _answer(conn, writer, 400, f"malformed request: {exc}")
                await writer.drain()
            except (TimeoutError, asyncio.IncompleteReadError):
                pass
        except (OSError, h11.LocalProtocolError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _socks5(
        self, grant: EgressGrant, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """A SOCKS5 ``CONNECT`` (RFC 1928, no authentication), its version byte already
        read: to a domain name only (``socks5h://``), checked like an HTTP ``CONNECT``. A
        refusal is reply code 2 ("not allowed by ruleset"); its reason is reported."""

        async def exactly(n: int) -> bytes:
            return await asyncio.wait_for(reader.readexactly(n), HEAD_TIMEOUT)

        methods = await exactly((await exactly(1))[0])
        if 0 not in methods:
            writer.write(b"\x05\xff")  # no acceptable method
            return
        writer.write(b"\x05\x00")
        version, command, _reserved, kind = await exactly(4)
        if kind == 3:
            host = (await exactly((await exactly(1))[0])).decode("ascii", "replace")
        elif kind in (1, 4):
            raw = await exactly(4 if kind == 1 else 16)
            host = str(ipaddress.ip_address(raw))
        else:
            writer.write(b"\x05\x08\x00\x01" + bytes(6))  # address type not supported
            return
        port = int.from_bytes(await exactly(2), "big")
        line = f"SOCKS5 CONNECT {host}:{port}"
        if version != 5 or command != 1:
            self._report(grant, line, "only SOCKS5 CONNECT is supported")
            writer.write(b"\x05\x07\x00\x01" + bytes(6))  # command not supported
            return
        if grant.policy.secrets is not None:
            # A SOCKS tunnel cannot be inspected: placeholders would pass unchecked.
            self._report(
                grant, line, "with [secrets] configured, only HTTP CONNECT tunnels are accepted"
            )
            writer.write(b"\x05\x02\x00\x01" + bytes(6))  # not allowed by ruleset
            await writer.drain()
            return
        try:
            up_reader, up_writer = await self._open(grant.policy, host, port)
        except _Refused as refused:
            self._report(grant, line, refused.reason)
            code = b"\x02" if refused.status == 403 else b"\x04"  # ruleset / host unreachable
            writer.write(b"\x05" + code + b"\x00\x01" + bytes(6))
            await writer.drain()
            return
        try:
            writer.write(b"\x05\x00\x00\x01" + bytes(6))
            await _splice(reader, writer, up_reader, up_writer)
        finally:
            up_writer.close()

    def _report(self, grant: EgressGrant, line: str, reason: str) -> None:
        message = f"egress refused {line}: {reason}" if line else f"egress refused: {reason}"
        log.warning("%s", message)
        if grant.on_refused is not None:
            try:
                grant.on_refused(message)
            except Exception:  # a reporting failure must not break the proxy
                log.exception("reporting a refused connection failed")

    async def _open(
        self, policy: ScopePolicy, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Check, resolve once, check the address, connect. Raises _Refused."""
        if reason := policy.check(host, port):
            raise _Refused(403, reason)
        if policy.secrets is not None:
            # A placeholder in a name would leave in the host's DNS lookup (under an
            # allowed wildcard) and the upstream's SNI, never checked against its hosts.
            try:
                policy.secrets.refuse_any(host.lower(), "is never sent in a host name")
            except SecretRefused as exc:
                raise _Refused(403, str(exc)) from None
        address = policy.pinned(host)
        if address is None:
            loop = asyncio.get_running_loop()
            try:
                addresses = await loop.run_in_executor(None, self._resolver, host, port)
            except OSError as exc:
                raise _Refused(502, f"cannot resolve {host}: {exc}") from None
            if not addresses:
                raise _Refused(502, f"cannot resolve {host}")
            for candidate in addresses:
                if problem := address_problem(candidate):
                    raise _Refused(
                        403,
                        f"{host} resolves to {candidate}, {problem}; pin it in "
                        "[network.resolve] to allow it",
                    )
            address = addresses[0]
        try:
            return await asyncio.wait_for(asyncio.open_connection(address, port), CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise _Refused(502, f"cannot connect to {host}:{port} ({address}): {exc}") from None

    async def _serve(
        self,
        grant: EgressGrant,
        conn: h11.Connection,
        request: h11.Request,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        method = request.method.decode("ascii", "replace")
        target = request.target.decode("ascii", "replace")
        secrets: SecretSet | None = grant.policy.secrets
        if method == "CONNECT":
            host, port = _authority(target, None)
            up_reader, up_writer = await self._open(grant.policy, host, port)
            if secrets is not None:
                try:
                    await self._intercept(
                        grant, secrets, conn, (host, port), reader, writer, up_reader, up_writer
                    )
                finally:
                    up_writer.close()
                return
            if not isinstance(await _next_event(conn, reader), h11.EndOfMessage):
                up_writer.close()
                return
            try:
                writer.write(conn.send(h11.Response(status_code=200, headers=[])) or b"")
                leftover, _closed = conn.trailing_data
                if leftover:
                    up_writer.write(leftover)
                await _splice(reader, writer, up_reader, up_writer)
            finally:
                up_writer.close()
            return
        parts = urlsplit(target)
        if parts.scheme.lower() != "http" or not parts.netloc:
            raise _Refused(
                403,
                "this proxy has nothing of its own to serve: send CONNECT host:port or an "
                "absolute http:// URL",
            )
        if parts.username is not None or parts.password is not None:
            raise _Refused(403, "credentials in the URL are not forwarded")
        host, port = _authority(parts.netloc, 80)
        if secrets is not None:
            try:
                secrets.refuse_any(
                    b"\n".join([request.target, *(v for _, v in request.headers)]),
                    "is sent over HTTPS only, never in a plain-HTTP request",
                )
            except SecretRefused as exc:
                raise _Refused(403, str(exc)) from None
        up_reader, up_writer = await self._open(grant.policy, host, port)
        try:
            upstream = h11.Connection(h11.CLIENT)
            path = parts.path or "/"
            if parts.query:
                path += "?" + parts.query
            authority = host if port == 80 else f"{host}:{port}"
            # Host names the checked target (never the client's own Host header).
            headers = [(b"Host", authority.encode("ascii"))]
            headers += [(k, v) for k, v in request.headers if k.lower() not in _HOP_BY_HOP]
            headers.append((b"Connection", b"close"))
            check = None if secrets is None else secrets.body_check(None)
            sent = await _send_request(
                conn, reader, upstream, up_writer, request, path, headers, check
            )
            if not sent:
                return
            # The response goes back as it comes; the connection closes after it.
            while data := await up_reader.read(_CHUNK):
                writer.write(data)
                await writer.drain()
        finally:
            up_writer.close()

    async def _intercept(
        self,
        grant: EgressGrant,
        secrets: SecretSet,
        conn: h11.Connection,
        target_of: tuple[str, int],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
    ) -> None:
        """A ``CONNECT`` tunnel with ``[secrets]``: accept it, terminate the client's TLS
        with a leaf certificate for ``host`` (whatever SNI the client sent), read one
        request (h11), check that its ``Host`` names the tunnel's target, substitute
        placeholders the target may receive (refusing the rest: 403), then send it over
        TLS verified against the system store and ``upstream_ca`` and relay the
        response, real values masked. One request per tunnel (``Connection: close``)."""
        if not isinstance(await _next_event(conn, reader), h11.EndOfMessage):
            return
        host, port = target_of
        if conn.trailing_data[0]:
            return  # TLS bytes before our 200: no client does this
        self.ca_file()
        ca = self._ca
        assert ca is not None
        writer.write(conn.send(h11.Response(status_code=200, headers=[])) or b"")
        await writer.drain()
        try:
            await writer.start_tls(ca.server_context(host), ssl_handshake_timeout=HEAD_TIMEOUT)
        except (ssl.SSLError, OSError, TimeoutError):
            return  # the client does not trust us or does not speak TLS: nothing was sent
        inner = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_HEAD)
        request: Any = None
        try:
            request = await asyncio.wait_for(_next_event(inner, reader), HEAD_TIMEOUT)
            if not isinstance(request, h11.Request):
                return
            authority = host if port == 443 else f"{host}:{port}"
            given = [v for k, v in request.headers if k.lower() == b"host"]
            names = {host.lower(), authority.lower(), f"{host}:{port}".lower()}
            if any(v.decode("ascii", "replace").lower() not in names for v in given):
                raise _Refused(
                    403,
                    f"the Host header {given[0].decode('ascii', 'replace')!r} does not name "
                    f"the tunnel's target {authority}",
                )
            try:
                target = secrets.substitute(request.target, host, port)
                headers = [(b"Host", authority.encode("ascii"))]
                for k, v in request.headers:
                    if k.lower() not in _HOP_BY_HOP:
                        headers.append((k, secrets.substitute_header(k, v, host, port)))
            except SecretRefused as exc:
                raise _Refused(403, str(exc)) from None
            headers.append((b"Connection", b"close"))
        except _Refused as refused:
            self._report(
                grant, f"{request_line(request)} (in CONNECT {host}:{port})", refused.reason
            )
            _answer(inner, writer, refused.status, refused.reason)
            await writer.drain()
            return
        except (h11.RemoteProtocolError, TimeoutError, ssl.SSLError):
            return
        try:
            await up_writer.start_tls(
                self._upstream_context(grant.policy.upstream_ca),
                server_hostname=host,
                ssl_handshake_timeout=CONNECT_TIMEOUT,
            )
        except (ssl.SSLError, OSError, TimeoutError) as exc:
            reason = f"TLS to {host}:{port} failed: {exc}"
            self._report(grant, request_line(request), reason)
            _answer(inner, writer, 502, reason)
            await writer.drain()
            return
        upstream = h11.Connection(h11.CLIENT)
        check = secrets.body_check(host, port)
        try:
            sent = await _send_request(
                inner, reader, upstream, up_writer, request, target, headers, check
            )
        except _Refused as refused:
            # Cut off before the placeholder: the upstream never gets the whole request.
            up_writer.close()
            self._report(
                grant, f"{request_line(request)} (in CONNECT {host}:{port})", refused.reason
            )
            _answer(inner, writer, refused.status, refused.reason)
            await writer.drain()
            return
        if not sent:
            return
        masker = secrets.masker()
        try:
            while data := await up_reader.read(_CHUNK):
                writer.write(masker.feed(data))
                await writer.drain()
        except ssl.SSLError:
            pass
        writer.write(masker.flush())
        await writer.drain()


def request_line(request: Any) -> str:
    """``METHOD target`` of an ``h11.Request`` (empty for anything else)."""
    if not isinstance(request, h11.Request):
        return ""
    return (
        f"{request.method.decode('ascii', 'replace')} {request.target.decode('ascii', 'replace')}"
    )


def _authority(text: str, default_port: int | None) -> tuple[str, int]:
    """``host[:port]`` (IPv6 in brackets) → (host, port). Raises _Refused."""
    host, port = text, default_port
    if text.startswith("["):
        end = text.find("]")
        host, rest = text[: end + 1], text[end + 1 :]
        if rest.startswith(":") and rest[1:].isdigit():
            port = int(rest[1:])
    elif ":" in text:
        host, _, port_text = text.rpartition(":")
        if not port_text.isdigit():
            raise _Refused(400, f"bad port in {text!r}")
        port = int(port_text)
    if port is None:
        raise _Refused(400, f"CONNECT needs host:port, not {text!r}")
    return host, port


async def _next_event(conn: h11.Connection, reader: asyncio.StreamReader) -> Any:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await reader.read(_CHUNK))


async def _send_request(
    conn: h11.Connection,
    reader: asyncio.StreamReader,
    upstream: h11.Connection,
    up_writer: asyncio.StreamWriter,
    request: h11.Request,
    target: str | bytes,
    headers: list[tuple[bytes, bytes]],
    check: BodyCheck | None = None,
) -> bool:
    """Send ``request``'s head (with ``target`` and ``headers``) and then its body, as the
    sandbox sends it on ``conn``, to the upstream, the body through ``check`` when given;
    False when the sandbox's side ended before the end of the body (nothing more is to
    be done with this request).

    Raises:
        _Refused: ``check`` found a placeholder in the body (403); what came before it
            has been sent, the placeholder and the rest have not.
    """
    up_writer.write(
        upstream.send(h11.Request(method=request.method, target=target, headers=headers)) or b""
    )
    while True:
        event = await _next_event(conn, reader)
        if isinstance(event, h11.Data):
            data = event.data
            if check is not None:
                try:
                    data = check.feed(data)
                except SecretRefused as exc:
                    raise _Refused(403, str(exc)) from None
            if data:
                up_writer.write(upstream.send(h11.Data(data=data)) or b"")
                await up_writer.drain()
        elif isinstance(event, h11.EndOfMessage):
            if check is not None and (tail := check.flush()):
                up_writer.write(upstream.send(h11.Data(data=tail)) or b"")
            up_writer.write(upstream.send(h11.EndOfMessage()) or b"")
            await up_writer.drain()
            return True
        else:
            return False


def _answer(conn: h11.Connection, writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    body = (reason + "\n").encode("utf-8")
    if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
        return
    headers = [
        ("Content-Type", "text/plain; charset=utf-8"),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
        ("X-Toolwire-Egress", "refused"),
    ]
    try:
        writer.write(
            conn.send(h11.Response(status_code=status, headers=headers, reason=_reason(status)))
            or b""
        )
        writer.write(conn.send(h11.Data(data=body)) or b"")
        writer.write(conn.send(h11.EndOfMessage()) or b"")
    except h11.LocalProtocolError:
        writer.write(
            f"HTTP/1.1 {status} Refused\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )


async def _splice(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
) -> None:
    async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(_CHUNK):
                dst.write(data)
                await dst.drain()
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                if dst.can_write_eof():
                    dst.write_eof()

    await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))


def _system_resolve(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


# ------------------------------------------------------------------ the sandbox's side


@dataclass
class SandboxEgress:
    """What one sandboxed process needs for the proxy.

    Attributes:
        bwrap_args: bubblewrap options binding the grant's socket at :data:`SANDBOX_SOCKET`.
        env: :func:`proxy_env`, and with ``[secrets]`` the :data:`CA_ENV_NAMES` and the
            placeholders.
        values: the real secret values (kept out of the environment).
        grant: the proxy's grant (:meth:`release` it when the process is gone).
    """

    bwrap_args: list[str]
    env: dict[str, str]
    grant: EgressGrant
    proxy: EgressProxy = field(repr=False)
    values: list[str] = field(default_factory=list, repr=False)

    def prefix(self, join_fds: Sequence[int] = ()) -> list[str]:
        """The relay's command line, to put before the command: the host's Python with
        ``-I -S`` running :data:`RELAY_SCRIPT`, which joins the cgroups whose
        ``cgroup.procs`` are open as ``join_fds`` (a worker's, which it joins itself
        later: :meth:`toolwire.host.sandbox.bubblewrap.Sandbox.wrap` ``join_by_fd``)."""
        fds = [str(fd) for fd in join_fds]
        return [
            sys.executable,
            "-I",
            "-S",
            RELAY_SCRIPT,
            SANDBOX_SOCKET,
            str(RELAY_PORT),
            *fds,
            "--",
        ]

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        """The sandbox's environment: ``env`` without any variable whose value holds a
        real secret value (``[sandbox] env_allow`` may not pass one in), plus :attr:`env`
        (the proxy settings, the CA variables, the placeholders)."""
        kept = {k: v for k, v in env.items() if not any(s in v for s in self.values)}
        return {**kept, **self.env}

    def release(self) -> None:
        """Close the grant's socket."""
        self.proxy.release(self.grant)


_PROXY: EgressProxy | None = None
_PROXY_LOCK = threading.Lock()


def shared_proxy() -> EgressProxy:
    """The host process's one proxy (started on first use)."""
    global _PROXY
    with _PROXY_LOCK:
        if _PROXY is None:
            _PROXY = EgressProxy()
            atexit.register(_PROXY.close)
        return _PROXY


def sandbox_egress(policy: NetworkPolicy, scope: EgressScope | None = None) -> SandboxEgress:
    """A grant of the shared proxy for one sandboxed process, under the rules of
    ``scope`` (default: the :func:`egress_scope` in effect, else host-wide).

    Raises:
        OSError: the proxy's socket cannot be made.
    """
    scope = scope or _SCOPE.get() or EgressScope()
    proxy = shared_proxy()
    scoped = policy.for_scope(tool=scope.tool, module=scope.module)
    binds = []
    env = proxy_env()
    if scoped.secrets is not None:
        binds = ["--ro-bind", proxy.ca_file(), SANDBOX_CA]
        env.update(dict.fromkeys(CA_ENV_NAMES, SANDBOX_CA))
        env.update(scoped.secrets.env())
    grant = proxy.grant(scoped, scope.on_refused)
    values = [] if scoped.secrets is None else [s.value for s in scoped.secrets.secrets]
    return SandboxEgress(
        ["--ro-bind", grant.path, SANDBOX_SOCKET, *binds], env, grant, proxy, values
    )

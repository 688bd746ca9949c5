"""``toolwire serve --http``'s settings: the command line and the ``[http]`` table.

Standard library only, like :mod:`toolwire.host.serve.options`, which calls
:func:`add_http_arguments` and :func:`http_settings_from`. The transport itself is
:mod:`toolwire.host.serve.http`.

Names (issue 24): ``--http HOST:PORT``, ``--token-file FILE`` (or the environment
variable :data:`TOKEN_ENV`), ``--allow-unauthenticated``, ``--allowed-host NAME[:PORT]``
and ``--allowed-origin ORIGIN`` (repeatable, added to the loopback defaults); in
``toolwire.toml`` an ``[http]`` table with ``listen``, ``token_file``,
``allow_unauthenticated``, ``allowed_hosts``, ``allowed_origins`` (lists),
``session_idle_timeout`` and ``body_timeout`` (seconds).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "LOOPBACK_NAMES",
    "TOKEN_ENV",
    "HttpSettings",
    "OAuthSettings",
    "add_http_arguments",
    "http_settings_from",
    "is_loopback",
    "parse_listen",
]

TOKEN_ENV = "TOOLWIRE_TOKEN"
"""Environment variable holding the static bearer token (``--token-file`` wins)."""

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""Host names allowed in ``Host`` on every bind (with any port), and as the host of an
``http://``/``https://`` ``Origin``: a browser page can only claim them when it is
served from this machine."""

_KNOWN = {
    "listen",
    "token_file",
    "allow_unauthenticated",
    "allowed_hosts",
    "allowed_origins",
    "session_idle_timeout",
    "body_timeout",
    "path",
}


@dataclass
class OAuthSettings:
    """``[http.oauth]``: the host as an OAuth 2.1 resource server (MCP authorization).

    Attributes:
        issuer: the authorization server's issuer identifier (the ``iss`` a token must
            carry; listed in the protected resource metadata).
        jwks: the issuer's JSON Web Key Set: a file path, or an ``https://`` URL
            (fetched when a token names a key not seen yet, cached five minutes).
        audience: the ``aud`` a token must name (RFC 8707): this server's resource URL
            (default: :attr:`resource`).
        resource: the canonical URL of the MCP endpoint, as clients reach it
            (default: ``http://HOST:PORT/mcp`` of the bind).
        tool_scopes: tool name → scopes a token needs to call it (403
            ``insufficient_scope`` otherwise).
        algorithms: signature algorithms accepted (never ``none`` or HMAC).
    """

    issuer: str
    jwks: str
    audience: str | None = None
    resource: str | None = None
    tool_scopes: dict[str, list[str]] = field(default_factory=dict)
    algorithms: list[str] = field(
        default_factory=lambda: [
            "RS256",
            "RS384",
            "RS512",
            "PS256",
            "PS384",
            "PS512",
            "ES256",
            "ES384",
            "ES512",
            "EdDSA",
        ]
    )

    @classmethod
    def from_table(cls, table: Any) -> OAuthSettings:
        """Read ``[http.oauth]``.

        Raises:
            ValueError: missing ``issuer``/``jwks``, unknown keys, wrong types.
        """
        if not isinstance(table, dict):
            raise ValueError("[http.oauth] must be a table")
        known = {"issuer", "jwks", "audience", "resource", "tool_scopes", "algorithms"}
        unknown = set(table) - known
        if unknown:
            raise ValueError(f"unknown [http.oauth] settings: {sorted(unknown)}")
        for key in ("issuer", "jwks"):
            if not isinstance(table.get(key), str) or not table[key]:
                raise ValueError(f"[http.oauth] needs {key} (a string)")
        for key in ("audience", "resource"):
            if key in table and not isinstance(table[key], str):
                raise ValueError(f"[http.oauth] {key} must be a string")
        scopes = table.get("tool_scopes", {})
        if not isinstance(scopes, dict) or not all(
            isinstance(v, list) and all(isinstance(x, str) for x in v) for v in scopes.values()
        ):
            raise ValueError("[http.oauth] tool_scopes maps tool names to lists of scopes")
        settings = cls(
            issuer=table["issuer"],
            jwks=table["jwks"],
            audience=table.get("audience"),
            resource=table.get("resource"),
            tool_scopes={str(k): list(v) for k, v in scopes.items()},
        )
        if "algorithms" in table:
            algorithms = table["algorithms"]
            if (
                not isinstance(algorithms, list)
                or not algorithms
                or any(
                    not isinstance(a, str) or a.lower() == "none" or a.upper().startswith("HS")
                    for a in algorithms
                )
            ):
                raise ValueError("[http.oauth] algorithms: asymmetric JWS algorithms only")
            settings.algorithms = list(algorithms)
        return settings


@dataclass
class HttpSettings:
    """How ``toolwire serve --http`` listens and whom it lets in.

    Attributes:
        host: the address to bind (an IP address or a name; ``[::1]`` without brackets).
        port: the TCP port (0: any free port; the host prints the one it got).
        path: the MCP endpoint (default ``/mcp``).
        token: the static bearer token (None: no static token).
        token_file: the file ``token`` was read from (None: none, or the environment).
        allow_unauthenticated: serve a non-loopback bind without authentication.
        allowed_hosts: ``Host`` values allowed besides the loopback names:
            ``NAME`` (any port) or ``NAME:PORT`` (that port only).
        allowed_origins: ``Origin`` values allowed besides loopback ones:
            ``scheme://host`` (any port) or ``scheme://host:port``.
        session_idle_timeout: seconds a 2025-11-25 session may stay idle (nothing in
            flight, no stream open) before the host ends it.
        body_timeout: seconds a client has to send a whole request body (408 after).
        max_sessions: 2025-11-25 sessions open at once at most (503 beyond).
        oauth: OAuth 2.1 resource-server settings (None: no OAuth).
    """

    host: str = "127.0.0.1"
    port: int = 8000
    path: str = "/mcp"
    token: str | None = None
    token_file: str | None = None
    allow_unauthenticated: bool = False
    allowed_hosts: list[str] = field(default_factory=list)
    allowed_origins: list[str] = field(default_factory=list)
    session_idle_timeout: float = 1800.0
    body_timeout: float = 30.0
    max_sessions: int = 1000
    oauth: OAuthSettings | None = None

    @property
    def loopback(self) -> bool:
        """True when the bind address is a loopback address (or ``localhost``)."""
        return is_loopback(self.host)

    @property
    def authenticated(self) -> bool:
        """True when requests must authenticate (a static token or OAuth)."""
        return self.token is not None or self.oauth is not None


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses (127.0.0.0/8, ::1)."""
    name = host.strip("[]")
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8000`` for IPv6) → ``(host, port)``.

    Raises:
        ValueError: no port, a port outside 0-65535, or an empty host.
    """
    host, sep, port_text = text.rpartition(":")
    if not sep or not host:
        raise ValueError(f"--http wants HOST:PORT (e.g. 127.0.0.1:8000), not {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"--http {text}: the port must be a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"--http {text}: the port must be from 0 to 65535")
    return host, port


def read_token_file(path: str | os.PathLike[str]) -> str:
    """The token in ``path`` (surrounding whitespace removed).

    Raises:
        ValueError: unreadable or empty file.
    """
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ValueError(f"cannot read token file {path}: {exc.strerror}") from None
    if not token:
        raise ValueError(f"token file {path} is empty")
    _warn_if_others_can_read(path)
    return token


def _warn_if_others_can_read(path: str | os.PathLike[str]) -> None:
    """One line on stderr when group or others may read a secret file (as ssh says of a
    private key, though only a warning here: containers mount secrets 0644 as often as
    not, and the file may sit where nobody else can reach it). Written before the host's
    logging is set up, with the prefix of its other start-up lines."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if mode & 0o077:
        print(
            f"toolwire serve: warning: token file {path} can be read by other users"
            f" (mode {mode & 0o777:03o}): chmod 600 {path}",
            file=sys.stderr,
        )


def add_http_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``--http`` options to ``toolwire serve``'s parser."""
    g = p.add_argument_group("Streamable HTTP (instead of stdio)")
    g.add_argument(
        "--http",
        default=None,
        metavar="HOST:PORT",
        help="serve MCP over Streamable HTTP at http://HOST:PORT/mcp instead of stdio",
    )
    g.add_argument(
        "--token-file",
        default=None,
        metavar="FILE",
        help=f"require 'Authorization: Bearer <token>' with the token in FILE (or ${TOKEN_ENV})",
    )
    g.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        default=None,
        help="serve a non-loopback address without authentication (not recommended)",
    )
    g.add_argument(
        "--allowed-host",
        action="append",
        default=None,
        metavar="NAME[:PORT]",
        help="also accept this Host header (repeatable; loopback names are always accepted)",
    )
    g.add_argument(
        "--allowed-origin",
        action="append",
        default=None,
        metavar="ORIGIN",
        help="also accept this Origin header (repeatable; loopback origins are always accepted)",
    )


def http_settings_from(ns: argparse.Namespace, table: dict[str, Any]) -> HttpSettings | None:
    """The HTTP settings from parsed arguments and the ``[http]`` table (the command line
    wins; lists add up); None when neither ``--http`` nor ``listen`` is given.

    Raises:
        ValueError: an unknown ``[http]`` key, a bad ``listen``, an unreadable token file.
    """
    unknown = set(table) - _KNOWN - {"oauth"}
    if unknown:
        raise ValueError(f"unknown [http] settings: {sorted(unknown)}")
    listen = getattr(ns, "http", None) or table.get("listen")
    if listen is None:
        return None
    host, port = parse_listen(str(listen))
    token_file = getattr(ns, "token_file", None) or table.get("token_file")
    token = read_token_file(token_file) if token_file else os.environ.get(TOKEN_ENV) or None
    allow = getattr(ns, "allow_unauthenticated", None)
    if allow is None:
        allow = bool(table.get("allow_unauthenticated", False))

    def strings(key: str, flag: list[str] | None) -> list[str]:
        values = table.get(key, [])
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ValueError(f"[http] {key} must be a list of strings")
        return [*values, *(flag or [])]

    settings = HttpSettings(
        host=host,
        port=port,
        token=token,
        token_file=str(token_file) if token_file else None,
        allow_unauthenticated=allow,
        allowed_hosts=strings("allowed_hosts", getattr(ns, "allowed_host", None)),
        allowed_origins=strings("allowed_origins", getattr(ns, "allowed_origin", None)),
    )
    if "oauth" in table:
        settings.oauth = OAuthSettings.from_table(table["oauth"])
    if "path" in table:
        path = str(table["path"])
        if not path.startswith("/"):
            raise ValueError("[http] path must start with '/'")
        settings.path = path
    for key in ("session_idle_timeout", "body_timeout"):
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"[http] {key} must be a positive number of seconds")
            setattr(settings, key, float(value))
    return settings

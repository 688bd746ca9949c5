"""Who is calling over HTTP: a static bearer token, or OAuth 2.1 access tokens (JWT).

The MCP authorization specification (2025-11-25 and 2026-07-28, "authorization") makes
an HTTP MCP server an OAuth 2.1 resource server: it validates every access token —
signature against the issuer's JWKS, ``iss``, ``exp``, and an audience naming this
server (RFC 8707) — publishes RFC 9728 Protected Resource Metadata at the path-aware
well-known URL, answers 401 with a ``WWW-Authenticate`` challenge naming that metadata,
and 403 ``insufficient_scope`` when a call needs scopes the token lacks (RFC 6750 §3.1).
The client's token is never forwarded anywhere. JWTs are checked with PyJWT.

A :class:`Principal` is who a request is from; 2025-11-25 sessions belong to theirs
and input-required rounds are signed for theirs (:class:`PrincipalSigner`).
"""

from __future__ import annotations

import contextvars
import hmac
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio.to_thread

from toolwire.errors import INVALID_PARAMS, JsonRpcError

from ...tools.rounds import StateSigner
from .config import HttpSettings, OAuthSettings

__all__ = [
    "AuthFailure",
    "Authenticator",
    "Principal",
    "PrincipalSigner",
    "current_principal",
    "metadata_path",
]

log = logging.getLogger("toolwire.host.http")

ANONYMOUS = "anonymous"


@dataclass(frozen=True)
class Principal:
    """An authenticated caller.

    Attributes:
        name: a stable identity (``anonymous``, ``token``, or ``ISSUER#SUBJECT``).
        scopes: the scopes granted (None: every scope, as for the static token).
    """

    name: str
    scopes: frozenset[str] | None = None

    def lacks(self, needed: list[str]) -> list[str]:
        """The scopes in ``needed`` this principal was not granted."""
        if self.scopes is None:
            return []
        return [s for s in needed if s not in self.scopes]


_NOBODY = Principal(ANONYMOUS)
"""The principal of every request when none needs a token (frozen, so one is shared)."""


current_principal: contextvars.ContextVar[str] = contextvars.ContextVar(
    "toolwire_http_principal", default=ANONYMOUS
)
"""The principal of the HTTP request being served (set before its session starts, so
every task of that request sees it)."""


class PrincipalSigner(StateSigner):
    """A :class:`~toolwire.host.tools.rounds.StateSigner` that binds each ``requestState`` to the
    principal it was issued to: a round started by one principal cannot be finished by
    another (MCP 2026-07-28 security considerations, state handle hijacking)."""

    def sign(self, payload: dict[str, Any]) -> str:
        return super().sign({**payload, "p": current_principal.get()})

    def verify(self, state: Any) -> dict[str, Any]:
        payload = super().verify(state)
        owner = payload.get("p")
        if type(owner) is not str or not hmac.compare_digest(owner, current_principal.get()):
            raise JsonRpcError(INVALID_PARAMS, "requestState was issued to another principal")
        return payload


class AuthFailure(Exception):
    """A request that may not proceed: 401 (no or bad token) or 403 (scopes)."""

    def __init__(self, status: int, message: str, challenge: str) -> None:
        super().__init__(message)
        self.status = status
        self.challenge = challenge


def metadata_path(resource: str) -> str:
    """The path of the RFC 9728 §3.1 well-known URL for ``resource``: the well-known
    prefix inserted before the resource's path (``/.well-known/oauth-protected-resource/mcp``)."""
    path = urlsplit(resource).path.rstrip("/")
    return "/.well-known/oauth-protected-resource" + path


class Authenticator:
    """Checks the ``Authorization`` header of requests to the MCP endpoint.

    Args:
        settings: the HTTP settings (``token`` and/or ``oauth``).
        resource: the canonical URL of the MCP endpoint (OAuth's default audience).
    """

    def __init__(self, settings: HttpSettings, resource: str) -> None:
        self.token = settings.token
        self.oauth: OAuthSettings | None = settings.oauth
        self.resource = resource
        self._jwks: Any = None
        self._jwk_client: Any = None
        if self.oauth is not None:
            self.resource = self.oauth.resource or self.oauth.audience or resource
            self.audience = self.oauth.audience or self.resource
            self._load_jwks(self.oauth.jwks)
        split = urlsplit(self.resource)
        self.metadata_url = f"{split.scheme}://{split.netloc}{metadata_path(self.resource)}"

    def _load_jwks(self, source: str) -> None:
        import jwt

        if source.startswith(("https://", "http://")):
            self._jwk_client = jwt.PyJWKClient(source, cache_keys=True, lifespan=300)
            return
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"[http.oauth] jwks: cannot read {source}: {exc.strerror}") from None
        try:
            self._jwks = jwt.PyJWKSet.from_json(text)
        except jwt.PyJWTError as exc:
            raise ValueError(
                f"[http.oauth] jwks: {source} is not a usable JWK set: {exc}"
            ) from None

    @property
    def required(self) -> bool:
        """True when requests must carry a token."""
        return self.token is not None or self.oauth is not None

    def metadata(self) -> dict[str, Any]:
        """The RFC 9728 Protected Resource Metadata document."""
        assert self.oauth is not None
        scopes = sorted({s for needed in self.oauth.tool_scopes.values() for s in needed})
        doc: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": [self.oauth.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": "toolwire",
        }
        if scopes:
            doc["scopes_supported"] = scopes
        return doc

    def challenge(self, error: str | None = None, scope: list[str] | None = None) -> str:
        """A ``WWW-Authenticate`` value (RFC 6750 §3; RFC 9728 §5.1 ``resource_metadata``)."""
        parts: list[str] = []
        if self.oauth is not None:
            parts.append(f'resource_metadata="{self.metadata_url}"')
        else:
            parts.append('realm="toolwire"')
        if error is not None:
            parts.append(f'error="{error}"')
        if scope:
            parts.append(f'scope="{" ".join(scope)}"')
        return "Bearer " + ", ".join(parts)

    async def authenticate(self, values: list[str]) -> Principal:
        """The principal of a request with these ``Authorization`` header values.

        Raises:
            AuthFailure: 401 when a token is required and missing, malformed, wrong,
                expired, for another audience or from another issuer.
        """
        if not self.required:
            return _NOBODY
        if not values:
            raise AuthFailure(
                401, "Unauthorized: this endpoint needs a bearer token", self.challenge()
            )
        scheme, _, given = values[0].strip().partition(" ")
        given = given.strip()
        if len(values) != 1 or scheme.lower() != "bearer" or not given:
            raise AuthFailure(
                401,
                "Unauthorized: send one 'Authorization: Bearer <token>' header",
                self.challenge("invalid_request"),
            )
        if self.token is not None and hmac.compare_digest(
            given.encode("utf-8"), self.token.encode("utf-8")
        ):
            return Principal("token")
        if self.oauth is not None:
            return await self._check_jwt(given)
        raise AuthFailure(401, "Unauthorized: invalid token", self.challenge("invalid_token"))

    async def _check_jwt(self, token: str) -> Principal:
        import jwt

        assert self.oauth is not None
        try:
            if self._jwk_client is not None:
                client = self._jwk_client
                key = await anyio.to_thread.run_sync(client.get_signing_key_from_jwt, token)
            else:
                kid = jwt.get_unverified_header(token).get("kid")
                keys = [k for k in self._jwks.keys if kid is None or k.key_id == kid]
                if not keys:
                    raise jwt.InvalidTokenError("no key in the JWK set matches the token's kid")
                key = keys[0]
            claims = jwt.decode(
                token,
                key.key,
                algorithms=self.oauth.algorithms,
                audience=self.audience,
                issuer=self.oauth.issuer,
                options={"require": ["exp", "iss", "aud"]},
                leeway=30,
            )
        except (jwt.PyJWTError, ValueError) as exc:
            log.info("refused an access token: %s", exc)
            raise AuthFailure(
                401, f"Unauthorized: invalid access token ({exc})", self.challenge("invalid_token")
            ) from None
        scope = claims.get("scope")
        scopes: set[str] = set(scope.split()) if isinstance(scope, str) else set()
        scp = claims.get("scp")
        if isinstance(scp, list):
            scopes.update(s for s in scp if isinstance(s, str))
        subject = claims.get("sub") if isinstance(claims.get("sub"), str) else ""
        return Principal(f"{claims['iss']}#{subject}", frozenset(scopes))

    def check_scopes(self, principal: Principal, tools: list[str]) -> None:
        """Raises AuthFailure 403 ``insufficient_scope`` when calling ``tools`` needs
        scopes ``principal`` lacks (all of them in one challenge)."""
        if self.oauth is None:
            return
        needed: list[str] = []
        for name in tools:
            for s in self.oauth.tool_scopes.get(name, []):
                if s not in needed:
                    needed.append(s)
        missing = principal.lacks(needed)
        if missing:
            raise AuthFailure(
                403,
                f"Forbidden: the token lacks the scopes {' '.join(missing)}",
                self.challenge("insufficient_scope", needed),
            )

"""``toolwire serve --http`` as an OAuth 2.1 resource server ([http.oauth]): JWT access
tokens checked for signature, issuer, expiry and audience (RFC 8707), RFC 9728
metadata, 401/403 challenges, per-tool scopes, rounds bound to their principal."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.e2e_helpers import WIRE_TOOLS
from tests.http_support import (
    HTTP_TOOLS,
    LEGACY_HEADERS,
    HttpHost,
    http_host,
    initialize_body,
    modern_request,
)

ISSUER = "https://auth.example"
MODERN_TOOLS = str(Path(WIRE_TOOLS).parent / "modern_tools.py")


@pytest.fixture(scope="module")
def keys() -> dict[str, Any]:
    return {
        "good": rsa.generate_private_key(public_exponent=65537, key_size=2048),
        "other": rsa.generate_private_key(public_exponent=65537, key_size=2048),
    }


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory, keys: dict[str, Any]) -> Iterator[HttpHost]:
    base = tmp_path_factory.mktemp("oauth")
    jwk = json.loads(RSAAlgorithm.to_jwk(keys["good"].public_key()))
    jwk.update(kid="k1", use="sig", alg="RS256")
    (base / "jwks.json").write_text(json.dumps({"keys": [jwk]}))
    (base / "toolwire.toml").write_text(
        "[http.oauth]\n"
        f'issuer = "{ISSUER}"\n'
        f'jwks = "{base / "jwks.json"}"\n'
        "[http.oauth.tool_scopes]\n"
        'steps = ["tools:exec"]\n'
        'hang = ["tools:exec", "tools:slow"]\n'
    )
    root = base / "root"
    root.mkdir()
    with http_host(
        root, ["--config", str(base / "toolwire.toml")], tools=[HTTP_TOOLS, MODERN_TOOLS]
    ) as h:
        yield h


def token(h: HttpHost, keys: dict[str, Any], **claims: Any) -> str:
    key = claims.pop("_key", keys["good"])
    body = {"iss": ISSUER, "aud": h.url, "sub": "alice", "exp": int(time.time()) + 300}
    body.update(claims)
    for name in [k for k, v in body.items() if v is None]:
        del body[name]
    return jwt.encode(body, key, algorithm="RS256", headers={"kid": "k1"})


def call(
    h: HttpHost, bearer: str | None, method: str = "tools/list", **params: Any
) -> httpx.Response:
    body, headers = modern_request(1, method, params or None)
    if bearer is not None:
        headers["Authorization"] = f"Bearer {bearer}"
    return httpx.post(h.url, json=body, headers=headers, timeout=60)


def test_protected_resource_metadata(host: HttpHost) -> None:
    r = httpx.get(host.base + "/.well-known/oauth-protected-resource/mcp")
    assert r.status_code == 200
    doc = r.json()
    assert doc["resource"] == host.url
    assert doc["authorization_servers"] == [ISSUER]
    assert doc["bearer_methods_supported"] == ["header"]
    assert doc["scopes_supported"] == ["tools:exec", "tools:slow"]


def test_401_names_the_metadata(host: HttpHost) -> None:
    r = call(host, None)
    assert r.status_code == 401
    challenge = r.headers["www-authenticate"]
    expected = host.base + "/.well-known/oauth-protected-resource/mcp"
    assert challenge.startswith("Bearer ") and f'resource_metadata="{expected}"' in challenge
    assert "error=" not in challenge  # no credentials: no error code (RFC 6750 §3.1)


def test_token_checks(host: HttpHost, keys: dict[str, Any]) -> None:
    assert call(host, token(host, keys)).status_code == 200
    bad = {
        "another resource": token(host, keys, aud="http://127.0.0.1:1/mcp"),
        "no audience": token(host, keys, aud=None),
        "expired": token(host, keys, exp=int(time.time()) - 3600),
        "no expiry": token(host, keys, exp=None),
        "another issuer": token(host, keys, iss="https://evil.example"),
        "another key": token(host, keys, _key=keys["other"]),
        "unsigned": jwt.encode(
            {"iss": ISSUER, "aud": host.url, "exp": int(time.time()) + 300}, None, algorithm="none"
        ),
        "garbage": "not-a-jwt",
    }
    for what, t in bad.items():
        r = call(host, t)
        assert r.status_code == 401, what
        assert 'error="invalid_token"' in r.headers["www-authenticate"], what


def test_per_tool_scopes(host: HttpHost, keys: dict[str, Any]) -> None:
    weak = token(host, keys, scope="tools:read")
    r = call(host, weak, "tools/call", name="steps", arguments={"n": 1})
    assert r.status_code == 403
    challenge = r.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="tools:exec"' in challenge
    assert r.json()["id"] == 1
    # every scope the call needs in one challenge
    r = call(host, weak, "tools/call", name="hang", arguments={"side": "/nonexistent"})
    assert r.status_code == 403 and 'scope="tools:exec tools:slow"' in r.headers["www-authenticate"]
    assert call(host, weak).status_code == 200  # listing needs no scope
    strong = token(host, keys, scope="tools:read tools:exec")
    r = call(host, strong, "tools/call", name="steps", arguments={"n": 1})
    assert r.status_code == 200 and r.json()["result"]["content"][0]["text"] == "done"
    # the 2025-11-25 leg checks them too
    headers = {**LEGACY_HEADERS, "Authorization": f"Bearer {weak}"}
    r = httpx.post(host.url, json=initialize_body(0), headers=headers)
    headers["Mcp-Session-Id"] = r.headers["mcp-session-id"]
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "steps", "arguments": {"n": 1}},
    }
    assert httpx.post(host.url, json=body, headers=headers).status_code == 403


def test_sessions_belong_to_their_principal(host: HttpHost, keys: dict[str, Any]) -> None:
    alice = {**LEGACY_HEADERS, "Authorization": f"Bearer {token(host, keys)}"}
    r = httpx.post(host.url, json=initialize_body(0), headers=alice)
    sid = r.headers["mcp-session-id"]
    bob = {
        **LEGACY_HEADERS,
        "Authorization": f"Bearer {token(host, keys, sub='bob')}",
        "Mcp-Session-Id": sid,
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert httpx.post(host.url, json=body, headers=bob).status_code == 404
    assert (
        httpx.post(host.url, json=body, headers={**alice, "Mcp-Session-Id": sid}).status_code == 200
    )


def test_request_state_is_bound_to_the_principal(host: HttpHost, keys: dict[str, Any]) -> None:
    caps = {"elicitation": {}}
    body, headers = modern_request(1, "tools/call", {"name": "ask_name", "arguments": {}})
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = caps
    alice = {**headers, "Authorization": f"Bearer {token(host, keys)}"}
    r = httpx.post(host.url, json=body, headers=alice, timeout=60)
    result = r.json()["result"]
    assert result["resultType"] == "input_required"
    retry = json.loads(json.dumps(body))
    retry["id"] = 2
    retry["params"]["requestState"] = result["requestState"]
    retry["params"]["inputResponses"] = {
        "user_name": {"action": "accept", "content": {"name": "Ada"}}
    }
    bob = {**headers, "Authorization": f"Bearer {token(host, keys, sub='bob')}"}
    r = httpx.post(host.url, json=retry, headers=bob, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32602
    assert "another principal" in r.json()["error"]["message"]
    r = httpx.post(host.url, json=retry, headers=alice, timeout=60)
    assert r.status_code == 200
    assert r.json()["result"]["content"][0]["text"] == "hello Ada"

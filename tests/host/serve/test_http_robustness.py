"""Bad input over HTTP gets the status and JSON-RPC error the spec names, and the host
keeps serving: malformed bodies, wrong media types, contradicting headers, unknown
sessions, and clients that go away in the middle of a stream."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e_helpers import wait_until
from tests.http_support import (
    LEGACY_HEADERS,
    HttpHost,
    http_host,
    initialize_body,
    modern_request,
    sse_messages,
)

TIMEOUT = httpx.Timeout(60.0)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpHost]:
    with http_host(tmp_path_factory.mktemp("root")) as h:
        yield h


def still_serving(h: HttpHost) -> None:
    body, headers = modern_request("alive", "tools/list")
    r = httpx.post(h.url, json=body, headers=headers, timeout=TIMEOUT)
    assert r.status_code == 200 and r.json()["id"] == "alive"


@pytest.mark.parametrize(
    ("content", "content_type", "accept", "status", "code"),
    [
        (b"{not json", "application/json", "application/json", 400, -32700),
        (b"[]", "application/json", "application/json", 400, -32600),
        (
            b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]',
            "application/json",
            "application/json",
            400,
            -32600,
        ),
        (b"42", "application/json", "application/json", 400, -32600),
        (b"{}", "text/plain", "application/json", 415, -32600),
        (b"{}", "application/x-www-form-urlencoded", "*/*", 415, -32600),
        (b"{}", "application/json", "text/html", 406, -32600),
        (b"\xff\xfe", "application/json", "application/json", 400, -32700),
    ],
)
def test_malformed_posts(
    host: HttpHost, content: bytes, content_type: str, accept: str, status: int, code: int
) -> None:
    headers = {"Content-Type": content_type, "Accept": accept, "MCP-Protocol-Version": "2026-07-28"}
    r = httpx.post(host.url, content=content, headers=headers, timeout=TIMEOUT)
    assert r.status_code == status, r.text
    assert r.json()["error"]["code"] == code and r.json()["id"] is None
    still_serving(host)


def test_modern_responses_and_bad_ids_are_refused(host: HttpHost) -> None:
    _, headers = modern_request(1, "tools/list")
    r = httpx.post(host.url, json={"jsonrpc": "2.0", "id": 1, "result": {}}, headers=headers)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32600
    body, headers = modern_request(1.5, "tools/list")
    r = httpx.post(host.url, json=body, headers=headers)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32600
    body, _ = modern_request(1, "tools/list")
    dup = [(k, v) for k, v in headers.items()] + [("Mcp-Method", "tools/list")]
    r = httpx.post(host.url, json=body, headers=dup)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020
    still_serving(host)


def test_unknown_and_missing_sessions(host: HttpHost) -> None:
    headers = {**LEGACY_HEADERS, "Mcp-Session-Id": "no-such-session"}
    r = httpx.post(
        host.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers
    )
    assert r.status_code == 404 and r.json()["error"]["code"] == -32600
    assert httpx.get(host.url, headers=headers).status_code == 404
    assert httpx.delete(host.url, headers=headers).status_code == 404
    r = httpx.post(
        host.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=LEGACY_HEADERS
    )
    assert r.status_code == 400 and "session" in r.json()["error"]["message"].lower()
    still_serving(host)


def _raw_post(h: HttpHost, body: bytes, headers: dict[str, str]) -> socket.socket:
    """Send a POST on a raw socket (so the test can hang up mid-response)."""
    host, port = h.hostport.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=60)
    head = f"POST /mcp HTTP/1.1\r\nHost: {h.hostport}\r\nContent-Length: {len(body)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    s.sendall(head.encode() + b"\r\n" + body)
    return s


def _hang_call(id: Any, side: Path, token: bool = True) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "hang", "arguments": {"side": str(side)}}
    if token:
        params["_meta"] = {"progressToken": "t"}
    return params


@pytest.mark.parametrize("token", [True, False], ids=["streamable", "direct"])
def test_modern_client_gone_mid_call_is_cancellation(
    host: HttpHost, tmp_path: Path, token: bool
) -> None:
    """MCP 2026-07-28: closing the response cancels the call, whether the request could
    stream (a progress token: served on a session) or not (served directly)."""
    import json

    body, headers = modern_request(1, "tools/call", _hang_call(1, tmp_path, token))
    s = _raw_post(host, json.dumps(body).encode(), headers)
    wait_until(lambda: (tmp_path / "hang.started").exists(), 60.0)
    s.close()
    wait_until(lambda: (tmp_path / "hang.cancelled").exists(), 60.0, "the call cancelled")
    still_serving(host)


def test_legacy_client_gone_mid_call_is_not_cancellation(host: HttpHost, tmp_path: Path) -> None:
    import json

    r = httpx.post(host.url, json=initialize_body(0), headers=LEGACY_HEADERS)
    sid = r.headers["mcp-session-id"]
    headers = {**LEGACY_HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
    params = _hang_call(1, tmp_path)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    s = _raw_post(host, json.dumps(body).encode(), headers)
    wait_until(lambda: (tmp_path / "hang.started").exists(), 60.0)
    s.close()
    # the session still knows the call: the same id is refused while it runs ...
    r = httpx.post(
        host.url, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
    )
    assert r.status_code == 200
    assert not (tmp_path / "hang.cancelled").exists()
    # ... until the client cancels it the 2025-11-25 way
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
    assert httpx.post(host.url, json=cancel, headers=headers).status_code == 202
    wait_until(lambda: (tmp_path / "hang.cancelled").exists(), 60.0, "the call cancelled")
    still_serving(host)


def test_legacy_cancelled_call_gets_no_response(host: HttpHost, tmp_path: Path) -> None:
    """MCP 2025-11-25 (cancellation): no response is sent for a request the client
    cancelled (``notifications/cancelled``); its SSE response just ends."""
    import threading

    r = httpx.post(host.url, json=initialize_body(0), headers=LEGACY_HEADERS)
    sid = r.headers["mcp-session-id"]
    headers = {**LEGACY_HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
    params: dict[str, Any] = {"name": "hang", "arguments": {"side": str(tmp_path)}}
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    seen: dict[str, Any] = {}

    def call() -> None:
        with httpx.stream("POST", host.url, json=body, headers=headers, timeout=TIMEOUT) as resp:
            seen["status"] = resp.status_code
            seen["type"] = resp.headers.get("content-type", "")
            seen["body"] = resp.read().decode()

    caller = threading.Thread(target=call)
    caller.start()
    wait_until(lambda: (tmp_path / "hang.started").exists(), 60.0)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    assert httpx.post(host.url, json=cancel, headers=headers).status_code == 202
    caller.join(60.0)
    assert not caller.is_alive(), "the cancelled call's response did not end"
    assert seen["status"] == 200 and seen["type"].startswith("text/event-stream")
    assert [m for m in sse_messages(seen["body"]) if "method" not in m] == []
    wait_until(lambda: (tmp_path / "hang.cancelled").exists(), 60.0, "the call cancelled")
    still_serving(host)


def test_second_get_stream_is_409(host: HttpHost) -> None:
    r = httpx.post(host.url, json=initialize_body(0), headers=LEGACY_HEADERS)
    sid = r.headers["mcp-session-id"]
    headers = {
        "Accept": "text/event-stream",
        "Mcp-Session-Id": sid,
        "MCP-Protocol-Version": "2025-11-25",
    }
    with (
        httpx.Client(timeout=TIMEOUT) as client,
        client.stream("GET", host.url, headers=headers) as first,
    ):
        assert first.status_code == 200
        assert first.headers["content-type"].startswith("text/event-stream")
        second = httpx.get(host.url, headers=headers, timeout=TIMEOUT)
        assert second.status_code == 409
    assert httpx.get(host.url, headers={**headers, "Accept": "application/json"}).status_code == 406
    assert httpx.delete(host.url, headers=headers).status_code == 200
    still_serving(host)


def test_idle_session_expires(tmp_path: Path) -> None:
    """A 2025-11-25 session with nothing in flight expires after ``session_idle_timeout``
    ([http]); its id then gets 404, and a new initialize works."""
    config = tmp_path / "toolwire.toml"
    config.write_text("[http]\nsession_idle_timeout = 1\n")
    root = tmp_path / "root"
    root.mkdir()
    with http_host(root, ["--config", str(config), "--log-level", "info"]) as h:
        r = httpx.post(h.url, json=initialize_body(0), headers=LEGACY_HEADERS, timeout=TIMEOUT)
        sid = r.headers["mcp-session-id"]
        headers = {**LEGACY_HEADERS, "Mcp-Session-Id": sid}
        # the host reports it on stderr (asking in the meantime would keep it alive)
        while True:
            line = h.lines.get(timeout=60)
            assert line, "the host exited"
            if f"session {sid[:8]}… expired" in line:
                break
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        assert httpx.post(h.url, json=body, headers=headers, timeout=TIMEOUT).status_code == 404
        r = httpx.post(h.url, json=initialize_body(0), headers=LEGACY_HEADERS, timeout=TIMEOUT)
        assert r.status_code == 200 and r.headers["mcp-session-id"] != sid

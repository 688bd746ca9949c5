"""``toolwire serve --http``: both MCP eras over real Streamable HTTP (uvicorn on an
ephemeral loopback port, httpx as the client; no bridge, no mocks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.http_support import (
    LEGACY_HEADERS,
    MODERN,
    HttpHost,
    http_host,
    initialize_body,
    modern_request,
    sse_messages,
)

TIMEOUT = httpx.Timeout(60.0)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpHost]:
    root = tmp_path_factory.mktemp("root")
    with http_host(root) as h:
        yield h


def post(h: HttpHost, body: Any, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(h.url, json=body, headers=headers, timeout=TIMEOUT)


def open_session(h: HttpHost, capabilities: dict[str, Any] | None = None) -> str:
    r = post(h, initialize_body(0, capabilities), LEGACY_HEADERS)
    assert r.status_code == 200, r.text
    sid = r.headers["mcp-session-id"]
    assert r.json()["result"]["protocolVersion"] == "2025-11-25"
    r = post(
        h,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {**LEGACY_HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"},
    )
    assert r.status_code == 202 and r.content == b""
    return sid


def session_headers(sid: str) -> dict[str, str]:
    return {**LEGACY_HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}


def test_health_and_ready(host: HttpHost) -> None:
    assert httpx.get(host.base + "/healthz").json() == {"status": "ok"}
    assert httpx.get(host.base + "/readyz").status_code == 200


def test_modern_list_and_call_as_json(host: HttpHost) -> None:
    body, headers = modern_request(1, "tools/list")
    r = post(host, body, headers)
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    result = r.json()["result"]
    assert result["resultType"] == "complete"
    assert "hold" in {t["name"] for t in result["tools"]}
    assert "mcp-session-id" not in r.headers  # stateless: never minted

    body, headers = modern_request(2, "tools/call", {"name": "steps", "arguments": {"n": 2}})
    r = post(host, body, headers)
    assert r.status_code == 200 and r.json()["id"] == 2
    assert r.json()["result"]["content"][0]["text"] == "done"


def test_modern_progress_and_logs_stream_as_sse(host: HttpHost) -> None:
    body, headers = modern_request(
        "p",
        "tools/call",
        {"name": "steps", "arguments": {"n": 3}, "_meta": {"progressToken": "tok"}},
        **{"io.modelcontextprotocol/logLevel": "info"},
    )
    r = post(host, body, headers)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    messages = sse_messages(r.text)
    progress = [m for m in messages if m.get("method") == "notifications/progress"]
    assert [m["params"]["progress"] for m in progress] == [1, 2, 3]
    assert all(m["params"]["progressToken"] == "tok" for m in progress)
    assert any(m.get("method") == "notifications/message" for m in messages)
    assert messages[-1]["id"] == "p"
    assert messages[-1]["result"]["content"][0]["text"] == "done"
    assert not any("method" in m and "id" in m for m in messages)  # no requests on it


def test_modern_unknown_method_is_404(host: HttpHost) -> None:
    for method in ("initialize", "ping", "unknown/method"):
        body, headers = modern_request(7, method)
        r = post(host, body, headers)
        assert r.status_code == 404, method
        assert r.json()["error"]["code"] == -32601 and r.json()["id"] == 7


def test_modern_header_mismatch_is_400_32020(host: HttpHost) -> None:
    body, headers = modern_request(3, "tools/list")
    cases = [
        {**headers, "Mcp-Method": "prompts/list"},
        {**headers, "Mcp-Method": "TOOLS/LIST"},
        {k: v for k, v in headers.items() if k != "Mcp-Method"},
    ]
    for bad in cases:
        r = post(host, body, bad)
        assert r.status_code == 400, bad
        assert r.json()["error"]["code"] == -32020 and r.json()["id"] == 3
    body, headers = modern_request(4, "tools/call", {"name": "steps", "arguments": {"n": 1}})
    for bad in (
        {**headers, "Mcp-Name": "hold"},
        {k: v for k, v in headers.items() if k != "Mcp-Name"},
        {
            **headers,
            "Mcp-Name": "=?base64?c3RlcHM?=",
        },  # bad padding
    ):
        r = post(host, body, bad)
        assert r.status_code == 400 and r.json()["error"]["code"] == -32020, bad
    ok = post(host, body, {**headers, "Mcp-Name": "=?base64?c3RlcHM=?="})  # "steps"
    assert ok.status_code == 200 and "result" in ok.json()
    # the version header must equal the body's version
    body, headers = modern_request(5, "tools/list")
    body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "v999.0.0"
    r = post(host, body, headers)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32020
    # both saying an unserved version: -32022
    r = post(host, body, {**headers, "MCP-Protocol-Version": "v999.0.0"})
    assert r.status_code == 400 and r.json()["error"]["code"] == -32022
    assert r.json()["error"]["data"]["requested"] == "v999.0.0"


def test_modern_param_headers_checked_against_x_mcp_header_arguments(host: HttpHost) -> None:
    """MCP 2026-07-28 custom headers: each argument a tool's schema annotates with
    ``x-mcp-header`` travels as ``Mcp-Param-{Name}`` too, and the host refuses a call
    whose headers disagree with its body (400 + -32020) before running it."""
    arguments = {"region": "eu-west", "priority": 42, "verbose": True, "note": "x"}
    body, headers = modern_request(20, "tools/call", {"name": "routed", "arguments": arguments})
    good = {
        **headers,
        "Mcp-Param-Region": "eu-west",
        "mcp-param-priority": "42.0",  # names case-insensitive; integers compared as numbers
        "Mcp-Param-Verbose": "true",
    }
    r = post(host, body, good)
    assert r.status_code == 200 and r.json()["result"]["content"][0]["text"] == "routed to eu-west"
    sentinel = {**good, "Mcp-Param-Region": "=?base64?ZXUtd2VzdA==?="}  # "eu-west"
    assert post(host, body, sentinel).status_code == 200
    literal = dict(body, params=dict(body["params"], arguments={**arguments, "region": "ZXU="}))
    assert post(host, literal, {**good, "Mcp-Param-Region": "ZXU="}).status_code == 200
    nested = dict(
        body, params=dict(body["params"], arguments={**arguments, "target": {"zone": "b"}})
    )
    assert post(host, nested, {**good, "Mcp-Param-Zone": "b"}).status_code == 200
    missing_zone = post(host, nested, good)
    assert (
        missing_zone.status_code == 400
        and "Mcp-Param-Zone" in missing_zone.json()["error"]["message"]
    )
    bad = [
        {k: v for k, v in good.items() if k != "Mcp-Param-Region"},  # value in body, no header
        {**good, "Mcp-Param-Region": "us-east"},  # another value
        {**good, "Mcp-Param-Region": "=?base64?ZXUtd2VzdA?="},  # bad padding
        {**good, "Mcp-Param-Region": "=?base64?ZXUt!!d2VzdA==?="},  # not base64
        {**good, "Mcp-Param-Priority": "41"},
        {**good, "Mcp-Param-Verbose": "false"},
        {**good, "Mcp-Param-Zone": "b"},  # a header for an argument the body leaves out
    ]
    for headers_sent in bad:
        r = post(host, body, headers_sent)
        assert r.status_code == 400, headers_sent
        assert r.json()["error"]["code"] == -32020 and r.json()["id"] == 20, headers_sent
    twice = httpx.post(
        host.url,
        json=body,
        headers=[*good.items(), ("Mcp-Param-Region", "eu-west")],
        timeout=TIMEOUT,
    )
    assert twice.status_code == 400 and twice.json()["error"]["code"] == -32020


def test_modern_missing_envelope_is_400_32602(host: HttpHost) -> None:
    body, headers = modern_request(6, "tools/list")
    del body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    r = post(host, body, headers)
    assert r.status_code == 400 and r.json()["error"]["code"] == -32602 and r.json()["id"] == 6


def test_modern_get_and_delete_are_405(host: HttpHost) -> None:
    for method in ("GET", "DELETE"):
        r = httpx.request(method, host.url, headers={"MCP-Protocol-Version": MODERN})
        assert r.status_code == 405 and r.headers["allow"] == "POST"
    r = httpx.request("PUT", host.url, content=b"{}")
    assert r.status_code == 405 and "POST" in r.headers["allow"]
    r = httpx.get(host.url)  # no session: no standalone stream
    assert r.status_code == 405


def test_modern_notification_is_202(host: HttpHost) -> None:
    _, headers = modern_request(0, "tools/list")
    r = post(host, {"jsonrpc": "2.0", "method": "notifications/cancelled"}, headers)
    assert r.status_code == 202 and r.content == b""


def sse_events(r: httpx.Response) -> Iterator[dict[str, str]]:
    """The events of a streamed SSE response as field → value (data lines joined),
    comments left out."""
    event: dict[str, str] = {}
    for line in r.iter_lines():
        if line == "":
            if event:
                yield event
            event = {}
        elif not line.startswith(":"):
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            event[field] = event[field] + "\n" + value if field in event else value


def resume(h: HttpHost, client: httpx.Client, sid: str, last: str) -> Any:
    headers = {**session_headers(sid), "Accept": "text/event-stream", "Last-Event-ID": last}
    return client.stream("GET", h.url, headers=headers, timeout=TIMEOUT)


def test_legacy_sse_stream_resumes_with_last_event_id(host: HttpHost, tmp_path: Any) -> None:
    """MCP 2025-11-25 resumability: a 2025-11-25 client's streamed answer starts with a
    priming event (an id, empty data) and a ``retry`` hint, every event has an id, and a
    GET with ``Last-Event-ID`` gets the events after it again, then the rest of the call
    on the same stream; a second resume takes the stream over; another session cannot."""
    sid = open_session(host)
    gate = tmp_path / "go"
    body = {
        "jsonrpc": "2.0",
        "id": 30,
        "method": "tools/call",
        "params": {"name": "wait_logged", "arguments": {"path": str(gate)}},
    }
    with httpx.Client() as client:
        with client.stream(
            "POST", host.url, json=body, headers=session_headers(sid), timeout=TIMEOUT
        ) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            events = sse_events(r)
            priming = next(events)
            stream, _, n = priming["id"].rpartition("-")
            assert n == "0" and priming["data"] == "" and priming["retry"] == "1000"
            first = next(events)
            assert first["id"] == f"{stream}-1"
            assert json.loads(first["data"])["params"]["data"] == "waiting"
        # the connection is gone, the call goes on; resume from the priming event
        with resume(host, client, sid, f"{stream}-0") as old:
            old_events = sse_events(old)
            replayed = next(old_events)
            assert replayed["id"] == f"{stream}-1" and replayed["data"] == first["data"]
            # a second resume takes the stream over: the first connection's stream ends
            with resume(host, client, sid, f"{stream}-1") as r:
                assert list(old_events) == []
                events = sse_events(r)
                gate.write_text("")
                resumed, answer = next(events), next(events)
                assert resumed["id"] == f"{stream}-2"
                assert json.loads(resumed["data"])["params"]["data"] == "resumed"
                assert answer["id"] == f"{stream}-3"
                response = json.loads(answer["data"])
                assert response["id"] == 30
                assert response["result"]["content"][0]["text"] == "finished"
                assert list(events) == []  # the response ends the stream
        # an answered stream is kept: its end can be fetched again
        with resume(host, client, sid, f"{stream}-2") as r:
            assert [e["id"] for e in sse_events(r)] == [f"{stream}-3"]
        other = open_session(host)
        for who, last in ((other, f"{stream}-0"), (sid, "999-0"), (sid, f"{stream}-9")):
            with resume(host, client, who, last) as r:
                r.read()
                assert r.status_code == 400, (who, last)
                assert r.json()["error"]["code"] == -32600


def test_legacy_sse_resume_keeps_a_bounded_tail(host: HttpHost) -> None:
    """A resumable stream keeps only its last KEPT_EVENTS messages for replay: a resume
    from an older event is refused (400), one from the oldest kept replays them all."""
    from toolwire.host.serve.http.wire import KEPT_EVENTS

    sid = open_session(host)
    n = KEPT_EVENTS + 40
    body = {
        "jsonrpc": "2.0",
        "id": 32,
        "method": "tools/call",
        "params": {"name": "chatty", "arguments": {"n": n}},
    }
    with httpx.Client() as client:
        with client.stream(
            "POST", host.url, json=body, headers=session_headers(sid), timeout=TIMEOUT
        ) as r:
            ids = [e["id"] for e in sse_events(r)]
        stream = ids[0].rpartition("-")[0]
        assert ids == [f"{stream}-{i}" for i in range(n + 2)]  # priming, n logs, response
        oldest = n + 2 - KEPT_EVENTS  # the number of the oldest event kept
        with resume(host, client, sid, f"{stream}-{oldest}") as r:
            replayed = list(sse_events(r))
        assert len(replayed) == KEPT_EVENTS - 1
        assert json.loads(replayed[-1]["data"])["result"]["content"][0]["text"] == "said"
        with resume(host, client, sid, f"{stream}-{oldest - 1}") as r:
            assert len(list(sse_events(r))) == KEPT_EVENTS
        with resume(host, client, sid, f"{stream}-{oldest - 2}") as r:
            r.read()
            assert r.status_code == 400


def test_legacy_sse_before_2025_11_25_has_no_event_ids(host: HttpHost) -> None:
    """Clients before 2025-11-25 cannot parse a priming event (empty data): their
    streamed answers carry neither ids nor a priming event nor ``retry``."""
    sid = open_session(host)
    body = {
        "jsonrpc": "2.0",
        "id": 31,
        "method": "tools/call",
        "params": {"name": "steps", "arguments": {"n": 2}, "_meta": {"progressToken": "p"}},
    }
    headers = {**session_headers(sid), "MCP-Protocol-Version": "2025-06-18"}
    with (
        httpx.Client() as client,
        client.stream("POST", host.url, json=body, headers=headers, timeout=TIMEOUT) as r,
    ):
        events = list(sse_events(r))
    assert events and all(set(e) == {"event", "data"} for e in events)
    assert json.loads(events[-1]["data"])["id"] == 31


def test_legacy_session_lifecycle(host: HttpHost) -> None:
    sid = open_session(host)
    r = post(host, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, session_headers(sid))
    assert r.status_code == 200
    assert "hold" in {t["name"] for t in r.json()["result"]["tools"]}
    r = post(
        host,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "steps", "arguments": {"n": 2}, "_meta": {"progressToken": 9}},
        },
        session_headers(sid),
    )
    assert r.headers["content-type"].startswith("text/event-stream")
    messages = sse_messages(r.text)
    assert [
        m["params"]["progress"] for m in messages if "progressToken" in m.get("params", {})
    ] == [1, 2]
    assert messages[-1]["result"]["content"][0]["text"] == "done"
    # unknown method in the legacy era: JSON-RPC error under 200
    r = post(host, {"jsonrpc": "2.0", "id": 3, "method": "nope"}, session_headers(sid))
    assert r.status_code == 200 and r.json()["error"]["code"] == -32601
    r = httpx.delete(host.url, headers=session_headers(sid))
    assert r.status_code == 200
    r = post(host, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}, session_headers(sid))
    assert r.status_code == 404
    r = post(host, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, LEGACY_HEADERS)
    assert r.status_code == 400  # no session id at all

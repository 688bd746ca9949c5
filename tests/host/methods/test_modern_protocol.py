"""MCP 2026-07-28 (stateless) beside 2025-11-25 in one host, through the real host (run
in process: tests/inproc.py).

Raw JSON-RPC from tests/hostproc.py: envelope checks in their order, server/discover,
resultType and server info on every result, caching hints, the same tools, results,
progress and cancellation in both eras, per-request logging, subscriptions/listen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e_helpers import wait_until
from tests.inproc import wire_host

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
INFO = "io.modelcontextprotocol/serverInfo"
SUB = "io.modelcontextprotocol/subscriptionId"


def meta(**extra: Any) -> dict[str, Any]:
    m: dict[str, Any] = {PV: V, CAPS: {}, "io.modelcontextprotocol/clientInfo": {"name": "t"}}
    for k, v in extra.items():
        m[k if k == "progressToken" else f"io.modelcontextprotocol/{k}"] = v
    return m


def modern(h: Any, method: str, params: dict[str, Any] | None = None, **kw: Any) -> Any:
    body = dict(params or {})
    body.setdefault("_meta", meta())
    return h.request(method, body, **kw)


def test_discover(tmp_path: Path) -> None:
    with wire_host(tmp_path, initialize=False) as h:
        r = modern(h, "server/discover")["result"]
        assert r["resultType"] == "complete"
        assert r["supportedVersions"] == [V]
        assert r["capabilities"] == {"tools": {"listChanged": True}, "logging": {}}
        assert isinstance(r["instructions"], str) and str(tmp_path) in r["instructions"]
        assert r["ttlMs"] == 3_600_000 and r["cacheScope"] == "private"
        assert r["_meta"][INFO]["name"] == "toolwire"
        assert isinstance(r["_meta"][INFO]["version"], str)
        # clientInfo is optional
        bare = {PV: V, CAPS: {}}
        assert h.request("server/discover", {"_meta": bare})["result"]["resultType"] == "complete"


@pytest.mark.parametrize(
    ("method", "params", "code"),
    [
        # 1. missing or malformed envelope: -32602, whatever the method or version
        ("server/discover", None, -32602),
        ("server/discover", {}, -32602),
        ("server/discover", {"_meta": {CAPS: {}}}, -32602),
        ("tools/list", {"_meta": {PV: V}}, -32602),
        ("tools/list", {"_meta": {PV: V, CAPS: []}}, -32602),
        ("tools/list", {"_meta": {PV: 2026, CAPS: {}}}, -32602),
        ("ping", {"_meta": {PV: "1900-01-01"}}, -32602),
        ("subscriptions/listen", {}, -32602),
        # 2. unsupported version: -32022, before the method is looked at
        ("tools/list", {"_meta": {PV: "1900-01-01", CAPS: {}}}, -32022),
        ("ping", {"_meta": {PV: "2025-11-25", CAPS: {}}}, -32022),
        ("unknown/method", {"_meta": {PV: "1900-01-01", CAPS: {}}}, -32022),
        # 3. removed or unknown methods: -32601
        ("initialize", {"_meta": {PV: V, CAPS: {}}, "protocolVersion": V}, -32601),
        ("ping", {"_meta": {PV: V, CAPS: {}}}, -32601),
        ("logging/setLevel", {"_meta": {PV: V, CAPS: {}}, "level": "debug"}, -32601),
        ("resources/subscribe", {"_meta": {PV: V, CAPS: {}}, "uri": "x"}, -32601),
        ("shutdown", {"_meta": {PV: V, CAPS: {}}}, -32601),
        ("unknown/method", {"_meta": {PV: V, CAPS: {}}}, -32601),
        # 4. an unknown log level
        (
            "tools/list",
            {"_meta": {PV: V, CAPS: {}, "io.modelcontextprotocol/logLevel": "x"}},
            -32602,
        ),
    ],
)
def test_checks_in_order(tmp_path: Path, method: str, params: Any, code: int) -> None:
    with wire_host(tmp_path, initialize=False) as h:
        resp = h.request(method, params, id="req-7")
        assert resp["id"] == "req-7"
        assert resp["error"]["code"] == code, resp
        if code == -32022:
            assert resp["error"]["data"] == {
                "supported": [V],
                "requested": params["_meta"][PV],
            }
        # the connection keeps working, in both eras
        assert modern(h, "tools/list")["result"]["tools"]
        assert h.request("ping")["result"] == {}


def test_both_eras_on_one_connection(tmp_path: Path) -> None:
    with wire_host(tmp_path, initialize=False) as h:
        # a modern request before any initialize
        first = modern(h, "tools/call", {"name": "echo", "arguments": {"text": "a"}})["result"]
        init = h.initialize()["result"]
        assert init["protocolVersion"] == "2025-11-25"
        assert init["serverInfo"]["name"] == "toolwire"
        legacy = h.call("echo", {"text": "a"})["result"]
        again = modern(h, "tools/call", {"name": "echo", "arguments": {"text": "a"}})["result"]
        assert first == again
        # the same result, plus resultType and the server info
        assert "resultType" not in legacy and "_meta" not in legacy
        assert first["resultType"] == "complete"
        assert first["_meta"][INFO] == {k: init["serverInfo"][k] for k in ("name", "version")}
        assert {k: v for k, v in first.items() if k not in ("resultType", "_meta")} == legacy


def test_tools_list_cache_hints_and_order(tmp_path: Path) -> None:
    with wire_host(tmp_path) as h:
        legacy = h.request("tools/list")["result"]
        pages = [modern(h, "tools/list")["result"] for _ in range(3)]
        for page in pages:
            assert page["resultType"] == "complete"
            assert page["ttlMs"] == 60_000 and page["cacheScope"] == "private"
            assert INFO in page["_meta"]
            assert page["tools"] == legacy["tools"]
        assert "ttlMs" not in legacy and "resultType" not in legacy


def test_paging_keeps_hints_on_every_page(tmp_path: Path) -> None:
    with wire_host(tmp_path, args=["--page-size", "5"], initialize=False) as h:
        cursor = None
        names: list[str] = []
        while True:
            params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
            page = modern(h, "tools/list", params)["result"]
            assert page["ttlMs"] == 60_000 and page["cacheScope"] == "private"
            names += [t["name"] for t in page["tools"]]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert len(names) == len(set(names)) > 5
        bad = modern(h, "tools/list", {"cursor": "nonsense"})
        assert bad["error"]["code"] == -32602


def test_call_errors_are_the_same(tmp_path: Path) -> None:
    with wire_host(tmp_path) as h:
        unknown = modern(h, "tools/call", {"name": "nope"})
        assert unknown["error"]["code"] == -32602
        assert unknown["error"] == h.call("nope")["error"]
        failed = modern(h, "tools/call", {"name": "fail", "arguments": {"message": "boom"}})
        assert failed["result"]["isError"] is True
        assert failed["result"]["content"] == [{"type": "text", "text": "boom"}]
        weather = modern(h, "tools/call", {"name": "weather", "arguments": {"city": "Rome"}})
        assert weather["result"]["structuredContent"] == {"city": "Rome", "celsius": 21.5}
        details = modern(h, "tools/call", {"name": "with_details", "arguments": {"n": 2}})
        assert "toolwire/details" in details["result"]["_meta"]
        assert INFO in details["result"]["_meta"]


def test_progress_and_cancellation(tmp_path: Path) -> None:
    with wire_host(tmp_path, initialize=False) as h:
        h.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {
                    "_meta": meta(progressToken="p"),
                    "name": "progress",
                    "arguments": {"n": 3},
                },
            }
        )
        resp = h.recv_response(1)
        notes = [m for m in h.drain() if m.get("method") == "notifications/progress"]
        assert [n["params"]["progress"] for n in notes] == [1, 2, 3]
        assert all(n["params"]["progressToken"] == "p" for n in notes)
        assert resp["result"]["resultType"] == "complete"

        h.send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "_meta": meta(),
                    "name": "block",
                    "arguments": {"name": "m", "side": str(tmp_path)},
                },
            }
        )
        wait_until(lambda: (tmp_path / "m.started").exists(), what="the call to start")
        h.notify("notifications/cancelled", {"requestId": 2, "reason": "stop"})
        wait_until(lambda: (tmp_path / "m.cancelled").exists(), what="the tool to be interrupted")
        # nothing is sent for the cancelled request; the host keeps serving
        assert modern(h, "tools/list")["result"]["tools"]
        assert all(m.get("id") != 2 for m in h.drain())


def test_logs_only_when_the_request_asks(tmp_path: Path) -> None:
    with wire_host(tmp_path) as h:
        # the legacy session's level does not reach modern requests
        assert h.request("logging/setLevel", {"level": "debug"})["result"] == {}
        args = {"name": "log_at", "arguments": {"level": "warning", "data": "w"}}
        assert modern(h, "tools/call", args)["result"]["resultType"] == "complete"
        assert [m for m in h.drain() if m.get("method") == "notifications/message"] == []

        asked = dict(args, _meta=meta(logLevel="warning"))
        modern(h, "tools/call", asked)
        notes = [m for m in h.drain() if m.get("method") == "notifications/message"]
        assert [n["params"] for n in notes] == [
            {"level": "warning", "data": "w", "logger": "log_at"}
        ]

        above = dict(args, _meta=meta(logLevel="error"))
        modern(h, "tools/call", above)
        assert [m for m in h.drain() if m.get("method") == "notifications/message"] == []

        # the legacy call still logs at the session's level
        h.call("log_at", {"level": "debug", "data": "d"})
        notes = [m for m in h.drain() if m.get("method") == "notifications/message"]
        assert [n["params"]["data"] for n in notes] == ["d"]


def test_subscriptions_listen_delivers_tools_list_changes(tmp_path: Path) -> None:
    with wire_host(tmp_path, initialize=False) as h:
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "L",
                "method": "subscriptions/listen",
                "params": {
                    "_meta": meta(),
                    "notifications": {"toolsListChanged": True, "promptsListChanged": True},
                },
            }
        )
        ack = h.recv()
        assert ack == {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {"_meta": {SUB: "L"}, "notifications": {"toolsListChanged": True}},
        }
        # a second subscription that did not ask for tools changes
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "Q",
                "method": "subscriptions/listen",
                "params": {"_meta": meta(), "notifications": {"promptsListChanged": True}},
            }
        )
        assert h.recv()["params"] == {"_meta": {SUB: "Q"}, "notifications": {}}

        modern(h, "tools/call", {"name": "add_tool", "arguments": {"name": "late.one"}})
        changed = [m for m in h.drain() if m.get("method") == "notifications/tools/list_changed"]
        # tagged with the subscription's id; nothing for "Q"; no untagged legacy notification
        assert changed == [
            {
                "jsonrpc": "2.0",
                "method": "notifications/tools/list_changed",
                "params": {"_meta": {SUB: "L"}},
            }
        ]
        assert "late.one" in {t["name"] for t in modern(h, "tools/list")["result"]["tools"]}

        # the client ends the stream: no response, no further notifications
        h.notify("notifications/cancelled", {"requestId": "L"})
        h.notify("notifications/cancelled", {"requestId": "Q"})
        assert modern(h, "tools/list")["result"]["tools"]
        modern(h, "tools/call", {"name": "add_tool", "arguments": {"name": "later.one"}})
        rest = h.drain()
        assert [m for m in rest if m.get("method") == "notifications/tools/list_changed"] == []
        assert all(m.get("id") not in ("L", "Q") for m in rest)


def test_legacy_session_unchanged_beside_a_listener(tmp_path: Path) -> None:
    """A 2025-11-25 session still gets its untagged list_changed; the listener its tagged one."""
    with wire_host(tmp_path) as h:
        h.send(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "subscriptions/listen",
                "params": {"_meta": meta(), "notifications": {"toolsListChanged": True}},
            }
        )
        assert h.recv()["method"] == "notifications/subscriptions/acknowledged"
        h.call("add_tool", {"name": "late.two"})
        changed = [m for m in h.drain() if m.get("method") == "notifications/tools/list_changed"]
        assert {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} in changed
        assert {
            "jsonrpc": "2.0",
            "method": "notifications/tools/list_changed",
            "params": {"_meta": {SUB: 5}},
        } in changed
        assert len(changed) == 2


def test_modern_requests_refused_after_shutdown(tmp_path: Path) -> None:
    with wire_host(tmp_path) as h:
        assert h.request("shutdown")["result"] is None
        assert modern(h, "tools/list")["error"]["code"] == -32600


def test_only_discover_repeats_the_servers_description(tmp_path: Path) -> None:
    # Every result carries {name, version}; the description (a few hundred bytes naming
    # the sandbox) comes with server/discover and initialize, not with every call.
    with wire_host(tmp_path, initialize=False) as h:
        found = modern(h, "server/discover")["result"]["_meta"][INFO]
        call = modern(h, "tools/call", {"name": "echo", "arguments": {"text": "a"}})["result"]
        listed = modern(h, "tools/list")["result"]
        init = h.initialize()["result"]["serverInfo"]
    assert found == init
    if "description" not in init:
        pytest.skip("no sandbox here, so the server has no description to repeat")
    assert (
        call["_meta"][INFO]
        == listed["_meta"][INFO]
        == {
            "name": init["name"],
            "version": init["version"],
        }
    )

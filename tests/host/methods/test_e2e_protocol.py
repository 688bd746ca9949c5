"""End to end against the real host: every method, every error code, ids and batches."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e_helpers import FRAMINGS, PROMPT, exits_within, wait_until
from tests.inproc import wire_host

# ---------------------------------------------------------------------------- lifecycle


@pytest.mark.parametrize("framing", FRAMINGS)
def test_initialize_negotiates_and_describes_the_server(tmp_path: Path, framing: str) -> None:
    with wire_host(tmp_path, framing, initialize=False) as h:
        for version in ("2025-11-25", "2025-06-18", "2025-03-26"):
            r = h.request("initialize", {"protocolVersion": version, "capabilities": {}})
            assert r["result"]["protocolVersion"] == version
        for unknown in ("2024-11-05", "1999-01-01", 7, None):
            params = {"protocolVersion": unknown, "capabilities": {}}
            r = h.request("initialize", params)
            assert r["result"]["protocolVersion"] == "2025-11-25"
        result = r["result"]
        assert result["capabilities"] == {"tools": {"listChanged": True}, "logging": {}}
        assert result["serverInfo"]["name"] == "toolwire"
        assert isinstance(result["serverInfo"]["version"], str)
        assert str(tmp_path.resolve()) in result["instructions"]


def test_initialized_notifications_in_both_dialects_get_no_reply(tmp_path: Path) -> None:
    with wire_host(tmp_path, initialize=False) as h:
        h.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
        h.notify("notifications/initialized")
        h.notify("initialized", {})
        h.notify("some/unknown-notification", {"x": 1})
        h.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        # messages arrive in order: the first one after the notifications is the ping reply
        assert h.recv() == {"jsonrpc": "2.0", "id": "p", "result": {}}


@pytest.mark.parametrize("framing", FRAMINGS)
def test_ping_with_and_without_params(tmp_path: Path, framing: str) -> None:
    with wire_host(tmp_path, framing) as h:
        assert h.request("ping")["result"] == {}
        assert h.request("ping", {})["result"] == {}
        assert h.request("ping", {"_meta": {"x": 1}})["result"] == {}


def test_tools_list_pages_and_cursors(tmp_path: Path) -> None:
    with wire_host(tmp_path) as h:
        everything = h.request("tools/list")["result"]
        assert "nextCursor" not in everything
        all_names = [t["name"] for t in everything["tools"]]
        assert len(all_names) > 7
    with wire_host(tmp_path, args=["--page-size", "3"]) as h:
        names: list[str] = []
        cursor = None
        pages = 0
        while True:
            r = h.request("tools/list", {"cursor": cursor} if cursor else None)["result"]
            assert len(r["tools"]) <= 3
            names += [t["name"] for t in r["tools"]]
            pages += 1
            cursor = r.get("nextCursor")
            if cursor is None:
                break
            assert isinstance(cursor, str)
        assert names == all_names
        assert pages == -(-len(all_names) // 3)
        for bad in ("nonsense", "dHc6OTk5OQ==", "dHc6LTE=", "", 5):
            err = h.request("tools/list", {"cursor": bad})["error"]
            assert err["code"] == -32602, bad
        # the host still answers after the errors
        assert h.request("tools/list", {})["result"]["tools"]


def test_tools_list_changed_is_announced(tmp_path: Path) -> None:
    with wire_host(tmp_path) as h:
        assert "late.tool" not in {t["name"] for t in h.request("tools/list")["result"]["tools"]}
        h.call("add_tool", {"name": "late.tool"})
        notes = [m for m in h.drain() if m.get("method") == "notifications/tools/list_changed"]
        assert notes == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
        assert "late.tool" in {t["name"] for t in h.request("tools/list")["result"]["tools"]}
        assert h.call("late.tool")["result"]["content"][0]["text"] == "dynamic"


def test_logging_set_level_filters_tool_logs(tmp_path: Path) -> None:
    with wire_host(tmp_path) as h:
        # default threshold is info: debug is dropped, info is sent
        h.call("log_at", {"level": "debug", "data": "d0"})
        h.call("log_at", {"level": "info", "data": {"k": "i0"}})
        notes = [m for m in h.drain() if m.get("method") == "notifications/message"]
        assert [n["params"]["data"] for n in notes] == [{"k": "i0"}]
        assert notes[0]["params"]["level"] == "info"
        assert notes[0]["params"]["logger"] == "log_at"

        assert h.request("logging/setLevel", {"level": "error"}) == {
            "jsonrpc": "2.0",
            "id": h._next_id,
            "result": {},
        }
        for level in ("debug", "info", "notice", "warning", "error", "critical", "alert"):
            h.call("log_at", {"level": level, "data": level})
        notes = [m for m in h.drain() if m.get("method") == "notifications/message"]
        assert [n["params"]["level"] for n in notes] == ["error", "critical", "alert"]

        for bad in ({"level": "loud"}, {"level": 3}, {}, None):
            assert h.request("logging/setLevel", bad)["error"]["code"] == -32602
        # an invalid level in a tool's own call is the tool's error, not the host's
        r = h.call("log_at", {"level": "loud", "data": "x"})
        assert r["result"]["isError"] is True


def test_shutdown_then_requests_refused_then_exit_code_0(tmp_path: Path) -> None:
    with wire_host(tmp_path, "lsp") as h:
        assert h.request("shutdown") == {"jsonrpc": "2.0", "id": h._next_id, "result": None}
        for method in ("ping", "tools/list", "tools/call", "initialize"):
            err = h.request(method, {"name": "echo"})["error"]
            assert err["code"] == -32600, method
        h.notify("exit")
        assert exits_within(h) == 0


def test_exit_without_shutdown_exits_with_code_1(tmp_path: Path) -> None:
    with wire_host(tmp_path, "lsp") as h:
        h.notify("exit")
        assert exits_within(h) == 1


def test_server_discover_without_envelope_is_refused_at_once(tmp_path: Path) -> None:
    """server/discover is 2026-07-28 only (protocol.md §11): without the envelope it is
    -32602, answered at once, and a later initialize still opens a 2025-11-25 session."""
    with wire_host(tmp_path, initialize=False) as h:
        # the host is up (a request that is not the one timed), so the bound below
        # measures the answer, not the start-up; a client's probe waits far longer
        assert h.request("tools/list", {})["result"]["tools"]
        t0 = time.monotonic()
        err = h.request("server/discover", {"_meta": {}}, timeout=PROMPT)["error"]
        assert time.monotonic() - t0 < PROMPT
        assert err["code"] == -32602
        assert h.initialize()["result"]["protocolVersion"] == "2025-11-25"


# ---------------------------------------------------------------------------- error codes


@pytest.mark.parametrize("framing", FRAMINGS)
def test_parse_error_has_null_id_and_the_host_keeps_serving(tmp_path: Path, framing: str) -> None:
    with wire_host(tmp_path, framing) as h:
        for junk in (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', b"nope", b"\xff\xfe"):
            if framing == "lsp":
                h.send_raw(b"Content-Length: %d\r\n\r\n" % len(junk) + junk)
            else:
                h.send_raw(junk + b"\n")
            m = h.recv()
            assert m["id"] is None
            assert m["error"]["code"] == -32700
        assert h.request("ping")["result"] == {}


INVALID_REQUESTS: list[Any] = [
    {"id": 1, "method": "ping"},
    {"jsonrpc": "1.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "id": None, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
    {"jsonrpc": "2.0", "id": True, "method": "ping"},
    {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"},
    {"jsonrpc": "2.0", "id": [1], "method": "ping"},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "string"},
    {"jsonrpc": "2.0", "id": 1, "method": 42},
    {"jsonrpc": "2.0", "id": 1},
    [],
    "just a string",
    42,
]


@pytest.mark.parametrize("framing", FRAMINGS)
def test_invalid_requests_get_32600(tmp_path: Path, framing: str) -> None:
    with wire_host(tmp_path, framing) as h:
        for msg in INVALID_REQUESTS:
            h.send(msg)
            reply = h.recv()
            assert isinstance(reply, dict), msg
            assert reply["error"]["code"] == -32600, msg
            expected_id = msg.get("id") if isinstance(msg, dict) else None
            if not (type(expected_id) is int or type(expected_id) is str):
                expected_id = None
            assert reply["id"] == expected_id, msg
        assert h.request("ping")["result"] == {}


def test_unknown_method_names_it_in_data(tmp_path: Path) -> None:
    with wire_host(tmp_path) as h:
        err = h.request("no/such-method", {"x": 1})["error"]
        assert err["code"] == -32601
        assert err["data"] == {"method": "no/such-method"}
        assert "no/such-method" in err["message"]


def test_invalid_params(tmp_path: Path) -> None:
    with wire_host(tmp_path) as h:
        err = h.call("no_such_tool", {})["error"]
        assert err["code"] == -32602
        assert err["message"] == "Unknown tool: no_such_tool"
        for params in (
            [1, 2],
            {},
            {"name": 5},
            {"name": "echo", "arguments": [1]},
            {"name": "echo", "arguments": "text"},
        ):
            assert h.request("tools/call", params)["error"]["code"] == -32602, params
        assert h.request("initialize", [1])["error"]["code"] == -32602
        assert h.request("tools/list", [1])["error"]["code"] == -32602
        # arguments may be omitted or null (an empty object)
        r = h.call("gate_waiting")
        assert r["result"]["content"][0]["text"] == "0"
        r = h.request("tools/call", {"name": "gate_waiting", "arguments": None})
        assert r["result"]["content"][0]["text"] == "0"


@pytest.mark.parametrize("framing", FRAMINGS)
def test_internal_error_has_no_traceback_on_the_wire(tmp_path: Path, framing: str) -> None:
    with wire_host(tmp_path, framing) as h:
        r = h.call("unserialisable")
        assert r["error"]["code"] == -32603
        assert "Traceback" not in json.dumps(r)
        assert "data" not in r["error"]
        assert b"Traceback" not in bytes(h.raw_stdout)
        # same inside a batch: only that member fails
        h.send(
            [
                {
                    "jsonrpc": "2.0",
                    "id": "u",
                    "method": "tools/call",
                    "params": {"name": "unserialisable"},
                },
                {
                    "jsonrpc": "2.0",
                    "id": "e",
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "ok"}},
                },
            ]
        )
        batch = {m["id"]: m for m in h.recv()}
        assert batch["u"]["error"]["code"] == -32603
        assert batch["e"]["result"]["content"][0]["text"] == "ok"
        assert h.request("ping")["result"] == {}
        h.close()
        assert "Traceback" in h.stderr and "not JSON serializable" in h.stderr


# ---------------------------------------------------------------------------- ids


@pytest.mark.parametrize("framing", FRAMINGS)
def test_ids_are_echoed_exactly(tmp_path: Path, framing: str) -> None:
    ids: list[Any] = [
        "abc",
        "",
        "1",
        "ü😀",
        0,
        -1,
        -(2**31),
        2**53 + 1,
        2**63 - 1,
        -(2**63) - 1,
        2**64,
        10**30,
        -(10**30),
    ]
    with wire_host(tmp_path, framing) as h:
        for i in ids:
            r = h.request("ping", id=i)
            assert r["id"] == i and type(r["id"]) is type(i)
        # and on the raw wire: the big integer is written as an integer, not a float
        assert b'"id":-9223372036854775809' in bytes(h.raw_stdout)
        assert b'"id":1000000000000000000000000000000' in bytes(h.raw_stdout)
        # ids of tool calls too
        r = h.call("echo", {"text": "x"}, id=-(10**20))
        assert r["id"] == -(10**20)


def test_duplicate_in_flight_id_is_refused(tmp_path: Path) -> None:
    with wire_host(tmp_path) as h:
        side = tmp_path
        h.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "block", "arguments": {"name": "a", "side": str(side)}},
            }
        )
        wait_until(lambda: (side / "a.started").exists())
        h.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
        r = h.recv()
        assert r["id"] == 7 and r["error"]["code"] == -32600
        h.notify("notifications/cancelled", {"requestId": 7})
        assert h.request("ping", id=7)["result"] == {}  # the id is free again


# ---------------------------------------------------------------------------- batches


def _req(id: Any, method: str, params: Any = None) -> dict[str, Any]:
    m: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        m["params"] = params
    return m


def _note(method: str, params: Any = None) -> dict[str, Any]:
    m: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        m["params"] = params
    return m


@pytest.mark.parametrize("framing", FRAMINGS)
def test_batch_mixed_requests_notifications_and_invalid_members(
    tmp_path: Path, framing: str
) -> None:
    with wire_host(tmp_path, framing) as h:
        h.send(
            [
                _req(1, "ping"),
                _note("notifications/initialized"),
                _req("s", "tools/call", {"name": "stamp", "arguments": {"delay": 0.05}}),
                {"jsonrpc": "2.0", "id": 3},
                5,
                _req(4, "no/such"),
                _req(5, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}),
            ]
        )
        reply = h.recv()
        assert isinstance(reply, list)
        assert len(reply) == 6  # every request and every invalid member; no notification
        by_id: dict[Any, list[dict[str, Any]]] = {}
        for m in reply:
            by_id.setdefault(m["id"], []).append(m)
        assert by_id[1][0]["result"] == {}
        assert "start" in by_id["s"][0]["result"]["content"][0]["text"]
        assert by_id[3][0]["error"]["code"] == -32600
        assert [m["error"]["code"] for m in by_id[None]] == [-32600]
        assert by_id[4][0]["error"]["code"] == -32601
        assert by_id[5][0]["result"]["content"][0]["text"] == "hi"


def test_batch_of_notifications_gets_no_reply_and_empty_batch_gets_one_error(
    tmp_path: Path,
) -> None:
    with wire_host(tmp_path) as h:
        h.send([_note("notifications/initialized"), _note("initialized", {})])
        h.send([])
        err = h.recv()
        assert err == {"jsonrpc": "2.0", "id": None, "error": err["error"]}
        assert err["error"]["code"] == -32600
        h.send(_req("after", "ping"))
        assert h.recv()["id"] == "after"


def test_batch_with_a_cancelled_member(tmp_path: Path) -> None:
    with wire_host(tmp_path) as h:
        side = str(tmp_path)
        h.send(
            [
                _req(
                    "b1", "tools/call", {"name": "block", "arguments": {"name": "b1", "side": side}}
                ),
                _req(
                    "b2", "tools/call", {"name": "block", "arguments": {"name": "b2", "side": side}}
                ),
                _req("p", "ping"),
            ]
        )
        wait_until(
            lambda: (tmp_path / "b1.started").exists() and (tmp_path / "b2.started").exists()
        )
        h.notify("notifications/cancelled", {"requestId": "b1", "reason": "test"})
        h.notify("$/cancelRequest", {"id": "b2"})
        reply = h.recv()
        assert isinstance(reply, list)
        by_id = {m["id"]: m for m in reply}
        assert set(by_id) == {"b2", "p"}  # MCP-cancelled b1 gets nothing
        assert by_id["b2"]["error"]["code"] == -32800
        # b1 gets no answer, so its handler may finish unwinding after the batch's reply
        wait_until(
            lambda: (tmp_path / "b1.cancelled").exists() and (tmp_path / "b2.cancelled").exists(),
            timeout=60,
        )

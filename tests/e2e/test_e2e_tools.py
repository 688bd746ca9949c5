"""End to end: tool definitions, results, errors and loading as a client sees them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from toolwire.host.builtins import builtin_tools
from toolwire.host.tools.decorator import build_tool

from tests import inproc
from tests.e2e_helpers import WIRE_TOOLS, text_of
from tests.hostproc import RECV_TIMEOUT, REPO, HostProcess
from toolwire.models import CallToolResult, ToolDefinition

WORKERS = ["--isolation", "process"]
"""For tests of what a handler does (raises, exits, is cancelled by no one, logs from a
thread, reads its context): in the worker process, as ``toolwire serve`` runs it by
default; the host itself runs in the test's process (tests/inproc.py)."""


def _defs(h: HostProcess) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in h.request("tools/list")["result"]["tools"]}


def test_definitions_on_the_wire(tmp_path: Path) -> None:
    with inproc.wire_host(tmp_path) as h:
        defs = _defs(h)
    for d in defs.values():
        ToolDefinition.model_validate(d)  # MCP Tool shape
        assert set(d) <= {
            "name",
            "title",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
        }
        jsonschema.Draft202012Validator.check_schema(d["inputSchema"])
        assert d["inputSchema"]["type"] == "object"
    echo = defs["echo"]
    assert echo["description"] == "Echo text back unchanged."
    assert echo["inputSchema"]["properties"]["text"] == {
        "type": "string",
        "description": "the text to return.",
    }
    assert echo["inputSchema"]["required"] == ["text"]
    # ToolContext parameters are injected, never described
    assert set(defs["progress"]["inputSchema"]["properties"]) == {"n"}
    # overrides
    r = defs["renamed.tool-1"]
    assert "original_name" not in defs
    assert r["description"] == "An overridden description."
    assert r["title"] == "Pretty Title"
    assert r["annotations"] == {"readOnlyHint": True, "openWorldHint": False}
    props = r["inputSchema"]["properties"]
    assert props["count"]["description"] == "how many, from Annotated"
    assert props["label"]["description"] == "a label, from Field"
    assert props["label"]["maxLength"] == 5
    assert props["flag"]["description"] == "a flag, from the docstring."
    # pydantic model parameter: the model is the schema
    shape = defs["shape"]["inputSchema"]
    assert set(shape["properties"]) == {"name", "points"}
    assert "$defs" in shape
    # raw JSON Schema is sent as written
    assert defs["search"]["inputSchema"]["properties"]["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10,
    }
    # return annotations give output schemas
    assert defs["weather"]["outputSchema"]["properties"]["celsius"] == {"type": "number"}
    assert defs["totals"]["outputSchema"]["required"] == ["count", "names"]
    assert "outputSchema" not in defs["echo"]


def test_returns(tmp_path: Path) -> None:
    with inproc.wire_host(tmp_path) as h:
        typed = h.call("blocks_typed")["result"]
        dicts = h.call("blocks_dicts")["result"]
        for result in (typed, dicts):
            CallToolResult.model_validate(result)
            assert [b["type"] for b in result["content"]] == [
                "text",
                "image",
                "audio",
                "resource_link",
                "resource",
            ]
            assert "isError" not in result
        assert typed["content"][1] == {
            "type": "image",
            "data": typed["content"][1]["data"],
            "mimeType": "image/png",
        }
        assert typed["content"][3] == {
            "type": "resource_link",
            "uri": "file:///a.txt",
            "name": "a.txt",
            "mimeType": "text/plain",
        }
        assert typed["content"][4]["resource"] == {"uri": "file:///b.txt", "text": "bee"}
        assert dicts["content"][4]["resource"] == {"uri": "file:///b.txt", "blob": "YmVl"}

        bad = h.call("bad_block")["result"]
        assert bad["isError"] is True and "invalid result" in text_of({"result": bad})

        det = h.call("with_details", {"n": 3})["result"]
        assert det["content"] == [{"type": "text", "text": "3 items"}]
        assert det["_meta"]["toolwire/details"] == {"items": [0, 1, 2]}
        assert CallToolResult.model_validate(det).details == {"items": [0, 1, 2]}

        w = h.call("weather", {"city": "Oslo"})["result"]
        assert w["structuredContent"] == {"city": "Oslo", "celsius": 21.5}
        assert json.loads(w["content"][0]["text"]) == w["structuredContent"]
        t = h.call("totals", {"names": ["a", "b"]})["result"]
        assert t["structuredContent"] == {"count": 2, "names": ["a", "b"]}
        wrong = h.call("wrong_totals")["result"]
        assert wrong["isError"] is True
        assert "output schema" in wrong["content"][0]["text"]
        assert "structuredContent" not in wrong


def test_invalid_arguments_list_every_failing_field_and_what_was_received(tmp_path: Path) -> None:
    with inproc.wire_host(tmp_path) as h:
        # (tags.1 is an array: a number there would be coerced to its text)
        args = {"query": "", "limit": 99, "tags": ["ok", [5]], "zzz": True}
        r = h.call("search", args)["result"]
        assert r["isError"] is True
        text = r["content"][0]["text"]
        for path in ("query", "limit", "tags.1", "(root)"):
            assert f"  - {path}: " in text, (path, text)
        assert "Received arguments:" in text
        assert json.dumps(args, separators=(",", ":")) in text

        r = h.call("search", {})["result"]
        assert "  - query: Field required" in r["content"][0]["text"]
        assert "  - limit: Field required" in r["content"][0]["text"]

        # a pydantic-model parameter: the model's fields are the arguments
        args2 = {"points": [{"x": 1}, {"x": "no"}, {"y": 2}]}
        text = h.call("shape", args2)["result"]["content"][0]["text"]
        for path in ("name", "points.1.x", "points.2.x"):
            assert f"  - {path}: " in text, (path, text)

        text = h.call("renamed.tool-1", {"count": "many", "label": "too long"})["result"][
            "content"
        ][0]["text"]
        assert "  - count: " in text and "  - label: " in text

        # valid calls: the pydantic model arrives as a model, the raw schema as a dict
        assert text_of(h.call("shape", {"name": "tri", "points": [{"x": 1}] * 3})) == "tri:3:Shape"
        assert text_of(h.call("search", {"query": "q", "limit": 2})) == "qx2"
        assert text_of(h.call("renamed.tool-1", {"count": 2})) == "2xFalse"


def test_a_raising_handler_becomes_an_error_result_without_traceback(tmp_path: Path) -> None:
    with inproc.wire_host(tmp_path, args=WORKERS) as h:
        for name in ("fail", "fail_sync"):
            r = h.call(name, {"message": "disk on fire"})
            assert r["result"]["isError"] is True
            assert r["result"]["content"] == [{"type": "text", "text": "disk on fire"}]
        assert b"Traceback" not in bytes(h.raw_stdout)
        assert h.request("ping")["result"] == {}
        r = h.call("fail_unprintable")["result"]
        assert r == {"content": [{"type": "text", "text": "_Unprintable"}], "isError": True}
        for name in ("exits", "exits_sync"):
            r = h.call(name, {"code": 3})["result"]
            assert r["isError"] is True and "exit" in r["content"][0]["text"]
        assert h.request("ping")["result"] == {}


@pytest.mark.parametrize("name", ["stray_cancel", "awaits_cancelled_task", "stray_cancel_sync"])
def test_a_stray_cancellation_fails_the_call_not_the_host(tmp_path: Path, name: str) -> None:
    # A CancelledError nobody asked for used to tear down the task group: every
    # in-flight call was dropped and the host exited without a word.
    with inproc.wire_host(tmp_path, args=WORKERS) as h:
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "slow",
                "method": "tools/call",
                "params": {"name": "stamp", "arguments": {"delay": 0.5}},
            }
        )
        r = h.call(name)["result"]
        assert r["isError"] is True
        assert "without being cancelled" in r["content"][0]["text"]
        assert "start" in text_of(h.recv_response("slow"))
        assert h.request("ping")["result"] == {}


def test_tool_context_call_id_and_env(tmp_path: Path) -> None:
    with inproc.wire_host(tmp_path, args=WORKERS) as h:
        for call_id in ("abc", 0, -7, 2**70):
            info = json.loads(text_of(h.call("whoami", id=call_id)))
            assert info["call_id"] == call_id
        assert info["tool_name"] == "whoami"
        assert info["root"] == info["cwd"] == str(tmp_path.resolve())
    # without --root the root is the host's working directory
    with HostProcess(
        ["--no-builtins", "--no-entry-points", "--tools", WIRE_TOOLS], cwd=tmp_path
    ) as h:
        h.initialize()
        info = json.loads(text_of(h.call("whoami")))
        assert info["root"] == str(tmp_path.resolve())


def test_a_sync_tool_can_log(tmp_path: Path) -> None:
    with inproc.wire_host(tmp_path, args=WORKERS) as h:
        assert (
            text_of(h.call("log_sync", {"level": "warning", "data": "from a thread"})) == "logged"
        )
        notes = [m for m in h.drain() if m.get("method") == "notifications/message"]
        assert [n["params"] for n in notes] == [
            {"level": "warning", "data": "from a thread", "logger": "log_sync"}
        ]
        r = h.call("log_sync", {"level": "nope", "data": "x"})["result"]
        assert r["isError"] is True


def test_tools_by_module_name_and_no_builtins(tmp_path: Path) -> None:
    builtin_names = {build_tool(f).name for f in builtin_tools()}
    # A module name is found on the import path the host is given (PYTHONPATH, installed
    # packages), never through its working directory or root (SECURITY.md).
    with HostProcess(
        [
            "--root",
            str(tmp_path),
            "--no-entry-points",
            "--tools",
            "tests.fixtures.wire_tools",
            "--no-builtins",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(REPO)},
    ) as h:
        h.initialize()
        names = set(_defs(h))
        assert {"echo", "shape", "renamed.tool-1"} <= names
        assert not names & builtin_names
    with HostProcess(["--root", str(tmp_path), "--no-entry-points", "--tools", WIRE_TOOLS]) as h:
        h.initialize()
        names = set(_defs(h))
        assert builtin_names <= names
        assert "echo" in names


def test_a_broken_tool_file_stops_the_host_with_a_clear_message(tmp_path: Path) -> None:
    bad = tmp_path / "dup_tools.py"
    bad.write_text(
        "from toolwire.host import tool\n"
        "@tool(name='echo')\n"
        "def a() -> str:\n"
        "    '''A.'''\n"
        "    return ''\n"
    )
    with HostProcess(["--no-builtins", "--tools", WIRE_TOOLS, str(bad)]) as h:
        assert h.wait(timeout=RECV_TIMEOUT) != 0  # a bound on a hang, not a speed
    assert "already registered" in h.stderr

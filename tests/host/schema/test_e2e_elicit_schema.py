"""An elicitation form outside MCP's flat-primitive subset (MCP 2025-11-25
"Elicitation": ``requestedSchema`` is an object of string, number, integer, boolean and
enum fields) is refused at the tool with an error naming the property; nothing reaches
the client. A form inside the subset is asked as before. Through the real host, with
the module in a worker process and in-process (issue 27)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.hostproc import TOOLS_DIR, HostProcess

MODULE = str(TOOLS_DIR / "elicit_tools.py")


def _form(**fields: Any) -> dict[str, Any]:
    return {"type": "object", "properties": fields}


BAD: list[tuple[dict[str, Any], str]] = [
    (_form(address={"type": "object", "properties": {"city": {"type": "string"}}}), "address"),
    (_form(people={"type": "array", "items": {"type": "object"}}), "people"),
    (_form(tags={"type": "array", "items": {"type": "string"}}), "tags"),
    (_form(id={"anyOf": [{"type": "string"}, {"type": "integer"}]}), "id"),
    (_form(ref={"$ref": "#/$defs/Name"}), "ref"),
    (_form(name={"type": ["string", "null"]}), "name"),
    (_form(colour={"type": "string", "format": "color"}), "colour"),
    (_form(code={"type": "string", "pattern": "^[A-Z]+$"}), "code"),
    (_form(n={"type": "integer", "minimum": "1"}), "n"),
    (_form(ok={"type": "boolean", "default": "yes"}), "ok"),
    (_form(pick={"type": "string", "enum": [1, 2]}), "pick"),
    (_form(pick={"type": "string", "oneOf": [{"const": "a"}]}), "pick"),
    (_form(plain="string"), "plain"),
]

GOOD: list[dict[str, Any]] = [
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 1, "maxLength": 40},
            "email": {"type": "string", "format": "email"},
            "born": {"type": "string", "format": "date"},
            "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
            "ratio": {"type": "number"},
            "ok": {"type": "boolean", "default": True},
            "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
            "tone": {"type": "string", "oneOf": [{"const": "w", "title": "Warm"}]},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            "more": {
                "type": "array",
                "minItems": 1,
                "items": {"anyOf": [{"const": "x", "title": "X"}]},
                "default": ["x"],
            },
        },
        "required": ["name"],
    },
    {"type": "object", "properties": {}},
]


def _initialize(h: HostProcess) -> None:
    h.request(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "test", "version": "0"},
        },
    )
    h.notify("notifications/initialized")


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_a_form_outside_the_subset_is_refused_at_the_tool(tmp_path: Path, isolation: str) -> None:
    args = ["--root", str(tmp_path), "--no-builtins", "--tools", MODULE, "--isolation", isolation]
    with HostProcess(args) as h:
        _initialize(h)
        for tool in ("ask_form", "ask_raw"):
            for form, name in BAD:
                r = h.call(tool, {"form": form})["result"]
                out = r["content"][0]["text"]
                assert r.get("isError") and f"property {name!r}" in out, (tool, form, out)
                assert "elicitation" in out
            # a form that is no object at all, and required naming no property
            r = h.call(tool, {"form": {"type": "string"}})["result"]
            assert r.get("isError") and '"type": "object"' in r["content"][0]["text"], r
            form = {**_form(a={"type": "string"}), "required": ["b"]}
            r = h.call(tool, {"form": form})["result"]
            assert r.get("isError") and "'b'" in r["content"][0]["text"], r
        # nothing was asked of the client
        asked = [m for m in h.drain() if isinstance(m, dict) and m.get("method")]
        assert not [m for m in asked if m["method"] == "elicitation/create"], asked

        # a form inside the subset reaches the client unchanged
        for form in GOOD:
            h.send(
                {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
                | {"params": {"name": "ask_form", "arguments": {"form": form}}}
            )
            question = h.recv()
            while not (isinstance(question, dict) and question.get("method")):
                question = h.recv()
            assert question["method"] == "elicitation/create", question
            assert question["params"]["requestedSchema"] == form
            h.send({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}})
            r = h.recv_response(7)["result"]
            assert r["content"][0]["text"] == "answered decline", r

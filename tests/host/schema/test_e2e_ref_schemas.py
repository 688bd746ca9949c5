"""Input schemas that use ``$defs``/``$ref`` at the root, through the real host.

A tool whose only parameter is a recursive pydantic model has the schema pydantic
writes for it, ``{"$defs": {"Node": ...}, "$ref": "#/$defs/Node"}``: its fields used
to count as undeclared (the root has no ``properties`` of its own) and were dropped
before the handler saw them, so every call failed with ``name: Field required``. A raw
schema of the same shape was refused at load time. The listed schema must have
``type: "object"`` at its root (MCP) and declare the fields the handler receives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.hostproc import TOOLS_DIR
from tests.inproc import InProcHost, in_host

TOOLS = TOOLS_DIR / "ref_schema_tools.py"


@pytest.fixture
def host(tmp_path: Path) -> Any:
    with InProcHost(
        in_host(
            [
                "--root",
                str(tmp_path),
                "--no-builtins",
                "--no-entry-points",
                "--sandbox",
                "none",
                "--tools",
                str(TOOLS),
            ]
        )
    ) as h:
        init = h.initialize()
        assert "result" in init, (init, h.stderr)
        yield h


def _listed(host: InProcHost) -> dict[str, dict[str, Any]]:
    resp = host.request("tools/list", {})
    assert "result" in resp, (resp, host.stderr)
    return {t["name"]: t["inputSchema"] for t in resp["result"]["tools"]}


def _text(resp: dict[str, Any]) -> str:
    assert "result" in resp, resp
    result = resp["result"]
    text = "".join(b.get("text", "") for b in result["content"])
    assert result.get("isError") is not True, text
    return text


TREE = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}, {"name": "d"}]}


def test_every_listed_schema_has_an_object_root_that_declares_its_fields(
    host: InProcHost,
) -> None:
    schemas = _listed(host)
    expected = {
        "tree": {"name", "children"},
        "segment": {"start", "end", "label"},
        "forest": {"node", "prefix"},
        "item": {"name", "qty", "parts"},
    }
    for name, fields in expected.items():
        schema = schemas[name]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object", (name, schema)
        assert "$ref" not in schema, (name, schema)
        assert set(schema["properties"]) == fields, (name, schema)
    assert schemas["noted_item"]["type"] == "object"


def test_a_recursive_model_as_the_only_parameter(host: InProcHost) -> None:
    assert _text(host.call("tree", TREE)) == "4 a,b,c,d"
    # The listed schema accepts what the tool accepts, and refuses what it refuses.
    schema = _listed(host)["tree"]
    jsonschema.validate(TREE, schema)
    bad = {"name": "a", "children": [{"children": []}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    resp = host.call("tree", bad)
    assert resp["result"]["isError"] is True
    assert "children.0.name" in resp["result"]["content"][0]["text"]


def test_a_recursive_model_with_coercion_deep_inside(host: InProcHost) -> None:
    # A number where a name (string) is expected, two levels down, is coerced.
    args = {"name": "a", "children": [{"name": "b", "children": [{"name": 7}]}]}
    assert _text(host.call("tree", args)) == "3 a,b,7"


def test_a_non_recursive_model_with_defs_as_the_only_parameter(host: InProcHost) -> None:
    args = {"start": {"x": 1, "y": 2}, "end": {"x": "3", "y": 4}, "label": "s"}
    assert _text(host.call("segment", args)) == "s:1,2-3,4"


def test_a_recursive_model_as_one_of_two_parameters(host: InProcHost) -> None:
    assert _text(host.call("forest", {"node": TREE, "prefix": "n="})) == "n=4"


def test_a_raw_schema_whose_root_is_a_ref(host: InProcHost) -> None:
    args = {"name": "kit", "qty": "2", "parts": [{"name": "bolt", "qty": 4}], "extra": 1}
    received = json.loads(_text(host.call("item", args)))
    # Declared fields reach the handler (the string "2" coerced), undeclared ones do not.
    assert received == {"name": "kit", "qty": 2, "parts": [{"name": "bolt", "qty": 4}]}
    resp = host.call("item", {"qty": -1})
    assert resp["result"]["isError"] is True
    text = resp["result"]["content"][0]["text"]
    assert "name: Field required" in text and "qty" in text


def test_fields_declared_through_all_of_reach_the_handler(host: InProcHost) -> None:
    args = {"note": "n", "name": "kit", "qty": 1, "extra": True}
    received = json.loads(_text(host.call("noted_item", args)))
    assert received == {"note": "n", "name": "kit", "qty": 1}

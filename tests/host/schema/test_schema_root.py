"""A root ``$ref`` inlined (object_root) and the declared top-level fields (in-process)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from toolwire.host.schema import ArgumentSchema, declared_properties, object_root

NODE: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "kids": {"items": {"$ref": "#/$defs/N"}}},
    "required": ["name"],
}
SAMPLES: list[Any] = [
    {"name": "a"},
    {"name": "a", "kids": [{"name": "b"}]},
    {"name": "a", "kids": [{"kids": []}]},
    {"kids": []},
    {"name": 1},
    [],
    "x",
    {"name": "a", "other": 1},
]


def _same_meaning(a: dict[str, Any], b: dict[str, Any]) -> None:
    va, vb = jsonschema.Draft202012Validator(a), jsonschema.Draft202012Validator(b)
    for s in SAMPLES:
        assert va.is_valid(s) == vb.is_valid(s), s


def test_a_root_ref_into_defs_is_inlined_and_means_the_same() -> None:
    schema = {"$defs": {"N": NODE}, "$ref": "#/$defs/N", "description": "Root."}
    out = object_root(schema)
    assert out["type"] == "object" and "$ref" not in out
    assert out["description"] == "Root." and out["$defs"] == {"N": NODE}
    assert schema["$ref"] == "#/$defs/N"  # the input is not changed
    _same_meaning(schema, out)


def test_a_chain_of_root_refs_is_followed() -> None:
    schema = {
        "$defs": {"N": NODE, "M": {"$ref": "#/$defs/N", "description": "M."}},
        "$ref": "#/$defs/M",
    }
    out = object_root(schema)
    assert "$ref" not in out and set(out["properties"]) == {"name", "kids"}
    _same_meaning(schema, out)


@pytest.mark.parametrize(
    "root",
    [
        {"additionalProperties": False},  # would apply to the target's properties
        {"properties": {"other": {}}},
        {"required": ["other"]},  # a different value for the same keyword
    ],
)
def test_roots_that_cannot_be_merged_keep_their_ref_and_gain_the_object_type(
    root: dict[str, Any],
) -> None:
    schema = {"$defs": {"N": NODE}, "$ref": "#/$defs/N", **root}
    out = object_root(schema)
    assert out["$ref"] == "#/$defs/N" and out["type"] == "object"
    _same_meaning(schema, out)


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"N": {**NODE, "$id": "https://example.com/n"}}, "$ref": "#/$defs/N"},
        {"$defs": {"N": {**NODE, "unevaluatedProperties": False}}, "$ref": "#/$defs/N"},
        {"$ref": "#/properties/a", "properties": {"a": NODE}},
        {"$ref": "#/$defs/missing"},
        {"type": "object", "properties": {}},
    ],
)
def test_refs_that_are_not_inlined(schema: dict[str, Any]) -> None:
    out = object_root(schema)
    assert {k: v for k, v in out.items() if k != "type"} == {
        k: v for k, v in schema.items() if k != "type"
    }


def test_declared_properties_follow_ref_and_all_of() -> None:
    defs = {"N": NODE}
    assert declared_properties({"$defs": defs, "$ref": "#/$defs/N", "properties": {}}) == (
        "name",
        "kids",
    )
    both = {"properties": {"x": {}}, "allOf": [{"$ref": "#/$defs/N"}, True], "$defs": defs}
    assert declared_properties(both) == ("x", "name", "kids")
    assert ArgumentSchema(both).declared == frozenset({"x", "name", "kids"})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object"},
        {"properties": {"a": {}}, "additionalProperties": True},
        {"properties": {"a": {}}, "anyOf": [{"properties": {"b": {}}}]},
        {"$ref": "#/$defs/N", "$defs": {"N": {**NODE, "patternProperties": {"^x": {}}}}},
        {"$ref": "#/$defs/missing", "properties": {"a": {}}},
    ],
)
def test_declared_properties_unknown(schema: dict[str, Any]) -> None:
    assert declared_properties(schema) is None

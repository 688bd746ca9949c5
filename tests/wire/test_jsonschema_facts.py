"""One answer on both sides to "what type is this JSON value", "where does this ``$ref``
point" and "what type does this enum imply" (toolwire.jsonschema_facts).

The host (argument checks, coercion, error reasons), the client's provider adapters
(declarations) and the client's CLI (``key=value`` arguments) each had their own copy of
these helpers, and they disagreed: ``1.0`` was "number" in the host and the CLI and
"integer" in the adapters; ``enum: [1, 2.0]`` implied two types in the host and one in
the adapters; the CLI did not decode ``~1`` in a ``$ref``. The rule followed is JSON
Schema Draft 2020-12 Validation §6.1.1 ("integer" matches any number with a zero
fractional part), which is also what the ``jsonschema`` package decides.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from toolwire.client.adapters import json_schema_dialect
from toolwire.client.cli import accepted_types
from toolwire.host.schema import ArgumentSchema

from tests.inproc import wire_host
from toolwire.jsonschema_facts import (
    JSON_TYPE_NAMES,
    RefError,
    enum_types,
    is_type,
    json_type,
    resolve_ref,
)

VALUES: list[Any] = [None, True, False, 0, 1, -7, 1.0, -0.0, 2.5, 1e300, "", "1", [], {}]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_is_type_agrees_with_the_reference_validator(value: Any) -> None:
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER
    for name in JSON_TYPE_NAMES:
        assert is_type(value, name) is checker.is_type(value, name), name


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (1, "integer"),
        (1.0, "integer"),  # the disputed case: a zero fractional part is an integer
        (-0.0, "integer"),
        (2.5, "number"),
        (True, "boolean"),  # never a number, though Python's bool is an int
        (None, "null"),
        ("1", "string"),
        ([1], "array"),
        ({"a": 1}, "object"),
        ((1, 2), "tuple"),  # outside the JSON data model: matches no type keyword
    ],
)
def test_json_type_is_the_narrowest_name(value: Any, name: str) -> None:
    assert json_type(value) == name
    if name in JSON_TYPE_NAMES:
        assert is_type(value, name)


@pytest.mark.parametrize(
    ("node", "types"),
    [
        ({"enum": [1.0, 2.0]}, ["integer"]),
        ({"enum": [1, 2.0]}, ["integer"]),
        ({"enum": [1, 2.5]}, ["number"]),
        ({"enum": ["a", 1, True, None]}, ["string", "integer", "boolean", "null"]),
        ({"const": 3.0, "enum": ["x"]}, ["integer"]),  # const is read first
        ({"enum": []}, None),
        ({"enum": "a"}, None),
        ({"type": "string"}, None),
    ],
)
def test_enum_types(node: dict[str, Any], types: list[str] | None) -> None:
    assert enum_types(node) == types


DOC: dict[str, Any] = {
    "$defs": {"a/b": {"type": "integer"}, "m~n": {"type": "string"}, "c d": {"const": 1}},
    "prefixItems": [{"type": "null"}, {"type": "boolean"}],
}


@pytest.mark.parametrize(
    ("ref", "target"),
    [
        ("#", DOC),
        ("#/$defs/a~1b", {"type": "integer"}),
        ("#/$defs/m~0n", {"type": "string"}),
        ("#/$defs/c%20d", {"const": 1}),  # a URI fragment is %-decoded first (RFC 6901 §6)
        ("#/prefixItems/1", {"type": "boolean"}),
    ],
)
def test_resolve_ref_finds(ref: str, target: Any) -> None:
    assert resolve_ref(DOC, ref) == target


@pytest.mark.parametrize(
    "ref",
    ["other.json#/$defs/x", "#anchor", "#/$defs/missing", "#/prefixItems/01", "#/prefixItems/2"],
)
def test_resolve_ref_refuses(ref: str) -> None:
    with pytest.raises(RefError):
        resolve_ref(DOC, ref)


# ------------------------------------------------------------ both sides give the same answer


@pytest.mark.parametrize(
    ("enum", "types"),
    [([1.0, 2.0], ["integer"]), ([1, 2.5], ["number"]), (["a", 2.0], ["string", "integer"])],
)
def test_adapters_and_cli_read_an_enum_alike(enum: list[Any], types: list[str]) -> None:
    schema = {"type": "object", "properties": {"x": {"enum": enum}}}
    declared = json_schema_dialect(schema)["properties"]["x"]["type"]
    assert (declared if isinstance(declared, list) else [declared]) == types
    assert accepted_types(schema["properties"]["x"], schema) == frozenset(types)


def test_host_coerces_towards_the_integer_an_enum_implies() -> None:
    # enum [1.0, 2.0] implies "integer", so "2.0" becomes the integer 2 (the host once
    # read it as "number" and produced 2.0)
    schema = ArgumentSchema({"type": "object", "properties": {"x": {"enum": [1.0, 2.0]}}})
    out = schema.coerce({"x": "2.0"})
    assert out == {"x": 2}
    assert type(out["x"]) is int
    assert schema.is_valid(out)


def test_host_names_a_whole_float_an_integer_in_its_reasons() -> None:
    schema = ArgumentSchema({"type": "object", "properties": {"x": {"type": "string"}}})
    assert [reason for _, reason in schema.problems({"x": 1.0})] == ["expected string, got integer"]


def test_cli_follows_an_escaped_pointer() -> None:
    root = {"$defs": {"a/b": {"type": "integer"}}, "properties": {"n": {"$ref": "#/$defs/a~1b"}}}
    assert accepted_types(root["properties"]["n"], root) == frozenset({"integer"})


def test_log_level_reason_names_the_json_type(tmp_path: Path) -> None:
    with wire_host(tmp_path) as h:
        for level, name in ((3, "integer"), (3.5, "number"), ([], "array"), (None, "null")):
            err = h.request("logging/setLevel", {"level": level})["error"]
            assert err["code"] == -32602
            assert err["message"] == f"Invalid log level: expected a string, got {name}"


@pytest.mark.parametrize("name", JSON_TYPE_NAMES)
def test_host_compiled_type_checks_agree(name: str) -> None:
    # the host's compiled checks (its inlined common-shape code and its general compiler,
    # reached through a sibling keyword) give the shared module's answer for every value
    plain = ArgumentSchema({"type": "object", "properties": {"x": {"type": name}}})
    general = ArgumentSchema(
        {"type": "object", "properties": {"x": {"type": name}}, "minProperties": 0}
    )
    for value in VALUES:
        assert plain.is_valid({"x": value}) is is_type(value, name), value
        assert general.is_valid({"x": value}) is is_type(value, name), value

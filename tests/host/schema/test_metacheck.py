"""The fast metaschema check (issue 10 point 15) agrees with jsonschema's check_schema.

host/schema/metacheck.py decides most schemas in one walk; every verdict it gives must be the
one jsonschema's Draft 2020-12 metaschema check gives (with its default format checks).
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from toolwire.host.schema import ArgumentSchema
from toolwire.host.schema.metacheck import meta_verdict
from toolwire.host.tools.decorator import build_tool, tool
from toolwire.host.tools.definition import ToolDefinitionError

KEYWORDS = [
    "type",
    "properties",
    "required",
    "items",
    "prefixItems",
    "additionalProperties",
    "patternProperties",
    "enum",
    "const",
    "default",
    "description",
    "title",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "pattern",
    "format",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "$defs",
    "$ref",
    "dependentRequired",
    "dependencies",
    "contains",
    "minContains",
    "propertyNames",
    "deprecated",
    "examples",
    "x-custom",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 300),
    st.sampled_from([0.0, 2.0, 2.5, -1.5]),
    st.sampled_from(["string", "integer", "object", "nope", "", "^a+$", "(", "[a-", "#/$defs/x"]),
)
plain = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "c"]), inner)
    ),
    max_leaves=6,
)


def schemas() -> st.SearchStrategy[Any]:
    def node(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        value = st.one_of(
            plain,
            inner,
            st.lists(inner, max_size=3),
            st.dictionaries(st.sampled_from(["a", "b", "^x", "("]), inner, max_size=3),
            st.lists(st.sampled_from(["string", "integer", "a", "a"]), max_size=3),
        )
        return st.dictionaries(st.sampled_from(KEYWORDS), value, max_size=4)

    return st.recursive(st.one_of(st.booleans(), st.just({})), node, max_leaves=12)


def reference(schema: Any) -> bool:
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError:
        return False
    return True


@settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck))
@given(schemas())
def test_the_fast_verdict_is_jsonschemas(schema: Any) -> None:
    verdict = meta_verdict(schema)
    if verdict is not None:
        assert verdict == reference(schema), schema


@pytest.mark.parametrize(
    ("schema", "valid"),
    [
        ({"type": "object", "properties": {"a": {"type": "string"}}}, True),
        ({"type": "strnig"}, False),
        ({"type": ["string", "string"]}, False),
        ({"type": []}, False),
        ({"properties": {"a": {"type": 3}}}, False),
        ({"properties": {"a": "string"}}, False),
        ({"required": ["a", "a"]}, False),
        ({"required": "a"}, False),
        ({"minLength": -1}, False),
        ({"minLength": 2.0}, True),
        ({"multipleOf": 0}, False),
        ({"pattern": "("}, False),
        ({"patternProperties": {"(": {}}}, False),
        ({"anyOf": []}, False),
        ({"items": [{"type": "string"}]}, False),
        ({"enum": "a"}, False),
        ({"x-anything": {"type": 5}}, True),
        ({"dependencies": {"a": ["b"], "c": {"type": "string"}}}, True),
    ],
)
def test_known_cases(schema: Any, valid: bool) -> None:
    assert meta_verdict(schema) is valid
    assert reference(schema) is valid


@pytest.mark.parametrize(
    "schema",
    [
        {"$id": "https://example.com/s"},
        {"$schema": "http://json-schema.org/draft-07/schema#"},
        {"$anchor": "x"},
        {"const": float("nan")},
        {"enum": [(1, 2)]},
    ],
)
def test_what_the_walk_does_not_decide_goes_to_jsonschema(schema: Any) -> None:
    assert meta_verdict(schema) is None


def test_a_malformed_raw_schema_is_still_refused_at_registration_with_jsonschemas_message() -> None:
    def handler(args: dict[str, Any]) -> str:
        """Handler."""
        return "x"

    bad = {"type": "object", "properties": {"n": {"type": "integer", "minimum": "zero"}}}
    with pytest.raises(ToolDefinitionError) as e:
        build_tool(tool(input_schema=bad)(handler))
    assert "invalid input_schema" in str(e.value) and "'zero' is not of type 'number'" in str(
        e.value
    )


def test_checks_are_compiled_on_first_use() -> None:
    s = ArgumentSchema({"type": "object", "properties": {"a": {"type": "string"}}})
    assert s._check is None
    assert s.is_valid({"a": "x"}) and not s.is_valid({"a": 1})
    assert s._check is not None and s.fast

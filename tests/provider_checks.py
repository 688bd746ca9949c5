"""Checks of provider declarations, written from each provider's documented rules, and
an example-call generator (tests only).

* :func:`check_declarations`: a request's tool declarations against the provider's
  own SDK request types (``openai``, ``anthropic``, ``google-genai``; the google-genai
  models forbid unknown keys and check enums, the OpenAI/Anthropic ones are TypedDicts
  checked for members and types) and against the documented rules the SDKs do not
  check: OpenAI strict mode (every object closed, every property required, only the
  supported keywords, at most 10 levels), Gemini's OpenAPI subset (no ``$ref``, string
  enums, objects with properties, no ``prefixItems``), the name rules.
* :func:`example`: an argument value shaped by a provider's parameter schema, the way a
  model following the declaration writes one (``variant`` picks other enum members,
  union arms, optional fields and null).
"""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
from anthropic.types import ToolParam
from google.genai import types as gtypes
from openai.types.chat import ChatCompletionToolParam
from openai.types.responses import FunctionToolParam
from pydantic import TypeAdapter

_OPENAI_TOOL = TypeAdapter(ChatCompletionToolParam)
_RESPONSES_TOOL = TypeAdapter(FunctionToolParam)
_ANTHROPIC_TOOL = TypeAdapter(ToolParam)

OPENAI_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
GEMINI_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,62}")

# OpenAI structured outputs, "Supported schemas".
STRICT_ALLOWED = {
    "type", "description", "enum", "const", "properties", "required", "additionalProperties",
    "items", "anyOf", "$defs", "$ref", "pattern", "format", "minimum", "maximum",
    "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}  # fmt: skip
# Gemini API reference, Schema (the OpenAPI subset used for function parameters).
GEMINI_ALLOWED = {
    "type", "format", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum",
    "maximum", "title",
}  # fmt: skip
GEMINI_TYPES = {"string", "number", "integer", "boolean", "array", "object"}


def check_openai_strict(schema: Any, depth: int = 1) -> None:
    """Assert OpenAI's strict-mode rules on a parameters schema."""
    assert isinstance(schema, dict), schema
    assert set(schema) <= STRICT_ALLOWED, set(schema) - STRICT_ALLOWED
    t = schema.get("type")
    types = t if isinstance(t, list) else [t]
    if "object" in types:
        assert depth <= 10
        assert schema.get("additionalProperties") is False, schema
        props = schema.get("properties", {})
        assert sorted(schema.get("required", [])) == sorted(props), schema
        for sub in props.values():
            check_openai_strict(sub, depth + 1)
    if "items" in schema:
        check_openai_strict(schema["items"], depth)
    for arm in schema.get("anyOf", []):
        check_openai_strict(arm, depth)
    for sub in schema.get("$defs", {}).values():
        check_openai_strict(sub, depth)
    ref = schema.get("$ref")
    assert ref is None or ref == "#" or ref.startswith("#/$defs/"), ref


def check_gemini_schema(schema: Any) -> None:
    """Assert Gemini's OpenAPI-subset rules on a parameters schema (recursively)."""
    assert isinstance(schema, dict), schema
    assert set(schema) <= GEMINI_ALLOWED, set(schema) - GEMINI_ALLOWED
    if "anyOf" in schema:
        assert schema["anyOf"], schema
        for arm in schema["anyOf"]:
            check_gemini_schema(arm)
        return
    t = schema.get("type")
    assert t in GEMINI_TYPES, schema
    if "enum" in schema:
        assert t == "string" and all(isinstance(v, str) for v in schema["enum"]), schema
    if t == "object":
        props = schema.get("properties")
        assert isinstance(props, dict) and props, f"object without properties: {schema}"
        assert set(schema.get("required", [])) <= set(props)
        for sub in props.values():
            check_gemini_schema(sub)
    if t == "array":
        check_gemini_schema(schema["items"])


def check_declarations(api: str, declarations: list[dict[str, Any]]) -> None:
    """Assert one request's declarations are what ``api`` accepts."""
    names = []
    for decl in declarations:
        if api == "openai-chat":
            _OPENAI_TOOL.validate_python(decl)
            fn = decl["function"]
            name, params, strict = fn["name"], fn["parameters"], fn.get("strict", False)
        elif api == "openai-responses":
            _RESPONSES_TOOL.validate_python(decl)
            name, params, strict = decl["name"], decl["parameters"], decl["strict"]
        elif api == "anthropic":
            _ANTHROPIC_TOOL.validate_python(decl)
            name, params, strict = decl["name"], decl["input_schema"], False
        else:
            name, params, strict = decl["name"], decl.get("parameters"), False
        names.append(name)
        if api == "gemini":
            assert GEMINI_NAME.fullmatch(name), name
            if params is not None:
                check_gemini_schema(params)
                assert params["type"] == "object"
            continue
        assert OPENAI_NAME.fullmatch(name), name
        assert params["type"] == "object", params
        if strict:
            check_openai_strict(params)
        else:
            jsonschema.validators.validator_for(
                params, default=jsonschema.Draft202012Validator
            ).check_schema(params)
    if api == "gemini":
        gtypes.Tool.model_validate({"function_declarations": declarations})
    assert len(set(names)) == len(names), names


# --------------------------------------------------------------------------- examples


def _resolve(root: dict[str, Any], ref: str) -> Any:
    node: Any = root
    for part in ref.lstrip("#").split("/")[1:]:
        node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def example(schema: Any, variant: int = 0, root: Any = None, depth: int = 0) -> Any:
    """A value valid for ``schema`` (JSON Schema or Gemini's subset).

    Deep down (a recursive model), optional fields are left out, arrays are empty and
    a null arm is taken when there is one, as a model ends a recursive structure.
    """
    root = schema if root is None else root
    if not isinstance(schema, dict) or schema == {}:
        return variant
    deep = depth >= 3
    if "$ref" in schema:
        return example(_resolve(root, schema["$ref"]), variant, root, depth + 1)
    if schema.get("nullable") and (deep or variant % 3 == 2):
        return None
    if "anyOf" in schema:
        arms = schema["anyOf"]
        nulls = [a for a in arms if a.get("type") == "null"]
        if nulls and (deep or variant % 3 == 2):
            return None
        real = [a for a in arms if a.get("type") != "null"] or arms
        return example(real[variant % len(real)], variant, root, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        values = schema["enum"]
        return values[variant % len(values)]
    t = schema.get("type")
    if isinstance(t, list):
        if "null" in t and (deep or variant % 3 == 2):
            return None
        t = next(x for x in t if x != "null")
    if t is None:
        t = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if t == "string":
        if "JSON text" in str(schema.get("description", "")):
            return json.dumps(variant)
        if schema.get("format") == "date-time":
            return "2024-01-02T03:04:05Z"
        size = max(schema.get("minLength", 1), 1)
        size = min(size, schema.get("maxLength", size))
        return "x" * size
    if t in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum"))
        hi = schema.get("maximum", schema.get("exclusiveMaximum"))
        if lo is not None and hi is not None:
            mid = (lo + hi) / 2
            return int(mid) if t == "integer" and (lo + 1 < hi) else mid
        if lo is not None:
            return lo + 1
        if hi is not None:
            return hi - 1
        return variant + (0 if t == "integer" else 0.5)
    if t == "boolean":
        return variant % 2 == 0
    if t == "null":
        return None
    if t == "array":
        prefix = schema.get("prefixItems")
        if prefix:
            return [example(p, variant, root, depth + 1) for p in prefix]
        least = schema.get("minItems", 0)
        count = least if deep else max(least, 1 + variant % 2)
        count = min(count, schema.get("maxItems", count))
        return [
            example(schema.get("items", {}), variant + i, root, depth + 1) for i in range(count)
        ]
    if t == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        out = {
            k: example(v, variant, root, depth + 1)
            for k, v in props.items()
            if k in required or (not deep and variant % 2 == 1)
        }
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and not deep:
            out["k1"] = example(extra, variant, root, depth + 1)
        return out
    raise AssertionError(f"no example for {schema}")

"""Checks of provider declarations, written from each provider's documented rules, and
an example-call generator (tests only).

* :func:`check_declarations`: a request's tool declarations against the provider's
  own SDK request types (``openai``, ``anthropic``, ``google-genai``; the google-genai
  models forbid unknown keys and check enums, the OpenAI/Anthropic ones are TypedDicts
  checked for members and types) and against the documented rules the SDKs do not
  check: OpenAI strict mode (every object closed, every property required, only the
  supported keywords, at most 10 levels), Gemini's OpenAPI subset (no ``$ref``, string
  enums without empty members, objects with properties, no ``prefixItems``), the name
  rules, the root of the parameters (an object, no alternatives at its top level:
  Anthropic and OpenAI refuse them) and OpenAI's ``items`` on every array schema.
* :func:`check_tool_result`: a tool result in a provider's format, against the SDK's
  message types and the documented rules they do not check (Anthropic: ``is_error``
  needs content, no blank text blocks; every provider: an error says something).
* :func:`example`: an argument value shaped by a provider's parameter schema, the way a
  model following the declaration writes one (``variant`` picks other enum members,
  union arms, optional fields and null).
"""

from __future__ import annotations

import functools
import json
import re
from types import ModuleType
from typing import Any, NamedTuple

import jsonschema
from pydantic import TypeAdapter


class _Sdk(NamedTuple):
    """The providers' SDK request types the checks validate against."""

    openai_tool: TypeAdapter[Any]
    responses_tool: TypeAdapter[Any]
    anthropic_tool: TypeAdapter[Any]
    anthropic_result: TypeAdapter[Any]
    chat_message: TypeAdapter[Any]
    responses_item: TypeAdapter[Any]
    genai: ModuleType
    """``google.genai.types`` (pydantic models: ``Tool``, ``Part``, ``Content``...)."""


@functools.cache
def sdk() -> _Sdk:
    """The SDK types, imported and adapted on first use: ``anthropic``, ``openai`` and
    ``google-genai`` take seconds of CPU to import, and every xdist worker collects the
    modules that import this one, while only the worker running a provider test needs
    them."""
    from anthropic.types import ToolParam, ToolResultBlockParam
    from google.genai import types as gtypes
    from openai.types.chat import ChatCompletionToolMessageParam, ChatCompletionToolParam
    from openai.types.responses import FunctionToolParam, ResponseInputItemParam

    return _Sdk(
        openai_tool=TypeAdapter(ChatCompletionToolParam),
        responses_tool=TypeAdapter(FunctionToolParam),
        anthropic_tool=TypeAdapter(ToolParam),
        anthropic_result=TypeAdapter(ToolResultBlockParam),
        chat_message=TypeAdapter(ChatCompletionToolMessageParam),
        responses_item=TypeAdapter(ResponseInputItemParam),
        genai=gtypes,
    )


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
        # "enum[0]: cannot be empty" (Gemini refuses the request).
        assert all(v.strip() for v in schema["enum"]), f"empty enum member: {schema}"
    if t == "object":
        props = schema.get("properties")
        assert isinstance(props, dict) and props, f"object without properties: {schema}"
        assert set(schema.get("required", [])) <= set(props)
        for sub in props.values():
            check_gemini_schema(sub)
    if t == "array":
        check_gemini_schema(schema["items"])


# Anthropic: "input_schema does not support oneOf, allOf, or anyOf at the top level";
# OpenAI (strict or not): "schema must have type 'object' and not have
# 'oneOf'/'anyOf'/'allOf'/'enum'/'not' at the top level".
ROOT_REFUSED = {
    "anthropic": {"oneOf", "allOf", "anyOf"},
    "openai": {"oneOf", "anyOf", "allOf", "enum", "not"},
}
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "if", "then", "else", "contains")


def subschemas(schema: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every schema inside ``schema`` (itself first), with its path of keywords."""
    out = [(path, schema)]
    if not isinstance(schema, dict):
        return out
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                out += subschemas(sub, (*path, key, name))
    for key in _SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                out += subschemas(sub, (*path, key, str(i)))
    for key in _SCHEMA_ONE:
        sub = schema.get(key)
        if isinstance(sub, list):  # the older tuple form of items
            for i, arm in enumerate(sub):
                out += subschemas(arm, (*path, key, str(i)))
        elif isinstance(sub, dict | bool):
            out += subschemas(sub, (*path, key))
    return out


def check_openai_items(schema: Any) -> None:
    """Assert OpenAI's "array schema missing items" rule: every array schema (a type
    that is or lists "array", or a tuple's ``prefixItems``), at any depth, has an
    object schema in ``items``."""
    for path, node in subschemas(schema):
        if not isinstance(node, dict):
            continue
        t = node.get("type")
        is_array = t == "array" or (isinstance(t, list) and "array" in t)
        if is_array or "prefixItems" in node:
            assert isinstance(node.get("items"), dict), (
                f"array schema missing items at {path}: {node}"
            )


def check_root(api: str, params: Any) -> None:
    """Assert the root rules of ``api``'s parameters: an object schema with no
    alternatives (or other refused keywords) at its top level."""
    assert isinstance(params, dict) and params.get("type") == "object", params
    refused = ROOT_REFUSED["anthropic" if api == "anthropic" else "openai"]
    assert not refused & set(params), f"{api}: {sorted(refused & set(params))} at the top level"


def check_declarations(api: str, declarations: list[dict[str, Any]]) -> None:
    """Assert one request's declarations are what ``api`` accepts."""
    names = []
    for decl in declarations:
        if api == "openai-chat":
            sdk().openai_tool.validate_python(decl)
            fn = decl["function"]
            name, params, strict = fn["name"], fn["parameters"], fn.get("strict", False)
        elif api == "openai-responses":
            sdk().responses_tool.validate_python(decl)
            name, params, strict = decl["name"], decl["parameters"], decl["strict"]
        elif api == "anthropic":
            sdk().anthropic_tool.validate_python(decl)
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
        check_root(api, params)
        if api != "anthropic":
            check_openai_items(params)
        if strict:
            check_openai_strict(params)
        else:
            jsonschema.validators.validator_for(
                params, default=jsonschema.Draft202012Validator
            ).check_schema(params)
    if api == "gemini":
        sdk().genai.Tool.model_validate({"function_declarations": declarations})
    assert len(set(names)) == len(names), names


def _texts(api: str, payload: dict[str, Any]) -> list[str]:
    """The text parts of a tool result in ``api``'s format."""
    if api == "anthropic":
        content = payload.get("content", [])
        if isinstance(content, str):
            return [content]
        return [b["text"] for b in content if b.get("type") == "text"]
    if api == "openai-chat":
        return [payload["content"]]
    if api == "openai-responses":
        output = payload["output"]
        if isinstance(output, str):
            return [output]
        return [p["text"] for p in output if p.get("type") == "input_text"]
    return [str(v) for v in payload["functionResponse"]["response"].values()]


def check_tool_result(api: str, payload: dict[str, Any], *, is_error: bool) -> None:
    """Assert one tool result in ``api``'s format is what ``api`` accepts, and that an
    error result tells the model something.

    Anthropic: the SDK's ``ToolResultBlockParam``; ``is_error`` with empty ``content``
    is refused, and so is a text block that is empty or only white space. OpenAI: the
    SDK's tool message / ``function_call_output`` item types; an ``input_text`` part
    is not empty. Gemini: the SDK's ``Part`` model. Every API: an error result's text
    is not blank (OpenAI's formats have no error flag: a blank text reads as success).
    """
    texts = _texts(api, payload)
    if api == "anthropic":
        sdk().anthropic_result.validate_python(payload)
        assert payload.get("is_error", False) is is_error, payload
        if is_error:
            assert payload.get("content"), f"is_error with empty content: {payload}"
        content = payload.get("content", [])
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "text":
                assert block["text"].strip(), f"blank text block: {payload}"
    elif api == "openai-chat":
        sdk().chat_message.validate_python(payload)
        assert payload["role"] == "tool" and isinstance(payload["content"], str), payload
    elif api == "openai-responses":
        sdk().responses_item.validate_python(payload)
        assert payload["type"] == "function_call_output", payload
        if isinstance(payload["output"], list):
            assert payload["output"], payload
            assert all(t for t in texts), f"empty input_text part: {payload}"
    else:
        sdk().genai.Part.model_validate(payload)
        response = payload["functionResponse"]["response"]
        assert list(response) == ["error" if is_error else "output"], payload
    if is_error:
        assert any(t.strip() for t in texts), f"{api}: an error result that says nothing: {payload}"


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

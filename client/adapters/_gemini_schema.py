"""Gemini's parameter schemas: the OpenAPI 3.0 subset of its ``Schema`` object.

Gemini's ``FunctionDeclaration.parameters`` takes ``type``, ``description``,
``nullable``, ``enum`` (non-empty strings only), ``properties``/``required`` (an object needs at
least one property), ``items``, ``anyOf``, ``minItems``/``maxItems``,
``minLength``/``maxLength``, ``minimum``/``maximum`` and ``format`` (Gemini API reference,
``Schema``). No ``$ref``/``$defs``, no ``prefixItems``, no ``additionalProperties``, no
``const``, no type lists. :func:`gemini_parameters` rewrites a host schema into that
subset so a call shaped by it still validates on the host, and returns the way back:

======================================  ===========================  ===========================
host schema                             declared to Gemini as        mapped back
======================================  ===========================  ===========================
local ``$ref`` (any JSON Pointer)       its target, inlined          as is
recursive ``$ref``                      inlined 3 times, then JSON    JSON text parsed
                                        text (a string)
``enum``/``const`` of non-strings       string enum of the values'   each label to its value
(``Literal[1, 2]``, int ``Enum``), or   JSON text (``"1"``; a blank
with a blank string                     string as ``'""'``: Gemini
                                        refuses an empty member)
type list / ``anyOf`` / ``oneOf``       ``anyOf`` of the converted   by the value's JSON type
                                        arms; ``null`` → nullable
``allOf``                               arms merged                  as is
object without properties but with      array of ``{key, value}``    array to object
``additionalProperties`` (``dict``)     pairs
object without any properties,          JSON text (a string)         JSON text parsed
value of any type (``{}``, ``Any``)
tuple (``prefixItems``)                 object with properties       object to array
                                        ``"0"``, ``"1"``, ...
``exclusiveMinimum``/``Maximum``        ``minimum``/``maximum`` ±1   as is
                                        (integers), else the bound
                                        with a note
``pattern``, other formats, ``title``,  dropped (``pattern`` and     as is
``default``, other keywords             ``format`` noted in the
                                        description)
======================================  ===========================  ===========================
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from toolwire.jsonschema_facts import is_type

from ._schema import (
    MAX_REF_EXPANSIONS,
    Restore,
    inferred_type,
    merge_schemas,
    resolve_pointer,
    same,
)

__all__ = ["GEMINI_KEYWORDS", "gemini_parameters", "gemini_schema"]

GEMINI_KEYWORDS = frozenset(
    {
        "type",
        "description",
        "nullable",
        "enum",
        "properties",
        "required",
        "items",
        "anyOf",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "format",
    }
)
"""The keywords the converted schemas use (all in Gemini's ``Schema``)."""

_SCALARS = ("string", "number", "integer", "boolean")
_QUOTED = "a value in double quotes stands for the text inside them"
_FORMATS = {"string": {"date-time"}, "integer": {"int32", "int64"}, "number": {"float", "double"}}


def _note(description: Any, note: str) -> str:
    return f"{description} ({note})" if isinstance(description, str) and description else note


def _json_text(node: Mapping[str, Any], why: str) -> tuple[dict[str, Any], Restore]:
    out = {"type": "string", "description": _note(node.get("description"), why)}
    return out, _parse_json_text


def _always_null(node: Mapping[str, Any]) -> tuple[dict[str, Any], Restore]:
    out = {
        "type": "string",
        "nullable": True,
        "description": _note(node.get("description"), "always null"),
    }
    return out, _to_null


def _to_null(value: Any) -> Any:
    return None


def _parse_json_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _matches(value: Any, out: Mapping[str, Any]) -> bool:
    if value is None:
        return bool(out.get("nullable"))
    t = out.get("type")
    return isinstance(t, str) and is_type(value, t)


def gemini_parameters(schema: Mapping[str, Any]) -> tuple[dict[str, Any], Restore]:
    """The Gemini form of a parameters schema and its way back (module docstring).

    Args:
        schema: the tool's input schema (JSON Schema, any draft's local references).

    Returns:
        ``(parameters, restore)``: ``parameters`` uses only :data:`GEMINI_KEYWORDS`;
        ``restore(arguments)`` maps arguments shaped by it back to ``schema``'s shape.
        An object without properties comes back as ``{"type": "object"}`` (a tool
        without parameters: leave ``parameters`` out of its declaration).
    """
    root = dict(schema)

    def resolve(node: Any, stack: tuple[str, ...]) -> tuple[Any, tuple[str, ...], bool]:
        """Follow ``$ref`` chains; the flag is False when one is unusable or too deep."""
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            target = resolve_pointer(root, ref)
            if not isinstance(target, dict) or stack.count(ref) >= MAX_REF_EXPANSIONS:
                return node, stack, False
            stack = (*stack, ref)
            node = merge_schemas(target, {k: v for k, v in node.items() if k != "$ref"})
        return node, stack, True

    def convert(node: Any, stack: tuple[str, ...]) -> tuple[dict[str, Any], Restore]:
        if node is True or node == {} or not isinstance(node, dict):
            return _json_text({}, "any JSON value, written as JSON text")
        node, stack, usable = resolve(node, stack)
        if not usable:
            return _json_text(node, "JSON text: a value of the same shape as its parent")
        node = dict(node)
        for key in ("allOf",):
            arms = node.pop(key, None)
            if isinstance(arms, list):
                for arm in arms:
                    part, stack2, ok = resolve(arm, stack)
                    if not ok:
                        return _json_text(node, "JSON text")
                    node = merge_schemas(part, node)
                    stack = stack2
                return convert(node, stack)
        nullable = False
        arms = node.pop("anyOf", None)
        one_of = node.pop("oneOf", None)
        if arms is None:
            arms = one_of
        t = node.get("type")
        if t is None:
            t = inferred_type(node)
        listed = "enum" in node or "const" in node
        if isinstance(t, list):
            nullable = "null" in t
            kinds = [k for k in t if k != "null"]
            if len(kinds) == 1:
                t = kinds[0]
            elif kinds and arms is None and not listed:
                arms = [{"type": k} for k in kinds]
                t = None
            else:
                t = None
        elif t == "null":
            return _always_null(node)
        if "const" in node:
            node["enum"] = [node.pop("const")]
        enum = node.get("enum")
        if isinstance(enum, list) and None in enum:
            nullable = True
            enum = [v for v in enum if v is not None]
        if isinstance(arms, list) and arms:
            real = []
            for arm in arms:
                a, _, ok = resolve(arm, stack)
                if isinstance(a, dict) and (
                    a.get("type") == "null" or ("const" in a and a["const"] is None)
                ):
                    nullable = True
                else:
                    real.append(arm)
            shared = {k: v for k, v in node.items() if k in ("description",)}
            if len(real) == 1:
                only = real[0]
                out, restore = convert(
                    merge_schemas(only, shared) if isinstance(only, dict) else only, stack
                )
            elif real:
                branches = [convert(a, stack) for a in real]
                out = {"anyOf": [b for b, _ in branches]}
                if "description" in shared:
                    out["description"] = shared["description"]
                restore = _anyof_restore(branches)
            else:
                out, restore = _always_null(node)
            if nullable:
                out["nullable"] = True
            return out, restore
        if t is None:
            if "properties" in node or "additionalProperties" in node:
                t = "object"
            elif "items" in node or "prefixItems" in node:
                t = "array"
            elif isinstance(enum, list) and enum:
                t = inferred_type({"enum": enum})
                t = t if isinstance(t, str) else None
        if t is None:
            if isinstance(enum, list) and enum:
                t = "string"  # a mixed enum: labels below
            else:
                out, restore = _json_text(node, "any JSON value, written as JSON text")
                if nullable:
                    out["nullable"] = True
                return out, restore
        out = {}
        restore = same
        description = node.get("description")
        if t in _SCALARS and isinstance(enum, list) and enum:
            if t == "string" and all(isinstance(v, str) and v.strip() for v in enum):
                out = {"type": "string", "enum": list(enum)}
            else:
                # Gemini takes string enums only, and refuses an empty member ("cannot
                # be empty"): other values and blank strings go by their JSON text.
                labels = [v if isinstance(v, str) and v.strip() else json.dumps(v) for v in enum]
                if len(set(labels)) < len(labels):
                    labels = [json.dumps(v) for v in enum]
                out = {"type": "string", "enum": labels}
                back = dict(zip(labels, enum, strict=True))
                restore = _enum_restore(back)
                if any(isinstance(v, str) and v != label for label, v in back.items()):
                    description = _note(description, _QUOTED)
        elif t in _SCALARS:
            out = {"type": t}
            fmt = node.get("format")
            if isinstance(fmt, str):
                if fmt in _FORMATS.get(t, ()):
                    out["format"] = fmt
                else:
                    description = _note(description, f"format: {fmt}")
            if t == "string":
                for k in ("minLength", "maxLength"):
                    if isinstance(node.get(k), int):
                        out[k] = node[k]
                if isinstance(node.get("pattern"), str):
                    description = _note(description, f"pattern: {node['pattern']}")
            else:
                for k in ("minimum", "maximum"):
                    if isinstance(node.get(k), int | float) and not isinstance(node[k], bool):
                        out[k] = node[k]
                for k, bound, step in (
                    ("exclusiveMinimum", "minimum", 1),
                    ("exclusiveMaximum", "maximum", -1),
                ):
                    v = node.get(k)
                    if isinstance(v, int | float) and not isinstance(v, bool):
                        if t == "integer" and float(v).is_integer():
                            out[bound] = int(v) + step
                        else:
                            out[bound] = v
                            word = "greater" if step > 0 else "less"
                            description = _note(description, f"{word} than {v}")
        elif t == "object":
            out, restore = convert_object(node, stack)
        elif t == "array":
            out, restore = convert_array(node, stack)
        else:
            out, restore = _json_text(node, "JSON text")
        if isinstance(description, str) and description and "description" not in out:
            out["description"] = description
        if nullable:
            out["nullable"] = True
        return out, restore

    def convert_object(
        node: dict[str, Any], stack: tuple[str, ...]
    ) -> tuple[dict[str, Any], Restore]:
        props = node.get("properties")
        addl = node.get("additionalProperties")
        if isinstance(props, dict) and props:
            out_props: dict[str, Any] = {}
            restores: dict[str, Restore] = {}
            for name, sub in props.items():
                conv, r = convert(sub, stack)
                out_props[str(name)] = conv
                if r is not same:
                    restores[str(name)] = r
            out: dict[str, Any] = {"type": "object", "properties": out_props}
            required = node.get("required")
            if isinstance(required, list):
                names = [r for r in dict.fromkeys(required) if r in props]
                if names:
                    out["required"] = names
            return out, (_object_restore(restores) if restores else same)
        if isinstance(addl, dict) or addl is True:
            value, r = convert(addl, stack)
            pair = {
                "type": "object",
                "properties": {"key": {"type": "string"}, "value": value},
                "required": ["key", "value"],
            }
            out = {
                "type": "array",
                "items": pair,
                "description": _note(
                    node.get("description"), "a map, as a list of key/value pairs"
                ),
            }
            return out, _pairs_restore(r)
        return _json_text(node, "a JSON object, written as JSON text")

    def convert_array(
        node: dict[str, Any], stack: tuple[str, ...]
    ) -> tuple[dict[str, Any], Restore]:
        prefix = node.get("prefixItems")
        items = node.get("items")
        if isinstance(items, list):
            prefix, items = items, None
        out: dict[str, Any]
        if isinstance(prefix, list) and prefix:
            props: dict[str, Any] = {}
            restores: list[Restore] = []
            for i, sub in enumerate(prefix):
                conv, r = convert(sub, stack)
                props[str(i)] = conv
                restores.append(r)
            least = node.get("minItems")
            least = least if isinstance(least, int) else len(prefix)
            out = {
                "type": "object",
                "properties": props,
                "description": _note(
                    node.get("description"),
                    f"a list of {len(prefix)} items, given as an object keyed by position",
                ),
            }
            required = [str(i) for i in range(min(least, len(prefix)))]
            if required:
                out["required"] = required
            return out, _tuple_restore(restores)
        conv, r = convert(items, stack) if items is not None else convert({}, stack)
        out = {"type": "array", "items": conv}
        for k in ("minItems", "maxItems"):
            if isinstance(node.get(k), int):
                out[k] = node[k]
        return out, (_array_restore(r) if r is not same else same)

    try:
        params, restore = convert(root, ())
    except RecursionError:
        return {"type": "object"}, same
    if params.get("type") != "object" or not params.get("properties"):
        return {"type": "object"}, same
    return params, restore


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The Gemini form of a schema (:func:`gemini_parameters` without the way back)."""
    return gemini_parameters(schema)[0]


def _enum_restore(back: dict[str, Any]) -> Restore:
    def restore(value: Any) -> Any:
        return back.get(value, value) if isinstance(value, str) else value

    return restore


def _object_restore(restores: dict[str, Restore]) -> Restore:
    def restore(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        return {k: (restores[k](v) if k in restores else v) for k, v in value.items()}

    return restore


def _array_restore(item: Restore) -> Restore:
    def restore(value: Any) -> Any:
        return [item(v) for v in value] if isinstance(value, list) else value

    return restore


def _pairs_restore(item: Restore) -> Restore:
    def restore(value: Any) -> Any:
        if not isinstance(value, list):
            return value
        out: dict[str, Any] = {}
        for pair in value:
            if isinstance(pair, dict) and "key" in pair:
                out[str(pair["key"])] = item(pair.get("value"))
        return out

    return restore


def _tuple_restore(restores: list[Restore]) -> Restore:
    def restore(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        out = []
        for i, r in enumerate(restores):
            if str(i) not in value:
                break
            out.append(r(value[str(i)]))
        return out

    return restore


def _anyof_restore(branches: list[tuple[dict[str, Any], Restore]]) -> Restore:
    if all(r is same for _, r in branches):
        return same

    def restore(value: Any) -> Any:
        for out, r in branches:
            if _matches(value, out):
                return r(value)
        return value

    return restore

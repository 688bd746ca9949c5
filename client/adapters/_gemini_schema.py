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
    if not (isinstance(t, str) and is_type(value, t)):
        return False
    # Arms of one type tell apart by their enums (labels included): a value an arm's
    # enum does not list is not that arm's, whatever its type.
    enum = out.get("enum")
    return not isinstance(enum, list) or value in enum


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
    try:
        params, restore = _Converter(root).convert(root, ())
    except RecursionError:
        return {"type": "object"}, same
    if params.get("type") != "object" or not params.get("properties"):
        return {"type": "object"}, same
    return params, restore


_ANY_JSON = "any JSON value, written as JSON text"

Converted = tuple[dict[str, Any], Restore]


class _Converter:
    """One schema's conversion to Gemini's subset, one method per keyword family (the
    table in the module docstring): references and ``allOf`` (:meth:`convert`,
    :meth:`_all_of`), type lists and nulls (:meth:`_type_list`), alternatives
    (:meth:`_alternatives`), enums (:meth:`_enum`), scalar formats and bounds
    (:meth:`_scalar`), objects (:meth:`_object`), arrays (:meth:`_array`).

    ``stack`` is the chain of ``$ref`` expanded on the way to a node (recursion stops after
    :data:`MAX_REF_EXPANSIONS` of one reference); each method returns the converted node
    and its :data:`Restore`.
    """

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def resolve(self, node: Any, stack: tuple[str, ...]) -> tuple[Any, tuple[str, ...], bool]:
        """Follow ``$ref`` chains; the flag is False when one is unusable or too deep."""
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            target = resolve_pointer(self.root, ref)
            if not isinstance(target, dict) or stack.count(ref) >= MAX_REF_EXPANSIONS:
                return node, stack, False
            stack = (*stack, ref)
            node = merge_schemas(target, {k: v for k, v in node.items() if k != "$ref"})
        return node, stack, True

    def convert(self, node: Any, stack: tuple[str, ...]) -> Converted:
        """Any schema node: references resolved, ``allOf`` merged, then by its type."""
        if node is True or node == {} or not isinstance(node, dict):
            return _json_text({}, _ANY_JSON)
        node, stack, usable = self.resolve(node, stack)
        if not usable:
            return _json_text(node, "JSON text: a value of the same shape as its parent")
        node = dict(node)
        all_of = node.pop("allOf", None)
        if isinstance(all_of, list):
            return self._all_of(node, all_of, stack)
        arms = node.pop("anyOf", None)
        one_of = node.pop("oneOf", None)
        if arms is None:
            arms = one_of
        t, nullable, arms = self._type_list(node, arms)
        if t == "null":
            return _always_null(node)
        if "const" in node:
            node["enum"] = [node.pop("const")]
        enum = node.get("enum")
        if isinstance(enum, list) and None in enum:
            nullable = True
            enum = [v for v in enum if v is not None]
        if isinstance(arms, list) and arms:
            return self._alternatives(node, arms, nullable, stack)
        out, restore = self._by_type(node, t, enum, stack)
        if nullable:
            out["nullable"] = True
        return out, restore

    def _all_of(self, node: dict[str, Any], arms: list[Any], stack: tuple[str, ...]) -> Converted:
        """``allOf``: every arm merged into the node (Gemini has no ``allOf``)."""
        for arm in arms:
            part, stack, ok = self.resolve(arm, stack)
            if not ok:
                return _json_text(node, "JSON text")
            node = merge_schemas(part, node)
        return self.convert(node, stack)

    @staticmethod
    def _type_list(node: dict[str, Any], arms: Any) -> tuple[Any, bool, Any]:
        """``type`` (or the one its ``enum``/``const`` implies), whether a type list holds
        ``null``, and the alternatives: a list of several other types becomes ``anyOf``
        arms unless the node has alternatives or an enum of its own."""
        t = node.get("type")
        if t is None:
            t = inferred_type(node)
        if not isinstance(t, list):
            return t, False, arms
        nullable = "null" in t
        kinds = [k for k in t if k != "null"]
        if len(kinds) == 1:
            return kinds[0], nullable, arms
        if kinds and arms is None and "enum" not in node and "const" not in node:
            return None, nullable, [{"type": k} for k in kinds]
        return None, nullable, arms

    def _alternatives(
        self, node: dict[str, Any], arms: list[Any], nullable: bool, stack: tuple[str, ...]
    ) -> Converted:
        """``anyOf``/``oneOf``: null arms make the result nullable; one other arm is the
        node itself, several are an ``anyOf`` restored by the value's JSON type."""
        real = []
        for arm in arms:
            a, _, _ok = self.resolve(arm, stack)
            if isinstance(a, dict) and (
                a.get("type") == "null" or ("const" in a and a["const"] is None)
            ):
                nullable = True
            else:
                real.append(arm)
        shared = {k: v for k, v in node.items() if k in ("description",)}
        out: dict[str, Any]
        restore: Restore
        if len(real) == 1:
            only = real[0]
            out, restore = self.convert(
                merge_schemas(only, shared) if isinstance(only, dict) else only, stack
            )
        elif real:
            branches = [self.convert(a, stack) for a in real]
            out = {"anyOf": [b for b, _ in branches]}
            if "description" in shared:
                out["description"] = shared["description"]
            restore = _anyof_restore(branches)
        else:
            out, restore = _always_null(node)
        if nullable:
            out["nullable"] = True
        return out, restore

    def _by_type(
        self, node: dict[str, Any], t: Any, enum: Any, stack: tuple[str, ...]
    ) -> Converted:
        """A node without alternatives, by its (possibly implied) type."""
        listed = isinstance(enum, list) and bool(enum)
        if t is None:
            t = _implied_kind(node, enum if listed else None)
        if t is None:
            if not listed:
                return _json_text(node, _ANY_JSON)
            t = "string"  # a mixed enum: labels below
        out: dict[str, Any]
        restore: Restore = same
        description = node.get("description")
        if t in _SCALARS and listed:
            out, restore, description = self._enum(t, enum, description)
        elif t in _SCALARS:
            out, description = self._scalar(t, node, description)
        elif t == "object":
            out, restore = self._object(node, stack)
        elif t == "array":
            out, restore = self._array(node, stack)
        else:
            out, restore = _json_text(node, "JSON text")
        if isinstance(description, str) and description and "description" not in out:
            out["description"] = description
        return out, restore

    @staticmethod
    def _enum(t: str, enum: list[Any], description: Any) -> tuple[dict[str, Any], Restore, Any]:
        """``enum``: Gemini takes string enums only, and refuses an empty member ("cannot
        be empty"): other values and blank strings go by their JSON text."""
        if t == "string" and all(isinstance(v, str) and v.strip() for v in enum):
            return {"type": "string", "enum": list(enum)}, same, description
        labels = [v if isinstance(v, str) and v.strip() else json.dumps(v) for v in enum]
        if len(set(labels)) < len(labels):
            labels = [json.dumps(v) for v in enum]
        back = dict(zip(labels, enum, strict=True))
        if any(isinstance(v, str) and v != label for label, v in back.items()):
            description = _note(description, _QUOTED)
        return {"type": "string", "enum": labels}, _enum_restore(back), description

    @staticmethod
    def _scalar(t: str, node: dict[str, Any], description: Any) -> tuple[dict[str, Any], Any]:
        """A string, number, integer or boolean: ``format`` kept where Gemini knows it,
        length or numeric bounds kept, the rest noted in the description."""
        out: dict[str, Any] = {"type": t}
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
            return out, description
        for k in ("minimum", "maximum"):
            if is_type(node.get(k), "number"):
                out[k] = node[k]
        for k, bound, step in (
            ("exclusiveMinimum", "minimum", 1),
            ("exclusiveMaximum", "maximum", -1),
        ):
            v: Any = node.get(k)
            if not is_type(v, "number"):
                continue
            if t == "integer" and is_type(v, "integer"):
                out[bound] = int(v) + step
            else:
                out[bound] = v
                word = "greater" if step > 0 else "less"
                description = _note(description, f"{word} than {v}")
        return out, description

    def _object(self, node: dict[str, Any], stack: tuple[str, ...]) -> Converted:
        """Properties kept; a map (only ``additionalProperties``) as key/value pairs; an
        object without either as JSON text."""
        props = node.get("properties")
        addl = node.get("additionalProperties")
        if isinstance(props, dict) and props:
            out_props: dict[str, Any] = {}
            restores: dict[str, Restore] = {}
            for name, sub in props.items():
                conv, r = self.convert(sub, stack)
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
            value, r = self.convert(addl, stack)
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

    def _array(self, node: dict[str, Any], stack: tuple[str, ...]) -> Converted:
        """``items`` and item counts kept; a tuple (``prefixItems``, or the older list
        form of ``items``) as an object keyed by position."""
        prefix = node.get("prefixItems")
        items = node.get("items")
        if isinstance(items, list):
            prefix, items = items, None
        out: dict[str, Any]
        if isinstance(prefix, list) and prefix:
            props: dict[str, Any] = {}
            restores: list[Restore] = []
            for i, sub in enumerate(prefix):
                conv, r = self.convert(sub, stack)
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
        conv, r = self.convert(items, stack) if items is not None else self.convert({}, stack)
        out = {"type": "array", "items": conv}
        for k in ("minItems", "maxItems"):
            if isinstance(node.get(k), int):
                out[k] = node[k]
        return out, (_array_restore(r) if r is not same else same)


def _implied_kind(node: Mapping[str, Any], enum: list[Any] | None) -> str | None:
    """The type a node without one has by its keywords: object, array, or the one type of
    its (non-empty) enum's values; None when they do not say."""
    if "properties" in node or "additionalProperties" in node:
        return "object"
    if "items" in node or "prefixItems" in node:
        return "array"
    if enum:
        t = inferred_type({"enum": enum})
        return t if isinstance(t, str) else None
    return None


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

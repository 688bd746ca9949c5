"""OpenAI's strict mode (structured outputs) for function parameters.

With ``strict: true`` OpenAI constrains the model's arguments to the schema, but takes
only a subset of JSON Schema (OpenAI's "Structured Outputs" guide, "Supported schemas"):
the root is an object; every object lists all its properties in ``required`` and sets
``additionalProperties: false``; an optional field is written as a required one that
may be ``null``; supported keywords are ``type``, ``properties``, ``required``,
``additionalProperties``, ``items``, ``anyOf``, ``enum``, ``const``, ``description``,
``$defs``/``$ref``, string ``pattern``/``format`` (a fixed list of formats), number
``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum``/``multipleOf`` and
array ``minItems``/``maxItems``; at most 10 levels of object nesting.

:func:`strict_parameters` rewrites a host schema into that form when it can do so
without loosening it, and returns the way back (a ``null`` the rewrite invited for an
optional field that does not take ``null`` is dropped). A schema it cannot express
(maps, tuples, unconstrained values, recursion, other keywords) gives None: the tool is
then declared with its own schema and without ``strict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolwire.jsonschema_facts import is_type

from ._schema import Restore, inferred_type, merge_schemas, resolve_pointer, same

__all__ = ["STRICT_MAX_DEPTH", "strict_parameters", "strict_schema_allowed"]

STRICT_MAX_DEPTH = 10
"""Deepest object nesting OpenAI's strict mode accepts (its structured-outputs limits)."""

_ANNOTATIONS = frozenset(
    {"title", "default", "examples", "$comment", "$schema", "readOnly", "writeOnly", "deprecated"}
)
_KEPT = frozenset(
    {
        "type",
        "description",
        "enum",
        "const",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
_STRUCTURE = frozenset(
    {
        "properties",
        "required",
        "additionalProperties",
        "items",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
    }
)
_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
STRICT_KEYWORDS = (_KEPT | {"properties", "required", "additionalProperties", "items", "anyOf"}) | {
    "$defs",
    "$ref",
}


class _NotStrict(Exception):
    pass


def _accepts_null(node: Any, root: Mapping[str, Any], depth: int = 0) -> bool:
    if not isinstance(node, dict) or depth > 20:
        return node is True or node == {}
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = resolve_pointer(root, ref)
        if target is not None and _accepts_null(target, root, depth + 1):
            return True
    t = node.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    if "const" in node and node["const"] is None:
        return True
    if isinstance(node.get("enum"), list) and None in node["enum"]:
        return True
    for key in ("anyOf", "oneOf"):
        arms = node.get(key)
        if isinstance(arms, list) and any(_accepts_null(a, root, depth + 1) for a in arms):
            return True
    return False


def _nullable(out: dict[str, Any]) -> dict[str, Any]:
    if "anyOf" in out:
        if not any(a.get("type") == "null" for a in out["anyOf"]):
            out = {**out, "anyOf": [*out["anyOf"], {"type": "null"}]}
        return out
    t = out.get("type")
    if isinstance(t, str) and t not in ("object", "array") and "const" not in out:
        out = {**out, "type": [t, "null"]}
        if isinstance(out.get("enum"), list) and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
        return out
    if isinstance(t, list) and "null" in t:
        return out
    return {"anyOf": [out, {"type": "null"}]}


def _branch_restore(
    branches: list[tuple[dict[str, Any], Restore]],
) -> Restore:
    if all(r is same for _, r in branches):
        return same

    def restore(value: Any) -> Any:
        for out, r in branches:
            t = out.get("type")
            names = t if isinstance(t, list) else [t] if isinstance(t, str) else []
            if any(isinstance(n, str) and is_type(value, n) for n in names):
                return r(value)
        return value

    return restore


def strict_parameters(schema: Mapping[str, Any]) -> tuple[dict[str, Any], Restore] | None:
    """The strict-mode form of a parameters schema and its way back, or None.

    Args:
        schema: the tool's input schema (an object schema).

    Returns:
        ``(parameters, restore)``: ``parameters`` passes :func:`strict_schema_allowed`;
        ``restore(arguments)`` drops the ``null`` of each optional field the host's
        schema does not let be ``null``. None when the schema cannot be written in
        strict mode without loosening it.
    """
    root = dict(schema)
    if root.get("type") != "object":
        return None
    try:
        params, restore = _StrictConverter(root).convert(root, (), is_root=True)
    except (_NotStrict, RecursionError):
        return None
    return (params, restore) if strict_schema_allowed(params) else None


Converted = tuple[dict[str, Any], Restore]


class _StrictConverter:
    """One schema's conversion to strict mode, one method per keyword family (as the
    host's schema compiler is laid out): references and ``allOf`` (:meth:`convert`,
    :meth:`_ref`, :meth:`_all_of`), the type (:meth:`_types`), alternatives
    (:meth:`_alternatives`), objects (:meth:`_object`), arrays (:meth:`_array`).

    Every method raises :class:`_NotStrict` where strict mode cannot say what the schema
    says; ``stack`` holds the ``$ref`` expanded on the way (a recursive one is refused).
    """

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def convert(self, node: Any, stack: tuple[str, ...], is_root: bool = False) -> Converted:
        """Any schema node, annotations dropped; the result keeps only strict keywords."""
        if not isinstance(node, dict):
            raise _NotStrict
        node = {k: v for k, v in node.items() if k not in _ANNOTATIONS}
        ref = node.pop("$ref", None)
        if isinstance(ref, str):
            return self._ref(node, ref, stack, is_root)
        node.pop("$defs", None)
        node.pop("definitions", None)
        all_of = node.pop("allOf", None)
        if isinstance(all_of, list):
            return self._all_of(node, all_of, stack, is_root)
        if "oneOf" in node:
            node["anyOf"] = node.pop("oneOf")
        if set(node) - _KEPT - _STRUCTURE:
            raise _NotStrict
        names = self._types(node)
        out: dict[str, Any] = {k: v for k, v in node.items() if k in _KEPT}
        restore: Restore = same
        if "anyOf" in node:
            restore = self._alternatives(node, out, stack)
        if "object" in names:
            restore = self._object(node, names, out, stack, is_root) or restore
        elif "properties" in node or "additionalProperties" in node or "required" in node:
            raise _NotStrict
        if "array" in names:
            restore = self._array(node, out, stack) or restore
        elif "items" in node:
            raise _NotStrict
        return out, restore

    def _ref(
        self, node: dict[str, Any], ref: str, stack: tuple[str, ...], is_root: bool
    ) -> Converted:
        """``$ref``: the target merged under the node's own keywords (strict mode has
        ``$defs`` but the converted node is inlined; a recursive reference is refused)."""
        target = resolve_pointer(self.root, ref)
        if not isinstance(target, dict) or ref in stack:
            raise _NotStrict
        merged = merge_schemas({k: v for k, v in target.items() if k not in _ANNOTATIONS}, node)
        return self.convert(merged, (*stack, ref), is_root)

    def _all_of(
        self, node: dict[str, Any], arms: list[Any], stack: tuple[str, ...], is_root: bool
    ) -> Converted:
        """``allOf``: every arm (its references followed) merged into the node."""
        for arm in arms:
            part, _ = self._resolve_arm(arm, stack)
            node = merge_schemas(part, node)
        return self.convert(node, stack, is_root)

    def _resolve_arm(
        self, arm: Any, stack: tuple[str, ...]
    ) -> tuple[dict[str, Any], tuple[str, ...]]:
        while isinstance(arm, dict) and isinstance(arm.get("$ref"), str):
            ref = arm["$ref"]
            target = resolve_pointer(self.root, ref)
            if not isinstance(target, dict) or ref in stack:
                raise _NotStrict
            stack = (*stack, ref)
            arm = merge_schemas(target, {k: v for k, v in arm.items() if k != "$ref"})
        if not isinstance(arm, dict):
            raise _NotStrict
        return arm, stack

    @staticmethod
    def _types(node: dict[str, Any]) -> list[Any]:
        """The node's type names, written into it when its ``enum``/``const``, properties
        or items imply them (strict mode wants a ``type``); ``format`` checked."""
        implied = inferred_type(node)
        if implied is not None:
            node["type"] = implied
        t = node.get("type")
        if t is None:
            if "properties" in node:
                t = node["type"] = "object"
            elif "items" in node:
                t = node["type"] = "array"
            elif "anyOf" not in node and "enum" not in node and "const" not in node:
                raise _NotStrict
        if node.get("format") is not None and node["format"] not in _FORMATS:
            raise _NotStrict
        return t if isinstance(t, list) else [t] if isinstance(t, str) else []

    def _alternatives(
        self, node: dict[str, Any], out: dict[str, Any], stack: tuple[str, ...]
    ) -> Restore:
        """``anyOf`` (and ``oneOf``, read as ``anyOf``): the node's constraints apply to
        every arm, so they move there; restored by the value's JSON type."""
        arms = node["anyOf"]
        if not isinstance(arms, list) or not arms:
            raise _NotStrict
        moved = {k: v for k, v in node.items() if k in _KEPT - {"type", "description"}}
        for k in moved:
            out.pop(k, None)
        branches = [self.convert({**moved, **a} if isinstance(a, dict) else a, stack) for a in arms]
        out["anyOf"] = [b for b, _ in branches]
        return _branch_restore(branches)

    def _object(
        self,
        node: dict[str, Any],
        names: list[Any],
        out: dict[str, Any],
        stack: tuple[str, ...],
        is_root: bool,
    ) -> Restore | None:
        """An object: every property required, an optional one made nullable (its
        ``null`` dropped on the way back unless the host's schema takes it), no
        additional properties; a map or a bare object (below the root) is refused.
        None when the way back is the branch's own."""
        if len(names) > 1:
            raise _NotStrict
        props = node.get("properties", {})
        addl = node.get("additionalProperties")
        if not isinstance(props, dict) or (addl is not None and addl is not False):
            raise _NotStrict
        if not props and not is_root and addl is not False:
            raise _NotStrict
        required = node.get("required", [])
        if not isinstance(required, list):
            raise _NotStrict
        conv_props: dict[str, Any] = {}
        restores: dict[str, Restore] = {}
        drop_null: set[str] = set()
        for name, sub in props.items():
            conv, r = self.convert(sub, stack)
            if name not in required:
                conv = _nullable(conv)
                if not _accepts_null(sub, self.root):
                    drop_null.add(name)
            conv_props[name] = conv
            if r is not same:
                restores[name] = r
        out["properties"] = conv_props
        out["required"] = list(conv_props)
        out["additionalProperties"] = False
        if restores or drop_null:
            return _object_restore(restores, drop_null)
        return None

    def _array(
        self, node: dict[str, Any], out: dict[str, Any], stack: tuple[str, ...]
    ) -> Restore | None:
        """An array: one ``items`` schema (strict mode has no tuples)."""
        items = node.get("items")
        if not isinstance(items, dict):
            raise _NotStrict
        conv, r = self.convert(items, stack)
        out["items"] = conv
        return _array_restore(r) if r is not same else None


def _object_restore(restores: dict[str, Restore], drop_null: set[str]) -> Restore:
    def restore(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        out: dict[str, Any] = {}
        for k, v in value.items():
            if v is None and k in drop_null:
                continue
            r = restores.get(k)
            out[k] = r(v) if r is not None and v is not None else v
        return out

    return restore


def _array_restore(item: Restore) -> Restore:
    def restore(value: Any) -> Any:
        return [item(v) for v in value] if isinstance(value, list) else value

    return restore


def strict_schema_allowed(schema: Mapping[str, Any]) -> bool:
    """Can OpenAI's ``strict: true`` mode take this parameters schema as it is?

    OpenAI's structured-outputs rules: the root is an object; every object schema
    (the root, nested properties, array items, ``anyOf`` branches and ``$defs``) sets
    ``additionalProperties: false`` and lists every property in ``required``; only the
    supported keywords (module docstring); no ``allOf``/``oneOf``/``not``/conditionals/
    ``patternProperties``/``prefixItems``/``default``; at most 10 levels of object nesting.
    """
    if schema.get("type") != "object":
        return False

    def ok(node: Any, depth: int) -> bool:
        if not isinstance(node, dict):
            return False
        if set(node) - STRICT_KEYWORDS - {"definitions"}:
            return False
        fmt = node.get("format")
        if fmt is not None and fmt not in _FORMATS:
            return False
        types = node.get("type")
        is_object = types == "object" or (isinstance(types, list) and "object" in types)
        if is_object or "properties" in node:
            if depth > STRICT_MAX_DEPTH:
                return False
            if node.get("additionalProperties") is not False:
                return False
            props = node.get("properties", {})
            if not isinstance(props, dict):
                return False
            required = node.get("required", [])
            if not isinstance(required, list) or set(required) != set(props):
                return False
            if not all(ok(v, depth + 1) for v in props.values()):
                return False
        items = node.get("items")
        if items is not None and not ok(items, depth):
            return False
        branches = node.get("anyOf")
        if branches is not None and not (
            isinstance(branches, list) and all(ok(b, depth) for b in branches)
        ):
            return False
        for key in ("$defs", "definitions"):
            defs = node.get(key)
            if defs is not None and not (
                isinstance(defs, dict) and all(ok(d, depth) for d in defs.values())
            ):
                return False
        return True

    return ok(dict(schema), 1)

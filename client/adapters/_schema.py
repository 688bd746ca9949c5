"""Schema helpers the provider converters share.

* :func:`resolve_pointer`: a local ``$ref`` (any JSON Pointer into the same document,
  RFC 6901, not only ``#/$defs/...``).
* :func:`inferred_type`: the JSON type(s) an ``enum``/``const`` implies when a schema
  gives no ``type`` (so ``enum: [1, 2, 3]`` is an integer, not a string).
* :func:`json_schema_dialect`: the parameters for APIs that take JSON Schema as it is
  (Anthropic, OpenAI outside strict mode), with the fixes they need.
* :func:`root_object`: a root ``anyOf``/``oneOf``/``allOf`` folded into one object
  schema (no provider takes alternatives at the root of a tool's parameters).
* :data:`Restore`: a converter's way back, from arguments shaped by the provider's
  declaration to arguments shaped by the host's schema.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

from toolwire.jsonschema_facts import RefError, enum_types, resolve_ref

__all__ = [
    "MAX_REF_EXPANSIONS",
    "Restore",
    "inferred_type",
    "json_schema_dialect",
    "merge_schemas",
    "resolve_pointer",
    "root_object",
    "same",
]

Restore = Callable[[Any], Any]
"""Maps one value shaped by a provider's declaration back to the host's schema."""


def same(value: Any) -> Any:
    """The identity :data:`Restore` (the declaration is the host's schema there)."""
    return value


MAX_REF_EXPANSIONS = 3
"""How often one ``$ref`` is expanded along one path when a converter must inline it
(a recursive model); deeper, the value is declared as JSON text (see each converter)."""


def resolve_pointer(root: Any, ref: str) -> Any:
    """The node a local reference (``#``, ``#/a/b/0``) points at in ``root``
    (:func:`toolwire.jsonschema_facts.resolve_ref`); None where that raises (``ref`` is
    not local or points nowhere), the converters' way of leaving such a ``$ref`` alone."""
    try:
        return resolve_ref(root, ref)
    except RefError:
        return None


def inferred_type(node: Mapping[str, Any]) -> str | list[str] | None:
    """The value of a ``type`` keyword the values of ``enum``/``const`` imply, for a node
    without ``type``: :func:`toolwire.jsonschema_facts.enum_types` as one name when there
    is one, else the list; None when ``node`` has ``type`` or neither keyword."""
    if "type" in node:
        return None
    names = enum_types(node)
    if names is None:
        return None
    return names[0] if len(names) == 1 else names


def merge_schemas(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` overlaid with ``extra`` (a referenced or ``allOf`` part and the node that
    names it): ``properties`` are united, ``required`` lists joined without repeats, any
    other keyword of ``extra`` wins. Neither argument is changed."""
    out = dict(base)
    for k, v in extra.items():
        if k == "properties" and isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = {**out[k], **v}
        elif k == "required" and isinstance(v, list) and isinstance(out.get(k), list):
            out[k] = list(dict.fromkeys([*out[k], *v]))
        else:
            out[k] = v
    return out


def _is_defs_ref(ref: str) -> bool:
    return ref.startswith(("#/$defs/", "#/definitions/"))


def json_schema_dialect(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters for an API that takes JSON Schema (Anthropic; OpenAI without strict).

    A copy of ``schema`` with two changes:

    * a local ``$ref`` other than ``#/$defs/...``/``#/definitions/...`` (a pointer to a
      sibling property, say) is replaced by its target, since providers resolve only
      the definitions sections; a recursive one is expanded
      :data:`MAX_REF_EXPANSIONS` times and then left as an unconstrained ``{}``;
    * a node with ``enum``/``const`` and no ``type`` gets the type its values imply
      (:func:`inferred_type`), so the model sends ``2`` and not ``"2"``.

    Everything else is kept (the host validates calls against the same keywords).
    """
    root = copy.deepcopy(dict(schema))

    def walk(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [walk(v, stack) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and not _is_defs_ref(ref):
            target = resolve_pointer(root, ref)
            if target is not None and stack.count(ref) < MAX_REF_EXPANSIONS:
                merged = {k: v for k, v in node.items() if k != "$ref"}
                inner = walk(target, (*stack, ref))
                if isinstance(inner, dict):
                    merged = {**inner, **{k: walk(v, stack) for k, v in merged.items()}}
                return merged
            if target is not None:
                return {k: v for k, v in node.items() if k not in ("$ref",)}
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in ("enum", "const", "default", "examples"):
                out[key] = value
            elif key in ("properties", "$defs", "definitions", "patternProperties"):
                out[key] = (
                    {k: walk(v, stack) for k, v in value.items()}
                    if isinstance(value, dict)
                    else value
                )
            else:
                out[key] = walk(value, stack)
        implied = inferred_type(out)
        if implied is not None:
            out["type"] = implied
        return with_items(out)

    result = walk(root, ())
    return result if isinstance(result, dict) else {}


def _distinct(schemas: list[Any]) -> list[Any]:
    out: list[Any] = []
    for s in schemas:
        if s not in out:
            out.append(s)
    return out


def with_items(node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with an object schema in ``items`` when it is an array schema.

    OpenAI refuses an array schema without ``items`` ("array schema missing items"),
    also outside strict mode and also for a tuple (``prefixItems``) or a type list
    that contains ``"array"``; a boolean ``items`` or the older list form (``items:
    [...]``, Draft 4 to 2019-09) is not an object schema either. The result accepts the
    same arrays under Draft 2020-12:

    * no ``items`` (or ``true``): ``items: {}``; ``items: false`` without a prefix:
      ``items: {}`` and ``maxItems: 0``;
    * a tuple (``prefixItems``, or the list form, which becomes ``prefixItems``) that
      can hold no more than its prefix (``items``/``additionalItems`` false, or
      ``maxItems`` at most the prefix's length): ``items`` is the prefix's element
      schemas (one, or their ``anyOf``), which applies to no element but tells a model
      that reads only ``items`` what the elements are, and ``maxItems`` bounds the
      length; an open tuple keeps its rest schema (or ``{}``) as ``items``.

    Other nodes are returned as they are.
    """
    t = node.get("type")
    items = node.get("items", True)
    prefix = node.get("prefixItems")
    rest: Any = items
    if isinstance(items, list):
        prefix, rest = items, node.get("additionalItems", True)
    typed = t == "array" or (isinstance(t, list) and "array" in t)
    if isinstance(items, dict) or not (typed or isinstance(prefix, list) or "items" in node):
        return node
    out = {k: v for k, v in node.items() if k not in ("items", "additionalItems")}
    most = node.get("maxItems")
    if isinstance(prefix, list) and prefix:
        out["prefixItems"] = prefix
        if rest is False:
            most = len(prefix) if not isinstance(most, int) else min(most, len(prefix))
            out["maxItems"] = most
        if isinstance(most, int) and most <= len(prefix):
            arms = _distinct([p if isinstance(p, dict) else {} for p in prefix if p is not False])
            if not arms or {} in arms:
                out["items"] = {}
            else:
                out["items"] = arms[0] if len(arms) == 1 else {"anyOf": arms}
        else:
            out["items"] = rest if isinstance(rest, dict) else {}
    else:
        if rest is False:
            out["maxItems"] = 0
        out["items"] = rest if isinstance(rest, dict) else {}
    return out


_ROOT_ALTERNATIVES = ("allOf", "anyOf", "oneOf")
_ROOT_REFUSED = ("not", "enum", "const")
_ARM_ANNOTATIONS = ("title", "description", "$comment", "examples", "default", "$schema", "$id")
_MAX_FOLD_DEPTH = 8


def _object_like(arm: Any) -> bool:
    if not isinstance(arm, dict):
        return arm is True
    t = arm.get("type")
    return t is None or t == "object" or (isinstance(t, list) and "object" in t)


def _required(node: Mapping[str, Any]) -> list[str]:
    req = node.get("required")
    return [r for r in req if isinstance(r, str)] if isinstance(req, list) else []


def _overlay(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Both ``base`` and ``extra`` apply to one object (an ``allOf`` arm, a folded group):
    properties united (one both declare: ``extra``'s keywords over ``base``'s),
    ``required`` joined, ``extra``'s other validation keywords added where ``base``
    has none (its annotations are left out: the root's description stays the tool's)."""
    out = dict(base)
    props = dict(out.get("properties") or {})
    for name, sub in (extra.get("properties") or {}).items():
        old = props.get(name)
        props[name] = (
            merge_schemas(old, sub) if isinstance(old, dict) and isinstance(sub, dict) else sub
        )
    if props or "properties" in out or "properties" in extra:
        out["properties"] = props
    required = list(dict.fromkeys([*_required(out), *_required(extra)]))
    if required:
        out["required"] = required
    for key, value in extra.items():
        if key in ("properties", "required", "type", *_ARM_ANNOTATIONS, *_ROOT_REFUSED):
            continue
        out.setdefault(key, value)
    return out


def _union(arms: list[dict[str, Any]]) -> dict[str, Any]:
    """One object schema for "one of these objects": every arm's properties, optional
    unless every arm requires them; a property the arms declare differently is the
    ``anyOf`` of its forms; closed (``additionalProperties: false``) when every arm is."""
    forms: dict[str, list[Any]] = {}
    for arm in arms:
        for name, sub in (arm.get("properties") or {}).items():
            forms.setdefault(str(name), []).append(sub)
    props = {}
    for name, subs in forms.items():
        distinct = _distinct(subs)
        props[name] = distinct[0] if len(distinct) == 1 else {"anyOf": distinct}
    out: dict[str, Any] = {"type": "object", "properties": props}
    required = [r for r in _required(arms[0]) if all(r in _required(a) for a in arms[1:])]
    if required:
        out["required"] = required
    if all(a.get("additionalProperties") is False for a in arms):
        out["additionalProperties"] = False
    return out


def _form(arm: Mapping[str, Any]) -> str:
    required = _required(arm)
    props = [str(p) for p in arm.get("properties") or {}]
    if required:
        text = "with " + ", ".join(required)
    elif props:
        text = "with any of " + ", ".join(props)
    else:
        text = "with no particular arguments"
    label = arm.get("description") or arm.get("title")
    return f"{text} ({' '.join(label.split())})" if isinstance(label, str) and label else text


def root_object(schema: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """A tool's parameters with a root that is one object schema, and the alternatives
    the root had, in words.

    No provider takes alternatives at the root of a tool's parameters: Anthropic
    refuses ``oneOf``/``allOf``/``anyOf`` at the top level of ``input_schema``; OpenAI,
    strict or not, wants ``type: "object"`` and no ``oneOf``/``anyOf``/``allOf``/
    ``enum``/``not`` at the top level; Gemini's parameters must be an object schema
    with properties (its converter would have nothing to declare). A root that says
    "give an id or a name" with ``anyOf``/``oneOf`` of objects is common, so it is
    folded into one object:

    * ``allOf`` arms (local ``$ref`` followed) are merged into the root;
    * each ``anyOf``/``oneOf``: the properties of its object arms become optional
      properties of the root (required where every arm requires them; a property
      declared differently by the arms is the ``anyOf`` of its forms), and the note
      names the forms ("give exactly one of these forms: (1) with id; (2) with name");
      arms that are not objects are dropped (arguments are an object);
    * ``not``/``enum``/``const`` at the root are dropped, and so is an OpenAPI
      ``discriminator`` (pydantic writes one for a tagged union) naming folded arms.

    The result is looser than ``schema``: the host still validates each call against
    its own schema, so a call that fits none of the forms gets the host's error.

    Args:
        schema: an input schema whose root ``$ref`` (if any) is already resolved.

    Returns:
        ``(schema, note)``: a copy with ``type: "object"`` and none of those keywords
        at its root; ``note`` is "" when the root had no alternatives.
    """
    root = dict(schema)
    t = root.get("type")
    if isinstance(t, list) and "object" in t:
        root["type"] = "object"
    if not any(k in root for k in (*_ROOT_ALTERNATIVES, *_ROOT_REFUSED)):
        return root, ""
    notes: list[str] = []

    def resolved(arm: Any) -> Any:
        seen: tuple[str, ...] = ()
        while isinstance(arm, dict) and isinstance(arm.get("$ref"), str):
            ref = arm["$ref"]
            target = resolve_pointer(root, ref)
            if not isinstance(target, dict) or ref in seen:
                break
            seen = (*seen, ref)
            arm = merge_schemas(target, {k: v for k, v in arm.items() if k != "$ref"})
        return {} if arm is True else arm

    def fold(node: dict[str, Any], depth: int) -> dict[str, Any]:
        node = {k: v for k, v in node.items() if k not in _ROOT_REFUSED}
        groups = {k: node.pop(k) for k in _ROOT_ALTERNATIVES if k in node}
        if groups:
            node.pop("discriminator", None)  # OpenAPI's pointer into the folded arms
        if depth > _MAX_FOLD_DEPTH:
            return node
        all_of = groups.get("allOf")
        for arm in all_of if isinstance(all_of, list) else []:
            part = resolved(arm)
            if isinstance(part, dict) and _object_like(part):
                node = _overlay(node, fold(part, depth + 1))
        for key in ("anyOf", "oneOf"):
            arms = groups.get(key)
            if not isinstance(arms, list):
                continue
            parts = [resolved(a) for a in arms]
            objects = [fold(p, depth + 1) for p in parts if isinstance(p, dict) and _object_like(p)]
            if not objects:
                continue
            node = _overlay(node, _union(objects))
            if len(objects) > 1:
                lead = "exactly one" if key == "oneOf" else "at least one"
                forms = "; ".join(f"({i}) {_form(a)}" for i, a in enumerate(objects, 1))
                notes.append(f"Arguments: give {lead} of these forms: {forms}.")
        return node

    out = fold(root, 0)
    out["type"] = "object"
    return out, " ".join(notes)

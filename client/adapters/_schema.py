"""Schema helpers the provider converters share.

* :func:`resolve_pointer`: a local ``$ref`` (any JSON Pointer into the same document,
  RFC 6901, not only ``#/$defs/...``).
* :func:`inferred_type`: the JSON type(s) an ``enum``/``const`` implies when a schema
  gives no ``type`` (so ``enum: [1, 2, 3]`` is an integer, not a string).
* :func:`json_schema_dialect`: the parameters for APIs that take JSON Schema as it is
  (Anthropic, OpenAI outside strict mode), with the two fixes they need.
* :data:`Restore`: a converter's way back, from arguments shaped by the provider's
  declaration to arguments shaped by the host's schema.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

__all__ = [
    "MAX_REF_EXPANSIONS",
    "Restore",
    "inferred_type",
    "json_schema_dialect",
    "json_type",
    "merge_schemas",
    "resolve_pointer",
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

_MISSING = object()


def resolve_pointer(root: Any, ref: str) -> Any:
    """The node a local reference (``#``, ``#/a/b/0``) points at in ``root``; None when
    ``ref`` is not local or points nowhere. ``~1``/``~0`` and %-escapes are decoded."""
    if not ref.startswith("#"):
        return None
    pointer = unquote(ref[1:])
    if pointer == "":
        return root
    if not pointer.startswith("/"):
        return None
    node: Any = root
    for raw in pointer[1:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            node = node.get(part, _MISSING)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
        if node is _MISSING:
            return None
    return node


def json_type(value: Any) -> str:
    """The JSON type name of a Python value ("integer" for a whole number)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def inferred_type(node: Mapping[str, Any]) -> str | list[str] | None:
    """The ``type`` the values of ``enum``/``const`` imply, for a node without ``type``.

    One type when all values share it ("integer" and "number" together are "number"),
    a list (in first-seen order) when they do not, None without ``enum``/``const``.
    """
    if "type" in node:
        return None
    if "const" in node:
        values = [node["const"]]
    elif isinstance(node.get("enum"), list) and node["enum"]:
        values = list(node["enum"])
    else:
        return None
    names = list(dict.fromkeys(json_type(v) for v in values))
    if "integer" in names and "number" in names:
        names.remove("integer")
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
        return out

    result = walk(root, ())
    return result if isinstance(result, dict) else {}

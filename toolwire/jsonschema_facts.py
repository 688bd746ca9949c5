"""Facts about JSON values and JSON Schema documents that the host and the client both read.

One home for three questions both sides ask of a tool's input schema (JSON Schema Draft
2020-12), so they cannot answer them differently:

* :func:`json_type` / :func:`is_type`: which JSON Schema ``type`` names a value has.
* :func:`resolve_ref`: the node a local ``$ref`` points at (a JSON Pointer in a URI
  fragment, RFC 6901 §5-§6).
* :func:`enum_types`: the ``type`` names the values of ``enum``/``const`` imply, for a
  node that gives no ``type``.

Integers: Draft 2020-12 Validation §6.1.1 defines ``"integer"`` as "any number with a
zero fractional part", and the Core spec (§4.2.1) says the data model makes no
distinction between integers and other numbers. So ``1.0`` *is* an integer (it also
matches ``"number"``), exactly as the ``jsonschema`` package's Draft 2020-12 type checker
decides; :func:`json_type` names the narrowest type, ``"integer"``. Booleans are never
numbers (§4.2.1 lists them as a type of their own), though Python's ``bool`` is an ``int``.

This module belongs to the shared layer: it imports neither ``toolwire.host`` nor
``toolwire.client``, and nothing outside the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote

__all__ = [
    "JSON_TYPE_NAMES",
    "TYPE_CHECKS",
    "RefError",
    "enum_types",
    "is_type",
    "json_type",
    "resolve_ref",
]

JSON_TYPE_NAMES = ("null", "boolean", "object", "array", "number", "string", "integer")
"""The seven names ``type`` may hold (Draft 2020-12 Validation §6.1.1)."""


def _is_integer(x: Any) -> bool:
    t = type(x)
    return t is int or (t is float and x.is_integer())


def _is_number(x: Any) -> bool:
    t = type(x)
    return t is int or t is float


TYPE_CHECKS: Mapping[str, Callable[[Any], bool]] = {
    "string": lambda x: type(x) is str,
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda x: type(x) is bool,
    "object": lambda x: type(x) is dict,
    "array": lambda x: type(x) is list,
    "null": lambda x: x is None,
}
"""Type name → predicate on a decoded JSON value (``dict``/``list``/``str``/``int``/
``float``/``bool``/``None``, exact types: a ``bool`` is not a number)."""


def is_type(value: Any, name: str) -> bool:
    """True when ``value`` is an instance of the JSON Schema type ``name``.

    ``is_type(1.0, "integer")`` and ``is_type(1.0, "number")`` are both true
    (Validation §6.1.1); ``is_type(True, "integer")`` is false. An unknown ``name`` matches
    nothing.
    """
    check = TYPE_CHECKS.get(name)
    return check is not None and check(value)


def json_type(value: Any) -> str:
    """The narrowest JSON Schema type name of ``value``.

    ``"integer"`` for ``int`` and for a ``float`` with a zero fractional part (``1.0``),
    ``"number"`` for any other float, ``"boolean"`` for ``bool``; ``"null"``, ``"string"``,
    ``"array"``, ``"object"`` for the rest of the JSON data model. A value outside it (a
    tuple, a set) gets its Python type name, which no ``type`` keyword names.
    """
    if value is None:
        return "null"
    t = type(value)
    if t is bool:
        return "boolean"
    if t is int:
        return "integer"
    if t is float:
        return "integer" if value.is_integer() else "number"
    if t is str:
        return "string"
    if t is list:
        return "array"
    if t is dict:
        return "object"
    return t.__name__


class RefError(ValueError):
    """A ``$ref`` that is not local (no leading ``#``) or points at nothing in the document."""


_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]*")  # RFC 6901 §4: no leading zeros, ASCII digits


def resolve_ref(root: Any, ref: str) -> Any:
    """The node a local reference (``#``, ``#/$defs/Item``, ``#/properties/a~1b/items/0``)
    points at inside the schema document ``root``.

    The part after ``#`` is %-decoded (a URI fragment, RFC 6901 §6) and then read as a JSON
    Pointer: ``~1`` is ``/``, ``~0`` is ``~``; an array is indexed by a decimal without
    leading zeros (RFC 6901 §4).

    Raises:
        RefError: ``ref`` is remote (does not start with ``#``), is not a pointer
            (``#foo``, an anchor), or names a member or index that does not exist.
    """
    if not ref.startswith("#"):
        raise RefError(f"non-local $ref {ref!r}")
    pointer = unquote(ref[1:])
    if pointer == "":
        return root
    if not pointer.startswith("/"):
        raise RefError(f"$ref {ref!r} is not a JSON Pointer")
    node = root
    for raw in pointer[1:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if type(node) is dict and key in node:
            node = node[key]
        elif type(node) is list and _ARRAY_INDEX.fullmatch(key) and int(key) < len(node):
            node = node[int(key)]
        else:
            raise RefError(f"unresolvable $ref {ref!r}")
    return node


def enum_types(node: Mapping[str, Any]) -> list[str] | None:
    """The type names the values of ``const`` (else ``enum``) in ``node`` have, or None.

    Names come in first-seen order, each once (:func:`json_type`). When both ``"integer"``
    and ``"number"`` occur, only ``"number"`` stays: it already admits every integer
    (Validation §6.1.1). So ``{"enum": [1, 2.0]}`` implies ``["integer"]``,
    ``{"enum": [1, 2.5]}`` implies ``["number"]``, ``{"enum": ["a", 1]}`` implies
    ``["string", "integer"]``. None when the node has neither keyword or an empty or
    non-list ``enum``; a ``type`` keyword in ``node`` is not consulted (the caller decides
    whether it wins).
    """
    if "const" in node:
        values = [node["const"]]
    elif type(node.get("enum")) is list and node["enum"]:
        values = node["enum"]
    else:
        return None
    names = list(dict.fromkeys(json_type(v) for v in values))
    if "integer" in names and "number" in names:
        names.remove("integer")
    return names

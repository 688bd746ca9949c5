"""A fast check of a JSON Schema against the Draft 2020-12 metaschema.

Checking a schema with ``jsonschema``'s ``check_schema`` walks the metaschema's
``$dynamicRef`` web for every keyword and takes about 20-100 ms for a schema of 25
properties; a module registering 2,000 such tools waited seconds for its first
``tools/list``. :func:`meta_verdict` walks the schema once, applying what the metaschema
asserts for each keyword (Draft 2020-12, all vocabularies, with jsonschema's default
format checks: ``regex`` for ``pattern`` and ``patternProperties`` names):

* True: the schema conforms (the metaschema would accept it);
* False: it does not (the caller then runs jsonschema for its precise message);
* None: the schema uses something this walk does not decide (another ``$schema``,
  ``$id``, anchors, ``$vocabulary``, a non-JSON value, very deep nesting): the caller runs
  the full check.

tests/host/schema/test_metacheck.py holds this verdict equal to jsonschema's on random schemas.
"""

from __future__ import annotations

import importlib.util
import re
from typing import Any

from toolwire.jsonschema_facts import is_type

__all__ = ["meta_verdict"]

_DRAFT_2020_12 = (
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2020-12/schema#",
)
_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})

_SCHEMA = frozenset(
    {
        "items",
        "contains",
        "additionalProperties",
        "propertyNames",
        "if",
        "then",
        "else",
        "not",
        "unevaluatedItems",
        "unevaluatedProperties",
        "contentSchema",
    }
)
_SCHEMA_MAP = frozenset({"properties", "$defs", "definitions", "dependentSchemas"})
_SCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_NUMBER = frozenset({"maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum"})
_COUNT = frozenset(
    {
        "maxLength",
        "minLength",
        "maxItems",
        "minItems",
        "maxContains",
        "minContains",
        "maxProperties",
        "minProperties",
    }
)
_STRING = frozenset(
    {"title", "description", "$comment", "format", "contentEncoding", "contentMediaType"}
)
_BOOLEAN = frozenset({"deprecated", "readOnly", "writeOnly", "uniqueItems"})
_UNDECIDED = frozenset(
    {
        "$id",
        "$anchor",
        "$dynamicAnchor",
        "$dynamicRef",
        "$recursiveRef",
        "$recursiveAnchor",
        "$vocabulary",
    }
)
_MAX_DEPTH = 100
_INF = float("inf")

_uri_formats_checked: bool | None = None


def _uri_formats() -> bool:
    """Whether jsonschema can check ``uri-reference`` here (it needs an extra package)."""
    global _uri_formats_checked
    if _uri_formats_checked is None:
        _uri_formats_checked = any(
            importlib.util.find_spec(m) is not None for m in ("rfc3987", "rfc3986_validator")
        )
    return _uri_formats_checked


class _Undecided(Exception):
    pass


def _is_count(x: Any) -> bool:
    return is_type(x, "integer") and x >= 0


def _is_json(x: Any, depth: int = 0) -> bool:
    """True for a value made only of JSON types (dict keys strings)."""
    if depth > _MAX_DEPTH:
        raise _Undecided
    t = type(x)
    if x is None or t in (str, bool, int):
        return True
    if t is float:
        return x == x and x not in (float("inf"), float("-inf"))
    if t is list:
        return all(_is_json(v, depth + 1) for v in x)
    if t is dict:
        return all(type(k) is str and _is_json(v, depth + 1) for k, v in x.items())
    return False


def _string_array(x: Any) -> bool:
    if type(x) is not list or not all(type(s) is str for s in x):
        return False
    return len(set(x)) == len(x)


def _regex(x: Any) -> bool:
    if type(x) is not str:
        return True  # the regex format asserts nothing about other types
    try:
        re.compile(x)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


def _finite(x: Any) -> bool:
    t = type(x)
    return t is int or (t is float and x == x and x not in (_INF, -_INF))


def _map_of_schemas(value: Any, depth: int, regex_names: bool) -> bool:
    if type(value) is not dict:
        return _json_or_undecided(value)
    good = True
    for name, sub in value.items():
        if type(name) is not str:
            raise _Undecided
        if not _node(sub, depth + 1) or (regex_names and not _regex(name)):
            good = False
    return good


def _json_or_undecided(value: Any) -> bool:
    """False for a JSON value (in a place that wants another kind); raises otherwise."""
    if not _is_json(value):
        raise _Undecided
    return False


# What each keyword's value must be (the metaschema's rules), as a small code for _node.
_K_STRING, _K_TYPE, _K_SCHEMA_MAP, _K_COUNT, _K_NUMBER, _K_SCHEMA, _K_SCHEMA_LIST = range(7)
_K_BOOLEAN, _K_LIST, _K_REQUIRED, _K_PATTERN, _K_PATTERN_PROPS, _K_MULTIPLE = range(7, 13)
_K_REF, _K_SCHEMA_URI, _K_DEP_REQUIRED, _K_DEPENDENCIES, _K_UNDECIDED = range(13, 18)
_KIND: dict[str, int] = {
    **dict.fromkeys(_STRING, _K_STRING),
    "type": _K_TYPE,
    **dict.fromkeys(_SCHEMA_MAP, _K_SCHEMA_MAP),
    **dict.fromkeys(_COUNT, _K_COUNT),
    **dict.fromkeys(_NUMBER, _K_NUMBER),
    **dict.fromkeys(_SCHEMA, _K_SCHEMA),
    **dict.fromkeys(_SCHEMA_LIST, _K_SCHEMA_LIST),
    **dict.fromkeys(_BOOLEAN, _K_BOOLEAN),
    "enum": _K_LIST,
    "examples": _K_LIST,
    "required": _K_REQUIRED,
    "pattern": _K_PATTERN,
    "patternProperties": _K_PATTERN_PROPS,
    "multipleOf": _K_MULTIPLE,
    "$ref": _K_REF,
    "$schema": _K_SCHEMA_URI,
    "dependentRequired": _K_DEP_REQUIRED,
    "dependencies": _K_DEPENDENCIES,
    **dict.fromkeys(_UNDECIDED, _K_UNDECIDED),
}


def _node(node: Any, depth: int) -> bool:
    """Whether ``node`` conforms; raises _Undecided outside the decided subset (which
    includes any value that is not JSON)."""
    if node is True or node is False:
        return True
    if type(node) is not dict:
        return _json_or_undecided(node)
    if depth > _MAX_DEPTH:
        raise _Undecided
    ok = True
    kinds = _KIND
    for key, value in node.items():
        kind = kinds.get(key) if type(key) is str else _K_UNDECIDED
        t = type(value)
        if kind is None:
            # const, default and keywords the metaschema does not know: anything goes.
            if t is not str and not _is_json(value):
                raise _Undecided
            continue
        if kind == _K_STRING:
            good = t is str or _json_or_undecided(value)
        elif kind == _K_TYPE:
            if t is str:
                good = value in _TYPES
            elif t is list and all(type(v) is str for v in value):
                good = bool(value) and _TYPES.issuperset(value) and len(set(value)) == len(value)
            else:
                good = _json_or_undecided(value)
        elif kind == _K_SCHEMA_MAP:
            good = _map_of_schemas(value, depth, False)
        elif kind == _K_COUNT:
            good = (_finite(value) and _is_count(value)) or _json_or_undecided(value)
        elif kind == _K_NUMBER:
            good = _finite(value) or _json_or_undecided(value)
        elif kind == _K_SCHEMA:
            good = _node(value, depth + 1)
        elif kind == _K_SCHEMA_LIST:
            if t is not list:
                good = _json_or_undecided(value)
            else:
                good = bool(value)
                for sub in value:
                    if not _node(sub, depth + 1):
                        good = False
        elif kind == _K_BOOLEAN:
            good = t is bool or _json_or_undecided(value)
        elif kind == _K_LIST:
            if not _is_json(value):
                raise _Undecided
            good = t is list
        elif kind == _K_REQUIRED:
            good = _string_array(value) or _json_or_undecided(value)
        elif kind == _K_PATTERN:
            good = _regex(value) if t is str else _json_or_undecided(value)
        elif kind == _K_PATTERN_PROPS:
            good = _map_of_schemas(value, depth, True)
        elif kind == _K_MULTIPLE:
            good = (_finite(value) and value > 0) or _json_or_undecided(value)
        elif kind == _K_REF:
            if _uri_formats():
                raise _Undecided
            good = t is str or _json_or_undecided(value)
        elif kind == _K_SCHEMA_URI:
            if value not in _DRAFT_2020_12:
                raise _Undecided
            good = True
        elif kind == _K_DEP_REQUIRED:
            if t is not dict or not all(type(k) is str for k in value):
                good = _json_or_undecided(value)
            else:
                good = all(_string_array(v) or _json_or_undecided(v) for v in value.values())
        elif kind == _K_DEPENDENCIES:
            if t is not dict or not all(type(k) is str for k in value):
                good = _json_or_undecided(value)
            else:
                good = all(
                    (_string_array(v) or _json_or_undecided(v))
                    if type(v) is list
                    else _node(v, depth + 1)
                    for v in value.values()
                )
        else:
            raise _Undecided
        if not good:
            ok = False
    return ok


def meta_verdict(schema: Any) -> bool | None:
    """True when ``schema`` conforms to the Draft 2020-12 metaschema, False when it does
    not, None when this check does not decide (see the module docstring)."""
    try:
        return _node(schema, 0)
    except (_Undecided, RecursionError):
        return None

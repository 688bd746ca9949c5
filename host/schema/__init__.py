"""Tool arguments against their input schema: a compiled fast check, lenient coercion, error lists.

Every tool has one input schema (JSON Schema Draft 2020-12, derived from type hints or a
pydantic model, or given raw), and this module is the only place arguments are checked
against it:

* :meth:`ArgumentSchema.is_valid` is a verdict compiled once per tool from the common keyword
  subset (``type``, ``enum``, ``const``, ``properties``, ``required``,
  ``additionalProperties``, ``items``, ``prefixItems``, ``minimum``/``maximum`` and their
  exclusive forms, ``minLength``/``maxLength``, ``pattern``, ``format``,
  ``min/maxItems``, ``min/maxProperties``, ``allOf``/``anyOf``/``oneOf``/``not`` and local
  ``$ref``). A schema using any other assertion keyword is checked by ``jsonschema``
  instead. Valid arguments cost this one check and nothing else.
* :meth:`ArgumentSchema.coerce` applies the lenient conversions (see :func:`coerce`'s rules,
  the ones AJV's ``coerceTypes`` applies) on a copy; it runs only when the check failed.
* :meth:`ArgumentSchema.problems` lists every failing path with its reason (``jsonschema``,
  imported on first use, so a host whose calls are valid never loads it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from toolwire import _json
from toolwire.jsonschema_facts import (
    TYPE_CHECKS,
    RefError,
    enum_types,
    is_type,
    json_type,
    resolve_ref,
)

if TYPE_CHECKING:
    import jsonschema

__all__ = [
    "ArgumentSchema",
    "UnsupportedSchema",
    "declared_properties",
    "json_equal",
    "object_root",
]

Check = Callable[[Any], bool]

_MISSING: Any = object()

DRAFT_2020_12 = (
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2020-12/schema#",
)

# Assertion keywords the fast check does not implement: a schema using any of them is
# checked by jsonschema as a whole.
_UNSUPPORTED = frozenset(
    {
        "multipleOf",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "dependentRequired",
        "dependentSchemas",
        "dependencies",
        "if",
        "then",
        "else",
        "patternProperties",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
        "$dynamicRef",
        "$dynamicAnchor",
        "$recursiveRef",
        "$recursiveAnchor",
        "$anchor",
        "$id",
    }
)


class UnsupportedSchema(Exception):
    """The schema uses a keyword the fast check does not implement."""


# ---------------------------------------------------------------------------- equality


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema's ``enum``/``const`` define it: booleans never equal numbers,
    1 equals 1.0, arrays and objects compare member by member."""
    if a is b:
        return True
    ta, tb = type(a), type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta in (int, float) and tb in (int, float):
        return bool(a == b)
    if ta is not tb:
        return False
    if ta is list:
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if ta is dict:
        return a.keys() == b.keys() and all(json_equal(v, b[k]) for k, v in a.items())
    return bool(a == b)


# ---------------------------------------------------------------------------- types

# Value types (TYPE_CHECKS, is_type, json_type), local $ref resolution and the types an
# enum implies come from toolwire.jsonschema_facts, shared with the client: one answer for
# both sides (1.0 is an integer, Draft 2020-12 Validation §6.1.1).


# ---------------------------------------------------------------------------- compiler


def _true(x: Any) -> bool:
    return True


def _false(x: Any) -> bool:
    return False


def _all(checks: list[Check]) -> Check:
    if not checks:
        return _true
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        a, b = checks

        def both(x: Any) -> bool:
            return a(x) and b(x)

        return both
    items = tuple(checks)

    def every(x: Any) -> bool:
        for c in items:  # noqa: SIM110 - a plain loop is faster than all(<genexpr>)
            if not c(x):
                return False
        return True

    return every


_format_checker: Any = None


def _conforms(x: Any, fmt: str) -> bool:
    """``format`` as jsonschema asserts it (its default format checker), imported on first use."""
    global _format_checker
    if _format_checker is None:
        import jsonschema

        _format_checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    return bool(_format_checker.conforms(x, fmt))


def _resolve(root: Any, ref: str) -> Any:
    """The node a local ``$ref`` (``#`` or ``#/json/pointer``) names inside ``root``
    (:func:`toolwire.jsonschema_facts.resolve_ref`).

    Raises:
        UnsupportedSchema: a remote or unresolvable reference.
    """
    try:
        return resolve_ref(root, ref)
    except RefError as exc:
        raise UnsupportedSchema(str(exc)) from None


class _Compiler:
    """Compiles schema nodes to boolean checks; local ``$ref``s resolve against ``root``."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def resolve(self, ref: str) -> Any:
        return _resolve(self.root, ref)

    def ref(self, ref: str) -> Check:
        found = self.refs.get(ref)
        if found is not None:
            return found
        target: list[Check] = []

        def follow(x: Any) -> bool:
            return target[0](x)

        self.refs[ref] = follow  # recursive schemas reach this trampoline
        target.append(self.compile(self.resolve(ref)))
        return follow

    def compile(self, node: Any) -> Check:
        if node is True:
            return _true
        if node is False:
            return _false
        if type(node) is not dict:
            raise UnsupportedSchema(f"schema node {node!r}")
        bad = _UNSUPPORTED.intersection(node)
        if bad:
            raise UnsupportedSchema(f"keywords {sorted(bad)}")
        checks: list[Check] = []
        strict_object = False

        if "$ref" in node:
            ref = node["$ref"]
            if type(ref) is not str:
                raise UnsupportedSchema("$ref")
            checks.append(self.ref(ref))

        t = node.get("type")
        if t is not None:
            names = [t] if type(t) is str else t
            if type(names) is not list or not all(n in TYPE_CHECKS for n in names):
                raise UnsupportedSchema(f"type {t!r}")
            if names == ["object"]:
                strict_object = True  # folded into the object check below
            elif len(names) == 1:
                checks.append(TYPE_CHECKS[names[0]])
            else:
                type_checks = tuple(TYPE_CHECKS[n] for n in names)

                def any_type(x: Any) -> bool:
                    for c in type_checks:  # noqa: SIM110
                        if c(x):
                            return True
                    return False

                checks.append(any_type)

        if "enum" in node:
            checks.append(self._enum(node["enum"]))
        if "const" in node:
            const = node["const"]
            checks.append(lambda x: json_equal(x, const))

        checks += self._numeric(node)
        checks += self._string(node)
        checks += self._array(node)
        obj = self._object(node, strict_object)
        if obj is not None:
            checks.append(obj)
        elif strict_object:
            checks.append(TYPE_CHECKS["object"])

        for sub in node.get("allOf", ()):
            checks.append(self.compile(sub))
        if "anyOf" in node:
            arms = tuple(self.compile(s) for s in node["anyOf"])

            def any_of(x: Any) -> bool:
                for arm in arms:  # noqa: SIM110
                    if arm(x):
                        return True
                return False

            checks.append(any_of)
        if "oneOf" in node:
            one_arms = tuple(self.compile(s) for s in node["oneOf"])

            def one_of(x: Any) -> bool:
                n = 0
                for arm in one_arms:
                    if arm(x):
                        n += 1
                        if n > 1:
                            return False
                return n == 1

            checks.append(one_of)
        if "not" in node:
            negated = self.compile(node["not"])
            checks.append(lambda x: not negated(x))
        if "format" in node and type(node["format"]) is str:
            fmt = node["format"]
            checks.append(lambda x: _conforms(x, fmt))
        return _all(checks)

    @staticmethod
    def _enum(values: Any) -> Check:
        if type(values) is not list:
            raise UnsupportedSchema("enum")
        if values and all(type(v) is str for v in values):
            strings = frozenset(values)
            return lambda x: type(x) is str and x in strings
        options = tuple(values)
        return lambda x: any(json_equal(x, v) for v in options)

    @staticmethod
    def _numeric(node: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        for key, op in (
            ("minimum", lambda x, b: x >= b),
            ("maximum", lambda x, b: x <= b),
            ("exclusiveMinimum", lambda x, b: x > b),
            ("exclusiveMaximum", lambda x, b: x < b),
        ):
            if key in node:
                bound = node[key]
                if not is_type(bound, "number"):
                    raise UnsupportedSchema(key)

                def bounded(x: Any, bound: Any = bound, op: Any = op) -> bool:
                    t = type(x)
                    return (t is not int and t is not float) or op(x, bound)

                out.append(bounded)
        return out

    @staticmethod
    def _string(node: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        if "minLength" in node:
            lo = node["minLength"]
            out.append(lambda x: type(x) is not str or len(x) >= lo)
        if "maxLength" in node:
            hi = node["maxLength"]
            out.append(lambda x: type(x) is not str or len(x) <= hi)
        if "pattern" in node:
            try:
                rx = re.compile(node["pattern"])
            except (re.error, TypeError) as exc:
                raise UnsupportedSchema("pattern") from exc
            out.append(lambda x: type(x) is not str or rx.search(x) is not None)
        return out

    def _array(self, node: dict[str, Any]) -> list[Check]:
        out: list[Check] = []
        if "minItems" in node:
            lo = node["minItems"]
            out.append(lambda x: type(x) is not list or len(x) >= lo)
        if "maxItems" in node:
            hi = node["maxItems"]
            out.append(lambda x: type(x) is not list or len(x) <= hi)
        prefix = node.get("prefixItems")
        items = node.get("items", _MISSING)
        if prefix is None and items is _MISSING:
            return out
        if prefix is not None and type(prefix) is not list:
            raise UnsupportedSchema("prefixItems")
        firsts = tuple(self.compile(p) for p in prefix or ())
        n_first = len(firsts)
        rest = None if items is _MISSING else self.compile(items)

        def array(x: Any) -> bool:
            if type(x) is not list:
                return True
            for check, item in zip(firsts, x, strict=False):
                if not check(item):
                    return False
            if rest is not None:
                for i in range(n_first, len(x)):
                    if not rest(x[i]):
                        return False
            return True

        out.append(array)
        return out

    def _object(self, node: dict[str, Any], strict: bool) -> Check | None:
        props = node.get("properties")
        required = node.get("required")
        addl = node.get("additionalProperties", _MISSING)
        lo = node.get("minProperties")
        hi = node.get("maxProperties")
        if props is None and required is None and addl is _MISSING and lo is None and hi is None:
            return None
        if props is not None and type(props) is not dict:
            raise UnsupportedSchema("properties")
        if required is not None and (
            type(required) is not list or not all(type(r) is str for r in required)
        ):
            raise UnsupportedSchema("required")
        prop_checks = tuple((k, self.compile(v)) for k, v in (props or {}).items())
        req = tuple(required or ())
        declared = frozenset(props or ())
        extra: Check | None = None if addl is _MISSING else self.compile(addl)
        if extra is _true:
            extra = None

        if extra is None and lo is None and hi is None:
            # The common shape (tool arguments): type, required, properties.
            return _plain_object(props or {}, req, prop_checks, strict)

        def full(x: Any) -> bool:
            if type(x) is not dict:
                return not strict
            for name in req:
                if name not in x:
                    return False
            for name, check in prop_checks:
                if name in x and not check(x[name]):
                    return False
            if extra is not None:
                for k, v in x.items():
                    if k not in declared and not extra(v):
                        return False
            n = len(x)
            if lo is not None and n < lo:
                return False
            return hi is None or n <= hi

        return full


_INLINE_TYPES = {
    "string": "type({v}) is str",
    "boolean": "type({v}) is bool",
    "integer": "(type({v}) is int or (type({v}) is float and {v}.is_integer()))",
    "number": "(type({v}) is int or type({v}) is float)",
    "null": "{v} is None",
    "array": "type({v}) is list",
    "object": "type({v}) is dict",
}
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}
    | {"$comment", "contentMediaType", "contentEncoding"}
)


def _inline_type(node: Any) -> str | None:
    """The JSON type name when ``node`` asserts nothing but one type, else None."""
    if type(node) is not dict or type(node.get("type")) is not str:
        return None
    if not set(node).difference(_ANNOTATIONS, {"type"}) and node["type"] in _INLINE_TYPES:
        return str(node["type"])
    return None


def _plain_object(
    props: dict[str, Any], req: tuple[str, ...], checks: tuple[tuple[str, Check], ...], strict: bool
) -> Check:
    """A check for ``{type: object, properties, required}`` generated as straight-line
    code: single-type properties are tested inline, others call their compiled check."""
    lines = ["def check(x):", "    if type(x) is not dict:", f"        return {not strict!r}"]
    env: dict[str, Any] = {"_MISSING": _MISSING}
    required = set(req)
    for name in req:
        if name not in props:
            lines += [f"    if {name!r} not in x:", "        return False"]
    for i, (name, check) in enumerate(checks):
        inline = _inline_type(props[name])
        test = _INLINE_TYPES[inline].format(v="v") if inline else f"c{i}(v)"
        if not inline:
            env[f"c{i}"] = check
        if name in required:
            lines += [
                f"    v = x.get({name!r}, _MISSING)",
                "    if v is _MISSING:",
                "        return False",
            ]
        else:
            lines += [f"    v = x.get({name!r}, _MISSING)", "    if v is _MISSING:", "        pass"]
        lines += [f"    elif not ({test}):", "        return False"]
    lines.append("    return True")
    # Property names enter the code only as repr() literals; no argument value reaches it.
    exec("\n".join(lines), env)
    generated: Check = env["check"]
    return generated


# ---------------------------------------------------------------------------- the root


_DEFS_REFS = ("#/$defs/", "#/definitions/")

# Keywords whose meaning depends on their siblings in the same schema object: two
# schema objects that both use one of a group cannot be merged into one object.
_SIBLING_GROUPS = (
    frozenset({"properties", "patternProperties", "additionalProperties"}),
    frozenset({"prefixItems", "items", "additionalItems"}),
    frozenset({"contains", "minContains", "maxContains"}),
    frozenset({"if", "then", "else"}),
)
# Keywords that tie a schema object to its place (base URI, anchors, evaluation by
# siblings): a ``$ref`` target using one is never moved to the root.
_PLACE_BOUND = frozenset(
    {"$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$schema", "$defs"}
    | {"definitions", "unevaluatedProperties", "unevaluatedItems"}
)


def object_root(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with a root ``$ref`` into its own ``$defs``/``definitions`` inlined.

    pydantic writes a recursive model as ``{"$defs": {"Node": {...}}, "$ref":
    "#/$defs/Node"}``, and a raw schema may have the same shape; MCP wants ``type:
    "object"`` at the root of an input schema (and clients look for ``properties``
    there). The target's keywords are merged into the root, ``$defs`` kept as they are,
    so every ``$ref`` inside still resolves and the schema accepts exactly the same
    instances. Chains of such references are followed.

    Merging is skipped (the schema returned as it is, plus ``type: "object"`` when the
    reference's target requires an object) where it could change the meaning: the
    target and the root both use keywords that depend on their siblings
    (``properties``/``additionalProperties``, ``items``/``prefixItems``, ...), give the
    same keyword different values (annotations excepted: the root's win), or the
    target uses ``$id``, anchors, nested ``$defs`` or ``unevaluated*``. An empty
    ``properties`` at the root (a placeholder) gives way to the target's.

    The input is never changed; the result shares subschemas with it.
    """
    out = schema
    seen: set[str] = set()
    while True:
        ref = out.get("$ref")
        if type(ref) is not str or not ref.startswith(_DEFS_REFS) or ref in seen:
            break
        seen.add(ref)
        try:
            target = _resolve(schema, ref)
        except UnsupportedSchema:
            break
        merged = _merged_root(out, target) if type(target) is dict else None
        if merged is None:
            break
        out = merged
    if "type" not in out and _ref_type(schema, out) == "object":
        out = {"type": "object", **out}
    return out


def _merged_root(root: dict[str, Any], target: dict[str, Any]) -> dict[str, Any] | None:
    """``root`` (minus its ``$ref``) and its ``$ref`` target as one schema object, or None
    when the two cannot be merged without changing the meaning (see :func:`object_root`)."""
    if _PLACE_BOUND.intersection(target):
        return None
    rest = {k: v for k, v in root.items() if k != "$ref"}
    if rest.get("properties") == {} and "properties" in target:
        del rest["properties"]
    for group in _SIBLING_GROUPS:
        if group.intersection(rest) and group.intersection(target):
            return None
    merged: dict[str, Any] = {"$schema": rest["$schema"]} if "$schema" in rest else {}
    for key, value in target.items():
        if key in rest and key not in _ANNOTATIONS and not json_equal(rest[key], value):
            return None
        merged[key] = value
    merged.update(rest)
    return merged


def _ref_type(root: dict[str, Any], node: dict[str, Any]) -> Any:
    """The ``type`` a chain of local ``$ref``s from ``node`` reaches (None if none)."""
    seen: set[str] = set()
    while "type" not in node:
        ref = node.get("$ref")
        if type(ref) is not str or ref in seen:
            return None
        seen.add(ref)
        try:
            node = _resolve(root, ref)
        except UnsupportedSchema:
            return None
        if type(node) is not dict:
            return None
    return node["type"]


# Keywords by which a schema object may admit, or make conditional, top-level fields
# other than its ``properties``: with any of them in play the declared set is unknown.
_OPEN_KEYWORDS = frozenset(
    {"additionalProperties", "patternProperties", "unevaluatedProperties"}
    | {"anyOf", "oneOf", "if", "then", "else", "dependentSchemas", "dependencies"}
    | {"$dynamicRef", "$recursiveRef"}
)


def declared_properties(schema: Any) -> tuple[str, ...] | None:
    """The top-level property names an object schema declares, in declaration order;
    None when they cannot be known (so no field may be dropped as undeclared).

    The names are collected from the root's ``properties`` and from every schema the
    root applies to the same instance through a local ``$ref`` or ``allOf`` (followed
    transitively, each reference once): a root ``{"$ref": "#/$defs/Node"}`` declares
    Node's properties. None when none of them has ``properties``, when one may admit
    other fields (``additionalProperties``, ``patternProperties``,
    ``unevaluatedProperties``) or declares fields conditionally (``anyOf``, ``oneOf``,
    ``if``, ``dependentSchemas``, dynamic references), or when a reference does not
    resolve.
    """
    names: dict[str, None] = {}
    found = False
    pending: list[Any] = [schema]
    seen: set[str] = set()
    while pending:
        node = pending.pop(0)
        if node is True:
            continue
        if type(node) is not dict or _OPEN_KEYWORDS.intersection(node):
            return None
        props = node.get("properties")
        if props is not None:
            if type(props) is not dict:
                return None
            found = True
            names.update(dict.fromkeys(props))
        ref = node.get("$ref")
        if ref is not None:
            if type(ref) is not str:
                return None
            if ref not in seen:
                seen.add(ref)
                try:
                    pending.append(_resolve(schema, ref))
                except UnsupportedSchema:
                    return None
        arms = node.get("allOf")
        if arms is not None:
            if type(arms) is not list:
                return None
            pending.extend(arms)
    return tuple(names) if found else None


# ---------------------------------------------------------------------------- coercion


_NUMBER_RE = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_INT_RE = re.compile(r"[-+]?\d+")


def _to_number(x: Any, integer: bool) -> Any:
    t = type(x)
    if t is str:
        s = x.strip()
        if not _NUMBER_RE.fullmatch(s):
            return _MISSING
        if _INT_RE.fullmatch(s):
            return int(s)
        f = float(s)
        if not math.isfinite(f):
            return _MISSING
        if integer:
            return int(f) if f.is_integer() else _MISSING
        return f
    if t is bool:
        return int(x)
    return _MISSING


def _to_string(x: Any) -> Any:
    t = type(x)
    if t is bool:
        return "true" if x else "false"
    if t is int:
        return str(x)
    if t is float:
        if x.is_integer() and abs(x) < 1e21:
            return str(int(x))
        return repr(x)
    return _MISSING


def _to_boolean(x: Any) -> Any:
    t = type(x)
    if t is str:
        return {"true": True, "false": False}.get(x, _MISSING)
    if t is int or t is float:
        return True if x == 1 else False if x == 0 else _MISSING
    return _MISSING


def _implied_type(node: dict[str, Any]) -> list[str] | None:
    """The types a node's ``enum``/``const`` values have, for a node without ``type``
    (:func:`toolwire.jsonschema_facts.enum_types`).

    So ``{"enum": [1, 2, 3]}`` coerces ``"2"`` to ``2`` as ``{"type": "integer", ...}``
    would (a model often sends an enum's number as a string). None without either
    keyword.
    """
    return enum_types(node)


def _to_null(x: Any) -> Any:
    t = type(x)
    if (t is str and x == "") or ((t is int or t is float) and x == 0) or x is False:
        return None
    return _MISSING


# ---------------------------------------------------------------------------- the schema


class ArgumentSchema:
    """One tool's input schema, compiled.

    Args:
        schema: a JSON Schema (Draft 2020-12 unless its ``$schema`` names another draft).

    Raises:
        jsonschema.SchemaError: only from :meth:`check_schema`, which callers run on raw
            schemas they did not derive themselves.
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._validator: jsonschema.protocols.Validator | None = None
        self._subchecks: dict[int, Check] = {}
        self._check: Check | None = None
        self._fast = True
        self._compiler: _Compiler | None = None
        # Top-level fields that reach the handler: the declared ones (also through a
        # root $ref or allOf), unless the schema itself may admit others.
        self._order = declared_properties(schema)
        self.declared: frozenset[str] | None = (
            None if self._order is None else frozenset(self._order)
        )

    def _compile(self) -> Check:
        """Compile the check (on first use: a host with many tools compiles only the
        ones that are called)."""
        check = self._check
        if check is not None:
            return check
        declared = self.schema.get("$schema")
        try:
            if declared is not None and declared not in DRAFT_2020_12:
                raise UnsupportedSchema(f"$schema {declared!r}")
            compiler = _Compiler(self.schema)
            check = compiler.compile(self.schema)
            self._compiler = compiler
        except UnsupportedSchema:
            self._fast = False
            self._compiler = None
            check = self._jsonschema_valid
        self._check = check
        return check

    @property
    def is_valid(self) -> Check:
        """``is_valid(instance) -> bool``: the verdict (compiled on first use)."""
        check = self._check
        return check if check is not None else self._compile()

    @property
    def fast(self) -> bool:
        """True when the compiled check is used, False when jsonschema checks."""
        self._compile()
        return self._fast

    # -------------------------------------------------------------- jsonschema (slow path)

    @property
    def validator(self) -> jsonschema.protocols.Validator:
        """The jsonschema validator for this schema (built on first use)."""
        if self._validator is None:
            import jsonschema

            cls = jsonschema.validators.validator_for(
                self.schema, default=jsonschema.Draft202012Validator
            )
            self._validator = cls(self.schema, format_checker=cls.FORMAT_CHECKER)
        return self._validator

    def check_schema(self) -> None:
        """Check the schema against its metaschema.

        A schema :func:`~toolwire.host.schema.metacheck.meta_verdict` finds conforming costs one
        walk; any other is checked by jsonschema (for the verdict and its message).

        Raises:
            jsonschema.SchemaError: the schema is not a valid JSON Schema.
        """
        from .metacheck import meta_verdict  # only for a declared input_schema

        if meta_verdict(self.schema) is True:
            return
        import jsonschema

        cls = jsonschema.validators.validator_for(
            self.schema, default=jsonschema.Draft202012Validator
        )
        cls.check_schema(self.schema)

    def _jsonschema_valid(self, instance: Any) -> bool:
        return bool(self.validator.is_valid(instance))

    def _sub_valid(self, node: Any, instance: Any) -> bool:
        """Whether ``instance`` validates against ``node``, a subschema of this schema."""
        check = self._subchecks.get(id(node))
        if check is None:
            self._compile()
            if self._compiler is not None:
                try:
                    check = self._compiler.compile(node)
                except UnsupportedSchema:
                    check = None
            if check is None:
                sub = self.validator.evolve(schema=node)
                check = sub.is_valid
            self._subchecks[id(node)] = check
        try:
            return bool(check(instance))
        except RecursionError:
            return False

    def problems(self, instance: Any) -> list[tuple[str, str]]:
        """Every failing ``(path, reason)`` of ``instance``; empty when it is valid.

        Paths are dotted (``edits.0.oldText``); a missing required field is named in the
        path; ``(root)`` means the arguments object itself.
        """
        try:
            errors = list(self.validator.iter_errors(instance))
        except RecursionError:
            return [("(root)", "Arguments are nested too deeply")]
        found: list[tuple[list[Any], str]] = []
        for err in errors:
            path = list(err.absolute_path)
            if err.validator == "required" and isinstance(err.instance, dict):
                required = err.validator_value if isinstance(err.validator_value, list) else []
                for name in required:
                    if name not in err.instance:
                        found.append(([*path, name], "Field required"))
                continue
            found.append((path, _reason(err)))
        # Report in declaration order (top-level fields as the schema lists them).
        props = self.schema.get("properties")
        names = self._order if self._order is not None else props if type(props) is dict else ()
        order = {k: i for i, k in enumerate(names)}

        def key(item: tuple[list[Any], str]) -> list[tuple[int, Any]]:
            out: list[tuple[int, Any]] = []
            for depth, part in enumerate(item[0]):
                if type(part) is int:
                    out.append((0, part))
                elif depth == 0 and part in order:
                    out.append((1, order[part]))
                else:
                    out.append((2, str(part)))
            return out

        found.sort(key=key)
        return [(".".join(str(p) for p in path) or "(root)", reason) for path, reason in found]

    # -------------------------------------------------------------- coercion

    def coerce(self, instance: Any) -> Any:
        """``instance`` with the lenient conversions applied; the input is never changed.

        Rules (per node, before its other keywords, recursing into ``properties``,
        ``additionalProperties``, ``prefixItems`` and ``items``):

        * null is never turned into another value (no ``""``, 0 or false: a departure
          from Pi's table, so that a null can never empty a file or delete text). A
          null for an *optional* declared property whose schema does not admit null is
          dropped, so the property counts as absent and its default applies; a null
          anywhere else (a required property, an array item, an additional property,
          the arguments themselves) stays and fails validation, naming its path.
        * number/integer: a numeric string becomes the number (for integer, a string
          with a fraction such as ``"42.1"`` stays and fails); true/false → 1/0.
        * boolean: only ``"true"``/``"false"`` and 1/0 convert.
        * string: a number or boolean becomes its text.
        * null: ``""``, 0 and false become null.
        * object/array: a string holding JSON is parsed, kept only if the result
          (coerced) validates against the node.
        * a type list leaves a value that already matches one of its types alone;
          otherwise the first conversion that changes the value wins.
        * anyOf/oneOf: a value valid against an arm as it is stays; otherwise each arm
          coerces a copy and the first copy that validates is kept (else unchanged).
        * allOf: coerced through each arm in turn; ``$ref``: through its target.
        * a node without ``type`` but with ``enum``/``const`` coerces towards the types of
          those values (``enum: [1, 2]`` turns ``"2"`` into ``2``).
        """
        try:
            return self._coerce(self.schema, instance, 0)
        except RecursionError:
            return instance

    def _coerce(self, node: Any, x: Any, depth: int) -> Any:
        if type(node) is not dict or depth > 200:
            return x
        ref = node.get("$ref")
        if type(ref) is str:
            try:
                target = _resolve(self.schema, ref)
            except UnsupportedSchema:
                target = None
            if target is not None:
                x = self._coerce(target, x, depth + 1)
        t = node.get("type")
        if t is None:
            t = _implied_type(node)
        if t is not None:
            names = [t] if type(t) is str else t if type(t) is list else []
            if names and not any(is_type(x, n) for n in names if type(n) is str):
                for name in names:
                    y = self._convert(name, node, x, depth)
                    if y is not _MISSING:
                        x = y
                        break
        for sub in node.get("allOf", ()) if type(node.get("allOf")) is list else ():
            x = self._coerce(sub, x, depth + 1)
        for key in ("anyOf", "oneOf"):
            arms = node.get(key)
            if type(arms) is not list or any(self._sub_valid(arm, x) for arm in arms):
                continue
            for arm in arms:
                y = self._coerce(arm, x, depth + 1)
                if y is not x and self._sub_valid(arm, y):
                    x = y
                    break
        if type(x) is dict:
            x = self._coerce_object(node, x, depth)
        elif type(x) is list:
            x = self._coerce_array(node, x, depth)
        return x

    def _coerce_object(self, node: dict[str, Any], x: dict[str, Any], depth: int) -> Any:
        props = node.get("properties")
        props = props if type(props) is dict else {}
        addl = node.get("additionalProperties")
        addl = addl if type(addl) is dict else None
        if not props and addl is None:
            return x
        required = node.get("required")
        required = required if type(required) is list else ()
        out: dict[str, Any] | None = None
        for k, v in x.items():
            declared = props.get(k)
            if (
                v is None
                and declared is not None
                and k not in required
                and not self._sub_valid(declared, None)
            ):
                # An optional property given as null counts as absent (its default applies).
                if out is None:
                    out = dict(x)
                del out[k]
                continue
            sub = props.get(k, addl)
            if sub is None:
                continue
            y = self._coerce(sub, v, depth + 1)
            if y is not v:
                if out is None:
                    out = dict(x)
                out[k] = y
        return x if out is None else out

    def _coerce_array(self, node: dict[str, Any], x: list[Any], depth: int) -> Any:
        prefix = node.get("prefixItems")
        prefix = prefix if type(prefix) is list else []
        items = node.get("items")
        if type(items) is list:  # the older drafts' tuple form
            prefix, items = items, None
        if not prefix and type(items) is not dict:
            return x
        out: list[Any] | None = None
        for i, v in enumerate(x):
            sub = prefix[i] if i < len(prefix) else items if type(items) is dict else None
            if sub is None:
                continue
            y = self._coerce(sub, v, depth + 1)
            if y is not v:
                if out is None:
                    out = list(x)
                out[i] = y
        return x if out is None else out

    def _convert(self, name: Any, node: dict[str, Any], x: Any, depth: int) -> Any:
        if name == "number":
            return _to_number(x, integer=False)
        if name == "integer":
            return _to_number(x, integer=True)
        if name == "string":
            return _to_string(x)
        if name == "boolean":
            return _to_boolean(x)
        if name == "null":
            return _to_null(x)
        if name in ("object", "array") and type(x) is str:
            try:
                parsed = _json.loads(x)
            except ValueError:
                return _MISSING
            if not is_type(parsed, name):
                return _MISSING
            parsed = self._coerce(node, parsed, depth + 1)
            return parsed if self._sub_valid(node, parsed) else _MISSING
        return _MISSING


def _reason(err: Any) -> str:
    """A short reason for one jsonschema error."""
    if err.validator == "type":
        expected = err.validator_value
        names = expected if isinstance(expected, list) else [expected]
        return f"expected {' or '.join(str(n) for n in names)}, got {json_type(err.instance)}"
    return str(err.message)

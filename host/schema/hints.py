"""Input schemas from plain type hints, without importing pydantic.

Most tool parameters are JSON-shaped: ``str``, ``int``, ``float``, ``bool``, ``None``,
``list[...]``, ``dict[str, ...]``, unions and ``Literal`` of those, optionally
``Annotated`` with a description (a string) or a :class:`Param`. For these the schema
is written here directly, in the same shape pydantic would produce, so a host whose
tools are all of this kind starts without importing pydantic (about a third of its
start-up time and memory). Anything else returns None and the caller falls back to
pydantic (:func:`toolwire.host.tools.decorator.build_tool`).
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, get_args, get_origin, get_type_hints

__all__ = ["MISSING", "Param", "is_typeddict", "json_default", "simple_schema", "typeddict_fields"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""Marks "no default given" (None is a valid default)."""


class Param:
    """Describe one tool parameter without pydantic: ``Annotated[int, Param("How many.", ge=1)]``.

    Args:
        description: what the model reads about the parameter.
        default: the value used when the argument is absent (a signature default works too).
        ge, gt, le, lt: numeric bounds (JSON Schema ``minimum``, ``exclusiveMinimum``,
            ``maximum``, ``exclusiveMaximum``).
        min_length, max_length: bounds on a string's length or an array's items.
        pattern: a regular expression a string must match (ECMA-262, as JSON Schema says).
        examples: example values shown to the model.
    """

    __slots__ = (
        "default",
        "description",
        "examples",
        "ge",
        "gt",
        "le",
        "lt",
        "max_length",
        "min_length",
        "pattern",
    )

    def __init__(
        self,
        description: str | None = None,
        *,
        default: Any = MISSING,
        ge: float | None = None,
        gt: float | None = None,
        le: float | None = None,
        lt: float | None = None,
        min_length: int | None = None,
        max_length: int | None = None,
        pattern: str | None = None,
        examples: list[Any] | None = None,
    ) -> None:
        self.description = description
        self.default = default
        self.ge, self.gt, self.le, self.lt = ge, gt, le, lt
        self.min_length, self.max_length = min_length, max_length
        self.pattern = pattern
        self.examples = examples

    def get_default(self, *, call_default_factory: bool = True) -> Any:
        """The default value (the same call shape as pydantic's ``FieldInfo``)."""
        return None if self.default is MISSING else self.default

    def constraints(self, base: dict[str, Any]) -> dict[str, Any]:
        """JSON Schema keywords for the constraints, given the base type's schema."""
        out: dict[str, Any] = {}
        for attr, key in (
            ("ge", "minimum"),
            ("gt", "exclusiveMinimum"),
            ("le", "maximum"),
            ("lt", "exclusiveMaximum"),
        ):
            value = getattr(self, attr)
            if value is not None:
                out[key] = value
        is_array = base.get("type") == "array"
        if self.min_length is not None:
            out["minItems" if is_array else "minLength"] = self.min_length
        if self.max_length is not None:
            out["maxItems" if is_array else "maxLength"] = self.max_length
        if self.pattern is not None:
            out["pattern"] = self.pattern
        if self.examples is not None:
            out["examples"] = list(self.examples)
        return out


_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    None: {"type": "null"},
}
_JSON_TYPE_OF = {str: "string", int: "integer", float: "number", bool: "boolean"}


def simple_schema(ann: Any) -> dict[str, Any] | None:
    """The JSON Schema of a JSON-shaped annotation, or None when pydantic is needed.

    Supported: str, int, float, bool, None, Any/object, list[X], dict[str, X], unions
    (``X | None`` included), ``Literal`` of str/int/bool, ``Annotated[X, "text" |
    Param]``, and ``TypedDict`` classes of those (written inline, where pydantic would
    use ``$defs``). Otherwise the output matches pydantic's for the same annotation
    (minus titles).
    """
    if is_typeddict(ann):
        fields = typeddict_fields(ann)
        if fields is None:
            return None
        properties: dict[str, Any] = {}
        for key, (field_ann, _) in fields.items():
            prop = simple_schema(field_ann)
            if prop is None:
                return None
            properties[key] = prop
        td: dict[str, Any] = {"properties": properties}
        required = [k for k, (_, req) in fields.items() if req]
        if required:
            td["required"] = required
        td["type"] = "object"
        if ann.__doc__ and not ann.__doc__.startswith(f"{ann.__name__}("):
            td = {"description": " ".join(ann.__doc__.split()), **td}
        return td
    scalar = _SCALARS.get(ann) if _hashable(ann) else None
    if scalar is not None:
        return dict(scalar)
    if ann is Any or ann is object:
        return {}
    origin = get_origin(ann)
    if origin is Annotated:
        base, *extras = get_args(ann)
        inner = simple_schema(base)
        if inner is None:
            return None
        description: str | None = None
        for extra in extras:
            if isinstance(extra, str):
                description = extra
            elif isinstance(extra, Param):
                inner.update(extra.constraints(inner))
                if extra.description is not None:
                    description = extra.description
            else:
                return None
        if description is None:
            return inner
        inner.pop("description", None)
        return {"description": description, **inner}  # pydantic's key order
    if ann is list or origin is list:
        args = get_args(ann)
        items = simple_schema(args[0]) if args else {}
        return None if items is None else {"items": items, "type": "array"}
    if ann is dict or origin is dict:
        args = get_args(ann)
        if args and args[0] is not str:
            return None
        if not args or args[1] is Any:
            return {"additionalProperties": True, "type": "object"}
        values = simple_schema(args[1])
        return None if values is None else {"additionalProperties": values, "type": "object"}
    if origin in (typing.Union, types.UnionType):
        members = [simple_schema(a) for a in get_args(ann)]
        if any(m is None for m in members):
            return None
        return {"anyOf": members}
    if origin is typing.Literal:
        literals = list(get_args(ann))
        kinds = {type(v) for v in literals}
        if not kinds <= {str, int, bool}:
            return None
        out: dict[str, Any] = {}
        if len(literals) == 1:
            out["const"] = literals[0]
        else:
            out["enum"] = literals
        if len(kinds) == 1:
            out["type"] = _JSON_TYPE_OF[kinds.pop()]
        return out
    return None


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def json_default(value: Any) -> tuple[bool, Any]:
    """``(True, value)`` when ``value`` can appear as a schema ``default`` (plain JSON)."""
    if value is None or type(value) in (str, int, float, bool):
        return True, value
    if type(value) in (list, tuple):
        items = [json_default(v) for v in value]
        if all(ok for ok, _ in items):
            return True, [v for _, v in items]
        return False, None
    if type(value) is dict and all(type(k) is str for k in value):
        pairs = {k: json_default(v) for k, v in value.items()}
        if all(ok for ok, _ in pairs.values()):
            return True, {k: v for k, (_, v) in pairs.items()}
    return False, None


def is_typeddict(ann: Any) -> bool:
    """True for a ``TypedDict`` class from ``typing`` or ``typing_extensions``."""
    return (
        isinstance(ann, type)
        and issubclass(ann, dict)
        and hasattr(ann, "__required_keys__")
        and hasattr(ann, "__optional_keys__")
    )


def typeddict_fields(td: Any) -> dict[str, tuple[Any, bool]] | None:
    """``{key: (annotation, required)}`` of a TypedDict, ``Required``/``NotRequired``
    unwrapped; None when its hints cannot be read."""
    try:
        hints = get_type_hints(td, include_extras=True)
    except Exception:
        return None
    out: dict[str, tuple[Any, bool]] = {}
    for key, ann in hints.items():
        required = key in td.__required_keys__
        origin = get_origin(ann)
        # Under ``from __future__ import annotations`` Python 3.11 cannot see a string
        # NotRequired[...] when it builds __required_keys__; the evaluated hint can.
        if origin is typing.NotRequired:
            ann, required = get_args(ann)[0], False
        elif origin is typing.Required:
            ann, required = get_args(ann)[0], True
        out[key] = (ann, required)
    return out

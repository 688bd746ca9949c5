"""pydantic and TypedDict glue for tool declarations: model and TypedDict detection,
output schemas, pydantic's schemas cleaned, :class:`~toolwire.host.schema.hints.Param` as
pydantic ``Field`` metadata. pydantic is imported only when a declaration needs it.
"""

from __future__ import annotations

import sys
import typing
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    get_args,
    get_origin,
    get_type_hints,
)

from ..schema import object_root
from ..schema.hints import MISSING, Param

if TYPE_CHECKING:
    from pydantic import TypeAdapter


__all__ = [
    "clean_schema",
    "is_model",
    "is_typeddict_class",
    "output_schema_of",
    "portable_typeddict",
    "pydantic_annotation",
    "pydantic_metadata",
]


def is_model(ann: Any) -> bool:
    main = sys.modules.get("pydantic.main")  # a model class implies pydantic is imported
    return main is not None and isinstance(ann, type) and issubclass(ann, main.BaseModel)


def is_typeddict_class(ann: Any) -> bool:
    return isinstance(ann, type) and typing.is_typeddict(ann)


def portable_typeddict(td: Any) -> Any:
    """``td`` rebuilt as a ``typing_extensions.TypedDict``.

    pydantic refuses ``typing.TypedDict`` classes before Python 3.12; the rebuilt
    class has the same name, docstring, keys, types and required/optional split.
    """
    if sys.version_info >= (3, 12) or td.__module__ == "typing_extensions":
        return td
    import typing_extensions

    hints = get_type_hints(td, include_extras=True)
    required = getattr(td, "__required_keys__", frozenset(hints))
    fields = {
        k: (v if k in required else typing_extensions.NotRequired[v]) for k, v in hints.items()
    }
    rebuilt = typing_extensions.TypedDict(td.__name__, fields)  # type: ignore[misc]
    rebuilt.__doc__ = td.__doc__
    return rebuilt


def output_schema_of(ret: Any) -> tuple[dict[str, Any] | None, TypeAdapter[Any] | None]:
    if ret is None or not (is_model(ret) or is_typeddict_class(ret)):
        return None, None
    if is_typeddict_class(ret):
        ret = portable_typeddict(ret)
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(ret)
    schema = clean_schema(adapter.json_schema())
    if schema.get("type") != "object":
        return None, None
    return schema, adapter


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """pydantic's schema without its auto-generated ``title`` members (noise for a
    model), with the object at the root.

    A recursive model comes as ``{"$defs": {...}, "$ref": "#/$defs/Model"}``: the root
    ``$ref`` is inlined (:func:`~toolwire.host.schema.object_root`). ``properties`` is
    added (empty) only to a root that applies no other schema, so that it never stands
    beside a ``$ref`` that declares the real ones.
    """

    def walk(node: Any, in_properties: bool = False) -> Any:
        if isinstance(node, dict):
            out = {}
            for k, v in node.items():
                if k == "title" and not in_properties and isinstance(v, str):
                    continue
                out[k] = walk(v, in_properties=(k in ("properties", "$defs")))
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    cleaned: dict[str, Any] = object_root(walk(schema))
    cleaned.setdefault("type", "object")
    if cleaned.get("type") == "object" and not {"$ref", "allOf"}.intersection(cleaned):
        cleaned.setdefault("properties", {})
    return cleaned


def pydantic_metadata(value: Any) -> Any:
    """A :class:`Param` as the pydantic ``Field`` it stands for (on the pydantic path)."""
    if not isinstance(value, Param):
        return value
    from pydantic import Field

    kwargs: dict[str, Any] = {}
    for attr in (
        "description",
        "ge",
        "gt",
        "le",
        "lt",
        "min_length",
        "max_length",
        "pattern",
        "examples",
    ):
        v = getattr(value, attr)
        if v is not None:
            kwargs[attr] = v
    if value.default is not MISSING:
        kwargs["default"] = value.default
    return Field(**kwargs)


def pydantic_annotation(ann: Any) -> Any:
    """``ann`` with any :class:`Param` metadata turned into pydantic ``Field``s."""
    if get_origin(ann) is Annotated:
        base, *extras = get_args(ann)
        return Annotated[(base, *[pydantic_metadata(e) for e in extras])]
    return ann

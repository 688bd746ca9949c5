"""Argument validation: a tool's arguments checked against its input schema, then
converted for its handler (:class:`Arguments`, one entry point: :meth:`Arguments.check`).

Only after the check are values converted, where the parameter type needs it (model
instances, enums, datetimes); plain JSON values are passed as they are.
"""

from __future__ import annotations

import sys
import types
import typing
from collections.abc import Callable
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    get_args,
    get_origin,
)

from ..schema import ArgumentSchema
from ..schema.hints import Param, is_typeddict, typeddict_fields

if TYPE_CHECKING:
    from pydantic import BaseModel, TypeAdapter
    from pydantic.fields import FieldInfo


from .pydantic_glue import pydantic_annotation

__all__ = [
    "ArgumentError",
    "Arguments",
    "CheckedArguments",
    "Converter",
    "converter_for",
    "is_field_info",
    "plain_converter",
]


class ArgumentError(Exception):
    """Arguments that failed validation.

    Attributes:
        problems: ``(path, reason)`` pairs, one per failing field; path is dotted
            (``edits.0.oldText``) or ``(root)``.
    """

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{p}: {r}" for p, r in problems))


# ---------------------------------------------------------------------------- arguments


Converter = Callable[[Any], Any]


class CheckedArguments:
    """Arguments that passed a tool's input schema.

    Attributes:
        arguments: the checked JSON arguments (coerced where needed, undeclared
            top-level fields dropped): what hooks, approval and the mutation queue see.
    """

    __slots__ = ("_convert", "_kwargs", "arguments")

    def __init__(
        self,
        arguments: dict[str, Any],
        kwargs: dict[str, Any] | None,
        convert: Callable[[dict[str, Any]], dict[str, Any]],
    ) -> None:
        self.arguments = arguments
        self._kwargs = kwargs
        self._convert = convert

    def kwargs(self) -> dict[str, Any]:
        """The handler's keyword arguments (context excluded), converted once.

        Raises:
            ArgumentError: a value the schema admits but the parameter type refuses
                (a pydantic validator, a malformed datetime, ...).
        """
        if self._kwargs is None:
            self._kwargs = self._convert(self.arguments)
        return self._kwargs


class Arguments:
    """How one tool's arguments are checked and handed to its handler.

    The input schema is the single source for all three declaration styles: arguments
    are checked against it, and only then turned into the handler's keyword arguments
    (:meth:`CheckedArguments.kwargs`), converting values only where the parameter
    type needs a Python object (a pydantic model, an enum, a datetime, ...).

    Attributes:
        schema: the compiled input schema.
        style: "hints", "model" or "schema" (how the parameters were declared).
    """

    __slots__ = (
        "_fast",
        "converters",
        "field_defaults",
        "model",
        "names",
        "param",
        "schema",
        "style",
    )

    def __init__(
        self,
        schema: ArgumentSchema,
        style: str,
        *,
        names: tuple[str, ...] = (),
        converters: tuple[tuple[str, Converter], ...] = (),
        field_defaults: tuple[tuple[str, FieldInfo], ...] = (),
        model: type[BaseModel] | None = None,
        param: str | None = None,
    ) -> None:
        self.schema = schema
        self.style = style
        self.names = names
        self.converters = converters
        self.field_defaults = field_defaults
        self.model = model
        self.param = param
        # The fast path is built at the first call (a host with many tools builds only
        # the ones that are called).
        self._fast: Callable[[Any], CheckedArguments] = self._first_check

    def check(self, arguments: Any) -> CheckedArguments:
        """Check ``arguments`` against the input schema (the one validator entry point).

        Valid arguments are used as they are (minus undeclared top-level fields);
        otherwise a coerced copy is made (:meth:`ArgumentSchema.coerce`) and checked
        again. The input is never changed.

        Raises:
            ArgumentError: the (coerced) arguments still fail; every failing path listed.
        """
        return self._fast(arguments)

    def _first_check(self, arguments: Any) -> CheckedArguments:
        self._fast = self._fast_path()
        return self._fast(arguments)

    def _slow_check(self, arguments: Any) -> CheckedArguments:
        return CheckedArguments(self._check_json(arguments), None, self._convert)

    def _fast_path(self) -> Callable[[Any], CheckedArguments]:
        """The check for this tool: for valid arguments of the common shapes, one
        compiled check, one key test and one dict (keyword arguments made at once);
        else the full :meth:`_check_json`, converting on demand."""
        is_valid = self.schema.is_valid
        declared = self.schema.declared
        slow = self._slow_check
        convert = self._convert
        if self.style == "hints" and not self.converters and not self.field_defaults:
            if declared is None:
                return slow
            only_declared = declared.issuperset

            def hints(arguments: Any) -> CheckedArguments:
                try:
                    if is_valid(arguments) and only_declared(arguments):
                        return CheckedArguments(arguments, dict(arguments), convert)
                except RecursionError:
                    pass
                return slow(arguments)

            return hints
        if self.style == "schema" and self.param is not None:
            param = self.param
            only = declared.issuperset if declared is not None else None

            def raw(arguments: Any) -> CheckedArguments:
                try:
                    if (
                        is_valid(arguments)
                        and type(arguments) is dict
                        and (only is None or only(arguments))
                    ):
                        return CheckedArguments(arguments, {param: arguments}, convert)
                except RecursionError:
                    pass
                return slow(arguments)

            return raw
        return slow

    def _check_json(self, arguments: Any) -> dict[str, Any]:
        """The checked JSON arguments (see :meth:`check`)."""
        schema = self.schema
        try:
            ok = schema.is_valid(arguments)
        except RecursionError:
            ok = False
        if not ok:
            coerced = schema.coerce(arguments)
            try:
                ok = coerced is not arguments and schema.is_valid(coerced)
            except RecursionError:
                ok = False
            if not ok:
                problems = schema.problems(coerced)
                if problems:
                    raise ArgumentError(problems)
            arguments = coerced
        if type(arguments) is not dict:
            raise ArgumentError([("(root)", f"expected object, got {type(arguments).__name__}")])
        checked: dict[str, Any] = arguments
        declared = schema.declared
        if declared is not None and not declared.issuperset(checked):
            checked = {k: v for k, v in checked.items() if k in declared}
        return checked

    def _convert(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The handler's keyword arguments (context excluded) for checked ``arguments``.

        Raises:
            ArgumentError: a value the schema admits but the parameter type refuses
                (a pydantic validator, a malformed datetime, ...).
        """
        style = self.style
        if style == "hints":
            # _check_json() left only declared fields, and every declared field is a parameter.
            kwargs = dict(arguments)
            for name, convert in self.converters:
                if name in kwargs:
                    try:
                        kwargs[name] = convert(kwargs[name])
                    except (ValueError, TypeError, OverflowError) as exc:
                        if _is_validation_error(exc):
                            raise ArgumentError(_pydantic_problems(exc, (name,))) from None
                        raise ArgumentError([(name, str(exc))]) from None
            for name, info in self.field_defaults:
                if name not in kwargs:
                    kwargs[name] = info.get_default(call_default_factory=True)
            return kwargs
        assert self.param is not None
        if style == "model":
            assert self.model is not None
            try:
                return {self.param: self.model.model_validate(arguments)}
            except ValueError as exc:
                if not _is_validation_error(exc):
                    raise
                raise ArgumentError(_pydantic_problems(exc)) from None
        return {self.param: arguments}


def _is_validation_error(exc: BaseException) -> bool:
    """True for pydantic's ``ValidationError`` (checked without importing pydantic)."""
    core = sys.modules.get("pydantic_core")
    return core is not None and isinstance(exc, core.ValidationError)


def is_field_info(value: Any) -> bool:
    """True for a pydantic ``FieldInfo`` (only possible once pydantic is imported)."""
    fields = sys.modules.get("pydantic.fields")
    return fields is not None and isinstance(value, fields.FieldInfo)


def _pydantic_problems(exc: BaseException, prefix: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """``(path, reason)`` pairs from a pydantic ``ValidationError``."""
    out = []
    for err in exc.errors(include_url=False):  # type: ignore[attr-defined]
        path = ".".join([*prefix, *(str(p) for p in err["loc"])]) or "(root)"
        out.append((path, err["msg"]))
    return out


def _to_int(v: Any) -> Any:
    return int(v) if type(v) is float else v


def _to_float(v: Any) -> Any:
    return float(v) if type(v) is int else v


_IDENTITY_TYPES: frozenset[Any] = frozenset({str, bool, Any, object, type(None)})


def plain_converter(ann: Any) -> tuple[bool, Converter | None]:
    """``(handled, converter)`` for annotations whose checked JSON value needs at most a
    cheap fix-up; ``handled`` False means a pydantic adapter must convert it."""
    if ann in _IDENTITY_TYPES:
        return True, None
    if ann is int:
        return True, _to_int
    if ann is float:
        return True, _to_float
    origin = get_origin(ann)
    if origin is Annotated:
        base, *extras = get_args(ann)
        for e in extras:
            if isinstance(e, (str, Param)):
                continue  # a Param's constraints live in the schema, checked before this
            if is_field_info(e) and not e.metadata and e.default_factory is None:
                continue
            return False, None
        return plain_converter(base)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in get_args(ann) if a is not type(None)]
        if len(members) == 1 and len(get_args(ann)) == 2:
            ok, conv = plain_converter(members[0])
            if not ok:
                return False, None
            if conv is None:
                return True, None
            inner = conv
            return True, lambda v: None if v is None else inner(v)
        return False, None
    if origin is typing.Literal:
        return all(type(a) is str for a in get_args(ann)), None
    if is_typeddict(ann):
        fields = typeddict_fields(ann)
        if fields is None:
            return False, None
        for field_ann, _ in fields.values():
            ok, conv = plain_converter(field_ann)
            if not ok or conv is not None:
                return False, None
        return True, None
    if origin in (list, dict) or ann in (list, dict):
        args = get_args(ann)
        if origin is dict and args and args[0] is not str:
            return False, None
        item = args[-1] if args else Any
        ok, conv = plain_converter(item)
        return ok and conv is None, None
    return False, None


def converter_for(ann: Any) -> Converter | None:
    """How a checked JSON value becomes the Python value for a parameter of type ``ann``."""
    ok, conv = plain_converter(ann)
    if ok:
        return conv
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(pydantic_annotation(ann))
    return adapter.validate_python

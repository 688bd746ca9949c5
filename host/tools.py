"""Tool declarations: the ``@tool`` decorator, schema derivation and argument validation.

A tool's parameters can be declared three ways, and each gives one input schema, which
is both what clients see and the only thing arguments are checked against
(:mod:`toolwire.host.schema`):

1. type hints on the handler's parameters (JSON-shaped hints are turned into a schema
   directly, see :mod:`toolwire.host.hints`; anything richer goes through pydantic);
2. a single parameter annotated with a pydantic model (the model's schema);
3. ``input_schema={...}``, a raw JSON Schema (Draft 2020-12 unless it names another);
   the handler's one non-context parameter receives the arguments dict.

Only after the check are values converted for the handler, where the parameter type
needs it (model instances, enums, datetimes); plain JSON values are passed as they are.

A parameter annotated :class:`~toolwire.host.context.ToolContext` is injected and is
not part of the schema.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    TypeVar,
    get_args,
    get_origin,
    get_type_hints,
    overload,
)

from toolwire.extensions import PROMPT_GUIDELINES_META_KEY, PROMPT_SNIPPET_META_KEY

from .context import ToolContext
from .hints import MISSING, Param, is_typeddict, json_default, simple_schema, typeddict_fields
from .schema import ArgumentSchema, object_root

if TYPE_CHECKING:
    from pydantic import BaseModel, TypeAdapter
    from pydantic.fields import FieldInfo

    from toolwire.models import ToolAnnotations

__all__ = [
    "TOOL_NAME_RE",
    "ArgumentError",
    "Arguments",
    "CheckedArguments",
    "Tool",
    "ToolDefinitionError",
    "check_tool_name",
    "tool",
]

TOOL_NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
"""Valid tool names, matched against the *whole* name (``fullmatch``): 1–64 characters
of ASCII letters, digits, ``_``, ``.`` and ``-``. The characters are MCP 2025-11-25's
tool-name rule ("Tools › Tool Names"); its length bound is 128, and 64 is kept because
the model providers' function-calling APIs accept no more."""


def check_tool_name(name: object) -> str:
    """Return ``name`` when it is a valid tool name (:data:`TOOL_NAME_RE`, whole name).

    Raises:
        ToolDefinitionError: not a string, empty, longer than 64 characters, or holding
            a character outside ``A-Z a-z 0-9 _ . -`` (a trailing newline included); the
            message names the first offending character.
    """
    if not isinstance(name, str):
        raise ToolDefinitionError(f"Tool name must be a string, not {type(name).__name__}")
    if TOOL_NAME_RE.fullmatch(name):
        return name
    rule = "1-64 characters of ASCII letters, digits, '_', '.', '-'"
    if not name:
        raise ToolDefinitionError(f"Tool name is empty; it must be {rule}")
    if len(name) > 64:
        raise ToolDefinitionError(
            f"Tool name {name!r} is {len(name)} characters long; it must be {rule}"
        )
    bad = next(c for c in name if not TOOL_NAME_RE.fullmatch(c))
    raise ToolDefinitionError(
        f"Tool name {name!r} contains {bad!r} at position {name.index(bad)}; it must be {rule}"
    )


_TOOL_ATTR = "__toolwire_tool__"


class ToolDefinitionError(ValueError):
    """A tool that cannot be registered: bad name, no description, unusable signature."""


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


def _is_field_info(value: Any) -> bool:
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


def _plain_converter(ann: Any) -> tuple[bool, Converter | None]:
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
            if _is_field_info(e) and not e.metadata and e.default_factory is None:
                continue
            return False, None
        return _plain_converter(base)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in get_args(ann) if a is not type(None)]
        if len(members) == 1 and len(get_args(ann)) == 2:
            ok, conv = _plain_converter(members[0])
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
            ok, conv = _plain_converter(field_ann)
            if not ok or conv is not None:
                return False, None
        return True, None
    if origin in (list, dict) or ann in (list, dict):
        args = get_args(ann)
        if origin is dict and args and args[0] is not str:
            return False, None
        item = args[-1] if args else Any
        ok, conv = _plain_converter(item)
        return ok and conv is None, None
    return False, None


def _converter_for(ann: Any) -> Converter | None:
    """How a checked JSON value becomes the Python value for a parameter of type ``ann``."""
    ok, conv = _plain_converter(ann)
    if ok:
        return conv
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(_pydantic_annotation(ann))
    return adapter.validate_python


# ---------------------------------------------------------------------------- the tool


@dataclass
class Tool:
    """A registered tool: its definition for clients and its handler for the host.

    Attributes:
        name: unique tool name (see :data:`TOOL_NAME_RE`).
        description: what the model reads about the tool.
        input_schema: JSON Schema of the arguments (root ``type: "object"``).
        handler: the function called with the validated arguments.
        is_async: whether ``handler`` is a coroutine function (else it runs in a thread).
        context_param: the parameter receiving :class:`ToolContext`, if any.
        output_schema: JSON Schema of ``structuredContent``, when the return type gives one.
        annotations: MCP behaviour hints.
        title: human-readable display name.
        timeout: seconds before the call is cancelled; None uses the host default.
        mutates: names of arguments holding file paths this tool changes; calls
            changing the same file run one at a time (the per-file mutation queue).
        execution_mode: "parallel" or "sequential" (honoured by batches).
        prepare_arguments: ``fn(raw) -> raw'`` run before validation (a compatibility
            layer for old argument shapes); raising fails the call.
        prompt_snippet: one line for an agent's "Available tools" system-prompt list.
        prompt_guidelines: extra system-prompt lines about using this tool.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[..., Any]
    is_async: bool
    validator: Arguments
    context_param: str | None = None
    output_schema: dict[str, Any] | None = None
    output_adapter: TypeAdapter[Any] | None = None
    annotations: dict[str, Any] | None = None
    title: str | None = None
    timeout: float | None = None
    mutates: tuple[str, ...] = ()
    execution_mode: str = "parallel"
    meta: dict[str, Any] | None = None
    prepare_arguments: Callable[[Any], Any] | None = None
    prompt_snippet: str | None = None
    prompt_guidelines: tuple[str, ...] = ()
    _definition: dict[str, Any] | None = field(default=None, repr=False)

    def definition(self) -> dict[str, Any]:
        """The MCP ``Tool`` object clients receive (cached)."""
        if self._definition is None:
            d: dict[str, Any] = {"name": self.name}
            if self.title:
                d["title"] = self.title
            d["description"] = self.description
            d["inputSchema"] = self.input_schema
            if self.output_schema is not None:
                d["outputSchema"] = self.output_schema
            if self.annotations:
                d["annotations"] = self.annotations
            meta = dict(self.meta or {})
            if self.prompt_snippet:
                meta[PROMPT_SNIPPET_META_KEY] = self.prompt_snippet
            if self.prompt_guidelines:
                meta[PROMPT_GUIDELINES_META_KEY] = list(self.prompt_guidelines)
            if meta:
                d["_meta"] = meta
            self._definition = d
        return self._definition

    def check(self, arguments: Any) -> CheckedArguments:
        """Check ``arguments`` (coercing on a copy when needed): ``.arguments`` are the
        checked JSON arguments, ``.kwargs()`` the handler's keyword arguments (context
        excluded). ``prepare_arguments`` is not applied. See :meth:`Arguments.check`.

        Raises:
            ArgumentError: listing every failing field path with its reason.
        """
        return self.validator.check(arguments)

    @property
    def read_only(self) -> bool:
        """True when the tool's annotations declare it read-only."""
        return bool(self.annotations and self.annotations.get("readOnlyHint") is True)


# ---------------------------------------------------------------------------- decorator


_F = TypeVar("_F", bound=Callable[..., Any])


@overload
def tool(fn: _F) -> _F: ...


@overload
def tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    annotations: ToolAnnotations | Mapping[str, Any] | None = None,
    timeout: float | None = None,
    input_schema: dict[str, Any] | None = None,
    mutates: tuple[str, ...] | list[str] = (),
    execution_mode: str = "parallel",
    prepare_arguments: Callable[[Any], Any] | None = None,
    prompt_snippet: str | None = None,
    prompt_guidelines: Sequence[str] = (),
) -> Callable[[_F], _F]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
    annotations: ToolAnnotations | Mapping[str, Any] | None = None,
    timeout: float | None = None,
    input_schema: dict[str, Any] | None = None,
    mutates: tuple[str, ...] | list[str] = (),
    execution_mode: str = "parallel",
    prepare_arguments: Callable[[Any], Any] | None = None,
    prompt_snippet: str | None = None,
    prompt_guidelines: Sequence[str] = (),
) -> Any:
    """Declare a function (sync or async) as a tool.

    Use bare (``@tool``) or with overrides (``@tool(name=..., timeout=...)``). The name
    defaults to the function name; the description to the docstring without its
    Args/Returns sections; parameter descriptions come from the docstring's Args
    section or ``Annotated[T, "text"]`` / ``Annotated[T, Field(description=...)]``.

    Args:
        name: tool name; 1–64 characters of ``[A-Za-z0-9_.-]``.
        description: overrides the docstring.
        title: display name for UIs.
        annotations: MCP hints (``ToolAnnotations`` or a dict with camelCase or
            snake_case keys, e.g. ``{"readOnlyHint": True}``).
        timeout: seconds before the call is cancelled (overrides the host default).
        input_schema: a raw JSON Schema; the handler then takes one arguments dict.
        mutates: argument names holding file paths the tool changes (a string or a
            list of strings each); calls changing the same real path run one at a time.
        execution_mode: "sequential" makes any batch containing this tool sequential.
        prepare_arguments: ``fn(raw_arguments) -> arguments`` run before validation,
            e.g. to map an old argument shape to the current one; if it raises, the
            call fails with an error result.
        prompt_snippet: one line describing the tool for an agent's system prompt
            (sent in the definition's ``_meta["toolwire/promptSnippet"]``).
        prompt_guidelines: lines of advice for the system prompt
            (``_meta["toolwire/promptGuidelines"]``).

    Returns:
        The function itself, marked; :func:`build_tool` turns it into a :class:`Tool`.
    """

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        setattr(
            f,
            _TOOL_ATTR,
            {
                "name": name,
                "description": description,
                "title": title,
                "annotations": annotations,
                "timeout": timeout,
                "input_schema": input_schema,
                "mutates": tuple(mutates),
                "execution_mode": execution_mode,
                "prepare_arguments": prepare_arguments,
                "prompt_snippet": prompt_snippet,
                "prompt_guidelines": tuple(prompt_guidelines),
            },
        )
        return f

    if fn is not None:
        return mark(fn)
    return mark


def is_tool(obj: Any) -> bool:
    """True for a function marked with ``@tool``."""
    return callable(obj) and hasattr(obj, _TOOL_ATTR)


def build_tool(fn: Callable[..., Any]) -> Tool:
    """Turn a ``@tool``-marked (or plain) function into a :class:`Tool`.

    Raises:
        ToolDefinitionError: invalid name, missing description, or parameters that
            cannot be described by a JSON Schema.
    """
    opts: dict[str, Any] = dict(getattr(fn, _TOOL_ATTR, {}))
    given = opts.get("name")
    name = check_tool_name(given if given is not None else getattr(fn, "__name__", ""))
    doc = inspect.getdoc(fn) or ""
    summary, arg_docs = _parse_docstring(doc)
    description = opts.get("description") or summary
    if not description or not description.strip():
        raise ToolDefinitionError(f"Tool {name!r} has no description (give it a docstring)")

    try:
        hints = get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(f"Tool {name!r}: cannot read type hints: {exc}") from exc
    sig = inspect.signature(fn)
    context_param: str | None = None
    params: list[inspect.Parameter] = []
    for p in sig.parameters.values():
        ann = hints.get(p.name, inspect.Parameter.empty)
        if _is_context(ann):
            context_param = p.name
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ToolDefinitionError(f"Tool {name!r}: *args/**kwargs cannot form a schema")
        params.append(p)

    validator: Arguments
    raw_schema = opts.get("input_schema")
    if raw_schema is not None:
        if len(params) != 1:
            raise ToolDefinitionError(
                f"Tool {name!r}: with input_schema the handler takes exactly one "
                "parameter (the arguments dict) besides the context"
            )
        # A root $ref into the schema's own $defs is inlined (what clients see then
        # has the object at its root, as MCP asks); the schema means the same.
        input_schema = object_root(raw_schema) if isinstance(raw_schema, dict) else {}
        if input_schema.get("type") != "object":
            raise ToolDefinitionError(f"Tool {name!r}: input_schema must have type 'object'")
        compiled = ArgumentSchema(input_schema)
        try:
            compiled.check_schema()
        except Exception as exc:  # jsonschema.SchemaError (imported lazily)
            raise ToolDefinitionError(
                f"Tool {name!r}: invalid input_schema: {getattr(exc, 'message', exc)}"
            ) from exc
        validator = Arguments(compiled, "schema", param=params[0].name)
    elif len(params) == 1 and _is_model(hints.get(params[0].name)):
        model = hints[params[0].name]
        input_schema = _clean_schema(model.model_json_schema())
        validator = Arguments(
            ArgumentSchema(input_schema), "model", model=model, param=params[0].name
        )
    elif (fast := _simple_arguments(name, params, hints, arg_docs)) is not None:
        input_schema, validator = fast
    else:
        from pydantic import ConfigDict, Field, create_model

        fields: dict[str, Any] = {}
        converters: list[tuple[str, Converter]] = []
        for p in params:
            ann = hints.get(p.name, Any)
            default = ... if p.default is inspect.Parameter.empty else p.default
            desc = arg_docs.get(p.name)
            if get_origin(ann) is Annotated:
                # Annotated[T, "text"] gives a description; other metadata (Field(...),
                # constraints) stays on the type, untouched, and pydantic merges it.
                base, *extras = get_args(ann)
                text = next((e for e in extras if isinstance(e, str)), None)
                metadata = [_pydantic_metadata(e) for e in extras if not isinstance(e, str)]
                finfo = next((e for e in metadata if _is_field_info(e)), None)
                has_own = finfo is not None and finfo.description is not None
                desc = None if has_own else (text or desc)
                ann = Annotated[(base, *metadata)] if metadata else base
            field_kwargs: dict[str, Any] = {"default": default}
            if desc is not None:
                field_kwargs["description"] = desc
            fields[p.name] = (ann, Field(**field_kwargs))
            try:
                convert = _converter_for(ann)
            except Exception as exc:
                raise ToolDefinitionError(
                    f"Tool {name!r}: parameter {p.name!r} has no usable type: {exc}"
                ) from exc
            if convert is not None:
                converters.append((p.name, convert))
        try:
            model = create_model(
                f"{name}_arguments",
                __config__=ConfigDict(extra="ignore", arbitrary_types_allowed=False),
                **fields,
            )
            input_schema = _clean_schema(model.model_json_schema())
        except Exception as exc:
            raise ToolDefinitionError(
                f"Tool {name!r}: parameters have no JSON Schema: {exc}"
            ) from exc
        validator = Arguments(
            ArgumentSchema(input_schema),
            "hints",
            names=tuple(p.name for p in params),
            converters=tuple(converters),
        )

    try:
        output_schema, output_adapter = _output_schema(hints.get("return"))
    except Exception as exc:
        raise ToolDefinitionError(
            f"Tool {name!r}: return annotation has no JSON Schema: {exc}"
        ) from exc
    annotations = _annotations_dict(opts.get("annotations"), name)
    return Tool(
        name=name,
        description=description.strip(),
        input_schema=input_schema,
        handler=fn,
        is_async=inspect.iscoroutinefunction(fn),
        validator=validator,
        context_param=context_param,
        output_schema=output_schema,
        output_adapter=output_adapter,
        annotations=annotations,
        title=opts.get("title"),
        timeout=opts.get("timeout"),
        mutates=tuple(opts.get("mutates", ())),
        execution_mode=opts.get("execution_mode", "parallel"),
        prepare_arguments=opts.get("prepare_arguments"),
        prompt_snippet=opts.get("prompt_snippet"),
        prompt_guidelines=tuple(opts.get("prompt_guidelines", ())),
    )


def _is_context(ann: Any) -> bool:
    """True for ``ToolContext`` (or a subclass), also inside ``Annotated`` or ``| None``."""
    if get_origin(ann) is Annotated:
        ann = get_args(ann)[0]
    if get_origin(ann) in (typing.Union, types.UnionType):
        members = [a for a in get_args(ann) if a is not type(None)]
        if len(members) == 1:
            ann = members[0]
    return ann is ToolContext or (isinstance(ann, type) and issubclass(ann, ToolContext))


def _is_model(ann: Any) -> bool:
    main = sys.modules.get("pydantic.main")  # a model class implies pydantic is imported
    return main is not None and isinstance(ann, type) and issubclass(ann, main.BaseModel)


def _is_typeddict(ann: Any) -> bool:
    return isinstance(ann, type) and typing.is_typeddict(ann)


def _portable_typeddict(td: Any) -> Any:
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


def _output_schema(ret: Any) -> tuple[dict[str, Any] | None, TypeAdapter[Any] | None]:
    if ret is None or not (_is_model(ret) or _is_typeddict(ret)):
        return None, None
    if _is_typeddict(ret):
        ret = _portable_typeddict(ret)
    from pydantic import TypeAdapter

    adapter: TypeAdapter[Any] = TypeAdapter(ret)
    schema = _clean_schema(adapter.json_schema())
    if schema.get("type") != "object":
        return None, None
    return schema, adapter


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
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


_SECTION_RE = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$"
)
_ARG_RE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {param: description})."""
    lines = doc.splitlines()
    desc_lines: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    for line in lines:
        m = _SECTION_RE.match(line.strip()) if not line.startswith((" ", "\t")) else None
        if m:
            section = m.group(1)
            current = None
            arg_indent = None
            continue
        if section is None:
            desc_lines.append(line)
        elif section in ("Args", "Arguments", "Parameters", "Params"):
            if not line.strip():
                continue
            indent = len(line) - len(line.lstrip())
            am = _ARG_RE.match(line)
            if am and (arg_indent is None or indent <= arg_indent):
                arg_indent = indent
                current = am.group(1).lstrip("*")
                args[current] = am.group(2).strip()
            elif current is not None:
                args[current] = (args[current] + " " + line.strip()).strip()
    return "\n".join(desc_lines).strip(), args


_ANNOTATION_KEYS = {
    "title": "title",
    "read_only_hint": "readOnlyHint",
    "destructive_hint": "destructiveHint",
    "idempotent_hint": "idempotentHint",
    "open_world_hint": "openWorldHint",
}


def _annotations_dict(value: Any, tool_name: str) -> dict[str, Any] | None:
    """MCP ``ToolAnnotations`` as a camelCase dict, from a mapping (camelCase or
    snake_case keys) or a :class:`toolwire.models.ToolAnnotations`.

    Raises:
        ToolDefinitionError: not a mapping, or a hint that is not a bool (title: str).
    """
    if value is None:
        return None
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(mode="json", by_alias=True, exclude_none=True)
    if not isinstance(value, Mapping):
        raise ToolDefinitionError(f"Tool {tool_name!r}: annotations must be a mapping")
    out: dict[str, Any] = {}
    for key, v in value.items():
        wire = _ANNOTATION_KEYS.get(str(key), str(key))
        if v is None:
            continue
        if wire == "title" and not isinstance(v, str):
            raise ToolDefinitionError(f"Tool {tool_name!r}: annotation title must be a string")
        if wire.endswith("Hint") and not isinstance(v, bool):
            raise ToolDefinitionError(
                f"Tool {tool_name!r}: annotation {wire} must be true or false"
            )
        out[wire] = v
    return out or None


def _pydantic_metadata(value: Any) -> Any:
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


def _pydantic_annotation(ann: Any) -> Any:
    """``ann`` with any :class:`Param` metadata turned into pydantic ``Field``s."""
    if get_origin(ann) is Annotated:
        base, *extras = get_args(ann)
        return Annotated[(base, *[_pydantic_metadata(e) for e in extras])]
    return ann


def _simple_arguments(
    tool_name: str,
    params: list[inspect.Parameter],
    hints: dict[str, Any],
    arg_docs: dict[str, str],
) -> tuple[dict[str, Any], Arguments] | None:
    """The input schema and argument handling for JSON-shaped parameters, written
    without pydantic; None when any parameter needs pydantic."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    converters: list[tuple[str, Converter]] = []
    defaults: list[tuple[str, Any]] = []
    for p in params:
        ann = hints.get(p.name, Any)
        prop = simple_schema(ann)
        if prop is None:
            return None
        param_info = None
        if get_origin(ann) is Annotated:
            param_info = next((e for e in get_args(ann)[1:] if isinstance(e, Param)), None)
        if "description" not in prop and p.name in arg_docs:
            prop = {"description": arg_docs[p.name], **prop}
        default: Any = MISSING
        if p.default is not inspect.Parameter.empty:
            default = p.default
        elif param_info is not None and param_info.default is not MISSING:
            default = param_info.default
            defaults.append((p.name, param_info))
        if default is MISSING:
            required.append(p.name)
        else:
            ok, value = json_default(default)
            if ok:
                prop = {"default": value, **prop}
        properties[p.name] = prop
        handled, convert = _plain_converter(ann)
        if not handled:
            return None
        if convert is not None:
            converters.append((p.name, convert))
    schema: dict[str, Any] = {"properties": properties}
    if required:
        schema["required"] = required
    schema["type"] = "object"
    validator = Arguments(
        ArgumentSchema(schema),
        "hints",
        names=tuple(p.name for p in params),
        converters=tuple(converters),
        field_defaults=tuple(defaults),
    )
    return schema, validator

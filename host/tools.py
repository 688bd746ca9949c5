"""Tool declarations: the ``@tool`` decorator, schema derivation and argument validation.

A tool's parameters can be declared three ways, and each gives one source for both
the input schema clients see and the validation the host applies:

1. type hints on the handler's parameters (a pydantic model is built from them);
2. a single parameter annotated with a pydantic model (the model is the schema);
3. ``input_schema={...}``, a raw JSON Schema (Draft 2020-12, validator compiled once);
   the handler's one non-context parameter receives the arguments dict.

A parameter annotated :class:`~toolwire.host.context.ToolContext` is injected and is
not part of the schema.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar, get_args, get_origin, get_type_hints, overload

import jsonschema
import typing_extensions
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.fields import FieldInfo

from toolwire.models import ToolAnnotations

from .context import ToolContext

__all__ = [
    "TOOL_NAME_RE",
    "ArgumentError",
    "Tool",
    "ToolDefinitionError",
    "tool",
]

TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
"""Valid tool names: 1–64 characters of letters, digits, ``_``, ``.`` and ``-``."""

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


# ---------------------------------------------------------------------------- validators


class _ModelArgs:
    """Validate with a pydantic model; hand the handler keyword arguments or the model."""

    __slots__ = ("as_model", "field_names", "model", "param")

    def __init__(self, model: type[BaseModel], as_model: str | None) -> None:
        self.model = model
        self.as_model = as_model  # parameter name receiving the model instance
        self.field_names = tuple(model.model_fields)

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        try:
            m = self.model.model_validate(args)
        except ValidationError as exc:
            raise ArgumentError(_pydantic_problems(exc)) from None
        if self.as_model is not None:
            return {self.as_model: m}
        d = m.__dict__
        return {n: d[n] for n in self.field_names}


class _SchemaArgs:
    """Validate with a compiled Draft 2020-12 validator; hand over the arguments dict."""

    __slots__ = ("param", "properties", "validator")

    def __init__(self, schema: dict[str, Any], param: str) -> None:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        self.validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        self.param = param
        props = schema.get("properties")
        extra = schema.get("additionalProperties", True) is not False or schema.get(
            "patternProperties"
        )
        # Undeclared fields never reach the handler (unless the schema admits extras).
        self.properties = None if (props is None or extra) else frozenset(props)

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        errors = list(self.validator.iter_errors(args))
        if errors:
            raise ArgumentError(_schema_problems(errors))
        if self.properties is not None:
            args = {k: v for k, v in args.items() if k in self.properties}
        return {self.param: args}


def _pydantic_problems(exc: ValidationError) -> list[tuple[str, str]]:
    out = []
    for err in exc.errors(include_url=False):
        path = ".".join(str(p) for p in err["loc"]) or "(root)"
        out.append((path, err["msg"]))
    return out


def _schema_problems(errors: list[jsonschema.ValidationError]) -> list[tuple[str, str]]:
    out = []
    for err in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        parts = [str(p) for p in err.absolute_path]
        if err.validator == "required" and isinstance(err.instance, dict):
            required = err.validator_value if isinstance(err.validator_value, list) else []
            missing = [r for r in required if r not in err.instance]
            for name in missing:
                out.append((".".join([*parts, str(name)]), "Field required"))
            continue
        out.append((".".join(parts) or "(root)", err.message))
    return out


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
        mutates: names of arguments holding file paths this tool changes.
        execution_mode: "parallel" or "sequential" (honoured by batches).
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[..., Any]
    is_async: bool
    validator: _ModelArgs | _SchemaArgs
    context_param: str | None = None
    output_schema: dict[str, Any] | None = None
    output_adapter: TypeAdapter[Any] | None = None
    annotations: ToolAnnotations | None = None
    title: str | None = None
    timeout: float | None = None
    mutates: tuple[str, ...] = ()
    execution_mode: str = "parallel"
    meta: dict[str, Any] | None = None
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
            if self.annotations is not None:
                d["annotations"] = self.annotations.model_dump(
                    mode="json", by_alias=True, exclude_none=True
                )
            if self.meta:
                d["_meta"] = self.meta
            self._definition = d
        return self._definition

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Validate ``arguments``; return the handler's keyword arguments (context excluded).

        Raises:
            ArgumentError: listing every failing field path with its reason.
        """
        return self.validator.validate(arguments)

    @property
    def read_only(self) -> bool:
        """True when the tool's annotations declare it read-only."""
        return bool(self.annotations and self.annotations.read_only_hint)


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
        mutates: argument names holding file paths the tool changes.
        execution_mode: "sequential" makes any batch containing this tool sequential.

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
    name = str(opts.get("name") or getattr(fn, "__name__", ""))
    if not TOOL_NAME_RE.match(name):
        raise ToolDefinitionError(
            f"Tool name {name!r} must be 1-64 characters of letters, digits, '_', '.', '-'"
        )
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

    validator: _ModelArgs | _SchemaArgs
    raw_schema = opts.get("input_schema")
    if raw_schema is not None:
        if len(params) != 1:
            raise ToolDefinitionError(
                f"Tool {name!r}: with input_schema the handler takes exactly one "
                "parameter (the arguments dict) besides the context"
            )
        if raw_schema.get("type") != "object":
            raise ToolDefinitionError(f"Tool {name!r}: input_schema must have type 'object'")
        try:
            validator = _SchemaArgs(raw_schema, params[0].name)
        except jsonschema.SchemaError as exc:
            raise ToolDefinitionError(
                f"Tool {name!r}: invalid input_schema: {exc.message}"
            ) from exc
        input_schema = raw_schema
    elif len(params) == 1 and _is_model(hints.get(params[0].name)):
        model = hints[params[0].name]
        validator = _ModelArgs(model, params[0].name)
        input_schema = _clean_schema(model.model_json_schema())
    else:
        fields: dict[str, Any] = {}
        for p in params:
            ann = hints.get(p.name, Any)
            default = ... if p.default is inspect.Parameter.empty else p.default
            desc = arg_docs.get(p.name)
            if get_origin(ann) is Annotated:
                # Annotated[T, "text"] gives a description; other metadata (Field(...),
                # constraints) stays on the type, untouched, and pydantic merges it.
                base, *extras = get_args(ann)
                text = next((e for e in extras if isinstance(e, str)), None)
                metadata = [e for e in extras if not isinstance(e, str)]
                finfo = next((e for e in metadata if isinstance(e, FieldInfo)), None)
                has_own = finfo is not None and finfo.description is not None
                desc = None if has_own else (text or desc)
                ann = Annotated[(base, *metadata)] if metadata else base
            field_kwargs: dict[str, Any] = {"default": default}
            if desc is not None:
                field_kwargs["description"] = desc
            fields[p.name] = (ann, Field(**field_kwargs))
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
        validator = _ModelArgs(model, None)

    try:
        output_schema, output_adapter = _output_schema(hints.get("return"))
    except Exception as exc:
        raise ToolDefinitionError(
            f"Tool {name!r}: return annotation has no JSON Schema: {exc}"
        ) from exc
    annotations = opts.get("annotations")
    if annotations is not None and not isinstance(annotations, ToolAnnotations):
        annotations = ToolAnnotations.model_validate(dict(annotations))
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
    return isinstance(ann, type) and issubclass(ann, BaseModel)


def _is_typeddict(ann: Any) -> bool:
    return isinstance(ann, type) and typing.is_typeddict(ann)


def _portable_typeddict(td: Any) -> Any:
    """``td`` rebuilt as a ``typing_extensions.TypedDict``.

    pydantic refuses ``typing.TypedDict`` classes before Python 3.12; the rebuilt
    class has the same name, docstring, keys, types and required/optional split.
    """
    if sys.version_info >= (3, 12) or td.__module__ == "typing_extensions":
        return td
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
    adapter: TypeAdapter[Any] = TypeAdapter(ret)
    schema = _clean_schema(adapter.json_schema())
    if schema.get("type") != "object":
        return None, None
    return schema, adapter


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop the auto-generated ``title`` members pydantic adds (noise for a model)."""

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

    cleaned: dict[str, Any] = walk(schema)
    cleaned.setdefault("type", "object")
    if cleaned.get("type") == "object":
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

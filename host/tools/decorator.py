"""Tool declarations: the ``@tool`` decorator and :func:`build_tool`, which derive a
:class:`~toolwire.host.tools.definition.Tool` (its input schema and validator) from a function.

A tool's parameters can be declared three ways, and each gives one input schema, which
is both what clients see and the only thing arguments are checked against
(:mod:`toolwire.host.schema`):

1. type hints on the handler's parameters (JSON-shaped hints are turned into a schema
   directly, see :mod:`toolwire.host.schema.hints`; anything richer goes through pydantic);
2. a single parameter annotated with a pydantic model (the model's schema);
3. ``input_schema={...}``, a raw JSON Schema (Draft 2020-12 unless it names another);
   the handler's one non-context parameter receives the arguments dict.

Only after the check are values converted for the handler, where the parameter type
needs it (model instances, enums, datetimes); plain JSON values are passed as they are.

A parameter annotated :class:`~toolwire.host.tools.context.ToolContext` is injected and is
not part of the schema.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
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

from ..schema import ArgumentSchema, object_root
from ..schema.hints import MISSING, Param, json_default, simple_schema
from .context import ToolContext

if TYPE_CHECKING:
    from toolwire.models import ToolAnnotations

from .arguments import Arguments, Converter, converter_for, is_field_info, plain_converter
from .definition import Tool, ToolDefinitionError, check_tool_name
from .pydantic_glue import (
    clean_schema,
    is_model,
    output_schema_of,
    pydantic_metadata,
)

__all__ = ["build_tool", "is_tool", "tool"]

_TOOL_ATTR = "__toolwire_tool__"


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


def _plainly_the_arguments(sig: inspect.Signature) -> bool:
    """True when ``sig`` has one parameter whose annotation (absent, or as written,
    unevaluated) cannot name the tool context: it can only be the arguments dict."""
    if len(sig.parameters) != 1:
        return False
    ann = next(iter(sig.parameters.values())).annotation
    if ann is inspect.Parameter.empty:
        return True
    if isinstance(ann, str):
        return "Context" not in ann
    return not _is_context(ann)


def build_tool(fn: Callable[..., Any]) -> Tool:
    """Turn a ``@tool``-marked (or plain) function into a :class:`Tool`.

    The parameters' declaration style picks the input schema (the module docstring's
    three ways): :func:`_raw_schema_arguments` for ``input_schema={...}``,
    :func:`_model_arguments` for one pydantic-model parameter, :func:`_simple_arguments`
    for JSON-shaped hints, :func:`_pydantic_arguments` for any other hints.

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

    raw_schema = opts.get("input_schema")
    sig = inspect.signature(fn)
    hints = _type_hints(fn, name, sig, raw_schema is not None)
    context_param, params = _split_parameters(name, sig, hints)

    arguments: tuple[dict[str, Any], Arguments] | None
    if raw_schema is not None:
        arguments = _raw_schema_arguments(name, raw_schema, params)
    elif len(params) == 1 and is_model(hints.get(params[0].name)):
        arguments = _model_arguments(params[0].name, hints[params[0].name])
    else:
        arguments = _simple_arguments(name, params, hints, arg_docs)
        if arguments is None:
            arguments = _pydantic_arguments(name, params, hints, arg_docs)
    input_schema, validator = arguments

    try:
        output_schema, output_adapter = output_schema_of(hints.get("return"))
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


def _type_hints(
    fn: Callable[..., Any], name: str, sig: inspect.Signature, raw_schema: bool
) -> dict[str, Any]:
    """``fn``'s evaluated type hints (``Annotated`` kept).

    A raw-schema tool whose one parameter is the arguments dict needs none, and
    evaluating them costs most of registering such a tool: ``{}`` then.

    Raises:
        ToolDefinitionError: a hint does not evaluate.
    """
    if raw_schema and _plainly_the_arguments(sig):
        return {}
    try:
        return get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(f"Tool {name!r}: cannot read type hints: {exc}") from exc


def _split_parameters(
    name: str, sig: inspect.Signature, hints: dict[str, Any]
) -> tuple[str | None, list[inspect.Parameter]]:
    """The context parameter's name (None without one) and the parameters that form the
    schema, in order.

    Raises:
        ToolDefinitionError: a ``*args``/``**kwargs`` parameter.
    """
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
    return context_param, params


def _raw_schema_arguments(
    name: str, raw_schema: Any, params: list[inspect.Parameter]
) -> tuple[dict[str, Any], Arguments]:
    """Style 3, ``input_schema={...}``: the schema as given (a root ``$ref`` into its own
    ``$defs`` inlined, so the object is at the root as MCP asks; it means the same), the
    one parameter receiving the arguments dict.

    Raises:
        ToolDefinitionError: not exactly one parameter, a root that is not
            ``type: object``, or a schema its meta-schema refuses.
    """
    if len(params) != 1:
        raise ToolDefinitionError(
            f"Tool {name!r}: with input_schema the handler takes exactly one "
            "parameter (the arguments dict) besides the context"
        )
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
    return input_schema, Arguments(compiled, "schema", param=params[0].name)


def _model_arguments(param: str, model: Any) -> tuple[dict[str, Any], Arguments]:
    """Style 2, one parameter annotated with a pydantic model: the model's schema; the
    handler gets a model instance."""
    input_schema = clean_schema(model.model_json_schema())
    return input_schema, Arguments(ArgumentSchema(input_schema), "model", model=model, param=param)


def _pydantic_arguments(
    name: str,
    params: list[inspect.Parameter],
    hints: dict[str, Any],
    arg_docs: dict[str, str],
) -> tuple[dict[str, Any], Arguments]:
    """Style 1 for hints that are not JSON-shaped: a pydantic model built from the
    parameters gives the schema; each value is converted for the handler after the check.

    Raises:
        ToolDefinitionError: a parameter's type has no converter or no JSON Schema.
    """
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
            metadata = [pydantic_metadata(e) for e in extras if not isinstance(e, str)]
            finfo = next((e for e in metadata if is_field_info(e)), None)
            has_own = finfo is not None and finfo.description is not None
            desc = None if has_own else (text or desc)
            ann = Annotated[(base, *metadata)] if metadata else base
        field_kwargs: dict[str, Any] = {"default": default}
        if desc is not None:
            field_kwargs["description"] = desc
        fields[p.name] = (ann, Field(**field_kwargs))
        try:
            convert = converter_for(ann)
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
        input_schema = clean_schema(model.model_json_schema())
    except Exception as exc:
        raise ToolDefinitionError(f"Tool {name!r}: parameters have no JSON Schema: {exc}") from exc
    validator = Arguments(
        ArgumentSchema(input_schema),
        "hints",
        names=tuple(p.name for p in params),
        converters=tuple(converters),
    )
    return input_schema, validator


def _is_context(ann: Any) -> bool:
    """True for ``ToolContext`` (or a subclass), also inside ``Annotated`` or ``| None``."""
    if get_origin(ann) is Annotated:
        ann = get_args(ann)[0]
    if get_origin(ann) in (typing.Union, types.UnionType):
        members = [a for a in get_args(ann) if a is not type(None)]
        if len(members) == 1:
            ann = members[0]
    return ann is ToolContext or (isinstance(ann, type) and issubclass(ann, ToolContext))


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
        handled, convert = plain_converter(ann)
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

"""A tool module seen from the host: where its files are (what a reload watches and what
the host's inputs include) and the stand-ins registered for what its workers report
(:func:`remote_tool`, :func:`remote_hook`), whose handlers send the call to a worker of
its :class:`~.pool.WorkerPool`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from toolwire._json import RawJSON
from toolwire.errors import (
    JsonRpcError,
)

from ..schema import ArgumentSchema
from ..tools.arguments import Arguments, CheckedArguments
from ..tools.context import ToolContext
from ..tools.definition import Tool
from ..tools.hooks import Block, IncomingCall, ResultPatch, after_tool_call, before_tool_call
from ..tools.results import ToolError, WireResult
from .workerwire import (
    HOOK,
    PREPARE,
)

if TYPE_CHECKING:
    from .process import ModuleSpec, _Flight

log = logging.getLogger("toolwire.workers")


class RemotePool(Protocol):
    """What a stand-in needs of the :class:`~.pool.WorkerPool` serving its module (a narrow
    view, so this module never imports :mod:`.pool`, which imports it)."""

    @property
    def module(self) -> ModuleSpec: ...

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        ctx: ToolContext | None,
        tool_name: str,
        *,
        timeout: float | None = None,
    ) -> Any: ...

    def start_early(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext, timeout: float | None
    ) -> _Flight | None: ...

    async def call(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext, *, mutates: bool = True
    ) -> WireResult: ...


MAX_SIBLINGS = 512
"""Most Python files and packages beside a ``--tools`` file made visible to its workers."""


def _module_location(name: str) -> list[str]:
    """Where the top-level package (its directories) or module (its file) of the dotted
    ``name`` lies; found without importing anything (a top-level name imports nothing)."""
    import importlib.util

    top = name.split(".", 1)[0]
    if not top:
        return []
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if found is None:
        return []
    if found.submodule_search_locations:
        return [os.path.realpath(p) for p in found.submodule_search_locations]
    if found.origin and os.path.isabs(found.origin):
        return [os.path.realpath(found.origin)]
    return []


def importable_beside(module_file: str) -> list[str]:
    """``module_file`` and the Python modules (``*.py``) and packages (directories with an
    ``__init__.py``) in its directory, the module file first; at most
    :data:`MAX_SIBLINGS` of them, then the rest is left out (with a warning)."""
    out = [module_file]
    folder = os.path.dirname(module_file)
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return out
    for entry in entries:
        path = entry.path
        if path == module_file or entry.name.startswith("."):
            continue
        try:
            if (entry.is_file() and entry.name.endswith(".py")) or (
                entry.is_dir() and os.path.isfile(os.path.join(path, "__init__.py"))
            ):
                out.append(path)
        except OSError:
            continue
        if len(out) > MAX_SIBLINGS:
            log.warning(
                "more than %d modules beside %s: the rest are not visible to its workers",
                MAX_SIBLINGS,
                module_file,
            )
            break
    return out


_PATTERN_KEYS = ("pattern", "patternProperties", "propertyNames", "format")


_SUBSCHEMA: tuple[str, ...] = ("items", "additionalProperties", "contains", "not", "if")
_SUBSCHEMA += ("then", "else", "unevaluatedItems", "unevaluatedProperties", "additionalItems")

_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")


_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "dependentSchemas")


def without_patterns(schema: Any) -> Any:
    """A copy of a JSON Schema without regular expressions or formats (``pattern``,
    ``patternProperties``, ``propertyNames``, ``format``), loosened where they mattered
    (``additionalProperties`` beside ``patternProperties``): what the host checks of a
    worker's tool, whose worker then checks the whole schema. Python's regular
    expressions can take exponential time on a crafted input, and the host must not
    spend it on a pattern a tool module chose. Only subschemas are rewritten; values
    (``enum``, ``const``, ``default``) and property names are kept as they are."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _PATTERN_KEYS:
            continue
        if key in _SUBSCHEMA:
            out[key] = without_patterns(value)
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [without_patterns(v) for v in value]
        elif key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: without_patterns(v) for k, v in value.items()}
        else:
            out[key] = value
    if "patternProperties" in schema or "propertyNames" in schema:
        out.pop("additionalProperties", None)
        out.pop("unevaluatedProperties", None)
    return out


def remote_tool(pool: RemotePool, description: dict[str, Any]) -> Tool:
    """The host's stand-in for one tool a worker serves: its definition as the module
    declared it, a handler that runs the call in the pool.

    Raises:
        ValueError: the worker's description is malformed.
    """
    d = description.get("definition")
    if not isinstance(d, dict) or not isinstance(d.get("name"), str):
        raise ValueError(f"malformed tool description from {pool.module.label}")
    name: str = d["name"]
    schema = d.get("inputSchema")
    if not isinstance(schema, (dict, RawJSON)):
        raise ValueError(f"tool {name!r} from {pool.module.label} has no input schema")
    mutates = description.get("mutates") or []
    timeout = description.get("timeout")
    mode = description.get("executionMode", "parallel")
    if (
        not isinstance(mutates, list)
        or not all(isinstance(m, str) for m in mutates)
        or not (timeout is None or (isinstance(timeout, (int, float)) and timeout > 0))
        or mode not in ("parallel", "sequential")
        or not isinstance(d.get("description", ""), str)
        or not (d.get("annotations") is None or isinstance(d.get("annotations"), dict))
        or not (d.get("outputSchema") is None or isinstance(d.get("outputSchema"), dict))
        or not (d.get("_meta") is None or isinstance(d.get("_meta"), dict))
        or not (d.get("title") is None or isinstance(d.get("title"), str))
    ):
        raise ValueError(f"malformed description of tool {name!r} from {pool.module.label}")

    async def handler(arguments: dict[str, Any], ctx: ToolContext) -> WireResult:
        return await pool.call(name, arguments, ctx, mutates=bool(mutates))

    def early_start(
        arguments: dict[str, Any], ctx: ToolContext, timeout: float | None
    ) -> _Flight | None:
        return pool.start_early(name, arguments, ctx, timeout)

    prepare: Callable[[Any], Awaitable[Any]] | None = None
    if description.get("prepareArguments"):

        async def prepare(arguments: Any) -> Any:
            try:
                out = await pool.request(
                    PREPARE, {"name": name, "arguments": arguments}, None, name
                )
            except JsonRpcError as exc:
                raise ToolError(exc.message) from None
            return out.get("arguments") if isinstance(out, dict) else None

    return (_ListedTool if type(schema) is RawJSON else Tool)(
        name=name,
        description=str(d.get("description", "")),
        input_schema=schema,  # type: ignore[arg-type]  # a _ListedTool decodes a RawJSON
        handler=handler,
        is_async=True,
        validator=_HostCheck(schema),
        context_param="ctx",
        output_schema=d.get("outputSchema"),
        annotations=d.get("annotations"),
        title=d.get("title"),
        timeout=timeout,
        mutates=tuple(mutates),
        execution_mode=mode,
        meta=d.get("_meta"),
        prepare_arguments=prepare,
        own_timeout=True,
        early_start=early_start,
        known_definition=d,
    )


class _HostCheck(Arguments):
    """The host's check of a worker's tool's arguments: its input schema without the
    regular expressions (:func:`without_patterns`; the worker checks them), so that a
    pattern the module chose cannot hold the host (ReDoS). The copy is made, and the
    check compiled, at the tool's first call: a module of 2,000 tools costs the host
    nothing per tool before then (copying every schema at registration was most of the
    host's share of a large module's start, bench/NOTES.md)."""

    __slots__ = ("_raw",)

    def __init__(self, schema: dict[str, Any] | RawJSON) -> None:
        self._raw = schema
        super().__init__(_UNCOMPILED, "schema", param="arguments")

    def _first_check(self, arguments: Any) -> CheckedArguments:
        if self.schema is _UNCOMPILED:
            raw = self._raw
            schema = raw.decoded() if type(raw) is RawJSON else raw
            self.schema = ArgumentSchema(without_patterns(schema))
        return super()._first_check(arguments)


class _ListedTool(Tool):
    """The stand-in of a tool listed from the worker definition cache: its input schema
    stays the JSON text of the entry (:class:`~toolwire._json.RawJSON`) in the definition
    sent to clients, and is decoded for :attr:`input_schema` only when something in the
    host reads it (an HTTP header check)."""

    @property
    def input_schema(self) -> dict[str, Any]:
        value = self.__dict__["_input_schema"]
        if type(value) is RawJSON:
            value = self.__dict__["_input_schema"] = value.decoded()
        return value  # type: ignore[no-any-return]

    @input_schema.setter
    def input_schema(self, value: dict[str, Any] | RawJSON) -> None:
        self.__dict__["_input_schema"] = value


_UNCOMPILED = ArgumentSchema({})
"""What a :class:`_HostCheck` holds until its first call."""


def remote_hook(pool: RemotePool, info: dict[str, Any]) -> Callable[..., Awaitable[Any]]:
    """The host's stand-in for one hook of a worker's module (same kind, tools, name)."""
    index = info.get("index")
    kind = info.get("kind")
    tools = info.get("tools")
    if (
        type(index) is not int
        or kind not in ("before", "after")
        or not (
            tools is None or (isinstance(tools, list) and all(isinstance(t, str) for t in tools))
        )
        or not isinstance(info.get("name", ""), str)
    ):
        raise ValueError(f"malformed hook description from {pool.module.label}")

    async def run(call: IncomingCall, args: dict[str, Any], *rest: Any) -> Any:
        ctx: ToolContext = rest[-1]
        params: dict[str, Any] = {
            "hook": index,
            "call": {
                "id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "batchId": call.batch_id,
            },
            "args": args,
            "capabilities": ctx.client_capabilities,
        }
        if kind == "after":
            params["result"] = rest[0].to_wire()
        try:
            out = await pool.request(HOOK, params, ctx, call.name)
        except JsonRpcError as exc:
            raise ToolError(exc.message) from None
        out = out if isinstance(out, dict) else {}
        if "block" in out:
            reason = out["block"]
            return Block(reason if isinstance(reason, str) else None)
        if "arguments" in out:
            if type(out["arguments"]) is not dict:
                return _Unusable()
            if kind == "before" and out["arguments"] is not args and type(args) is dict:
                # The hook changed the arguments in place or returned new ones.
                args.clear()
                args.update(out["arguments"])
            return None
        if "unusable" in out:
            return type(str(out["unusable"]), (), {})()
        if "badContent" in out:
            return _BadPatch(str(out["badContent"]))
        if "patch" in out:
            patch = out["patch"]
            fields: dict[str, Any] = {}
            for key, field in (
                ("content", "content"),
                ("details", "details"),
                ("isError", "is_error"),
                ("terminate", "terminate"),
            ):
                if key in patch:
                    fields[field] = patch[key]
            return ResultPatch(**fields)
        return None

    run.__qualname__ = str(info.get("name", "hook"))
    mark = before_tool_call if kind == "before" else after_tool_call
    return mark(tools=None if tools is None else list(tools))(run)


class _Unusable:
    """What a worker's malformed hook answer becomes (the pipeline refuses it by type)."""


@dataclass(frozen=True)
class _BadPatch(ResultPatch):
    message: str = ""

    def apply(self, result: Any) -> Any:
        raise TypeError(self.message)

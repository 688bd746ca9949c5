"""Hooks around tool calls: ``before_tool_call`` may block or change arguments,
``after_tool_call`` may patch the result.

Write them as plain functions (sync or async) and register them on a
:class:`~toolwire.host.tools.registry.Registry` (``registry.add_hook(fn)``), or decorate them at
module level in a ``--tools`` file, where they are picked up like tools::

    from toolwire.host import Block, ResultPatch, after_tool_call, before_tool_call

    @before_tool_call(tools=["write"])
    def no_secrets(call, args, ctx):
        if args["path"].endswith(".env"):
            return Block("writing .env files is not allowed")

    @after_tool_call
    def tag(call, args, result, ctx):
        return ResultPatch(content=[*result.content, {"type": "text", "text": "(checked)"}])

Rules:

* before hooks run in registration order after the arguments were validated; the first
  :class:`Block` wins (its reason is the error result's text); a hook returning a dict
  replaces the arguments for the hooks after it and for the tool. Changed arguments
  (returned, or changed in place) are validated again before the tool runs.
* after hooks run in registration order when the call's result is final; each
  :class:`ResultPatch` replaces the fields it gives, one by one, and the next hook sees
  the patched result.
* a hook that raises turns the call into an error result carrying its message; the
  hooks after it do not run and the host keeps serving.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TypeVar, overload

from toolwire._record import FrozenRecord, Record
from toolwire.messages import RequestId

from .results import ToolResult, to_wire_content

__all__ = [
    "NOT_GIVEN",
    "Block",
    "HookSet",
    "IncomingCall",
    "ResultPatch",
    "after_tool_call",
    "before_tool_call",
    "is_hook",
]

HookKind = Literal["before", "after"]
_HOOK_ATTR = "__toolwire_hook__"


class _NotGiven:
    """The default of :class:`ResultPatch` fields: "leave this field as it is"."""

    _instance: _NotGiven | None = None

    def __new__(cls) -> _NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __bool__(self) -> bool:
        return False


NOT_GIVEN: Any = _NotGiven()
"""Marks a :class:`ResultPatch` field a hook leaves alone (``None`` clears the field)."""


class IncomingCall(Record):
    """One call as the client sent it, before any preparation or validation.

    Attributes:
        id: the call id: the ``tools/call`` request id, or the call's ``id`` in a batch.
        name: the tool name.
        arguments: the raw arguments object as received (undeclared fields included).
        batch_id: the ``tools/callBatch`` request id when the call is part of a batch.
    """

    __slots__ = __match_args__ = ("id", "name", "arguments", "batch_id")

    def __init__(
        self,
        id: RequestId,
        name: str,
        arguments: dict[str, Any],
        batch_id: RequestId | None = None,
    ) -> None:
        self.id = id
        self.name = name
        self.arguments = arguments
        self.batch_id = batch_id


class Block(FrozenRecord):
    """Returned by a before hook: do not run the call; ``reason`` is the error result's text."""

    __slots__ = __match_args__ = ("reason",)
    reason: str | None

    def __init__(self, reason: str | None = None) -> None:
        object.__setattr__(self, "reason", reason)


class ResultPatch(FrozenRecord):
    """Returned by an after hook: replace these fields of the result, each on its own.

    A field left at :data:`NOT_GIVEN` is kept; ``None`` clears it (no content, no
    details, not an error, no terminate).

    Attributes:
        content: a str (one text block) or a list of content blocks (str, content
            models, MCP-shaped dicts).
        details: data for programs and UIs (JSON-serialisable).
        is_error: whether the result is an error.
        terminate: whether the result asks the agent loop to stop.
    """

    __slots__ = __match_args__ = ("content", "details", "is_error", "terminate")
    content: Any
    details: Any
    is_error: Any
    terminate: Any

    def __init__(
        self,
        content: Any = NOT_GIVEN,
        details: Any = NOT_GIVEN,
        is_error: Any = NOT_GIVEN,
        terminate: Any = NOT_GIVEN,
    ) -> None:
        object.__setattr__(self, "content", content)
        object.__setattr__(self, "details", details)
        object.__setattr__(self, "is_error", is_error)
        object.__setattr__(self, "terminate", terminate)

    def apply(self, result: ToolResult) -> ToolResult:
        """``result`` with this patch's fields replaced (a new object).

        Raises:
            TypeError: content that cannot become content blocks.
        """
        out = dataclasses.replace(result)
        if self.content is not NOT_GIVEN:
            out.content = [] if self.content is None else to_wire_content(self.content)
        if self.details is not NOT_GIVEN:
            out.details = self.details
        if self.is_error is not NOT_GIVEN:
            out.is_error = bool(self.is_error)
        if self.terminate is not NOT_GIVEN:
            out.terminate = bool(self.terminate)
        return out


class _Hook(FrozenRecord):
    __slots__ = __match_args__ = ("kind", "fn", "tools", "name")
    kind: HookKind
    fn: Callable[..., Any]
    tools: frozenset[str] | None
    name: str

    def __init__(
        self, kind: HookKind, fn: Callable[..., Any], tools: frozenset[str] | None, name: str
    ) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "fn", fn)
        object.__setattr__(self, "tools", tools)
        object.__setattr__(self, "name", name)

    def applies(self, tool_name: str) -> bool:
        return self.tools is None or tool_name in self.tools


_F = TypeVar("_F", bound=Callable[..., Any])


def _marker(kind: HookKind, fn: Any, tools: Iterable[str] | None) -> Any:
    def mark(f: _F) -> _F:
        setattr(f, _HOOK_ATTR, (kind, None if tools is None else frozenset(tools)))
        return f

    if fn is not None:
        return mark(fn)
    return mark


@overload
def before_tool_call(fn: _F) -> _F: ...
@overload
def before_tool_call(
    fn: None = None, *, tools: Iterable[str] | None = None
) -> Callable[[_F], _F]: ...
def before_tool_call(fn: Any = None, *, tools: Iterable[str] | None = None) -> Any:
    """Mark ``fn(call, args, ctx)`` as a before hook (``@before_tool_call`` or
    ``@before_tool_call(tools=[...])`` to limit it to some tools).

    The hook returns None (go on), a :class:`Block`, or a dict replacing the arguments.
    """
    return _marker("before", fn, tools)


@overload
def after_tool_call(fn: _F) -> _F: ...
@overload
def after_tool_call(
    fn: None = None, *, tools: Iterable[str] | None = None
) -> Callable[[_F], _F]: ...
def after_tool_call(fn: Any = None, *, tools: Iterable[str] | None = None) -> Any:
    """Mark ``fn(call, args, result, ctx)`` as an after hook (``@after_tool_call`` or
    ``@after_tool_call(tools=[...])``). The hook returns None or a :class:`ResultPatch`.
    """
    return _marker("after", fn, tools)


def is_hook(obj: Any) -> bool:
    """True for a function marked with :func:`before_tool_call` or :func:`after_tool_call`."""
    return callable(obj) and hasattr(obj, _HOOK_ATTR)


class HookError(Exception):
    """A hook raised or returned something unusable; the call becomes an error result."""


class HookSet:
    """The hooks of one registry, in registration order."""

    def __init__(self) -> None:
        self.before: list[_Hook] = []
        self.after: list[_Hook] = []

    def __bool__(self) -> bool:
        return bool(self.before or self.after)

    def add(
        self,
        fn: Callable[..., Any],
        kind: HookKind | None = None,
        *,
        tools: Sequence[str] | None = None,
    ) -> None:
        """Register ``fn``; ``kind`` and ``tools`` default to what its decorator said.

        Raises:
            ValueError: no kind given and ``fn`` is not decorated.
        """
        mark = getattr(fn, _HOOK_ATTR, None)
        if kind is None:
            if mark is None:
                raise ValueError(
                    "say whether the hook runs before or after the call: "
                    "add_hook(fn, 'before'|'after') or decorate it"
                )
            kind = mark[0]
        if kind not in ("before", "after"):
            raise ValueError(f"hook kind must be 'before' or 'after', not {kind!r}")
        names = frozenset(tools) if tools is not None else (mark[1] if mark else None)
        hook = _Hook(kind, fn, names, getattr(fn, "__qualname__", repr(fn)))
        (self.before if kind == "before" else self.after).append(hook)

    def remove(self, fn: Callable[..., Any]) -> None:
        """Unregister every hook registered with ``fn`` (nothing when there is none)."""
        self.before = [h for h in self.before if h.fn is not fn]
        self.after = [h for h in self.after if h.fn is not fn]

    def before_for(self, tool_name: str) -> list[_Hook]:
        """The before hooks that apply to ``tool_name``."""
        return [h for h in self.before if h.applies(tool_name)]

    def after_for(self, tool_name: str) -> list[_Hook]:
        """The after hooks that apply to ``tool_name``."""
        return [h for h in self.after if h.applies(tool_name)]


async def call_hook(hook: _Hook, *args: Any) -> Any:
    """Run one hook (sync inline, async awaited); its exception is re-raised as
    :class:`HookError` naming the hook."""
    try:
        value = hook.fn(*args)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        try:
            message = str(exc) or type(exc).__name__
        except Exception:
            message = type(exc).__name__
        raise HookError(f'{hook.kind}_tool_call hook "{hook.name}" failed: {message}') from exc
    return value

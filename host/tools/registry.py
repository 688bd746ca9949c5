"""The tool registry: name → :class:`~toolwire.host.tools.definition.Tool`, definitions out, plus the
hooks that run around calls (:mod:`toolwire.host.tools.hooks`)."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import anyio

from .decorator import build_tool
from .definition import Tool, ToolDefinitionError, check_tool_name
from .hooks import HookKind, HookSet

__all__ = ["Registry"]


class Registry:
    """Holds the host's tools in registration order.

    Only :meth:`definitions` ever leave the host; handlers stay here.
    Listeners added with :meth:`on_change` are called after every add or remove
    (the host turns that into ``notifications/tools/list_changed``).

    Attributes:
        hooks: the before/after hooks run around every call (:meth:`add_hook`).
        pending: see below.
    """

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}
        self._defs: list[dict[str, Any]] | None = None
        self._listeners: list[Callable[[], None]] = []
        self.hooks = HookSet()
        self.pending: anyio.Event | None = None
        """Set while some tools are provisional: listed from the worker definition cache
        before their worker confirmed them (:mod:`toolwire.host.workers.listcache`); an
        event set, and this reset to None, once every one is confirmed or replaced.
        Calls wait for it before looking their tool up, so none runs under a definition
        its worker did not give."""

    def add_hook(
        self,
        fn: Callable[..., Any],
        kind: HookKind | None = None,
        *,
        tools: Sequence[str] | None = None,
    ) -> Callable[..., Any]:
        """Register a hook; returns ``fn``.

        Args:
            fn: ``before(call, args, ctx)`` or ``after(call, args, result, ctx)``, sync
                or async (see :mod:`toolwire.host.tools.hooks`).
            kind: "before" or "after"; defaults to what ``@before_tool_call`` /
                ``@after_tool_call`` marked.
            tools: limit the hook to these tool names (default: every tool, or what the
                decorator said).

        Raises:
            ValueError: no kind given for an undecorated function, or an unknown kind.
        """
        self.hooks.add(fn, kind, tools=tools)
        return fn

    def add(self, fn_or_tool: Callable[..., Any] | Tool) -> Tool:
        """Register a ``@tool`` function (or a built :class:`Tool`); return the Tool.

        Raises:
            ToolDefinitionError: a tool with that name exists, or the declaration is
                invalid (name, description, schema).
        """
        t = fn_or_tool if isinstance(fn_or_tool, Tool) else build_tool(fn_or_tool)
        check_tool_name(t.name)  # a Tool built by hand skipped build_tool's check
        if t.name in self._tools:
            raise ToolDefinitionError(f"A tool named {t.name!r} is already registered")
        self._tools[t.name] = t
        self._changed()
        return t

    def remove(self, name: str) -> None:
        """Unregister ``name``.

        Raises:
            KeyError: no such tool.
        """
        del self._tools[name]
        self._changed()

    def swap(
        self,
        remove: Sequence[str],
        add: Sequence[Tool],
        *,
        remove_hooks: Sequence[Callable[..., Any]] = (),
        add_hooks: Sequence[Callable[..., Any]] = (),
    ) -> None:
        """Replace some tools and hooks at once, with one change notification (a
        reloaded tool module, :mod:`toolwire.host.workers.pool`). Nothing changes on error.

        Raises:
            ToolDefinitionError: a tool in ``add`` is invalid, or its name is taken by a
                tool not in ``remove``.
        """
        gone = set(remove)
        names: set[str] = set()
        for t in add:
            check_tool_name(t.name)
            if (t.name in self._tools and t.name not in gone) or t.name in names:
                raise ToolDefinitionError(f"A tool named {t.name!r} is already registered")
            names.add(t.name)
        for name in remove:
            self._tools.pop(name, None)
        for t in add:
            self._tools[t.name] = t
        for fn in remove_hooks:
            self.hooks.remove(fn)
        for fn in add_hooks:
            self.hooks.add(fn)
        self._changed()

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def definitions(self) -> list[dict[str, Any]]:
        """Every tool's wire definition, in registration order (cached)."""
        if self._defs is None:
            self._defs = [t.definition() for t in self._tools.values()]
        return self._defs

    def page(self, cursor: str | None, page_size: int) -> tuple[list[dict[str, Any]], str | None]:
        """One page of definitions and the cursor of the next (None at the end).

        Cursors are opaque to clients (MCP 2025-11-25 "Pagination").

        Raises:
            ValueError: the cursor was not issued by this registry.
        """
        defs = self.definitions()
        start = 0
        if cursor is not None:
            start = decode_cursor(cursor)
            if start > len(defs):
                raise ValueError("cursor out of range")
        end = start + page_size
        next_cursor = encode_cursor(end) if end < len(defs) else None
        return defs[start:end], next_cursor

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` after every registration change."""
        self._listeners.append(listener)

    def off_change(self, listener: Callable[[], None]) -> None:
        """Stop calling ``listener`` (one added with :meth:`on_change`; else nothing)."""
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def _changed(self) -> None:
        self._defs = None
        for listener in self._listeners:
            listener()


def encode_cursor(offset: int) -> str:
    """Opaque cursor for a list offset."""
    return base64.urlsafe_b64encode(f"tw:{offset}".encode()).decode("ascii")


def decode_cursor(cursor: str) -> int:
    """Offset from a cursor made by :func:`encode_cursor`.

    Raises:
        ValueError: anything else.
    """
    try:
        raw = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
    except Exception as exc:
        raise ValueError("invalid cursor") from exc
    if not raw.startswith("tw:") or not raw[3:].isdigit():
        raise ValueError("invalid cursor")
    return int(raw[3:])

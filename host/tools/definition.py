"""A registered tool (:class:`Tool`) and the rules on its name.

MCP calls this a tool definition plus its handler; :mod:`toolwire.host.tools.decorator` builds
one from a function.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
)

from toolwire.constants import PROMPT_GUIDELINES_META_KEY, PROMPT_SNIPPET_META_KEY

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from .context import EarlyStart, ToolContext


from .arguments import Arguments, CheckedArguments

__all__ = ["TOOL_NAME_RE", "Tool", "ToolDefinitionError", "check_tool_name"]

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


class ToolDefinitionError(ValueError):
    """A tool that cannot be registered: bad name, no description, unusable signature."""


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
        own_timeout: the handler applies the call's timeout itself, from
            ``ctx.timeout`` (the stand-in of a tool served by a worker process, which
            does not count the worker's start-up); the executor then sets none.
        early_start: for the stand-in of a worker's tool: ``early_start(arguments, ctx,
            timeout)`` sends the call to a worker at once when one can take it without
            waiting, and returns the call under way (the handler takes it over through
            ``ctx``) or None. The host uses it while a call that nothing in the host
            must see first (no before hook, no approval, no argument preparation, no
            mutation queue) waits for its turn.
        known_definition: the MCP ``Tool`` object to send as is, when it is known in
            advance (a worker's tool, described by its worker); :meth:`definition` then
            returns it instead of building one from the fields above.
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
    own_timeout: bool = False
    early_start: Callable[[dict[str, Any], ToolContext, float | None], EarlyStart | None] | None = (
        None
    )
    known_definition: dict[str, Any] | None = field(default=None, repr=False)
    _definition: dict[str, Any] | None = field(default=None, init=False, repr=False)

    def definition(self) -> dict[str, Any]:
        """The MCP ``Tool`` object clients receive (cached)."""
        if self._definition is None:
            if self.known_definition is not None:
                self._definition = self.known_definition
                return self.known_definition
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

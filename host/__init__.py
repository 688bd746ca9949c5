"""toolwire.host: the tool host — registry, validation, executor, methods, built-ins.

Write a tool::

    from toolwire.host import tool, ToolContext

    @tool
    async def shout(text: str, ctx: ToolContext) -> str:
        \"\"\"Upper-case some text.

        Args:
            text: what to shout.
        \"\"\"
        await ctx.report_progress(1, 1)
        return text.upper()

and serve it: ``toolwire serve --tools shout.py``. To serve a connection inside a
process of your own, await :func:`run_host` with a :class:`HostConfig` and two file
descriptors, or :func:`serve_connection` with two anyio byte streams (``toolwire
serve`` itself is :mod:`toolwire.host.process`).

Errors, by when they happen (and so who sees them):

1. **Definition and start-up time**: raised to the code that declares tools or starts the
   host; nothing is served yet.

   * :class:`ToolDefinitionError` (``toolwire.host.definition``): a tool that cannot be
     registered (bad name, no description, a signature or ``input_schema`` without a
     valid JSON Schema), from ``@tool``/``build_tool`` and the registry.
   * :class:`StartupError` (``toolwire.host.options``): the host cannot start as
     configured; ``toolwire serve`` prints it and exits 2. It carries what went wrong
     below it: a ``--tools`` module that does not import (``WorkerStartError``) or
     defines a bad tool, a sandbox asked for but unavailable (``SandboxUnavailable``).
   * ``ConfigError`` (``toolwire.host.config``, a ``ValueError``): a ``toolwire.toml``
     that cannot be read or does not match its schema, from ``config_from_args``.

2. **Call time, as an error result**: the call is answered with a ``CallToolResult``
   whose ``isError`` is true, text the model can read and act on (MCP 2025-11-25, Tools
   § Error Handling: tool execution errors are results, not protocol errors).

   * :class:`ToolError` (``toolwire.host.results``): raised by a handler with exactly the
     message to show (any other exception a handler raises becomes one the same way);
     ``CommandLimitReached`` (``toolwire.host.commands``, no command slot in time) is one.
   * :class:`PathError` (``toolwire.host.paths``): a path argument outside the root, or
     missing where it must exist; ``InputError`` (``toolwire.host.inputs``): a write to
     a host input.
   * ``ArgumentError`` (``toolwire.host.arguments``): arguments that fail the input
     schema, listed field by field, at preflight (the call never runs).
   * ``HookError`` (``toolwire.host.hooks``): a ``before_tool_call``/``after_tool_call``
     hook that raised or returned something unusable; a hook's :class:`Block` and the
     host's own approval denial (``HostDenial``) give error results without an exception.
   * ``InputNeeded`` (``toolwire.host.rounds``, 2026-07-28 era): not an error result but
     an input-required one, asking the client for what the call needs.

3. **Protocol**: the request is answered with a JSON-RPC error instead of a result.

   * ``toolwire.errors.JsonRpcError``: malformed requests, invalid params, an unknown
     tool (-32602), a cancelled request.
   * ``ProtocolFailure`` (``toolwire.host.results``): a call that must fail as a JSON-RPC
     error (a worker process that could not encode its result: -32603).
   * ``AuthFailure`` (``toolwire.host.httpauth``, ``serve --http``): HTTP 401/403 before
     any JSON-RPC is read.

``UnsupportedSchema`` (``toolwire.host.schema``) never leaves the host: a schema the
fast check does not cover is checked by ``jsonschema`` instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire._lazy import lazy_exports

__all__ = [
    "NOT_GIVEN",
    "ApprovalPolicy",
    "Block",
    "ExecEnv",
    "Executor",
    "HostConfig",
    "HostServer",
    "IncomingCall",
    "Param",
    "PathError",
    "Pipeline",
    "Registry",
    "ResultPatch",
    "RunResult",
    "StartupError",
    "Tool",
    "ToolAnnotations",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolResult",
    "after_tool_call",
    "before_tool_call",
    "run_host",
    "run_in_env",
    "serve_connection",
    "tool",
]

# Names are imported on first use: ``python -m toolwire.host`` starts its sandbox probe
# before the heavy imports, and ToolAnnotations (a pydantic model) costs nothing unless used.
__getattr__ = lazy_exports(
    __name__,
    {
        "ApprovalPolicy": ".approval",
        "Block": ".hooks",
        "ExecEnv": ".context",
        "Executor": ".executor",
        "HostConfig": ".options",
        "HostServer": ".server",
        "NOT_GIVEN": ".hooks",
        "Param": ".hints",
        "PathError": ".paths",
        "Pipeline": ".pipeline",
        "Registry": ".registry",
        "ResultPatch": ".hooks",
        "RunResult": ".commands",
        "StartupError": ".options",
        "Tool": ".definition",
        "ToolAnnotations": "toolwire.models",
        "IncomingCall": ".hooks",
        "ToolContext": ".context",
        "ToolDefinitionError": ".definition",
        "ToolError": ".results",
        "ToolResult": ".results",
        "after_tool_call": ".hooks",
        "before_tool_call": ".hooks",
        "run_host": ".connection",
        "run_in_env": ".commands",
        "serve_connection": ".connection",
        "tool": ".decorator",
    },
)

if TYPE_CHECKING:
    from toolwire.models import ToolAnnotations

    from .approval import ApprovalPolicy
    from .commands import RunResult, run_in_env
    from .connection import run_host, serve_connection
    from .context import ExecEnv, ToolContext
    from .decorator import tool
    from .definition import Tool, ToolDefinitionError
    from .executor import Executor
    from .hints import Param
    from .hooks import (
        NOT_GIVEN,
        Block,
        IncomingCall,
        ResultPatch,
        after_tool_call,
        before_tool_call,
    )
    from .options import HostConfig, StartupError
    from .paths import PathError
    from .pipeline import Pipeline
    from .registry import Registry
    from .results import ToolError, ToolResult
    from .server import HostServer

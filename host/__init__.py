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
serve`` itself is :mod:`toolwire.host.serve.process`).

Errors, by when they happen (and so who sees them):

1. **Definition and start-up time**: raised to the code that declares tools or starts the
   host; nothing is served yet.

   * :class:`ToolDefinitionError` (``toolwire.host.tools.definition``): a tool that cannot be
     registered (bad name, no description, a signature or ``input_schema`` without a
     valid JSON Schema), from ``@tool``/``build_tool`` and the registry.
   * :class:`StartupError` (``toolwire.host.serve.options``): the host cannot start as
     configured; ``toolwire serve`` prints it and exits 2. It carries what went wrong
     below it: a ``--tools`` module that does not import (``WorkerStartError``) or
     defines a bad tool, a sandbox asked for but unavailable (``SandboxUnavailable``).
   * ``ConfigError`` (``toolwire.host.serve.config``, a ``ValueError``): a ``toolwire.toml``
     that cannot be read or does not match its schema, from ``config_from_args``.

2. **Call time, as an error result**: the call is answered with a ``CallToolResult``
   whose ``isError`` is true, text the model can read and act on (MCP 2025-11-25, Tools
   § Error Handling: tool execution errors are results, not protocol errors).

   * :class:`ToolError` (``toolwire.host.tools.results``): raised by a handler with exactly the
     message to show (any other exception a handler raises becomes one the same way);
     ``CommandLimitReached`` (``toolwire.host.sandbox.commands``, no command slot in time) is one.
   * :class:`PathError` (``toolwire.host.sandbox.paths``): a path argument outside the root, or
     missing where it must exist; ``InputError`` (``toolwire.host.sandbox.inputs``): a write to
     a host input.
   * ``ArgumentError`` (``toolwire.host.tools.arguments``): arguments that fail the input
     schema, listed field by field, at preflight (the call never runs).
   * ``HookError`` (``toolwire.host.tools.hooks``): a ``before_tool_call``/``after_tool_call``
     hook that raised or returned something unusable; a hook's :class:`Block` and the
     host's own approval denial (``HostDenial``) give error results without an exception.
   * ``InputNeeded`` (``toolwire.host.tools.rounds``, 2026-07-28 era): not an error result but
     an input-required one, asking the client for what the call needs.

3. **Protocol**: the request is answered with a JSON-RPC error instead of a result.

   * ``toolwire.errors.JsonRpcError``: malformed requests, invalid params, an unknown
     tool (-32602), a cancelled request.
   * ``ProtocolFailure`` (``toolwire.host.tools.results``): a call that must fail as a JSON-RPC
     error (a worker process that could not encode its result: -32603).
   * ``AuthFailure`` (``toolwire.host.serve.http.auth``, ``serve --http``): HTTP 401/403 before
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
        "ApprovalPolicy": ".calls.approval",
        "Block": ".tools.hooks",
        "ExecEnv": ".sandbox.env",
        "Executor": ".calls.executor",
        "HostConfig": ".serve.options",
        "HostServer": ".methods.server",
        "NOT_GIVEN": ".tools.hooks",
        "Param": ".schema.hints",
        "PathError": ".sandbox.paths",
        "Pipeline": ".calls.pipeline",
        "Registry": ".tools.registry",
        "ResultPatch": ".tools.hooks",
        "RunResult": ".sandbox.commands",
        "StartupError": ".serve.options",
        "Tool": ".tools.definition",
        "ToolAnnotations": "toolwire.models",
        "IncomingCall": ".tools.hooks",
        "ToolContext": ".tools.context",
        "ToolDefinitionError": ".tools.definition",
        "ToolError": ".tools.results",
        "ToolResult": ".tools.results",
        "after_tool_call": ".tools.hooks",
        "before_tool_call": ".tools.hooks",
        "run_host": ".serve.connection",
        "run_in_env": ".sandbox.commands",
        "serve_connection": ".serve.connection",
        "tool": ".tools.decorator",
    },
)

if TYPE_CHECKING:
    from toolwire.models import ToolAnnotations

    from .calls.approval import ApprovalPolicy
    from .calls.executor import Executor
    from .calls.pipeline import Pipeline
    from .methods.server import HostServer
    from .sandbox.commands import RunResult, run_in_env
    from .sandbox.env import ExecEnv
    from .sandbox.paths import PathError
    from .schema.hints import Param
    from .serve.connection import run_host, serve_connection
    from .serve.options import HostConfig, StartupError
    from .tools.context import ToolContext
    from .tools.decorator import tool
    from .tools.definition import Tool, ToolDefinitionError
    from .tools.hooks import (
        NOT_GIVEN,
        Block,
        IncomingCall,
        ResultPatch,
        after_tool_call,
        before_tool_call,
    )
    from .tools.registry import Registry
    from .tools.results import ToolError, ToolResult

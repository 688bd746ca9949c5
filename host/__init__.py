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

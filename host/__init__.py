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

and serve it: ``toolwire serve --tools shout.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .approval import ApprovalPolicy
from .context import ExecEnv, ToolContext
from .executor import Executor
from .hints import Param
from .hooks import (
    NOT_GIVEN,
    Block,
    CallResult,
    ResultPatch,
    ToolCall,
    after_tool_call,
    before_tool_call,
)
from .paths import PathError
from .pipeline import Pipeline
from .registry import Registry
from .results import ToolError, ToolResult
from .runner import RunResult, run_in_env
from .server import HostServer
from .tools import Tool, ToolDefinitionError, tool

__all__ = [
    "NOT_GIVEN",
    "ApprovalPolicy",
    "Block",
    "CallResult",
    "ExecEnv",
    "Executor",
    "HostServer",
    "Param",
    "PathError",
    "Pipeline",
    "Registry",
    "ResultPatch",
    "RunResult",
    "Tool",
    "ToolAnnotations",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolResult",
    "after_tool_call",
    "before_tool_call",
    "run_in_env",
    "tool",
]

if TYPE_CHECKING:
    from toolwire.models import ToolAnnotations


def __getattr__(name: str) -> Any:
    # ToolAnnotations is a pydantic model; import it (and pydantic) only when asked for,
    # so a host whose tools need no pydantic starts without it.
    if name == "ToolAnnotations":
        from toolwire.models import ToolAnnotations

        return ToolAnnotations
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

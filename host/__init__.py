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

from toolwire.models import ToolAnnotations

from .approval import ApprovalPolicy
from .context import ExecEnv, ToolContext
from .executor import Executor
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
    "PathError",
    "Pipeline",
    "Registry",
    "ResultPatch",
    "Tool",
    "ToolAnnotations",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolResult",
    "after_tool_call",
    "before_tool_call",
    "tool",
]

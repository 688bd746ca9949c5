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

from .context import ExecEnv, ToolContext
from .executor import Executor
from .paths import PathError
from .registry import Registry
from .results import ToolError, ToolResult
from .server import HostServer
from .tools import Tool, ToolDefinitionError, tool

__all__ = [
    "ExecEnv",
    "Executor",
    "HostServer",
    "PathError",
    "Registry",
    "Tool",
    "ToolAnnotations",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolResult",
    "tool",
]

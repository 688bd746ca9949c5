"""Helpers for the built-in tool tests: call a built-in in-process through the Executor.

Imported as ``tests.host.builtins.support``; it holds no tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolwire.host import ExecEnv, Executor, IncomingCall, Pipeline, Tool, ToolContext
from toolwire.host.builtins import builtin_tools
from toolwire.host.tools.decorator import build_tool

from toolwire.models import DETAILS_META_KEY

TOOLS = {t.name: t for t in (build_tool(f) for f in builtin_tools())}


async def call(root: Path, name: str, args: dict[str, Any], **env: Any) -> dict[str, Any]:
    """Run built-in ``name`` with ``args`` in an environment rooted at ``root``;
    returns the wire ``CallToolResult``."""
    ctx = ToolContext("test-call", name, ExecEnv.at(root, **env))
    return await run_tool(TOOLS[name], args, ctx, Executor(default_timeout=60))


async def run_tool(
    tool: Tool, args: dict[str, Any], ctx: ToolContext, executor: Executor | None = None
) -> dict[str, Any]:
    """Run one call of ``tool`` through the call pipeline (no hooks, no approval), as the
    host runs a ``tools/call``; returns the wire ``CallToolResult``."""
    pipeline = Pipeline(executor or Executor())
    return await pipeline.run(tool, IncomingCall(ctx.call_id, tool.name, args), ctx)


def text(result: dict[str, Any]) -> str:
    """All text blocks of a result, joined by newlines."""
    return "\n".join(b["text"] for b in result["content"] if b["type"] == "text")


def details(result: dict[str, Any]) -> Any:
    """The result's ``details`` (None when absent)."""
    return result.get("_meta", {}).get(DETAILS_META_KEY)


def is_error(result: dict[str, Any]) -> bool:
    return bool(result.get("isError"))

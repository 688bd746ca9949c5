"""Tools that put a lone surrogate (U+DCFF, what a file name that is not UTF-8 decodes
to) in every part of what a host sends: a result's text, its structured content, an
error, a log message, a progress message and the tool's own definition
(tests/e2e/test_e2e_surrogates.py)."""

from __future__ import annotations

from typing import Annotated, TypedDict

from pydantic import Field
from toolwire.host import ToolContext, ToolError, tool

LONE = "\udcff"


class Named(TypedDict):
    name: str


@tool
async def lone_text() -> str:
    """Return text holding a lone surrogate."""
    return f"file-{LONE}.txt"


@tool
async def lone_structured() -> Named:
    """Return structured content holding a lone surrogate."""
    return {"name": f"file-{LONE}.txt"}


@tool
async def lone_error() -> str:
    """Fail with a message holding a lone surrogate."""
    raise ToolError(f"cannot open file-{LONE}.txt")


@tool
async def lone_crash() -> str:
    """Raise an unexpected exception whose message holds a lone surrogate."""
    raise RuntimeError(f"crashed on file-{LONE}.txt")


@tool
async def lone_log(ctx: ToolContext) -> str:
    """Log a message holding a lone surrogate, then return."""
    await ctx.log("warning", f"looked at file-{LONE}.txt")
    await ctx.log("warning", {"file": f"file-{LONE}.txt"})
    return "logged"


@tool
async def lone_progress(ctx: ToolContext) -> str:
    """Report progress with a message holding a lone surrogate, then return."""
    await ctx.report_progress(1, 2, f"reading file-{LONE}.txt")
    return "reported"


@tool
async def lone_definition(
    name: Annotated[str, Field(description="a name such as file-\udcff.txt")] = "x",
) -> str:
    """A tool whose definition holds a lone surrogate: file-\udcff.txt."""
    return name

"""The ``write`` tool: create or replace a file atomically."""

from __future__ import annotations

from typing import Annotated

import anyio.to_thread

from ..sandbox.paths import resolve_write_path
from ..schema.hints import Param
from ..tools.context import ToolContext
from ..tools.results import ToolError, ToolResult
from ._common import atomic_write, builtin_tool, commit_point, display_path

__all__ = ["write"]


@builtin_tool(annotations={"destructiveHint": True, "idempotentHint": True}, mutates=("path",))
async def write(
    path: Annotated[str, Param(description="File to write, relative to the working directory.")],
    content: Annotated[str, Param(description="The complete new content of the file.")],
    ctx: ToolContext,
) -> ToolResult:
    """Write a file: create it (and its parent directories) or replace its whole content.

    The replacement is atomic: the file holds either the old or the new content.
    A path ending in '/' names a directory and is refused.
    """
    real = await anyio.to_thread.run_sync(resolve_write_path, ctx.env, path)
    shown = display_path(real, ctx.env.cwd)
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(
            f"content holds a lone surrogate at index {exc.start}, which UTF-8 cannot encode"
        ) from None
    # Writes to one file never overlap: the executor's per-file mutation queue (mutates).
    # A call cancelled (or timed out) before the rename leaves the file as it was;
    # once renamed, it is answered with this result whatever cancellation arrives.
    created = await anyio.to_thread.run_sync(
        atomic_write, real, data, shown, ctx.env.root, commit_point(ctx)
    )
    verb = "Created" if created else "Wrote"
    return ToolResult(
        f"{verb} {shown}: {len(data)} bytes written",
        details={"path": str(real), "bytes": len(data), "created": created},
    )

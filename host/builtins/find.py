"""The ``find`` tool: list files matching a glob, respecting .gitignore."""

from __future__ import annotations

import stat
from typing import Annotated, Any

import anyio
import anyio.to_thread

from ..sandbox.paths import PathError, stat_beneath
from ..schema.hints import Param
from ..tools.context import ToolContext
from ..tools.results import ToolError, ToolResult
from ._common import GlobMatcher, LineSplitter, builtin_tool, display_path, find_rg
from .grep import rg_base_args, run_rg, sandbox_start_error
from .truncate import MAX_BYTES, format_size, truncate_head

__all__ = ["find"]


@builtin_tool(annotations={"readOnlyHint": True, "idempotentHint": True})
async def find(
    pattern: Annotated[
        str, Param(description="Glob to match, e.g. '*.py', '**/*.test.ts' or 'src/**/x*'.")
    ],
    ctx: ToolContext,
    path: Annotated[
        str, Param(default=".", description="Directory to search (default: the working directory).")
    ] = ".",
    limit: Annotated[int, Param(default=1000, ge=1, description="Most paths to return.")] = 1000,
) -> ToolResult:
    """Find files by glob pattern. Paths come back relative to the searched directory;
    files ignored by .gitignore are skipped, hidden files are included. A pattern
    without '/' matches file names in any directory.
    """
    rg = find_rg()
    if rg is None:
        raise ToolError("ripgrep (rg) is not installed; find needs it")
    real = await anyio.to_thread.run_sync(lambda: ctx.env.resolve(path, must_exist=True))
    shown = display_path(real, ctx.env.cwd)
    try:
        st = await anyio.to_thread.run_sync(lambda: stat_beneath(ctx.env.root, real, shown=shown))
        is_dir = stat.S_ISDIR(st.st_mode)
    except PathError as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:
        raise ToolError(f"Cannot search {shown}: {exc.strerror or type(exc).__name__}") from None
    if not is_dir:
        raise ToolError(f"Not a directory: {shown}")
    try:
        matcher = await anyio.to_thread.run_sync(GlobMatcher, pattern)
    except ValueError as exc:
        raise ToolError(f"Invalid glob pattern: {exc}") from None

    found: list[str] = []
    splitter = LineSplitter()
    errors: list[str] = []
    limit_hit = False

    def take(lines: list[str]) -> bool:
        """Match listed paths (in a worker thread); True once past the limit."""
        nonlocal limit_hit
        for line in lines:
            rel = line.removeprefix("./")
            if not rel:
                continue
            if rel.startswith(("rg: ", "bwrap: ")):
                if len(errors) < 20:
                    errors.append(rel)
                continue
            if matcher(rel):
                found.append(rel)
                if len(found) > limit:
                    limit_hit = True
                    return True
        return False

    result = await run_rg(
        ctx.env,
        [*rg_base_args(rg), "--files", "--", "."],
        within=ctx.env.root,
        directory=real,
        shown=shown,
        feed=lambda text: take(splitter.feed(text)),
        close=lambda: take(splitter.close()),
    )
    not_started = sandbox_start_error(errors)
    if not_started is not None:
        raise ToolError(f"find failed: the sandbox could not start ripgrep: {not_started}")
    if result is not None and result.exit_code not in (0, 1) and not found:
        raise ToolError("find failed: " + ("; ".join(errors) or f"code {result.exit_code}"))
    if not found:
        return ToolResult(f"No files found matching {pattern}", details={"count": 0})
    return await anyio.to_thread.run_sync(_answer, found, limit, limit_hit)


def _answer(found: list[str], limit: int, limit_hit: bool) -> ToolResult:
    """The sorted, capped listing (run in a worker thread: it may be long)."""
    found = sorted(found[:limit], key=lambda p: (p.casefold(), p))
    cut = truncate_head("\n".join(found), max_lines=len(found) + 1, max_bytes=MAX_BYTES)
    body = cut.content.removesuffix("\n")
    details: dict[str, Any] = {"count": len(found)}
    notes = []
    if limit_hit:
        notes.append(
            f"[{limit} results limit reached. Use limit={limit * 2} for more, "
            "or refine the pattern.]"
        )
        details["limitReached"] = limit
    if cut.truncation.truncated:
        notes.append(f"[Output cut at {format_size(MAX_BYTES)}; refine the pattern.]")
        details["truncation"] = cut.truncation.to_json()
    if notes:
        body += "\n\n" + "\n".join(notes)
    return ToolResult(body, details=details)

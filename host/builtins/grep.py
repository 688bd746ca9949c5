"""The ``grep`` tool: search file contents with ripgrep, respecting .gitignore."""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path
from typing import Annotated, Any

import anyio
import anyio.to_thread

from ..context import ToolContext
from ..hints import Param
from ..paths import resolve_output_file
from ..results import ToolError, ToolResult
from ..runner import RunResult, run_in_env
from ..truncate import GREP_MAX_LINE_CHARS, MAX_BYTES, format_size, truncate_head, truncate_line
from ._common import GlobMatcher, builtin_tool, display_path, file_kind, find_rg, read_regular

__all__ = ["grep", "rg_base_args"]


def rg_base_args(rg: str) -> list[str]:
    """ripgrep options every built-in uses: no config file, hidden files searched,
    .gitignore honoured even outside a git repository, the .git directory skipped."""
    return [rg, "--no-config", "--hidden", "--no-require-git", "--glob=!.git", "--color=never"]


def _text_of(field: dict[str, Any]) -> str:
    if "text" in field:
        return str(field["text"])
    return base64.b64decode(field.get("bytes", "")).decode("utf-8", "replace")


class _JsonLines:
    """Splits decoded ripgrep output into JSON events and error lines."""

    def __init__(self) -> None:
        self.buf = ""
        self.errors: list[str] = []

    def feed(self, text: str) -> list[dict[str, Any]]:
        self.buf += text
        *lines, self.buf = self.buf.split("\n")
        return self._parse(lines)

    def close(self) -> list[dict[str, Any]]:
        rest, self.buf = self.buf, ""
        return self._parse([rest] if rest else [])

    def _parse(self, lines: list[str]) -> list[dict[str, Any]]:
        out = []
        for line in lines:
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                    continue
                except ValueError:
                    pass
            if line.strip():
                self.errors.append(line.strip())
        return out


@builtin_tool(annotations={"readOnlyHint": True, "idempotentHint": True})
async def grep(
    pattern: Annotated[str, Param(description="Regular expression (or literal text) to find.")],
    ctx: ToolContext,
    path: Annotated[
        str,
        Param(
            default=".", description="File or directory to search (default: the working directory)."
        ),
    ] = ".",
    glob: Annotated[
        str | None,
        Param(default=None, description="Only files matching this glob, e.g. '*.py' or 'src/**'."),
    ] = None,
    ignoreCase: Annotated[
        bool, Param(default=False, description="Case-insensitive search.")
    ] = False,
    literal: Annotated[
        bool, Param(default=False, description="Treat pattern as plain text.")
    ] = False,
    context: Annotated[
        int,
        Param(default=0, ge=0, le=50, description="Lines of context before and after each match."),
    ] = 0,
    limit: Annotated[int, Param(default=100, ge=1, description="Most matches to return.")] = 100,
) -> ToolResult:
    """Search file contents with ripgrep. Files ignored by .gitignore are skipped;
    hidden files are searched. Output lines are 'path:line: text' for matches and
    'path-line- text' for context lines.
    """
    rg = find_rg()
    if rg is None:
        raise ToolError("ripgrep (rg) is not installed; grep needs it")
    output_file = resolve_output_file(path)  # a bash full-output file, read-only
    real = output_file or ctx.env.resolve(path, must_exist=True)
    within = output_file.parent if output_file else ctx.env.root
    matcher: GlobMatcher | None = None
    if glob:
        try:
            matcher = GlobMatcher(glob)
        except ValueError as exc:
            raise ToolError(f"Invalid glob: {exc}") from None
    try:
        mode = os.stat(real).st_mode
    except OSError as exc:
        raise ToolError(f"Cannot search {path}: {exc.strerror or exc}") from None
    single_file = not stat.S_ISDIR(mode)
    if single_file and not stat.S_ISREG(mode):
        # ripgrep would block reading a FIFO or read a device forever.
        raise ToolError(f"{path} is a {file_kind(mode)}, not a file or directory; not searching it")
    if single_file:
        search_dir, target = real.parent, real.name
    else:
        search_dir, target = real, "."
    argv = [*rg_base_args(rg), "--json", "--line-number"]
    if ignoreCase:
        argv.append("--ignore-case")
    if literal:
        argv.append("--fixed-strings")
    # -e takes the next argument as the pattern whatever it looks like, and "--" ends
    # the options before the path: a pattern such as "--pre=script" is only a pattern.
    argv += ["-e", pattern, "--", target]

    matches: list[tuple[str, int, str]] = []
    parser = _JsonLines()
    limit_hit = False

    result: RunResult | None = None
    with anyio.CancelScope() as scope:

        def take(events: list[dict[str, Any]]) -> None:
            nonlocal limit_hit
            for ev in events:
                if ev.get("type") != "match" or limit_hit:
                    continue
                data = ev["data"]
                rel = _text_of(data["path"]).removeprefix("./")
                if matcher is not None and not matcher(real.name if single_file else rel):
                    continue
                text = _text_of(data["lines"]).removesuffix("\n").removesuffix("\r")
                matches.append((rel, int(data["line_number"]), text))
                if len(matches) >= limit:
                    limit_hit = True
                    scope.cancel()

        def on_output(text: str) -> None:
            take(parser.feed(text))

        result = await run_in_env(ctx.env, argv, cwd=search_dir, on_output=on_output)
        take(parser.close())
    failed = result is not None and result.exit_code not in (0, 1)
    if failed and not matches:
        msg = "; ".join(parser.errors) or f"ripgrep exited with code {result and result.exit_code}"
        raise ToolError(f"grep failed: {msg}")

    if not matches:
        return ToolResult("No matches found", details={"matches": 0})

    lines_cut = False
    out: list[str] = []
    file_cache: dict[str, list[str]] = {}
    printed: dict[str, int] = {}  # last line number printed per file

    async def file_lines(rel: str) -> list[str]:
        if rel not in file_cache:
            p = Path(search_dir, rel)
            try:
                data = await anyio.to_thread.run_sync(read_regular, p, rel, within)
                file_cache[rel] = data.decode("utf-8", "replace").split("\n")
            except ToolError:
                file_cache[rel] = []
        return file_cache[rel]

    for rel, n, text in matches:
        label = real.name if single_file else rel
        if context > 0:
            lines = await file_lines(rel)
            first = max(1, n - context, printed.get(rel, 0) + 1)
            last = min(len(lines), n + context) if lines else n
            for k in range(first, last + 1):
                if k == n:
                    line_text, sep = text, ":"
                else:
                    line_text, sep = lines[k - 1].removesuffix("\r"), "-"
                shown_text, cut = truncate_line(line_text, GREP_MAX_LINE_CHARS)
                lines_cut |= cut
                out.append(f"{label}{sep}{k}{sep} {shown_text}")
            printed[rel] = max(printed.get(rel, 0), last)
        else:
            shown_text, cut = truncate_line(text, GREP_MAX_LINE_CHARS)
            lines_cut |= cut
            out.append(f"{label}:{n}: {shown_text}")

    cut_out = truncate_head("\n".join(out), max_lines=len(out) + 1, max_bytes=MAX_BYTES)
    body = cut_out.content.removesuffix("\n")
    notes: list[str] = []
    details: dict[str, Any] = {"matches": len(matches)}
    if limit_hit:
        notes.append(
            f"[{limit} matches limit reached. Use limit={limit * 2} for more, "
            "or refine the pattern.]"
        )
        details["matchLimitReached"] = limit
    if cut_out.truncation.truncated:
        notes.append(
            f"[Output cut at {format_size(MAX_BYTES)}: showing {cut_out.truncation.output_lines} "
            f"of {len(out)} lines. Narrow the search with path or glob.]"
        )
        details["truncation"] = cut_out.truncation.to_json()
    if lines_cut:
        notes.append(
            f"[Some lines were cut to {GREP_MAX_LINE_CHARS} characters; read the file to "
            "see them whole.]"
        )
        details["linesTruncated"] = True
    if failed and parser.errors:
        notes.append("[Some files could not be searched: " + "; ".join(parser.errors[:5]) + "]")
    if notes:
        body += "\n\n" + "\n".join(notes)
    details["path"] = display_path(real, ctx.env.cwd)
    return ToolResult(body, details=details)

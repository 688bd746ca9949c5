"""The ``grep`` tool: search file contents with ripgrep, respecting .gitignore.

ripgrep prints each line cut to :data:`RG_MAX_COLUMNS` bytes (``--max-columns``
with a preview), and the host parses its output in a worker thread while keeping
at most what the answer shows, so a file made of one huge line, or millions of
matches, costs the host little memory and never stalls its event loop. Binary
files (a NUL byte in the block ripgrep reads first) are skipped when a directory is
searched; a binary file named directly is reported as matching, without its lines.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import anyio
import anyio.to_thread

from ..sandbox.commands import RunResult, run_in_env
from ..sandbox.env import ExecEnv
from ..sandbox.paths import PathError, open_directory, resolve_output_file, stat_beneath
from ..schema.hints import Param
from ..tools.context import ToolContext
from ..tools.results import ToolError, ToolResult
from ._common import GlobMatcher, LineSplitter, builtin_tool, display_path, file_kind, find_rg
from .truncate import GREP_MAX_LINE_CHARS, MAX_BYTES, Truncation, format_size, truncate_line

__all__ = [
    "RG_MAX_COLUMNS",
    "grep",
    "rg_base_args",
    "rg_start_dir",
    "run_rg",
    "sandbox_start_error",
]

RG_MAX_COLUMNS = 4 * GREP_MAX_LINE_CHARS
"""Bytes of one line ripgrep prints (enough for :data:`GREP_MAX_LINE_CHARS`
characters of UTF-8); the rest of a longer line never reaches the host."""

_LINE = re.compile(r"(\d+)([:-])")
_BINARY = re.compile(r"^(?P<path>.*): binary file matches \(")


@contextlib.contextmanager
def rg_start_dir(env: ExecEnv, within: Path, directory: Path, shown: str) -> Iterator[str]:
    """The working directory to start ripgrep in, for searching ``directory`` (a real
    path inside ``within``, as :func:`toolwire.host.sandbox.paths.resolve_path` returns it).

    Unsandboxed, the directory is opened beneath ``within`` following no symlink
    (:func:`toolwire.host.sandbox.paths.open_directory`) and the process starts in that very
    directory through ``/proc/self/fd/<n>`` (the child changes into it before it runs
    ripgrep, while the descriptor is open): a directory swapped for a symlink to
    elsewhere after the check is refused, never entered by name. In the sandbox only
    the root (and what the sandbox shows read-only) is visible, so the path is used.

    Raises:
        ToolError: the directory changed into a symlink, or cannot be opened.
    """
    sandbox = env.sandbox
    if (sandbox is not None and sandbox.active) or not os.path.isdir("/proc/self/fd"):
        yield str(directory)
        return
    try:
        fd = open_directory(within, directory, shown=shown)
    except PathError as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:
        raise ToolError(f"Cannot search {shown}: {exc.strerror or type(exc).__name__}") from None
    try:
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


def sandbox_start_error(messages: list[str]) -> str | None:
    """The message of bubblewrap failing to start the command (e.g. ``bwrap: Can't
    chdir to …``, exit code 1, which ripgrep also uses for "nothing found"), among
    output lines that are not results; None when bubblewrap said nothing. ripgrep's
    own messages start with ``rg:``; its results carry a path, never this prefix."""
    for text in messages:
        if text.startswith("bwrap: "):
            return text
    return None


def rg_base_args(rg: str) -> list[str]:
    """ripgrep options every built-in uses: no config file, hidden files searched,
    .gitignore honoured even outside a git repository, the .git directory skipped."""
    return [rg, "--no-config", "--hidden", "--no-require-git", "--glob=!.git", "--color=never"]


async def run_rg(
    env: ExecEnv,
    argv: list[str],
    *,
    within: Path,
    directory: Path,
    shown: str,
    feed: Callable[[str], bool],
    close: Callable[[], object],
) -> RunResult | None:
    """Run ripgrep (``argv``, from :func:`rg_base_args`) in ``directory`` (entered as
    :func:`rg_start_dir` says), the one runner of the ripgrep built-ins (grep, find).

    Each piece of its output text goes to ``feed`` in a worker thread (parsing a huge
    output never stalls the event loop); once ``feed`` returns True the search is
    stopped and ``close`` is not called, otherwise ``close()`` runs in a worker thread
    after ripgrep ended (the last, unterminated line).

    Returns:
        The command's result, or None when ``feed`` stopped it.

    Raises:
        ToolError: the directory cannot be entered (:func:`rg_start_dir`).
    """
    result: RunResult | None = None
    with anyio.CancelScope() as scope:

        async def on_output(text: str) -> None:
            if await anyio.to_thread.run_sync(feed, text):
                scope.cancel()

        with rg_start_dir(env, within, directory, shown) as start:
            result = await run_in_env(env, argv, cwd=start, on_output=on_output)
        await anyio.to_thread.run_sync(close)
    return result


class _GrepOutput:
    """Turns ripgrep's ``path NUL number [:-] text`` lines into the answer's lines.

    Holds at most :data:`~toolwire.host.builtins.truncate.MAX_BYTES` of answer text; lines
    past that are only counted. ``feed`` returns True once the search can stop.
    """

    def __init__(self, limit: int, context: int, matcher: GlobMatcher | None) -> None:
        self.limit = limit
        self.context = context
        self.matcher = matcher
        self.splitter = LineSplitter()
        self.matches = 0
        self.limit_hit = False
        self.done = False
        self.last: tuple[str, int] = ("", 0)
        self.kept: list[str] = []
        self.kept_bytes = 0
        self.total_lines = 0
        self.total_bytes = 0
        self.full = False
        self.lines_cut = False
        self.errors: list[str] = []
        self.binary: list[str] = []

    def feed(self, text: str) -> bool:
        for line in self.splitter.feed(text):
            self._line(line)
            if self.done:
                break
        return self.done

    def close(self) -> None:
        if not self.done:
            for line in self.splitter.close():
                self._line(line)

    def _line(self, line: str) -> None:
        if self.done:
            return
        path, nul, rest = line.partition("\0")
        if not nul:
            self._message(line)
            return
        m = _LINE.match(rest)
        if m is None:
            return
        rel = path.removeprefix("./")
        if self.matcher is not None and not self.matcher(rel):
            return
        n = int(m.group(1))
        is_match = m.group(2) == ":"
        if self.limit_hit:
            last_rel, last_n = self.last
            if is_match or rel != last_rel or n > last_n + self.context:
                self.done = True
                return
        body = rest[m.end() :].removesuffix("\r")
        shown, cut = truncate_line(body, GREP_MAX_LINE_CHARS)
        self.lines_cut |= cut
        sep = ":" if is_match else "-"
        self._keep(f"{rel}{sep}{n}{sep} {shown}")
        if is_match:
            self.matches += 1
            if self.matches >= self.limit:
                self.limit_hit = True
                self.last = (rel, n)
                self.done = self.context == 0

    def _message(self, line: str) -> None:
        text = line.strip()
        if not text:
            return
        b = _BINARY.match(text)
        if b is not None:
            rel = b.group("path").removeprefix("./")
            if (self.matcher is None or self.matcher(rel)) and len(self.binary) < 20:
                self.binary.append(rel)
        elif len(self.errors) < 20:
            self.errors.append(text[:GREP_MAX_LINE_CHARS])

    def _keep(self, line: str) -> None:
        size = len(line.encode("utf-8", "surrogatepass")) + 1
        self.total_lines += 1
        self.total_bytes += size
        if not self.full and self.kept_bytes + size <= MAX_BYTES + 1:
            self.kept.append(line)
            self.kept_bytes += size
        else:
            self.full = True


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
    hidden files are searched, binary files are not. Output lines are
    'path:line: text' for matches and 'path-line- text' for context lines.
    """
    rg = find_rg()
    if rg is None:
        raise ToolError("ripgrep (rg) is not installed; grep needs it")
    where = await _grep_target(ctx.env, path, glob)
    argv = _grep_argv(rg, where, pattern, ignore_case=ignoreCase, literal=literal, context=context)
    out = _GrepOutput(limit, context, where.matcher)
    result = await run_rg(
        ctx.env,
        argv,
        within=where.within,
        directory=where.search_dir,
        shown=path,
        feed=out.feed,
        close=out.close,
    )
    failed = _grep_failed(out, result)
    return _grep_answer(out, limit, failed, display_path(where.real, ctx.env.cwd))


@dataclass(frozen=True)
class _GrepTarget:
    """What one grep searches: ``real`` (the resolved path), ``within`` (the directory
    it must stay beneath), where ripgrep starts (``search_dir``) and the path it is
    given there (``target``: a file's name, or "."), the glob's matcher (None: all)."""

    real: Path
    within: Path
    search_dir: Path
    target: str
    matcher: GlobMatcher | None


async def _grep_target(env: ExecEnv, path: str, glob: str | None) -> _GrepTarget:
    """The arguments ``path`` and ``glob`` checked: an existing file or directory inside
    the root (or a bash full-output file, read-only), a glob that parses.

    Raises:
        ToolError: a missing path, one outside the root, a FIFO/device/socket, or a
            glob that does not parse.
    """

    def resolve() -> tuple[Path, Path | None]:
        output_file = resolve_output_file(path)  # a bash full-output file, read-only
        return output_file or env.resolve(path, must_exist=True), output_file

    real, output_file = await anyio.to_thread.run_sync(resolve)
    within = output_file.parent if output_file else env.root
    matcher: GlobMatcher | None = None
    if glob:
        try:
            matcher = await anyio.to_thread.run_sync(GlobMatcher, glob)
        except ValueError as exc:
            raise ToolError(f"Invalid glob: {exc}") from None
    try:
        mode = (
            await anyio.to_thread.run_sync(lambda: stat_beneath(within, real, shown=path))
        ).st_mode
    except PathError as exc:
        raise ToolError(str(exc)) from None
    except OSError as exc:
        raise ToolError(f"Cannot search {path}: {exc.strerror or type(exc).__name__}") from None
    if stat.S_ISDIR(mode):
        return _GrepTarget(real, within, real, ".", matcher)
    if not stat.S_ISREG(mode):
        # ripgrep would block reading a FIFO or read a device forever.
        raise ToolError(f"{path} is a {file_kind(mode)}, not a file or directory; not searching it")
    return _GrepTarget(real, within, real.parent, real.name, matcher)


def _grep_argv(
    rg: str, where: _GrepTarget, pattern: str, *, ignore_case: bool, literal: bool, context: int
) -> list[str]:
    """ripgrep's command line: ``path NUL number [:-] text`` lines, each cut to
    :data:`RG_MAX_COLUMNS` bytes."""
    argv = [
        *rg_base_args(rg),
        "--line-number",
        "--with-filename",
        "--no-heading",
        "--null",
        "--no-context-separator",
        f"--max-columns={RG_MAX_COLUMNS}",
        "--max-columns-preview",
    ]
    if context:
        argv.append(f"--context={context}")
    if ignore_case:
        argv.append("--ignore-case")
    if literal:
        argv.append("--fixed-strings")
    # -e takes the next argument as the pattern whatever it looks like, and "--" ends
    # the options before the path: a pattern such as "--pre=script" is only a pattern.
    return [*argv, "-e", pattern, "--", where.target]


def _grep_failed(out: _GrepOutput, result: RunResult | None) -> bool:
    """Whether ripgrep failed (an exit code other than 0, found, and 1, nothing found),
    once its output is parsed.

    Raises:
        ToolError: the sandbox could not start ripgrep, or it failed and found nothing.
    """
    not_started = sandbox_start_error(out.errors)
    if not_started is not None:
        raise ToolError(f"grep failed: the sandbox could not start ripgrep: {not_started}")
    failed = result is not None and result.exit_code not in (0, 1)
    if failed and not out.matches:
        msg = "; ".join(out.errors) or f"ripgrep exited with code {result and result.exit_code}"
        raise ToolError(f"grep failed: {msg}")
    return failed


def _grep_answer(out: _GrepOutput, limit: int, failed: bool, shown: str) -> ToolResult:
    """The answer: the kept lines and a note for each limit met (matches, bytes, line
    length), binary files and unreadable ones; ``details`` says the same for programs."""
    notes: list[str] = []
    details: dict[str, Any] = {"matches": out.matches}
    if out.binary:
        notes.append(
            "[Binary file matches, lines not shown: " + ", ".join(out.binary) + ". Use bash "
            "(e.g. strings, xxd) to look inside it.]"
        )
        details["binaryFiles"] = out.binary
    if not out.matches:
        body = "No matches found"
        if notes:
            body += "\n\n" + "\n".join(notes)
        details["path"] = shown
        return ToolResult(body, details=details)

    kept = out.kept
    body = "\n".join(kept)
    if out.limit_hit:
        notes.append(
            f"[{limit} matches limit reached. Use limit={limit * 2} for more, "
            "or refine the pattern.]"
        )
        details["matchLimitReached"] = limit
    if out.full:
        notes.append(
            f"[Output cut at {format_size(MAX_BYTES)}: showing {len(kept)} "
            f"of {out.total_lines} lines. Narrow the search with path or glob.]"
        )
        details["truncation"] = Truncation(
            True,
            "bytes",
            out.total_lines,
            out.total_bytes,
            len(kept),
            max(0, out.kept_bytes - 1),
            out.total_lines + 1,
            MAX_BYTES,
        ).to_json()
    if out.lines_cut:
        notes.append(
            f"[Some lines were cut to {GREP_MAX_LINE_CHARS} characters; read the file to "
            "see them whole.]"
        )
        details["linesTruncated"] = True
    if failed and out.errors:
        notes.append("[Some files could not be searched: " + "; ".join(out.errors[:5]) + "]")
    if notes:
        body += "\n\n" + "\n".join(notes)
    details["path"] = shown
    return ToolResult(body, details=details)

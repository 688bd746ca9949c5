"""The ``bash`` tool: run a shell command in the execution environment."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections import deque
from typing import Annotated, Any, TextIO

from ..context import ToolContext
from ..hints import Param
from ..results import ToolError, ToolResult
from ..runner import run_in_env
from ..truncate import MAX_BYTES, MAX_LINES, Truncation, format_size, truncate_tail
from ._common import builtin_tool

__all__ = ["OutputCollector", "bash", "find_shell"]

_ROLLING_CHARS = 2 * MAX_BYTES
"""Characters of recent output kept in memory (enough for a full tail at the byte limit)."""

MAX_SAVED_BYTES = 64 << 20
"""Most bytes of one command's output kept in its full-output file (64 MiB)."""

_PROGRESS_INTERVAL = 0.25
"""Seconds between two progress updates of a running command."""


def find_shell() -> str:
    """``/bin/bash``, else bash on PATH, else ``sh``."""
    if os.access("/bin/bash", os.X_OK):
        return "/bin/bash"
    return shutil.which("bash") or shutil.which("sh") or "/bin/sh"


class OutputCollector:
    """Counts a command's whole output and keeps its tail.

    Everything is kept in memory up to :data:`MAX_BYTES` bytes; past that the whole
    output so far goes to a temporary file (mode 0600) and only the last
    :data:`_ROLLING_CHARS` characters stay in memory. Line and byte totals always
    cover the whole output. The file stops growing at ``max_saved_bytes`` (default
    :data:`MAX_SAVED_BYTES`; the chunk crossing it is still written), so endless
    output cannot fill the host's disk; :attr:`saved_all` then turns False.
    """

    def __init__(self, max_saved_bytes: int | None = None) -> None:
        self.max_saved_bytes = MAX_SAVED_BYTES if max_saved_bytes is None else max_saved_bytes
        self.saved_bytes = 0
        self.saved_all = True
        self.total_bytes = 0
        self.newlines = 0
        self.last_char = ""
        self.chunks: deque[str] = deque()
        self.chars = 0
        self.file_path: str | None = None
        self._file: TextIO | None = None
        self.last_line = ""

    def add(self, text: str) -> None:
        """Append one decoded chunk."""
        if not text:
            return
        size = len(text.encode("utf-8", "surrogatepass"))
        self.total_bytes += size
        self.newlines += text.count("\n")
        self.last_char = text[-1]
        self._remember_last_line(text)
        if self._file is not None:
            self._save(text, size)
        elif self.total_bytes > MAX_BYTES:
            self._spill()
            self._save(text, size)
        self.chunks.append(text)
        self.chars += len(text)
        if self._file is not None:
            while len(self.chunks) > 1 and self.chars - len(self.chunks[0]) >= _ROLLING_CHARS:
                self.chars -= len(self.chunks.popleft())

    def _remember_last_line(self, text: str) -> None:
        stripped = text.rstrip("\n")
        if not stripped:
            return
        tail = stripped.rsplit("\n", 1)[-1]
        if "\n" in stripped:
            self.last_line = tail
        else:
            self.last_line = (self.last_line + tail)[-200:]
        self.last_line = self.last_line[-200:]

    def _save(self, text: str, size: int) -> None:
        if self._file is None:
            return
        if self.saved_bytes >= self.max_saved_bytes:
            self.saved_all = False
            return
        self._file.write(text)
        self.saved_bytes += size

    def _spill(self) -> TextIO:
        fd, path = tempfile.mkstemp(prefix="toolwire-bash-", suffix=".log")
        f = open(fd, "w", encoding="utf-8", errors="surrogatepass")  # noqa: SIM115
        self._file = f
        self.file_path = path
        for c in self.chunks:
            f.write(c)
            self.saved_bytes += len(c.encode("utf-8", "surrogatepass"))
        return f

    @property
    def total_lines(self) -> int:
        """Lines in the whole output (a final newline ends a line, it does not start one)."""
        if self.total_bytes == 0:
            return 0
        return self.newlines + (0 if self.last_char == "\n" else 1)

    def finish(self) -> tuple[str, Truncation]:
        """Close the file; return the tail to show and its truncation record.

        When the tail had to be cut and the output was never spilled, it is written
        to a temporary file now, so a truncated answer always names the full output.
        """
        text = "".join(self.chunks)
        cut = truncate_tail(text, MAX_LINES, MAX_BYTES)
        rec = cut.truncation
        truncated = rec.truncated
        record = Truncation(
            truncated=truncated,
            truncated_by=rec.truncated_by,
            total_lines=self.total_lines,
            total_bytes=self.total_bytes,
            output_lines=rec.output_lines,
            output_bytes=rec.output_bytes,
            last_line_partial=rec.last_line_partial,
        )
        if truncated and self._file is None:
            self._spill()
        if self._file is not None:
            self._file.close()
            self._file = None
        return cut.content, record


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


@builtin_tool(
    annotations={"destructiveHint": True, "openWorldHint": True},
)
async def bash(
    command: Annotated[str, Param(description="The command line, run by bash -c.")],
    ctx: ToolContext,
    timeout: Annotated[
        float | None,
        Param(
            default=None,
            gt=0,
            description="Seconds before the command is killed (default: no limit).",
        ),
    ] = None,
) -> ToolResult:
    """Run a shell command with bash in the working directory and return its output.

    stdout and stderr are merged; stdin is empty. The answer shows the last 2000 lines
    or 50KB of output, whichever is less; a longer output is saved whole to a file
    whose path the answer gives. A non-zero exit code makes the call fail. Processes
    the command leaves running in the background are ended when it exits.
    """
    cwd = ctx.env.cwd
    if not cwd.is_dir():
        raise ToolError(f"Working directory does not exist: {cwd}")
    limit = timeout if timeout is not None else ctx.env.default_timeout
    out = OutputCollector()
    last_report = 0.0
    reported = 0

    async def on_output(text: str) -> None:
        nonlocal last_report, reported
        out.add(text)
        now = time.monotonic()
        if now - last_report >= _PROGRESS_INTERVAL and out.total_bytes > reported:
            last_report = now
            reported = out.total_bytes
            await ctx.report_progress(out.total_bytes, message=out.last_line or None)

    shell = find_shell()
    try:
        result = await run_in_env(
            ctx.env, [shell, "-c", command], cwd=cwd, timeout=limit, on_output=on_output
        )
    except FileNotFoundError as exc:
        raise ToolError(f"Cannot start the shell {shell}: {exc.strerror or exc}") from None
    shown, record = out.finish()

    parts: list[str] = []
    body = shown if shown else ("(no output)" if out.total_bytes == 0 else "")
    parts.append(body.rstrip("\n") if body else "")
    if record.truncated:
        end = record.total_lines
        start = max(1, end - record.output_lines + 1)
        if record.last_line_partial:
            what = f"Showing the last {format_size(record.output_bytes)} of line {end}"
        else:
            what = f"Showing lines {start}-{end} of {end}"
        if out.saved_all:
            saved = f"Full output: {out.file_path}"
        else:
            saved = f"The first {format_size(out.saved_bytes)} of it are in {out.file_path}"
        parts.append(f"[{what} ({format_size(record.total_bytes)} in all). {saved}]")
    details: dict[str, Any] = {
        "exitCode": result.exit_code,
        "signal": result.signal,
        "timedOut": result.timed_out,
        "durationSeconds": round(result.duration, 3),
    }
    if record.truncated:
        details["truncation"] = record.to_json()
        details["fullOutputPath"] = out.file_path
        if not out.saved_all:
            details["fullOutputSavedBytes"] = out.saved_bytes
    is_error = False
    if result.timed_out:
        parts.append(
            f"[Command timed out after {limit:g} seconds; it and everything it started were killed]"
        )
        is_error = True
    elif result.signal is not None:
        parts.append(f"[Command was killed by {_signal_name(result.signal)}]")
        is_error = True
    elif result.exit_code not in (0, None):
        code = result.exit_code
        hint = ""
        if 128 < code <= 128 + 64 and _signal_name(code - 128)[0:3] == "SIG":
            # The shell's (and bubblewrap's) way of reporting a death by signal.
            hint = f" (128+{code - 128}: a process killed by {_signal_name(code - 128)})"
        parts.append(f"[Command failed with exit code {code}{hint}]")
        is_error = True
    text = "\n\n".join(p for p in parts if p) or "(no output)"
    return ToolResult(text, details=details, is_error=is_error)

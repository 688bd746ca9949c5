"""The ``bash`` tool: run a shell command in the execution environment."""

from __future__ import annotations

import codecs
import functools
import logging
import os
import re
import signal
import time
from collections import deque
from typing import Annotated, Any

import anyio
import anyio.to_thread

from ..sandbox import outputs
from ..sandbox.bubblewrap import memory_exceeded_message
from ..sandbox.commands import run_in_env
from ..sandbox.egress.scope import EgressScope, egress_scope, loop_reporter
from ..sandbox.outputs import OutputStore
from ..sandbox.programs import find_system_program
from ..schema.hints import Param
from ..tools.context import ToolContext
from ..tools.results import ToolError, ToolResult
from ._common import builtin_tool
from .termtext import TerminalText
from .truncate import MAX_BYTES, MAX_LINES, Truncation, format_size, truncate_tail

__all__ = ["TERMINAL_HINT", "OutputCollector", "bash", "find_shell"]

_ROLLING_CHARS = 2 * MAX_BYTES
"""Characters of recent output kept in memory (enough for a full tail at the byte limit)."""

MAX_SAVED_BYTES = 64 << 20
"""Most bytes of one command's output kept in its full-output file (64 MiB)."""

_PROGRESS_INTERVAL = 0.25
"""Seconds between two progress updates of a running command."""

_MESSAGE_CHARS = 200
"""Most characters of a progress message (the end of the line is kept)."""

log = logging.getLogger("toolwire.bash")

_WANTS_TERMINAL = re.compile(
    r"toolwire: no terminal|input is not from a terminal|output is not to a terminal"
    r"|problem with the editor|terminal prompts disabled|not a tty|not a terminal"
    r"|error opening terminal|terminal is not fully functional|/dev/tty"
    r"|inappropriate ioctl for device",
    re.IGNORECASE,
)
"""What programs say when they want a terminal the command does not have: vim, git (its
editor, its credential prompt), ncurses programs, less, docker, sudo and others."""

TERMINAL_HINT = (
    "[The command wanted a terminal (an editor, pager or prompt), which bash does not "
    "have: stdin is empty and nothing can be typed. Run it non-interactively: give the "
    "input in the command (git commit -m MESSAGE, --yes, a pipe or a here-document), "
    "use --no-pager, and edit files with the read, edit and write tools.]"
)
"""Added to a command's answer when its output says it wanted a terminal."""


@functools.cache
def find_shell() -> str:
    """The shell that runs bash's commands, resolved once per process: ``bash`` in the
    system's own directories (:data:`~toolwire.host.sandbox.TRUSTED_BIN_DIRS`, owned by
    root and not writable by others), else ``sh`` there, else ``/bin/sh``. ``PATH`` is
    never searched: an entry of it may lie inside the root, where the model can plant a
    program of its own (SECURITY.md, "Helper programs")."""
    return find_system_program("bash") or find_system_program("sh") or "/bin/sh"


class OutputCollector:
    """Keeps a command's whole output (raw) and the tail of its cleaned text.

    Raw bytes are decoded incrementally as UTF-8 (a character split across chunks is
    kept whole; invalid bytes become U+FFFD) and cleaned as a terminal would show them
    (:class:`~toolwire.host.builtins.termtext.TerminalText`: escape sequences removed, ``\\r``
    redraws reduced to the last state, other control characters replaced). The text's
    line and byte totals always cover the whole output; the last
    :data:`_ROLLING_CHARS` characters of it are kept for the answer.

    The raw bytes are kept in memory up to :data:`MAX_BYTES`; past that they go to a
    full-output file (:mod:`toolwire.host.sandbox.outputs`: mode 0600, in the host's private
    directory, removed when the host exits). The file stops growing at
    ``max_saved_bytes`` (default :data:`MAX_SAVED_BYTES`) or when the host's files
    together reach their cap; :attr:`saved_all` then turns False. A file whose output
    did not need cutting is removed again at :meth:`finish`.
    """

    def __init__(
        self, max_saved_bytes: int | None = None, store: OutputStore | None = None
    ) -> None:
        self.max_saved_bytes = MAX_SAVED_BYTES if max_saved_bytes is None else max_saved_bytes
        self.store = outputs.store if store is None else store
        self.saved_bytes = 0
        self.saved_all = True
        self.raw_bytes = 0
        self.total_bytes = 0
        self.newlines = 0
        self.last_char = ""
        self.chunks: deque[str] = deque()
        self.chars = 0
        self.file_path: str | None = None
        self._fd: int | None = None
        self._raw: list[bytes] | None = []
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._term = TerminalText()
        self.last_line = ""
        self._carry = ""  # cleaned text passed on since the last newline (its tail)

    def add(self, text: str) -> None:
        """Append one chunk of text (as its UTF-8 bytes; see :meth:`add_bytes`)."""
        self.add_bytes(text.encode("utf-8", "surrogatepass"))

    def add_bytes(self, data: bytes) -> None:
        """Append one chunk of raw output."""
        if not data:
            return
        self.raw_bytes += len(data)
        if self._raw is not None:
            self._raw.append(data)
            if self.raw_bytes > MAX_BYTES:
                self._spill()
        else:
            self._save(data)
        self._add_text(self._term.feed(self._decoder.decode(data)))

    def _add_text(self, text: str) -> None:
        if not text:
            return
        self.total_bytes += len(text.encode("utf-8", "surrogatepass"))
        self.newlines += text.count("\n")
        self.last_char = text[-1]
        self._track_lines(text)
        self.chunks.append(text)
        self.chars += len(text)
        while len(self.chunks) > 1 and self.chars - len(self.chunks[0]) >= _ROLLING_CHARS:
            self.chars -= len(self.chunks.popleft())

    def _track_lines(self, text: str) -> None:
        nl = text.rfind("\n")
        if nl < 0:
            self._carry = (self._carry + text)[-_MESSAGE_CHARS:]
            return
        prev = text.rfind("\n", 0, nl)
        line = self._carry + text[:nl] if prev < 0 else text[prev + 1 : nl]
        self.last_line = line[-_MESSAGE_CHARS:]
        self._carry = text[nl + 1 :][-_MESSAGE_CHARS:]

    @property
    def current_line(self) -> str:
        """What a progress message shows: the line being written, as a terminal shows it
        now, when it has any text; else the last complete line (at most 200 characters)."""
        drawing = (self._carry + self._term.line)[-_MESSAGE_CHARS:]
        return drawing if drawing.strip() else self.last_line

    def _save(self, data: bytes) -> None:
        if self._fd is None or self.file_path is None or not self.saved_all:
            return
        if self.saved_bytes + len(data) > self.max_saved_bytes:
            data = data[: max(0, self.max_saved_bytes - self.saved_bytes)]
            self.saved_all = False
        if data and self.store.reserve(self.file_path, len(data)):
            _write_all(self._fd, data)
            self.saved_bytes += len(data)
        elif data:
            self.saved_all = False

    def _spill(self) -> None:
        raw = self._raw or []
        self._raw = None
        try:
            self._fd, self.file_path = self.store.create()
        except OSError as exc:
            log.warning("cannot create a full-output file: %s", exc)
            self.saved_all = False
            return
        for chunk in raw:
            self._save(chunk)

    @property
    def total_lines(self) -> int:
        """Lines in the whole text (a final newline ends a line, it does not start one)."""
        if self.total_bytes == 0:
            return 0
        return self.newlines + (0 if self.last_char == "\n" else 1)

    def finish(self) -> tuple[str, Truncation]:
        """Close the file; return the tail to show and its truncation record.

        When the tail had to be cut and the output was never spilled, it is written
        to a file now, so a truncated answer always names the full output; when
        nothing was cut, a file written meanwhile is removed.
        """
        self._add_text(self._term.feed(self._decoder.decode(b"", final=True)))
        self._add_text(self._term.finish())
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
        if truncated and self._raw is not None:
            self._spill()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            assert self.file_path is not None
            self.store.close(self.file_path)
            if not truncated:
                self.store.discard(self.file_path)
                self.file_path = None
        return cut.content, record


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


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

    stdout and stderr are merged; stdin is empty and there is no terminal (editors
    fail with a message, pagers are cat, git never prompts). The answer shows the output as a
    terminal would (colour and cursor codes removed, a line redrawn with \\r shown in its
    last state, other control characters as U+FFFD): the last 2000 lines or 50KB,
    whichever is less; a longer output is saved whole (raw) to a file whose path the
    answer gives, readable with read, grep and bash until the host exits. A non-zero exit code makes the call fail. Processes
    the command leaves running in the background are ended when it exits.
    """
    cwd = ctx.env.cwd
    if not cwd.is_dir():
        raise ToolError(f"Working directory does not exist: {cwd}")
    limit = timeout if timeout is not None else ctx.env.default_timeout
    out = OutputCollector()
    last_report = 0.0
    reported = 0
    # This call's own thread token: its output never waits behind the threads other
    # tools hold (the shared default pool, which ``read`` and the rest use).
    own_thread = anyio.CapacityLimiter(1)

    async def on_raw(data: bytes) -> None:
        nonlocal last_report, reported
        # Cleaning a chunk is pure Python; in a worker thread the event loop keeps
        # answering (pings, other calls) while a command floods escape sequences.
        await anyio.to_thread.run_sync(out.add_bytes, data, limiter=own_thread)
        now = time.monotonic()
        if now - last_report >= _PROGRESS_INTERVAL and out.raw_bytes > reported:
            last_report = now
            reported = out.raw_bytes
            # progress: bytes of output so far (no total); message: the current line.
            await ctx.report_progress(out.raw_bytes, message=out.current_line or None)

    shell = find_shell()
    # A connection the egress proxy refuses is logged to the client (protocol.md §7).
    refused = loop_reporter(lambda message: ctx.channel.log("warning", message, "egress"))
    try:
        with egress_scope(EgressScope(tool=ctx.tool_name, on_refused=refused)):
            result = await run_in_env(
                ctx.env, [shell, "-c", command], cwd=cwd, timeout=limit, on_raw=on_raw
            )
    except FileNotFoundError as exc:
        raise ToolError(f"Cannot start the shell {shell}: {exc.strerror or exc}") from None
    shown, record = out.finish()

    parts: list[str] = []
    complete = result.output_complete
    body = shown if shown else ("(no output)" if out.total_bytes == 0 and complete else "")
    parts.append(body.rstrip("\n") if body else "")
    if record.truncated:
        end = record.total_lines
        start = max(1, end - record.output_lines + 1)
        if record.last_line_partial:
            what = f"Showing the last {format_size(record.output_bytes)} of line {end}"
        else:
            what = f"Showing lines {start}-{end} of {end}"
        if out.file_path is None:
            saved = "The full output could not be saved"
        elif out.saved_all:
            saved = f"Full output: {out.file_path}"
        else:
            saved = f"The first {format_size(out.saved_bytes)} of it are in {out.file_path}"
        parts.append(f"[{what} ({format_size(record.total_bytes)} in all). {saved}]")
    if not complete:
        parts.append(
            f"[The output may be incomplete: a process the command started kept its output "
            f"open after the command ended; {format_size(out.raw_bytes)} of output were read]"
        )
    details: dict[str, Any] = {
        "exitCode": result.exit_code,
        "signal": result.signal,
        "timedOut": result.timed_out,
        "durationSeconds": round(result.duration, 3),
    }
    if not complete:
        details["outputIncomplete"] = True
    if record.truncated:
        details["truncation"] = record.to_json()
        details["fullOutputPath"] = out.file_path
        if not out.saved_all:
            details["fullOutputSavedBytes"] = out.saved_bytes
    is_error = False
    if result.memory_exceeded is not None:
        details["memoryLimitExceeded"] = result.memory_exceeded
        parts.append(f"[Command was killed: {memory_exceeded_message(result.memory_exceeded)}]")
        is_error = True
    elif result.timed_out:
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
    if is_error and _WANTS_TERMINAL.search(shown):
        # Only a command that failed or hung can have been stopped by a missing terminal;
        # a successful one that merely prints such words (`env`, a grep of sources) is not.
        details["wantedTerminal"] = True
        parts.append(TERMINAL_HINT)
    text = "\n\n".join(p for p in parts if p) or "(no output)"
    return ToolResult(text, details=details, is_error=is_error)

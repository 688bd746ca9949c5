"""Terminal rendering shared by the CLI and the demo (rich).

Everything here is presentation: it never changes what a call does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from toolwire.models import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolDefinition,
)
from toolwire.showntext import escape_hidden, escape_hidden_json

from .approval import ApprovalDecision, ApprovalRequest
from .client import LogMessage, Progress, ToolReply

__all__ = [
    "APPROVAL_SHOWN_MAX",
    "ProgressPrinter",
    "TerminalApprover",
    "clip",
    "content_text",
    "json_text",
    "log_line",
    "parameters_summary",
    "result_panel",
    "summarize",
    "tools_table",
    "visible",
]


def visible(text: str) -> str:
    """``text`` safe to print on a terminal: every control character but newline and tab,
    and every invisible Unicode format character, shows as an escape (``ESC`` as
    ``\\x1b``, the C1 CSI as ``\\x9b``, a bidi override as ``\\u202e``, a zero-width space
    as ``\\u200b``: :func:`toolwire.showntext.escape_hidden`), so tool output or model
    text cannot set the window title, write the clipboard (OSC 52), clear the screen, hide
    text or reorder what is shown. ``\\r\\n`` becomes a newline first. Rich markup is not
    touched: print the result with ``markup=False`` or as :class:`rich.text.Text`.
    """
    return escape_hidden(text.replace("\r\n", "\n"))


def json_text(value: Any, *, indent: int | None = 2) -> str:
    """``value`` as JSON (non-ASCII kept readable) with every terminal control character
    escaped: the same JSON value as ``json.dumps``, safe to print on a terminal."""
    return escape_hidden_json(json.dumps(value, indent=indent, ensure_ascii=False))


def log_line(item: LogMessage) -> str:
    """One log record from the host (``notifications/message``) as text safe to print
    on a terminal: ``log <level> <logger>: <data>``, the data as it is when a string,
    else as compact JSON; control characters escaped as by :func:`visible`."""
    data = item.data if isinstance(item.data, str) else json_text(item.data, indent=None)
    where = f" {item.logger}" if item.logger else ""
    return visible(f"log {item.level}{where}: {data}")


def clip(text: str, *, head: int = 15, tail: int = 25, max_line: int = 200) -> str:
    """Shorten ``text`` for display: the first ``head`` and last ``tail`` lines, long
    lines cut at ``max_line`` characters, with a marker saying how much was left out."""
    lines = text.splitlines()
    lines = [
        ln if len(ln) <= max_line else ln[:max_line] + f"… (+{len(ln) - max_line} chars)"
        for ln in lines
    ]
    if len(lines) > head + tail + 1:
        skipped = len(lines) - head - tail
        lines = [*lines[:head], f"… {skipped} lines not shown …", *lines[-tail:]]
    return "\n".join(lines)


def summarize(value: Any, limit: int = 160) -> str:
    """A one-line summary of a JSON value: ``k=v, ...`` for an object, else compact JSON,
    cut at ``limit`` characters."""
    if isinstance(value, dict):
        parts = []
        for k, v in value.items():
            s = v if isinstance(v, str) and "\n" not in v else json.dumps(v, ensure_ascii=False)
            if len(s) > 40:
                s = s[:37] + "…"
            parts.append(f"{k}={s}")
        text = ", ".join(parts)
    else:
        try:
            text = json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def content_text(res: ToolReply) -> str:
    """The result as text: text blocks as they are, other blocks as a one-line marker;
    ``structuredContent`` as JSON when there is no text at all."""
    out: list[str] = []
    for block in res.content:
        if isinstance(block, TextContent):
            out.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            size = len(block.data) * 3 // 4
            out.append(f"[{block.type} {block.mime_type}, about {size} bytes]")
        elif isinstance(block, ResourceLink):
            out.append(f"[resource link {block.uri}]")
        elif isinstance(block, EmbeddedResource):
            text = getattr(block.resource, "text", None)
            out.append(text if isinstance(text, str) else f"[resource {block.resource.uri}]")
    if not out and res.structured_content is not None:
        out.append(json.dumps(res.structured_content, indent=2, ensure_ascii=False))
    return "\n".join(out)


def parameters_summary(tool: ToolDefinition) -> str:
    """``name*, other`` from a tool's input schema (``*`` marks required parameters)."""
    props = tool.input_schema.get("properties")
    if not isinstance(props, dict):
        return ""
    required = tool.input_schema.get("required")
    req = set(required) if isinstance(required, list) else set()
    return ", ".join(f"{p}*" if p in req else str(p) for p in props)


def first_sentence(text: str) -> str:
    """The first sentence (or line) of a description."""
    line = " ".join(text.strip().split("\n\n", 1)[0].split())
    end = line.find(". ")
    return line[: end + 1] if end >= 0 else line


def tools_table(tools: list[ToolDefinition]) -> Table:
    """A table of tool definitions: name, parameters, first line of the description."""
    table = Table(show_header=True, header_style="bold", expand=False)
    table.add_column("tool", style="cyan", no_wrap=True)
    table.add_column("parameters (* required)")
    table.add_column("description")
    for t in tools:
        table.add_row(
            Text(visible(t.name)),
            Text(visible(parameters_summary(t))),
            Text(visible(first_sentence(t.description or ""))),
        )
    return table


def result_panel(res: ToolReply, *, title: str | None = None) -> Panel:
    """A panel with a call's (clipped) text and a line summarising ``details``; a
    ``details.diff`` string (as the edit tool gives) is shown as a coloured diff."""
    parts: list[Any] = [Text(visible(clip(content_text(res))) or "(no content)")]
    details = res.details
    if isinstance(details, dict) and isinstance(details.get("diff"), str):
        from rich.syntax import Syntax

        diff = visible(clip(details["diff"].rstrip("\n")))
        parts.append(Syntax(diff, "diff", theme="ansi_dark"))
        details = {k: v for k, v in details.items() if k != "diff"}
    if details is not None and details != {}:
        parts.append(Text(f"details: {visible(summarize(details))}", style="dim"))
    body = Group(*parts)
    status = "[red]error[/red]" if res.is_error else "[green]ok[/green]"
    return Panel(
        body,
        title=title or f"result of {escape(visible(res.name))} (call {escape(str(res.call_id))})",
        subtitle=status,
        border_style="red" if res.is_error else "green",
        title_align="left",
        subtitle_align="right",
    )


class ProgressPrinter:
    """Shows a call's progress: a live bar on a terminal, otherwise one line per update
    (at most ``max_lines`` lines, then a count of the rest).

    Use :meth:`showing` around the call and pass :meth:`__call__` as ``on_progress``.
    """

    def __init__(self, console: Console, label: str, *, max_lines: int = 8) -> None:
        self.console = console
        self.label = label
        self.max_lines = max_lines
        self.count = 0
        self.last: Progress | None = None
        self._bar: Any = None
        self._task: Any = None

    @contextmanager
    def showing(self) -> Iterator[ProgressPrinter]:
        """Display progress for the duration of the block (a transient bar on a terminal)."""
        if not self.console.is_terminal:
            try:
                yield self
            finally:
                if self.count > self.max_lines:
                    self.console.print(
                        f"  [dim]… {self.count - self.max_lines} more progress updates[/dim]"
                    )
            return
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn

        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[status]}"),
            console=self.console,
            transient=True,
        ) as bar:
            self._bar = bar
            self._task = bar.add_task(self.label, total=None, status="")
            try:
                yield self
            finally:
                self._bar = None
        if self.count:
            last = self.last
            status = _progress_status(last) if last is not None else ""
            self.console.print(
                f"  [dim]progress: {self.count} updates, last {escape(visible(status))}[/dim]"
            )

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Hide the live bar for the duration of the block (e.g. while asking a question)."""
        bar = self._bar
        if bar is None:
            yield
            return
        bar.stop()
        try:
            yield
        finally:
            bar.start()

    def __call__(self, p: Progress) -> None:
        self.count += 1
        self.last = p
        if self._bar is not None:
            self._bar.update(
                self._task,
                completed=p.progress,
                total=p.total,
                status=escape(visible(_progress_status(p))),
            )
        elif self.count <= self.max_lines:
            self.console.print(
                f"  [dim]progress {escape(visible(_progress_status(p)))}[/dim]",
                no_wrap=True,
                overflow="ellipsis",
            )


def _progress_status(p: Progress) -> str:
    # Without a total, progress is only an increasing counter (for bash: bytes of
    # output): show it when there is nothing else to show.
    if p.total is not None:
        amount = f"{p.progress:g}/{p.total:g}"
    else:
        amount = "" if p.message else f"{p.progress:g}"
    msg = p.message or ""
    if len(msg) > 70:
        msg = msg[:69] + "…"
    return f"{amount} {msg}".strip()


APPROVAL_SHOWN_MAX = 32_768
"""Longest arguments (characters of their JSON, as shown) :class:`TerminalApprover` asks
about; a longer call is denied, never shown in part."""


class TerminalApprover:
    """An approval callback that asks on the terminal (y/N) for each call the host marks.

    Shows the call id (as JSON, so ``"1"`` and ``1`` differ), the tool, whether it
    declares itself read-only, and its whole arguments (every control and invisible
    character escaped; a call longer than :data:`APPROVAL_SHOWN_MAX` characters is
    denied without asking, never shown in part), then reads
    one line from stdin in a worker thread (one question at a time, so parallel calls
    do not interleave their prompts). "y" or "yes" allows; anything else, or end of
    input (stdin closed or not a terminal), denies with a reason the model sees.

    Args:
        console: where the question is printed (the CLI uses stderr).
        assume_yes: allow everything without asking (``--yes``).
        pause: a context manager factory that hides a live display while asking.
    """

    def __init__(
        self,
        console: Console,
        *,
        assume_yes: bool = False,
        pause: Any = None,
    ) -> None:
        self.console = console
        self.assume_yes = assume_yes
        self.pause = pause
        self.asked = 0
        self._lock: Any = None

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        import anyio

        if self.assume_yes:
            return ApprovalDecision.allow(reason="--yes")
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            self.asked += 1
            decision: ApprovalDecision = await anyio.to_thread.run_sync(self._ask, request)
            return decision

    def _ask(self, request: ApprovalRequest) -> ApprovalDecision:
        from contextlib import nullcontext

        hint = "read-only" if request.read_only else "may change things"
        args = json_text(request.arguments)
        if len(args) > APPROVAL_SHOWN_MAX:
            # Never a part of the call: what is not shown could be what runs.
            return ApprovalDecision.deny(
                f"the call's arguments take {len(args)} characters as shown, more than the "
                f"{APPROVAL_SHOWN_MAX} the terminal approval shows whole, so the user could not "
                "review it; the call was not shown"
            )
        call_id = json_text(request.call_id)  # "1" and 1 are different calls
        with self.pause() if self.pause is not None else nullcontext():
            self.console.print(
                Panel(
                    Text(args),
                    title=f"approve call {escape(call_id)}: "
                    f"[cyan]{escape(visible(request.name))}[/cyan] ({hint})",
                    title_align="left",
                    border_style="yellow",
                )
            )
            try:
                answer = self.console.input("Allow this call? \\[y/N] ")
            except EOFError:
                self.console.print()
                return ApprovalDecision.deny("no answer on the terminal (its input is closed)")
        if answer.strip().lower() in ("y", "yes"):
            return ApprovalDecision.allow()
        return ApprovalDecision.deny("the user refused the call on the terminal")

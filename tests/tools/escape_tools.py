"""A tool whose output, details and progress hold terminal escape sequences and rich
markup (tests/client/test_cli_terminal_escapes.py)."""

from __future__ import annotations

from toolwire.host import ToolContext, ToolResult, tool

NASTY = (
    "start "
    "\x1b]0;pwned title\x07"  # OSC 0: window title
    "\x1b]2;pwned title 2\x1b\\"  # OSC 2, ST-terminated
    "\x1b]52;c;cHduZWQ=\x07"  # OSC 52: write the clipboard
    "\x1b[2J\x1b[H"  # CSI: clear the screen, cursor home
    "\x9b31m"  # C1 CSI
    "\x9d0;c1 title\x9c"  # C1 OSC ... ST
    "\x07\x08\x00"  # BEL, BS, NUL
    "back\roverwrite "
    "\u202eevil\u202c "  # bidi override
    "[bold red]markup[/bold red] [link=http://x]link[/link]"
    " end"
)
"""Every kind of sequence a terminal acts on, plus rich markup that must stay literal."""


@tool
async def noisy(ctx: ToolContext) -> ToolResult:
    """Return text with [bold]markup[/bold] and \x1b]0;desc title\x07 terminal escapes."""
    await ctx.report_progress(1, total=2, message="progress " + NASTY)
    return ToolResult(NASTY, details={"note": NASTY})

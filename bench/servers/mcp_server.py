"""The benchmark's tools (toolwire_tools.py, all but stuck: MCPServer has no per-tool
timeout) served by the official MCP Python SDK's MCPServer, over stdio."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench", log_level="WARNING")


@server.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def echo_sync(text: str) -> str:
    """Return the text unchanged (a synchronous handler)."""
    return text


@server.tool()
async def sleep(ms: int) -> str:
    """Sleep asynchronously for ms milliseconds."""
    await anyio.sleep(ms / 1000)
    return "slept"


@server.tool()
def block(ms: int, marker: str = "") -> str:
    """Block a worker thread for ms milliseconds (a synchronous tool); a non-empty
    marker names a file written when the call starts."""
    if marker:
        Path(marker).write_text("started")
    time.sleep(ms / 1000)
    return "blocked"


@server.tool()
async def hog(ms: int, marker: str) -> str:
    """Hold the event loop for ms milliseconds without ever awaiting (a badly written
    async tool); the marker file is written when the call starts."""
    Path(marker).write_text("started")
    end = time.monotonic() + ms / 1000
    while time.monotonic() < end:
        pass
    return "done"


if __name__ == "__main__":
    server.run("stdio")

"""The same three tools served by the official MCP Python SDK's MCPServer, over stdio."""

from __future__ import annotations

import time

import anyio
from mcp.server.mcpserver import MCPServer

server = MCPServer("bench", log_level="WARNING")


@server.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
async def sleep(ms: int) -> str:
    """Sleep asynchronously for ms milliseconds."""
    await anyio.sleep(ms / 1000)
    return "slept"


@server.tool()
def block(ms: int) -> str:
    """Block a worker thread for ms milliseconds (a synchronous tool)."""
    time.sleep(ms / 1000)
    return "blocked"


if __name__ == "__main__":
    server.run("stdio")

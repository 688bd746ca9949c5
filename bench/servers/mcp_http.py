"""The MCP SDK peer for bench/http_load.py: MCPServer's echo tool behind its default
``streamable_http_app()`` (stateful sessions, SSE responses), on uvicorn."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from uvicorn_common import serve

server = MCPServer("bench", log_level="WARNING")


@server.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    serve(server.streamable_http_app())

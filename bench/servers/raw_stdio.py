"""The limit for the stdio bench (bench/run.py, column "raw asyncio/orjson"): a plain
asyncio server on stdin/stdout, newline-delimited JSON (the framing the toolwire columns
use), orjson both ways, and no MCP rules beyond what the bench's client sends.

It answers ``initialize``, ``ping`` and ``tools/list`` (the echo tools), and a
``tools/call`` of ``echo`` or ``echo_sync`` with its text as an MCP tool result; every
other method gets -32601. Each chunk read is split into its lines, every line is answered
in that same callback, and the answers of one chunk leave in one write: the least a
Python server on asyncio can do per call. Standard library and orjson only.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import orjson

ECHO_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}
TOOLS = [
    {"name": name, "description": "Return the text unchanged.", "inputSchema": ECHO_SCHEMA}
    for name in ("echo", "echo_sync")
]


def answer(msg: Any) -> bytes | None:
    """The encoded response to one decoded message (None for a notification)."""
    if type(msg) is not dict or "id" not in msg:
        return None
    method = msg.get("method")
    result: Any
    if method == "tools/call":
        params = msg["params"]
        if params.get("name") not in ("echo", "echo_sync"):
            return orjson.dumps(
                {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32602, "message": "no tool"}}
            )
        text = params["arguments"]["text"]
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "initialize":
        result = {
            "protocolVersion": msg["params"].get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "ping":
        result = {}
    else:
        return orjson.dumps(
            {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no method"}}
        )
    return orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result})


class Reader(asyncio.Protocol):
    """stdin: split what arrives into lines, answer each, one write per chunk read."""

    def __init__(self, out: asyncio.WriteTransport, done: asyncio.Future[None]) -> None:
        self.out = out
        self.done = done
        self.rest = b""

    def data_received(self, data: bytes) -> None:
        if self.rest:
            data = self.rest + data
        lines = data.split(b"\n")
        self.rest = lines.pop()
        replies = []
        for line in lines:
            if line:
                reply = answer(orjson.loads(line))
                if reply is not None:
                    replies.append(reply)
        if replies:
            replies.append(b"")
            self.out.write(b"\n".join(replies))

    def eof_received(self) -> bool:
        if not self.done.done():
            self.done.set_result(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def main() -> None:
    loop = asyncio.get_running_loop()
    out, _ = await loop.connect_write_pipe(
        asyncio.Protocol, os.fdopen(sys.stdout.fileno(), "wb", 0, closefd=False)
    )
    done: asyncio.Future[None] = loop.create_future()
    await loop.connect_read_pipe(
        lambda: Reader(out, done),  # type: ignore[arg-type]
        os.fdopen(sys.stdin.fileno(), "rb", 0, closefd=False),
    )
    await done


if __name__ == "__main__":
    asyncio.run(main())

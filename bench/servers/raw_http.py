"""The limit for bench/http_load.py: a raw ASGI app that answers any POSTed JSON-RPC
``tools/call`` of echo with its text (orjson both ways, no MCP rules), on uvicorn."""

from __future__ import annotations

from typing import Any

import orjson
from uvicorn_common import serve

HEADERS = [(b"content-type", b"application/json")]


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Echo ``params.arguments.text`` back as an MCP tool result."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    req = orjson.loads(body)
    text = req["params"]["arguments"]["text"]
    out = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": req["id"],
            "result": {"content": [{"type": "text", "text": text}], "isError": False},
        }
    )
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": out})


if __name__ == "__main__":
    serve(app)

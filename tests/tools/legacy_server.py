"""A minimal MCP 2025-11-25-only server on stdio (no server/discover), for client fallback tests.

It answers ``initialize``, ``tools/list`` (one tool, ``hello``) and ``tools/call``; every
other request, ``server/discover`` included, gets -32601. Each received method is logged
to stderr as ``got METHOD``.
"""

from __future__ import annotations

import json
import sys

TOOL = {"name": "hello", "description": "Say hello.", "inputSchema": {"type": "object"}}

for line in sys.stdin:
    msg = json.loads(line)
    sys.stderr.write(f"got {msg.get('method')}\n")
    if "id" not in msg or "method" not in msg:
        continue
    method = msg["method"]
    reply: dict[str, object] = {"jsonrpc": "2.0", "id": msg["id"]}
    if method == "initialize":
        reply["result"] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "legacy", "version": "1"},
        }
    elif method == "tools/list":
        reply["result"] = {"tools": [TOOL]}
    elif method == "tools/call":
        reply["result"] = {"content": [{"type": "text", "text": "hello from 2025"}]}
    else:
        reply["error"] = {"code": -32601, "message": f"Method not found: {method}"}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()

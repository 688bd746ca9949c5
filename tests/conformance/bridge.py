"""A test-only bridge: MCP Streamable HTTP (stateless, 2026-07-28) in front of one stdio host.

The MCP conformance suite speaks only HTTP. This bridge lets it reach a stdio host: each
POSTed JSON-RPC request is written to the host's stdin, and what the host writes back for
it (progress and log notifications, then the response) is streamed to that POST as
server-sent events. Notifications are routed by ``progressToken`` or by the
``io.modelcontextprotocol/subscriptionId`` tag, else to the request posted last. A POSTed
notification is forwarded and answered 202. No sessions, no GET stream, no header checks:
the suite's HTTP-specific checks (status codes, ``Mcp-*`` headers, -32020) test this
bridge, not the host, and are left out of what the tests assert.

Usage: python -m tests.conformance.bridge PORT HOST-ARGV...  (PORT 0 picks a free port; the
first line on stdout is ``listening on PORT``).
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SUB_KEY = "io.modelcontextprotocol/subscriptionId"


class Bridge:
    """One host subprocess and the open POST streams waiting for its messages."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.lock = threading.Lock()
        self.by_id: dict[Any, queue.Queue[Any]] = {}
        self.by_token: dict[Any, queue.Queue[Any]] = {}
        self.last: queue.Queue[Any] | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            msg = json.loads(line)
            with self.lock:
                target = self._route(msg)
            if target is not None:
                target.put(msg)

    def _route(self, msg: dict[str, Any]) -> queue.Queue[Any] | None:
        if "method" not in msg:
            return self.by_id.get(msg.get("id"))
        params = msg.get("params") or {}
        sub = (params.get("_meta") or {}).get(SUB_KEY)
        if sub is not None:
            return self.by_id.get(sub)
        token = params.get("progressToken")
        if token is not None and token in self.by_token:
            return self.by_token[token]
        return self.last

    def send(self, msg: Any) -> queue.Queue[Any] | None:
        """Forward one message; for a request, the queue its messages arrive on."""
        q: queue.Queue[Any] | None = None
        if isinstance(msg, dict) and "id" in msg and "method" in msg:
            q = queue.Queue()
            with self.lock:
                self.by_id[msg["id"]] = q
                meta = (msg.get("params") or {}).get("_meta") or {}
                if "progressToken" in meta:
                    self.by_token[meta["progressToken"]] = q
                self.last = q
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        self.proc.stdin.flush()
        return q

    def done(self, msg: dict[str, Any]) -> None:
        with self.lock:
            q = self.by_id.pop(msg["id"], None)
            for token, other in list(self.by_token.items()):
                if other is q:
                    del self.by_token[token]
            if self.last is q:
                self.last = None


def make_handler(bridge: Bridge) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_DELETE = do_GET

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                msg = json.loads(body)
            except ValueError:
                self.send_response(400)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            q = bridge.send(msg)
            if q is None:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            try:
                while True:
                    out = q.get()
                    data = f"event: message\ndata: {json.dumps(out)}\n\n".encode()
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                    if "method" not in out:
                        bridge.done(out)
                        break
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                # The client went away (e.g. it closed a listen stream): cancel it.
                bridge.done({"id": msg["id"]})
                bridge.send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": msg["id"]},
                    }
                )

        def send_response(self, code: int, message: str | None = None) -> None:
            super().send_response(code, message)
            if code == 200:
                self.send_header("Transfer-Encoding", "chunked")

    return Handler


def main() -> None:
    port = int(sys.argv[1])
    bridge = Bridge(sys.argv[2:])
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(bridge))
    server.daemon_threads = True
    print(f"listening on {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    finally:
        bridge.proc.terminate()


if __name__ == "__main__":
    main()

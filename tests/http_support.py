"""The host served over Streamable HTTP for the tests: a real ``toolwire serve --http``
subprocess on an ephemeral loopback port (uvicorn), reached with httpx."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.hostproc import REPO, TOOLS_DIR

HTTP_TOOLS = str(TOOLS_DIR / "http_tools.py")
START_TIMEOUT = 90.0
"""Seconds to wait for the "listening on" line: a bound on a hang, not a speed."""

MODERN = "2026-07-28"


class HttpHost:
    """A running ``toolwire serve --http 127.0.0.1:0`` and its URL."""

    def __init__(self, proc: subprocess.Popen[str], url: str, lines: queue.Queue[str]) -> None:
        self.proc = proc
        self.url = url
        self.lines = lines
        self.base = url.rsplit("/", 1)[0]

    @property
    def hostport(self) -> str:
        return self.base.split("://", 1)[1]


@contextmanager
def http_host(
    root: Path,
    args: Sequence[str] = (),
    *,
    env: dict[str, str] | None = None,
    tools: Sequence[str] = (HTTP_TOOLS,),
    listen: str = "127.0.0.1:0",
) -> Iterator[HttpHost]:
    """Start the host over HTTP; yields once it prints its URL; ends it by its pid."""
    full_env = dict(os.environ, PYTHONSAFEPATH="1")
    full_env.update(env or {})
    argv = [
        sys.executable,
        "-P",
        "-m",
        "toolwire.host",
        "--http",
        listen,
        "--root",
        str(root),
        "--sandbox",
        "none",
        "--no-entry-points",
        "--log-level",
        "warning",
        *[a for t in tools for a in ("--tools", t)],
        *args,
    ]
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=full_env,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)
        lines.put("")

    threading.Thread(target=pump, daemon=True).start()
    url = None
    seen: list[str] = []
    try:
        while url is None:
            line = lines.get(timeout=START_TIMEOUT)
            seen.append(line)
            if line == "":
                raise AssertionError(f"host exited before listening: {''.join(seen)}")
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                url = m[1]
        yield HttpHost(proc, url, lines)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_host_expect_exit(root: Path, args: Sequence[str]) -> tuple[int, str]:
    """Start ``toolwire serve`` with ``args``; its exit code and stderr (it must exit)."""
    argv = [sys.executable, "-P", "-m", "toolwire.host", "--root", str(root), *args]
    done = subprocess.run(
        argv,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=dict(os.environ, PYTHONSAFEPATH="1"),
        timeout=90,
    )
    return done.returncode, done.stderr


def envelope(capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """The 2026-07-28 ``_meta`` envelope."""
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }


def modern_request(
    id: Any, method: str, params: dict[str, Any] | None = None, **meta: Any
) -> tuple[dict[str, Any], dict[str, str]]:
    """A 2026-07-28 request body and its standard headers."""
    p = dict(params or {})
    p["_meta"] = {**envelope(), **meta, **p.get("_meta", {})}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if method == "tools/call":
        headers["Mcp-Name"] = str(p.get("name"))
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": p}, headers


def sse_messages(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body (``data:`` lines)."""
    import json

    out = []
    for event in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].lstrip() for line in event.split("\n") if line.startswith("data:")]
        if data and "".join(data):
            out.append(json.loads("\n".join(data)))
    return out


LEGACY_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}


def initialize_body(id: Any = 0, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities or {},
            "clientInfo": {"name": "http-test", "version": "1"},
        },
    }

"""The official MCP TypeScript SDK clients against ``toolwire serve --http`` over their
Streamable HTTP client transports (a real host subprocess on a loopback port; no bridge).

* ``sdk_http_client.mjs``: ``@modelcontextprotocol/sdk`` 1.x, the 2025-11-25 era with an
  ``Mcp-Session-Id`` session;
* ``sdk2_http_client.mjs``: ``@modelcontextprotocol/client`` 2.x, the 2026-07-28 era
  (stateless, one HTTP request per JSON-RPC request, ``subscriptions/listen``).

Each script prints the JSON summary described in test_node_clients.py; the Node packages
and the ``node`` fixture are the ones that file installs and defines.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.http_support import http_host
from tests.interop.test_node_clients import (
    ECHO_TOOLS,
    INTEROP,
    INTEROP_TOOLS,
    MODERN_TOOLS,
    REPO,
    SCRIPT_TIMEOUT,
    node,
)

__all__ = ["node"]  # the session fixture, imported so pytest finds it here

TOOLS = [str(ECHO_TOOLS), str(INTEROP_TOOLS), str(MODERN_TOOLS)]


def run_http_script(
    node: str, script: str, tmp_path: Path, host_options: tuple[str, ...] = (), *options: str
) -> dict[str, Any]:
    """Serve the tools over HTTP, run ``script`` against the URL; return its JSON summary."""
    with http_host(tmp_path, ("--no-builtins", *host_options), tools=TOOLS) as h:
        proc = subprocess.run(
            [node, str(INTEROP / script), "--url", h.url, "--tmp", str(tmp_path), *options],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=SCRIPT_TIMEOUT,
        )
        host_alive = h.proc.poll() is None
    try:
        summary: dict[str, Any] = json.loads(proc.stdout)
    except ValueError:
        pytest.fail(
            f"{script} printed no JSON summary (exit {proc.returncode}):\n"
            f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    assert summary["failures"] == [], (
        f"{script} failed expectations:\n"
        + json.dumps(summary["failures"], indent=2, ensure_ascii=False)
        + f"\nstderr:\n{proc.stderr}"
    )
    assert summary["ok"] is True
    assert proc.returncode == 0, proc.stderr
    assert host_alive, "the host exited while the client ran"
    return summary


def test_typescript_sdk_http_legacy(node: str, tmp_path: Path) -> None:
    """SDK 1.x over Streamable HTTP at 2025-11-25: session, list, call, progress, cancel,
    elicitation, a tools list change, DELETE."""
    summary = run_http_script(node, "sdk_http_client.mjs", tmp_path)
    seen = summary["observed"]
    assert len(summary["checks"]) >= 20
    assert seen["initializeRequest"]["params"]["protocolVersion"] == "2025-11-25"
    assert [p["progress"] for p in seen["progress"]] == [1, 2, 3]
    assert seen["cancelNotification"]["method"] == "notifications/cancelled"
    assert (tmp_path / "http-nap-marker.txt").read_text() == "cancelled"
    deletes = [r for r in seen["http"] if r["method"] == "DELETE"]
    assert len(deletes) == 1 and 200 <= deletes[0]["status"] < 300
    assert seen["staleStatus"] == 404


def test_typescript_sdk_http_legacy_approval(node: str, tmp_path: Path) -> None:
    """``--approve echo``: the host asks the SDK 1.x client with an elicitation form on the
    call's response stream; allow runs the call, deny refuses it."""
    summary = run_http_script(
        node, "sdk_http_client.mjs", tmp_path, ("--approve", "echo"), "--scenario", "approval"
    )
    forms = summary["observed"]["asked"]
    assert len(forms) == 2
    assert forms[0]["requestedSchema"]["properties"]["decision"]["enum"] == ["allow", "deny"]


@pytest.mark.parametrize("mode", ["pin", "auto"])
def test_typescript_sdk_v2_http_modern(node: str, tmp_path: Path, mode: str) -> None:
    """SDK 2.x over Streamable HTTP at 2026-07-28 (pinned, or negotiated with ``auto``):
    list, call, progress, cancel, subscriptions/listen with a tools list change,
    elicitation/sampling/roots over input-required rounds."""
    summary = run_http_script(node, "sdk2_http_client.mjs", tmp_path, (), "--mode", mode)
    seen = summary["observed"]
    assert len(summary["checks"]) >= 20
    assert "initialize" not in seen["sentMethods"]
    assert "subscriptions/listen" in seen["sentMethods"]
    assert seen["honored"] == {"toolsListChanged": True}
    assert [p["progress"] for p in seen["progress"]] == [1, 2, 3]
    assert (tmp_path / "http2-nap-marker.txt").read_text() == "cancelled"
    assert (tmp_path / "ts-http-runs").read_text() == "run\n" * 4
    assert all(r["sessionId"] is None for r in seen["http"])


def test_typescript_sdk_v2_http_approval(node: str, tmp_path: Path) -> None:
    """``--approve echo`` at 2026-07-28 over HTTP: the approval form arrives in an
    input-required result; allow runs the call, deny refuses it."""
    summary = run_http_script(
        node,
        "sdk2_http_client.mjs",
        tmp_path,
        ("--approve", "echo"),
        "--mode",
        "pin",
        "--scenario",
        "approval",
    )
    forms = summary["observed"]["asked"]
    assert len(forms) == 2
    decision = forms[0]["params"]["requestedSchema"]["properties"]["decision"]
    assert decision["enum"] == ["allow", "deny"]

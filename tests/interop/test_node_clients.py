"""Real clients written in another language (Node) against the real host.

* the official MCP TypeScript SDK client over stdio (``sdk_client.mjs``, 1.x, 2025-11-25);
* the TypeScript SDK v2 client (``@modelcontextprotocol/client``) in the 2026-07-28 era
  (``sdk2_client.mjs``);
* vscode-jsonrpc, the JSON-RPC library of VS Code's language clients, over LSP
  Content-Length framing (``jsonrpc_client.mjs``);
* the MCP Inspector CLI (v1, the line that runs on Node 20) listing and calling tools.

Each Node script prints a JSON summary (``ok``, ``checks``, ``failures``, ``observed``) and
exits non-zero when an expectation failed; the tests here assert on that summary, and
re-check the key observations from the Python side.

The Node packages are pinned in ``package.json`` / ``package-lock.json`` and installed by
``npm ci`` once per session (when ``node_modules`` is missing or older than the lockfile);
a failing install fails the tests. Without ``node`` and ``npm`` (or with a Node older than
20) the tests are skipped, except where Node is required: in CI (``CI=true``, where
``.ci/run`` installs Node) or with ``TOOLWIRE_REQUIRE_NODE=1`` they fail instead.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

INTEROP = Path(__file__).resolve().parent
REPO = INTEROP.parent.parent
ECHO_TOOLS = REPO / "examples" / "tools" / "echo_tools.py"
INTEROP_TOOLS = REPO / "tests" / "fixtures" / "interop_tools.py"
MODERN_TOOLS = REPO / "tests" / "fixtures" / "modern_tools.py"
NODE_MODULES = INTEROP / "node_modules"
LOCKFILE = INTEROP / "package-lock.json"
INSTALLED_LOCK = NODE_MODULES / ".package-lock.json"  # written by npm at the end of an install
INSPECTOR_CLI = NODE_MODULES / "@modelcontextprotocol" / "inspector-cli" / "build" / "cli.js"

MIN_NODE_MAJOR = 20
NPM_CI_TIMEOUT = 600.0  # seconds
SCRIPT_TIMEOUT = 300.0  # seconds, per Node script run: catches a hang, not a slow machine


def host_args(root: Path, *extra_tools: Path) -> list[str]:
    """The host command line (venv python) serving echo_tools.py and interop_tools.py (and
    ``extra_tools``) only."""
    return [
        sys.executable,
        "-m",
        "toolwire.host",
        "--no-builtins",
        "--no-entry-points",
        "--root",
        str(root),
        "--tools",
        str(ECHO_TOOLS),
        str(INTEROP_TOOLS),
        *(str(t) for t in extra_tools),
    ]


def node_required() -> bool:
    """True where a missing or too old Node is a failure, not a skip (CI, or asked)."""
    return (
        os.environ.get("CI", "").lower() == "true" or os.environ.get("TOOLWIRE_REQUIRE_NODE") == "1"
    )


def _unavailable(reason: str) -> NoReturn:
    if node_required():
        pytest.fail(reason + " (required here: CI=true or TOOLWIRE_REQUIRE_NODE=1)")
    pytest.skip(reason)


def _needs_install() -> bool:
    return not INSTALLED_LOCK.exists() or INSTALLED_LOCK.stat().st_mtime < LOCKFILE.stat().st_mtime


@pytest.fixture(scope="session")
def node() -> Iterator[str]:
    """Path of ``node``, with tests/interop/node_modules installed by ``npm ci`` when needed."""
    node_path, npm_path = shutil.which("node"), shutil.which("npm")
    if node_path is None or npm_path is None:
        _unavailable("node and npm are needed for the Node interop tests (Node >= 20 on PATH)")
    version = subprocess.run(
        [node_path, "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    match = re.match(r"v(\d+)\.", version)
    if match is None or int(match.group(1)) < MIN_NODE_MAJOR:
        _unavailable(f"the Node interop tests need Node >= {MIN_NODE_MAJOR}; found {version}")
    # One install at a time, even with several pytest runs on the machine.
    lock_path = Path(tempfile.gettempdir()) / "toolwire-interop-npm-ci.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _needs_install():
            started = time.monotonic()
            proc = subprocess.run(
                [npm_path, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=INTEROP,
                capture_output=True,
                text=True,
                timeout=NPM_CI_TIMEOUT,
            )
            if proc.returncode != 0:
                pytest.fail(
                    f"npm ci in {INTEROP} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
                )
            sys.stderr.write(f"\n[interop] npm ci took {time.monotonic() - started:.1f} s\n")
    yield node_path


def run_script(
    node: str,
    script: str,
    tmp_path: Path,
    options: tuple[str, ...] = (),
    extra_tools: tuple[Path, ...] = (),
    host_options: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Run a Node interop script against a fresh host; return its JSON summary.

    Fails the test with the script's stderr (where the host's stderr goes too) when it
    does not print a summary.
    """
    proc = subprocess.run(
        [
            node,
            str(INTEROP / script),
            "--tmp",
            str(tmp_path),
            *options,
            "--",
            *host_args(tmp_path, *extra_tools),
            *host_options,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT,
    )
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
    return summary


def test_typescript_sdk_client(node: str, tmp_path: Path) -> None:
    """@modelcontextprotocol/sdk's Client + StdioClientTransport: the full tool workflow."""
    summary = run_script(node, "sdk_client.mjs", tmp_path)
    seen = summary["observed"]
    assert len(summary["checks"]) >= 40
    assert seen["initializeRequest"]["params"]["protocolVersion"] == "2025-11-25"
    assert seen["serverVersion"]["name"] == "toolwire"
    assert seen["toolNames"] == ["echo", "count", "nap", "snooze", "steps", "chatty"]
    # Progress reached onprogress in order when the tool paused between reports.
    assert [p["progress"] for p in seen["progress"]["steps"]["delivered"]] in (
        [1, 2, 3, 4],
        [1, 2, 3],
    )
    assert seen["invalidArguments"]["isError"] is True
    assert seen["unknownTool"]["error"]["code"] == -32602
    # The timeout: -32001 on the client, notifications/cancelled on the wire, tool interrupted.
    assert seen["timeout"]["error"]["code"] == -32001
    assert seen["cancelNotification"]["method"] == "notifications/cancelled"
    assert seen["napMarker"] == "cancelled"
    assert seen["ping"]["value"] == {}
    assert [e["level"] for e in seen["logs"]] == ["debug", "info", "warning", "warning"]
    assert seen["exit"] == {"code": 0, "signal": None}


@pytest.mark.parametrize("mode", ["pin", "auto"])
def test_typescript_sdk_v2_client_modern(node: str, tmp_path: Path, mode: str) -> None:
    """@modelcontextprotocol/client 2.x in the 2026-07-28 era (pinned, or negotiated with
    ``auto``): no initialize, the envelope on every request, list, call, progress, cancel,
    subscriptions/listen with a tools list change."""
    summary = run_script(
        node, "sdk2_client.mjs", tmp_path, ("--mode", mode), extra_tools=(MODERN_TOOLS,)
    )
    seen = summary["observed"]
    assert len(summary["checks"]) >= 20
    assert "initialize" not in seen["sentMethods"]
    assert "subscriptions/listen" in seen["sentMethods"]
    assert seen["honored"] == {"toolsListChanged": True}
    assert [a["method"] for a in seen["asked"]] == [
        "elicitation/create",
        "elicitation/create",
        "sampling/createMessage",
        "roots/list",
    ]
    assert (tmp_path / "ts-runs").read_text() == "run\n" * 4
    assert seen["echo"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "toolwire"
    assert (tmp_path / "nap2-marker.txt").read_text() == "cancelled"
    assert seen["exit"] == {"code": 0, "signal": None}


def test_typescript_sdk_v2_client_approval(node: str, tmp_path: Path) -> None:
    """A host started with --approve asks the SDK v2 client through a standard
    elicitation form (in input-required results): allow runs the call, deny refuses it."""
    summary = run_script(
        node,
        "sdk2_client.mjs",
        tmp_path,
        ("--mode", "pin", "--scenario", "approval"),
        extra_tools=(MODERN_TOOLS,),
        host_options=("--approve", "echo"),
    )
    forms = summary["observed"]["asked"]
    assert len(forms) == 2
    schema = forms[0]["params"]["requestedSchema"]
    assert schema["properties"]["decision"]["enum"] == ["allow", "deny"]


def test_vscode_jsonrpc_client(node: str, tmp_path: Path) -> None:
    """vscode-jsonrpc over Content-Length framing, with $/cancelRequest and LSP shutdown."""
    summary = run_script(node, "jsonrpc_client.mjs", tmp_path)
    seen = summary["observed"]
    assert seen["firstBytes"].startswith("Content-Length: ")
    assert seen["initialize"]["serverInfo"]["name"] == "toolwire"
    assert [p["progress"] for p in seen["progress"]] == [1, 2, 3]
    assert seen["completionOrder"] == ["echo", "steps"]
    assert seen["errors"]["unknownMethod"]["error"]["code"] == -32601
    assert seen["cancel"]["error"]["code"] == -32800
    assert (tmp_path / "lsp-nap-marker.txt").read_text() == "cancelled"
    assert seen["exit"] == {"code": 0, "signal": None}


def run_inspector(node: str, tmp_path: Path, *method_args: str) -> subprocess.CompletedProcess[str]:
    """``mcp-inspector --cli HOST... --method ...`` (the Inspector v1 CLI) against a fresh host.

    The CLI reads its own package.json for the client name by checking ``../package.json``
    relative to the *working directory*; run from node_modules, that check finds
    tests/interop/package.json and the import then resolves to the CLI's own package.json.
    """
    return subprocess.run(
        [node, str(INSPECTOR_CLI), "--cli", *host_args(tmp_path), *method_args],
        cwd=NODE_MODULES,
        capture_output=True,
        text=True,
        timeout=SCRIPT_TIMEOUT,
    )


def test_inspector_cli_lists_tools(node: str, tmp_path: Path) -> None:
    proc = run_inspector(node, tmp_path, "--method", "tools/list")
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    assert [t["name"] for t in listed["tools"]] == [
        "echo",
        "count",
        "nap",
        "snooze",
        "steps",
        "chatty",
    ]
    echo = listed["tools"][0]
    assert echo["description"] == "Return the text unchanged."
    assert echo["inputSchema"]["required"] == ["text"]
    assert echo["annotations"] == {"readOnlyHint": True}


def test_inspector_cli_calls_tools(node: str, tmp_path: Path) -> None:
    proc = run_inspector(
        node, tmp_path, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=hi"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"content": [{"type": "text", "text": "hi"}]}

    # The CLI JSON-parses tool arguments: n=3 arrives as the integer 3.
    proc = run_inspector(
        node, tmp_path, "--method", "tools/call", "--tool-name", "count", "--tool-arg", "n=3"
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"content": [{"type": "text", "text": "counted to 3"}]}


def test_inspector_cli_errors(node: str, tmp_path: Path) -> None:
    """An isError result is printed and exits 0; a protocol error (-32602) exits 1."""
    # text=[42] is sent as an array, which fails echo's input schema (a bare 42 would be
    # coerced to the string "42", as protocol.md's coercion rules say).
    proc = run_inspector(
        node, tmp_path, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=[42]"
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith('Invalid arguments for tool "echo":\n  - text: ')

    proc = run_inspector(node, tmp_path, "--method", "tools/call", "--tool-name", "nope")
    assert proc.returncode == 1
    assert "-32602" in proc.stderr
    assert "Unknown tool: nope" in proc.stderr

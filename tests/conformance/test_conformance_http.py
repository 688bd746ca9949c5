"""The official MCP conformance suite (@modelcontextprotocol/conformance 0.2.0-alpha.12, pinned
in package.json) run natively with ``--url`` against ``toolwire serve --http``, at spec
2026-07-28 and 2025-11-25: no bridge, so the HTTP checks (statuses, ``Mcp-*`` headers,
-32020, DNS rebinding) test the host itself.

Every check of a listed scenario must pass (WARNING counts as a failure; INFO and SKIPPED
do not). Scenarios left out, and why: prompts, resources, completion, caching and the
tasks/skills extensions (the host offers tools only).

``server-sse-polling`` checks the priming event and ``retry``; it tries ``GET`` +
``Last-Event-ID`` only once the server has ended the stream mid-call, which needs a way
for a tool to make the host end its connection: the host has none (it never closes a
stream by itself), so that check reports INFO. Resumption after a dropped connection is
tested in tests/host/serve/test_http.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conformance.test_conformance import HERE, SCENARIOS, SUITE, _node
from tests.http_support import http_host

MODERN = [
    *SCENARIOS,
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
    "http-header-validation",
    "json-schema-2020-12",
    "http-custom-header-server-validation",
]
LEGACY = [
    "server-initialize",
    "server-session-lifecycle",
    "ping",
    "logging-set-level",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-with-logging",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "json-schema-2020-12",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
    "server-sse-polling",
]
CASES = [("2026-07-28", s) for s in MODERN] + [("2025-11-25", s) for s in LEGACY]


@pytest.fixture(scope="module")
def host_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    import fcntl
    import os
    import shutil
    import subprocess
    import tempfile

    from tests.conformance.test_conformance import LOCAL_NODE, _unavailable

    npm = shutil.which("npm")
    if npm is None:
        _unavailable("npm is needed to install the conformance suite")
    with open(Path(tempfile.gettempdir()) / "toolwire-conformance-npm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not SUITE.exists() or not LOCAL_NODE.exists():
            subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=HERE,
                check=True,
                timeout=600,
                env=dict(os.environ),
            )
    _node()
    root = tmp_path_factory.mktemp("conformance-http-root")
    tools = [str(HERE / "conformance_tools.py")]
    with http_host(root, ["--no-builtins"], tools=tools) as h:
        yield h.url


@pytest.mark.parametrize(("spec", "scenario"), CASES, ids=[f"{s}:{c}" for s, c in CASES])
def test_conformance_over_http(host_url: str, spec: str, scenario: str, tmp_path: Path) -> None:
    import subprocess

    node = _node()
    args = ["server", "--url", host_url, "--scenario", scenario, "--spec-version", spec]
    proc = subprocess.run(
        [node, str(SUITE), *args, "-o", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    results = list(tmp_path.rglob("checks.json"))
    assert results, proc.stdout + proc.stderr
    checks: list[dict[str, Any]] = json.loads(results[0].read_text())
    failed = [
        (c["id"], c.get("errorMessage")) for c in checks if c["status"] in ("FAILURE", "WARNING")
    ]
    assert failed == [], proc.stdout
    assert any(c["status"] == "SUCCESS" for c in checks)

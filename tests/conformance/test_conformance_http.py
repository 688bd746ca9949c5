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

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.test_conformance import HERE, SCENARIOS, SUITE, SuiteRun, _node, failures
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


class _Runs(dict[str, SuiteRun]):
    """Spec version → the suite's run at it, made when first asked for."""

    def __init__(self, url: str, factory: pytest.TempPathFactory) -> None:
        super().__init__()
        self.url = url
        self.factory = factory

    def __missing__(self, spec: str) -> SuiteRun:
        run = SuiteRun(self.url, spec, self.factory.mktemp(f"conformance-http-{spec}"))
        self[spec] = run
        return run


@pytest.fixture(scope="module")
def runs(host_url: str, tmp_path_factory: pytest.TempPathFactory) -> _Runs:
    """The whole suite against the host, once per spec version (per test process)."""
    return _Runs(host_url, tmp_path_factory)


@pytest.mark.parametrize(("spec", "scenario"), CASES, ids=[f"{s}:{c}" for s, c in CASES])
def test_conformance_over_http(runs: _Runs, spec: str, scenario: str) -> None:
    checks = runs[spec].of(scenario)
    assert failures(checks) == [], checks

"""The official MCP conformance suite (@modelcontextprotocol/conformance) at spec 2026-07-28,
run against the real stdio host through a test-only HTTP bridge (tests/conformance/bridge.py).

Scenarios run: the tool scenarios, server-stateless and the input-required-result ones.
Left out of what is asserted, and why:

* HTTP-only checks (status codes 400/404, ``Mcp-*`` headers, -32020): they test the bridge,
  not the host; their ids start with ``sep-2575-http-`` or end in ``-http-400``;
* ``caching`` and the prompt/resource scenarios: the host offers tools only.

The suite (0.2.0-alpha.12) needs Node >= 22. ``package.json`` pins the npm package ``node``
(22.x), so ``npm ci`` (run by the fixture, with whatever Node >= 20 and npm the machine has)
brings a Node 22 of its own into ``node_modules``; ``TOOLWIRE_CONFORMANCE_NODE`` names
another one. Without ``npm`` the test is skipped, except where Node is required (``CI=true``
or ``TOOLWIRE_REQUIRE_NODE=1``, as for the interop tests): there it fails.

The suite runs once per module and spec version (:class:`SuiteRun`: every scenario it has,
one after another in one Node process, as ``--suite all`` does) and each test reads its
own scenario's ``checks.json``: a Node start per scenario cost more than the scenarios.
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.interop.test_node_clients import node_required

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
SUITE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
SCENARIOS = [
    "server-stateless",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "input-required-result-basic-elicitation",
    "input-required-result-basic-sampling",
    "input-required-result-basic-list-roots",
    "input-required-result-request-state",
    "input-required-result-multiple-input-requests",
    "input-required-result-multi-round",
    "input-required-result-missing-input-response",
    "input-required-result-result-type",
    "input-required-result-unsupported-methods",
    "input-required-result-tampered-state",
    "input-required-result-capability-check",
    "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
]
HTTP_ONLY = re.compile(r"^sep-2575-http-|-http-400$")


LOCAL_NODE = HERE / "node_modules" / ".bin" / "node"
"""The Node 22 that ``npm ci`` installs from the pinned ``node`` package."""


def _unavailable(reason: str) -> NoReturn:
    if node_required():
        pytest.fail(reason + " (required here: CI=true or TOOLWIRE_REQUIRE_NODE=1)")
    pytest.skip(reason)


def _major(node: str) -> int:
    out = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    match = re.match(r"v(\d+)\.", out)
    return int(match.group(1)) if match else 0


def _node() -> str:
    """The ``node`` (>= 22) that runs the suite: ``TOOLWIRE_CONFORMANCE_NODE``, else the
    one ``npm ci`` installed here, else the machine's own when it is new enough."""
    for node in (
        os.environ.get("TOOLWIRE_CONFORMANCE_NODE"),
        str(LOCAL_NODE),
        shutil.which("node"),
    ):
        if node and os.access(node, os.X_OK) and _major(node) >= 22:
            return node
    _unavailable("the conformance suite needs Node >= 22 (npm ci installs one here)")


@pytest.fixture(scope="module")
def bridge_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    npm = shutil.which("npm")
    if npm is None:
        _unavailable("npm is needed to install the conformance suite")
    with open(Path(tempfile.gettempdir()) / "toolwire-conformance-npm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not SUITE.exists() or not LOCAL_NODE.exists():
            env = dict(os.environ)
            subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=HERE,
                check=True,
                timeout=600,
                env=env,
            )
    _node()
    root = tmp_path_factory.mktemp("conformance-root")
    host = [sys.executable, "-m", "toolwire.host", "--no-builtins", "--no-entry-points"]
    host += ["--root", str(root), "--tools", str(HERE / "conformance_tools.py")]
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.conformance.bridge", "0", *host],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        port = int(first.rsplit(" ", 1)[1])
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


_RUN_DIR = re.compile(r"^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")
"""What the suite names a scenario's output directory: ``server-<scenario>-<timestamp>``."""


class SuiteRun:
    """The results of one run of the whole suite against one server at one spec version.

    Args:
        url: the server's MCP endpoint.
        spec: the spec version (``--spec-version``).
        out: an empty directory for the suite's ``checks.json`` files.
    """

    def __init__(self, url: str, spec: str, out: Path) -> None:
        node = _node()
        argv = [node, str(SUITE), "server", "--url", url, "--suite", "all"]
        argv += ["--spec-version", spec, "-o", str(out)]
        # Each scenario has its own 30 s limit inside the suite; this bounds the whole run.
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=900)
        self.output = proc.stdout + proc.stderr
        """What the suite printed (every scenario's verdict), for failure messages."""
        self.checks: dict[str, list[dict[str, Any]]] = {}
        """Scenario name → the checks it reported."""
        for path in out.glob("*/checks.json"):
            match = _RUN_DIR.match(path.parent.name)
            if match:
                self.checks[match.group(1)] = json.loads(path.read_text())

    def of(self, scenario: str) -> list[dict[str, Any]]:
        """The checks ``scenario`` reported; fails the test when it did not run or
        reported none, or when none of its checks succeeded."""
        checks = self.checks.get(scenario)
        assert checks, f"scenario {scenario} reported no checks:\n{self.output}"
        assert any(c["status"] == "SUCCESS" for c in checks), (scenario, checks)
        return checks


def failures(checks: list[dict[str, Any]], ignore: re.Pattern[str] | None = None) -> list[Any]:
    """``(id, errorMessage)`` of each check reported FAILURE or WARNING (INFO and SKIPPED
    pass), leaving out the ids ``ignore`` matches."""
    return [
        (c["id"], c.get("errorMessage"))
        for c in checks
        if c["status"] in ("FAILURE", "WARNING") and not (ignore and ignore.search(c["id"]))
    ]


@pytest.fixture(scope="module")
def bridged_run(bridge_url: str, tmp_path_factory: pytest.TempPathFactory) -> SuiteRun:
    """The whole suite at 2026-07-28, once, through the bridge."""
    return SuiteRun(bridge_url, "2026-07-28", tmp_path_factory.mktemp("conformance-run"))


# server-stateless sends ~20 requests, each a new host behind the stdio bridge: at load it
# outlasts the suite's fixed 30 s scenario timeout (the bridge's cost, not the host's). It
# runs natively, without the bridge, in test_conformance_http.py at both spec versions.
BRIDGED = [s for s in SCENARIOS if s != "server-stateless"]


@pytest.mark.parametrize("scenario", BRIDGED)
def test_conformance_scenario(bridged_run: SuiteRun, scenario: str) -> None:
    checks = bridged_run.of(scenario)
    assert failures(checks, HTTP_ONLY) == [], checks

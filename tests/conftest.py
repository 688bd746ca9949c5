"""Shared fixtures (the real host as a subprocess, see hostproc.py) and the suite's order."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from tests.hostproc import TOOLS_DIR, HostProcess

_CACHE_HOME = tempfile.mkdtemp(prefix="toolwire-test-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE_HOME
"""The hosts under test (in process and their subprocesses) keep their worker definition
cache (toolwire.host.workers.listcache) here, one directory per test process, never in the
user's own cache."""


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove this process's cache directory (:data:`_CACHE_HOME`)."""
    shutil.rmtree(_CACHE_HOME, ignore_errors=True)


SLOW_FIRST = (
    "test_sandbox_escape_launch.py",
    "test_sandbox_escape_handlers.py",
    "test_reliability_e2e.py",
    "test_workers_e2e.py",
    "test_workers_hostile.py",
    "test_sandbox_escape_inputs.py",
    "test_workers_reload.py",
    "test_demo.py",
    "test_workers_health.py",
    "test_sandbox_escape_resources.py",
)
"""Files whose tests run longest (tens of seconds each, a few over a minute at load:
fork bombs, hosts started a dozen times, workers killed and restarted), most costly
first. They are collected before the others so that under ``-n`` they start early and
the short tests fill in around them, instead of one of them starting last and leaving
the other workers idle. Only the order changes: every test still runs, alone or not."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Moves the tests of :data:`SLOW_FIRST` to the front (in that order), keeping each
    file's tests together and in their own order, and everything else as collected. The
    order is a pure function of the collected items, so every xdist worker computes the
    same one (xdist requires it)."""
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FIRST)))


@pytest.fixture(autouse=True)
def _no_secret_outlives_its_test() -> Iterator[None]:
    """Redacted ``[secrets]`` values are registered for the whole process
    (toolwire.host.tools.redaction): those a test (or an in-process host it ran)
    registered are removed after it, so no later test of this process redacts them. One
    that did made a 600-level result of another test fail (the old recursive walk)."""
    from toolwire.host.tools import redaction

    before = redaction.registered()
    yield
    added = redaction.registered()  # a copy
    for pair in before:
        if pair in added:
            added.remove(pair)
    redaction.unregister(added)


@pytest.fixture
def host(tmp_path) -> Iterator[HostProcess]:  # type: ignore[no-untyped-def]
    """A host rooted in a temporary directory, serving the built-ins and tests/fixtures/basic_tools.py."""
    with HostProcess(["--root", str(tmp_path), "--tools", str(TOOLS_DIR / "basic_tools.py")]) as h:
        yield h


@pytest.fixture
def inproc_host(tmp_path):  # type: ignore[no-untyped-def]
    """What :func:`host` serves (the built-ins and tests/fixtures/basic_tools.py, rooted in a
    temporary directory), in the test's own process with the tools run in the host
    (:class:`tests.inproc.InProcHost`): for tests of what a tool answers, where the
    host's process, its workers and its start-up play no part."""
    from tests.inproc import InProcHost

    args = ["--root", str(tmp_path), "--tools", str(TOOLS_DIR / "basic_tools.py")]
    with InProcHost([*args, "--isolation", "none"]) as h:
        yield h


@pytest.fixture
def sandbox_required() -> None:
    """Fails (or skips, where no sandbox is expected) unless bubblewrap works here."""
    from tests.sandbox_support import require_sandbox

    require_sandbox()

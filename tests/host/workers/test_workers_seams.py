"""The seams of a worker process (issue 23, point 4): it starts and runs from a frozen
:class:`~toolwire.host.workers.process.WorkerSettings` built once by its pool, and calls
its owner only through :class:`~toolwire.host.workers.process.WorkerOwner`, never
through the private attributes of a pool or of :class:`~toolwire.host.workers.Workers`.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect

import pytest
from toolwire.host.workers.pool import WorkerPool
from toolwire.host.workers.process import (
    ModuleSpec,
    WorkerOwner,
    WorkerProcess,
    WorkerSettings,
)

from tests.hostproc import REPO

WORKERS = REPO / "host" / "workers"

OWNERS = {"owner", "pool", "manager", "workers", "workers_owner"}
"""Names (plain or as ``self.NAME``) that stand for a worker's owner."""


def private_reaches(source: str) -> list[str]:
    """``NAME._x`` and ``self.NAME._x`` for every owner name in :data:`OWNERS`, as
    ``line: text`` (dunder attributes aside)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__"):
            continue
        base = node.value
        name = None
        if isinstance(base, ast.Name):
            name = base.id
        elif isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name):
            name = base.attr if base.value.id == "self" else None
        if name in OWNERS:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("module", ["process.py", "remote.py"])
def test_a_worker_reaches_no_private_attribute_of_its_owner(module: str) -> None:
    assert private_reaches((WORKERS / module).read_text(encoding="utf-8")) == []


def test_the_check_sees_a_private_reach() -> None:
    # The shape process.py had before the owner protocol (``owner._tg``).
    source = "def f(self):\n    owner = self.pool.workers_owner\n    return owner._tg\n"
    assert private_reaches(source) == ["3: owner._tg"]
    assert private_reaches("def f(self):\n    self.pool._x()\n") == ["2: self.pool._x"]


def _settings() -> WorkerSettings:
    return WorkerSettings(
        module=ModuleSpec("tools.py"),
        root="/",
        sys_path=("/lib",),
        max_threads=4,
        log_level="warning",
        max_message_size=1024,
        sandbox=None,
        sandboxed=False,
    )


def test_a_worker_takes_frozen_settings() -> None:
    params = inspect.signature(WorkerProcess.__init__).parameters
    assert params["owner"].annotation == "WorkerOwner"
    assert params["settings"].annotation == "WorkerSettings"
    settings = _settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.max_threads = 8  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.start = "fork"  # type: ignore[misc]
    assert isinstance(settings.sys_path, tuple)  # no list a caller could change under it
    assert settings.accepted_size >= 1024


def test_the_pool_implements_the_owner_protocol() -> None:
    wanted = {
        name
        for name, value in vars(WorkerOwner).items()
        if callable(value) and not name.startswith("_")
    }
    assert wanted  # the protocol names its callbacks
    missing = {name for name in wanted if not callable(getattr(WorkerPool, name, None))}
    assert missing == set()

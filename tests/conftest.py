"""Shared fixtures: the real host as a subprocess (see hostproc.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.hostproc import TOOLS_DIR, HostProcess


@pytest.fixture
def host(tmp_path) -> Iterator[HostProcess]:  # type: ignore[no-untyped-def]
    """A host rooted in a temporary directory, serving the built-ins and tests/tools/basic_tools.py."""
    with HostProcess(["--root", str(tmp_path), "--tools", str(TOOLS_DIR / "basic_tools.py")]) as h:
        yield h


@pytest.fixture
def sandbox_required() -> None:
    """Fails (or skips, where no sandbox is expected) unless bubblewrap works here."""
    from tests.sandbox_support import require_sandbox

    require_sandbox()

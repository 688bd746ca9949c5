"""Processes and files kept in: bubblewrap (:mod:`.bubblewrap`), its seccomp filter
(:mod:`.seccomp`), memory cgroups (:mod:`.memcg`), the host's process bookkeeping
(:mod:`.procs`), the one process runner (:mod:`.commands`), the path rule and opening
beneath the root (:mod:`.paths`), full-output files (:mod:`.outputs`), the host's own
inputs kept out of the tools' reach (:mod:`.inputs`) and the root kept off the import
path (:mod:`.importpath`).

Imports from below only: :mod:`toolwire.host.tools` (the error a tool raises),
:mod:`toolwire.host.schema`. The names below are the package's public face
(``toolwire.host.sandbox`` was one module); they are imported on first use, so a
module that needs only :mod:`.paths` or :mod:`.inputs` does not load bubblewrap's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwire._lazy import lazy_exports

__all__ = [
    "DEFAULT_ENV_ALLOW",
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_COMMANDS",
    "LIMIT_KEYS",
    "MEMORY_KEY",
    "TMPFS_SIZE_KEY",
    "Sandbox",
    "SandboxSettings",
    "SandboxUnavailable",
    "WrappedCommand",
    "child_pid_from_info",
    "find_bwrap",
    "looks_secret",
    "memory_exceeded_message",
    "reap_orphan",
    "resolve_sandbox",
]

__getattr__ = lazy_exports(__name__, dict.fromkeys(__all__, ".bubblewrap"))

if TYPE_CHECKING:
    from .bubblewrap import (
        DEFAULT_ENV_ALLOW,
        DEFAULT_LIMITS,
        DEFAULT_MAX_COMMANDS,
        LIMIT_KEYS,
        MEMORY_KEY,
        TMPFS_SIZE_KEY,
        Sandbox,
        SandboxSettings,
        SandboxUnavailable,
        WrappedCommand,
        child_pid_from_info,
        find_bwrap,
        looks_secret,
        memory_exceeded_message,
        reap_orphan,
        resolve_sandbox,
    )

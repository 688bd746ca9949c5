"""Processes and files kept in: bubblewrap (:mod:`.bubblewrap`; its settings in :mod:`.settings`,
the start-up probe in :mod:`.probe`, the trusted programs in :mod:`.programs`), the kernel
mechanisms it is built from (the subpackage :mod:`.linux`: the seccomp filter, memory
cgroups, a forked worker's namespaces, a container's profile), the host's process bookkeeping
(:mod:`.procs`), the one process runner (:mod:`.commands`), the path rule and opening
beneath the root (:mod:`.paths`), full-output files (:mod:`.outputs`), the host's own
inputs kept out of the tools' reach (:mod:`.inputs`) and the root kept off the import
path (:mod:`.importpath`), the environment tools act in (:mod:`.env`), and egress control
(the subpackage :mod:`.egress`).

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

__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(__all__, ".settings"),
        **dict.fromkeys(
            (
                "Sandbox",
                "WrappedCommand",
                "child_pid_from_info",
                "memory_exceeded_message",
                "reap_orphan",
            ),
            ".bubblewrap",
        ),
        "MEMORY_KEY": ".linux.memcg",
        "find_bwrap": ".programs",
        "resolve_sandbox": ".probe",
    },
)

if TYPE_CHECKING:
    from .bubblewrap import (
        Sandbox,
        WrappedCommand,
        child_pid_from_info,
        memory_exceeded_message,
        reap_orphan,
    )
    from .linux.memcg import MEMORY_KEY
    from .probe import resolve_sandbox
    from .programs import find_bwrap
    from .settings import (
        DEFAULT_ENV_ALLOW,
        DEFAULT_LIMITS,
        DEFAULT_MAX_COMMANDS,
        LIMIT_KEYS,
        TMPFS_SIZE_KEY,
        SandboxSettings,
        SandboxUnavailable,
        looks_secret,
    )

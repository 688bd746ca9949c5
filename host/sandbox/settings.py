"""The sandbox's settings: :class:`SandboxSettings` (``--sandbox`` and ``[sandbox]`` of
``toolwire.toml``), the default limits and environment, and which variable names look
like secrets (never passed into the sandbox).

Standard library only (and :mod:`.linux.memcg`'s key names): :mod:`toolwire.host.serve.options`
reads them before the heavy imports. What the settings give is checked once, at start-up,
by :func:`toolwire.host.sandbox.probe.resolve_sandbox`.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import re
import resource
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .linux.memcg import (
    MEMORY_KEY,
)

__all__ = [
    "DEFAULT_ENV_ALLOW",
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_COMMANDS",
    "LIMIT_KEYS",
    "TMPFS_SIZE_KEY",
    "SandboxMode",
    "SandboxSettings",
    "SandboxUnavailable",
    "looks_secret",
]

log = logging.getLogger("toolwire.sandbox")


SandboxMode = Literal["auto", "bwrap", "none"]


DEFAULT_ENV_ALLOW = ("PATH", "HOME", "LANG", "TERM")
"""Environment variables passed to sandboxed processes by default."""


LIMIT_KEYS: dict[str, tuple[int, str, str]] = {
    "cpu_seconds": (resource.RLIMIT_CPU, "cpu", "seconds of CPU time per process"),
    "address_space": (resource.RLIMIT_AS, "as", "bytes of address space per process"),
    "processes": (resource.RLIMIT_NPROC, "nproc", "processes"),
    "file_size": (resource.RLIMIT_FSIZE, "fsize", "bytes per file written"),
    "open_files": (resource.RLIMIT_NOFILE, "nofile", "open files per process"),
}
"""``limits`` keys: (rlimit, prlimit option, what the number counts)."""


DEFAULT_LIMITS: dict[str, int] = {
    "cpu_seconds": 600,
    "address_space": 8 << 30,
    "processes": 1024,
    "file_size": 4 << 30,
    "open_files": 4096,
    "tmpfs_size": 512 << 20,
    MEMORY_KEY: 4 << 30,
}
"""Limits applied when the settings give none: 600 s CPU, 8 GiB address space,
1024 processes, 4 GiB per file, 4096 open files, 512 MiB per tmpfs mount, 4 GiB of
memory per command and per worker process (:data:`MEMORY_KEY`, where a memory cgroup
can be made). 0 in the settings means no limit."""


TMPFS_SIZE_KEY = "tmpfs_size"
"""The ``limits`` key that is no rlimit: the size in bytes of each RAM-backed tmpfs a
sandboxed command can write (``/tmp`` and ``/dev/shm``; bubblewrap's ``--size``, in
bubblewrap since 0.5.0). A tmpfs lives in the host's memory, so without a size one
command could fill the host's RAM (the kernel's default is half of it per mount)."""


DEFAULT_MAX_COMMANDS = 16
"""Commands tools may run at once, host-wide, when the settings name no number. With
the default process limit (1024 per command) that bounds the host's sandboxed
processes at 16384; a batch of more commands queues instead of running together."""


_SECRET_WORDS = re.compile(
    r"SECRET|TOKEN|PASSW|PASSPHRASE|CREDENTIAL|PRIVATE|COOKIE|APIKEY|AUTH|SIGNATURE"
)


_SECRET_PARTS = {"KEY", "KEYS", "PASS", "PW", "PAT", "DSN", "SALT", "CERT", "SESSION"}


def looks_secret(name: str) -> bool:
    """True when an environment variable's name suggests it holds a credential.

    Matches names containing SECRET, TOKEN, PASSW(ORD), PASSPHRASE, CREDENTIAL,
    PRIVATE, COOKIE, APIKEY, AUTH or SIGNATURE (any case), or with an
    underscore-separated part equal to KEY(S), PASS, PW, PAT, DSN, SALT, CERT or
    SESSION: ``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``OPENAI_API_KEY``,
    ``PGPASSWORD``, ``SSH_AUTH_SOCK``, ``SENTRY_DSN``.
    """
    upper = name.upper()
    if _SECRET_WORDS.search(upper):
        return True
    return any(part in _SECRET_PARTS for part in re.split(r"[^A-Z0-9]+", upper))


class SandboxUnavailable(RuntimeError):
    """``--sandbox bwrap`` was asked for but bubblewrap cannot run here."""


def _paths(value: Any, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise ValueError(f"[sandbox] {key} must be a list of paths")
    out = []
    for p in value:
        path = Path(p).expanduser()
        if not path.is_absolute():
            raise ValueError(f"[sandbox] {key}: {p!r} is not an absolute path")
        if not path.exists():
            raise ValueError(f"[sandbox] {key}: {p!r} does not exist")
        out.append(os.path.realpath(path))
    return out


@dataclass
class SandboxSettings:
    """What ``--sandbox`` and the ``[sandbox]`` table of ``toolwire.toml`` configure.

    Attributes:
        mode: "auto" (bubblewrap when it works, else unsandboxed, said loudly), "bwrap"
            (refuse to start without it) or "none" (no sandbox, the host's environment
            passed unfiltered).
        allow_network: give sandboxed processes the host's network (default: only a
            loopback interface of their own).
        extra_ro_paths: more absolute host paths visible read-only.
        extra_rw_paths: more absolute host paths visible read-write.
        env_allow: names (or ``fnmatch`` patterns such as ``LC_*``) of host environment
            variables passed to processes. Names that :func:`looks_secret` are dropped
            even when listed; the tool environment's own ``ExecEnv.extra_env`` is the way to
            hand a process a credential on purpose. Applies in every mode but "none".
        limits: resource limits, keys of :data:`LIMIT_KEYS` (``cpu_seconds``,
            ``address_space`` in bytes, ``processes``, ``file_size`` in bytes,
            ``open_files``, ``tmpfs_size`` in bytes per writable tmpfs mount, see
            :data:`TMPFS_SIZE_KEY`, ``memory`` in bytes per command and per worker
            process, see :data:`MEMORY_KEY`); missing keys take :data:`DEFAULT_LIMITS`,
            0 means no limit.
        bwrap: an absolute path naming the bubblewrap executable to use; None (the
            default) picks one with :func:`find_bwrap`.
        max_commands: how many commands tools may run at once, host-wide (default
            :data:`DEFAULT_MAX_COMMANDS`; 0 means no limit). A command beyond it waits
            for a slot, within its own timeout (see :mod:`toolwire.host.sandbox.commands`).
        network: the ``[network]`` egress policy
            (:class:`toolwire.host.sandbox.egress.policy.NetworkPolicy`; not a ``[sandbox]`` key):
            without ``allow_network``, sandboxed processes reach what it allows through
            the host's egress proxy (:mod:`toolwire.host.sandbox.egress`). None: no proxy.
    """

    mode: SandboxMode = "auto"
    allow_network: bool = False
    extra_ro_paths: list[str] = field(default_factory=list)
    extra_rw_paths: list[str] = field(default_factory=list)
    env_allow: list[str] = field(default_factory=lambda: list(DEFAULT_ENV_ALLOW))
    limits: dict[str, int] = field(default_factory=dict)
    bwrap: str | None = None
    max_commands: int = DEFAULT_MAX_COMMANDS
    network: Any = None

    @classmethod
    def from_table(cls, table: dict[str, Any], mode: str | None = None) -> SandboxSettings:
        """Build from a ``[sandbox]`` TOML table; ``mode`` (from the command line) wins.

        Raises:
            ValueError: an unknown key, a value of the wrong type, a relative or
                missing extra path, an unknown or negative limit.
        """
        known = set(cls.__dataclass_fields__) - {"network"}
        unknown = set(table) - known
        if unknown:
            raise ValueError(f"unknown [sandbox] settings: {sorted(unknown)}")
        settings = cls(**table)
        if mode is not None:
            settings.mode = mode  # type: ignore[assignment]
        if settings.mode not in ("auto", "bwrap", "none"):
            raise ValueError(f"sandbox mode must be auto, bwrap or none, not {settings.mode!r}")
        if not isinstance(settings.allow_network, bool):
            raise ValueError("[sandbox] allow_network must be true or false")
        settings.extra_ro_paths = _paths(settings.extra_ro_paths, "extra_ro_paths")
        settings.extra_rw_paths = _paths(settings.extra_rw_paths, "extra_rw_paths")
        if not isinstance(settings.env_allow, list) or not all(
            isinstance(n, str) for n in settings.env_allow
        ):
            raise ValueError("[sandbox] env_allow must be a list of variable names")
        if settings.bwrap is not None and (
            not isinstance(settings.bwrap, str) or not os.path.isabs(settings.bwrap)
        ):
            raise ValueError("[sandbox] bwrap must be an absolute path")
        if (
            isinstance(settings.max_commands, bool)
            or not isinstance(settings.max_commands, int)
            or settings.max_commands < 0
        ):
            raise ValueError("[sandbox] max_commands must be a whole number >= 0")
        if not isinstance(settings.limits, dict):
            raise ValueError("[sandbox] limits must be a table")
        for key, value in settings.limits.items():
            if key not in LIMIT_KEYS and key not in (TMPFS_SIZE_KEY, MEMORY_KEY):
                names = sorted([*LIMIT_KEYS, TMPFS_SIZE_KEY, MEMORY_KEY])
                raise ValueError(f"unknown [sandbox] limit {key!r}; known: {names}")
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"[sandbox] limits.{key} must be a whole number >= 0")
        return settings

    def effective_limits(self) -> dict[str, int]:
        """:data:`DEFAULT_LIMITS` overlaid with :attr:`limits` (0: no limit)."""
        return {**DEFAULT_LIMITS, **self.limits}

    def allowed_env(self, host_env: Mapping[str, str]) -> dict[str, str]:
        """The variables of ``host_env`` that :attr:`env_allow` lets through
        (secret-looking names never)."""
        out: dict[str, str] = {}
        for name, value in host_env.items():
            if looks_secret(name):
                continue
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in self.env_allow):
                out[name] = value
        return out

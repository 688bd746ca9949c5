"""Sandbox settings for processes tools start (bubblewrap on Linux).

This module holds the settings and their resolution; the process runner
(:mod:`toolwire.host.runner`) applies them to every process a tool starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["SandboxSettings", "SandboxUnavailable", "resolve_sandbox"]

SandboxMode = Literal["auto", "bwrap", "none"]

DEFAULT_ENV_ALLOW = ("PATH", "HOME", "LANG", "TERM")
"""Environment variables passed to sandboxed processes by default."""


class SandboxUnavailable(RuntimeError):
    """``--sandbox bwrap`` was asked for but bubblewrap cannot run here."""


@dataclass
class SandboxSettings:
    """What ``--sandbox`` and the ``[sandbox]`` table of ``toolwire.toml`` configure.

    Attributes:
        mode: "auto" (bubblewrap when it works, else unsandboxed, said loudly), "bwrap"
            (refuse to start without it) or "none".
        allow_network: give sandboxed processes the network.
        extra_ro_paths: more host paths visible read-only.
        extra_rw_paths: more host paths visible read-write.
        env_allow: environment variable names passed through (nothing else is).
        limits: resource limits applied inside the sandbox (see the runner for keys).
    """

    mode: SandboxMode = "auto"
    allow_network: bool = False
    extra_ro_paths: list[str] = field(default_factory=list)
    extra_rw_paths: list[str] = field(default_factory=list)
    env_allow: list[str] = field(default_factory=lambda: list(DEFAULT_ENV_ALLOW))
    limits: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_table(cls, table: dict[str, Any], mode: str | None = None) -> SandboxSettings:
        """Build from a ``[sandbox]`` TOML table; ``mode`` (from the command line) wins.

        Raises:
            ValueError: an unknown key or a value of the wrong type.
        """
        known = {f for f in cls.__dataclass_fields__}
        unknown = set(table) - known
        if unknown:
            raise ValueError(f"unknown [sandbox] settings: {sorted(unknown)}")
        settings = cls(**table)
        if mode is not None:
            settings.mode = mode  # type: ignore[assignment]
        if settings.mode not in ("auto", "bwrap", "none"):
            raise ValueError(f"sandbox mode must be auto, bwrap or none, not {settings.mode!r}")
        return settings


@dataclass
class Sandbox:
    """The sandbox as resolved on this machine.

    Attributes:
        settings: what was asked for.
        active: whether processes will really run inside bubblewrap.
        reason: why it is not active (empty when active).
    """

    settings: SandboxSettings
    active: bool = False
    reason: str = ""

    def describe(self) -> str:
        """One sentence for logs and ``initialize``'s instructions."""
        if self.active:
            net = "with" if self.settings.allow_network else "without"
            return f"Commands run sandboxed (bubblewrap, {net} network)."
        if self.settings.mode == "none":
            return "Commands run unsandboxed (sandbox disabled)."
        return f"WARNING: commands run UNSANDBOXED: {self.reason}"


def resolve_sandbox(settings: SandboxSettings) -> Sandbox:
    """Decide whether the sandbox can be used here.

    Raises:
        SandboxUnavailable: mode is "bwrap" and bubblewrap cannot run.
    """
    if settings.mode == "none":
        return Sandbox(settings, active=False, reason="disabled")
    reason = "sandboxing is not implemented yet"
    if settings.mode == "bwrap":
        raise SandboxUnavailable(f"--sandbox bwrap: {reason}")
    return Sandbox(settings, active=False, reason=reason)

"""The execution environment tools act in: :class:`ExecEnv` (root, working directory,
default timeout, extra environment variables, sandbox).

Every file tool resolves its paths against it (:mod:`.paths`) and every process a tool
starts runs in it (:mod:`.commands`); a handler reaches it as ``ctx.env``
(:class:`toolwire.host.tools.context.ToolContext`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .bubblewrap import Sandbox

__all__ = ["ExecEnv"]


@dataclass
class ExecEnv:
    """The execution environment tools act in.

    Attributes:
        root: the directory tools may touch (a resolved, absolute real path). File
            tools refuse paths whose real path leaves it.
        cwd: the directory relative paths and commands start from (inside ``root``).
        default_timeout: seconds a shell command may run when its call gives no
            timeout; None means no limit.
        extra_env: extra environment variables for processes tools start (added to,
            or in a sandbox to the allowed part of, the host's environment).
        sandbox: the sandbox processes run in (None: not configured, run directly).
    """

    root: Path
    cwd: Path
    default_timeout: float | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    sandbox: Sandbox | None = None

    @classmethod
    def at(cls, root: str | Path, **kwargs: Any) -> ExecEnv:
        """An environment rooted at ``root`` (resolved), with cwd = root."""
        real = Path(root).expanduser().resolve()
        return cls(root=real, cwd=real, **kwargs)

    def resolve(self, path: str, *, must_exist: bool = False) -> Path:
        """Resolve a tool's path argument to a real path inside :attr:`root`.

        The one path-resolution rule every file tool uses (see
        :func:`toolwire.host.sandbox.paths.resolve_path`).

        Raises:
            toolwire.host.sandbox.paths.PathError: the path leaves the root, or (with
                ``must_exist``) does not exist.
        """
        from .paths import resolve_path

        return resolve_path(self, path, must_exist=must_exist)

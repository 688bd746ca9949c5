"""The one path-resolution rule every file tool uses.

A tool's path argument is normalised (a leading ``@`` stripped, Unicode spaces made
plain, ``~`` expanded), made absolute against the environment's cwd, and resolved to
its real path with every symlink followed. The real path must lie inside the root;
anything else — ``..`` climbing out, an absolute path elsewhere, a symlink pointing
out — is refused with :class:`PathError`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import ExecEnv

__all__ = ["PathError", "normalize_path_argument", "resolve_path"]

_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")


class PathError(ValueError):
    """A path argument that cannot be used: outside the root, or missing when required."""


def normalize_path_argument(path: str) -> str:
    """Normalise a model-written path: strip one leading ``@``, map Unicode spaces
    (U+00A0, U+2000–U+200A, U+202F, U+205F, U+3000) to U+0020, expand ``~``."""
    if path.startswith("@"):
        path = path[1:]
    path = _UNICODE_SPACES.sub(" ", path)
    if path == "~" or path.startswith("~/"):
        path = os.path.expanduser(path)
    return path


def resolve_path(env: ExecEnv, path: str, *, must_exist: bool = False) -> Path:
    """Resolve ``path`` for a tool acting in ``env``.

    Args:
        env: the execution environment (root and cwd).
        path: the argument as the model wrote it; relative to ``env.cwd``.
        must_exist: also refuse a path that does not exist.

    Returns:
        The absolute real path, inside ``env.root``.

    Raises:
        PathError: empty path, a real path outside the root, or a missing path when
            ``must_exist`` is set.
    """
    if not isinstance(path, str) or not path.strip():
        raise PathError("Path must be a non-empty string")
    if "\x00" in path:
        raise PathError("Path contains a NUL byte")
    cleaned = normalize_path_argument(path)
    candidate = Path(cleaned)
    if not candidate.is_absolute():
        candidate = env.cwd / candidate
    real = Path(os.path.realpath(candidate))
    root = env.root
    if real != root and root not in real.parents:
        raise PathError(
            f"Path {path!r} resolves to {real}, which is outside the root {root}; "
            "tools may only touch files inside the root"
        )
    if must_exist and not os.path.lexists(real):
        raise PathError(f"Path not found: {path}")
    return real

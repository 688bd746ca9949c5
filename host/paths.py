"""The one path-resolution rule every file tool uses.

A tool's path argument is normalised (a leading ``@`` stripped, Unicode spaces made
plain, ``~`` expanded), made absolute against the environment's cwd, and resolved to
its real path with every symlink followed. The real path must lie inside the root;
anything else — ``..`` climbing out, an absolute path elsewhere, a symlink pointing
out — is refused with :class:`PathError`. Symlinks inside the root are followed only
while they stay inside: one whose target lies outside the root is refused even when
the rest of the path would lead back in.

Resolving is a check on names; the file tools also check what they actually opened
(see :mod:`toolwire.host.builtins._common`), so a path swapped for a symlink between
the check and the use is still refused.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import ExecEnv

__all__ = [
    "PathError",
    "is_inside",
    "normalize_path_argument",
    "path_variants",
    "resolve_output_file",
    "resolve_path",
    "resolve_read_path",
]

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
    return _resolve_clean(env, normalize_path_argument(path), path, must_exist=must_exist)


def _resolve_clean(env: ExecEnv, cleaned: str, path: str, *, must_exist: bool) -> Path:
    """:func:`resolve_path` for an argument already normalised (``path`` is for messages)."""
    candidate = Path(cleaned)
    if not candidate.is_absolute():
        candidate = env.cwd / candidate
    root = env.root
    real = Path(_resolve_beneath(str(root), str(candidate), path))
    if not is_inside(real, root):
        raise PathError(
            f"Path {path!r} resolves to {real}, which is outside the root {root}; "
            "tools may only touch files inside the root"
        )
    if must_exist and not os.path.lexists(real):
        raise PathError(f"Path not found: {path}")
    return real


_MAX_SYMLINKS = 40
"""Symlinks followed in one path before it is refused (as the kernel's ELOOP)."""


def is_inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """True when ``path`` is ``root`` or lies below it (both absolute, compared as
    names: resolve them first)."""
    p, r = os.fspath(path), os.fspath(root)
    return p == r or p.startswith(r.rstrip("/") + "/")


def _resolve_beneath(root: str, candidate: str, shown: str) -> str:
    """``os.path.realpath(candidate)``, refusing a symlink that lies inside ``root`` and
    whose own real target lies outside it.

    Symlinks outside the root (on the way to it) are followed freely; the caller checks
    that the final path is inside. Missing components resolve by name, as realpath does.

    Raises:
        PathError: such a symlink, or more than :data:`_MAX_SYMLINKS` symlinks.
    """
    pending = list(reversed(candidate.split("/")))
    current = "/"
    links = 0
    while pending:
        comp = pending.pop()
        if comp in ("", "."):
            continue
        if comp == "..":
            current = os.path.dirname(current)
            continue
        nxt = os.path.join(current, comp)
        try:
            st = os.lstat(nxt)
        except OSError:
            current = nxt
            continue
        if not stat.S_ISLNK(st.st_mode):
            current = nxt
            continue
        links += 1
        if links > _MAX_SYMLINKS:
            raise PathError(f"Path {shown!r} has too many levels of symbolic links")
        target = os.readlink(nxt)
        if is_inside(current, root):
            real_target = os.path.realpath(nxt)
            if not is_inside(real_target, root):
                raise PathError(
                    f"Path {shown!r} goes through the symlink {nxt} -> {target}, which "
                    f"leads to {real_target}, outside the root {root}; tools may only "
                    "touch files inside the root"
                )
        if target.startswith("/"):
            current = "/"
        pending.extend(reversed(target.split("/")))
    return current


_AM_PM = re.compile(r" ([AP]M)\.")


def path_variants(path: str) -> list[str]:
    """Spellings to try when a file to read is missing, as macOS names screenshots.

    In order: U+202F (narrow no-break space) before ``AM.``/``PM.``; the NFD form;
    ``'`` as U+2019; NFD with U+2019. The first item is ``path`` itself; duplicates
    are dropped.
    """
    ampm = _AM_PM.sub("\u202f\\1.", path)
    nfd = unicodedata.normalize("NFD", path)
    curly = path.replace("'", "\u2019")
    out: list[str] = []
    for v in (path, ampm, nfd, curly, unicodedata.normalize("NFD", curly)):
        if v not in out:
            out.append(v)
    return out


def resolve_read_path(env: ExecEnv, path: str) -> Path:
    """Resolve a path a tool reads: like :func:`resolve_path` with ``must_exist``, but
    when the file is missing, also try the :func:`path_variants` spellings (after the
    usual normalisation, which turned U+202F into a plain space).

    Raises:
        PathError: outside the root, or missing under every spelling.
    """
    first = resolve_path(env, path)
    if os.path.lexists(first):
        return first
    cleaned = normalize_path_argument(path)
    for variant in path_variants(cleaned)[1:]:
        try:
            real = _resolve_clean(env, variant, path, must_exist=False)
        except PathError:
            continue
        if os.path.lexists(real):
            return real
    raise PathError(f"File not found: {path}")


# ------------------------------------------------ bash's full-output files (read-only)


def resolve_output_file(path: str) -> Path | None:
    """The one allowance outside the root, for tools that only read (read, grep): when
    ``path`` is the absolute path of a full-output file of this host (the path a
    truncated bash answer names; see :mod:`toolwire.host.outputs`), its real path;
    otherwise None, and the usual rule applies. Open the file beneath its directory
    (``path.parent``), never beneath the root. Tools that write never call this."""
    from .outputs import output_file

    return output_file(path)

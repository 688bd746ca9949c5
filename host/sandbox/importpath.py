"""Keep the root (what the model can write) off the host's import path.

Python puts one directory first on ``sys.path`` at start: the current directory for
``python -m`` and ``-c``, the script's directory for a script or console script (the
venv's ``bin``). A host started in its root would then import a ``PIL/__init__.py`` or
``orjson.py`` the model wrote there instead of the installed package, at its next lazy
import and at every start. Every launcher therefore starts the host with ``python -P``
and ``PYTHONSAFEPATH=1`` (Python 3.11, "safe path"), and the host's entry points call
:func:`scrub_import_path` before anything else, to hold even when started another way.

Standard library only, and nothing imported lazily: it runs before the path is clean.
"""

from __future__ import annotations

import os
import site
import sys

TYPE_CHECKING = False  # typing is not imported yet at this point of a start-up
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "SAFE_PATH_ENV",
    "installation_dirs",
    "root_from_argv",
    "scrub_at_entry",
    "scrub_import_path",
]

SAFE_PATH_ENV = "PYTHONSAFEPATH"
"""The environment variable that keeps Python from prepending the working directory or
the script's directory to ``sys.path`` (the same as ``python -P``)."""


def _real(path: str) -> str:
    return os.path.realpath(path)


def _inside(path: str, top: str) -> bool:
    """Whether the real path ``path`` is ``top`` or below it (both real, absolute)."""
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def installation_dirs() -> list[str]:
    """Real paths of the interpreter's installation: its prefixes (a venv's and the base
    interpreter's) and the user site-packages. Entries below them stay on ``sys.path``
    even inside the root (a project's own ``.venv``), except the scripts directory."""
    dirs = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    if site.ENABLE_USER_SITE:
        user = site.getusersitepackages()
        if isinstance(user, str):
            dirs.append(user)
    out: list[str] = []
    for d in dirs:
        real = _real(d)
        if real not in out:
            out.append(real)
    return out


def root_from_argv(argv: Sequence[str]) -> str | None:
    """The value of ``--root`` in ``toolwire serve`` arguments (last one wins), or None.

    A cheap pre-parse that runs before argparse, so the root is off the path before
    any import the argument parsing may trigger; the launcher scrubs again with the
    root it finally resolved (a ``--config`` file may set it).
    """
    root: str | None = None
    it = iter(argv)
    for arg in it:
        if arg == "--":
            break
        if arg == "--root":
            root = next(it, None)
        elif arg.startswith("--root="):
            root = arg.partition("=")[2]
    return root or None


def scrub_import_path(
    roots: Iterable[str | os.PathLike[str]] = (),
    *,
    drop_implicit_first: bool = False,
) -> list[str]:
    """Remove every ``sys.path`` entry through which the root could provide a module.

    Removed: relative entries (``''``, ``'.'``: they follow the working directory), the
    working directory itself, and every entry inside one of ``roots`` (a root included)
    that is not part of the interpreter's installation (:func:`installation_dirs`; its
    scripts directory, which holds no packages, is never kept). With ``drop_implicit_first``, also the entry Python
    itself put first (the script's or working directory) when the interpreter ran
    without ``-P`` / ``PYTHONSAFEPATH``: call it so only at the very start of a process.

    Args:
        roots: directories the tools can write (the host's root).
        drop_implicit_first: see above; only for a process entry point.

    Returns:
        The removed entries, in their former order.
    """
    cwd = _real(os.getcwd())
    tops = [_real(os.fspath(r)) for r in roots]
    keep = installation_dirs()
    scripts = {_real(os.path.dirname(sys.executable)), _real(os.path.join(sys.prefix, "bin"))}
    removed: list[str] = []
    entries = list(sys.path)
    if drop_implicit_first and not sys.flags.safe_path and entries:
        removed.append(entries.pop(0))
    kept: list[str] = []
    for entry in entries:
        if not isinstance(entry, str) or not os.path.isabs(entry):
            removed.append(entry)
            continue
        real = _real(entry)
        installed = real not in scripts and any(_inside(real, k) for k in keep)
        if real == cwd or (not installed and any(_inside(real, t) for t in tops)):
            removed.append(entry)
            continue
        kept.append(entry)
    if removed:
        sys.path[:] = kept
    return removed


def scrub_at_entry(argv: Sequence[str]) -> list[str]:
    """The first thing a host process does (``python -m toolwire.host``, ``toolwire
    serve``): :func:`scrub_import_path` with the root named by ``--root`` in ``argv``
    (default: the working directory) and the entry Python put first; then
    ``PYTHONSAFEPATH`` is dropped from the environment, so the processes the tools
    start (a ``python script.py`` importing its neighbours) do not inherit it.

    Returns:
        The removed ``sys.path`` entries.
    """
    root = root_from_argv(argv)
    removed = scrub_import_path(
        [root if root is not None else os.getcwd()], drop_implicit_first=True
    )
    os.environ.pop(SAFE_PATH_ENV, None)
    return removed

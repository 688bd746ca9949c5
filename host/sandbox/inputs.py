"""Host inputs: the files the host reads to configure or load itself, out of the tools' reach.

A host started as ``toolwire serve --root . --config toolwire.toml --tools shout.py``
reads, at its next start, files that lie inside the root its tools may write. Whoever
can change them (the model, through ``write``/``edit`` or a sandboxed command) would
choose the next host's sandbox, its tools and the code it runs. One rule covers them
all (SECURITY.md, "Host inputs"): every *host input* is protected as the host's own
installation is:

* ``write`` and ``edit`` refuse it, naming why (:func:`check_not_host_input`);
* it is mounted read-only inside the sandbox, also where it lies inside the root
  (:attr:`toolwire.host.sandbox.bubblewrap.Sandbox.protected_paths`);
* Python code from outside the interpreter's installation is compiled from its source,
  never from a ``__pycache__`` or a bare ``.pyc`` the sandbox could have written
  (:func:`source_only_imports`);
* a configured bubblewrap must be trustworthy (:func:`bwrap_problem`);
* where one lies inside the root, the host says so at start (:meth:`HostInputs.notice`).

The host inputs (:func:`toolwire.host.serve.inputs_collect.collect`): the ``--config`` file and the paths it names (its
``tools`` and ``[sandbox] bwrap``); every ``--tools`` file, with the Python modules and
packages beside it (what the module can import) and that directory's ``__pycache__``,
and any *new* module name there (a ``write`` of ``requests.py`` beside the tools file
would shadow the installed package at the next start); the package directory (or
module file and its ``__pycache__``) of a ``--tools`` module name or of an entry
point's module. With ``--reload`` the watched files are among them.

Standard library only (and :mod:`.importpath`): the path rules and the sandbox import it.
What a host's inputs are is decided by :mod:`.inputs_collect`.
"""

from __future__ import annotations

import contextlib
import importlib.machinery
import logging
import os
import stat
import sys
import threading
import types
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = [
    "HostInput",
    "HostInputs",
    "InputError",
    "activate",
    "bwrap_problem",
    "check_not_host_input",
    "configured_bwrap_refusal",
    "deactivate",
    "source_only_imports",
]

log = logging.getLogger("toolwire.inputs")

_IMPORT_SUFFIXES = tuple(
    dict.fromkeys(
        [
            *importlib.machinery.SOURCE_SUFFIXES,
            *importlib.machinery.BYTECODE_SUFFIXES,
            *importlib.machinery.EXTENSION_SUFFIXES,
            ".pth",
        ]
    )
)
"""File name endings Python imports code from (``.py``, ``.pyc``, ``.so``, ...)."""


class InputError(ValueError):
    """A path is a host input; the file tools never change it (the message says which)."""


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


@dataclass(frozen=True)
class HostInput:
    """One file or directory the host reads to configure or load itself.

    Attributes:
        path: its real, absolute path (it may not exist yet: a ``__pycache__``).
        what: what it is to the host, for messages (``the --config file``, ...).
    """

    path: str
    what: str


@dataclass
class HostInputs:
    """Every host input of one host (:func:`toolwire.host.serve.inputs_collect.collect`).

    Attributes:
        items: the files and directories, in the order found (no duplicates).
        import_dirs: directories a tools module imports its neighbours from (a
            ``--tools`` file's directory): a new module or package created there
            would be imported too, so those names are refused as well.
    """

    items: list[HostInput] = field(default_factory=list)
    import_dirs: list[str] = field(default_factory=list)

    def add(self, path: str | os.PathLike[str], what: str) -> None:
        """Add ``path`` (made absolute and real) unless it is there already."""
        real = os.path.realpath(os.path.abspath(os.fspath(path)))
        if not any(item.path == real for item in self.items):
            self.items.append(HostInput(real, what))

    def paths(self) -> list[str]:
        """The real paths of :attr:`items`."""
        return [item.path for item in self.items]

    def find(self, real: str, root: str | None = None) -> HostInput | None:
        """The host input ``real`` (a real, absolute path) is or lies in, or None. An
        input that contains ``root`` does not count (the root would be read-only)."""
        for item in self.items:
            if root is not None and _inside(root, item.path):
                continue
            if _inside(real, item.path):
                return item
        parent, name = os.path.split(real)
        for folder in self.import_dirs:
            if root is not None and _inside(root, os.path.join(folder, name)):
                continue
            grand, package = os.path.split(parent)
            if (parent == folder and name.endswith(_IMPORT_SUFFIXES)) or (
                grand == folder and package != "__pycache__" and name.startswith("__init__.")
            ):
                return HostInput(real, f"a module the tools in {folder} could import")
        return None

    def inside(self, places: Iterable[str]) -> list[HostInput]:
        """The inputs that exist and lie in one of ``places`` (real paths)."""
        tops = [os.path.realpath(p) for p in places]
        return [
            item
            for item in self.items
            if os.path.lexists(item.path) and any(_inside(item.path, t) for t in tops)
        ]

    def notice(self, root: str | os.PathLike[str]) -> str:
        """One sentence naming the inputs inside ``root`` (relative to it), or "" when
        none is: what the host prints at start and adds to its ``instructions``."""
        top = os.path.realpath(os.fspath(root))
        found = [i for i in self.inside([top]) if i.path != top]
        if not found:
            return ""
        shown = ", ".join(os.path.relpath(i.path, top) for i in found[:8])
        if len(found) > 8:
            shown += f" and {len(found) - 8} more"
        return (
            f"Host inputs inside the root ({shown}): the host reads them at its next "
            "start, so the file tools refuse to change them and they are read-only "
            "inside the sandbox."
        )


# ------------------------------------------------------------------ the active inputs

_lock = threading.Lock()
_active: list[HostInputs] = []


def activate(inputs: HostInputs) -> None:
    """Make ``inputs`` protected from the file tools of this process (until
    :func:`deactivate`)."""
    with _lock:
        _active.append(inputs)


def deactivate(inputs: HostInputs) -> None:
    """Undo :func:`activate` (a host that stopped serving)."""
    with _lock, contextlib.suppress(ValueError):
        _active.remove(inputs)


def check_not_host_input(
    root: str | os.PathLike[str], real: str | os.PathLike[str], shown: str
) -> None:
    """Refuse ``real`` (a real path) when it is, or lies in, an active host input.

    Raises:
        InputError: it is one; the message names what the host reads it as.
    """
    with _lock:
        active = list(_active)
    if not active:
        return
    top, path = os.path.realpath(os.fspath(root)), os.fspath(real)
    for inputs in active:
        item = inputs.find(path, top)
        if item is not None:
            raise InputError(
                f"Path {shown!r} is a host input ({item.what}): the host reads it when it "
                'starts, so the file tools never change it (SECURITY.md, "Host '
                'inputs"). Reading it is allowed.'
            )


# ------------------------------------------------------------------ a configured bwrap


def bwrap_problem(path: str, writable: Iterable[str | os.PathLike[str]] = ()) -> str:
    """Why the configured bubblewrap ``path`` cannot be trusted, or "" when it can.

    It is held to the rules of a system bubblewrap (:func:`toolwire.host.sandbox.bubblewrap.
    _trusted_program`), adapted to a path the user chose: the real file must not lie in
    one of ``writable`` (the root, ``extra_rw_paths``: places the tools can write); it
    and its directory must be owned by root (or, when the host does not run as root,
    by the host's own user) and writable by no group or other user; it must be an
    executable regular file.
    """
    real = os.path.realpath(path)
    for place in writable:
        top = os.path.realpath(os.fspath(place))
        if _inside(real, top):
            return f"{real} lies inside {top}, which the tools can write"
    euid = os.geteuid()
    owners = {0} if euid == 0 else {0, euid}
    for p in (real, os.path.dirname(real)):
        try:
            st = os.stat(p)
        except OSError as exc:
            return f"{p}: {exc.strerror or type(exc).__name__}"
        if st.st_uid not in owners:
            who = "root" if euid == 0 else "root or the host's user"
            return f"{p} is owned by uid {st.st_uid}, not by {who}"
        if st.st_mode & 0o022:
            return f"{p} is writable by its group or by other users"
    try:
        st = os.stat(real)
    except OSError as exc:  # pragma: no cover - stat'ed above
        return f"{real}: {exc.strerror}"
    if not stat.S_ISREG(st.st_mode) or not os.access(real, os.X_OK):
        return f"{real} is not an executable file"
    return ""


# ------------------------------------------------------------------ loading from source


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """A source file loader that compiles the source every time: it never reads, and
    never writes, a ``__pycache__`` entry."""

    def get_code(self, fullname: str) -> types.CodeType:
        """The module's code, compiled from its source file."""
        return self.source_to_code(self.get_data(self.path), self.path)


_hook_lock = threading.Lock()
_hook_installed = False


def _trusted_dirs() -> list[str]:
    """Where cached bytecode may still be used: the interpreter's installation and the
    ``toolwire`` packages (read-only to the tools: SECURITY.md)."""
    from .importpath import installation_dirs

    dirs = list(installation_dirs())
    with contextlib.suppress(ImportError, AttributeError):
        import toolwire

        dirs.extend(os.path.realpath(p) for p in toolwire.__path__)
    return dirs


def source_only_imports() -> None:
    """From now on, compile every module this process imports from outside
    :func:`_trusted_dirs` from its source: a path hook gives such directories a finder
    whose loaders are :class:`SourceOnlyLoader` and the extension loader (bare ``.pyc``
    files are not imported at all), and no bytecode is written
    (``sys.dont_write_bytecode``). Idempotent."""
    global _hook_installed
    sys.dont_write_bytecode = True
    with _hook_lock:
        if _hook_installed:
            return
        trusted = _trusted_dirs()

        def hook(entry: str) -> importlib.machinery.FileFinder:
            real = os.path.realpath(entry or os.getcwd())
            if not os.path.isdir(real) or any(_inside(real, t) for t in trusted):
                raise ImportError("not a directory the source-only finder handles")
            return importlib.machinery.FileFinder(
                entry,
                (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
                (SourceOnlyLoader, importlib.machinery.SOURCE_SUFFIXES),
            )

        sys.path_hooks.insert(0, hook)
        for entry in list(sys.path_importer_cache):
            real = os.path.realpath(entry) if isinstance(entry, str) else ""
            if real and not any(_inside(real, t) for t in trusted):
                del sys.path_importer_cache[entry]
        _hook_installed = True


def configured_bwrap_refusal(
    bwrap: str | None, mode: str, writable: Iterable[str | os.PathLike[str]]
) -> str:
    """Why the host must not start with the configured bubblewrap ``bwrap`` (the
    whole message), or "" when it may: :func:`bwrap_problem` judged against
    ``writable`` (the root and ``extra_rw_paths``), before anything runs it, even the
    sandbox probe. Nothing to check in sandbox ``mode`` "none", without a configured
    path, or for a path where nothing exists (the sandbox reports bubblewrap missing).
    """
    if bwrap is None or mode == "none" or not os.path.exists(bwrap):
        return ""
    problem = bwrap_problem(bwrap, writable)
    if not problem:
        return ""
    return (
        f"toolwire serve: [sandbox] bwrap is not trusted: {problem}. A configured "
        "bubblewrap must lie outside the root and every place the tools can write, "
        "and it and its directory must be owned by root (or the host's user) and "
        "writable by nobody else; refusing to start"
    )

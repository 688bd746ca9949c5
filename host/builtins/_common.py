"""Helpers the built-in tools share: safe opening of regular files, ripgrep lookup, paths."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio

from ..results import ToolError
from ..tools import tool

__all__ = [
    "GlobMatcher",
    "atomic_write",
    "builtin_tool",
    "display_path",
    "file_kind",
    "file_lock",
    "find_rg",
    "open_regular",
    "read_regular",
]

MAX_READ_FILE_BYTES = 512 * 1024 * 1024
"""Largest file read/edit loads into memory (512 MiB); bigger ones are refused."""


def file_kind(mode: int) -> str:
    """A short name for the kind of file ``mode`` describes ("directory", "FIFO", ...)."""
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISREG(mode):
        return "regular file"
    return "special file"


def open_regular(path: Path, shown: str) -> int:
    """Open ``path`` read-only, refusing anything but a regular file, without blocking.

    The file is opened with ``O_NONBLOCK`` (opening a FIFO never waits for a writer)
    and checked with ``fstat`` on the open descriptor, so a file swapped for a FIFO
    between a check and the open is still refused. Returns the descriptor.

    Raises:
        ToolError: missing, a directory, FIFO, device or socket, or over
            :data:`MAX_READ_FILE_BYTES`.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ToolError(f"File not found: {shown}") from None
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from None
    _check_regular(st.st_mode, shown)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as exc:
        raise ToolError(f"Cannot read {shown}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        _check_regular(st.st_mode, shown)
        if st.st_size > MAX_READ_FILE_BYTES:
            raise ToolError(
                f"{shown} is {st.st_size} bytes, more than the {MAX_READ_FILE_BYTES} bytes "
                "this tool loads; use bash (head, sed -n, grep) to look at parts of it"
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_regular(mode: int, shown: str) -> None:
    if stat.S_ISREG(mode):
        return
    kind = file_kind(mode)
    if stat.S_ISDIR(mode):
        raise ToolError(f"{shown} is a directory, not a file; use ls to list it")
    raise ToolError(f"{shown} is a {kind}, not a regular file; refusing to read it")


def read_regular(path: Path, shown: str) -> bytes:
    """The whole content of the regular file ``path`` (see :func:`open_regular`)."""
    fd = open_regular(path, shown)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def find_rg() -> str | None:
    """The ripgrep executable: on PATH, else the one installed beside this Python
    (the PyPI ``ripgrep`` wheel puts it in the venv's bin directory)."""
    found = shutil.which("rg")
    if found:
        return found
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return None


def display_path(real: Path, cwd: Path) -> str:
    """``real`` relative to ``cwd`` when inside it, else absolute (POSIX form)."""
    try:
        rel = real.relative_to(cwd)
    except ValueError:
        return real.as_posix()
    return rel.as_posix() or "."


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def atomic_write(path: Path, data: bytes, shown: str) -> bool:
    """Replace ``path``'s content with ``data`` atomically; returns True when created.

    Parent directories are created. The bytes go to a temporary file in the same
    directory, which is fsynced, given the existing file's mode (and owner, when
    permitted) or the umask's default for a new file, then renamed over ``path``;
    the directory is fsynced too. Readers see the old or the new content, never a
    mix.

    Raises:
        ToolError: ``path`` exists and is not a regular file, or an OS error.
    """
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{shown} is a {file_kind(st.st_mode)}, not a regular file; not writing it")
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ToolError(f"Cannot write {shown}: a parent path is not a directory") from None
    except OSError as exc:
        raise ToolError(f"Cannot create the directory for {shown}: {exc.strerror or exc}") from None
    mode = stat.S_IMODE(st.st_mode) if st is not None else (0o666 & ~_umask())
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}") from None
    try:
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fchmod(fd, mode)
            if st is not None:
                with contextlib.suppress(OSError):
                    os.fchown(fd, st.st_uid, st.st_gid)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise ToolError(f"Cannot write {shown}: {exc.strerror or exc}") from None
        raise
    with contextlib.suppress(OSError):
        dfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    return st is None


class _FileLock:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = anyio.Lock()
        self.users = 0


_file_locks: dict[str, _FileLock] = {}


@contextlib.asynccontextmanager
async def file_lock(path: Path) -> AsyncIterator[None]:
    """Serialise changes to one file: calls holding the lock for the same real path
    run one after another in arrival order; different files proceed in parallel."""
    key = str(path)
    entry = _file_locks.get(key)
    if entry is None:
        entry = _file_locks[key] = _FileLock()
    entry.users += 1
    try:
        async with entry.lock:
            yield
    finally:
        entry.users -= 1
        if entry.users == 0:
            _file_locks.pop(key, None)


def _glob_part(glob: str) -> str:
    out: list[str] = []
    i = 0
    n = len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                if glob.startswith("**/", i):
                    out.append("(?:.*/)?")
                    i += 3
                else:
                    out.append(".*")
                    i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            close = glob.find("]", j)
            if close < 0:
                raise ValueError(f"unclosed '[' at position {i} in glob {glob!r}")
            body = glob[i + 1 : close]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            body = body.replace("\\", "\\\\").replace("^", "\\^")
            out.append(f"[^/{body}]" if negate else f"[{body}]")
            i = close
        elif c == "{":
            close = glob.find("}", i)
            if close < 0:
                raise ValueError(f"unclosed '{{' at position {i} in glob {glob!r}")
            alts = glob[i + 1 : close].split(",")
            out.append("(?:" + "|".join(_glob_part(a) for a in alts) + ")")
            i = close
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


class GlobMatcher:
    """A gitignore-style glob as ripgrep's ``--glob`` reads it, matched in Python.

    ``*`` and ``?`` stay inside one path component, ``**`` crosses them, ``[...]``
    and ``{a,b}`` work as in globs. A glob without ``/`` matches the file name in
    any directory; one with ``/`` matches the whole relative path. A leading ``!``
    inverts the match.

    Raises:
        ValueError: a malformed glob (an unclosed ``[`` or ``{``).
    """

    def __init__(self, glob: str) -> None:
        self.glob = glob
        self.negate = glob.startswith("!")
        g = glob[1:] if self.negate else glob
        g = g.removeprefix("./").rstrip("/")
        self.basename_only = "/" not in g
        g = g.lstrip("/")
        if not g:
            raise ValueError(f"empty glob {glob!r}")
        self.regex = re.compile(_glob_part(g), re.DOTALL)

    def __call__(self, rel_path: str) -> bool:
        """True when ``rel_path`` (POSIX, relative to the searched directory) matches."""
        subject = rel_path.rsplit("/", 1)[-1] if self.basename_only else rel_path
        hit = self.regex.fullmatch(subject) is not None
        return hit != self.negate


_F = TypeVar("_F", bound=Callable[..., Any])


def builtin_tool(**options: Any) -> Callable[[_F], _F]:
    """``@tool(**options)`` with a type that keeps the decorated function's signature
    (``tool`` itself is typed as returning Any)."""
    return cast(Callable[[_F], _F], tool(**options))

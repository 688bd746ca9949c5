"""Helpers the built-in tools share: safe opening of regular files, ripgrep lookup, paths."""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import secrets
import stat
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio.from_thread

from ..sandbox.paths import PathError, check_not_installation, is_inside, open_directory
from ..tools.decorator import tool
from ..tools.results import ToolError

if TYPE_CHECKING:
    from ..tools.context import ToolContext

__all__ = [
    "GlobMatcher",
    "LineSplitter",
    "atomic_write",
    "builtin_tool",
    "check_cancelled",
    "check_opened_inside",
    "commit_point",
    "display_path",
    "file_kind",
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


def _opened_path(fd: int) -> str:
    """The path the kernel has for an open descriptor (``/proc/self/fd``)."""
    return os.readlink(f"/proc/self/fd/{fd}")


def check_opened_inside(fd: int, within: Path | None, shown: str) -> None:
    """Refuse a descriptor whose real path is outside ``within`` (a directory or link
    on the way was swapped after the path was checked). The message does not say
    where the descriptor leads."""
    if within is None:
        return
    try:
        actual = _opened_path(fd)
    except OSError:
        return  # no /proc: the name check already done is all there is
    if not is_inside(actual, within):
        raise ToolError(
            f"{shown} changed while it was being opened and now leads outside the root; refusing it"
        )


def _refusal(exc: PathError) -> ToolError:
    return ToolError(str(exc))


def open_regular(path: Path, shown: str, within: Path | None = None) -> int:
    """Open ``path`` read-only, refusing anything but a regular file, without blocking.

    With ``within`` (the root), ``path`` must be a real path inside it as
    :func:`toolwire.host.sandbox.paths.resolve_path` returns it: its directory is opened
    relative to a descriptor of the root without following any symlink
    (:func:`toolwire.host.sandbox.paths.open_directory`), and the file relative to that.
    The file is opened with ``O_NONBLOCK`` (opening a FIFO never waits for a writer)
    and ``O_NOFOLLOW``, after an ``lstat`` and checked again with ``fstat`` on the open
    descriptor, so a file swapped for a FIFO or a symlink between a check and the
    open is still refused. Returns the descriptor.

    Raises:
        ToolError: missing, a directory, FIFO, device, socket or symlink, outside
            ``within``, or over :data:`MAX_READ_FILE_BYTES`.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY | os.O_NOFOLLOW
    dfd: int | None = None
    name: str = os.fspath(path)
    try:
        if within is not None:
            if path == within:
                raise ToolError(f"{shown} is a directory, not a file; use ls to list it")
            dfd = open_directory(within, path.parent, shown=shown)
            name = path.name
        st = os.stat(name, dir_fd=dfd, follow_symlinks=within is None)
        if stat.S_ISLNK(st.st_mode):
            raise ToolError(f"{shown} became a symlink while it was being opened")
        _check_regular(st.st_mode, shown)
        fd = os.open(name, flags, dir_fd=dfd)
    except PathError as exc:
        raise _refusal(exc) from None
    except FileNotFoundError:
        raise ToolError(f"File not found: {shown}") from None
    except NotADirectoryError:
        raise ToolError(f"File not found: {shown} (a part of it is not a directory)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolError(f"{shown} became a symlink while it was being opened") from None
        raise ToolError(f"Cannot read {shown}: {exc.strerror or type(exc).__name__}") from None
    finally:
        if dfd is not None:
            os.close(dfd)
    try:
        st = os.fstat(fd)
        _check_regular(st.st_mode, shown)
        check_opened_inside(fd, within, shown)
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


def read_regular(path: Path, shown: str, within: Path | None = None) -> bytes:
    """The whole content of the regular file ``path`` (see :func:`open_regular`)."""
    fd = open_regular(path, shown, within)
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


TRUSTED_RG_DIRS = ("/usr/bin", "/bin")
"""System directories searched for a distribution's ``rg`` (never ``PATH``)."""


@functools.cache
def find_rg() -> str | None:
    """The ripgrep executable, resolved once per process.

    A system ``rg`` in :data:`TRUSTED_RG_DIRS` comes first (maintained by the
    distribution); else the one the PyPI ``ripgrep`` wheel installed in this Python's
    scripts directory (``sysconfig``'s ``scripts`` path, or beside ``sys.executable``).
    ``PATH`` is never searched: an entry of it may lie inside the root, where the
    model can plant an ``rg`` of its own. Returns an absolute path, or None.
    """
    candidates = [Path(d, "rg") for d in TRUSTED_RG_DIRS]
    candidates.append(Path(sysconfig.get_path("scripts"), "rg"))
    candidates.append(Path(sys.executable).parent / "rg")
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
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


def check_cancelled() -> None:
    """In a worker thread started by ``anyio.to_thread.run_sync``: raise the
    cancellation exception when the call that started it was cancelled (by the
    client, or by the call's timeout, which the executor runs as a cancel scope).
    Outside such a thread it does nothing. Call it at points where stopping leaves
    nothing half-done."""
    try:
        anyio.from_thread.check_cancelled()
    except RuntimeError:  # not in a worker thread (a direct call, a unit test)
        return


def commit_point(ctx: ToolContext) -> Callable[[], None]:
    """The ``before_commit`` of :func:`atomic_write` for a call of a tool: in the
    worker thread, just before the rename, it stops the call when it was cancelled or
    timed out (nothing is changed), and otherwise commits it (:meth:`ToolContext.commit`,
    run on the event loop, so no cancellation can slip in between the check and the
    decision): from then on the call is answered with its result, whatever cancellation
    arrives (protocol.md §5).

    Raises (from the returned function):
        the cancellation exception: the call was cancelled or timed out.
        ToolError: it was cancelled in a way the thread cannot raise (nothing changed).
    """

    def before_commit() -> None:
        check_cancelled()
        try:
            committed = anyio.from_thread.run_sync(ctx.commit)
        except RuntimeError:  # not in a worker thread (a direct call, a unit test)
            committed = ctx.commit()
        if not committed:
            check_cancelled()
            raise ToolError("The call was cancelled before the change was made; nothing changed")

    return before_commit


def atomic_write(
    path: Path,
    data: bytes,
    shown: str,
    within: Path | None = None,
    before_commit: Callable[[], None] | None = None,
) -> bool:
    """Replace ``path``'s content with ``data`` atomically; returns True when created.

    Missing parent directories are created. With ``within`` (the root), ``path`` must
    be a real path inside it as :func:`toolwire.host.sandbox.paths.resolve_path` returns it:
    the directory is opened, and missing ones created, one component at a time
    relative to a descriptor of the root, never following a symlink
    (:func:`toolwire.host.sandbox.paths.open_directory`); a name that became a symlink after
    the check is refused and nothing is created through it. The opened directory
    must not be part of the host's own installation
    (:func:`toolwire.host.sandbox.paths.check_not_installation`, checked on the kernel's path
    of the open directory). Everything after works relative to that open directory:
    the bytes go to a new temporary file there (``O_EXCL | O_NOFOLLOW``), which is
    fsynced, given the existing file's mode (and owner, when permitted) or the umask's
    default for a new file, then renamed over the name; the directory is fsynced too.
    Readers see the old or the new content, never a mix. A hard link's other names
    keep the old content (the name gets a new file). ``before_commit`` (e.g.
    :func:`check_cancelled`) runs just before the rename; when it raises, the
    temporary file is removed and the file is left as it was.

    Raises:
        ToolError: ``path`` exists and is not a regular file (a symlink included), a
            directory on the way changed or leads outside ``within``, the path is in
            the host's installation, or an OS error.
    """
    if within is None:
        if path.is_dir() and not path.is_symlink():
            raise ToolError(f"{shown} is a directory; give the path of a file to write")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise ToolError(f"Cannot write {shown}: a parent path is not a directory") from None
        except OSError as exc:
            raise ToolError(
                f"Cannot create the directory for {shown}: {exc.strerror or type(exc).__name__}"
            ) from None
    elif path == within:
        raise ToolError(f"{shown} is a directory; give the path of a file to write")
    try:
        if within is None:
            dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        else:
            dfd = open_directory(within, path.parent, shown=shown, create=True, listable=True)
    except PathError as exc:
        raise _refusal(exc) from None
    except (FileExistsError, NotADirectoryError):
        raise ToolError(f"Cannot write {shown}: a parent path is not a directory") from None
    except OSError as exc:
        raise ToolError(f"Cannot write {shown}: {exc.strerror or type(exc).__name__}") from None
    try:
        check_opened_inside(dfd, within, shown)
        if within is not None:
            with contextlib.suppress(OSError):
                opened = os.path.join(_opened_path(dfd), path.name)
                try:
                    check_not_installation(within, opened, shown)
                except PathError as exc:
                    raise _refusal(exc) from None
        return _write_in(dfd, path.name, data, shown, before_commit)
    finally:
        os.close(dfd)


def _temporary_name(name: str) -> str:
    return f".{name}.{secrets.token_hex(4)}.tmp"


def _open_temporary(dfd: int, name: str, shown: str) -> tuple[int, str | None]:
    """A new file in the directory ``dfd`` for the bytes of ``name``, mode 0600:
    ``(fd, None)`` for an unnamed file (``O_TMPFILE``: until it is linked it has no
    name, so no listing shows it and a host killed meanwhile leaves nothing behind);
    ``(fd, tmp)`` for a file named ``tmp`` where the file system has no ``O_TMPFILE``.

    Raises:
        ToolError: no file can be created there.
    """
    tmpfile = getattr(os, "O_TMPFILE", 0)
    if tmpfile and os.path.exists("/proc/self/fd"):
        try:
            fd = os.open(".", os.O_WRONLY | tmpfile | os.O_CLOEXEC, 0o600, dir_fd=dfd)
            return fd, None
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL):
                raise ToolError(
                    f"Cannot write {shown}: {exc.strerror or type(exc).__name__}"
                ) from None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(100):
        tmp = _temporary_name(name)
        try:
            return os.open(tmp, flags, 0o600, dir_fd=dfd), tmp
        except FileExistsError:
            continue
        except OSError as exc:
            raise ToolError(f"Cannot write {shown}: {exc.strerror or type(exc).__name__}") from None
    raise ToolError(f"Cannot write {shown}: no free temporary name")


def _link_unnamed(fd: int, dfd: int, name: str, *, new_file: bool) -> str:
    """Give the unnamed file ``fd`` (complete, fsynced) a name in ``dfd``: ``name``
    itself for a new file (returns ""), else a temporary name to rename over ``name``
    at once (returned). ``linkat`` through ``/proc/self/fd`` needs no privilege.

    Raises:
        OSError: the link failed.
    """
    source = f"/proc/self/fd/{fd}"
    if new_file:
        try:
            os.link(source, name, dst_dir_fd=dfd, follow_symlinks=True)
            return ""
        except FileExistsError:
            pass  # created meanwhile: replace it like an existing file
    for _ in range(100):
        tmp = _temporary_name(name)
        try:
            os.link(source, tmp, dst_dir_fd=dfd, follow_symlinks=True)
            return tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name")


def _write_in(
    dfd: int, name: str, data: bytes, shown: str, before_commit: Callable[[], None] | None = None
) -> bool:
    try:
        st: os.stat_result | None = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise ToolError(f"Cannot write {shown}: {exc.strerror or type(exc).__name__}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{shown} is a directory; give the path of a file to write")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{shown} is a {file_kind(st.st_mode)}, not a regular file; not writing it")
    mode = stat.S_IMODE(st.st_mode) if st is not None else (0o666 & ~_umask())
    fd, tmp = _open_temporary(dfd, name, shown)
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
            if before_commit is not None:
                before_commit()
            if tmp is None:
                tmp = _link_unnamed(fd, dfd, name, new_file=st is None)
        finally:
            os.close(fd)
        if tmp:
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException as exc:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
        if isinstance(exc, OSError):
            raise ToolError(f"Cannot write {shown}: {exc.strerror or type(exc).__name__}") from None
        raise
    with contextlib.suppress(OSError):
        os.fsync(dfd)
    return st is None


MAX_GLOB_CHARS = 4096
"""Longest glob (in characters) find and grep accept."""

MAX_GLOB_STATES = 1 << 16
"""Most matcher positions a glob may expand to (its length times its ``{a,b}``
alternatives); a glob over this is refused as too complex."""

_LIT, _ONE, _CLASS, _STAR, _GSTAR = range(5)
_MASK_CACHE_CHARS = 4096


@dataclass(frozen=True)
class _Atom:
    """One position of a glob: a literal character, ``?``, a ``[...]`` class,
    ``*`` (any run inside one path component) or ``**`` (any run at all)."""

    kind: int
    char: str = ""
    negate: bool = False
    ranges: tuple[tuple[str, str], ...] = ()

    def class_accepts(self, c: str) -> bool:
        inside = any(lo <= c <= hi for lo, hi in self.ranges)
        return (not inside and c != "/") if self.negate else inside


_STAR_ATOM = _Atom(_STAR)
_GSTAR_ATOM = _Atom(_GSTAR)
_ONE_ATOM = _Atom(_ONE)


def _class_atom(body: str) -> _Atom:
    negate = body[:1] in ("!", "^")
    if negate:
        body = body[1:]
    ranges: list[tuple[str, str]] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            if body[i] > body[i + 2]:
                raise ValueError(f"reversed character range {body[i : i + 3]!r} in a glob")
            ranges.append((body[i], body[i + 2]))
            i += 3
        else:
            ranges.append((body[i], body[i]))
            i += 1
    return _Atom(_CLASS, negate=negate, ranges=tuple(ranges))


def _glob_pieces(glob: str) -> list[list[list[_Atom]]]:
    """``glob`` as a sequence of pieces, each a list of alternative atom runs
    (one run for a plain atom; several for ``{a,b}`` and for ``**/``, which is
    either nothing or ``**`` then ``/``)."""
    pieces: list[list[list[_Atom]]] = []
    i = 0
    n = len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                if glob.startswith("**/", i):
                    pieces.append([[], [_GSTAR_ATOM, _Atom(_LIT, "/")]])
                    i += 3
                else:
                    pieces.append([[_GSTAR_ATOM]])
                    i += 2
                continue
            pieces.append([[_STAR_ATOM]])
        elif c == "?":
            pieces.append([[_ONE_ATOM]])
        elif c == "[":
            j = i + 1
            if j < n and glob[j] in "!^":
                j += 1
            if j < n and glob[j] == "]":
                j += 1
            close = glob.find("]", j)
            if close < 0:
                raise ValueError(f"unclosed '[' at position {i} in glob {glob!r}")
            pieces.append([[_class_atom(glob[i + 1 : close])]])
            i = close
        elif c == "{":
            close = glob.find("}", i)
            if close < 0:
                raise ValueError(f"unclosed '{{' at position {i} in glob {glob!r}")
            options: list[list[_Atom]] = []
            for alt in glob[i + 1 : close].split(","):
                options.extend(_expand(_glob_pieces(alt)))
            pieces.append(options)
            i = close
        elif c == "\\" and i + 1 < n:
            i += 1
            pieces.append([[_Atom(_LIT, glob[i])]])
        else:
            pieces.append([[_Atom(_LIT, c)]])
        i += 1
    return pieces


def _expand(pieces: list[list[list[_Atom]]]) -> list[list[_Atom]]:
    """Every alternative run the pieces spell, stopping at :data:`MAX_GLOB_STATES`."""
    count = 1
    for options in pieces:
        count *= len(options)
        if count > MAX_GLOB_STATES:
            raise ValueError("the glob has too many {a,b} alternatives")
    out: list[list[_Atom]] = []
    states = 0
    for combo in itertools.product(*pieces):
        run = [atom for part in combo for atom in part]
        states += len(run) + 1
        if states > MAX_GLOB_STATES:
            raise ValueError("the glob is too complex (too long or too many alternatives)")
        out.append(run)
    return out


def _collapse_stars(run: list[_Atom]) -> list[_Atom]:
    """Merge neighbouring stars (``*`` next to ``**`` is ``**``): a run of stars
    matches what its widest member matches."""
    out: list[_Atom] = []
    for atom in run:
        if atom.kind in (_STAR, _GSTAR) and out and out[-1].kind in (_STAR, _GSTAR):
            if atom.kind == _GSTAR:
                out[-1] = atom
            continue
        out.append(atom)
    return out


class GlobMatcher:
    """A gitignore-style glob as ripgrep's ``--glob`` reads it, matched in linear time.

    ``*`` and ``?`` stay inside one path component, ``**`` crosses them, ``[...]``
    and ``{a,b}`` work as in globs. A glob without ``/`` matches the file name in
    any directory; one with ``/`` matches the whole relative path. A leading ``!``
    inverts the match.

    Matching simulates the glob's automaton over all positions at once (a bit set
    per character), so one match costs O(len(path) × positions) with no
    backtracking: ``*a*a*a*a*a*b`` against a long name is as cheap as ``*.py``.

    Raises:
        ValueError: a malformed glob (an unclosed ``[`` or ``{``), one over
            :data:`MAX_GLOB_CHARS` characters, or one expanding to over
            :data:`MAX_GLOB_STATES` positions.
    """

    def __init__(self, glob: str) -> None:
        if len(glob) > MAX_GLOB_CHARS:
            raise ValueError(f"the glob is {len(glob)} characters, over {MAX_GLOB_CHARS}")
        self.glob = glob
        self.negate = glob.startswith("!")
        g = glob[1:] if self.negate else glob
        g = g.removeprefix("./").rstrip("/")
        self.basename_only = "/" not in g
        g = g.lstrip("/")
        if not g:
            raise ValueError(f"empty glob {glob!r}")
        start = accept = stars = not_slash = any_char = 0
        literals: dict[str, int] = {}
        classes: list[tuple[int, _Atom]] = []
        bit = 0
        for run in _expand(_glob_pieces(g)):
            start |= 1 << bit
            for atom in _collapse_stars(run):
                b = 1 << bit
                if atom.kind == _LIT:
                    literals[atom.char] = literals.get(atom.char, 0) | b
                elif atom.kind == _CLASS:
                    classes.append((b, atom))
                elif atom.kind == _GSTAR:
                    any_char |= b
                    stars |= b
                else:
                    not_slash |= b
                    if atom.kind == _STAR:
                        stars |= b
                bit += 1
            accept |= 1 << bit
            bit += 1
        self._stars = stars
        self._accept = accept
        self._init = start | ((start & stars) << 1)
        self._literals = literals
        self._classes = classes
        self._not_slash = not_slash
        self._any = any_char
        self._masks: dict[str, int] = {}

    def _mask(self, c: str) -> int:
        """The positions that consume character ``c``."""
        m = self._literals.get(c, 0) | self._any
        if c != "/":
            m |= self._not_slash
        for b, atom in self._classes:
            if atom.class_accepts(c):
                m |= b
        if len(self._masks) < _MASK_CACHE_CHARS:
            self._masks[c] = m
        return m

    def matches(self, subject: str) -> bool:
        """True when the glob (without its ``!``) matches all of ``subject``."""
        stars = self._stars
        masks = self._masks
        state = self._init
        for c in subject:
            m = masks.get(c)
            if m is None:
                m = self._mask(c)
            moved = state & m
            moved = ((moved & ~stars) << 1) | (moved & stars)
            if not moved:
                return False
            state = moved | ((moved & stars) << 1)
        return bool(state & self._accept)

    def __call__(self, rel_path: str) -> bool:
        """True when ``rel_path`` (POSIX, relative to the searched directory) matches."""
        subject = rel_path.rsplit("/", 1)[-1] if self.basename_only else rel_path
        return self.matches(subject) != self.negate


class LineSplitter:
    """Splits streamed text into lines at ``"\n"``, holding little of it.

    A line longer than ``max_chars`` is cut to its first ``max_chars`` characters
    (the rest is dropped, never buffered), so a single huge line costs no more
    than ``max_chars`` of memory.
    """

    def __init__(self, max_chars: int = 1 << 16) -> None:
        self.max_chars = max_chars
        self._parts: list[str] = []
        self._size = 0

    def _add(self, piece: str) -> None:
        room = self.max_chars - self._size
        if room > 0 and piece:
            piece = piece[:room]
            self._parts.append(piece)
            self._size += len(piece)

    def _take(self) -> str:
        line = "".join(self._parts)
        self._parts = []
        self._size = 0
        return line

    def feed(self, text: str) -> list[str]:
        """The lines ``text`` completes (without their ``"\n"``)."""
        pieces = text.split("\n")
        if len(pieces) == 1:
            self._add(text)
            return []
        self._add(pieces[0])
        out = [self._take()]
        out.extend(p[: self.max_chars] for p in pieces[1:-1])
        self._add(pieces[-1])
        return out

    def close(self) -> list[str]:
        """The last, unterminated line (if any)."""
        line = self._take()
        return [line] if line else []


_F = TypeVar("_F", bound=Callable[..., Any])


def builtin_tool(**options: Any) -> Callable[[_F], _F]:
    """``@tool(**options)`` with a type that keeps the decorated function's signature
    (``tool`` itself is typed as returning Any)."""
    return cast(Callable[[_F], _F], tool(**options))

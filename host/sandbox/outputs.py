"""Full-output files: where bash keeps the whole output of a command whose answer was cut.

One directory per host process, ``<tmp>/toolwire-<uid>/host-<pid>-<start>/`` (``<tmp>`` is
:func:`tempfile.gettempdir`: ``$TMPDIR`` or ``/tmp``; ``<start>`` is the process's start
time from ``/proc/<pid>/stat``, so a reused pid is never mistaken for the owner):

* the per-user parent and the host's directory are mode 0700, files mode 0600; a parent
  that is a symlink, owned by another user or open to others is refused and a private
  ``mkdtemp`` directory used instead;
* the model can open the files it is told about: ``read`` and ``grep`` accept exactly the
  files of this directory, read-only (:func:`output_file`), and the sandbox binds the
  directory read-only at the same path (:func:`sandbox_ro_paths`), so bash inside the box
  can ``cat`` it too;
* the files of one host take at most :data:`TOTAL_CAP_BYTES` together: a new file that
  needs room removes the oldest finished ones first; a file that still does not fit
  stops growing (its answer then says how much was kept);
* the directory is removed when the host exits (:func:`remove_directory`, called by the
  launcher on every way out and registered with :mod:`atexit`), and a host sweeps, at
  start, the directories of hosts of the same user that were killed before they could
  (:func:`sweep_stale`; only those whose owning process is gone).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import stat
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path

__all__ = [
    "TOTAL_CAP_BYTES",
    "OutputStore",
    "output_file",
    "remove_directory",
    "sandbox_ro_paths",
    "store",
    "sweep_stale",
    "temp_dir_problem",
]

log = logging.getLogger("toolwire.outputs")

TOTAL_CAP_BYTES = 256 << 20
"""Most bytes all full-output files of one host take together (256 MiB)."""

_PREFIX = "host-"


def _start_time(pid: int) -> str | None:
    """Field 22 of ``/proc/<pid>/stat`` (start time in clock ticks since boot), or None
    when the process does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else None


def _private_dir(path: str) -> bool:
    """True when ``path`` is a real directory (no symlink) owned by this user, mode 0700."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == os.geteuid()
        and stat.S_IMODE(st.st_mode) & 0o077 == 0
    )


def _user_parent(tmp: str | None = None) -> str | None:
    """``<tmp>/toolwire-<uid>``, created 0700 if missing; None when it exists but is not
    private to this user (a symlink, another owner, open permissions)."""
    parent = os.path.join(tmp or tempfile.gettempdir(), f"toolwire-{os.geteuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(parent, 0o700)
    if not _private_dir(parent):
        log.warning("%s is not a private directory of this user; not using it", parent)
        return None
    return parent


class OutputStore:
    """The full-output files of one host process.

    Args:
        tmp: the temporary directory to use (default :func:`tempfile.gettempdir`).
        cap: most bytes of all files together (default :data:`TOTAL_CAP_BYTES`).
    """

    def __init__(self, tmp: str | None = None, cap: int = TOTAL_CAP_BYTES) -> None:
        self.tmp = tmp
        self.cap = cap
        self._dir: str | None = None
        self._lock = threading.Lock()
        self._sizes: OrderedDict[str, int] = OrderedDict()  # oldest first
        self._open: set[str] = set()

    @property
    def used(self) -> int:
        """Bytes the files take now."""
        with self._lock:
            return sum(self._sizes.values())

    def existing_directory(self) -> str | None:
        """The directory, if it was created (and not removed) by this process."""
        d = self._dir
        return d if d is not None and os.path.isdir(d) else None

    def directory(self) -> str:
        """The host's directory, created (mode 0700) on first use.

        Raises:
            OSError: it cannot be created.
        """
        with self._lock:
            if self._dir is not None and os.path.isdir(self._dir):
                return self._dir
            pid = os.getpid()
            name = f"{_PREFIX}{pid}-{_start_time(pid) or '0'}"
            parent = _user_parent(self.tmp)
            if parent is None:
                path = tempfile.mkdtemp(prefix=f"toolwire-{name}-", dir=self.tmp)
            else:
                path = os.path.join(parent, name)
                with contextlib.suppress(FileExistsError):
                    os.mkdir(path, 0o700)
                if not _private_dir(path):
                    path = tempfile.mkdtemp(prefix=f"toolwire-{name}-", dir=self.tmp)
            self._dir = os.path.realpath(path)
            return self._dir

    def create(self) -> tuple[int, str]:
        """A new empty file (mode 0600) in the directory, open for writing.

        Returns:
            ``(fd, path)``; the caller writes through :meth:`reserve` and calls
            :meth:`close` with the path when done.

        Raises:
            OSError: the file cannot be created.
        """
        fd, path = tempfile.mkstemp(prefix="bash-", suffix=".log", dir=self.directory())
        with self._lock:
            self._sizes[path] = 0
            self._open.add(path)
        return fd, path

    def reserve(self, path: str, n: int) -> bool:
        """Account ``n`` more bytes for ``path``; False when they do not fit under the cap
        even after removing the oldest finished files (then write nothing)."""
        with self._lock:
            total = sum(self._sizes.values())
            if total + n > self.cap:
                for old in list(self._sizes):
                    if total + n <= self.cap:
                        break
                    if old == path or old in self._open:
                        continue
                    total -= self._sizes.pop(old)
                    with contextlib.suppress(OSError):
                        os.unlink(old)
            if total + n > self.cap:
                return False
            self._sizes[path] = self._sizes.get(path, 0) + n
            return True

    def close(self, path: str) -> None:
        """``path`` is complete (it may now be removed to make room for newer files)."""
        with self._lock:
            self._open.discard(path)

    def discard(self, path: str) -> None:
        """Remove ``path`` and forget it."""
        with self._lock:
            self._open.discard(path)
            self._sizes.pop(path, None)
        with contextlib.suppress(OSError):
            os.unlink(path)

    def remove(self) -> None:
        """Remove the directory and every file in it (safe to call more than once)."""
        with self._lock:
            d, self._dir = self._dir, None
            self._sizes.clear()
            self._open.clear()
        if d is not None:
            shutil.rmtree(d, ignore_errors=True)


store = OutputStore()
"""This process's full-output files."""


def remove_directory() -> None:
    """Remove this process's full-output directory (at host exit)."""
    store.remove()


atexit.register(remove_directory)


def sandbox_ro_paths() -> list[str]:
    """Directories the sandbox binds read-only at the same path: this host's
    full-output directory, once it exists."""
    d = store.existing_directory()
    return [d] if d is not None else []


def output_file(path: str) -> Path | None:
    """The real path when ``path`` (absolute, as an answer names it) is a regular file of
    this host's full-output directory, else None. Read-only tools use this to open the
    files they are pointed to; nothing may write there."""
    if not isinstance(path, str) or not os.path.isabs(path):
        return None
    d = store.existing_directory()
    if d is None:
        return None
    real = os.path.realpath(path)
    if os.path.dirname(real) != d:
        return None
    try:
        st = os.lstat(real)
    except OSError:
        return None
    return Path(real) if stat.S_ISREG(st.st_mode) else None


def temp_dir_problem() -> str | None:
    """None when the host has a temporary directory it can write (:mod:`tempfile`'s
    choice among ``$TMPDIR``, ``/tmp``, ``/var/tmp``, ``/usr/tmp`` and the working
    directory); otherwise why not and what to do, for the start-up error (a container
    with a read-only root filesystem and no volume at ``/tmp`` is the usual cause)."""
    try:
        tempfile.gettempdir()
    except FileNotFoundError:
        tmpdir = os.environ.get("TMPDIR")
        named = f"$TMPDIR ({tmpdir}), " if tmpdir else ""
        return (
            f"no writable temporary directory: {named}/tmp, /var/tmp, /usr/tmp and the "
            "working directory are missing or not writable by this user. Give the host "
            "one: in a container with a read-only root filesystem, a volume at /tmp (an "
            "emptyDir in Kubernetes, --tmpfs /tmp for docker run)."
        )
    return None


def sweep_stale(tmp: str | None = None) -> int:
    """Remove the full-output directories of this user's hosts whose process is gone
    (killed before they could clean up). Returns how many were removed."""
    parent = os.path.join(tmp or tempfile.gettempdir(), f"toolwire-{os.geteuid()}")
    if not _private_dir(parent):
        return 0
    removed = 0
    try:
        names = os.listdir(parent)
    except OSError:
        return 0
    for name in names:
        if not name.startswith(_PREFIX):
            continue
        pid_s, _, start = name[len(_PREFIX) :].partition("-")
        if not pid_s.isdigit():
            continue
        live = _start_time(int(pid_s))
        if live is not None and live == start:
            continue  # its host is still running
        shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
        removed += 1
    return removed

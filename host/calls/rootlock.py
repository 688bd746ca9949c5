"""Locks on a root's files that hold across host processes (and machines).

The per-file mutation queue (:mod:`.mutation`) orders the calls of one host process. Two
hosts may still work on one root: two editor windows on one project each start their own
host over stdio, or two pods mount one shared volume. So every call of a tool that
declares ``mutates`` (the built-in ``write`` and ``edit`` among them) also holds a POSIX
advisory write lock for each path it changes, taken once the queue has granted its turn
(so the order inside one host is the queue's, as before) and released once the handler
has returned (the built-in tools fsync the file and its directory before that, so the
write is durable when the next host's turn begins).

Where the lock lives, and why there:

* Not on the file itself: ``write`` and ``edit`` replace a file by renaming a new one
  over it (:func:`toolwire.host.builtins._common.atomic_write`), so a lock held on the old
  inode would not exclude a host that opens the new one; and a file that does not exist
  yet has no inode to lock.
* Not one lock file per path: those could never be removed safely (a waiter may hold the
  unlinked inode) and would pile up in the root, one per file ever written.
* One lock file, ``<root>/.toolwire/lock`` (empty; ``.toolwire/.gitignore`` says ``*`` so
  version control ignores the directory), with one byte per path locked by ``fcntl``
  record locks: the byte at :func:`lock_offset` of the path relative to the root. Relative,
  so hosts that mount the shared volume at different places agree. It sits in the root
  because the root is the one place every host of that root reaches, on the root's file
  system: NFS (v3 with lockd, v4) and other file systems with POSIX record locks carry
  the lock between machines.

The locks are Linux's open file description locks (``F_OFD_SETLKW``) where the platform has
them: owned by the open file, not the process, so two calls in one host exclude each other
like two hosts do, and another ``open``/``close`` of the lock file in the host (a ``read``
of ``.toolwire/lock``) cannot drop them, as it would drop classic process-owned ``fcntl``
locks (the fallback elsewhere). Each call opens the lock file, locks its bytes and closes
it; a host that crashes or is killed closes it too, and the kernel releases its locks.

Deadlock: a call locks its bytes in ascending offset order (a list of paths, whatever
order it names them in, is locked in that one global order), and it takes them only
after it holds all its places in the in-process queue, and waits on nothing else while
it holds them; so no cycle of waits can form, within one host or across hosts. Two paths
whose offsets collide (62-bit hashes) merely share a lock.

Not covered: hosts whose roots differ (one nested in the other) use different lock files
and do not exclude each other; writes by anything other than these tools (a shell
command, an editor) are not locked at all. Advisory locks bind only those who take them.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import struct
import threading
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import anyio
import anyio.to_thread

__all__ = ["LOCK_DIR", "LOCK_NAME", "RootLockError", "hold_root_locks", "lock_offset"]

LOCK_DIR = ".toolwire"
"""The directory, directly in the root, holding the lock file."""

LOCK_NAME = "lock"
"""The lock file's name in :data:`LOCK_DIR`."""

_OFD_SETLKW: int | None = getattr(fcntl, "F_OFD_SETLKW", None)
_FLOCK = "@hhqqi4x"  # struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid
_LIMITER = anyio.CapacityLimiter(256)
"""Threads blocked waiting for another host's lock (one per file being waited for)."""


class RootLockError(OSError):
    """The lock file could not be created or locked; the message says which file and why."""


def lock_offset(relative: str) -> int:
    """The byte of the lock file that stands for ``relative`` (a path relative to the
    root, ``/``-separated as the file system gives it): the first 62 bits of its SHA-256,
    so ``offset + 1`` stays within a signed 64-bit ``off_t``."""
    digest = hashlib.sha256(os.fsencode(relative)).digest()
    return int.from_bytes(digest[:8], "big") >> 2


def _open_lock_file(root: Path) -> int:
    """Open (creating when missing) ``root/.toolwire/lock`` for writing; never follows a
    symlink at ``.toolwire`` or ``lock``, so nothing outside the root is opened."""
    nofollow = os.O_NOFOLLOW | os.O_CLOEXEC
    rfd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        created = False
        try:
            os.mkdir(LOCK_DIR, 0o777, dir_fd=rfd)
            created = True
        except FileExistsError:
            pass
        dfd = os.open(LOCK_DIR, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=rfd)
        try:
            if created:
                with contextlib.suppress(FileExistsError):
                    gfd = os.open(
                        ".gitignore",
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow,
                        0o666,
                        dir_fd=dfd,
                    )
                    try:
                        os.write(
                            gfd, b"# toolwire's cross-host file locks (README, Deploying)\n*\n"
                        )
                    finally:
                        os.close(gfd)
            return os.open(LOCK_NAME, os.O_RDWR | os.O_CREAT | nofollow, 0o666, dir_fd=dfd)
        finally:
            os.close(dfd)
    finally:
        os.close(rfd)


def _lock_byte(fd: int, offset: int) -> None:
    """Wait for and take a write lock on the byte ``offset`` of ``fd`` (EINTR retried)."""
    while True:
        try:
            if _OFD_SETLKW is not None:
                fcntl.fcntl(
                    fd, _OFD_SETLKW, struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
                )
            else:
                fcntl.lockf(fd, fcntl.LOCK_EX, 1, offset, os.SEEK_SET)
            return
        except InterruptedError:
            continue


class _Locking:
    """One call's lock file descriptor, shared by the call and the thread that locks."""

    def __init__(self) -> None:
        self.mutex = threading.Lock()
        self.fd: int | None = None
        self.abandoned = False
        self.done = False

    def acquire(self, root: Path, offsets: list[int]) -> None:
        """In a worker thread: open the lock file and lock every offset, in order. When
        the call was given up meanwhile, release at once (close the descriptor)."""
        fd = _open_lock_file(root)
        with self.mutex:
            self.fd = fd
        try:
            for offset in offsets:
                _lock_byte(fd, offset)
        finally:
            with self.mutex:
                self.done = True
                if self.abandoned:
                    self._close()

    def give_up(self) -> None:
        """The call is over (finished, failed or cancelled): release what is held now, or,
        while the thread still waits, as soon as it stops waiting."""
        with self.mutex:
            self.abandoned = True
            if self.done or self.fd is None:
                self._close()

    def _close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _relative(key: str, root: Path) -> str:
    try:
        return os.path.relpath(key, root)
    except ValueError:
        return key


@contextlib.asynccontextmanager
async def hold_root_locks(root: Path, keys: Iterable[str]) -> AsyncIterator[None]:
    """Hold the cross-process write lock of every real path in ``keys`` (inside ``root``,
    as :func:`toolwire.host.calls.mutation.mutation_keys` gives them) for the body.

    Waits, in a thread, while another host (or another call of this one whose path shares
    a byte) holds one of them; cancellable while waiting. Released when the body ends,
    and by the kernel when the process dies.

    Raises:
        RootLockError: the lock file cannot be created or opened (a read-only root, no
            permission), or the file system refuses record locks (``ENOLCK``, e.g. NFS
            without a lock manager).
    """
    offsets = sorted({lock_offset(_relative(k, root)) for k in keys})
    if not offsets:
        yield
        return
    locking = _Locking()
    try:
        try:
            await anyio.to_thread.run_sync(
                locking.acquire, root, offsets, abandon_on_cancel=True, limiter=_LIMITER
            )
        except OSError as exc:
            where = os.path.join(root, LOCK_DIR, LOCK_NAME)
            reason = exc.strerror or errno.errorcode.get(exc.errno or 0, str(exc))
            raise RootLockError(f"cannot lock {where}: {reason}") from None
        yield
    finally:
        locking.give_up()

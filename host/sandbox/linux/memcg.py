"""Memory cgroups: one memory limit per sandboxed command and per worker process.

An rlimit bounds address space per process, and ``tmpfs_size`` bounds each tmpfs mount,
but neither counts what a process keeps in a ``memfd``, in shared memory or in files on
a tmpfs, nor the sum over the processes of one command. The kernel's memory controller
does: it charges anonymous memory, page cache and shmem/tmpfs pages (memfd included) to
the cgroup of the process that touched them, and when a group's charge reaches its limit
and cannot be reclaimed, its own OOM killer ends a process of that group only
(Documentation/admin-guide/cgroup-v2.rst "Memory"; cgroup-v1/memory.rst).

:func:`find_memory_cgroup` looks once, at start-up, for a place where this process may
create memory cgroups: its own group of a cgroup v1 ``memory`` hierarchy, or its own
cgroup v2 group when ``memory`` is in that group's ``cgroup.subtree_control`` (as root,
or in a subtree delegated to this user). The sandbox (:mod:`.sandbox`) then makes one
group per command and per worker with :meth:`MemoryCgroups.create` and, once the process
is gone, asks :func:`oom_kills` whether the kernel killed something there.

In each group, swap is limited as well (v1 ``memory.memsw.limit_in_bytes`` equal to the
limit, v2 ``memory.swap.max`` 0), so swapping cannot stretch the limit; on v2
``memory.oom.group`` makes the OOM killer end the whole group, not one process of it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "MEMORY_KEY",
    "MemoryCgroups",
    "exceeded_message",
    "find_memory_cgroup",
    "format_bytes",
    "oom_kills",
]

log = logging.getLogger("toolwire.sandbox")

MEMORY_KEY = "memory"
"""The ``[sandbox.limits]`` key: bytes of memory per command and per worker process."""

GROUP_PREFIX = "toolwire-"
"""Names of the groups the host creates (shared with the pids groups' sweep)."""


def format_bytes(value: int) -> str:
    """``value`` bytes in the largest whole binary unit, e.g. ``512 MiB``, ``3 bytes``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if value >= 1 << shift and value % (1 << shift) == 0:
            return f"{value >> shift} {unit}"
    return f"{value} bytes"


def exceeded_message(limit: int) -> str:
    """The words an error result uses for a process the memory limit ended, e.g.
    ``it exceeded the memory limit of 512 MiB ([sandbox.limits] memory)``."""
    return f"it exceeded the memory limit of {format_bytes(limit)} ([sandbox.limits] memory)"


@dataclass(frozen=True)
class MemoryCgroups:
    """Where this host creates memory cgroups.

    Attributes:
        base: the directory of this process's own memory cgroup; groups are made below it
            (so they also stay within any limit of the host's own group).
        version: 1 (a cgroup v1 ``memory`` hierarchy) or 2 (the unified hierarchy).
    """

    base: str
    version: Literal[1, 2]

    def create(self, limit: int) -> str | None:
        """A new group below :attr:`base` limited to ``limit`` bytes (swap included),
        or None (logged) when it cannot be made."""
        path = os.path.join(self.base, f"{GROUP_PREFIX}{os.urandom(8).hex()}")
        try:
            os.mkdir(path)
        except OSError as exc:
            log.warning("cannot create a memory cgroup for a command: %s", exc)
            return None
        try:
            self.limit(path, limit)
        except OSError as exc:
            log.warning("cannot set the memory limit of a cgroup: %s", exc)
            with contextlib.suppress(OSError):
                os.rmdir(path)
            return None
        return path

    def limit(self, path: str, limit: int) -> None:
        """Limit the (empty) group ``path`` to ``limit`` bytes of memory, swap included,
        and (v2) make an OOM kill end the whole group.

        Raises:
            OSError: the memory limit cannot be written. A missing swap control (a kernel
                without swap accounting) is no error: there is no swap to stretch into.
        """
        if self.version == 1:
            _write(path, "memory.limit_in_bytes", limit)
            _write_if_present(path, "memory.memsw.limit_in_bytes", limit)
        else:
            _write(path, "memory.max", limit)
            _write_if_present(path, "memory.swap.max", 0)
            _write_if_present(path, "memory.oom.group", 1)


def _write(path: str, name: str, value: int) -> None:
    with open(os.path.join(path, name), "w", encoding="ascii") as f:
        f.write(str(value))


def _write_if_present(path: str, name: str, value: int) -> None:
    if os.path.exists(os.path.join(path, name)):
        _write(path, name, value)


def oom_kills(path: str) -> int:
    """How many processes the kernel's OOM killer ended in the group ``path`` because
    it reached its limit (v1 ``memory.oom_control``, v2 ``memory.events``: ``oom_kill``);
    0 when unknown."""
    for name in ("memory.events", "memory.oom_control"):
        try:
            with open(os.path.join(path, name), encoding="ascii") as f:
                text = f.read()
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                with contextlib.suppress(ValueError):
                    return int(value)
        return 0
    return 0


def _candidates() -> list[tuple[str, Literal[1, 2]]]:
    """This process's own group in each mounted hierarchy that has the memory
    controller: (directory, version)."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as f:
            lines = f.read().splitlines()
        with open("/proc/self/mounts", encoding="ascii") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return []
    out: list[tuple[str, Literal[1, 2]]] = []
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        for m in mounts:
            if len(m) < 4:
                continue
            if "memory" in controllers.split(",") and m[2] == "cgroup":
                if "memory" in m[3].split(","):
                    out.append((m[1] + rel, 1))
            elif controllers == "" and m[2] == "cgroup2":
                base = m[1] + rel
                try:
                    with open(os.path.join(base, "cgroup.subtree_control"), encoding="ascii") as f:
                        if "memory" in f.read().split():
                            out.append((base, 2))
                except OSError:
                    pass
    return out


def find_memory_cgroup() -> MemoryCgroups | None:
    """Where this process may create memory cgroups (a v1 ``memory`` hierarchy first,
    then v2), checked by creating, limiting and removing a probe group; None when
    nowhere (an ordinary user without a delegated subtree, or no memory controller)."""
    for base, version in _candidates():
        place = MemoryCgroups(os.path.normpath(base), version)
        probe = os.path.join(place.base, f"{GROUP_PREFIX}probe-{os.urandom(4).hex()}")
        try:
            os.mkdir(probe)
        except OSError:
            continue
        try:
            place.limit(probe, 64 << 20)
        except OSError:
            continue
        finally:
            with contextlib.suppress(OSError):
                os.rmdir(probe)
        if version == 2 and not os.access(os.path.join(place.base, "cgroup.procs"), os.W_OK):
            continue  # a process cannot be moved out of a group it may not write
        return place
    return None

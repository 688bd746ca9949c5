"""The per-file mutation queue: calls that change the same file run one at a time.

A tool declares the arguments holding paths it changes (``@tool(mutates=("path",))``;
the built-in ``write`` and ``edit`` do). Before such a call runs, the host takes one
lock per path, keyed by the real path (symlinks followed; for a missing file, the
resolved path it would have). Locks are FIFO, so calls on one file run in arrival
order; calls on different files run in parallel. Every ``tools/call`` and every batch
in the process shares one queue.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anyio

from .context import ExecEnv
from .paths import PathError

__all__ = ["MutationQueue", "mutation_keys"]


class _Entry:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        # fast_acquire: taking a free lock does not yield, so a call holding several
        # paths queues on all of them in its arrival order (a yield after its first
        # lock let a later call on its second path go first).
        self.lock = anyio.Lock(fast_acquire=True)
        self.users = 0


class MutationQueue:
    """FIFO locks keyed by real path; entries are dropped when no call holds or awaits them."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    @contextlib.asynccontextmanager
    async def hold(self, keys: Iterable[str]) -> AsyncIterator[None]:
        """Hold the locks of every key (taken in sorted order, so two calls touching the
        same files can never wait on each other)."""
        ordered = sorted(set(keys))
        entries = []
        for key in ordered:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry()
            entry.users += 1
            entries.append((key, entry))
        try:
            async with contextlib.AsyncExitStack() as stack:
                for _key, entry in entries:
                    await stack.enter_async_context(entry.lock)
                yield
        finally:
            for key, entry in entries:
                entry.users -= 1
                if entry.users == 0 and self._entries.get(key) is entry:
                    del self._entries[key]


def mutation_keys(names: Iterable[str], arguments: dict[str, Any], env: ExecEnv) -> list[str]:
    """The real paths named by the ``names`` arguments (strings or lists of strings).

    A path the environment refuses (outside the root, malformed) gives no key: the tool
    will refuse it itself.
    """
    keys: list[str] = []
    for name in names:
        value = arguments.get(name)
        values = value if isinstance(value, list) else [value]
        for v in values:
            if type(v) is not str:
                continue
            try:
                keys.append(os.fspath(env.resolve(v)))
            except (PathError, OSError, ValueError):
                continue
    return keys

"""The per-file mutation queue: calls that change the same file run one at a time.

A tool declares the arguments holding paths it changes (``@tool(mutates=("path",))``;
the built-in ``write`` and ``edit`` do). Before such a call runs, it takes its place in
one FIFO queue per path, keyed by the real path (symlinks followed; for a missing file,
the resolved path it would have), in all of them at once when it arrives, so calls on
one file run one at a time in arrival order (a call naming several paths too); calls
on different files run in parallel. Every ``tools/call`` and every batch
in the process shares one queue.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import AsyncIterator, Iterable
from typing import Any

import anyio

from ..sandbox.env import ExecEnv
from ..sandbox.paths import PathError

__all__ = ["MutationQueue", "mutation_keys"]


class _Entry:
    """The calls holding or awaiting one key, in arrival order (the first holds it)."""

    __slots__ = ("queue",)

    def __init__(self) -> None:
        self.queue: deque[anyio.Event] = deque()


class MutationQueue:
    """FIFO queues keyed by real path; entries are dropped when no call holds or awaits them."""

    def __init__(self) -> None:
        self._entries: dict[str, _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    @contextlib.asynccontextmanager
    async def hold(self, keys: Iterable[str]) -> AsyncIterator[None]:
        """Hold every key, each in arrival order.

        A call takes its place in the queue of every key at once, when it arrives (no
        await in between), then waits until it is first in each. Every call it waits for
        arrived before it, so calls touching the same files never wait on each other, and
        a call naming several paths cannot be overtaken on one of them by a later call
        (as taking one lock after the other allowed).
        """
        tickets: list[tuple[str, _Entry, anyio.Event]] = []
        for key in sorted(set(keys)):
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry()
            ticket = anyio.Event()
            entry.queue.append(ticket)
            tickets.append((key, entry, ticket))
        try:
            for _key, entry, ticket in tickets:
                if entry.queue[0] is not ticket:
                    await ticket.wait()  # set when the call ahead leaves
            yield
        finally:
            for key, entry, ticket in tickets:
                first = entry.queue[0] is ticket
                entry.queue.remove(ticket)
                if entry.queue:
                    if first:
                        entry.queue[0].set()
                elif self._entries.get(key) is entry:
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

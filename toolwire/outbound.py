"""Outbound requests of a :class:`~toolwire.session.Session`: their wait and their deadlines.

A request the session sent is a :class:`Pending` entry of the session, keyed by its id,
until its response comes (JSON-RPC 2.0 §5: the response carries the request's id), the
connection closes (-32000) or its deadline passes. :class:`OutboundRequest` is the
sender's handle on it; on a timeout or a cancellation of the wait, the session sends the
peer a cancellation in its dialect. :class:`Deadlines` keeps every deadline in one heap
watched by one task: cheaper per request than a cancel scope with a timer.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from .errors import REQUEST_TIMEOUT, JsonRpcError, RequestTimeout
from .messages import RequestId

if TYPE_CHECKING:
    from .session import Session

__all__ = ["Deadlines", "OutboundRequest", "Pending"]


class Pending:
    """An outbound request waiting for its response (or for its deadline, which sets
    ``event`` with ``timed_out``); ``event`` is a new one unless given."""

    __slots__ = ("error", "event", "finished", "on_set", "result", "timed_out")

    def __init__(self, event: anyio.Event | None = None) -> None:
        self.event = anyio.Event() if event is None else event
        self.on_set: Callable[[], None] | None = None
        self.result: Any = None
        self.error: JsonRpcError | None = None
        self.timed_out = False
        self.finished = False  # the requester stopped waiting (its deadline is moot)

    def set(self) -> None:
        """The wait is over (its answer, its deadline or the connection's end): set
        ``event`` and call ``on_set`` once (see :meth:`OutboundRequest.when_answered`)."""
        self.event.set()
        callback, self.on_set = self.on_set, None
        if callback is not None:
            callback()


class OutboundRequest:
    """A request sent by :meth:`Session.start_request` whose response is still to come.

    Attributes:
        id: the request's id.
    """

    __slots__ = ("_closed", "_pending", "_session", "_timeout", "_token", "id")

    def __init__(
        self,
        session: Session,
        id: RequestId,
        pending: Pending,
        timeout: float | None,
        token: RequestId | None,
    ) -> None:
        self._session = session
        self.id = id
        self._pending = pending
        self._timeout = timeout
        self._token = token
        self._closed = False

    async def wait(self, on_abandon: Callable[[anyio.Event], None] | None = None) -> Any:
        """Wait for the response; ``on_abandon`` and what is raised are as for
        :meth:`Session.request`. Call once."""
        session, pending, timeout = self._session, self._pending, self._timeout
        abandoned = False
        try:
            # An answer already in is taken without a turn of the event loop
            # (anyio's wait on an event that is set is a checkpoint): pipelined, most
            # are in by the time their requester asks.
            if not pending.event.is_set():
                await pending.event.wait()
            if pending.timed_out:
                session._send_cancel(self.id, f"timed out after {timeout}s")
                if on_abandon is not None and not session._closing:
                    abandoned = True  # the response still settles the entry
                    pending.event = anyio.Event()
                    on_abandon(pending.event)
                raise RequestTimeout(
                    REQUEST_TIMEOUT, f"Request timed out after {timeout}s", {"timeout": timeout}
                )
        except anyio.get_cancelled_exc_class():
            if not pending.event.is_set():
                session._send_cancel(self.id, "cancelled by caller")
                if on_abandon is not None and not session._closing:
                    abandoned = True  # the response still settles the entry
                    on_abandon(pending.event)
            raise
        finally:
            self._close(keep=abandoned)
        if pending.error is not None:
            raise pending.error
        return pending.result

    def when_answered(self, callback: Callable[[], None]) -> bool:
        """Have ``callback()`` called once when :meth:`wait` would no longer wait (the
        answer came, the deadline passed or the connection closed), from the event
        loop's thread. False, and nothing registered, when that is already so. One
        callback per request; it must not raise."""
        pending = self._pending
        if pending.event.is_set() or self._closed:
            return False
        pending.on_set = callback
        return True

    def abandon(self, on_abandon: Callable[[anyio.Event], None] | None = None) -> None:
        """Give up a request nobody will wait for: unless its response came, the
        cancellation is sent and ``on_abandon(event)`` is called as for :meth:`wait`."""
        if self._closed:
            return
        pending, session = self._pending, self._session
        keep = False
        if not pending.event.is_set() or pending.timed_out:
            session._send_cancel(self.id, "abandoned by the caller")
            if on_abandon is not None and not session._closing:
                keep = True
                if pending.timed_out:
                    pending.event = anyio.Event()
                on_abandon(pending.event)
        self._close(keep=keep)

    def _close(self, keep: bool) -> None:
        if self._closed:
            return
        self._closed = True
        session = self._session
        if not keep:
            session._pending.pop(self.id, None)
        if self._token is not None:
            session._progress_listeners.pop(self._token, None)
        if self._timeout is not None:
            self._pending.finished = True
            session._deadlines.timed -= 1


class Deadlines:
    """The deadlines of a session's outbound requests, (when, seq, pending) in a heap.

    Attributes:
        timed: requests with a deadline still waiting (their handle's close counts down).
    """

    __slots__ = ("_earlier", "_heap", "_seq", "timed")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Pending]] = []
        self.timed = 0
        self._seq = 0
        self._earlier = anyio.Event()

    def __len__(self) -> int:
        """Entries in the heap, those of requests no longer waiting included."""
        return len(self._heap)

    def add(self, timeout: float, pending: Pending) -> None:
        """Time ``pending`` out ``timeout`` seconds from now (anyio's clock)."""
        when = anyio.current_time() + timeout
        heap = self._heap
        self.timed += 1
        self._seq += 1
        if not heap or when < heap[0][0]:
            self._earlier.set()  # the watcher sleeps until the first deadline
        heapq.heappush(heap, (when, self._seq, pending))
        if len(heap) > 64 and len(heap) > 4 * self.timed:
            # Most entries are of requests no longer waiting: drop them.
            self._heap = heap = [e for e in heap if not e[2].finished]
            heapq.heapify(heap)

    async def run(self) -> None:
        """Time out requests whose deadline passed (runs while the session serves)."""
        while True:
            heap = self._heap
            now = anyio.current_time()
            while heap and (heap[0][0] <= now or heap[0][2].finished):
                _, _, pending = heapq.heappop(heap)
                if not pending.finished and not pending.event.is_set():
                    pending.timed_out = True
                    pending.set()
            if self._earlier.is_set():
                self._earlier = anyio.Event()
            with anyio.move_on_after(heap[0][0] - now if heap else math.inf):
                await self._earlier.wait()

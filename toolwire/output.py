"""The one serialised writer of a JSON-RPC session: every outbound frame, in order.

Rules this module keeps (the :class:`~toolwire.session.Session` owning it relies on them):

* every frame goes through one queue and one task (:meth:`OutputQueue.run`), so frames
  never interleave and leave in the order they were queued;
* queuing never blocks: a reply is never held up behind its producer; a producer of
  unbounded output awaits :meth:`OutputQueue.drain` instead;
* a small frame queued while nothing is queued, the writer is idle and no other request
  is under way is written at once by the sending task (on the same event loop, so still
  in order), saving the writer task's turn;
* frames queued in one turn of the event loop are joined into one write (below
  :data:`FLUSH_JOIN_LIMIT`); a large body is handed to the stream as it is, never copied;
* lossy notifications (progress, logs) are held back or dropped while the peer is behind
  (:meth:`OutputQueue.notify_lossy`); responses are never dropped;
* a reply JSON cannot hold, or one over :attr:`OutputQueue.max_send_size`, becomes an
  error reply saying why.

It knows bytes, frames (ndjson or Content-Length, :mod:`toolwire.framing`) and JSON-RPC
messages; it knows nothing of requests in flight, methods or handlers.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sized
from typing import Any

import anyio
from anyio.abc import ByteSendStream

from . import _json
from .errors import INTERNAL_ERROR, JsonRpcError
from .framing import NDJSON_TERMINATOR, Framing, lsp_header
from .messages import error_response, notification

__all__ = [
    "EAGER_WRITE_LIMIT",
    "FLUSH_JOIN_LIMIT",
    "HIGH_WATER",
    "LOSSY_LIMIT",
    "OutputQueue",
    "size_text",
]

log = logging.getLogger("toolwire.session")

FLUSH_JOIN_LIMIT = 64 * 1024
"""Frames are joined into one write while the batch stays under this many bytes."""

EAGER_WRITE_LIMIT = 64 * 1024
"""Largest frame written directly by the sending task when the writer is idle (bytes)."""

LOSSY_LIMIT = 64 * 1024
"""Bytes queued for the peer above which lossy notifications (progress, logs) are no
longer queued: progress is coalesced (newest per token wins) and logs are counted and
dropped until the writer catches up (:meth:`OutputQueue.notify_lossy`)."""

HIGH_WATER = 16 * 1024 * 1024
"""Default bytes queued above which :meth:`OutputQueue.drain` waits (16 MiB)."""


def size_text(size: int) -> str:
    """``size`` bytes for a message: ``64 MiB``, ``80.3 MiB`` (1 MiB and over), ``512 bytes``."""
    if size < 1 << 20:
        return f"{size} bytes"
    mib = size / (1 << 20)
    return f"{mib:.0f} MiB" if size % (1 << 20) == 0 else f"{mib:.1f} MiB"


class OutputQueue:
    """The outbound half of one connection: a queue of frames and the task that writes them.

    Args:
        send: the byte stream to the peer; a stream with ``try_send(frame) -> int`` (bytes
            written without blocking) gets small frames written at once when idle.
        name: used in log records.
        framing: "lsp" or "ndjson"; None writes ndjson until :attr:`framing` is set (the
            session sets it once it detected the peer's framing).
        busy: containers whose total size is the number of requests under way (the
            session's outbound and inbound requests); a frame is written at once only
            while at most one is.
        replace_surrogates: every lone surrogate in an outgoing string becomes U+FFFD
            (:func:`toolwire._json.dumps`).
        max_send_size: largest message body sent, in bytes (None: no bound).
        oversized_reply: the error a reply over ``max_send_size`` is replaced by, given
            its size in bytes (default: -32603 naming the size and the limit).
        max_queued: bytes queued for a peer that does not read above which
            ``on_overflow`` is called (None: no bound).
        on_overflow: called with a description when ``max_queued`` is passed.
        unsolicited: whether the peer may now get a notification tied to no request (the
            count of dropped lossy ones); None: always.

    Attributes:
        framing: the framing frames are written in (None: ndjson, not detected yet).
        lossy_limit: bytes queued above which :meth:`notify_lossy` holds back
            (:data:`LOSSY_LIMIT`).
        high_water: bytes queued above which :meth:`drain` waits (:data:`HIGH_WATER`).
        done: set once :meth:`run` returned (everything queued was written, or the peer
            stopped reading).
    """

    def __init__(
        self,
        send: ByteSendStream,
        *,
        name: str,
        framing: Framing | None,
        busy: tuple[Sized, Sized],
        replace_surrogates: bool = True,
        max_send_size: int | None = None,
        oversized_reply: Callable[[int], JsonRpcError] | None = None,
        max_queued: int | None = None,
        on_overflow: Callable[[str], None] | None = None,
        unsolicited: Callable[[], bool] | None = None,
    ) -> None:
        self._send = send
        self.name = name
        self.framing: Framing | None = framing
        self._busy_a, self._busy_b = busy
        self.replace_surrogates = replace_surrogates
        self.max_send_size = max_send_size
        self._oversized_reply = oversized_reply or self._oversized
        self._max_queued = max_queued
        self._on_overflow = on_overflow
        self._unsolicited = unsolicited
        self.lossy_limit = LOSSY_LIMIT
        self.high_water = HIGH_WATER
        self._try_send: Callable[[bytes], int] | None = getattr(send, "try_send", None)
        self._out: list[bytes] = []
        self._busy = False  # the writer task is handing frames to the stream
        self._queued = 0
        self._event = anyio.Event()
        self._drained = anyio.Event()
        self._closing = False
        self.done = anyio.Event()
        # Lossy notifications held back while the peer is behind: the newest per key
        # (progress token), and counts of dropped keyless ones (logs) per method.
        self._coalesced: dict[Any, tuple[str, Any]] = {}
        self._dropped: dict[str, int] = {}

    @property
    def queued(self) -> int:
        """Bytes of frames waiting for (or being given to) the writer."""
        return self._queued

    def close(self) -> None:
        """Write nothing more directly; :meth:`run` returns once the queue is empty."""
        self._closing = True
        self._event.set()

    # ----------------------------------------------------------------- queuing

    def send_obj(self, obj: Any) -> None:
        """Queue one message.

        Raises:
            TypeError, ValueError: it is not JSON-serialisable; ValueError also when it is
                over :attr:`max_send_size`, naming the size and the limit.
        """
        body = _json.dumps(obj, replace_surrogates=self.replace_surrogates)
        limit = self.max_send_size
        if limit is not None and len(body) > limit:
            raise ValueError(
                f"the message is {size_text(len(body))}, over the {size_text(limit)} "
                "limit of one message"
            )
        self.send_body(body)

    def send_reply(self, reply: dict[str, Any]) -> None:
        """Queue a response (never raises: see :meth:`encode_reply`)."""
        self.send_body(self.encode_reply(reply))

    def send_body(self, body: bytes) -> None:
        """Queue one encoded message body; it is framed here."""
        # Nothing queued, the writer idle, no other request under way: a small frame is
        # written at once, which saves the writer task's turn of the event loop (most of
        # a reply's latency on an idle connection). What does not fit goes to the
        # writer, in order.
        if (
            self._try_send is not None
            and not self._out
            and not self._busy
            and len(body) <= EAGER_WRITE_LIMIT
            and not self._closing
            # Alone on the connection: with other requests under way, frames wait for
            # the writer, which joins those of one turn of the loop into one write.
            and len(self._busy_a) + len(self._busy_b) <= 1
        ):
            if self.framing == "lsp":
                frame = lsp_header(len(body)) + body
            else:
                frame = body + NDJSON_TERMINATOR
            sent = self._try_send(frame)
            if sent == len(frame):
                return
            if sent > 0:
                self._out.append(frame[sent:])
                self._queued += len(frame) - sent
                self._event.set()
                return
        # The frame's parts are queued apart (the codecs of framing.py say what they
        # are), so a large body is handed to the stream without being copied.
        if self.framing == "lsp":
            header = lsp_header(len(body))
            self._out.append(header)
            self._out.append(body)
            self._queued += len(header) + len(body)
        else:
            self._out.append(body)
            self._out.append(NDJSON_TERMINATOR)
            self._queued += len(body) + 1
        self._event.set()
        limit = self._max_queued
        if limit is not None and self._queued > limit and self._on_overflow is not None:
            self._on_overflow(f"the peer left more than {limit} bytes unread")

    def encode_reply(self, reply: dict[str, Any]) -> bytes:
        """Encode a response; a result JSON cannot hold (an unknown type, NaN, a cycle,
        nesting too deep for the encoder) becomes -32603 saying why (traceback to the
        log), and one over :attr:`max_send_size` the error ``oversized_reply`` makes."""
        try:
            body = _json.dumps(reply, replace_surrogates=self.replace_surrogates)
        except (TypeError, ValueError, RecursionError) as exc:
            log.exception(
                "%s: the result for request %r is not JSON-serialisable", self.name, reply.get("id")
            )
            why = str(exc)[:200] or type(exc).__name__
            return _json.dumps(
                error_response(
                    reply.get("id"),
                    JsonRpcError(
                        INTERNAL_ERROR, f"Internal error: the result is not valid JSON ({why})"
                    ),
                ),
                replace_surrogates=self.replace_surrogates,
            )
        limit = self.max_send_size
        if limit is not None and len(body) > limit:
            log.warning(
                "%s: the reply to request %r is %d bytes, over the limit of %d",
                self.name,
                reply.get("id"),
                len(body),
                limit,
            )
            return _json.dumps(
                error_response(reply.get("id"), self._oversized_reply(len(body))),
                replace_surrogates=self.replace_surrogates,
            )
        return body

    def _oversized(self, size: int) -> JsonRpcError:
        """The default ``oversized_reply``: -32603 naming the size and the limit."""
        return JsonRpcError(
            INTERNAL_ERROR,
            f"Internal error: the result is {size_text(size)}, over the "
            f"{size_text(self.max_send_size or 0)} limit of one message",
        )

    def notify(self, method: str, params: Any = None) -> None:
        """Queue a notification (raises as :meth:`send_obj`)."""
        self.send_obj(notification(method, params))

    def notify_lossy(self, method: str, params: Any = None, key: Any = None) -> bool:
        """Queue a notification the peer may miss when it is not reading fast enough.

        While at most :attr:`lossy_limit` bytes are queued it is sent like
        :meth:`notify`. Otherwise nothing is queued: with a ``key`` (a progress token)
        it replaces the one held for that key, which is sent when the writer catches up
        (newest wins, so progress stays increasing); without one it is dropped and
        counted, and when the writer catches up one ``notifications/message`` warning
        says how many were dropped (if ``unsolicited`` allows; always logged). So the
        queue never holds more than about :attr:`lossy_limit` bytes of such
        notifications, however fast a tool reports, and a response is never behind more
        than that (MCP 2025-11-25 "Progress" and "Logging" leave the rate to the sender;
        responses are never dropped).

        Returns:
            True when it was queued at once.

        Raises:
            TypeError, ValueError: as :meth:`send_obj` (when queued at once).
        """
        held = key is not None and ("key", key) in self._coalesced
        if not held and self._queued <= self.lossy_limit and not self._dropped:
            self.notify(method, params)
            return True
        if key is not None:
            self._coalesced.pop(("key", key), None)  # keep the newest last, in order
            self._coalesced[("key", key)] = (method, params)
        else:
            self._dropped[method] = self._dropped.get(method, 0) + 1
        self._event.set()  # a writer that is idle sends them now
        return False

    def forget_lossy(self, key: Any) -> None:
        """Discard the notification held back for ``key`` (its request was answered:
        no progress may follow the response, MCP 2025-11-25 "Progress")."""
        if self._coalesced:
            self._coalesced.pop(("key", key), None)

    def _release_lossy(self) -> None:
        """Queue the held-back lossy notifications and the count of dropped ones, once
        the queue is back under :attr:`lossy_limit`."""
        dropped, self._dropped = self._dropped, {}
        held, self._coalesced = self._coalesced, {}
        for method, params in held.values():
            try:
                self.notify(method, params)
            except (TypeError, ValueError):
                log.exception("%s: a %s notification is not JSON-serialisable", self.name, method)
        for method, count in dropped.items():
            noun = (
                "log messages" if method == "notifications/message" else f"{method} notifications"
            )
            log.warning("%s: dropped %d %s: the peer was not reading", self.name, count, noun)
            if self._unsolicited is not None and not self._unsolicited():
                continue
            self.notify(
                "notifications/message",
                {
                    "level": "warning",
                    "logger": "toolwire",
                    "data": f"{count} {noun} dropped: the client was not reading fast enough",
                },
            )

    async def drain(self) -> None:
        """Wait while more than :attr:`high_water` bytes are queued for the peer.

        Queuing never blocks (so replies keep their order); producers of unbounded
        output, such as a tool's progress and log notifications, await this so a peer
        that stops reading cannot make the queue grow without bound. Returns at once
        once the queue is closing.
        """
        while self._queued > self.high_water and not self._closing:
            if self._drained.is_set():
                self._drained = anyio.Event()
            await self._drained.wait()

    # ----------------------------------------------------------------- writing

    async def run(self, on_broken: Callable[[], None]) -> None:
        """Write queued frames until :meth:`close` and an empty queue; ``on_broken()``
        is called when the stream fails (the peer stopped reading), after which what is
        queued is discarded."""
        send = self._send
        # The backend's own class: anyio.Event() looks the backend up at every call.
        new_event = type(anyio.Event())
        try:
            while True:
                if (self._coalesced or self._dropped) and self._queued <= self.lossy_limit:
                    self._release_lossy()
                if not self._out:
                    if self._closing:
                        return
                    await self._event.wait()
                    self._event = new_event()
                    continue
                chunks, self._out = self._out, []
                total = 0
                for c in chunks:
                    total += len(c)
                self._busy = True
                try:
                    if total <= FLUSH_JOIN_LIMIT:
                        await send.send(b"".join(chunks))
                        continue
                    await self._send_large(chunks)
                finally:
                    self._busy = False
                    self._queued = max(0, self._queued - total)
                    if self._queued <= self.high_water // 2:
                        self._drained.set()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            log.info("%s: peer stopped reading (%s); closing", self.name, exc)
            self._out.clear()
            on_broken()
        finally:
            self._drained.set()
            self.done.set()

    async def _send_large(self, chunks: list[bytes]) -> None:
        send = self._send
        # Large frames go out as they are: a multi-megabyte body is never copied.
        small: list[bytes] = []
        for c in chunks:
            if len(c) > 4096:
                if small:
                    await send.send(b"".join(small))
                    small = []
                await send.send(c)
            else:
                small.append(c)
        if small:
            await send.send(b"".join(small))

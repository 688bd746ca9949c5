"""The change bus: how the replicas of a fleet tell each other's listeners of changes.

A ``subscriptions/listen`` stream (MCP 2026-07-28, protocol.md §11.9) lives on the one
replica that received it, while the changes it is about can happen on any replica: a
tool module reloaded there (``--reload``) or a module registering tools at run time —
whatever changes that replica's :class:`~toolwire.host.tools.registry.Registry`. Each
replica publishes its own changes on the bus and delivers what it hears to its
listeners as ``notifications/tools/list_changed`` (mcp-http.md §2.8: a listen stream
on one replica needs a shared bus to hear another's changes).

* :class:`LocalBus`: one replica, no bus (the default): a change reaches the listeners
  of the replica that made it, and no other.
* :class:`RedisBus`: Redis pub/sub (``--bus redis://HOST:PORT/DB``, redis-py's asyncio
  client). A replica delivers its own changes at once, as :class:`LocalBus` does, and
  publishes them for the others; it ignores its own messages when they come back.
  Redis pub/sub channels ignore the database number, so the channel is named after it
  (``toolwire:DB:changes``): fleets sharing one Redis stay apart by using different
  databases. A message is ``{"origin": REPLICA, "change": "tools"}`` (JSON). When the
  subscription is lost the bus reconnects, and then tells its listeners that the list
  may have changed, since changes published meanwhile were not heard.

A change is a signal, not data: a listener is told the list changed and lists again.
Delivery is at most once per subscribed replica and may be coalesced or, during a
Redis outage, lost (then made up for by the signal sent on reconnecting).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from toolwire import _json

from ...tools.registry import Registry
from ..options import StartupError
from .fleet import parse_bus_url

__all__ = ["TOOLS", "ChangeBus", "LocalBus", "RedisBus", "open_bus", "relaying"]

log = logging.getLogger("toolwire.host.bus")

TOOLS = "tools"
"""The change "the tools list changed" (``notifications/tools/list_changed``)."""

CONNECT_TIMEOUT = 10.0
"""Seconds a replica waits for Redis at start-up before it refuses to start."""

OUTBOX_SIZE = 1000
"""Changes waiting to be published at most; beyond, new ones are dropped (they are
signals: one that gets through tells as much as many)."""

Subscriber = Callable[[str], None]


class ChangeBus:
    """Publish a change, subscribe to changes; the in-process part every bus shares.

    A subscriber is called with the change (``"tools"``) on the event loop, for changes
    made on this replica (as they are published) and, on a shared bus, for changes
    made on the others. Use the bus inside ``async with bus.running():``.
    """

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call ``subscriber(change)`` for every change; returns the unsubscribe function."""
        self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(subscriber)

        return unsubscribe

    def publish(self, change: str) -> None:
        """Tell this replica's subscribers of ``change`` now and, on a shared bus, the
        other replicas' as soon as it can be sent (never blocks)."""
        self._deliver(change)
        self._send(change)

    def _deliver(self, change: str) -> None:
        for subscriber in list(self._subscribers):
            try:
                subscriber(change)
            except Exception:  # one broken listener must not silence the others
                log.exception("a change subscriber failed")

    def _send(self, change: str) -> None:
        """Send ``change`` to the other replicas (nothing: one replica)."""

    async def connect(self) -> None:
        """Reach the other replicas (nothing to reach here); :meth:`running` calls it
        when it was not called before, and :meth:`aclose` undoes it."""

    async def aclose(self) -> None:
        """Close what :meth:`connect` opened (nothing here)."""

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ChangeBus]:
        """Deliver changes for the body of the block (nothing to run here)."""
        yield self


class LocalBus(ChangeBus):
    """The bus of a single replica: changes reach only this process's listeners."""


class RedisBus(ChangeBus):
    """The change bus over Redis pub/sub (see the module).

    Args:
        url: ``redis://HOST:PORT/DB``.

    Raises:
        ValueError: a URL of another shape (:func:`~toolwire.host.serve.http.fleet.parse_bus_url`).
    """

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.host, self.port, self.db = parse_bus_url(url)
        self.channel = f"toolwire:{self.db}:changes"
        self.origin = secrets.token_hex(8)
        self._outbox: MemoryObjectSendStream[str] | None = None
        self._loop: Any = None
        self._loop_thread = 0
        self._client: Any = None
        self._pubsub: Any = None
        self._errors: type[Exception] = OSError

    def _send(self, change: str) -> None:
        if self._outbox is None:
            return
        if threading.get_ident() != self._loop_thread:
            # A registry changed from a thread (a synchronous tool): hand it to the loop.
            self._loop.call_soon_threadsafe(self._queue, change)
        else:
            self._queue(change)

    def _queue(self, change: str) -> None:
        if self._outbox is None:
            return
        try:
            self._outbox.send_nowait(change)
        except anyio.WouldBlock:
            log.warning("change bus: %d changes waiting to be published; dropped one", OUTBOX_SIZE)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    async def connect(self) -> None:
        """Connect to Redis and subscribe to the channel.

        Raises:
            StartupError: the redis package is missing, or Redis does not answer within
                :data:`CONNECT_TIMEOUT` seconds.
        """
        if self._client is not None:
            return
        try:
            import redis.asyncio as aioredis
            from redis.exceptions import RedisError
        except ImportError:
            raise StartupError(
                f"toolwire serve: --bus {self.url} needs the redis package "
                "(pip install 'toolwire[fleet]')"
            ) from None
        client = aioredis.Redis(
            host=self.host,
            port=self.port,
            db=self.db,
            socket_connect_timeout=CONNECT_TIMEOUT,
            socket_keepalive=True,
            health_check_interval=30,
        )
        pubsub: Any = client.pubsub()
        try:
            with anyio.fail_after(CONNECT_TIMEOUT):
                await client.ping()
                await pubsub.subscribe(self.channel)
        except (RedisError, OSError, TimeoutError) as exc:
            await pubsub.aclose()
            await client.aclose()
            raise StartupError(
                f"toolwire serve: --bus {self.url}: cannot reach Redis: {exc or type(exc).__name__}"
            ) from None
        self._client, self._pubsub, self._errors = client, pubsub, RedisError

    async def aclose(self) -> None:
        """Close the connections to Redis (idempotent)."""
        client, pubsub = self._client, self._pubsub
        self._client = self._pubsub = None
        with anyio.CancelScope(shield=True):
            if pubsub is not None:
                with contextlib.suppress(self._errors, OSError):
                    await pubsub.aclose()
            if client is not None:
                with contextlib.suppress(self._errors, OSError):
                    await client.aclose()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ChangeBus]:
        """Connect (unless :meth:`connect` did), then publish and listen for the body of
        the block; close the connections after it.

        Raises:
            StartupError: see :meth:`connect`.
        """
        import asyncio

        try:
            await self.connect()
            self._loop = asyncio.get_running_loop()
            self._loop_thread = threading.get_ident()
            send, receive = anyio.create_memory_object_stream[str](OUTBOX_SIZE)
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._listen, self._pubsub, self._errors)
                tg.start_soon(self._publish, self._client, receive, self._errors)
                self._outbox = send
                log.info("change bus: %s, channel %s", self.url, self.channel)
                try:
                    yield self
                finally:
                    self._outbox = None
                    send.close()
                    tg.cancel_scope.cancel()
        finally:
            await self.aclose()

    async def _publish(self, client: Any, receive: Any, errors: type[Exception]) -> None:
        async with receive:
            async for change in receive:
                data = _json.dumps({"origin": self.origin, "change": change})
                try:
                    await client.publish(self.channel, data)
                except (errors, OSError) as exc:
                    log.warning("change bus: could not publish a change: %s", exc)

    async def _listen(self, pubsub: Any, errors: type[Exception]) -> None:
        subscribed = 0
        delay = 0.1
        while True:
            try:
                if not pubsub.subscribed:
                    await pubsub.subscribe(self.channel)
                async for message in pubsub.listen():
                    kind = message.get("type")
                    if kind == "subscribe":
                        subscribed += 1
                        delay = 0.1
                        if subscribed > 1:
                            # Subscribed again after a loss: what was published meanwhile
                            # was not heard, so the list may have changed.
                            log.info("change bus: subscribed again to %s", self.channel)
                            self._deliver(TOOLS)
                    elif kind == "message":
                        self._heard(message.get("data"))
            except (errors, OSError) as exc:
                log.warning("change bus: lost %s (%s); reconnecting", self.url, exc)
            await anyio.sleep(delay)
            delay = min(delay * 2, 5.0)

    def _heard(self, data: Any) -> None:
        try:
            message = _json.loads(data)
        except (ValueError, TypeError):
            log.debug("change bus: ignored a message that is not JSON")
            return
        if type(message) is not dict:
            return
        origin, change = message.get("origin"), message.get("change")
        if type(change) is str and type(origin) is str and origin != self.origin:
            self._deliver(change)


def open_bus(url: str | None) -> ChangeBus:
    """The bus for ``--bus URL``: a :class:`RedisBus`, or a :class:`LocalBus` for None.

    Raises:
        ValueError: a URL that is not ``redis://HOST:PORT/DB``.
    """
    return LocalBus() if url is None else RedisBus(url)


@contextlib.asynccontextmanager
async def relaying(
    bus: ChangeBus, registry: Registry, tools_changed: Callable[[], None]
) -> AsyncIterator[ChangeBus]:
    """Run ``bus`` for the body of the block, publishing every change of ``registry``
    and calling ``tools_changed()`` (which notifies the listen streams) for every tools
    change heard, this replica's own included.

    Raises:
        StartupError: see :meth:`RedisBus.running`.
    """

    def changed() -> None:
        bus.publish(TOOLS)

    def heard(change: str) -> None:
        if change == TOOLS:
            tools_changed()

    async with bus.running():
        unsubscribe = bus.subscribe(heard)
        registry.on_change(changed)
        try:
            yield bus
        finally:
            registry.off_change(changed)
            unsubscribe()

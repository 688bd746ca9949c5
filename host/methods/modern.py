"""MCP 2026-07-28 beside 2025-11-25: the host's stateless request handling.

A request is *modern* when its ``params._meta`` carries
``io.modelcontextprotocol/protocolVersion`` (and ``server/discover`` and
``subscriptions/listen``, which exist only in that revision, are always modern). Such a
request is served from what it carries alone — never from an earlier ``initialize`` or
``logging/setLevel`` on the connection — and checked in this order (protocol.md §11.2):

1. a missing or malformed envelope: -32602;
2. a version the host does not serve: -32022 ``{supported, requested}``;
3. a method the revision does not have (``initialize``, ``ping``, ``logging/setLevel``,
   ``shutdown``, anything unknown): -32601;
4. an unknown ``io.modelcontextprotocol/logLevel``: -32602;
5. a client capability the call turns out to need but the request did not declare:
   -32021 ``{requiredCapabilities}``.

Every result carries ``resultType`` and ``_meta["io.modelcontextprotocol/serverInfo"]``.
Requests without the claim go to the 2025-11-25 handlers unchanged, so both eras can
share one connection (the specification allows serving both in one process).

Owns what is of this revision only: the envelope checks above, ``server/discover``,
``subscriptions/listen`` and its listeners, the shape of results (``resultType``,
``ttlMs``, ``cacheScope``), and input rounds (multi-round-trip requests: the
:class:`~toolwire.host.tools.rounds.StateSigner` and, for each ``tools/call`` and
``tools/callBatch``, an :class:`~toolwire.host.tools.rounds.InputRound` turned into an
input-required result). The tool methods are the kernel's (:class:`~.kernel.HostKernel`),
called with a :class:`~toolwire.host.tools.channel.ModernChannel` that carries the
round; this face refers to no other face.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from toolwire.errors import INVALID_PARAMS, METHOD_NOT_FOUND, JsonRpcError
from toolwire.extensions import CALL_BATCH
from toolwire.messages import RequestId
from toolwire.modern import (
    ACKNOWLEDGED,
    DISCOVER,
    LISTEN,
    MODERN_PROTOCOL_VERSIONS,
    RESULT_COMPLETE,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    is_modern_request,
    parse_envelope,
)
from toolwire.router import Deferred, RequestHandler, Router, method_not_found
from toolwire.session import RequestContext, Session

from ..tools.channel import LOG_LEVELS, CallChannel, ModernCall, ModernChannel
from ..tools.rounds import InputNeeded, InputRound, StateSigner
from .kernel import HostKernel

__all__ = [
    "CACHE_SCOPE",
    "DISCOVER_TTL_MS",
    "LIST_TTL_MS",
    "ModernCall",
    "ModernServer",
]

log = logging.getLogger("toolwire.host")

DISCOVER_TTL_MS = 3_600_000
"""``ttlMs`` of ``server/discover``: versions, capabilities and instructions never change
while the host runs (one hour)."""
LIST_TTL_MS = 60_000
"""``ttlMs`` of ``tools/list`` (one minute): the tool set may change at run time; a
client that wants to know at once listens with ``subscriptions/listen``."""
CACHE_SCOPE = "private"
"""``cacheScope`` of cacheable results: they describe one local host (its directory,
its sandbox), so they are not meant to be shared between users by an intermediary."""

_ModernMethod = Any  # async (params, rctx, call) -> dict

_KernelMethod = Callable[[Any, RequestContext, CallChannel], Awaitable[dict[str, Any]]]
"""A kernel tool method: ``await method(params, rctx, channel)``."""


class _Listener:
    __slots__ = ("id", "session", "tools")

    def __init__(self, id: RequestId, session: Session, tools: bool) -> None:
        self.id = id
        self.session = session
        self.tools = tools


class ModernServer:
    """The 2026-07-28 face over a :class:`~.kernel.HostKernel` (the one a
    :class:`~toolwire.host.methods.server.HostServer` builds beside its own).

    The host's router asks :meth:`claims` of every request it reads; one claimed is
    answered by :attr:`deferred` (its era's handler, from a task), the others by the
    2025-11-25 handlers.

    Args:
        kernel: the tool methods and identity both eras share.
    """

    methods_of_any_params = (DISCOVER, LISTEN)
    """Methods of 2026-07-28 only: claimed whatever their params."""

    def __init__(self, kernel: HostKernel) -> None:
        self.kernel = kernel
        self._listeners: list[_Listener] = []
        self.signer = StateSigner()
        self._methods: dict[str, _ModernMethod] = {
            DISCOVER: self._discover,
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
            CALL_BATCH: self._tools_call_batch,
            LISTEN: self._listen,
        }
        kernel.registry.on_change(self.tools_changed)
        self.deferred = Deferred.to(self._handle)
        """Answers a claimed request (from a task; :meth:`claims`)."""

    # ------------------------------------------------------------------ routing

    def claims(self, method: str, params: Any) -> bool:
        """Whether a request is of 2026-07-28 (its ``_meta`` envelope, or a method of that
        revision only) and served here (a connection that got LSP ``shutdown`` asks
        none: :meth:`HostServer.router`)."""
        return is_modern_request(params) or method in self.methods_of_any_params

    def route(self, method: str, params: Any) -> RequestHandler | None:
        """The handler of a request :meth:`claims`, or None to leave it to the legacy
        handlers (the HTTP direct path calls it without a session)."""
        return self._handle if self.claims(method, params) else None

    def router(self) -> Router:
        """A router serving only 2026-07-28 requests (every other is -32601), for a
        session of one HTTP request."""
        router = Router()

        def claim(params: Any, ctx: RequestContext) -> Deferred:
            if self.claims(ctx.method, params):
                return self.deferred
            raise method_not_found(ctx.method)

        for method in self.methods_of_any_params:
            router.on_inline_request(method, claim)
        router.on_unknown_request(claim)
        return router

    async def _handle(self, params: Any, rctx: RequestContext) -> dict[str, Any]:
        envelope = parse_envelope(params)
        if envelope.version not in MODERN_PROTOCOL_VERSIONS:
            raise JsonRpcError(
                UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                {"supported": list(MODERN_PROTOCOL_VERSIONS), "requested": envelope.version},
            )
        method = self._methods.get(rctx.method)
        if method is None:
            raise JsonRpcError(
                METHOD_NOT_FOUND,
                f"Method not found: {rctx.method} (not part of MCP {envelope.version})",
                {"method": rctx.method},
            )
        threshold: int | None = None
        if envelope.log_level is not None:
            if type(envelope.log_level) is not str or envelope.log_level not in LOG_LEVELS:
                raise JsonRpcError(
                    INVALID_PARAMS,
                    f"Invalid log level {envelope.log_level!r}",
                    {"supported": list(LOG_LEVELS)},
                )
            threshold = LOG_LEVELS[envelope.log_level]
        call = ModernCall(envelope, threshold, rctx.session)
        result: dict[str, Any] = await method(params, rctx, call)
        return self.finish(result, full=rctx.method == "server/discover")

    def finish(self, result: dict[str, Any], *, full: bool = False) -> dict[str, Any]:
        """``result`` with ``resultType`` (default "complete") and the server info in ``_meta``
        (an input-required result gets the server info too).

        Every result carries ``{name, version}`` (mcp-2026: a server SHOULD put its info
        in every result's ``_meta``); ``full`` (``server/discover``) adds the description,
        which names the sandbox in a few hundred bytes no other answer needs to repeat."""
        out = {"resultType": RESULT_COMPLETE, **result}
        meta = dict(out.get("_meta") or {})
        meta[SERVER_INFO_KEY] = self.kernel.server_info() if full else self.kernel.brief_info
        out["_meta"] = meta
        return out

    # ------------------------------------------------------------------ methods

    async def _discover(
        self, params: dict[str, Any], rctx: RequestContext, call: ModernCall
    ) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(MODERN_PROTOCOL_VERSIONS),
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
        }
        if self.kernel.instructions:
            result["instructions"] = self.kernel.instructions
        result["ttlMs"] = DISCOVER_TTL_MS
        result["cacheScope"] = CACHE_SCOPE
        return result

    async def _tools_list(
        self, params: dict[str, Any], rctx: RequestContext, call: ModernCall
    ) -> dict[str, Any]:
        result = self.kernel.tools_list(_without_meta(params))
        result["ttlMs"] = LIST_TTL_MS
        result["cacheScope"] = CACHE_SCOPE
        return result

    async def _tools_call(
        self, params: dict[str, Any], rctx: RequestContext, call: ModernCall
    ) -> dict[str, Any]:
        return await self._asking(params, rctx, call, self.kernel.tools_call)

    async def _tools_call_batch(
        self, params: dict[str, Any], rctx: RequestContext, call: ModernCall
    ) -> dict[str, Any]:
        return await self._asking(params, rctx, call, self.kernel.tools_call_batch)

    async def _asking(
        self,
        params: dict[str, Any],
        rctx: RequestContext,
        call: ModernCall,
        run: _KernelMethod,
    ) -> dict[str, Any]:
        """Run a call that may ask (multi-round-trip requests, protocol.md §11.7): the
        kernel's method on a channel carrying this attempt's input round, whose questions
        (a tool's, an approval) then make the input-required result."""
        round = InputRound(call.envelope, rctx.method, params, self.signer)
        try:
            result: dict[str, Any] = await run(
                params, rctx, ModernChannel(rctx, call, rctx.id, round)
            )
        except InputNeeded:
            result = {}
        required = round.outcome()
        return required if required is not None else result

    async def _listen(
        self, params: dict[str, Any], rctx: RequestContext, call: ModernCall
    ) -> dict[str, Any]:
        """``subscriptions/listen``: acknowledge, then deliver tools list changes until the
        client cancels the request (``notifications/cancelled``) or the connection ends."""
        wanted = params.get("notifications")
        if wanted is None:
            wanted = {}
        if type(wanted) is not dict:
            raise JsonRpcError(INVALID_PARAMS, "'notifications' must be an object")
        honored: dict[str, Any] = {}
        if wanted.get("toolsListChanged") is True:
            honored["toolsListChanged"] = True
        rctx.session.notify(
            ACKNOWLEDGED, {"_meta": {SUBSCRIPTION_ID_KEY: rctx.id}, "notifications": honored}
        )
        listener = _Listener(rctx.id, rctx.session, bool(honored))
        self._listeners.append(listener)
        try:
            await anyio.sleep_forever()
        finally:
            self._listeners.remove(listener)
        raise AssertionError("unreachable")  # pragma: no cover

    def tools_changed(self) -> None:
        """Tell every open ``subscriptions/listen`` stream that asked for tool changes
        (2026-07-28): one ``notifications/tools/list_changed`` each, carrying its subscription
        id in ``_meta``. Registered with the registry at construction; a transport that
        relays changes itself (the HTTP fleet's bus) takes it off and calls it."""
        for listener in self._listeners:
            if listener.tools and not listener.session.closing:
                listener.session.notify(
                    "notifications/tools/list_changed",
                    {"_meta": {SUBSCRIPTION_ID_KEY: listener.id}},
                )


def _without_meta(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k != "_meta"}

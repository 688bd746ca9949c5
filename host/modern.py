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
"""

from __future__ import annotations

import base64
import binascii
import contextvars
import hashlib
import hmac
import logging
import secrets
import time
from typing import TYPE_CHECKING, Any

import anyio

from toolwire import _json
from toolwire.errors import INVALID_PARAMS, METHOD_NOT_FOUND, JsonRpcError
from toolwire.extensions import APPROVE, CALL_BATCH, EXTENSION_CAPABILITY
from toolwire.messages import RequestId
from toolwire.modern import (
    ACKNOWLEDGED,
    DISCOVER,
    INPUT_METHODS,
    LISTEN,
    MISSING_CLIENT_CAPABILITY,
    MODERN_PROTOCOL_VERSIONS,
    RESULT_COMPLETE,
    RESULT_INPUT_REQUIRED,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    Envelope,
    is_modern_request,
    parse_envelope,
)
from toolwire.session import RequestContext, RequestHandler, Session

from .context import LOG_LEVELS

if TYPE_CHECKING:
    from .server import HostServer

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
STATE_LIFETIME = 3600.0
"""Seconds a ``requestState`` stays valid after it was issued (one hour)."""
CACHE_SCOPE = "private"
"""``cacheScope`` of cacheable results: they describe one local host (its directory,
its sandbox), so they are not meant to be shared between users by an intermediary."""

_ModernMethod = Any  # async (params, rctx, call) -> dict


class ModernCall:
    """What a modern request carries that the tool code may see.

    Attributes:
        envelope: the request's checked ``_meta`` envelope.
        log_threshold: the numeric level asked for with ``logLevel``, or None: then no
            ``notifications/message`` is sent for this request.
        session: the connection the request arrived on.
        round: the :class:`InputRound` of a ``tools/call`` or ``tools/callBatch``.
    """

    __slots__ = ("envelope", "log_threshold", "round", "session")

    def __init__(self, envelope: Envelope, log_threshold: int | None, session: Session) -> None:
        self.envelope = envelope
        self.log_threshold = log_threshold
        self.session = session
        self.round: InputRound | None = None
        """Set for calls that may ask (``tools/call``, ``tools/callBatch``)."""

    def send_log(self, level: str, data: Any, logger: str | None) -> None:
        """Send ``notifications/message`` when the request asked for ``level`` or lower."""
        if self.log_threshold is None or LOG_LEVELS.get(level, 0) < self.log_threshold:
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger:
            params["logger"] = logger
        self.session.notify("notifications/message", params)


class _Listener:
    __slots__ = ("id", "session", "tools")

    def __init__(self, id: RequestId, session: Session, tools: bool) -> None:
        self.id = id
        self.session = session
        self.tools = tools


class ModernServer:
    """The 2026-07-28 side of a :class:`~toolwire.host.server.HostServer`.

    Hook :meth:`route` into the session (``Session.request_router``): it claims modern
    requests and leaves the others to the 2025-11-25 handlers.
    """

    def __init__(self, server: HostServer) -> None:
        self.server = server
        self._listeners: list[_Listener] = []
        self.signer = StateSigner()
        self._methods: dict[str, _ModernMethod] = {
            DISCOVER: self._discover,
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
            CALL_BATCH: self._tools_call_batch,
            LISTEN: self._listen,
        }
        server.registry.on_change(self._tools_changed)

    # ------------------------------------------------------------------ routing

    def route(self, method: str, params: Any) -> RequestHandler | None:
        """The handler for a modern request, or None to leave it to the legacy handlers."""
        if self.server.shutdown_requested:
            return None
        if is_modern_request(params) or method in (DISCOVER, LISTEN):
            return self._handle
        return None

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
            if envelope.log_level not in LOG_LEVELS:
                raise JsonRpcError(
                    INVALID_PARAMS,
                    f"Invalid log level {envelope.log_level!r}",
                    {"supported": list(LOG_LEVELS)},
                )
            threshold = LOG_LEVELS[envelope.log_level]
        call = ModernCall(envelope, threshold, rctx.session)
        result: dict[str, Any] = await method(params, rctx, call)
        return self.finish(result)

    def finish(self, result: dict[str, Any]) -> dict[str, Any]:
        """``result`` with ``resultType`` (default "complete") and the server info in ``_meta``
        (an input-required result gets the server info too)."""
        out = {"resultType": RESULT_COMPLETE, **result}
        meta = dict(out.get("_meta") or {})
        meta[SERVER_INFO_KEY] = self.server._server_info()
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
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        result["ttlMs"] = DISCOVER_TTL_MS
        result["cacheScope"] = CACHE_SCOPE
        return result

    async def _tools_list(
        self, params: dict[str, Any], rctx: RequestContext, call: ModernCall
    ) -> dict[str, Any]:
        result = self.server._tools_list(_without_meta(params), rctx)
        result["ttlMs"] = LIST_TTL_MS
        result["cacheScope"] = CACHE_SCOPE
        return result

    async def _tools_call(
        self, params: dict[str, Any], rctx: RequestContext, call: ModernCall
    ) -> dict[str, Any]:
        return await self._asking(params, rctx, call, self.server._tools_call)

    async def _tools_call_batch(
        self, params: dict[str, Any], rctx: RequestContext, call: ModernCall
    ) -> dict[str, Any]:
        from .batch import run_batch

        async def batch(p: Any, r: RequestContext, modern: ModernCall) -> dict[str, Any]:
            return await run_batch(self.server, p, r, modern=modern)

        return await self._asking(params, rctx, call, batch)

    async def _asking(
        self, params: dict[str, Any], rctx: RequestContext, call: ModernCall, run: Any
    ) -> dict[str, Any]:
        """Run a call that may ask (multi-round-trip requests, protocol.md §11.7)."""
        round = InputRound(call.envelope, rctx.method, params, self.signer)
        call.round = round
        token = _current_round.set(round)
        try:
            result: dict[str, Any] = await run(params, rctx, modern=call)
        except InputNeeded:
            result = {}
        finally:
            _current_round.reset(token)
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

    def _tools_changed(self) -> None:
        for listener in self._listeners:
            if listener.tools and not listener.session.closing:
                listener.session.notify(
                    "notifications/tools/list_changed",
                    {"_meta": {SUBSCRIPTION_ID_KEY: listener.id}},
                )


def _without_meta(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if k != "_meta"}


# ---------------------------------------------------------------------- input required


class InputNeeded(Exception):
    """Raised inside a 2026-07-28 call when it needs an answer the request did not bring.

    The host answers the call with an input-required result (or -32021, or -32602)
    whatever the tool does with this exception: the round records what was asked.
    """


_current_round: contextvars.ContextVar[InputRound | None] = contextvars.ContextVar(
    "toolwire_input_round", default=None
)


def current_round() -> InputRound | None:
    """The input round of the 2026-07-28 request being served in this task, if any."""
    return _current_round.get()


class StateSigner:
    """Signs and checks ``requestState`` with HMAC-SHA256 under a random per-host key.

    A state is ``BASE64URL(JSON payload) "." BASE64URL(MAC)``; the key lives only in the
    host's memory, so a state is valid only for the host process that issued it.
    """

    def __init__(self, key: bytes | None = None, lifetime: float = STATE_LIFETIME) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)
        self.lifetime = lifetime

    def sign(self, payload: dict[str, Any]) -> str:
        """The signed state for ``payload`` (a JSON object), with an expiry added."""
        body = dict(payload, exp=int(time.time() + self.lifetime))
        raw = _json.dumps(body)
        mac = hmac.new(self._key, raw, hashlib.sha256).digest()
        return _b64(raw) + "." + _b64(mac)

    def verify(self, state: Any) -> dict[str, Any]:
        """The payload of a state this host signed.

        Raises:
            JsonRpcError: -32602 when the state is not a string, was altered, was not
                signed by this host process, or expired.
        """
        if type(state) is not str:
            raise JsonRpcError(INVALID_PARAMS, "requestState must be a string")
        raw_b64, _, mac_b64 = state.partition(".")
        try:
            raw = _unb64(raw_b64)
            mac = _unb64(mac_b64)
        except ValueError:
            raise JsonRpcError(INVALID_PARAMS, "requestState is malformed") from None
        good = hmac.new(self._key, raw, hashlib.sha256).digest()
        if not hmac.compare_digest(good, mac):
            raise JsonRpcError(
                INVALID_PARAMS, "requestState was altered or was not issued by this host"
            )
        payload = _json.loads(raw)
        if type(payload) is not dict:  # pragma: no cover - only this host signs
            raise JsonRpcError(INVALID_PARAMS, "requestState is malformed")
        if type(payload.get("exp")) is not int or payload["exp"] < time.time():
            raise JsonRpcError(INVALID_PARAMS, "requestState has expired; call again")
        return payload


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise ValueError(str(exc)) from None


def request_digest(method: str, params: dict[str, Any]) -> str:
    """SHA-256 of the method and the params a retry must repeat (everything but ``_meta``,
    ``inputResponses`` and ``requestState``), so a state cannot be replayed on another call."""
    core = {k: v for k, v in params.items() if k not in _ROUND_KEYS}
    return hashlib.sha256(_json.dumps([method, core])).hexdigest()


_ROUND_KEYS = frozenset({"_meta", "inputResponses", "requestState"})


def _check_answer(method: str, answer: Any) -> bool:
    """Whether ``answer`` has the shape of a result of ``method`` (MCP 2026-07-28 schema)."""
    if type(answer) is not dict:
        return False
    if method == "elicitation/create":
        content = answer.get("content")
        return answer.get("action") in ("accept", "decline", "cancel") and (
            content is None or type(content) is dict
        )
    if method == "sampling/createMessage":
        return answer.get("role") in ("user", "assistant") and "content" in answer
    if method == "roots/list":
        return type(answer.get("roots")) is list
    return True  # toolwire/approve: ApprovalDecision.from_wire checks it


class InputRound:
    """One attempt at a 2026-07-28 ``tools/call`` (or ``tools/callBatch``) that may ask.

    Built from the request: the answers carried over in a verified ``requestState`` plus
    this retry's ``inputResponses``. Each ask (``ctx.elicit`` and its siblings, an
    approval) either finds its answer here or is recorded as asked; after the handler
    ran, :meth:`outcome` turns what was recorded into the reply.

    Attributes:
        envelope: the request's envelope (its declared capabilities decide what may be asked).
        asked: key → ``{method, params}`` still to be answered, in the order asked.
        missing: capabilities a needed ask requires but the request did not declare.
        error: a malformed answer, reported as -32602.
    """

    def __init__(
        self,
        envelope: Envelope,
        method: str,
        params: dict[str, Any],
        signer: StateSigner,
    ) -> None:
        self.envelope = envelope
        self.signer = signer
        self.batch = method == CALL_BATCH
        self.digest = request_digest(method, params)
        self.asked: dict[str, dict[str, Any]] = {}
        self.missing: dict[str, Any] = {}
        self.error: JsonRpcError | None = None
        self.used: dict[str, Any] = {}
        self.signed: dict[str, Any] = {}
        self.asked_before: frozenset[str] = frozenset()
        state = params.get("requestState")
        if state is not None:
            payload = signer.verify(state)
            if payload.get("d") != self.digest:
                raise JsonRpcError(
                    INVALID_PARAMS,
                    "requestState belongs to another request (method, tool or arguments differ)",
                )
            answers = payload.get("r")
            self.signed = dict(answers) if type(answers) is dict else {}
            asked = payload.get("q")
            self.asked_before = frozenset(asked) if type(asked) is list else frozenset()
        responses = params.get("inputResponses")
        if responses is not None and type(responses) is not dict:
            raise JsonRpcError(INVALID_PARAMS, "inputResponses must be an object")
        self.responses: dict[str, Any] = responses or {}

    def answer(self, key: str, method: str, params: dict[str, Any], *, signed_only: bool) -> Any:
        """The answer to the request ``method`` under ``key``; raises :class:`InputNeeded`
        after recording what is missing.

        Args:
            signed_only: accept an answer only for a request this host asked (its key is
                named in the verified ``requestState``); used for approvals, so a client
                cannot approve a call before it was shown to its user.
        """
        capability = EXTENSION_CAPABILITY if method == APPROVE else INPUT_METHODS[method]
        if key in self.signed:
            answer = self.signed[key]
        elif key in self.responses and (not signed_only or key in self.asked_before):
            answer = self.responses[key]
            if not _check_answer(method, answer):
                self.error = JsonRpcError(
                    INVALID_PARAMS,
                    f"inputResponses[{key!r}] is not a valid {method} result",
                    {"key": key},
                )
                raise InputNeeded(key)
        else:
            if not self.envelope.declares(capability):
                self.missing[capability] = {}
                raise InputNeeded(key)
            self.asked[key] = {"method": method, "params": params}
            raise InputNeeded(key)
        self.used[key] = answer
        return answer

    def outcome(self) -> dict[str, Any] | None:
        """The reply when the call asked for something: an input-required result; None
        when it did not (its own result stands).

        Raises:
            JsonRpcError: -32602 for a malformed answer; -32021 for a needed capability
                the request did not declare.
        """
        if self.error is not None:
            raise self.error
        if self.missing:
            names = ", ".join(sorted(self.missing))
            raise JsonRpcError(
                MISSING_CLIENT_CAPABILITY,
                f"This call needs the client capability {names}, which the request did not declare",
                {"requiredCapabilities": dict(self.missing)},
            )
        if not self.asked:
            return None
        # Answers given so far travel in the signed state: inputResponses apply to one
        # retry only, and the handler runs from the start each time.
        state = self.signer.sign({"d": self.digest, "r": self.used, "q": sorted(self.asked)})
        return {
            "resultType": RESULT_INPUT_REQUIRED,
            "inputRequests": dict(self.asked),
            "requestState": state,
        }


async def ask_legacy(server: HostServer, method: str, params: dict[str, Any]) -> Any:
    """Ask a 2025-11-25 client with a server→client request (``elicitation/create``,
    ``sampling/createMessage`` or ``roots/list``) and return its result.

    Raises:
        ToolError: the client did not declare the capability in ``initialize``, or
            answered with an error (the call's result then says so).
    """
    from .results import ToolError

    capability = INPUT_METHODS[method]
    session = server.session
    if type(server.client_capabilities.get(capability)) is not dict or session is None:
        raise ToolError(
            f"This tool needs the client capability {capability!r} ({method}), "
            "which the client did not declare in initialize"
        )
    try:
        return await session.request(method, params)
    except JsonRpcError as exc:
        raise ToolError(f"The client could not answer {method}: {exc.message}") from None

"""The host's method handlers: MCP tool subset plus LSP lifecycle, on one session.

Methods served (see protocol.md for params, results and errors):
``initialize``, ``ping``, ``tools/list``, ``tools/call``, ``tools/callBatch``,
``logging/setLevel``, ``shutdown``; notifications ``notifications/initialized``,
``initialized``, ``exit``, and the two cancellation dialects handled by the session.
The host sends ``toolwire/approve`` requests to clients that declared the approval
capability, when the approval policy marks a call, and LSP ``$/progress`` for a call
carrying ``workDoneToken`` from a client speaking LSP.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from anyio.abc import ByteReceiveStream, ByteSendStream

from toolwire import __version__
from toolwire.constants import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS
from toolwire.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    REQUEST_CANCELLED,
    JsonRpcError,
)
from toolwire.extensions import CALL_BATCH, ApprovalDecision
from toolwire.jsonschema_facts import json_type
from toolwire.messages import empty_or_object, is_valid_id
from toolwire.router import Deferred, InlineHandler, Router, method_not_found
from toolwire.session import ABORT_WAIT, PARAMS_NOT_AN_OBJECT, RequestContext, Session

from ..calls.approval import ApprovalPolicy, HostDenial, approve_call
from ..calls.executor import Executor
from ..calls.pipeline import Pipeline, Prepared
from ..sandbox.env import ExecEnv
from ..tools.arguments import ArgumentError
from ..tools.channel import (
    LOG_LEVELS,
    LegacyChannel,
    ModernCall,
    ModernChannel,
    WorkDoneProgress,
    log_params,
)
from ..tools.context import ToolContext
from ..tools.definition import Tool
from ..tools.hooks import IncomingCall
from ..tools.registry import Registry
from .batch import run_batch
from .modern import ModernServer

__all__ = ["HostServer"]

log = logging.getLogger("toolwire.host")

SHUTDOWN_GRACE = 5.0
"""Seconds LSP ``shutdown`` waits for the calls in flight to end before it cancels them
(each is then answered with -32800) and answers."""

_EXIT_BACKSTOP = 2.0
"""Seconds ``exit`` waits beyond the shutdown grace for a ``shutdown`` still answering."""


class HostServer:
    """Serves one connection: binds a :class:`Registry` and an :class:`Executor` to a session.

    Args:
        registry: the tools to offer.
        env: the execution environment handlers act in.
        executor: runs calls (timeouts, worker threads).
        instructions: text for ``initialize``'s ``instructions``.
        page_size: tool definitions per ``tools/list`` page.
        server_name: ``serverInfo.name``.
        server_description: ``serverInfo.description`` (toolwire serve puts the
            sandbox state there, so a client sees it without reading instructions).
        approval: which calls need the client's approval (default: none).
        approval_timeout: seconds to wait for the client's ``toolwire/approve`` answer.
        shutdown_grace: seconds LSP ``shutdown`` lets calls in flight finish before it
            cancels them (:data:`SHUTDOWN_GRACE`).
    """

    def __init__(
        self,
        registry: Registry,
        env: ExecEnv,
        executor: Executor | None = None,
        *,
        instructions: str | None = None,
        page_size: int = 500,
        server_name: str = "toolwire",
        server_description: str | None = None,
        approval: ApprovalPolicy | None = None,
        approval_timeout: float = 120.0,
        shutdown_grace: float = SHUTDOWN_GRACE,
    ) -> None:
        self.registry = registry
        self.env = env
        self.executor = executor or Executor()
        self.instructions = instructions
        self.page_size = page_size
        self.server_name = server_name
        self.server_description = server_description
        self.session: Session | None = None
        self.client_info: dict[str, Any] | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.protocol_version: str | None = None
        self.initialized = False
        self.lsp_initialize = False
        """True after an LSP ``initialize`` (see :attr:`speaks_lsp`)."""
        self.legacy_spoken = False
        """True once the client made a request in MCP 2025-11-25 (one without the
        2026-07-28 envelope, ``initialize`` included): only then does the connection get
        notifications tied to no request (host log records, the count of dropped ones).
        MCP 2026-07-28 allows ``notifications/message`` only for a request that asked for
        it, before its response ("Logging"), and list changes only on a
        ``subscriptions/listen`` stream."""
        self.shutdown_requested = False
        self.exit_code: int | None = None
        self._exit_deadline: float | None = None
        self.log_level = LOG_LEVELS["info"]
        self.approval = approval if approval is not None else ApprovalPolicy()
        self.approval_timeout = approval_timeout
        self.shutdown_grace = shutdown_grace
        self.pipeline = Pipeline(self.executor, registry.hooks, self.approval, self.ask_approval)
        registry.on_change(self._tools_changed)
        self.modern = ModernServer(self)
        self._call_job = Deferred.to(self.tools_call)
        self._batch_job = Deferred.to(self._tools_call_batch)

    def open_session(
        self, receive: ByteReceiveStream, send: ByteSendStream, **options: Any
    ) -> Session:
        """A session serving this host's methods on the two streams (``options`` are
        :class:`Session`'s: framing, max_message_size, name), attached to this server."""
        session = Session(
            receive, send, router=self.router(), unsolicited=self._unsolicited, **options
        )
        self.session = session
        return session

    def _unsolicited(self) -> bool:
        return self.legacy_spoken

    def router(self) -> Router:
        """The host's methods in both eras, by name.

        Every request is inline (read-loop) first, where its era is chosen by its
        params: an MCP 2026-07-28 request (its ``_meta`` envelope, or
        ``server/discover`` / ``subscriptions/listen``) is deferred to
        :class:`~.modern.ModernServer`; any other request is served in 2025-11-25,
        which tells the host the client speaks that revision (:attr:`legacy_spoken`).
        ``tools/call`` and ``tools/callBatch`` are then answered from a task.
        """
        router = Router()
        inline: dict[str, InlineHandler | None] = {
            **dict.fromkeys(self.modern.methods_of_any_params),
            "initialize": self._initialize,
            "ping": self._ping,
            "tools/list": self.tools_list,
            "logging/setLevel": self._set_level,
            "shutdown": self._shutdown,
            "tools/call": self._read_tools_call,
            CALL_BATCH: lambda params, ctx: self._batch_job,
        }
        for method, legacy in inline.items():
            router.on_inline_request(method, self._either_era(legacy))
        router.on_unknown_request(self._either_era(None))
        router.on_notification("notifications/initialized", self._on_initialized)
        router.on_notification("initialized", self._on_initialized)
        router.on_notification("exit", self._on_exit)
        return router

    def _either_era(self, legacy: InlineHandler | None) -> InlineHandler:
        """An inline handler serving a 2026-07-28 request in :class:`~.modern.ModernServer`
        and any other with ``legacy`` (None: -32601)."""
        modern = self.modern

        def serve(params: Any, ctx: RequestContext) -> Any:
            if modern.claims(ctx.method, params):
                return modern.deferred
            self.legacy_spoken = True
            if legacy is None:
                raise method_not_found(ctx.method)
            return legacy(params, ctx)

        return serve

    # ------------------------------------------------------------------ lifecycle

    def _initialize(self, params: Any, ctx: RequestContext) -> dict[str, Any]:
        params = _object_params(params)
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        self.protocol_version = version
        caps = params.get("capabilities")
        self.client_capabilities = caps if isinstance(caps, dict) else {}
        info = params.get("clientInfo")
        self.client_info = info if isinstance(info, dict) else None
        self.lsp_initialize = "processId" in params
        log.info(
            "initialize from %s (protocol %s → %s)",
            (self.client_info or {}).get("name", "unknown client"),
            requested,
            version,
        )
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": self.server_info(),
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def server_info(self) -> dict[str, Any]:
        """``serverInfo``: ``{name, version, description?}``."""
        info: dict[str, Any] = {"name": self.server_name, "version": __version__}
        if self.server_description:
            info["description"] = self.server_description
        return info

    def _on_initialized(self, params: Any) -> None:
        self.initialized = True

    def _ping(self, params: Any, ctx: RequestContext) -> dict[str, Any]:
        return {}

    def _shutdown(self, params: Any, ctx: RequestContext) -> Deferred:
        """LSP ``shutdown``: refuse new requests (-32600 until ``exit``), let the calls in
        flight end — for at most :attr:`shutdown_grace` seconds, after which they are
        cancelled and answered with -32800 — then answer null. So when its answer
        arrives, every earlier request has had its own (protocol.md §3.4)."""
        self.shutdown_requested = True
        session = ctx.session
        session.refuse_requests(
            lambda method: JsonRpcError(
                INVALID_REQUEST, f"Server is shutting down; {method} refused", {"method": method}
            )
        )
        error = JsonRpcError(
            REQUEST_CANCELLED,
            "Request cancelled: the server shut down before it ended",
            {"reason": "shutdown"},
        )

        async def answer() -> None:
            await session.settle(self.shutdown_grace, error, exclude=ctx)

        return Deferred(answer)

    def _on_exit(self, params: Any) -> None:
        """LSP ``exit``: end the process, code 0 after ``shutdown`` and 1 without (LSP 3.17).

        The host still answers every request it took before it ends: after ``shutdown``
        it waits for the ``shutdown`` answer (which waits for the calls in flight);
        without ``shutdown`` the calls in flight are cancelled and answered with -32800.
        Input after ``exit`` is not read.
        """
        self.exit_code = 0 if self.shutdown_requested else 1
        if self.session is None:
            return
        if self.shutdown_requested:
            grace = self.shutdown_grace + _EXIT_BACKSTOP
            message = "Request cancelled: the server exited before it ended"
        else:
            grace = 0.0
            message = "Request cancelled: the server exited (exit without shutdown)"
        self._exit_deadline = time.monotonic() + grace + ABORT_WAIT
        self.session.close_when_answered(
            grace, JsonRpcError(REQUEST_CANCELLED, message, {"reason": "exit"})
        )

    def seconds_to_exit(self) -> float:
        """Seconds until the answers owed after ``exit`` are settled at the latest (0
        when no ``exit`` came). Safe from any thread."""
        deadline = self._exit_deadline
        return 0.0 if deadline is None else max(0.0, deadline - time.monotonic())

    # ------------------------------------------------------------------ logging

    def _set_level(self, params: Any, ctx: RequestContext) -> dict[str, Any]:
        params = _object_params(params)
        level = params.get("level")
        if type(level) is not str:  # an object or array is not even hashable
            raise JsonRpcError(
                INVALID_PARAMS,
                f"Invalid log level: expected a string, got {json_type(level)}",
                {"supported": list(LOG_LEVELS)},
            )
        if level not in LOG_LEVELS:
            raise JsonRpcError(
                INVALID_PARAMS,
                f"Invalid log level {level!r}",
                {"supported": list(LOG_LEVELS)},
            )
        self.log_level = LOG_LEVELS[level]
        return {}

    def send_log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` when ``level`` meets the client's threshold
        (dropped, and counted, while the client is behind in reading:
        :meth:`~toolwire.session.Session.notify_lossy`). Nothing is sent before the
        client spoke 2025-11-25 (:attr:`legacy_spoken`): a 2026-07-28 client gets log
        records only for its requests that asked (:class:`~.channel.ModernCall`)."""
        if (
            self.session is None
            or not self.legacy_spoken
            or LOG_LEVELS.get(level, 0) < self.log_level
        ):
            return
        self.session.notify_lossy("notifications/message", log_params(level, data, logger))

    def _tools_changed(self) -> None:
        if self.session is not None and self.initialized:
            self.session.notify("notifications/tools/list_changed")

    # ------------------------------------------------------------------ tools

    def tools_list(self, params: Any, ctx: RequestContext) -> dict[str, Any]:
        """``tools/list``: one page of definitions, ``{tools, nextCursor?}``.

        Raises:
            JsonRpcError: -32602 for a cursor that is not a string or not this host's.
        """
        params = _object_params(params)
        cursor = params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise JsonRpcError(INVALID_PARAMS, "cursor must be a string")
        try:
            tools, next_cursor = self.registry.page(cursor, self.page_size)
        except ValueError:
            raise JsonRpcError(INVALID_PARAMS, f"Invalid cursor: {cursor!r}") from None
        result: dict[str, Any] = {"tools": tools}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def tools_call(
        self, params: Any, rctx: RequestContext, modern: ModernCall | None = None
    ) -> dict[str, Any]:
        """``tools/call`` in either era (``modern`` set for 2026-07-28); returns the wire
        ``CallToolResult``.

        Raises:
            JsonRpcError: -32602 for malformed params or an unknown tool.
        """
        if type(params) is not dict:
            raise JsonRpcError(
                INVALID_PARAMS, "tools/call params must be an object {name, arguments?}"
            )
        name = params.get("name")
        if type(name) is not str:
            raise JsonRpcError(INVALID_PARAMS, "tools/call needs a string 'name'")
        if (pending := self.registry.pending) is not None:
            await pending.wait()  # tools listed from the definition cache, not yet confirmed
        tool = self.registry.get(name)
        if tool is None:
            raise JsonRpcError(INVALID_PARAMS, f"Unknown tool: {name}", {"name": name})
        arguments = empty_or_object(params.get("arguments"))  # [] counts as {}
        if arguments is None:
            raise JsonRpcError(INVALID_PARAMS, "'arguments' must be an object")
        if modern is not None:
            ctx = ToolContext(rctx.id, name, self.env, ModernChannel(rctx, modern, rctx.id))
            return await self.pipeline.run(tool, IncomingCall(rctx.id, name, arguments), ctx)
        channel = self._legacy_channel(rctx, params, name)
        ctx = ToolContext(rctx.id, name, self.env, channel)
        if channel.work_done is not None:
            channel.work_done.begin()
        try:
            return await self.pipeline.run(tool, IncomingCall(rctx.id, name, arguments), ctx)
        finally:
            channel.end_work()

    def _legacy_channel(
        self, rctx: RequestContext, params: dict[str, Any], name: str
    ) -> LegacyChannel:
        """The channel of a 2025-11-25 call; with LSP progress (``$/progress``, not
        begun yet) when the call carries LSP's ``workDoneToken`` and the client speaks
        LSP (:attr:`speaks_lsp`)."""
        token = params.get("workDoneToken")
        work_done = None
        if is_valid_id(token) and self.speaks_lsp:
            work_done = WorkDoneProgress(rctx.session, token, name)
        return LegacyChannel(rctx, self, work_done)

    @property
    def speaks_lsp(self) -> bool:
        """True when the client speaks LSP: Content-Length framing, or an LSP
        ``initialize`` (one carrying ``processId``, which LSP 3.17 requires)."""
        session = self.session
        return self.lsp_initialize or (session is not None and session.framing == "lsp")

    def _read_tools_call(self, params: Any, rctx: RequestContext) -> Deferred:
        """A 2025-11-25 ``tools/call`` as it is read: started early when it can be
        (:meth:`_start_early`), then answered from a task (:meth:`tools_call`)."""
        try:
            early = self._start_early(rctx, params)
        except Exception:
            log.exception("early start failed for request %r", rctx.id)
            early = None
        if early is None:
            return self._call_job
        started = early
        return Deferred(lambda: self._execute_early(started))

    async def _execute_early(self, early: Prepared) -> dict[str, Any]:
        """Finish a call sent to its worker as it was read (:meth:`_start_early`), after
        the preflight it had then: it runs as the registry and hooks were at that moment,
        like a call in flight across a reload, and is never sent twice."""
        try:
            return await self.pipeline.execute(early)
        finally:
            if isinstance(early.ctx.channel, LegacyChannel):
                early.ctx.channel.end_work()

    def _start_early(self, rctx: RequestContext, params: Any) -> Prepared | None:
        """As a ``tools/call`` is read (:meth:`_read_tools_call`): when its tool runs in
        a worker and nothing in the host must see the call before the handler (no
        before hook, no approval, no argument preparation, no mutation queue) and its
        arguments pass the host's check, send it to a worker that can take it at once
        (:attr:`Tool.early_start`). The worker then runs it while the request waits
        for its turn in the host; :meth:`tools_call` takes it over. What was decided
        here is the call's preflight (the same outcome :meth:`Pipeline.preflight` gives
        such a call): a reload between now and the request's turn changes nothing for
        it, as for any call already in flight. Its timeout counts from the send.
        Returns the call so started, None when it waits for its turn."""
        if type(params) is not dict:
            return None
        name = params.get("name")
        tool = self.registry.get(name) if type(name) is str else None
        if (
            tool is None
            or self.registry.pending is not None
            or tool.early_start is None
            or tool.prepare_arguments is not None
            or tool.mutates
        ):
            return None
        hooks = self.pipeline.hooks
        if hooks.before and hooks.before_for(tool.name):
            return None
        if self.approval.active and self.approval.needs_approval(tool):
            return None
        arguments = empty_or_object(params.get("arguments"))
        if arguments is None:
            return None
        try:
            checked = tool.check(arguments)
            kwargs = checked.kwargs()
        except ArgumentError:
            return None  # the request reports it
        channel = self._legacy_channel(rctx, params, tool.name)
        ctx = ToolContext(rctx.id, tool.name, self.env, channel)
        timeout = tool.timeout if tool.timeout is not None else self.executor.default_timeout
        flight = tool.early_start(checked.arguments, ctx, timeout)
        if flight is None:
            return None  # it runs in its turn, with a channel of its own
        if channel.work_done is not None:
            channel.work_done.begin()
        ctx.early = flight
        call = IncomingCall(rctx.id, tool.name, arguments)
        log.debug("%s: call %r sent to its worker as it was read", tool.name, rctx.id)
        # A request that ends before its handler took the call (cancelled, or the
        # connection closed) gives it up.
        rctx.on_done = flight.give_up
        return Prepared(tool, call, ctx, checked.arguments, kwargs)

    async def _tools_call_batch(self, params: Any, rctx: RequestContext) -> dict[str, Any]:
        return await run_batch(
            params,
            rctx,
            registry=self.registry,
            pipeline=self.pipeline,
            env=self.env,
            channel_for=lambda call_id: LegacyChannel(None, self),
        )

    # ------------------------------------------------------------------ approval

    async def ask_approval(
        self, call: IncomingCall, tool: Tool, arguments: dict[str, Any]
    ) -> ApprovalDecision | HostDenial:
        """Ask the client (``toolwire/approve``, else an elicitation form, in either
        era); see :func:`toolwire.host.calls.approval.approve_call`."""
        return await approve_call(self, call, tool, arguments)


def _object_params(params: Any) -> dict[str, Any]:
    if params is None:
        return {}
    if type(params) is not dict:
        raise JsonRpcError(INVALID_PARAMS, PARAMS_NOT_AN_OBJECT)
    return params

"""The 2025-11-25 face of the host (with LSP framing and lifecycle): one session's methods.

Owns what a connection in that revision has: the lifecycle (``initialize``, ``ping``,
``shutdown``/``exit``, ``notifications/initialized``), the client's ``initialize``
capabilities and info, the ``logging/setLevel`` threshold and host log records, list
change notifications, and which era each request read is served in: one of 2026-07-28
(its ``_meta`` envelope, ``server/discover``, ``subscriptions/listen``) goes to
:class:`~.modern.ModernServer`, any other is served here. Its tool methods
(``tools/list``, ``tools/call``, ``tools/callBatch``) are the kernel's
(:class:`~.kernel.HostKernel`), called with a
:class:`~toolwire.host.tools.channel.LegacyChannel`: progress on the request's token and
as LSP ``$/progress`` on its ``workDoneToken`` from a client speaking LSP; log at the
level set; questions and ``toolwire/approve`` (to clients that declared the approval
capability, when the approval policy marks a call) as host→client requests. The two
cancellation dialects are the session's. See protocol.md for params, results and errors.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from anyio.abc import ByteReceiveStream, ByteSendStream

from toolwire.constants import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS
from toolwire.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    REQUEST_CANCELLED,
    JsonRpcError,
)
from toolwire.extensions import CALL_BATCH
from toolwire.jsonschema_facts import json_type
from toolwire.messages import is_valid_id
from toolwire.router import Deferred, InlineHandler, Router, method_not_found
from toolwire.session import ABORT_WAIT, RequestContext, Session

from ..calls.approval import ApprovalPolicy
from ..calls.executor import Executor
from ..calls.pipeline import Pipeline, Prepared
from ..sandbox.env import ExecEnv
from ..tools.channel import LOG_LEVELS, LegacyChannel, WorkDoneProgress, log_params
from ..tools.registry import Registry
from .kernel import HostKernel, object_params
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

    Builds the kernel (:attr:`kernel`, the tool methods of both eras) and the 2026-07-28
    face over it (:attr:`modern`); neither refers back to this object.

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
        self.kernel = HostKernel(
            registry,
            env,
            executor,
            page_size=page_size,
            approval=approval,
            approval_timeout=approval_timeout,
            instructions=instructions,
            server_name=server_name,
            server_description=server_description,
        )
        """The tool methods and identity both eras share."""
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
        self.shutdown_grace = shutdown_grace
        registry.on_change(self.tools_changed)
        self.modern = ModernServer(self.kernel)
        """The 2026-07-28 face, over the same kernel."""
        self._call_job = Deferred.to(self.tools_call)
        self._batch_job = Deferred.to(self._tools_call_batch)

    # The kernel's parts, as this face's own attributes were before the kernel held them.

    @property
    def registry(self) -> Registry:
        """The tools offered (the kernel's)."""
        return self.kernel.registry

    @property
    def env(self) -> ExecEnv:
        """The environment handlers act in (the kernel's)."""
        return self.kernel.env

    @property
    def executor(self) -> Executor:
        """What runs calls (the kernel's)."""
        return self.kernel.executor

    @property
    def pipeline(self) -> Pipeline:
        """Every call's preflight and execution (the kernel's)."""
        return self.kernel.pipeline

    @property
    def approval(self) -> ApprovalPolicy:
        """Which calls need the client's approval (the kernel's)."""
        return self.kernel.approval

    @property
    def approval_timeout(self) -> float:
        """Seconds a ``toolwire/approve`` waits for its answer (the kernel's)."""
        return self.kernel.approval_timeout

    @property
    def instructions(self) -> str | None:
        """``initialize``'s ``instructions`` (the kernel's)."""
        return self.kernel.instructions

    def server_info(self) -> dict[str, Any]:
        """``serverInfo``: ``{name, version, description?}`` (the kernel's)."""
        return self.kernel.server_info()

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
        :class:`~.modern.ModernServer` (none after an LSP ``shutdown``); any other
        request is served in 2025-11-25, which tells the host the client speaks that
        revision (:attr:`legacy_spoken`). ``tools/call`` and ``tools/callBatch`` are
        then answered from a task.
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
            if not self.shutdown_requested and modern.claims(ctx.method, params):
                return modern.deferred
            self.legacy_spoken = True
            if legacy is None:
                raise method_not_found(ctx.method)
            return legacy(params, ctx)

        return serve

    # ------------------------------------------------------------------ lifecycle

    def _initialize(self, params: Any, ctx: RequestContext) -> dict[str, Any]:
        params = object_params(params)
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
        params = object_params(params)
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

    def tools_changed(self) -> None:
        """Tell this connection's client the tool list changed
        (``notifications/tools/list_changed``, MCP 2025-11-25 "Tools: List Changed Notification"),
        once it is initialized. Registered with the registry at construction; a transport
        that ends the connection first takes it off (``Registry.off_change``)."""
        if self.session is not None and self.initialized:
            self.session.notify("notifications/tools/list_changed")

    # ------------------------------------------------------------------ tools

    def tools_list(self, params: Any, ctx: RequestContext) -> dict[str, Any]:
        """``tools/list`` in 2025-11-25 (:meth:`HostKernel.tools_list`)."""
        return self.kernel.tools_list(params)

    async def tools_call(self, params: Any, rctx: RequestContext) -> dict[str, Any]:
        """``tools/call`` in 2025-11-25 (:meth:`HostKernel.tools_call` on the call's
        :class:`LegacyChannel`); returns the wire ``CallToolResult``.

        Raises:
            JsonRpcError: -32602 for malformed params or an unknown tool.
        """
        return await self.kernel.tools_call(params, rctx, self._legacy_channel(rctx, params))

    def _legacy_channel(self, rctx: RequestContext, params: Any) -> LegacyChannel:
        """The channel of a 2025-11-25 call; with LSP progress (``$/progress``, begun when
        the call starts) when the call carries LSP's ``workDoneToken`` and the client
        speaks LSP (:attr:`speaks_lsp`). The title is the tool's name (params the
        kernel refuses start nothing on the channel)."""
        work_done = None
        if type(params) is dict:
            token = params.get("workDoneToken")
            name = params.get("name")
            if is_valid_id(token) and type(name) is str and self.speaks_lsp:
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
        (:meth:`HostKernel.start_early`), then answered from a task (:meth:`tools_call`)."""
        try:
            early = self.kernel.start_early(rctx, params, self._legacy_channel)
        except Exception:
            log.exception("early start failed for request %r", rctx.id)
            early = None
        if early is None:
            return self._call_job
        started: Prepared = early
        flight = early.ctx.early
        # Its task is started only once the worker's answer is in (or the call ends
        # otherwise), so it runs once, not once to wait and once more to answer.
        hold = flight.when_answered if flight is not None else None
        return Deferred(lambda: self.kernel.execute_early(started), hold=hold)

    async def _tools_call_batch(self, params: Any, rctx: RequestContext) -> dict[str, Any]:
        return await self.kernel.tools_call_batch(params, rctx, LegacyChannel(rctx, self))

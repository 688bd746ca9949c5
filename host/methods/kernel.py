"""The kernel both protocol eras call down into: the tool methods and what the host is.

Owns: the host's identity (``serverInfo``, ``instructions``), ``tools/list`` (pages of
the registry), ``tools/call`` (params checked, then the call pipeline: preflight,
approval, execution), ``tools/callBatch`` (:func:`~.batch.run_batch`), the early start
of a call read on the connection, and asking for approval (through the call's channel:
:func:`toolwire.host.calls.approval.approve_call`). It holds the registry, the
environment, the executor, the approval policy and the :class:`Pipeline` over them.

Does not know the era. The caller — the 2025-11-25 face (:mod:`.server`) or the
2026-07-28 face (:mod:`.modern`) — passes the call's channel
(:class:`~toolwire.host.tools.channel.CallChannel`); that object is the era's one
choice: where progress and log records go, how a question (a tool's or an approval)
travels, whether an LSP ``$/progress`` runs beside the call. What a result looks like
on the wire in each era (``resultType``, ``ttlMs``, input-required) is the face's.
Nothing here imports or calls a face (tests/host/methods/test_methods_kernel.py holds it).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from toolwire import __version__
from toolwire.errors import INVALID_PARAMS, JsonRpcError
from toolwire.extensions import ApprovalDecision
from toolwire.messages import empty_or_object
from toolwire.session import PARAMS_NOT_AN_OBJECT, RequestContext

from ..calls.approval import ApprovalPolicy, HostDenial, approve_call
from ..calls.executor import Executor
from ..calls.pipeline import Pipeline, Prepared
from ..sandbox.env import ExecEnv
from ..tools.arguments import ArgumentError
from ..tools.channel import CallChannel
from ..tools.context import ToolContext
from ..tools.definition import Tool
from ..tools.hooks import IncomingCall
from ..tools.registry import Registry
from .batch import run_batch

__all__ = ["ChannelFor", "HostKernel", "object_params"]

log = logging.getLogger("toolwire.host")

ChannelFor = Callable[[RequestContext, Any], CallChannel]
"""``channel_for(rctx, params)``: the channel of a call read on the connection, built only
when the call is started early (:meth:`HostKernel.start_early`)."""


class HostKernel:
    """The tool methods of one host, shared by both era faces.

    Args:
        registry: the tools to offer.
        env: the execution environment handlers act in.
        executor: runs calls (timeouts, worker threads).
        page_size: tool definitions per ``tools/list`` page.
        approval: which calls need the client's approval (default: none).
        approval_timeout: seconds to wait for a 2025-11-25 client's approval answer.
        instructions: text for ``initialize``'s and ``server/discover``'s ``instructions``.
        server_name: ``serverInfo.name``.
        server_description: ``serverInfo.description``.
    """

    def __init__(
        self,
        registry: Registry,
        env: ExecEnv,
        executor: Executor | None = None,
        *,
        page_size: int = 500,
        approval: ApprovalPolicy | None = None,
        approval_timeout: float = 120.0,
        instructions: str | None = None,
        server_name: str = "toolwire",
        server_description: str | None = None,
    ) -> None:
        self.registry = registry
        self.env = env
        self.executor = executor or Executor()
        self.page_size = page_size
        self.approval = approval if approval is not None else ApprovalPolicy()
        self.approval_timeout = approval_timeout
        self.instructions = instructions
        self.server_name = server_name
        self.server_description = server_description
        self.pipeline = Pipeline(self.executor, registry.hooks, self.approval, self._approve)

    @functools.cached_property
    def brief_info(self) -> dict[str, Any]:
        """``{name, version}``: the server info every 2026-07-28 result carries (shared:
        only ever encoded, never changed)."""
        return {"name": self.server_name, "version": __version__}

    def server_info(self) -> dict[str, Any]:
        """``serverInfo``: ``{name, version, description?}``."""
        info: dict[str, Any] = {"name": self.server_name, "version": __version__}
        if self.server_description:
            info["description"] = self.server_description
        return info

    # ------------------------------------------------------------------ tools/list

    def tools_list(self, params: Any) -> dict[str, Any]:
        """``tools/list``: one page of definitions, ``{tools, nextCursor?}``.

        Args:
            params: the request's params without the 2026-07-28 ``_meta`` envelope.

        Raises:
            JsonRpcError: -32602 for params that are not an object, or a cursor that is
                not a string or not this host's.
        """
        params = object_params(params)
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

    # ------------------------------------------------------------------ tools/call

    async def tools_call(
        self, params: Any, rctx: RequestContext, channel: CallChannel
    ) -> dict[str, Any]:
        """``tools/call``; returns the wire ``CallToolResult``.

        Args:
            params: ``{name, arguments?}`` (and whatever else the era's request holds).
            rctx: the request (its id is the call's id).
            channel: the call's way back to its client, of the request's era; its
                :meth:`~CallChannel.begin_work` and :meth:`~CallChannel.end_work`
                bracket the call.

        Raises:
            JsonRpcError: -32602 for malformed params or an unknown tool (before anything
                is sent on ``channel``).
            InputNeeded: 2026-07-28, the call asked what the request did not bring (the
                face answers input-required).
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
        ctx = ToolContext(rctx.id, name, self.env, channel)
        rctx.on_cancel = ctx.cancelling
        channel.begin_work()
        try:
            return await self.pipeline.run(tool, IncomingCall(rctx.id, name, arguments), ctx)
        finally:
            channel.end_work()

    def start_early(
        self, rctx: RequestContext, params: Any, channel_for: ChannelFor
    ) -> Prepared | None:
        """As a ``tools/call`` is read: when its tool runs in a worker and nothing in the
        host must see the call before the handler (no before hook, no approval, no
        argument preparation, no mutation queue) and its arguments pass the host's check,
        send it to a worker that can take it at once (:attr:`Tool.early_start`). The
        worker then runs it while the request waits for its turn in the host;
        :meth:`execute_early` takes it over. What was decided here is the call's
        preflight (the same outcome :meth:`Pipeline.preflight` gives such a call): a
        reload between now and the request's turn changes nothing for it, as for any
        call already in flight. Its timeout counts from the send.

        Args:
            rctx: the request.
            params: its params.
            channel_for: builds the call's channel (only when the call is sent).

        Returns:
            The call so started, None when it waits for its turn (:meth:`tools_call`).
        """
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
        channel = channel_for(rctx, params)
        ctx = ToolContext(rctx.id, tool.name, self.env, channel)
        timeout = tool.timeout if tool.timeout is not None else self.executor.default_timeout
        flight = tool.early_start(checked.arguments, ctx, timeout)
        if flight is None:
            return None  # it runs in its turn, with a channel of its own
        channel.begin_work()
        ctx.early = flight
        call = IncomingCall(rctx.id, tool.name, arguments)
        log.debug("%s: call %r sent to its worker as it was read", tool.name, rctx.id)
        # A request that ends before its handler took the call (cancelled, or the
        # connection closed) gives it up.
        rctx.on_done = flight.give_up
        rctx.on_cancel = ctx.cancelling
        return Prepared(tool, call, ctx, checked.arguments, kwargs)

    async def execute_early(self, early: Prepared) -> dict[str, Any]:
        """Finish a call :meth:`start_early` sent, after the preflight it had then: it
        runs as the registry and hooks were at that moment, like a call in flight across
        a reload, and is never sent twice."""
        try:
            return await self.pipeline.execute(early)
        finally:
            early.ctx.channel.end_work()

    # ------------------------------------------------------------------ tools/callBatch

    async def tools_call_batch(
        self, params: Any, rctx: RequestContext, channel: CallChannel
    ) -> dict[str, Any]:
        """``tools/callBatch``: ``{results, terminate?}`` (:func:`~.batch.run_batch`);
        each call's channel is ``channel``'s
        :meth:`~toolwire.host.tools.channel.CallChannel.for_batch_call`.

        Raises:
            JsonRpcError: -32602 for a malformed batch.
        """
        return await run_batch(
            params,
            rctx,
            registry=self.registry,
            pipeline=self.pipeline,
            env=self.env,
            channel=channel,
        )

    # ------------------------------------------------------------------ approval

    async def _approve(
        self, call: IncomingCall, tool: Tool, arguments: dict[str, Any], channel: CallChannel
    ) -> ApprovalDecision | HostDenial:
        return await approve_call(channel, call, tool, arguments, timeout=self.approval_timeout)


def object_params(params: Any) -> dict[str, Any]:
    """``params`` of a method whose params are an optional object (absent: ``{}``).

    Raises:
        JsonRpcError: -32602 :data:`~toolwire.session.PARAMS_NOT_AN_OBJECT` for any
            other value.
    """
    if params is None:
        return {}
    if type(params) is not dict:
        raise JsonRpcError(INVALID_PARAMS, PARAMS_NOT_AN_OBJECT)
    return params

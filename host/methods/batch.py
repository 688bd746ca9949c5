"""``tools/callBatch``: one request running several tool calls (an assistant message's calls).

Three phases (see protocol.md, "Batches and approval"):

1. preflight, in source order: lookup, ``prepare_arguments``, coercion and validation,
   before hooks, approval. A call failing any of them gets its error result at once and
   never runs;
2. the rest execute concurrently, or one after another when the batch asks for
   ``mode: "sequential"`` or any call targets a tool declared ``execution_mode="sequential"``;
3. results come back in source order, each paired with its call id.

``stopReason: "length"`` (the model's output was cut off) runs nothing: every call gets an
error result asking for it again. With ``_meta.progressToken`` the host reports each
call's start, progress and end, and the batch's progress; nothing after the response.

Owns the batch's run and its per-call progress (:class:`_BatchCallChannel`); the era is
the request channel's that the kernel passes (each call gets its
:meth:`~toolwire.host.tools.channel.CallChannel.for_batch_call`). In 2026-07-28 a
question in any call's preflight (an approval) stops the batch before anything runs;
the face (``host/methods/modern.py``) turns the round into the input-required result.
"""

from __future__ import annotations

from typing import Any

import anyio

from toolwire.extensions import (
    CALL_ENDED,
    CALL_PROGRESS,
    CALL_STARTED,
    BatchCall,
    batch_terminates,
    length_stop_text,
    parse_call_batch,
)
from toolwire.messages import RequestId
from toolwire.session import RequestContext, progress_accepted

from ..calls.pipeline import Pipeline, Prepared, Refused
from ..sandbox.env import ExecEnv
from ..tools.channel import CallChannel
from ..tools.context import ToolContext
from ..tools.hooks import IncomingCall
from ..tools.registry import Registry
from ..tools.results import error_result
from ..tools.rounds import InputNeeded

__all__ = ["run_batch"]


class _BatchCallChannel(CallChannel):
    """The channel of one call of a batch: its progress becomes ``callProgress``; log,
    drain and questions go through the channel of the call's kind (``base``)."""

    __slots__ = ("_base", "_batch", "_call_id", "_last", "done")

    def __init__(self, base: CallChannel, batch: _BatchRun, call_id: RequestId) -> None:
        self._base = base
        self._batch = batch
        self._call_id = call_id
        self._last: float | None = None
        self.done = False

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self._base.client_capabilities

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self.done or not progress_accepted(self._last, progress, total):
            return
        self._last = progress
        params: dict[str, Any] = {"callId": self._call_id, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._batch.notify(CALL_PROGRESS, params)

    def log(self, level: str, data: Any, logger: str | None) -> None:
        self._base.log(level, data, logger)

    async def drain(self) -> None:
        await self._base.drain()

    async def ask(self, method: str, params: dict[str, Any], key: str) -> Any:
        return await self._base.ask(method, params, key)

    @property
    def reaches_client(self) -> bool:
        return self._base.reaches_client

    async def ask_approval(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        return await self._base.ask_approval(method, params, timeout)


class _BatchRun:
    def __init__(self, pipeline: Pipeline, calls: list[BatchCall], rctx: RequestContext) -> None:
        self.pipeline = pipeline
        self.calls = calls
        self.rctx = rctx
        self.results: list[dict[str, Any] | None] = [None] * len(calls)
        self.progress: list[_BatchCallChannel | None] = [None] * len(calls)
        self.finished = 0

    def notify(self, method: str, params: dict[str, Any]) -> bool:
        rctx = self.rctx
        token = rctx.progress_token
        if token is None or rctx.done or rctx.cancelled_by is not None:
            return False
        rctx.session.notify(method, {"progressToken": token, **params})
        return True

    def started(self, i: int) -> None:
        call = self.calls[i]
        self.notify(CALL_STARTED, {"callId": call.id, "name": call.name})

    def ended(self, i: int, result: dict[str, Any]) -> None:
        call = self.calls[i]
        self.results[i] = result
        reporter = self.progress[i]
        if reporter is not None:
            reporter.done = True
        self.finished += 1
        self.notify(CALL_ENDED, {"callId": call.id, "isError": result.get("isError") is True})
        self.rctx.report_progress(self.finished, len(self.calls), f"{call.name} finished")

    def immediate(self, i: int, result: dict[str, Any]) -> None:
        self.started(i)
        self.ended(i, result)

    async def execute(self, i: int, prepared: Prepared) -> None:
        self.started(i)
        result = await self.pipeline.execute(prepared)
        self.ended(i, result)


async def run_batch(
    params: Any,
    rctx: RequestContext,
    *,
    registry: Registry,
    pipeline: Pipeline,
    env: ExecEnv,
    channel: CallChannel,
) -> dict[str, Any]:
    """Serve one ``tools/callBatch`` request; returns ``{results, terminate?}``.

    Args:
        params: the request's params.
        rctx: the request (its progress token carries the per-call notifications).
        registry: where the calls' tools are looked up.
        pipeline: preflight and execution of each call.
        env: the environment the tools act in.
        channel: the request's channel, of its era: each call gets
            :meth:`~toolwire.host.tools.channel.CallChannel.for_batch_call` (log, drain,
            questions, approval), with the batch's own progress reporting on top.

    Raises:
        JsonRpcError: -32602 for a malformed envelope (see
            :func:`toolwire.extensions.parse_call_batch`).
    """
    request = parse_call_batch(params)
    calls, sequential = request.calls, request.sequential
    run = _BatchRun(pipeline, calls, rctx)
    if request.stop_reason == "length":
        for i, call in enumerate(calls):
            run.immediate(i, error_result(length_stop_text(call.name)))
        return _batch_result(run)

    if (pending := registry.pending) is not None:
        await pending.wait()  # tools listed from the definition cache, not yet confirmed
    ready: list[tuple[int, Prepared]] = []
    asking = False
    for i, call in enumerate(calls):
        tool = registry.get(call.name)
        if tool is None:
            run.immediate(i, error_result(f"Unknown tool: {call.name}"))
            continue
        if tool.execution_mode == "sequential":
            sequential = True
        if i in request.malformed:
            run.immediate(i, error_result(f'Arguments of tool call "{call.id}" must be an object'))
            continue
        own = _BatchCallChannel(channel.for_batch_call(call.id), run, call.id)
        run.progress[i] = own
        ctx = ToolContext(call.id, call.name, env, own)
        try:
            outcome = await pipeline.preflight(
                tool, IncomingCall(call.id, call.name, call.arguments, rctx.id), ctx
            )
        except InputNeeded:
            # 2026-07-28: an approval to ask; the other calls are asked in the same round.
            asking = True
            continue
        if isinstance(outcome, Refused):
            run.immediate(i, outcome.result)
        else:
            ready.append((i, outcome))

    if asking:
        return {}  # nothing runs; the input-required result replaces this (host/methods/modern.py)
    if sequential:
        for i, prepared in ready:
            await run.execute(i, prepared)
    else:
        async with anyio.create_task_group() as tg:
            for i, prepared in ready:
                tg.start_soon(run.execute, i, prepared)
    return _batch_result(run)


def _batch_result(run: _BatchRun) -> dict[str, Any]:
    results = [r if r is not None else error_result("Internal error") for r in run.results]
    out: dict[str, Any] = {
        "results": [
            {"id": call.id, "name": call.name, "result": result}
            for call, result in zip(run.calls, results, strict=True)
        ]
    }
    if batch_terminates(results):
        out["terminate"] = True
    return out

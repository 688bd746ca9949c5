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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

from .context import ToolContext
from .hooks import IncomingCall
from .modern import InputNeeded
from .pipeline import Prepared
from .results import error_result

if TYPE_CHECKING:
    from .modern import ModernCall
    from .server import HostServer

__all__ = ["run_batch"]


class _CallProgress:
    """Stands in for a call's request context: its progress becomes ``callProgress``."""

    __slots__ = ("_batch", "_call_id", "_last", "done")

    def __init__(self, batch: _BatchRun, call_id: RequestId) -> None:
        self._batch = batch
        self._call_id = call_id
        self._last: float | None = None
        self.done = False

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> bool:
        if self.done or not progress_accepted(self._last, progress, total):
            return False
        self._last = progress
        params: dict[str, Any] = {"callId": self._call_id, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        return self._batch.notify(CALL_PROGRESS, params)


class _BatchRun:
    def __init__(self, server: HostServer, calls: list[BatchCall], rctx: RequestContext) -> None:
        self.server = server
        self.calls = calls
        self.rctx = rctx
        self.results: list[dict[str, Any] | None] = [None] * len(calls)
        self.progress: list[_CallProgress | None] = [None] * len(calls)
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
        result = await self.server.pipeline.execute(prepared)
        self.ended(i, result)


async def run_batch(
    server: HostServer, params: Any, rctx: RequestContext, modern: ModernCall | None = None
) -> dict[str, Any]:
    """Serve one ``tools/callBatch`` request; returns ``{results, terminate?}``.

    Raises:
        JsonRpcError: -32602 for a malformed envelope (see
            :func:`toolwire.extensions.parse_call_batch`).
    """
    request = parse_call_batch(params)
    calls, sequential = request.calls, request.sequential
    run = _BatchRun(server, calls, rctx)
    if request.stop_reason == "length":
        for i, call in enumerate(calls):
            run.immediate(i, error_result(length_stop_text(call.name)))
        return _batch_result(run)

    registry = server.registry
    pipeline = server.pipeline
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
        reporter = _CallProgress(run, call.id)
        run.progress[i] = reporter
        ctx = ToolContext(call.id, call.name, server.env, server, reporter, modern)
        try:
            outcome = await pipeline.preflight(
                tool, IncomingCall(call.id, call.name, call.arguments, rctx.id), ctx
            )
        except InputNeeded:
            # 2026-07-28: an approval to ask; the other calls are asked in the same round.
            asking = True
            continue
        if isinstance(outcome, Prepared):
            ready.append((i, outcome))
        else:
            run.immediate(i, outcome)

    if asking:
        return {}  # nothing runs; the input-required result replaces this (host/modern.py)
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

"""The call pipeline every ``tools/call`` and every call of a ``tools/callBatch`` goes through.

Preflight (:meth:`Pipeline.preflight`): ``prepare_arguments`` → coercion and validation →
before hooks (changed arguments validated again) → the client's approval when the policy
asks for it (replacement arguments validated again) → conversion for the handler. A
failure at any step is the call's error result; the tool never runs.

Execution (:meth:`Pipeline.execute`): the per-file mutation queue, the handler under its
timeout (:class:`~toolwire.host.calls.executor.Executor`), then the after hooks.
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from toolwire.extensions import ApprovalDecision

from ..tools.arguments import ArgumentError
from ..tools.channel import CallChannel
from ..tools.context import ToolContext
from ..tools.definition import Tool
from ..tools.hooks import Block, HookError, HookSet, IncomingCall, ResultPatch, call_hook
from ..tools.results import ToolResult, error_result
from .approval import ApprovalPolicy, HostDenial
from .executor import Executor, format_argument_error

__all__ = ["Approver", "Pipeline", "Preflight", "Prepared", "Refused"]

log = logging.getLogger("toolwire.pipeline")

Approver = Callable[
    [IncomingCall, Tool, dict[str, Any], CallChannel], Awaitable[ApprovalDecision | HostDenial]
]
"""``await approver(call, tool, args, channel)``: the client's decision, asked through the
call's channel (``ctx.channel``), or a denial the host made itself (no capability, no
answer in time, a malformed answer)."""


@dataclass(slots=True)
class Prepared:
    """A call that passed preflight and may run.

    Attributes:
        tool: the tool.
        call: the call as received.
        ctx: the context the handler and hooks receive.
        args: the checked arguments (what the hooks saw and the tool runs with).
        kwargs: the handler's keyword arguments.
    """

    tool: Tool
    call: IncomingCall
    ctx: ToolContext
    args: dict[str, Any]
    kwargs: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Refused:
    """A call that failed preflight and never runs.

    Attributes:
        result: its error result (a wire ``CallToolResult`` with ``isError: true``).
    """

    result: dict[str, Any]


Preflight = Prepared | Refused
"""What :meth:`Pipeline.preflight` returns: the call ready to run, or why it may not."""


class Pipeline:
    """Runs calls through preflight and execution.

    Args:
        executor: runs handlers (timeouts, threads, the mutation queue).
        hooks: before/after hooks (usually the registry's).
        policy: which calls need the client's approval.
        approver: asks the client; required when ``policy`` is active.
    """

    def __init__(
        self,
        executor: Executor,
        hooks: HookSet | None = None,
        policy: ApprovalPolicy | None = None,
        approver: Approver | None = None,
    ) -> None:
        self.executor = executor
        self.hooks = hooks if hooks is not None else HookSet()
        self.policy = policy if policy is not None else ApprovalPolicy()
        self.approver = approver

    async def run(self, tool: Tool, call: IncomingCall, ctx: ToolContext) -> dict[str, Any]:
        """Preflight and execute one call; return its wire ``CallToolResult``."""
        outcome = await self.preflight(tool, call, ctx)
        if isinstance(outcome, Refused):
            return outcome.result
        return await self.execute(outcome)

    async def preflight(self, tool: Tool, call: IncomingCall, ctx: ToolContext) -> Preflight:
        """Everything before the handler runs; returns the call ready to run
        (:class:`Prepared`) or its error result (:class:`Refused`). Never raises for the
        call's own failures."""
        name = tool.name
        args: Any = call.arguments
        if tool.prepare_arguments is not None:
            try:
                args = tool.prepare_arguments(copy.deepcopy(args))
                if inspect.isawaitable(args):  # a tool served by a worker process
                    args = await args
            except Exception as exc:
                return _refused(
                    f'Could not prepare the arguments of tool "{name}": {_message(exc)}'
                )
        try:
            checked = tool.check(args)
        except ArgumentError as exc:
            return _refused(format_argument_error(name, exc.problems, args))
        args = checked.arguments

        hooks = self.hooks
        if hooks.before:
            befores = hooks.before_for(name)
            if befores:
                # Hooks may change the arguments in place; the recorded call stays raw.
                args = copy.deepcopy(args)
                for hook in befores:
                    try:
                        out = await call_hook(hook, call, args, ctx)
                    except HookError as exc:
                        return _refused(str(exc))
                    if isinstance(out, Block):
                        return _refused(out.reason or f'Tool call "{name}" was blocked by a hook')
                    if type(out) is dict:
                        args = out
                    elif out is not None:
                        return _refused(
                            f'before_tool_call hook "{hook.name}" returned '
                            f"{type(out).__name__}; expected None, Block or a dict of arguments"
                        )
                try:
                    checked = tool.check(args)
                except ArgumentError as exc:
                    return _refused(
                        format_argument_error(name, exc.problems, args)
                        + "\n(the arguments as a before_tool_call hook left them)"
                    )
                args = checked.arguments

        policy = self.policy
        if policy.active and policy.needs_approval(tool):
            if self.approver is None:
                return _refused(f'Call denied: tool "{name}" needs approval and nobody can give it')
            decision = await self.approver(call, tool, args, ctx.channel)
            if isinstance(decision, HostDenial):
                return _refused(decision.message)
            if not decision.allowed:
                return _refused(
                    f"Call denied by the client: {decision.reason or 'no reason given'}"
                )
            if decision.arguments is not None:
                try:
                    checked = tool.check(decision.arguments)
                except ArgumentError as exc:
                    return _refused(
                        format_argument_error(name, exc.problems, decision.arguments)
                        + "\n(the replacement arguments the client approved)"
                    )
                args = checked.arguments
        try:
            kwargs = checked.kwargs()
        except ArgumentError as exc:
            return _refused(format_argument_error(name, exc.problems, args))
        return Prepared(tool, call, ctx, args, kwargs)

    async def execute(self, p: Prepared) -> dict[str, Any]:
        """Run a prepared call (mutation queue, timeout) and its after hooks."""
        tool = p.tool
        result = await self.executor.invoke(tool, p.kwargs, p.ctx, arguments=p.args)
        hooks = self.hooks
        if hooks.after:
            afters = hooks.after_for(tool.name)
            if afters:
                view = ToolResult.from_wire(result)
                for hook in afters:
                    try:
                        patch = await call_hook(hook, p.call, p.args, view, p.ctx)
                    except HookError as exc:
                        return error_result(str(exc))
                    if patch is None:
                        continue
                    if not isinstance(patch, ResultPatch):
                        return error_result(
                            f'after_tool_call hook "{hook.name}" returned '
                            f"{type(patch).__name__}; expected None or a ResultPatch"
                        )
                    try:
                        view = patch.apply(view)
                    except TypeError as exc:
                        return error_result(
                            f'after_tool_call hook "{hook.name}" gave unusable content: {exc}'
                        )
                result = view.to_wire()
        return result


def _refused(message: str) -> Refused:
    return Refused(error_result(message))


def _message(exc: BaseException) -> str:
    try:
        return str(exc) or type(exc).__name__
    except Exception:
        return type(exc).__name__

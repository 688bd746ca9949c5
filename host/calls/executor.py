"""The executor: runs one tool handler under its timeout and the per-file mutation queue.

Failures the model can correct come back as results with ``isError: true`` (invalid
arguments, a handler that raised, a timeout), as MCP 2025-11-25 asks ("Error
Handling"). Only an unknown tool is a protocol error (-32602), raised by the caller.
The full call pipeline (hooks, approval) is :class:`toolwire.host.calls.pipeline.Pipeline`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.to_thread

from toolwire import _json
from toolwire.session import is_stray_cancellation

from ..tools.context import ToolContext
from ..tools.definition import Tool

if TYPE_CHECKING:
    from .mutation import MutationQueue
from ..tools.results import (
    ProtocolFailure,
    ToolResult,
    WireResult,
    error_result,
    is_content_dict,
    is_pydantic_model,
    json_text,
    to_wire_content,
)

__all__ = ["Executor", "format_argument_error", "shared_mutation_queue"]

_shared_queue: MutationQueue | None = None


def shared_mutation_queue() -> MutationQueue:
    """The process-wide per-file mutation queue every :class:`Executor` uses by default
    (made at first use: a worker process, whose host keeps the queue, never needs it)."""
    global _shared_queue
    if _shared_queue is None:
        from .mutation import MutationQueue

        _shared_queue = MutationQueue()
    return _shared_queue


log = logging.getLogger("toolwire.executor")


def format_argument_error(tool_name: str, problems: list[tuple[str, str]], arguments: Any) -> str:
    """The text of an invalid-arguments result: every failing path, then what was received."""
    lines = [f'Invalid arguments for tool "{tool_name}":']
    lines += [f"  - {path}: {reason}" for path, reason in problems]
    try:
        received = _json.dumps(arguments).decode("utf-8")
    except TypeError:
        received = repr(arguments)
    if len(received) > 2000:
        received = received[:2000] + f"... ({len(received)} characters in all)"
    lines += ["", "Received arguments:", received]
    return "\n".join(lines)


class Executor:
    """Invokes handlers of calls that passed preflight (:class:`~toolwire.host.calls.pipeline.Pipeline`
    owns lookup, validation, hooks and approval): the mutation queue, the timeout, the
    worker threads, and turning what the handler gave into a result.

    Args:
        default_timeout: seconds a call may run when its tool sets no timeout; None
            means no limit.
        max_threads: worker threads for synchronous handlers. Reading and answering
            never wait on this pool; a sync call beyond the limit waits for a thread.
        mutations: the per-file mutation queue (default: the process-wide one).
        abandon_threads: when a call of a synchronous handler is cancelled, return at
            once and leave its thread running (the host's choice: a stuck handler never
            holds up the answer); False waits for the thread to finish (a worker process,
            whose host kills it when the handler does not stop, :mod:`.worker`).
    """

    def __init__(
        self,
        default_timeout: float | None = 600.0,
        max_threads: int = 256,
        mutations: MutationQueue | None = None,
        *,
        abandon_threads: bool = True,
    ) -> None:
        self.default_timeout = default_timeout
        self.abandon_threads = abandon_threads
        self.limiter = anyio.CapacityLimiter(max_threads)
        self._mutations = mutations

    @property
    def mutations(self) -> MutationQueue:
        """The per-file mutation queue this executor holds paths in."""
        if self._mutations is None:
            self._mutations = shared_mutation_queue()
        return self._mutations

    async def invoke(
        self,
        tool: Tool,
        kwargs: dict[str, Any],
        ctx: ToolContext,
        *,
        arguments: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run ``tool`` with already-validated keyword arguments, under its timeout.

        When the tool declares ``mutates``, the call first waits its turn in the per-file
        mutation queue for the paths named in ``arguments`` (the checked arguments;
        ``kwargs`` when not given), then holds their cross-host locks (:mod:`.rootlock`);
        a lock that cannot be taken fails the call (an error result).
        """
        if tool.mutates:
            from .mutation import mutation_keys

            source = arguments if arguments is not None else kwargs
            keys = mutation_keys(tool.mutates, source, ctx.env)
            if keys:
                from .rootlock import RootLockError, hold_root_locks

                async with self.mutations.hold(keys):
                    try:
                        async with hold_root_locks(ctx.env.root, keys):
                            return redact(await self._invoke(tool, kwargs, ctx))
                    except RootLockError as exc:
                        return error_result(str(exc))
        # Real [secrets] values never leave the host in a result (both eras pass here).
        return redact(await self._invoke(tool, kwargs, ctx))

    async def _invoke(self, tool: Tool, kwargs: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        if tool.context_param is not None:
            kwargs[tool.context_param] = ctx
        timeout = tool.timeout if tool.timeout is not None else self.default_timeout
        if tool.own_timeout:
            # A worker's stand-in applies it once its worker is there (start-up excluded).
            kwargs[tool.context_param or "ctx"].timeout = timeout
            timeout = None
        try:
            if timeout is None:
                value = await self._call(tool, kwargs)
            else:
                with anyio.move_on_after(timeout) as scope:
                    if tool.context_param is not None:
                        kwargs[tool.context_param].timeout_scope = scope  # ctx.commit()
                    value = await self._call(tool, kwargs)
                if scope.cancelled_caught:
                    return error_result(
                        f'Tool "{tool.name}" timed out after {timeout:g} seconds and was cancelled'
                    )
        except anyio.get_cancelled_exc_class() as exc:
            if not is_stray_cancellation():
                raise
            # The tool raised (or awaited) a cancellation nobody asked for: its failure.
            log.debug("tool %s raised a stray cancellation", tool.name, exc_info=True)
            return error_result(
                f'Tool "{tool.name}" failed: it raised {type(exc).__name__} without being cancelled'
            )
        except ProtocolFailure:
            raise
        except Exception as exc:
            log.debug("tool %s raised", tool.name, exc_info=True)
            return _exception_result(tool, exc)
        except SystemExit as exc:
            # sys.exit() in tool code ends the call, never the host.
            log.warning("tool %s called sys.exit(%r)", tool.name, exc.code)
            return error_result(f'Tool "{tool.name}" tried to exit (code {exc.code!r})')
        except GeneratorExit:
            raise
        except BaseException as exc:
            # KeyboardInterrupt or a bare BaseException raised by tool code: that call's
            # failure, not the host's (real signals reach the host's own handlers).
            log.warning("tool %s raised %s", tool.name, type(exc).__name__, exc_info=True)
            return error_result(_base_exception_text(tool.name, exc))
        try:
            return to_result(tool, value)
        except Exception as exc:
            log.warning("tool %s returned an unusable value: %s", tool.name, exc)
            return error_result(f'Tool "{tool.name}" returned an invalid result: {exc}')

    async def _call(self, tool: Tool, kwargs: dict[str, Any]) -> Any:
        if tool.is_async:
            return await tool.handler(**kwargs)
        func: Callable[[], Any] = functools.partial(tool.handler, **kwargs)
        return await anyio.to_thread.run_sync(
            func, abandon_on_cancel=self.abandon_threads, limiter=self.limiter
        )


def _base_exception_text(name: str, exc: BaseException) -> str:
    detail = _text_of(exc)
    kind = type(exc).__name__
    return f'Tool "{name}" failed: {kind}' + (f": {detail}" if detail != kind else "")


def _text_of(exc: BaseException) -> str:
    try:
        return str(exc) or type(exc).__name__
    except Exception:
        return type(exc).__name__


def _exception_result(tool: Tool, exc: Exception) -> dict[str, Any]:
    """The error result for a handler that raised: its message (never a traceback)."""
    try:
        message = str(exc) or type(exc).__name__
        details = getattr(exc, "details", None)
    except Exception:  # an exception whose __str__ (or details) fails itself
        message, details = type(exc).__name__, None
    return error_result(message, details if isinstance(details, (dict, list, str)) else None)


def to_result(tool: Tool, value: Any) -> dict[str, Any]:
    """Turn a handler's return value into a wire ``CallToolResult``.

    str → one text block; :class:`ToolResult` → as given; content blocks (models or
    MCP-shaped dicts, alone or in a list) → those blocks; a value matching the tool's
    output schema → ``structuredContent`` plus the same JSON as text; None → no
    content; anything else JSON-serialisable → its JSON as text.

    Raises:
        TypeError, ValueError: the value cannot be represented.
    """
    if type(value) is str:
        return {"content": [{"type": "text", "text": value}]}
    if type(value) is WireResult:
        return value.result
    if isinstance(value, ToolResult):
        return value.to_wire()
    if tool.output_adapter is not None:
        try:
            structured = tool.output_adapter.dump_python(
                tool.output_adapter.validate_python(value), mode="json"
            )
        except ValueError as exc:  # pydantic's ValidationError
            raise ValueError(f"does not match the output schema: {exc}") from None
        return {
            "content": [{"type": "text", "text": json_text(structured)}],
            "structuredContent": structured,
        }
    if value is None:
        return {"content": []}
    if is_pydantic_model(value) and getattr(value, "type", None) in (
        "text",
        "image",
        "audio",
        "resource_link",
        "resource",
    ):
        return {"content": to_wire_content(value)}
    if is_content_dict(value):
        return {"content": to_wire_content(value)}
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, str) or is_pydantic_model(v) or is_content_dict(v) for v in value)
    ):
        return {"content": to_wire_content(list(value))}
    if is_pydantic_model(value):
        value = value.model_dump(mode="json", by_alias=True)
    return {"content": [{"type": "text", "text": json_text(value)}]}


_T = TypeVar("_T")


def redact(value: _T) -> _T:
    """:func:`toolwire.host.tools.redaction.redact`, imported at the first result (a
    worker's start answers ``tools/list`` without it)."""
    from ..tools.redaction import redact as redact_now

    return redact_now(value)

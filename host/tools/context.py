"""What a tool handler receives besides its arguments: :class:`ToolContext` (its
:class:`~toolwire.host.sandbox.env.ExecEnv` lives with the sandbox, whose path rule and
process runner it feeds)."""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import anyio.from_thread
import anyio.lowlevel

from toolwire.messages import RequestId

from .channel import LOG_LEVELS, CallChannel, check_elicitation

if TYPE_CHECKING:
    from ..sandbox.env import ExecEnv

__all__ = ["LOG_LEVELS", "EarlyStart", "ToolContext"]

_log = logging.getLogger("toolwire.tools")


class EarlyStart(Protocol):
    """A call already sent to a worker as its request was read (``Tool.early_start``),
    held in :attr:`ToolContext.early` until the tool's handler takes it over. The worker
    side (``toolwire.host.workers``) makes and reads it; the host only holds it and, when
    the request ends before the handler ran, gives it up."""

    def give_up(self) -> None:
        """Stop the call if nobody took it over (no-op once taken or ended)."""
        ...

    def when_answered(self, callback: Callable[[], None]) -> bool:
        """Have ``callback()`` called once the worker's answer is in (or waiting for it
        is over otherwise); False when that is so already (or unknowable)."""
        ...


class ToolContext:
    """Injected into a handler parameter annotated ``ToolContext``; never in the schema.

    Attributes:
        call_id: the id of this call (the ``tools/call`` request id as sent).
        tool_name: the name the call addressed.
        env: the :class:`ExecEnv` the tool acts in.
        channel: the way back to the client (:mod:`toolwire.host.tools.channel`: one per kind
            of call; the default reaches no client).
    """

    __slots__ = (
        "_asks",
        "call_id",
        "channel",
        "early",
        "env",
        "on_cancel",
        "timeout",
        "timeout_scope",
        "tool_name",
    )

    def __init__(
        self,
        call_id: RequestId,
        tool_name: str,
        env: ExecEnv,
        channel: CallChannel | None = None,
    ) -> None:
        self.call_id = call_id
        self.tool_name = tool_name
        self.env = env
        self.channel = channel if channel is not None else CallChannel()
        self._asks = 0
        self.timeout: float | None = None
        """Seconds the call may run, when the handler applies its timeout itself
        (``Tool.own_timeout``); None otherwise or for no limit."""
        self.early: EarlyStart | None = None
        """The call already sent to a worker for this context (``Tool.early_start``), which
        the worker's handler takes over (setting this back to None); None otherwise."""
        self.on_cancel: Callable[[], None] | None = None
        """Set by whatever runs the call outside the host's event loop (a worker pool):
        called by :meth:`cancelling` at the moment the call's request is cancelled, before
        the handler hears of it; None otherwise."""
        self.timeout_scope: anyio.CancelScope | None = None
        """The executor's timeout for this call (set by ``toolwire.host.calls``), which
        :meth:`commit` lifts; None when the host applies none."""

    def cancelling(self) -> None:
        """The call's request was just cancelled (or aborted): tell what runs it
        elsewhere (:attr:`on_cancel`) now, synchronously, so that nothing new is sent
        where the call may still be running (:attr:`RequestContext.on_cancel
        <toolwire.inbound.RequestContext.on_cancel>`). Called at most once takes effect."""
        callback, self.on_cancel = self.on_cancel, None
        if callback is not None:
            callback()

    def commit(self) -> bool:
        """Call just before the change a mutating tool cannot take back (the rename of a
        written file), from the event loop's thread (from a worker thread:
        :func:`toolwire.host.builtins._common.commit_point`). True: the change may be
        made, and from now on neither the call's timeout nor the client's cancellation
        interrupts the call: it is answered with its result (protocol.md §5). False:
        the call was already cancelled or timed out; make no change."""
        scope = self.timeout_scope
        if scope is not None and scope.cancel_called:
            return False
        if not self.channel.commit():
            return False
        if scope is not None:
            scope.deadline = math.inf
        return True

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress; becomes ``notifications/progress`` when the caller sent a token.

        ``progress`` must increase from one report to the next; a report that does not
        is dropped, as is any report after the call finished (MCP 2025-11-25 "Progress").
        """
        if message is not None:
            from .redaction import redact_text  # not imported at a worker's start

            message = redact_text(message)  # no real [secrets] value leaves the host
        self.channel.progress(progress, total, message)
        await self.channel.drain()
        # Always a scheduling point: a tool that reports progress in a loop without
        # awaiting anything else still lets the host answer, cancel and time it out.
        await anyio.lowlevel.checkpoint()

    def report_progress_from_thread(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """:meth:`report_progress` for synchronous tools running in a worker thread
        (waits, like it, while the client is not reading)."""
        anyio.from_thread.run(self.report_progress, progress, total, message)

    def log_from_thread(self, level: str, data: Any, logger: str | None = None) -> None:
        """:meth:`log` for synchronous tools running in a worker thread.

        Raises:
            ValueError: ``level`` is not one of the RFC 5424 names in :data:`LOG_LEVELS`.
        """
        anyio.from_thread.run(self.log, level, data, logger)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message {level, logger?, data}`` to the client.

        Sent only when ``level`` is at or above the level the client chose with
        ``logging/setLevel`` (default "info"). Also written to the host's stderr log.

        Raises:
            ValueError: ``level`` is not one of the RFC 5424 names in :data:`LOG_LEVELS`.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {list(LOG_LEVELS)}")
        _log.log(
            logging.WARNING if LOG_LEVELS[level] >= 3 else logging.INFO,
            "[%s] %s",
            self.tool_name,
            data,
        )
        self.channel.log(level, data, logger or self.tool_name)
        await self.channel.drain()
        await anyio.lowlevel.checkpoint()

    # ------------------------------------------------------------------ asking the client

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the client declared: the request's own envelope in 2026-07-28, the
        ``initialize`` capabilities in 2025-11-25 (``{}`` outside a host). A tool can
        check ``"sampling" in ctx.client_capabilities`` before it asks."""
        return self.channel.client_capabilities

    async def elicit(
        self, message: str, schema: dict[str, Any], *, key: str | None = None
    ) -> dict[str, Any]:
        """Ask the user for structured input (MCP ``elicitation/create``, form mode).

        Args:
            message: what to ask, shown to the user.
            schema: the form, a flat JSON Schema object (``{"type": "object",
                "properties": {...}, "required": [...]}``) of the primitive fields MCP
                allows (:func:`~toolwire.host.tools.channel.check_elicitation`).
            key: the ``inputRequests`` key in 2026-07-28 (default ``elicit-N`` for the
                N-th question of this call); give one to accept answers a client sends
                before being asked.

        Returns:
            The ElicitResult: ``{"action": "accept"|"decline"|"cancel", "content"?: {...}}``.

        Raises:
            ToolError: ``schema`` is outside MCP's form subset (the message names the
                property), or a 2025-11-25 client without the ``elicitation``
                capability (the call fails with that message). In 2026-07-28 the call is answered with an
                input-required result, or -32021 without the capability, whatever the
                tool does with the exception raised here (see protocol.md §11.7: the
                call runs again from the start with the answer).
        """
        params = {"mode": "form", "message": message, "requestedSchema": schema}
        check_elicitation(params)
        result: dict[str, Any] = await self._ask("elicitation/create", params, key, "elicit")
        return result

    async def sample(
        self,
        messages: str | list[dict[str, Any]],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        key: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Ask the client's model for a completion (MCP ``sampling/createMessage``).

        Args:
            messages: a prompt (one user text message), or MCP ``SamplingMessage`` objects.
            max_tokens: ``maxTokens``.
            system_prompt: ``systemPrompt``, when given.
            key: the ``inputRequests`` key in 2026-07-28 (default ``sample-N``).
            options: further request members as they are on the wire
                (``temperature``, ``modelPreferences``, ``stopSequences``, ...).

        Returns:
            The CreateMessageResult: ``{"role", "content", "model", "stopReason"?}``.

        Raises:
            ToolError: as :meth:`elicit`, for the ``sampling`` capability.
        """
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        params: dict[str, Any] = {"messages": messages, "maxTokens": max_tokens, **options}
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        result: dict[str, Any] = await self._ask("sampling/createMessage", params, key, "sample")
        return result

    async def list_roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        """The client's roots (MCP ``roots/list``): ``[{"uri": "file:///...", "name"?}]``.

        Raises:
            ToolError: as :meth:`elicit`, for the ``roots`` capability.
        """
        result = await self._ask("roots/list", {}, key, "roots")
        roots = result.get("roots") if isinstance(result, dict) else None
        return list(roots) if isinstance(roots, list) else []

    async def gather(self, *asks: Awaitable[Any]) -> list[Any]:
        """Ask several things at once: ``await ctx.gather(ctx.elicit(...), ctx.sample(...))``.

        In 2026-07-28 every unanswered question goes into the same input-required result
        (one round instead of one per question); in 2025-11-25 they are asked one after
        another. Returns the answers in the order given.

        Raises:
            ToolError: as :meth:`elicit`.
        """
        from .rounds import InputNeeded  # not imported at a worker's start

        answers: list[Any] = []
        pending: InputNeeded | None = None
        for ask in asks:
            try:
                answers.append(await ask)
            except InputNeeded as exc:
                pending = pending or exc
                answers.append(None)
        if pending is not None:
            raise pending
        return answers

    def elicit_from_thread(
        self, message: str, schema: dict[str, Any], *, key: str | None = None
    ) -> dict[str, Any]:
        """:meth:`elicit` for synchronous tools running in a worker thread."""
        result: dict[str, Any] = anyio.from_thread.run(
            lambda: self.elicit(message, schema, key=key)
        )
        return result

    async def _ask(self, method: str, params: dict[str, Any], key: str | None, kind: str) -> Any:
        self._asks += 1
        if key is None:
            key = f"{kind}-{self._asks}"
        return await self.channel.ask(method, params, key)

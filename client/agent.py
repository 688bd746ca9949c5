"""The agent loop: a model (provider) calls the host's tools until it is done.

Usage::

    async with Client.spawn(host_command(root=".")) as client:
        messages = [UserMessage("Fix the failing test")]
        async with run_agent(provider, client, messages) as run:
            async for event in run:
                print(event)
        print(run.end_reason, run.messages[-1])

Each turn asks the provider for the next assistant message (the tool definitions and
a system prompt with an "Available tools" section attached), runs its tool calls in
one ``tools/callBatch`` (the message's stop reason goes along, so a length-truncated
message runs none of its calls) and appends one tool-result message per call, in source
order, paired with its call by position.

Call ids: a call's id in the batch (and in the ``ToolExecution*`` events) is the
model's tool-call id when that is non-empty and not used by an earlier call of the same
message; otherwise a fresh unique one (:func:`~toolwire.client.adapters.unique_ids`,
the helper the built-in provider adapters use). OpenAI-compatible local servers
(llama.cpp, Ollama) send ``call_0`` for every call, or no id at all. The messages
themselves keep the provider's ids: each result carries the id of the call at its
position, exactly as the provider gave it, so whatever provider is plugged in gets its
own ids back (the built-in adapters hand out unique ids already). The loop ends when a
message has no tool calls, when the model stopped with "error" or "aborted" (its calls
do not run), when every result of a batch asked to terminate (none an error), or after
``max_turns`` turns. A host without ``tools/callBatch`` gets concurrent ``tools/call``
requests instead (see :meth:`~toolwire.client.Client.call_batch`).

Events, in order within a turn: :class:`TurnStart`; :class:`MessageUpdate` (streamed
assistant text); :class:`MessageEnd` for the assistant message;
:class:`ToolExecutionStart` / :class:`ToolExecutionUpdate` / :class:`ToolExecutionEnd`
per call as the host reports them (ends in completion order); :class:`MessageEnd` for
each tool result, in source order; :class:`TurnEnd`. The run opens with
:class:`AgentStart` and closes with :class:`AgentEnd`.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from toolwire.models import ToolDefinition

from .adapters import tools_prompt_section, unique_ids
from .batch import (
    BatchCall,
    BatchEvent,
    BatchMode,
    CallEnded,
    CallProgress,
    CallStarted,
)
from .client import Client, Progress
from .conversation import AssistantMessage, Message, ToolResultMessage
from .providers import ModelRequest, Provider

__all__ = [
    "DEFAULT_MAX_TURNS",
    "AgentEnd",
    "AgentEvent",
    "AgentRun",
    "AgentStart",
    "EndReason",
    "MessageEnd",
    "MessageUpdate",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "TurnEnd",
    "TurnStart",
    "build_system_prompt",
    "run_agent",
]

DEFAULT_MAX_TURNS = 25
"""Model calls one run may make unless ``max_turns`` says otherwise."""

EndReason = Literal["stop", "length", "terminate", "max_turns", "error", "aborted"]
"""Why a run ended: the model stopped calling tools (``"length"`` when that last
message was cut off), every result of the last batch asked to terminate, the turn
limit, or the model's message stopped with "error" / "aborted"."""


# --------------------------------------------------------------------------- events


@dataclass(frozen=True)
class AgentStart:
    """The run began."""


@dataclass(frozen=True)
class TurnStart:
    """Turn ``turn`` (1-based) begins: the model is about to be asked."""

    turn: int


@dataclass(frozen=True)
class MessageUpdate:
    """More assistant text streamed in (``delta`` is the new part)."""

    delta: str


@dataclass(frozen=True)
class MessageEnd:
    """A message was added to the conversation (the assistant's, or a tool result)."""

    message: Message


@dataclass(frozen=True)
class ToolExecutionStart:
    """A call started executing in the host (or was answered without running)."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolExecutionUpdate:
    """A running call reported progress."""

    call_id: str
    name: str
    progress: Progress


@dataclass(frozen=True)
class ToolExecutionEnd:
    """A call's result is final; the result itself follows in a :class:`MessageEnd`."""

    call_id: str
    name: str
    is_error: bool


@dataclass(frozen=True)
class TurnEnd:
    """Turn ``turn`` is over: its assistant message and its tool results (source order)."""

    turn: int
    message: AssistantMessage
    tool_results: list[ToolResultMessage]


@dataclass(frozen=True)
class AgentEnd:
    """The run ended for ``reason``; ``messages`` are the ones it added."""

    reason: EndReason
    messages: list[Message] = field(default_factory=list)


AgentEvent = (
    AgentStart
    | TurnStart
    | MessageUpdate
    | MessageEnd
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolExecutionEnd
    | TurnEnd
    | AgentEnd
)
"""Anything a run reports."""


def build_system_prompt(base: str | None, tools: Sequence[ToolDefinition]) -> str | None:
    """``base`` followed by the "Available tools" section (:func:`tools_prompt_section`);
    None when both are empty."""
    section = tools_prompt_section(tools)
    parts = [p for p in ((base or "").strip(), section) if p]
    return "\n\n".join(parts) or None


# --------------------------------------------------------------------------- the run


class AgentRun:
    """One run of the loop; made by :func:`run_agent`.

    Enter it with ``async with`` (that starts the loop in a task) and iterate it for
    events. Leaving the block early cancels the loop (and any calls in flight: the
    host is told to cancel them). An exception of the loop (a lost connection, say) is
    raised from the iteration, or on leaving the block when nobody iterated.

    Attributes:
        messages: the whole conversation: the initial messages and every one added.
        new_messages: the messages this run added.
        end_reason: why it ended (None while running, or when it failed or was cancelled).
        turns: model calls made so far.
    """

    def __init__(
        self,
        provider: Provider,
        client: Client,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolDefinition] | None,
        system_prompt: str | None,
        max_turns: int,
        mode: BatchMode | None,
        batch_timeout: float | None,
    ) -> None:
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.provider = provider
        self.client = client
        self.messages: list[Message] = list(messages)
        self.new_messages: list[Message] = []
        self.tools = list(tools) if tools is not None else None
        self.system_prompt = system_prompt
        self.max_turns = max_turns
        self.mode: BatchMode | None = mode
        self.batch_timeout = batch_timeout
        self.end_reason: EndReason | None = None
        self.turns = 0
        self.error: BaseException | None = None
        self._error_raised = False
        self._send: MemoryObjectSendStream[AgentEvent] | None = None
        self._receive: MemoryObjectReceiveStream[AgentEvent] | None = None
        self._tg: TaskGroup | None = None

    # ---------------------------------------------------------------- context and iteration

    async def __aenter__(self) -> AgentRun:
        if self._tg is not None:
            raise RuntimeError("an AgentRun runs once")
        self._send, self._receive = anyio.create_memory_object_stream[AgentEvent](math.inf)
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._main)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._tg is not None
        self._tg.cancel_scope.cancel()
        try:
            await self._tg.__aexit__(exc_type, exc, tb)
        finally:
            if self._receive is not None:
                self._receive.close()
        if exc_type is None and self.error is not None and not self._error_raised:
            self._error_raised = True
            raise self.error
        return None

    def __aiter__(self) -> AsyncIterator[AgentEvent]:
        return self

    async def __anext__(self) -> AgentEvent:
        if self._receive is None:
            raise RuntimeError("enter the run with 'async with' before iterating it")
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            if self.error is not None and not self._error_raised:
                self._error_raised = True
                raise self.error from None
            raise StopAsyncIteration from None

    async def events(self) -> list[AgentEvent]:
        """Run to the end (entering and leaving the run) and return every event."""
        out: list[AgentEvent] = []
        async with self:
            async for event in self:
                out.append(event)
        return out

    # ---------------------------------------------------------------- the loop

    def _emit(self, event: AgentEvent) -> None:
        if self._send is not None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._send.send_nowait(event)

    def _add(self, message: Message) -> None:
        self.messages.append(message)
        self.new_messages.append(message)
        self._emit(MessageEnd(message))

    def _end(self, reason: EndReason) -> None:
        self.end_reason = reason
        self._emit(AgentEnd(reason, list(self.new_messages)))

    async def _main(self) -> None:
        assert self._send is not None
        try:
            await self._loop()
        except Exception as exc:
            self.error = exc
        finally:
            self._send.close()

    async def _loop(self) -> None:
        self._emit(AgentStart())
        tools = self.tools if self.tools is not None else await self.client.list_tools()
        system = build_system_prompt(self.system_prompt, tools)
        while True:
            self.turns += 1
            turn = self.turns
            self._emit(TurnStart(turn))
            request = ModelRequest(system, list(self.messages), list(tools))
            try:
                assistant = await self.provider.complete(
                    request, on_text=lambda d: self._emit(MessageUpdate(d))
                )
            except Exception as exc:
                assistant = AssistantMessage(
                    stop_reason="error", error=f"{type(exc).__name__}: {exc}"
                )
            self._add(assistant)
            if assistant.stop_reason in ("error", "aborted"):
                self._emit(TurnEnd(turn, assistant, []))
                self._end("error" if assistant.stop_reason == "error" else "aborted")
                return
            if not assistant.tool_calls:
                self._emit(TurnEnd(turn, assistant, []))
                self._end("length" if assistant.stop_reason == "length" else "stop")
                return
            results, terminate = await self._run_calls(assistant)
            for r in results:
                self._add(r)
            self._emit(TurnEnd(turn, assistant, results))
            if terminate:
                self._end("terminate")
                return
            if turn >= self.max_turns:
                self._end("max_turns")
                return

    async def _run_calls(self, assistant: AssistantMessage) -> tuple[list[ToolResultMessage], bool]:
        """Run one message's calls; the results in source order and the terminate verdict.

        Calls are keyed by position: ``ids[i]`` is call ``i``'s id in the batch and in the
        events (unique within the message), while its result carries ``calls[i].id``, the
        provider's own id (which may be empty or shared with another call).
        """
        calls = assistant.tool_calls
        ids = unique_ids([c.id for c in calls])
        local: dict[int, ToolResultMessage] = {}
        to_run: list[int] = []
        for i, call in enumerate(calls):
            if call.invalid_arguments is not None:
                local[i] = ToolResultMessage.error(
                    call.id,
                    call.name,
                    f'Tool call "{call.name}" was not run: {call.invalid_arguments}. '
                    "Send the call again with its arguments as one JSON object.",
                )
            else:
                to_run.append(i)
        position = {ids[i]: i for i in to_run}
        started: set[int] = set()
        ended: set[int] = set()

        def start(i: int) -> None:
            if i not in started:
                started.add(i)
                self._emit(ToolExecutionStart(ids[i], calls[i].name, dict(calls[i].arguments)))

        def end(i: int, is_error: bool) -> None:
            start(i)
            if i not in ended:
                ended.add(i)
                self._emit(ToolExecutionEnd(ids[i], calls[i].name, is_error))

        def on_event(event: BatchEvent) -> None:
            i = position.get(str(getattr(event, "call_id", "")))
            if i is None:
                return
            if isinstance(event, CallStarted):
                start(i)
            elif isinstance(event, CallProgress):
                start(i)
                self._emit(ToolExecutionUpdate(ids[i], calls[i].name, event.progress))
            elif isinstance(event, CallEnded):
                end(i, event.is_error)

        for i in local:  # answered here without running: its own start and end
            end(i, True)
        terminate = False
        ran: dict[int, ToolResultMessage] = {}
        if to_run:
            batch = await self.client.call_batch(
                [BatchCall(ids[i], calls[i].name, dict(calls[i].arguments)) for i in to_run],
                mode=self.mode,
                stop_reason=assistant.stop_reason,
                on_event=on_event,
                timeout=self.batch_timeout,
            )
            for res in batch.results:
                i = position[str(res.call_id)]
                end(i, res.is_error)
                ran[i] = ToolResultMessage(calls[i].id, calls[i].name, res.result)
            terminate = batch.terminate and not local
        out = [local[i] if i in local else ran[i] for i in range(len(calls))]
        return out, terminate


def run_agent(
    provider: Provider,
    client: Client,
    messages: Sequence[Message],
    *,
    tools: Sequence[ToolDefinition] | None = None,
    system_prompt: str | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    mode: BatchMode | None = None,
    batch_timeout: float | None = None,
) -> AgentRun:
    """Start building an agent run; enter the result with ``async with`` and iterate it.

    Args:
        provider: the model (:class:`~toolwire.client.providers.Provider`).
        client: a connected client of the host whose tools the model calls.
        messages: the conversation so far (not modified; the run keeps a copy).
        tools: the tool definitions offered to the model (default: all of the host's,
            from ``tools/list`` when the run starts).
        system_prompt: the base system prompt; an "Available tools" section built from
            the tools' prompt snippets and guidelines is appended.
        max_turns: model calls at most (the run ends with ``"max_turns"`` after that
            many turns with tool calls).
        mode: the batches' mode ("parallel" by default on the host, or "sequential").
        batch_timeout: seconds per batch (None: the client's ``call_timeout``).

    Returns:
        An :class:`AgentRun`.

    Raises:
        ValueError: ``max_turns`` below 1.
    """
    return AgentRun(
        provider,
        client,
        messages,
        tools=tools,
        system_prompt=system_prompt,
        max_turns=max_turns,
        mode=mode,
        batch_timeout=batch_timeout,
    )

"""The provider-neutral conversation an agent loop keeps: user, assistant and tool-result messages.

Provider adapters (:mod:`toolwire.client.adapters`) translate these to and from each
model API's wire format; :mod:`toolwire.client.agent` appends to a list of them.

Roles: ``"user"``, ``"assistant"``, ``"toolResult"``. An assistant message carries its
text, its tool calls (each with the model's own call id) and a stop reason normalised
across providers (:data:`StopReason`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from toolwire.models import CallToolResult, ContentBlock, TextContent

__all__ = [
    "AssistantMessage",
    "Message",
    "ReasoningBlock",
    "StopReason",
    "ToolCall",
    "ToolResultMessage",
    "UserMessage",
    "now_ms",
]

StopReason = Literal["stop", "toolUse", "length", "error", "aborted"]
"""Why the model stopped: a natural end, to call tools, its output token limit was hit
(``"length"``: any tool call's arguments may be cut off, so none of them run), an error
of the provider, or the caller aborted. ``"error"`` and ``"aborted"`` end an agent loop
without running the message's tool calls."""


def now_ms() -> int:
    """The current wall-clock time in milliseconds since the epoch (message timestamps)."""
    return int(time.time() * 1000)


@dataclass
class ToolCall:
    """One tool call requested by the model.

    Attributes:
        id: the model's tool-call id (used as the call id in ``tools/callBatch`` and to
            pair the result with the call).
        name: the tool's name.
        arguments: the arguments object.
        invalid_arguments: set when the model's argument text was not a JSON object
            (the parse error); such a call is not executed, it gets an error result.
        thought_signature: Gemini's opaque ``thoughtSignature`` of the ``functionCall``
            part, sent back unchanged with the call on the next request (Gemini refuses
            a turn of a thinking model whose calls lost it).
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    invalid_arguments: str | None = None
    thought_signature: str | None = None


@dataclass
class ReasoningBlock:
    """Reasoning data of a model turn, kept verbatim to be sent back on the next request.

    Attributes:
        api: the format it came from and may go back to: ``"anthropic"`` (a
            ``thinking`` or ``redacted_thinking`` content block, with its
            ``signature``/``data``), ``"openai-responses"`` (a ``reasoning`` output
            item, with ``encrypted_content`` when asked for) or ``"gemini"`` (a
            ``thought`` part, or the ``thoughtSignature`` of a text part).
        data: the block, item or part exactly as the provider sent it.
        index: its position among the message's content blocks / output items / parts,
            so it goes back where it was.
    """

    api: str
    data: dict[str, Any]
    index: int = 0


@dataclass
class UserMessage:
    """A user turn: plain text."""

    content: str
    timestamp: int = field(default_factory=now_ms)
    role: Literal["user"] = "user"


@dataclass
class AssistantMessage:
    """A model turn: its text, its tool calls (in the order the model gave them), why it stopped.

    Attributes:
        text: the visible text (may be empty).
        tool_calls: the calls to run, in source order.
        stop_reason: see :data:`StopReason`.
        error: the provider's error message when ``stop_reason`` is ``"error"``.
        usage: token counts as the provider reported them (free-form), if any.
        reasoning: the provider's reasoning blocks (thinking with signatures, encrypted
            reasoning items, thought signatures), sent back unchanged to the same API.
    """

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    stop_reason: StopReason = "stop"
    error: str | None = None
    usage: dict[str, Any] | None = None
    reasoning: list[ReasoningBlock] = field(default_factory=list)
    timestamp: int = field(default_factory=now_ms)
    role: Literal["assistant"] = "assistant"


class ResultView:
    """Read-only views of a wrapped ``result: CallToolResult`` (shared by result types)."""

    __slots__ = ()
    result: CallToolResult

    @property
    def content(self) -> list[ContentBlock]:
        """The content blocks the model reads."""
        return self.result.content

    @property
    def is_error(self) -> bool:
        """True for an error result (including a protocol error turned into a result)."""
        return self.result.is_error

    @property
    def structured_content(self) -> dict[str, Any] | None:
        """``structuredContent``, when the tool declared an output schema."""
        return self.result.structured_content

    @property
    def details(self) -> Any:
        """Data for programs and UIs (``_meta["toolwire/details"]``), not for the model."""
        return self.result.details

    @property
    def terminate(self) -> bool:
        """True when the tool asked an agent loop to stop after this batch."""
        return self.result.terminate

    @property
    def text(self) -> str:
        """All text blocks joined by newlines."""
        return self.result.text


@dataclass
class ToolResultMessage(ResultView):
    """The result of one tool call, paired with the call by ``tool_call_id``.

    Attributes:
        tool_call_id: the id of the :class:`ToolCall` this answers.
        tool_name: the tool's name.
        result: the MCP ``CallToolResult`` (content, isError, details, terminate).
    """

    tool_call_id: str
    tool_name: str
    result: CallToolResult
    timestamp: int = field(default_factory=now_ms)
    role: Literal["toolResult"] = "toolResult"

    @classmethod
    def error(cls, tool_call_id: str, tool_name: str, text: str) -> ToolResultMessage:
        """An error result whose only content is ``text``."""
        return cls(
            tool_call_id,
            tool_name,
            CallToolResult(content=[TextContent(text=text)], is_error=True),
        )


Message = UserMessage | AssistantMessage | ToolResultMessage
"""Any message of a conversation."""

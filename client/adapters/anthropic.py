"""Anthropic Messages.

Tools ``{name, description, input_schema}``; ``tool_use`` content blocks;
``tool_result`` blocks inside a user message; ``thinking`` blocks (with their
``signature``) and ``redacted_thinking`` blocks (with their ``data``), which must go
back unchanged, in their place before the ``tool_use`` blocks, when the conversation
continues after a tool call with extended thinking on.

Converter: names outside ``[A-Za-z0-9_-]{1,64}`` are rewritten (:mod:`._names`);
``input_schema`` is the host's JSON Schema with only local-pointer and enum-type fixes
(:func:`._schema.json_schema_dialect`): Anthropic takes JSON Schema as it is, so the
arguments need no mapping back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolwire.models import ImageContent, ToolDefinition

from ..conversation import (
    AssistantMessage,
    Message,
    ReasoningBlock,
    StopReason,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from ._common import (
    CallBuffers,
    ParsedToolResult,
    ProviderTools,
    build_tools,
    declared,
    images,
    make_call,
    natural_stop,
    real_calls,
    result_text,
    unique_ids,
    wire_name,
)
from ._names import ANTHROPIC_NAMES, wire_names
from ._schema import Restore, json_schema_dialect, same

__all__ = [
    "API",
    "AnthropicStream",
    "anthropic_tool",
    "anthropic_tools",
    "assistant_from_anthropic",
    "assistant_to_anthropic",
    "to_anthropic_messages",
    "tool_result_from_anthropic",
    "tool_result_to_anthropic",
]

API = "anthropic"
"""The :attr:`ReasoningBlock.api` of thinking blocks from this API."""

ANTHROPIC_STOP: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "toolUse",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "error",
}
_THINKING = ("thinking", "redacted_thinking")


def _declare(tool: ToolDefinition, name: str) -> tuple[dict[str, Any], Restore]:
    schema, description = declared(tool)
    decl = {
        "name": name,
        "description": description,
        "input_schema": json_schema_dialect(schema),
    }
    return decl, same


def anthropic_tools(tools: Iterable[ToolDefinition]) -> ProviderTools:
    """One request's tools for the Messages API: declarations, names and the way back."""
    return build_tools(tools, ANTHROPIC_NAMES, _declare)


def anthropic_tool(tool: ToolDefinition) -> dict[str, Any]:
    """A single tool for the Messages API: ``{name, description, input_schema}``."""
    return _declare(tool, wire_names([tool.name], ANTHROPIC_NAMES)[tool.name])[0]


def assistant_from_anthropic(
    response: Mapping[str, Any], tools: ProviderTools | None = None
) -> AssistantMessage:
    """The assistant message of a Messages API response: ``text`` blocks joined,
    ``tool_use`` blocks as calls (``input`` is already an object), ``thinking`` and
    ``redacted_thinking`` blocks kept verbatim, ``stop_reason`` mapped (``max_tokens``
    → "length", ``tool_use`` → "toolUse")."""
    text: list[str] = []
    uses: list[dict[str, Any]] = []
    reasoning: list[ReasoningBlock] = []
    for index, block in enumerate(response.get("content") or []):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            text.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            uses.append(block)
        elif block.get("type") in _THINKING:
            reasoning.append(ReasoningBlock(API, dict(block), index))
    ids = unique_ids([str(b.get("id") or "") for b in uses], "toolu")
    calls = real_calls(
        [
            make_call(
                call_id,
                str(b.get("name", "")),
                b.get("input") if isinstance(b.get("input"), Mapping) else None,
            )
            for b, call_id in zip(uses, ids, strict=True)
        ],
        tools,
    )
    reason = ANTHROPIC_STOP.get(str(response.get("stop_reason")), "stop")
    usage = response.get("usage")
    return AssistantMessage(
        "".join(text),
        calls,
        natural_stop(reason, calls),
        usage=usage if isinstance(usage, dict) else None,
        reasoning=reasoning,
    )


def assistant_to_anthropic(
    message: AssistantMessage, tools: ProviderTools | None = None
) -> dict[str, Any]:
    """An assistant message for the Messages API: thinking blocks first, as they came,
    then the text, then one ``tool_use`` block per call."""
    content: list[dict[str, Any]] = [dict(r.data) for r in message.reasoning if r.api == API]
    if message.text:
        content.append({"type": "text", "text": message.text})
    content += [
        {"type": "tool_use", "id": c.id, "name": wire_name(c.name, tools), "input": c.arguments}
        for c in message.tool_calls
    ]
    return {"role": "assistant", "content": content}


def tool_result_to_anthropic(result: ToolResultMessage) -> dict[str, Any]:
    """A ``tool_result`` content block (text and images; ``is_error`` when set).

    A blank text is left out (Anthropic refuses empty text blocks); an error result
    without text says so in words (:data:`._common.FAILED_WITHOUT_MESSAGE`), since
    Anthropic refuses ``is_error`` with empty ``content``.
    """
    parts: list[dict[str, Any]] = []
    text = result_text(result, [b for b in result.content if not isinstance(b, ImageContent)])
    if text.strip():
        parts.append({"type": "text", "text": text})
    parts += [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": i.mime_type, "data": i.data},
        }
        for i in images(result.content)
    ]
    out: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "content": parts,
    }
    if result.is_error:
        out["is_error"] = True
    return out


def tool_result_from_anthropic(block: Mapping[str, Any]) -> ParsedToolResult:
    """Read a ``tool_result`` block back."""
    content = block.get("content")
    if isinstance(content, list):
        content = "\n".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, dict) and p.get("type") == "text"
        )
    return ParsedToolResult(
        str(block.get("tool_use_id")), str(content or ""), bool(block.get("is_error", False))
    )


def to_anthropic_messages(
    messages: Sequence[Message], tools: ProviderTools | None = None
) -> list[dict[str, Any]]:
    """A whole conversation for the Messages API (the system prompt goes in ``system``).

    Consecutive tool results share one user message, as the API requires.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, UserMessage):
            out.append({"role": "user", "content": m.content})
        elif isinstance(m, AssistantMessage):
            out.append(assistant_to_anthropic(m, tools))
        else:
            block = tool_result_to_anthropic(m)
            last = out[-1] if out else None
            if (
                last is not None
                and last["role"] == "user"
                and isinstance(last["content"], list)
                and all(b.get("type") == "tool_result" for b in last["content"])
            ):
                last["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
    return out


class AnthropicStream:
    """Assembles a streamed Messages API answer from its SSE events (``type`` member).

    ``content_block_start`` opens a text, ``tool_use``, ``thinking`` or
    ``redacted_thinking`` block at an ``index``; ``content_block_delta`` adds
    ``text_delta`` text, ``input_json_delta`` argument text, ``thinking_delta`` thinking
    text or a ``signature_delta``; ``message_delta`` carries the ``stop_reason``.
    """

    def __init__(self, tools: ProviderTools | None = None) -> None:
        self.text = ""
        self.stop_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.tools = tools
        self._calls = CallBuffers()
        self._thinking: dict[Any, dict[str, Any]] = {}

    def feed(self, event: Mapping[str, Any]) -> str:
        """Take one event; returns the text it added."""
        kind = event.get("type")
        key = event.get("index")
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                self._calls.start(key, block.get("id"), block.get("name"))
                given = block.get("input")
                if isinstance(given, dict) and given:
                    self._calls.objects[key] = given
            elif block.get("type") in _THINKING:
                self._thinking[key] = dict(block)
            elif block.get("type") == "text" and block.get("text"):
                self.text += str(block["text"])
                return str(block["text"])
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta":
                text = str(delta.get("text", ""))
                self.text += text
                return text
            if dtype == "input_json_delta":
                self._calls.append(key, str(delta.get("partial_json", "")))
            elif dtype == "thinking_delta" and key in self._thinking:
                block = self._thinking[key]
                block["thinking"] = str(block.get("thinking", "")) + str(delta.get("thinking", ""))
            elif dtype == "signature_delta" and key in self._thinking:
                block = self._thinking[key]
                block["signature"] = str(block.get("signature", "")) + str(
                    delta.get("signature", "")
                )
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            if delta.get("stop_reason"):
                self.stop_reason = str(delta["stop_reason"])
            if isinstance(event.get("usage"), dict):
                self.usage = event["usage"]
        return ""

    def partial_tool_calls(self) -> list[ToolCall]:
        """The tool calls so far, arguments parsed best-effort."""
        return real_calls(self._calls.calls(final=False), self.tools)

    def message(self) -> AssistantMessage:
        """The finished assistant message (arguments parsed strictly)."""
        calls = real_calls(self._calls.calls(final=True), self.tools)
        reason = ANTHROPIC_STOP.get(str(self.stop_reason), "stop")
        reasoning = [
            ReasoningBlock(API, block, key if isinstance(key, int) else 0)
            for key, block in self._thinking.items()
        ]
        return AssistantMessage(
            self.text, calls, natural_stop(reason, calls), usage=self.usage, reasoning=reasoning
        )

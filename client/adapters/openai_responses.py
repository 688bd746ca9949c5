"""OpenAI Responses (``/v1/responses``).

Flat function tools ``{"type": "function", name, description, parameters, strict}``;
``function_call`` output items; ``function_call_output`` input items; ``reasoning``
output items (with ``encrypted_content`` when the request includes
``reasoning.encrypted_content``), which must go back unchanged in the next request's
``input`` (before the calls they led to) for a stateless conversation.

Converter: the same names and parameters as chat completions (:mod:`.openai_chat`);
``strict`` is always explicit, since this API defaults it to true.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolwire.models import ToolDefinition

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
    images,
    make_call,
    real_calls,
    result_text,
    unique_ids,
    wire_name,
)
from ._names import OPENAI_NAMES, wire_names
from ._schema import Restore
from .openai_chat import openai_declaration

__all__ = [
    "API",
    "OpenAIResponsesStream",
    "assistant_from_openai_responses",
    "assistant_to_openai_responses",
    "openai_responses_tool",
    "openai_responses_tools",
    "to_openai_responses_input",
    "tool_result_from_openai_responses",
    "tool_result_to_openai_responses",
]

API = "openai-responses"
"""The :attr:`ReasoningBlock.api` of reasoning items from this API."""


def _declare(tool: ToolDefinition, name: str, strict: bool) -> tuple[dict[str, Any], Restore]:
    params, description, is_strict, restore = openai_declaration(tool, strict=strict)
    decl = {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": params,
        "strict": is_strict,
    }
    return decl, restore


def openai_responses_tools(
    tools: Iterable[ToolDefinition], *, strict: bool = True
) -> ProviderTools:
    """One request's tools for the Responses API (see :func:`.openai_chat_tools`)."""
    return build_tools(tools, OPENAI_NAMES, lambda t, n: _declare(t, n, strict))


def openai_responses_tool(tool: ToolDefinition, *, strict: bool = True) -> dict[str, Any]:
    """A single flat function tool for the Responses API (``strict`` always explicit)."""
    return _declare(tool, wire_names([tool.name], OPENAI_NAMES)[tool.name], strict)[0]


def assistant_from_openai_responses(
    response: Mapping[str, Any], tools: ProviderTools | None = None
) -> AssistantMessage:
    """The assistant message of a Responses API response object.

    ``output_text`` parts of ``message`` items become the text, ``function_call`` items
    the tool calls (their ``call_id`` is the id, made unique), ``reasoning`` items are
    kept verbatim (:class:`ReasoningBlock`); ``status: "incomplete"`` because of
    ``max_output_tokens`` is a "length" stop, ``failed`` an "error".
    """
    text: list[str] = []
    raw_calls: list[tuple[str, str, Any]] = []
    reasoning: list[ReasoningBlock] = []
    for index, item in enumerate(response.get("output") or []):
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    text.append(str(part.get("text", "")))
        elif item.get("type") == "function_call":
            raw_calls.append(
                (
                    str(item.get("call_id") or item.get("id") or ""),
                    str(item.get("name", "")),
                    item.get("arguments", ""),
                )
            )
        elif item.get("type") == "reasoning":
            reasoning.append(ReasoningBlock(API, dict(item), index))
    ids = unique_ids([c[0] for c in raw_calls])
    calls = real_calls(
        [make_call(i, n, a) for i, (_, n, a) in zip(ids, raw_calls, strict=True)], tools
    )
    usage = response.get("usage")
    return AssistantMessage(
        "".join(text),
        calls,
        responses_stop(response, calls),
        usage=usage if isinstance(usage, dict) else None,
        reasoning=reasoning,
    )


def responses_stop(response: Mapping[str, Any], calls: Sequence[ToolCall]) -> StopReason:
    """The stop reason of a Responses API response object."""
    status = response.get("status")
    if status == "incomplete":
        details = response.get("incomplete_details") or {}
        return "length" if details.get("reason") == "max_output_tokens" else "error"
    if status == "failed":
        return "error"
    if status == "cancelled":
        return "aborted"
    return "toolUse" if calls else "stop"


def assistant_to_openai_responses(
    message: AssistantMessage, tools: ProviderTools | None = None
) -> list[dict[str, Any]]:
    """An assistant message as Responses ``input`` items: its ``reasoning`` items as
    they came, a message item (when there is text) and one ``function_call`` per call."""
    items: list[dict[str, Any]] = [dict(r.data) for r in message.reasoning if r.api == API]
    if message.text:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": message.text}],
            }
        )
    items += [
        {
            "type": "function_call",
            "call_id": c.id,
            "name": wire_name(c.name, tools),
            "arguments": json.dumps(c.arguments),
        }
        for c in message.tool_calls
    ]
    return items


def tool_result_to_openai_responses(result: ToolResultMessage) -> dict[str, Any]:
    """A ``function_call_output`` input item (text, or text and images as input parts;
    no empty text part). An error result without text says it failed
    (:data:`._common.FAILED_WITHOUT_MESSAGE`)."""
    found = images(result.content)
    text = result_text(result)
    output: Any = text
    if found:
        output = [{"type": "input_text", "text": text}] if text else []
        output += [
            {"type": "input_image", "image_url": f"data:{i.mime_type};base64,{i.data}"}
            for i in found
        ]
    return {"type": "function_call_output", "call_id": result.tool_call_id, "output": output}


def tool_result_from_openai_responses(item: Mapping[str, Any]) -> ParsedToolResult:
    """Read a ``function_call_output`` item back."""
    output = item.get("output")
    if isinstance(output, list):
        output = "\n".join(
            str(p.get("text", "")) for p in output if isinstance(p, dict) and "text" in p
        )
    return ParsedToolResult(str(item.get("call_id")), str(output or ""))


def to_openai_responses_input(
    messages: Sequence[Message], tools: ProviderTools | None = None
) -> list[dict[str, Any]]:
    """A whole conversation as Responses ``input`` items (the system prompt goes in the
    request's ``instructions``)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, UserMessage):
            out.append({"role": "user", "content": m.content})
        elif isinstance(m, AssistantMessage):
            out += assistant_to_openai_responses(m, tools)
        else:
            out.append(tool_result_to_openai_responses(m))
    return out


class OpenAIResponsesStream:
    """Assembles a streamed Responses API answer from its events (``type`` member).

    Handles ``response.output_item.added`` (a ``function_call`` item starts),
    ``response.output_text.delta``, ``response.function_call_arguments.delta`` /
    ``.done``, ``response.output_item.done`` (a finished ``reasoning`` item is kept) and
    ``response.completed`` / ``.incomplete`` / ``.failed``.
    """

    def __init__(self, tools: ProviderTools | None = None) -> None:
        self.text = ""
        self.response: dict[str, Any] = {}
        self.tools = tools
        self.reasoning: list[ReasoningBlock] = []
        self._calls = CallBuffers()

    def feed(self, event: Mapping[str, Any]) -> str:
        """Take one event; returns the text it added."""
        kind = event.get("type")
        key = event.get("output_index", event.get("item_id"))
        if kind == "response.output_text.delta":
            delta = str(event.get("delta", ""))
            self.text += delta
            return delta
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = event.get("item") or {}
            if item.get("type") == "function_call":
                self._calls.start(key, item.get("call_id"), None)
                self._calls.names[key] = str(item.get("name", ""))
                if kind == "response.output_item.done" and isinstance(item.get("arguments"), str):
                    self._calls.set_text(key, item["arguments"])
            elif item.get("type") == "reasoning" and kind == "response.output_item.done":
                index = key if isinstance(key, int) else len(self.reasoning)
                self.reasoning.append(ReasoningBlock(API, dict(item), index))
        elif kind == "response.function_call_arguments.delta":
            self._calls.append(key, str(event.get("delta", "")))
        elif kind == "response.function_call_arguments.done":
            if isinstance(event.get("arguments"), str):
                self._calls.set_text(key, event["arguments"])
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            resp = event.get("response")
            if isinstance(resp, dict):
                self.response = resp
        return ""

    def partial_tool_calls(self) -> list[ToolCall]:
        """The tool calls so far, arguments parsed best-effort."""
        return real_calls(self._calls.calls(final=False), self.tools)

    def message(self) -> AssistantMessage:
        """The finished assistant message (arguments parsed strictly)."""
        calls = real_calls(self._calls.calls(final=True), self.tools)
        usage = self.response.get("usage")
        return AssistantMessage(
            self.text,
            calls,
            responses_stop(self.response, calls),
            usage=usage if isinstance(usage, dict) else None,
            reasoning=list(self.reasoning),
        )

"""OpenAI chat completions (``/v1/chat/completions``) and compatible servers.

Tools ``{"type": "function", "function": {name, description, parameters, strict?}}``;
assistant ``tool_calls`` with the arguments as JSON text; ``role: "tool"`` results.

Converter: names outside ``[A-Za-z0-9_-]{1,64}`` are rewritten (:mod:`._names`);
``parameters`` is the strict-mode form (:mod:`._openai_schema`) with ``strict: true``
when the schema can be written that way without loosening it, else the host's schema
with only local-pointer and enum-type fixes (:func:`._schema.json_schema_dialect`).
Calls come back with the real name, their arguments restored, and ids made unique per
message (local servers repeat ``call_0`` or send none).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from toolwire.models import ToolDefinition

from ..conversation import (
    AssistantMessage,
    Message,
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
    parameters_of,
    real_calls,
    result_text,
    unique_ids,
    wire_name,
)
from ._names import OPENAI_NAMES, wire_names
from ._openai_schema import strict_parameters
from ._schema import Restore, json_schema_dialect, same

__all__ = [
    "OpenAIChatStream",
    "assistant_from_openai_chat",
    "assistant_to_openai_chat",
    "openai_chat_tool",
    "openai_chat_tools",
    "openai_parameters",
    "to_openai_chat_messages",
    "tool_result_from_openai_chat",
    "tool_result_to_openai_chat",
]

OPENAI_FINISH: dict[str, StopReason] = {
    "stop": "stop",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "length": "length",
    "content_filter": "error",
}


def openai_parameters(
    tool: ToolDefinition, *, strict: bool
) -> tuple[dict[str, Any], bool, Restore]:
    """``(parameters, strict, restore)`` for an OpenAI function declaration."""
    return _parameters(parameters_of(tool), strict)


def _parameters(params: dict[str, Any], strict: bool) -> tuple[dict[str, Any], bool, Restore]:
    if strict:
        converted = strict_parameters(params)
        if converted is not None:
            return converted[0], True, converted[1]
    return json_schema_dialect(params), False, same


def openai_declaration(
    tool: ToolDefinition, *, strict: bool
) -> tuple[dict[str, Any], str, bool, Restore]:
    """``(parameters, description, strict, restore)`` for an OpenAI function declaration
    (the description names the forms of root alternatives, :func:`._common.declared`)."""
    schema, description = declared(tool)
    params, is_strict, restore = _parameters(schema, strict)
    return params, description, is_strict, restore


def _declare(tool: ToolDefinition, name: str, strict: bool) -> tuple[dict[str, Any], Restore]:
    params, description, is_strict, restore = openai_declaration(tool, strict=strict)
    fn: dict[str, Any] = {"name": name, "description": description}
    fn["parameters"] = params
    if is_strict:
        fn["strict"] = True
    return {"type": "function", "function": fn}, restore


def openai_chat_tools(tools: Iterable[ToolDefinition], *, strict: bool = True) -> ProviderTools:
    """One request's tools for chat completions: declarations, names and the way back.

    Args:
        tools: the definitions from ``tools/list``.
        strict: ask for ``strict: true`` where the schema can be written in strict
            form; False declares every tool with its own schema.
    """
    return build_tools(tools, OPENAI_NAMES, lambda t, n: _declare(t, n, strict))


def openai_chat_tool(tool: ToolDefinition, *, strict: bool = True) -> dict[str, Any]:
    """A single tool's declaration for chat completions' ``tools`` list (its name made
    valid alone; use :func:`openai_chat_tools` for a request's whole set)."""
    return _declare(tool, wire_names([tool.name], OPENAI_NAMES)[tool.name], strict)[0]


def _calls_from(raw: list[Any]) -> list[ToolCall]:
    entries = [tc for tc in raw if isinstance(tc, dict)]
    ids = unique_ids([str(tc.get("id") or "") for tc in entries])
    return [
        make_call(
            call_id,
            str((tc.get("function") or {}).get("name", "")),
            (tc.get("function") or {}).get("arguments", ""),
        )
        for tc, call_id in zip(entries, ids, strict=True)
    ]


def assistant_from_openai_chat(
    response: Mapping[str, Any], tools: ProviderTools | None = None
) -> AssistantMessage:
    """The assistant message of a (non-streamed) chat-completions response.

    Reads ``choices[0].message.content`` and ``.tool_calls`` and maps ``finish_reason``
    (``length`` → "length", ``tool_calls`` → "toolUse", ``content_filter`` → "error").
    A call whose id is empty or repeats an earlier call's gets a fresh unique one.
    With ``tools``, names and arguments are mapped back to the host's.
    """
    choices = response.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    msg = choice.get("message") or {}
    calls = real_calls(_calls_from(msg.get("tool_calls") or []), tools)
    reason = OPENAI_FINISH.get(str(choice.get("finish_reason")), "stop")
    usage = response.get("usage")
    return AssistantMessage(
        text=msg.get("content") or "",
        tool_calls=calls,
        stop_reason=natural_stop(reason, calls),
        usage=usage if isinstance(usage, dict) else None,
    )


def assistant_to_openai_chat(
    message: AssistantMessage, tools: ProviderTools | None = None
) -> dict[str, Any]:
    """An assistant message for the chat-completions ``messages`` list."""
    out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": wire_name(c.name, tools),
                    "arguments": json.dumps(c.arguments),
                },
            }
            for c in message.tool_calls
        ]
    return out


def tool_result_to_openai_chat(result: ToolResultMessage) -> dict[str, Any]:
    """A ``role: "tool"`` message (text only: chat completions take no images there;
    :func:`to_openai_chat_messages` sends a result's images in a following user message).
    The format has no error flag: an error result without text says it failed
    (:data:`._common.FAILED_WITHOUT_MESSAGE`)."""
    return {
        "role": "tool",
        "tool_call_id": result.tool_call_id,
        "content": result_text(result),
    }


def tool_result_from_openai_chat(message: Mapping[str, Any]) -> ParsedToolResult:
    """Read a ``role: "tool"`` message back."""
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ParsedToolResult(str(message.get("tool_call_id")), str(content or ""))


def to_openai_chat_messages(
    messages: Sequence[Message],
    system_prompt: str | None = None,
    tools: ProviderTools | None = None,
) -> list[dict[str, Any]]:
    """A whole conversation as chat-completions ``messages`` (system prompt first)."""
    out: list[dict[str, Any]] = []
    if system_prompt:
        out.append({"role": "system", "content": system_prompt})
    pending_images: list[dict[str, Any]] = []
    for m in messages:
        if not isinstance(m, ToolResultMessage) and pending_images:
            out.append({"role": "user", "content": pending_images})
            pending_images = []
        if isinstance(m, UserMessage):
            out.append({"role": "user", "content": m.content})
        elif isinstance(m, AssistantMessage):
            out.append(assistant_to_openai_chat(m, tools))
        else:
            out.append(tool_result_to_openai_chat(m))
            found = images(m.content)
            if found:
                pending_images.append(
                    {"type": "text", "text": f"Images returned by tool call {m.tool_call_id}:"}
                )
                pending_images += [
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:{i.mime_type};base64,{i.data}"},
                    }
                    for i in found
                ]
    if pending_images:
        out.append({"role": "user", "content": pending_images})
    return out


class OpenAIChatStream:
    """Assembles a streamed chat completion from its decoded ``data:`` chunks.

    Feed each chunk (the parsed JSON of one SSE ``data:`` line, ``[DONE]`` excluded)
    to :meth:`feed`; read :attr:`text`, :meth:`partial_tool_calls` while it streams and
    :meth:`message` at the end. A tool call's first delta carries its ``index``, ``id``
    and ``function.name``; later deltas of the same ``index`` add argument text.

    Args:
        tools: the request's tool set, to map names and arguments back.
    """

    def __init__(self, tools: ProviderTools | None = None) -> None:
        self.text = ""
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.tools = tools
        self._calls = CallBuffers()

    def feed(self, chunk: Mapping[str, Any]) -> str:
        """Take one chunk; returns the text it added (for a live display)."""
        added = ""
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str):
                self.text += content
                added += content
            for pos, tc in enumerate(delta.get("tool_calls") or []):
                if not isinstance(tc, dict):
                    continue
                key = tc.get("index", pos)
                fn = tc.get("function") or {}
                self._calls.start(key, tc.get("id"), fn.get("name"))
                args = fn.get("arguments")
                if isinstance(args, str):
                    self._calls.append(key, args)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return added

    def partial_tool_calls(self) -> list[ToolCall]:
        """The tool calls so far, arguments parsed best-effort (real names)."""
        return real_calls(self._calls.calls(final=False), self.tools)

    def message(self) -> AssistantMessage:
        """The finished assistant message (arguments parsed strictly)."""
        calls = real_calls(self._calls.calls(final=True), self.tools)
        reason = OPENAI_FINISH.get(str(self.finish_reason), "stop")
        return AssistantMessage(self.text, calls, natural_stop(reason, calls), usage=self.usage)

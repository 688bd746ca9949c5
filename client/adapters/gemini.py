"""Gemini ``generateContent`` / ``streamGenerateContent``.

Tools ``{"function_declarations": [{name, description, parameters?}]}``;
``functionCall`` / ``functionResponse`` parts. A thinking model puts an opaque
``thoughtSignature`` on its ``functionCall`` parts (and may on text parts) and may send
``thought: true`` summary parts; the signatures must go back unchanged, on the same
parts, or Gemini refuses the next turn.

Converter: names are rewritten to Gemini's rule (:mod:`._names`); parameter schemas are
rewritten to its OpenAPI subset (:mod:`._gemini_schema`), and calls are mapped back
(real name, arguments restored to the host's shapes).
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
    ParsedToolResult,
    ProviderTools,
    build_tools,
    declared,
    natural_stop,
    real_calls,
    result_text,
    unique_ids,
    wire_name,
)
from ._gemini_schema import gemini_parameters
from ._names import GEMINI_NAMES
from ._schema import Restore

__all__ = [
    "API",
    "GeminiStream",
    "assistant_from_gemini",
    "assistant_to_gemini",
    "gemini_tools",
    "gemini_tools_for",
    "to_gemini_contents",
    "tool_result_from_gemini",
    "tool_result_to_gemini",
]

API = "gemini"
"""The :attr:`ReasoningBlock.api` of thought parts and signatures from this API."""

GEMINI_FINISH: dict[str, StopReason] = {"STOP": "stop", "MAX_TOKENS": "length"}


def _declare(tool: ToolDefinition, name: str) -> tuple[dict[str, Any], Restore]:
    schema, description = declared(tool)
    decl: dict[str, Any] = {"name": name, "description": description}
    params, restore = gemini_parameters(schema)
    if params.get("properties"):
        decl["parameters"] = params
    return decl, restore


def gemini_tools_for(tools: Iterable[ToolDefinition]) -> ProviderTools:
    """One request's tools for Gemini: declarations, names and the way back.

    ``declarations`` are the function declarations; wrap them as
    ``[{"function_declarations": declarations}]`` (:func:`gemini_tools` does).
    """
    return build_tools(tools, GEMINI_NAMES, _declare)


def gemini_tools(tools: Iterable[ToolDefinition] | ProviderTools) -> list[dict[str, Any]]:
    """Gemini's ``tools`` member: one ``{"function_declarations": [...]}`` entry.

    ``parameters`` is left out for a tool without parameters: Gemini refuses an object
    schema with no properties.
    """
    built = tools if isinstance(tools, ProviderTools) else gemini_tools_for(tools)
    return [{"function_declarations": built.declarations}] if built.declarations else []


def _parts(response: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    candidates = response.get("candidates") or [{}]
    cand = candidates[0] if isinstance(candidates[0], dict) else {}
    parts = (cand.get("content") or {}).get("parts") or []
    return [p for p in parts if isinstance(p, dict)], cand.get("finishReason")


def _reason(finish: str | None, calls: list[ToolCall]) -> StopReason:
    if finish is None:
        return "toolUse" if calls else "stop"
    return natural_stop(GEMINI_FINISH.get(finish, "error"), calls)


class _Collector:
    """Text, calls and reasoning parts of one model turn, part by part."""

    def __init__(self) -> None:
        self.text = ""
        self.calls: list[ToolCall] = []
        self.reasoning: list[ReasoningBlock] = []
        self.given_ids: list[str] = []
        self.parts = 0

    def add(self, parts: list[dict[str, Any]]) -> str:
        added = ""
        for p in parts:
            index = self.parts
            self.parts += 1
            signature = p.get("thoughtSignature")
            if p.get("thought") is True:
                self.reasoning.append(ReasoningBlock(API, dict(p), index))
                continue
            fc = p.get("functionCall")
            if isinstance(fc, dict):
                args = fc.get("args")
                self.given_ids.append(str(fc.get("id") or ""))
                self.calls.append(
                    ToolCall(
                        "",
                        str(fc.get("name", "")),
                        dict(args) if isinstance(args, dict) else {},
                        thought_signature=signature if isinstance(signature, str) else None,
                    )
                )
                continue
            if isinstance(p.get("text"), str):
                added += p["text"]
            if isinstance(signature, str):
                self.reasoning.append(ReasoningBlock(API, {"thoughtSignature": signature}, index))
        self.text += added
        ids = unique_ids(self.given_ids)
        for call, call_id in zip(self.calls, ids, strict=True):
            if not call.id:
                call.id = call_id
        return added


def assistant_from_gemini(
    response: Mapping[str, Any], tools: ProviderTools | None = None
) -> AssistantMessage:
    """The assistant message of a ``generateContent`` response (first candidate).

    ``functionCall`` parts become calls (with their ``thoughtSignature``); one without
    an ``id`` gets a generated one (sent back with its ``functionResponse``).
    ``thought`` parts and the signature of a text part are kept verbatim.
    ``finishReason`` ``MAX_TOKENS`` is a "length" stop; reasons other than ``STOP`` are
    "error".
    """
    parts, finish = _parts(response)
    got = _Collector()
    got.add(parts)
    calls = real_calls(got.calls, tools)
    usage = response.get("usageMetadata")
    return AssistantMessage(
        got.text,
        calls,
        _reason(finish, calls),
        usage=usage if isinstance(usage, dict) else None,
        reasoning=got.reasoning,
    )


def assistant_to_gemini(
    message: AssistantMessage, tools: ProviderTools | None = None
) -> dict[str, Any]:
    """An assistant message as a Gemini ``model`` content: thought parts as they came,
    the text (with its signature, if it had one), then one ``functionCall`` part per
    call (with its ``thoughtSignature``)."""
    mine = [r for r in message.reasoning if r.api == API]
    parts: list[dict[str, Any]] = [dict(r.data) for r in mine if r.data.get("thought") is True]
    text_sig = next(
        (
            r.data["thoughtSignature"]
            for r in mine
            if "thought" not in r.data and isinstance(r.data.get("thoughtSignature"), str)
        ),
        None,
    )
    if message.text or text_sig:
        part: dict[str, Any] = {"text": message.text}
        if text_sig:
            part["thoughtSignature"] = text_sig
        parts.append(part)
    for c in message.tool_calls:
        call_part: dict[str, Any] = {
            "functionCall": {"id": c.id, "name": wire_name(c.name, tools), "args": c.arguments}
        }
        if c.thought_signature:
            call_part["thoughtSignature"] = c.thought_signature
        parts.append(call_part)
    return {"role": "model", "parts": parts}


def tool_result_to_gemini(
    result: ToolResultMessage, tools: ProviderTools | None = None
) -> dict[str, Any]:
    """A ``functionResponse`` part: ``response`` is ``{"output": text}`` or, for an error
    result, ``{"error": text}`` (never empty: :data:`._common.FAILED_WITHOUT_MESSAGE`)."""
    key = "error" if result.is_error else "output"
    return {
        "functionResponse": {
            "id": result.tool_call_id,
            "name": wire_name(result.tool_name, tools),
            "response": {key: result_text(result)},
        }
    }


def tool_result_from_gemini(part: Mapping[str, Any]) -> ParsedToolResult:
    """Read a ``functionResponse`` part back."""
    fr = part.get("functionResponse") or {}
    response = fr.get("response") or {}
    is_error = "error" in response
    text = response.get("error" if is_error else "output", "")
    return ParsedToolResult(
        str(fr.get("id")),
        text if isinstance(text, str) else json.dumps(text),
        is_error,
        fr.get("name"),
    )


def to_gemini_contents(
    messages: Sequence[Message], tools: ProviderTools | None = None
) -> list[dict[str, Any]]:
    """A whole conversation as Gemini ``contents`` (the system prompt goes in
    ``systemInstruction``); consecutive tool results share one ``user`` content."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, UserMessage):
            out.append({"role": "user", "parts": [{"text": m.content}]})
        elif isinstance(m, AssistantMessage):
            out.append(assistant_to_gemini(m, tools))
        else:
            part = tool_result_to_gemini(m, tools)
            last = out[-1] if out else None
            if (
                last is not None
                and last["role"] == "user"
                and all("functionResponse" in p for p in last["parts"])
            ):
                last["parts"].append(part)
            else:
                out.append({"role": "user", "parts": [part]})
    return out


class GeminiStream:
    """Assembles a streamed ``streamGenerateContent`` answer (each chunk a response
    object). Gemini sends each ``functionCall`` whole, so calls are complete as they come."""

    def __init__(self, tools: ProviderTools | None = None) -> None:
        self.finish_reason: str | None = None
        self.tools = tools
        self._got = _Collector()

    @property
    def text(self) -> str:
        """The text so far."""
        return self._got.text

    def feed(self, chunk: Mapping[str, Any]) -> str:
        """Take one chunk; returns the text it added."""
        parts, finish = _parts(chunk)
        added = self._got.add(parts)
        if finish:
            self.finish_reason = str(finish)
        return added

    def partial_tool_calls(self) -> list[ToolCall]:
        """The tool calls so far (always complete)."""
        return real_calls(list(self._got.calls), self.tools)

    def message(self) -> AssistantMessage:
        """The finished assistant message."""
        calls = real_calls(list(self._got.calls), self.tools)
        return AssistantMessage(
            self.text,
            calls,
            _reason(self.finish_reason, calls),
            reasoning=list(self._got.reasoning),
        )

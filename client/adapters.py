"""Provider adapters: tool definitions, tool calls and tool results in each model API's format.

Pure functions on plain dicts (no SDK, no network). Formats covered:

* OpenAI chat completions (``/v1/chat/completions``): tools
  ``{"type": "function", "function": {name, description, parameters, strict?}}``,
  assistant ``tool_calls`` with the arguments as JSON text, ``role: "tool"`` results.
* OpenAI Responses (``/v1/responses``): flat function tools
  ``{"type": "function", name, description, parameters, strict}``, ``function_call``
  output items and ``function_call_output`` input items.
* Anthropic Messages: tools ``{name, description, input_schema}``, ``tool_use`` content
  blocks, ``tool_result`` blocks inside a user message.
* Gemini ``generateContent``: ``{"function_declarations": [...]}`` whose parameter
  schemas are reduced to the OpenAPI subset Gemini accepts (:func:`gemini_schema`),
  ``functionCall`` / ``functionResponse`` parts.

Streaming: :class:`OpenAIChatStream`, :class:`OpenAIResponsesStream`,
:class:`AnthropicStream` and :class:`GeminiStream` take the decoded stream events one
by one and assemble the text and the tool calls; their arguments are parsed
best-effort while they arrive (:func:`~toolwire.client.partial_json.parse_partial_arguments`)
and strictly at the end (a call whose final text is not a JSON object gets
``invalid_arguments`` and is not executed).

The system-prompt channel: :func:`tools_prompt_section` builds an "Available tools"
list from the ``toolwire/promptSnippet`` and ``toolwire/promptGuidelines`` members a
tool definition carries in ``_meta``.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolwire.models import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolDefinition,
)

from .conversation import (
    AssistantMessage,
    Message,
    StopReason,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from .partial_json import ArgumentsError, parse_final_arguments, parse_partial_arguments

__all__ = [
    "PROMPT_GUIDELINES_META_KEY",
    "PROMPT_SNIPPET_META_KEY",
    "AnthropicStream",
    "GeminiStream",
    "OpenAIChatStream",
    "OpenAIResponsesStream",
    "ParsedToolResult",
    "anthropic_tool",
    "assistant_from_anthropic",
    "assistant_from_gemini",
    "assistant_from_openai_chat",
    "assistant_from_openai_responses",
    "assistant_to_anthropic",
    "assistant_to_gemini",
    "assistant_to_openai_chat",
    "assistant_to_openai_responses",
    "content_text",
    "gemini_schema",
    "gemini_tools",
    "openai_chat_tool",
    "openai_responses_tool",
    "strict_schema_allowed",
    "to_anthropic_messages",
    "to_gemini_contents",
    "to_openai_chat_messages",
    "to_openai_responses_input",
    "tool_result_from_anthropic",
    "tool_result_from_gemini",
    "tool_result_from_openai_chat",
    "tool_result_from_openai_responses",
    "tool_result_to_anthropic",
    "tool_result_to_gemini",
    "tool_result_to_openai_chat",
    "tool_result_to_openai_responses",
    "tools_prompt_section",
]

PROMPT_SNIPPET_META_KEY = "toolwire/promptSnippet"
"""Key under a tool definition's ``_meta``: a one-line description for the system prompt."""
PROMPT_GUIDELINES_META_KEY = "toolwire/promptGuidelines"
"""Key under a tool definition's ``_meta``: a list of usage guidelines for the system prompt."""


# --------------------------------------------------------------------------- schemas


def _parameters(tool: ToolDefinition) -> dict[str, Any]:
    """The tool's input schema as an object schema (a copy; ``properties`` always present)."""
    schema = copy.deepcopy(tool.input_schema) if isinstance(tool.input_schema, dict) else {}
    schema.setdefault("type", "object")
    if schema.get("type") == "object":
        schema.setdefault("properties", {})
    return schema


_STRICT_UNSUPPORTED = frozenset(
    {
        "allOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "patternProperties",
        "unevaluatedProperties",
        "propertyNames",
        "default",
    }
)
STRICT_MAX_DEPTH = 10
"""Deepest object nesting OpenAI's strict mode accepts (its structured-outputs limits)."""


def strict_schema_allowed(schema: Mapping[str, Any]) -> bool:
    """Can OpenAI's ``strict: true`` mode take this parameters schema as it is?

    OpenAI's structured-outputs rules: the root is an object; every object schema
    (the root, nested properties, array items, ``anyOf`` branches and ``$defs``) sets
    ``additionalProperties: false`` and lists every property in ``required``; no
    ``allOf``/``oneOf``/``not``/conditionals/``patternProperties``/``default``; at most
    10 levels of object nesting. Optional parameters are expressed as required ones
    with a ``null`` type, which a tool's schema rarely does, so most tools get
    ``strict`` left out.
    """
    if schema.get("type") != "object":
        return False

    def ok(node: Any, depth: int) -> bool:
        if not isinstance(node, dict):
            return False
        if _STRICT_UNSUPPORTED & node.keys():
            return False
        types = node.get("type")
        is_object = types == "object" or (isinstance(types, list) and "object" in types)
        if is_object or "properties" in node:
            if depth > STRICT_MAX_DEPTH:
                return False
            if node.get("additionalProperties") is not False:
                return False
            props = node.get("properties", {})
            if not isinstance(props, dict):
                return False
            required = node.get("required", [])
            if not isinstance(required, list) or set(required) != set(props):
                return False
            if not all(ok(v, depth + 1) for v in props.values()):
                return False
        items = node.get("items")
        if items is not None and not ok(items, depth):
            return False
        for key in ("anyOf",):
            branches = node.get(key)
            if branches is not None and not (
                isinstance(branches, list) and all(ok(b, depth) for b in branches)
            ):
                return False
        for key in ("$defs", "definitions"):
            defs = node.get(key)
            if defs is not None and not (
                isinstance(defs, dict) and all(ok(d, depth) for d in defs.values())
            ):
                return False
        return True

    return ok(dict(schema), 1)


_GEMINI_KEEP_TYPES = {"string", "number", "integer", "boolean", "array", "object"}


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Reduce a JSON Schema to the OpenAPI subset Gemini function declarations accept.

    Kept: ``type``, ``properties``, ``required``, ``items``, ``enum``, ``description``,
    ``nullable``. ``$ref`` to ``$defs``/``definitions`` is inlined (a recursive
    reference becomes a plain ``object``); a type array or an ``anyOf``/``oneOf`` with
    a null branch becomes the first other type plus ``nullable: true`` (other branches
    are dropped); ``allOf`` branches are merged; ``const`` becomes a one-value ``enum``;
    an ``enum`` of non-strings moves into the description; ``required`` keeps only
    declared properties. Everything else (``$schema``, ``additionalProperties``,
    ``title``, ``default``, formats, bounds, ...) is dropped.
    """
    root = dict(schema)
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        if isinstance(root.get(key), dict):
            defs.update({f"#/{key}/{k}": v for k, v in root[key].items()})

    def resolve(node: Any, seen: tuple[str, ...]) -> tuple[dict[str, Any], tuple[str, ...]]:
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen or ref not in defs:
                extra = {k: v for k, v in node.items() if k == "description"}
                return {"type": "object", **extra}, seen
            seen = (*seen, ref)
            merged = dict(defs[ref])
            merged.update({k: v for k, v in node.items() if k != "$ref"})
            node = merged
        return (node if isinstance(node, dict) else {}), seen

    def reduce(node: Any, seen: tuple[str, ...]) -> dict[str, Any]:
        node, seen = resolve(node, seen)
        node = dict(node)
        nullable = bool(node.get("nullable"))
        for key in ("anyOf", "oneOf"):
            branches = node.pop(key, None)
            if isinstance(branches, list) and branches:
                rest = [
                    b for b in branches if not (isinstance(b, dict) and b.get("type") == "null")
                ]
                nullable = nullable or len(rest) < len(branches)
                if rest:
                    picked, seen2 = resolve(rest[0], seen)
                    merged = dict(picked)
                    for k, v in node.items():
                        merged.setdefault(k, v)
                    node = merged
                    seen = seen2
        all_of = node.pop("allOf", None)
        if isinstance(all_of, list):
            for branch in all_of:
                part, _ = resolve(branch, seen)
                for k, v in part.items():
                    if k == "properties" and isinstance(v, dict):
                        node.setdefault("properties", {}).update(v)
                    elif k == "required" and isinstance(v, list):
                        node["required"] = [*node.get("required", []), *v]
                    else:
                        node.setdefault(k, v)
        out: dict[str, Any] = {}
        types = node.get("type")
        if isinstance(types, list):
            nullable = nullable or "null" in types
            types = next((t for t in types if t != "null"), None)
        if "const" in node and "enum" not in node:
            node["enum"] = [node["const"]]
        enum = node.get("enum")
        if types is None:
            if "properties" in node:
                types = "object"
            elif "items" in node:
                types = "array"
            elif isinstance(enum, list):
                types = "string"
        if isinstance(types, str) and types in _GEMINI_KEEP_TYPES:
            out["type"] = types
        description = node.get("description")
        if isinstance(enum, list):
            values = [v for v in enum if v is not None]
            nullable = nullable or len(values) < len(enum)
            if values and all(isinstance(v, str) for v in values) and types == "string":
                out["enum"] = values
            elif values:
                listed = ", ".join(json.dumps(v) for v in values)
                description = (
                    f"{description} (one of: {listed})" if description else f"One of: {listed}"
                )
        if isinstance(description, str) and description:
            out["description"] = description
        if nullable:
            out["nullable"] = True
        if out.get("type") == "object":
            props = node.get("properties")
            if isinstance(props, dict) and props:
                out["properties"] = {str(k): reduce(v, seen) for k, v in props.items()}
                required = node.get("required")
                if isinstance(required, list):
                    names = [r for r in dict.fromkeys(required) if r in props]
                    if names:
                        out["required"] = names
        if out.get("type") == "array":
            items = node.get("items")
            out["items"] = reduce(items, seen) if isinstance(items, dict) else {"type": "string"}
        return out

    return reduce(root, ())


# --------------------------------------------------------------------------- tool definitions


def openai_chat_tool(tool: ToolDefinition, *, strict: bool = True) -> dict[str, Any]:
    """A tool definition for OpenAI chat completions' ``tools`` list.

    Args:
        tool: the definition from ``tools/list``.
        strict: ask for ``strict: true`` when :func:`strict_schema_allowed` says the
            schema qualifies; False never sets it.
    """
    params = _parameters(tool)
    fn: dict[str, Any] = {"name": tool.name, "description": tool.description or ""}
    fn["parameters"] = params
    if strict and strict_schema_allowed(params):
        fn["strict"] = True
    return {"type": "function", "function": fn}


def openai_responses_tool(tool: ToolDefinition, *, strict: bool = True) -> dict[str, Any]:
    """A flat function tool for the OpenAI Responses API (``strict`` always explicit,
    since that API defaults it to true)."""
    params = _parameters(tool)
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description or "",
        "parameters": params,
        "strict": bool(strict and strict_schema_allowed(params)),
    }


def anthropic_tool(tool: ToolDefinition) -> dict[str, Any]:
    """A tool for the Anthropic Messages API: ``{name, description, input_schema}``."""
    return {
        "name": tool.name,
        "description": tool.description or "",
        "input_schema": _parameters(tool),
    }


def gemini_tools(tools: Iterable[ToolDefinition]) -> list[dict[str, Any]]:
    """Gemini's ``tools`` member: one ``{"function_declarations": [...]}`` entry.

    ``parameters`` (reduced by :func:`gemini_schema`) is left out for a tool without
    parameters: Gemini refuses an object schema with no properties.
    """
    decls = []
    for tool in tools:
        decl: dict[str, Any] = {"name": tool.name, "description": tool.description or ""}
        params = gemini_schema(_parameters(tool))
        if params.get("properties"):
            decl["parameters"] = params
        decls.append(decl)
    return [{"function_declarations": decls}] if decls else []


# --------------------------------------------------------------------------- system prompt


def tools_prompt_section(tools: Iterable[ToolDefinition]) -> str:
    """The "Available tools" part of a system prompt, or "" when no tool has a snippet.

    Built from ``_meta["toolwire/promptSnippet"]`` (one line per tool, only tools that
    have one) and ``_meta["toolwire/promptGuidelines"]`` (each guideline once, in tool
    order, only from tools that have them).
    """
    lines: list[str] = []
    guidelines: list[str] = []
    for tool in tools:
        meta = tool.meta or {}
        snippet = meta.get(PROMPT_SNIPPET_META_KEY)
        if isinstance(snippet, str) and snippet.strip():
            lines.append(f"- {tool.name}: {' '.join(snippet.split())}")
        extra = meta.get(PROMPT_GUIDELINES_META_KEY)
        if isinstance(extra, list):
            for g in extra:
                if isinstance(g, str) and g.strip() and g.strip() not in guidelines:
                    guidelines.append(g.strip())
    parts: list[str] = []
    if lines:
        parts.append("Available tools:\n" + "\n".join(lines))
    if guidelines:
        parts.append("Guidelines:\n" + "\n".join(f"- {g}" for g in guidelines))
    return "\n\n".join(parts)


# --------------------------------------------------------------------------- content


def content_text(blocks: Iterable[ContentBlock]) -> str:
    """Content blocks as text for APIs that take only text: text as it is, an embedded
    text resource's text, other blocks as a short bracketed marker."""
    out: list[str] = []
    for block in blocks:
        if isinstance(block, TextContent):
            out.append(block.text)
        elif isinstance(block, ImageContent):
            out.append(f"[image {block.mime_type}]")
        elif isinstance(block, AudioContent):
            out.append(f"[audio {block.mime_type}]")
        elif isinstance(block, ResourceLink):
            out.append(f"[resource link {block.uri}]")
        elif isinstance(block, EmbeddedResource):
            text = getattr(block.resource, "text", None)
            out.append(text if isinstance(text, str) else f"[resource {block.resource.uri}]")
    return "\n".join(out)


def _images(blocks: Iterable[ContentBlock]) -> list[ImageContent]:
    return [b for b in blocks if isinstance(b, ImageContent)]


@dataclass(frozen=True)
class ParsedToolResult:
    """A tool result read back from a provider format (for round trips and logs).

    ``is_error`` and ``name`` are None where the format does not carry them.
    """

    tool_call_id: str
    text: str
    is_error: bool | None = None
    name: str | None = None


# --------------------------------------------------------------------------- stop reasons

_OPENAI_FINISH: dict[str, StopReason] = {
    "stop": "stop",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "length": "length",
    "content_filter": "error",
}
_ANTHROPIC_STOP: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "toolUse",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "error",
}
_GEMINI_FINISH: dict[str, StopReason] = {"STOP": "stop", "MAX_TOKENS": "length"}


def _stop(reason: StopReason, calls: list[ToolCall]) -> StopReason:
    """A natural stop with tool calls is a tool-use stop (some APIs say "stop" either way)."""
    return "toolUse" if reason == "stop" and calls else reason


def _call(
    call_id: str, name: str, raw: str | Mapping[str, Any] | None, *, final: bool = True
) -> ToolCall:
    """A ToolCall from argument text (parsed strictly when ``final``) or an object."""
    if raw is None or isinstance(raw, Mapping):
        return ToolCall(call_id, name, dict(raw or {}))
    if not final:
        return ToolCall(call_id, name, parse_partial_arguments(raw))
    try:
        return ToolCall(call_id, name, parse_final_arguments(raw))
    except ArgumentsError as exc:
        return ToolCall(call_id, name, parse_partial_arguments(raw), invalid_arguments=str(exc))


def _new_id(prefix: str = "call") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


# --------------------------------------------------------------------------- OpenAI chat


def assistant_from_openai_chat(response: Mapping[str, Any]) -> AssistantMessage:
    """The assistant message of a (non-streamed) chat-completions response.

    Reads ``choices[0].message.content`` and ``.tool_calls`` and maps ``finish_reason``
    (``length`` → "length", ``tool_calls`` → "toolUse", ``content_filter`` → "error").
    """
    choices = response.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    msg = choice.get("message") or {}
    calls = [
        _call(
            str(tc.get("id") or _new_id()),
            str((tc.get("function") or {}).get("name", "")),
            (tc.get("function") or {}).get("arguments", ""),
        )
        for tc in msg.get("tool_calls") or []
        if isinstance(tc, dict)
    ]
    reason = _OPENAI_FINISH.get(str(choice.get("finish_reason")), "stop")
    usage = response.get("usage")
    return AssistantMessage(
        text=msg.get("content") or "",
        tool_calls=calls,
        stop_reason=_stop(reason, calls),
        usage=usage if isinstance(usage, dict) else None,
    )


def assistant_to_openai_chat(message: AssistantMessage) -> dict[str, Any]:
    """An assistant message for the chat-completions ``messages`` list."""
    out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in message.tool_calls
        ]
    return out


def tool_result_to_openai_chat(result: ToolResultMessage) -> dict[str, Any]:
    """A ``role: "tool"`` message (text only: chat completions take no images there;
    :func:`to_openai_chat_messages` sends a result's images in a following user message)."""
    return {
        "role": "tool",
        "tool_call_id": result.tool_call_id,
        "content": content_text(result.content),
    }


def tool_result_from_openai_chat(message: Mapping[str, Any]) -> ParsedToolResult:
    """Read a ``role: "tool"`` message back."""
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ParsedToolResult(str(message.get("tool_call_id")), str(content or ""))


def to_openai_chat_messages(
    messages: Sequence[Message], system_prompt: str | None = None
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
            out.append(assistant_to_openai_chat(m))
        else:
            out.append(tool_result_to_openai_chat(m))
            images = _images(m.content)
            if images:
                pending_images.append(
                    {"type": "text", "text": f"Images returned by tool call {m.tool_call_id}:"}
                )
                pending_images += [
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:{i.mime_type};base64,{i.data}"},
                    }
                    for i in images
                ]
    if pending_images:
        out.append({"role": "user", "content": pending_images})
    return out


class _CallBuffers:
    """Tool calls being streamed, keyed by the stream's index or item id."""

    def __init__(self) -> None:
        self.order: list[Any] = []
        self.ids: dict[Any, str] = {}
        self.names: dict[Any, str] = {}
        self.texts: dict[Any, str] = {}
        self.objects: dict[Any, dict[str, Any]] = {}

    def start(self, key: Any, call_id: str | None = None, name: str | None = None) -> None:
        if key not in self.texts:
            self.order.append(key)
            self.texts[key] = ""
        if call_id:
            self.ids[key] = call_id
        if name and not self.names.get(key):
            self.names[key] = name

    def append(self, key: Any, text: str) -> None:
        self.start(key)
        self.texts[key] += text

    def set_text(self, key: Any, text: str) -> None:
        self.start(key)
        self.texts[key] = text

    def calls(self, *, final: bool) -> list[ToolCall]:
        out = []
        for key in self.order:
            call_id = self.ids.setdefault(key, _new_id())
            name = self.names.get(key, "")
            if key in self.objects:
                out.append(ToolCall(call_id, name, dict(self.objects[key])))
            else:
                out.append(_call(call_id, name, self.texts[key], final=final))
        return out


class OpenAIChatStream:
    """Assembles a streamed chat completion from its decoded ``data:`` chunks.

    Feed each chunk (the parsed JSON of one SSE ``data:`` line, ``[DONE]`` excluded)
    to :meth:`feed`; read :attr:`text`, :meth:`partial_tool_calls` while it streams and
    :meth:`message` at the end. A tool call's first delta carries its ``index``, ``id``
    and ``function.name``; later deltas of the same ``index`` add argument text.
    """

    def __init__(self) -> None:
        self.text = ""
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self._calls = _CallBuffers()

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
            for tc in delta.get("tool_calls") or []:
                if not isinstance(tc, dict):
                    continue
                key = tc.get("index", 0)
                fn = tc.get("function") or {}
                self._calls.start(key, tc.get("id"), fn.get("name"))
                args = fn.get("arguments")
                if isinstance(args, str):
                    self._calls.append(key, args)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return added

    def partial_tool_calls(self) -> list[ToolCall]:
        """The tool calls so far, arguments parsed best-effort."""
        return self._calls.calls(final=False)

    def message(self) -> AssistantMessage:
        """The finished assistant message (arguments parsed strictly)."""
        calls = self._calls.calls(final=True)
        reason = _OPENAI_FINISH.get(str(self.finish_reason), "stop")
        return AssistantMessage(self.text, calls, _stop(reason, calls), usage=self.usage)


# --------------------------------------------------------------------------- OpenAI Responses


def assistant_from_openai_responses(response: Mapping[str, Any]) -> AssistantMessage:
    """The assistant message of a Responses API response object.

    ``output_text`` parts of ``message`` items become the text, ``function_call`` items
    the tool calls (their ``call_id`` is the id); ``status: "incomplete"`` because of
    ``max_output_tokens`` is a "length" stop, ``failed`` an "error".
    """
    text: list[str] = []
    calls: list[ToolCall] = []
    for item in response.get("output") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    text.append(str(part.get("text", "")))
        elif item.get("type") == "function_call":
            calls.append(
                _call(
                    str(item.get("call_id") or item.get("id") or _new_id()),
                    str(item.get("name", "")),
                    item.get("arguments", ""),
                )
            )
    return AssistantMessage(
        "".join(text), calls, _responses_stop(response, calls), usage=response.get("usage")
    )


def _responses_stop(response: Mapping[str, Any], calls: list[ToolCall]) -> StopReason:
    status = response.get("status")
    if status == "incomplete":
        details = response.get("incomplete_details") or {}
        return "length" if details.get("reason") == "max_output_tokens" else "error"
    if status == "failed":
        return "error"
    if status == "cancelled":
        return "aborted"
    return "toolUse" if calls else "stop"


def assistant_to_openai_responses(message: AssistantMessage) -> list[dict[str, Any]]:
    """An assistant message as Responses ``input`` items: a message item (when there is
    text) and one ``function_call`` item per call."""
    items: list[dict[str, Any]] = []
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
            "name": c.name,
            "arguments": json.dumps(c.arguments),
        }
        for c in message.tool_calls
    ]
    return items


def tool_result_to_openai_responses(result: ToolResultMessage) -> dict[str, Any]:
    """A ``function_call_output`` input item (text, or text and images as input parts)."""
    images = _images(result.content)
    output: Any = content_text(result.content)
    if images:
        output = [{"type": "input_text", "text": output}] + [
            {"type": "input_image", "image_url": f"data:{i.mime_type};base64,{i.data}"}
            for i in images
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


def to_openai_responses_input(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """A whole conversation as Responses ``input`` items (the system prompt goes in the
    request's ``instructions``)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, UserMessage):
            out.append({"role": "user", "content": m.content})
        elif isinstance(m, AssistantMessage):
            out += assistant_to_openai_responses(m)
        else:
            out.append(tool_result_to_openai_responses(m))
    return out


class OpenAIResponsesStream:
    """Assembles a streamed Responses API answer from its events (``type`` member).

    Handles ``response.output_item.added`` (a ``function_call`` item starts),
    ``response.output_text.delta``, ``response.function_call_arguments.delta`` /
    ``.done``, ``response.output_item.done`` and ``response.completed`` /
    ``.incomplete`` / ``.failed``.
    """

    def __init__(self) -> None:
        self.text = ""
        self.response: dict[str, Any] = {}
        self._calls = _CallBuffers()

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
        return self._calls.calls(final=False)

    def message(self) -> AssistantMessage:
        """The finished assistant message (arguments parsed strictly)."""
        calls = self._calls.calls(final=True)
        return AssistantMessage(
            self.text,
            calls,
            _responses_stop(self.response, calls),
            usage=self.response.get("usage"),
        )


# --------------------------------------------------------------------------- Anthropic


def assistant_from_anthropic(response: Mapping[str, Any]) -> AssistantMessage:
    """The assistant message of a Messages API response: ``text`` blocks joined,
    ``tool_use`` blocks as calls (``input`` is already an object), ``stop_reason``
    mapped (``max_tokens`` → "length", ``tool_use`` → "toolUse")."""
    text: list[str] = []
    calls: list[ToolCall] = []
    for block in response.get("content") or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            text.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            raw = block.get("input")
            calls.append(
                _call(
                    str(block.get("id") or _new_id("toolu")),
                    str(block.get("name", "")),
                    raw if isinstance(raw, Mapping) else None,
                )
            )
    reason = _ANTHROPIC_STOP.get(str(response.get("stop_reason")), "stop")
    usage = response.get("usage")
    return AssistantMessage(
        "".join(text), calls, _stop(reason, calls), usage=usage if isinstance(usage, dict) else None
    )


def assistant_to_anthropic(message: AssistantMessage) -> dict[str, Any]:
    """An assistant message for the Messages API."""
    content: list[dict[str, Any]] = []
    if message.text:
        content.append({"type": "text", "text": message.text})
    content += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
        for c in message.tool_calls
    ]
    return {"role": "assistant", "content": content}


def tool_result_to_anthropic(result: ToolResultMessage) -> dict[str, Any]:
    """A ``tool_result`` content block (text and images; ``is_error`` when set)."""
    parts: list[dict[str, Any]] = []
    text = content_text(b for b in result.content if not isinstance(b, ImageContent))
    if text:
        parts.append({"type": "text", "text": text})
    parts += [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": i.mime_type, "data": i.data},
        }
        for i in _images(result.content)
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


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """A whole conversation for the Messages API (the system prompt goes in ``system``).

    Consecutive tool results share one user message, as the API requires.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, UserMessage):
            out.append({"role": "user", "content": m.content})
        elif isinstance(m, AssistantMessage):
            out.append(assistant_to_anthropic(m))
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

    ``content_block_start`` opens a text or ``tool_use`` block at an ``index``;
    ``content_block_delta`` adds ``text_delta`` text or ``input_json_delta`` argument
    text; ``message_delta`` carries the ``stop_reason``.
    """

    def __init__(self) -> None:
        self.text = ""
        self.stop_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self._calls = _CallBuffers()

    def feed(self, event: Mapping[str, Any]) -> str:
        """Take one event; returns the text it added."""
        kind = event.get("type")
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                key = event.get("index")
                self._calls.start(key, block.get("id"), block.get("name"))
                given = block.get("input")
                if isinstance(given, dict) and given:
                    self._calls.objects[key] = given
            elif block.get("type") == "text" and block.get("text"):
                self.text += str(block["text"])
                return str(block["text"])
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                text = str(delta.get("text", ""))
                self.text += text
                return text
            if delta.get("type") == "input_json_delta":
                self._calls.append(event.get("index"), str(delta.get("partial_json", "")))
        elif kind == "message_delta":
            delta = event.get("delta") or {}
            if delta.get("stop_reason"):
                self.stop_reason = str(delta["stop_reason"])
            if isinstance(event.get("usage"), dict):
                self.usage = event["usage"]
        return ""

    def partial_tool_calls(self) -> list[ToolCall]:
        """The tool calls so far, arguments parsed best-effort."""
        return self._calls.calls(final=False)

    def message(self) -> AssistantMessage:
        """The finished assistant message (arguments parsed strictly)."""
        calls = self._calls.calls(final=True)
        reason = _ANTHROPIC_STOP.get(str(self.stop_reason), "stop")
        return AssistantMessage(self.text, calls, _stop(reason, calls), usage=self.usage)


# --------------------------------------------------------------------------- Gemini


def _gemini_parts(response: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    candidates = response.get("candidates") or [{}]
    cand = candidates[0] if isinstance(candidates[0], dict) else {}
    parts = (cand.get("content") or {}).get("parts") or []
    return [p for p in parts if isinstance(p, dict)], cand.get("finishReason")


def _gemini_reason(finish: str | None, calls: list[ToolCall]) -> StopReason:
    if finish is None:
        return "toolUse" if calls else "stop"
    return _stop(_GEMINI_FINISH.get(finish, "error"), calls)


def assistant_from_gemini(response: Mapping[str, Any]) -> AssistantMessage:
    """The assistant message of a ``generateContent`` response (first candidate).

    ``functionCall`` parts become calls; one without an ``id`` gets a generated one
    (sent back with its ``functionResponse``). ``finishReason`` ``MAX_TOKENS`` is a
    "length" stop; reasons other than ``STOP`` are "error".
    """
    parts, finish = _gemini_parts(response)
    text = "".join(str(p["text"]) for p in parts if isinstance(p.get("text"), str))
    calls: list[ToolCall] = []
    for p in parts:
        fc = p.get("functionCall")
        if isinstance(fc, dict):
            args = fc.get("args")
            calls.append(
                ToolCall(
                    str(fc.get("id") or _new_id()),
                    str(fc.get("name", "")),
                    dict(args) if isinstance(args, dict) else {},
                )
            )
    usage = response.get("usageMetadata")
    return AssistantMessage(
        text, calls, _gemini_reason(finish, calls), usage=usage if isinstance(usage, dict) else None
    )


def assistant_to_gemini(message: AssistantMessage) -> dict[str, Any]:
    """An assistant message as a Gemini ``model`` content."""
    parts: list[dict[str, Any]] = []
    if message.text:
        parts.append({"text": message.text})
    parts += [
        {"functionCall": {"id": c.id, "name": c.name, "args": c.arguments}}
        for c in message.tool_calls
    ]
    return {"role": "model", "parts": parts}


def tool_result_to_gemini(result: ToolResultMessage) -> dict[str, Any]:
    """A ``functionResponse`` part: ``response`` is ``{"output": text}`` or, for an error
    result, ``{"error": text}``."""
    key = "error" if result.is_error else "output"
    return {
        "functionResponse": {
            "id": result.tool_call_id,
            "name": result.tool_name,
            "response": {key: content_text(result.content)},
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


def to_gemini_contents(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """A whole conversation as Gemini ``contents`` (the system prompt goes in
    ``systemInstruction``); consecutive tool results share one ``user`` content."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, UserMessage):
            out.append({"role": "user", "parts": [{"text": m.content}]})
        elif isinstance(m, AssistantMessage):
            out.append(assistant_to_gemini(m))
        else:
            part = tool_result_to_gemini(m)
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

    def __init__(self) -> None:
        self.text = ""
        self.finish_reason: str | None = None
        self.calls: list[ToolCall] = []

    def feed(self, chunk: Mapping[str, Any]) -> str:
        """Take one chunk; returns the text it added."""
        parts, finish = _gemini_parts(chunk)
        added = ""
        for p in parts:
            if isinstance(p.get("text"), str):
                added += p["text"]
            fc = p.get("functionCall")
            if isinstance(fc, dict):
                args = fc.get("args")
                self.calls.append(
                    ToolCall(
                        str(fc.get("id") or _new_id()),
                        str(fc.get("name", "")),
                        dict(args) if isinstance(args, dict) else {},
                    )
                )
        self.text += added
        if finish:
            self.finish_reason = str(finish)
        return added

    def partial_tool_calls(self) -> list[ToolCall]:
        """The tool calls so far (always complete)."""
        return list(self.calls)

    def message(self) -> AssistantMessage:
        """The finished assistant message."""
        return AssistantMessage(
            self.text, list(self.calls), _gemini_reason(self.finish_reason, self.calls)
        )

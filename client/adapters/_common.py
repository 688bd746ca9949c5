"""Pieces every provider module shares: content as text, stop reasons, call parsing,
streamed-call buffers, call ids, the tool set of one request, the system-prompt section."""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from toolwire.extensions import PROMPT_GUIDELINES_META_KEY, PROMPT_SNIPPET_META_KEY
from toolwire.models import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    ToolDefinition,
)

from ..conversation import StopReason, ToolCall, ToolResultMessage
from ..partial_json import ArgumentsError, parse_final_arguments, parse_partial_arguments
from ._names import NameRule, wire_names
from ._schema import Restore, resolve_pointer, root_object, same


def parameters_of(tool: ToolDefinition) -> dict[str, Any]:
    """The tool's input schema as an object schema (a copy; ``properties`` always present).

    A root that is only a ``$ref`` (pydantic's form for a recursive model) is replaced by
    its target, its ``$defs`` kept, since providers want the object at the root; root
    alternatives (``anyOf``/``oneOf``/``allOf``) are folded into one object
    (:func:`._schema.root_object`; :func:`declared` also gives the note that names them).
    """
    return declared(tool)[0]


def declared(tool: ToolDefinition) -> tuple[dict[str, Any], str]:
    """``(parameters, description)`` of a tool for a provider's declaration.

    ``parameters`` is :func:`parameters_of`'s object schema; ``description`` is the
    tool's description, followed by the words that name the forms its root
    alternatives allowed (a provider sees only the folded object).
    """
    schema = copy.deepcopy(tool.input_schema) if isinstance(tool.input_schema, dict) else {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = resolve_pointer(schema, ref)
        if isinstance(target, dict) and ref != "#":
            del schema["$ref"]
            merged = copy.deepcopy(target)
            for key, value in schema.items():
                if key == "properties" and isinstance(value, dict):
                    merged[key] = {**merged.get(key, {}), **value}
                elif key == "required" and isinstance(value, list):
                    merged[key] = list(dict.fromkeys([*merged.get(key, []), *value]))
                else:
                    merged[key] = value
            schema = merged
    schema.setdefault("type", "object")
    schema, note = root_object(schema)
    if schema.get("type") == "object":
        schema.setdefault("properties", {})
    description = tool.description or ""
    if note:
        description = f"{description}\n\n{note}" if description else note
    return schema, description


# --------------------------------------------------------------------------- tool sets


@dataclass
class ProviderTools:
    """The tools of one request in one provider's dialect, and the way back.

    Built by each provider module (``openai_chat_tools``, ``openai_responses_tools``,
    ``anthropic_tools``, ``gemini_tools_for``) from the host's definitions.

    Attributes:
        declarations: the provider's tool declarations, in tool order.
        to_wire: real tool name → the name the provider sees (valid for its name rule,
            unique, the same for the same set of tools).
        restores: real tool name → a function mapping arguments shaped by the
            provider's declaration back to the host's schema (identity when the
            declaration is the host's schema).
    """

    declarations: list[dict[str, Any]] = field(default_factory=list)
    to_wire: dict[str, str] = field(default_factory=dict)
    restores: dict[str, Restore] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.to_real = {w: r for r, w in self.to_wire.items()}

    def wire_name(self, name: str) -> str:
        """The provider-side name of tool ``name`` (unchanged for an unknown tool)."""
        return self.to_wire.get(name, name)

    def real_name(self, wire: str) -> str:
        """The host's name for a provider-side name (unchanged for an unknown one)."""
        return self.to_real.get(wire, wire)

    def call_from_wire(self, call: ToolCall) -> ToolCall:
        """``call`` with its real tool name and its arguments mapped back to the host's
        schema (arguments that failed to parse are left as they are)."""
        name = self.real_name(call.name)
        restore = self.restores.get(name, same)
        args = call.arguments
        if call.invalid_arguments is None and restore is not same:
            try:
                restored = restore(args)
            except Exception:  # a shape the declaration did not invite: the host judges it
                restored = args
            args = restored if isinstance(restored, dict) else args
        return replace(call, name=name, arguments=args)


def build_tools(
    tools: Iterable[ToolDefinition],
    rule: NameRule,
    declare: Callable[[ToolDefinition, str], tuple[dict[str, Any], Restore]],
) -> ProviderTools:
    """A :class:`ProviderTools` from ``declare(tool, wire_name) -> (declaration, restore)``."""
    tools = list(tools)
    names = wire_names([t.name for t in tools], rule)
    out = ProviderTools(to_wire=names)
    for tool in tools:
        decl, restore = declare(tool, names[tool.name])
        out.declarations.append(decl)
        out.restores[tool.name] = restore
    out.__post_init__()
    return out


def real_calls(calls: list[ToolCall], tools: ProviderTools | None) -> list[ToolCall]:
    """Each call with its name and arguments mapped back through ``tools`` (if given)."""
    return calls if tools is None else [tools.call_from_wire(c) for c in calls]


def wire_name(name: str, tools: ProviderTools | None) -> str:
    """The provider-side name of a tool (unchanged without a tool set)."""
    return name if tools is None else tools.wire_name(name)


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


FAILED_WITHOUT_MESSAGE = "The tool failed and gave no error message."
"""The text sent for an error result that has no text of its own (Anthropic refuses a
``tool_result`` with ``is_error`` and no content; elsewhere the model would read an
empty success)."""


def result_text(result: ToolResultMessage, blocks: Iterable[ContentBlock] | None = None) -> str:
    """The text of a tool result for a provider: :func:`content_text` of ``blocks``
    (default: all of its content), or :data:`FAILED_WITHOUT_MESSAGE` for an error
    result whose text is empty or blank."""
    text = content_text(result.content if blocks is None else blocks)
    if result.is_error and not text.strip():
        return FAILED_WITHOUT_MESSAGE
    return text


def images(blocks: Iterable[ContentBlock]) -> list[ImageContent]:
    """The image blocks among ``blocks``."""
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


def natural_stop(reason: StopReason, calls: Sequence[ToolCall]) -> StopReason:
    """A natural stop with tool calls is a tool-use stop (some APIs say "stop" either way)."""
    return "toolUse" if reason == "stop" and calls else reason


# --------------------------------------------------------------------------- calls


def make_call(
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


def new_id(prefix: str = "call") -> str:
    """A fresh call id, ``<prefix>_<16 hex digits>``."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


def unique_ids(ids: Sequence[str | None], prefix: str = "call") -> list[str]:
    """One usable id per call of a message: a provider's id as it is when it is
    non-empty and not taken by an earlier call; else a fresh one.

    Local OpenAI-compatible servers (llama.cpp, Ollama) send ``call_0`` for every call
    of a message, or no id at all; the agent pairs results with calls by id, so each
    call needs its own. The fresh id goes back to the provider with the call and with
    its result, so both stay paired in the conversation it sees.
    """
    seen: set[str] = set()
    out: list[str] = []
    for given in ids:
        call_id = given if given and given not in seen else ""
        while not call_id or call_id in seen:
            call_id = new_id(prefix) if not given else f"{given}_{uuid.uuid4().hex[:8]}"
        seen.add(call_id)
        out.append(call_id)
    return out


class CallBuffers:
    """Tool calls being streamed, keyed by the stream's index or item id."""

    def __init__(self) -> None:
        self.order: list[Any] = []
        self.given_ids: dict[Any, str] = {}
        self.names: dict[Any, str] = {}
        self.texts: dict[Any, str] = {}
        self.objects: dict[Any, dict[str, Any]] = {}
        self.extra: dict[Any, dict[str, Any]] = {}
        self._ids: dict[Any, str] = {}

    def start(self, key: Any, call_id: str | None = None, name: str | None = None) -> None:
        """Open (or add to) the call at ``key``; the first non-empty id and name count."""
        if key not in self.texts:
            self.order.append(key)
            self.texts[key] = ""
        if call_id and key not in self.given_ids:
            self.given_ids[key] = call_id
        if name and not self.names.get(key):
            self.names[key] = name

    def append(self, key: Any, text: str) -> None:
        """Add argument text to the call at ``key``."""
        self.start(key)
        self.texts[key] += text

    def set_text(self, key: Any, text: str) -> None:
        """Replace the argument text of the call at ``key`` (a ``done`` event's full text)."""
        self.start(key)
        self.texts[key] = text

    def ids(self) -> list[str]:
        """The calls' ids, made unique once and kept (stable across partial reads)."""
        missing = [k for k in self.order if k not in self._ids]
        if missing:
            taken = [self._ids[k] for k in self.order if k in self._ids]
            fresh = unique_ids([*taken, *(self.given_ids.get(k) for k in missing)])
            for k, call_id in zip(missing, fresh[len(taken) :], strict=True):
                self._ids[k] = call_id
        return [self._ids[k] for k in self.order]

    def calls(self, *, final: bool) -> list[ToolCall]:
        """The calls so far (arguments parsed strictly when ``final``)."""
        out = []
        for key, call_id in zip(self.order, self.ids(), strict=True):
            name = self.names.get(key, "")
            if key in self.objects:
                call = ToolCall(call_id, name, dict(self.objects[key]))
            else:
                call = make_call(call_id, name, self.texts[key], final=final)
            extra = self.extra.get(key)
            if extra:
                call = replace(call, **extra)
            out.append(call)
        return out

"""Pydantic models of the protocol's data: tool definitions, content blocks, results.

Shapes follow the MCP schema, revision 2025-11-25 (``Tool``, ``ContentBlock``,
``CallToolResult``, ``InitializeResult``). Field names are snake_case in Python and
camelCase on the wire (``input_schema`` ↔ ``inputSchema``); serialise with
:func:`dump` to get the wire form without unset fields. Unknown fields are kept, so
a newer peer's additions survive a round trip.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

__all__ = [
    "LATEST_PROTOCOL_VERSION",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "ContentBlock",
    "EmbeddedResource",
    "ImageContent",
    "Implementation",
    "InitializeResult",
    "ListToolsResult",
    "ResourceLink",
    "TextContent",
    "TextResourceContents",
    "ToolAnnotations",
    "ToolDefinition",
    "content_block_adapter",
    "dump",
]

from .constants import (
    DETAILS_META_KEY,
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    TERMINATE_META_KEY,
)


class WireModel(BaseModel):
    """Base: camelCase aliases on the wire, snake_case names in Python, extras kept."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", frozen=False
    )


class Annotations(WireModel):
    """Hints on a content block: who it is for, how important, when it changed."""

    audience: list[Literal["user", "assistant"]] | None = None
    priority: float | None = None
    last_modified: str | None = None


class TextContent(WireModel):
    """``{type: "text", text}``: text for the model."""

    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ImageContent(WireModel):
    """``{type: "image", data, mimeType}``: base64-encoded image bytes."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class AudioContent(WireModel):
    """``{type: "audio", data, mimeType}``: base64-encoded audio bytes."""

    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ResourceLink(WireModel):
    """``{type: "resource_link", uri, name, ...}``: a pointer the client may fetch."""

    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class TextResourceContents(WireModel):
    """The text form of an embedded resource."""

    uri: str
    mime_type: str | None = None
    text: str


class BlobResourceContents(WireModel):
    """The binary form of an embedded resource (base64 ``blob``)."""

    uri: str
    mime_type: str | None = None
    blob: str


class EmbeddedResource(WireModel):
    """``{type: "resource", resource: {uri, mimeType?, text | blob}}``."""

    type: Literal["resource"] = "resource"
    resource: TextResourceContents | BlobResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


ContentBlock = Annotated[
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource,
    Field(discriminator="type"),
]
"""Any MCP content block, told apart by its ``type`` member."""

content_block_adapter: TypeAdapter[Any] = TypeAdapter(ContentBlock)
"""Validates a plain dict into the matching content block model."""


class ToolAnnotations(WireModel):
    """Untrusted behaviour hints for a tool (MCP ``ToolAnnotations``).

    Defaults per the spec when absent: readOnly false, destructive true,
    idempotent false, openWorld true.
    """

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class ToolDefinition(WireModel):
    """What a client sees of a tool: name, description, input schema, hints."""

    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class CallToolResult(WireModel):
    """A ``tools/call`` result. ``details`` travels in ``_meta["toolwire/details"]``."""

    content: list[ContentBlock]
    structured_content: dict[str, Any] | None = None
    is_error: bool = False
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    @property
    def details(self) -> Any:
        """Data for programs and UIs, kept apart from what the model reads (or None)."""
        return (self.meta or {}).get(DETAILS_META_KEY)

    @property
    def terminate(self) -> bool:
        """True when the tool asked an agent loop to stop after this batch."""
        return bool((self.meta or {}).get(TERMINATE_META_KEY))

    @property
    def text(self) -> str:
        """All text blocks joined by newlines (a convenience for scripts)."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))


class Implementation(WireModel):
    """Name and version of a client or server (MCP ``Implementation``)."""

    name: str
    version: str
    title: str | None = None


class InitializeResult(WireModel):
    """The ``initialize`` result."""

    protocol_version: str
    capabilities: dict[str, Any]
    server_info: Implementation
    instructions: str | None = None


class ListToolsResult(WireModel):
    """One page of ``tools/list``."""

    tools: list[ToolDefinition]
    next_cursor: str | None = None


def dump(model: BaseModel) -> dict[str, Any]:
    """The wire form of ``model``: camelCase keys, JSON types, unset/None fields left out."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)

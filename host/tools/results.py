"""Tool return values and their wire form (an MCP ``CallToolResult``)."""

from __future__ import annotations

import base64
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolwire import _json
from toolwire.constants import DETAILS_META_KEY, TERMINATE_META_KEY
from toolwire.errors import JsonRpcError

__all__ = [
    "ProtocolFailure",
    "ToolError",
    "ToolResult",
    "WireResult",
    "error_result",
    "image_block",
    "text_block",
    "to_wire_content",
]

_BLOCK_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})


class ToolError(Exception):
    """Raise from a handler to fail the call with exactly this message (``isError: true``).

    Any exception does that; this one also carries optional ``details``.
    """

    def __init__(self, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.details = details


class ProtocolFailure(JsonRpcError):
    """A call that fails as a JSON-RPC error, not as an error result: the host answers
    the request with this error (a worker process that could not encode its result
    answered -32603, as the host itself would have)."""


class WireResult:
    """A ``CallToolResult`` already in wire form, passed on unchanged (what a worker
    process answered for a call, :mod:`toolwire.host.workers.pool`).

    Attributes:
        result: the wire object.
    """

    __slots__ = ("result",)

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result


@dataclass
class ToolResult:
    """A tool's full answer.

    Attributes:
        content: what the model reads: a str (one text block), or a list of content
            blocks (typed models from :mod:`toolwire.models`, MCP-shaped dicts, or str).
        details: data for programs and UIs, kept apart from the model's content. On the
            wire it travels in ``result._meta["toolwire/details"]``.
        structured: a JSON object sent as ``structuredContent``.
        is_error: mark the result as a tool error (the model sees it as a failure).
        terminate: ask an agent loop to stop after this batch (``_meta["toolwire/terminate"]``).
        meta: any other ``_meta`` entries, sent as they are (after hooks see those of
            the result they are given).

    After hooks receive a result as a ToolResult too (:meth:`from_wire`): its content is
    then a list of wire content blocks (dicts).
    """

    content: str | Sequence[Any] = ""
    details: Any = None
    structured: dict[str, Any] | None = None
    is_error: bool = False
    terminate: bool = False
    meta: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_wire(cls, result: dict[str, Any]) -> ToolResult:
        """The ToolResult of a wire ``CallToolResult`` (content as wire blocks)."""
        meta = dict(result.get("_meta") or {})
        return cls(
            content=list(result.get("content") or []),
            details=meta.pop(DETAILS_META_KEY, None),
            structured=result.get("structuredContent"),
            is_error=result.get("isError") is True,
            terminate=meta.pop(TERMINATE_META_KEY, None) is True,
            meta=meta,
        )

    def to_wire(self) -> dict[str, Any]:
        """The ``CallToolResult`` object for the wire."""
        out: dict[str, Any] = {"content": to_wire_content(self.content)}
        if self.structured is not None:
            out["structuredContent"] = self.structured
        if self.is_error:
            out["isError"] = True
        meta = dict(self.meta)
        if self.details is not None:
            meta[DETAILS_META_KEY] = _jsonable(self.details)
        if self.terminate:
            meta[TERMINATE_META_KEY] = True
        if meta:
            out["_meta"] = meta
        return out


def is_pydantic_model(value: Any) -> bool:
    """True for a pydantic model instance (checked without importing pydantic: an
    instance can only exist once pydantic is imported)."""
    main = sys.modules.get("pydantic.main")
    return main is not None and isinstance(value, main.BaseModel)


def _jsonable(value: Any) -> Any:
    if is_pydantic_model(value):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


def _plain_block(item: dict[str, Any]) -> bool:
    """True for the common block shapes that need no further validation."""
    kind = item.get("type")
    if kind == "text":
        return type(item.get("text")) is str
    if kind in ("image", "audio"):
        return type(item.get("data")) is str and type(item.get("mimeType")) is str
    return False


def text_block(text: str) -> dict[str, Any]:
    """``{type: "text", text}``."""
    return {"type": "text", "text": text}


def image_block(data: bytes, mime_type: str) -> dict[str, Any]:
    """``{type: "image", data: base64(data), mimeType}``."""
    return {"type": "image", "data": base64.b64encode(data).decode("ascii"), "mimeType": mime_type}


def error_result(message: str, details: Any = None) -> dict[str, Any]:
    """A wire ``CallToolResult`` with ``isError: true`` and one text block."""
    out: dict[str, Any] = {"content": [{"type": "text", "text": message}], "isError": True}
    if details is not None:
        out["_meta"] = {DETAILS_META_KEY: details}
    return out


def to_wire_content(content: Any) -> list[dict[str, Any]]:
    """Normalise content to a list of wire content blocks.

    Accepts a str, one block, or a sequence of blocks, where a block is a str, a
    :mod:`toolwire.models` content model, or a dict in the MCP shape.

    Raises:
        TypeError: a block of another kind, or a dict that is not a valid content block.
    """
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, dict) or is_pydantic_model(content):
        content = [content]
    blocks: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, str):
            blocks.append({"type": "text", "text": item})
        elif is_pydantic_model(item):
            blocks.append(item.model_dump(mode="json", by_alias=True, exclude_none=True))
        elif isinstance(item, dict):
            if _plain_block(item):
                blocks.append(item)
                continue
            from toolwire.models import content_block_adapter

            try:
                model = content_block_adapter.validate_python(item)
            except ValueError as exc:  # pydantic's ValidationError
                errors = getattr(exc, "errors", None)
                reason = errors()[0]["msg"] if callable(errors) else str(exc)
                raise TypeError(f"not a valid content block: {reason}") from None
            blocks.append(model.model_dump(mode="json", by_alias=True, exclude_none=True))
        else:
            raise TypeError(f"cannot turn {type(item).__name__} into a content block")
    return blocks


def is_content_dict(value: Any) -> bool:
    """True for a dict that claims to be an MCP content block (has a known ``type``)."""
    return isinstance(value, dict) and value.get("type") in _BLOCK_TYPES


def json_text(value: Any) -> str:
    """Compact JSON text of ``value``, for the text block mirroring structured content."""
    return _json.dumps(value).decode("utf-8")

"""Tools with the input schemas and results providers refuse unless the adapters fix
them (tests/client/test_provider_shapes.py): arrays without ``items``, tuples, root
alternatives, an enum with an empty member, an error result with no content."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter
from toolwire.host import ToolResult, tool


def _echo(args: dict[str, Any]) -> str:
    return json.dumps(args, sort_keys=True)


@tool(
    name="tags",
    input_schema={
        "type": "object",
        "properties": {
            "tags": {"type": "array", "description": "Any values."},
            "grid": {"type": "array", "items": {"type": "array"}},
            "either": {"type": ["string", "array"]},
            "nested": {
                "type": "object",
                "properties": {"more": {"type": "array", "items": True}},
            },
        },
        "required": ["tags"],
    },
)
def tags(args: dict[str, Any]) -> str:
    """Arrays without an item schema, at several depths."""
    return _echo(args)


@tool(
    name="pair",
    input_schema={
        "type": "object",
        "properties": {
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "items": False,
                "minItems": 2,
            },
            "head": {"type": "array", "prefixItems": [{"type": "number"}]},
        },
        "required": ["pair"],
    },
)
def pair(args: dict[str, Any]) -> str:
    """Tuples (prefixItems), closed and open."""
    return _echo(args)


@tool(
    name="lookup",
    input_schema={
        "type": "object",
        "oneOf": [
            {
                "properties": {"id": {"type": "integer", "description": "The record id."}},
                "required": ["id"],
                "additionalProperties": False,
            },
            {
                "properties": {"name": {"type": "string"}, "exact": {"type": "boolean"}},
                "required": ["name"],
                "additionalProperties": False,
            },
        ],
    },
)
def lookup(args: dict[str, Any]) -> str:
    """Find a record by id or by name."""
    return _echo(args)


@tool(
    name="find",
    input_schema={
        "type": "object",
        "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
        "anyOf": [{"required": ["id"]}, {"required": ["name"]}],
    },
)
def find(args: dict[str, Any]) -> str:
    """Find by id, by name, or both (alternatives that only name required fields)."""
    return _echo(args)


class ById(BaseModel):
    kind: Literal["id"]
    id: int


class ByName(BaseModel):
    kind: Literal["name"]
    name: str
    tags: list[str] = []


# pydantic's tagged union: a root oneOf of $refs, with an OpenAPI discriminator.
TAGGED = TypeAdapter(Annotated[ById | ByName, Field(discriminator="kind")]).json_schema()


@tool(name="query", input_schema={"type": "object", **TAGGED})
def query(args: dict[str, Any]) -> str:
    """Query by id or by name (a tagged union at the root)."""
    return _echo(args)


@tool(
    name="mode",
    input_schema={
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["", "fast", "safe"]},
            "level": {"enum": ["", 1, 2]},
        },
        "required": ["mode"],
    },
)
def mode(args: dict[str, Any]) -> str:
    """An enum whose empty member means "the default"."""
    return _echo(args)


@tool
def mute() -> ToolResult:
    """Fail without a message (an error result with no content, as other MCP servers send)."""
    return ToolResult([], is_error=True)


@tool
def blank() -> ToolResult:
    """Fail with only white space to say."""
    return ToolResult(" \n", is_error=True)

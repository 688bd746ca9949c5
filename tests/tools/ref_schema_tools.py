"""Tools whose input schemas use ``$defs``/``$ref`` (tests/host/schema/test_e2e_ref_schemas.py).

A single pydantic-model parameter makes the model's schema the input schema: for a
recursive model pydantic writes its root as a ``$ref`` into ``$defs``.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from toolwire.host import tool


class Node(BaseModel):
    """A tree node."""

    name: str
    children: list[Node] = []


class Point(BaseModel):
    x: int
    y: int


class Segment(BaseModel):
    """Two points (a nested model used twice: its schema lives in ``$defs``)."""

    start: Point
    end: Point
    label: str = ""


def _count(node: Node) -> int:
    return 1 + sum(_count(c) for c in node.children)


def _names(node: Node) -> list[str]:
    return [node.name, *(n for c in node.children for n in _names(c))]


@tool
def tree(node: Node) -> str:
    """Count the nodes of a tree and list their names (the arguments are the root node)."""
    return f"{_count(node)} {','.join(_names(node))}"


@tool
def segment(seg: Segment) -> str:
    """Describe a segment (the arguments are the segment)."""
    return f"{seg.label}:{seg.start.x},{seg.start.y}-{seg.end.x},{seg.end.y}"


@tool
def forest(node: Node, prefix: str) -> str:
    """Count the nodes of a tree, given as one of two parameters."""
    return f"{prefix}{_count(node)}"


_DEFS: dict[str, Any] = {
    "Item": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "qty": {"type": "integer", "minimum": 0},
            "parts": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
        },
        "required": ["name"],
    }
}


@tool(input_schema={"$ref": "#/$defs/Item", "$defs": _DEFS})
def item(args: dict[str, Any]) -> str:
    """Echo the arguments as the handler receives them (a raw schema whose root is a $ref)."""
    return json.dumps(args, sort_keys=True)


@tool(
    input_schema={
        "type": "object",
        "properties": {"note": {"type": "string"}},
        "allOf": [{"$ref": "#/$defs/Item"}],
        "$defs": _DEFS,
    }
)
def noted_item(args: dict[str, Any]) -> str:
    """Echo the arguments as the handler receives them (fields declared through allOf)."""
    return json.dumps(args, sort_keys=True)

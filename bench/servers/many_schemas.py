"""2,000 tool definitions with raw JSON Schemas of 25 properties each, the same for every
server of the large-tool-set benchmark (bench/run.py "2,000 tools")."""

from __future__ import annotations

from typing import Any

COUNT = 2000
"""Tools in the large set."""


def schema(i: int) -> dict[str, Any]:
    """The input schema of tool ``i``: 25 properties of the common kinds, a few required."""
    props: dict[str, Any] = {}
    for j in range(25):
        kind = (i + j) % 6
        name = f"field_{j}_{i % 7}"
        desc = f"Parameter {j} of tool {i}."
        if kind == 0:
            props[name] = {"type": "string", "description": desc, "maxLength": 200 + j}
        elif kind == 1:
            props[name] = {"type": "integer", "description": desc, "minimum": 0, "maximum": 1000}
        elif kind == 2:
            props[name] = {"type": "boolean", "description": desc, "default": False}
        elif kind == 3:
            props[name] = {"type": "string", "enum": ["a", "b", "c", f"v{i}"], "description": desc}
        elif kind == 4:
            props[name] = {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "description": desc,
                "maxItems": 50,
            }
        else:
            props[name] = {
                "type": "object",
                "properties": {"key": {"type": "string"}, "value": {"type": "number"}},
                "required": ["key"],
                "description": desc,
            }
    return {
        "type": "object",
        "properties": props,
        "required": list(props)[:3],
        "additionalProperties": False,
    }


def tools() -> list[tuple[str, str, dict[str, Any]]]:
    """``(name, description, input schema)`` of every tool."""
    return [
        (f"tool_{i:04d}", f"Tool number {i} of the large set.", schema(i)) for i in range(COUNT)
    ]

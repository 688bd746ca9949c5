"""A tool that echoes its arguments as JSON, with parameters of every schema shape
``toolwire call k=v`` must follow (tests/client/test_cli_call_values.py)."""

from __future__ import annotations

import json
from typing import Any

from toolwire.host import tool

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "object"},
        "maybe_int": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "str_or_int": {"type": ["string", "integer"]},
        "mode": {"enum": ["fast", "slow"]},
        "level": {"enum": [1, 2, 3]},
        "ref": {"$ref": "#/$defs/Count"},
        "anything": {},
    },
    "$defs": {"Count": {"type": "integer"}},
}


@tool(input_schema=SCHEMA)
def show(arguments: dict[str, Any]) -> str:
    """Echo the arguments as JSON (sorted keys)."""
    return json.dumps(arguments, sort_keys=True)

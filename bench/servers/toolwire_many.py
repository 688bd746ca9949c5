"""2,000 raw-JSON-Schema tools for toolwire (see many_schemas.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from toolwire.host import tool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from many_schemas import tools


def _handler(name: str) -> Any:
    def handler(args: dict[str, Any]) -> str:
        return name

    return handler


def register(registry: Any) -> None:
    """Add every tool of the large set."""
    for name, description, schema in tools():
        registry.add(tool(name=name, description=description, input_schema=schema)(_handler(name)))

"""Custom tools for tests/host/tools/test_null_arguments_e2e.py: each writes a file in the root."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel
from toolwire.host import ToolContext, tool

_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "content": {"type": "string"},
        "suffix": {"type": "string", "default": "!"},
    },
    "required": ["path", "content"],
}


@tool(input_schema=_SCHEMA)
def raw_save(args: dict[str, Any], ctx: ToolContext) -> str:
    """Write content + suffix to path (a raw JSON Schema tool)."""
    text = args["content"] + args.get("suffix", "!")
    ctx.env.resolve(args["path"]).write_text(text)
    return text


class SaveArgs(BaseModel):
    path: str
    content: str
    suffix: str = "?"


@tool
def model_save(args: SaveArgs, ctx: ToolContext) -> str:
    """Write content + suffix to path (a pydantic model tool)."""
    text = args.content + args.suffix
    Path(ctx.env.resolve(args.path)).write_text(text)
    return text


@tool
def nullable_note(note: str | None = "default note", repeat: int = 1) -> str:
    """Answer what ``note`` was (``repeat`` times): a null given to this nullable
    parameter stays null."""
    return " ".join([repr(note)] * repeat)

"""A tool that asks the client with the form it is given (tests/host/schema/test_e2e_elicit_schema.py)."""

from __future__ import annotations

from typing import Any

from toolwire.host import ToolContext, tool


@tool
async def ask_form(form: dict[str, Any], ctx: ToolContext) -> str:
    """Elicit with ``form`` as the requested schema; return the answer's action."""
    answer = await ctx.elicit("Fill in the form", form)
    return f"answered {answer.get('action')}"


@tool
async def ask_raw(form: dict[str, Any], ctx: ToolContext) -> str:
    """Ask through the call's channel directly (not ctx.elicit), with ``form``."""
    params = {"mode": "form", "message": "Fill in the form", "requestedSchema": form}
    answer = await ctx.channel.ask("elicitation/create", params, "raw")
    return f"answered {answer.get('action')}"

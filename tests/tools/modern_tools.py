"""Tools the 2026-07-28 tests call besides examples/tools/echo_tools.py and interop_tools.py.

* ``add_tool`` registers a tool while the host runs (a tools list change);
* ``ask_name`` and ``ask_all`` ask the user, the model and for the roots (``ctx.elicit``,
  ``ctx.sample``, ``ctx.list_roots``).
"""

from __future__ import annotations

from typing import Any

from toolwire.host import ToolContext, tool

_registry: Any = None


def register(registry: Any) -> None:
    """Loading hook: keep the registry so ``add_tool`` can change it at run time."""
    global _registry
    _registry = registry


@tool
async def add_tool(name: str) -> str:
    """Register a tool named ``name`` that answers "dynamic".

    Args:
        name: the new tool's name.
    """

    def dynamic() -> str:
        return "dynamic"

    dynamic.__doc__ = "Added at run time."
    _registry.add(tool(name=name)(dynamic))
    return "added"


NAME_FORM = {
    "type": "object",
    "properties": {"name": {"type": "string", "title": "Your name"}},
    "required": ["name"],
}


@tool
async def ask_name(ctx: ToolContext) -> str:
    """Ask the user for a name (elicitation, key "user_name") and greet them."""
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    if answer.get("action") != "accept":
        return f"no name ({answer.get('action')})"
    return f"hello {answer['content']['name']}"


@tool
async def ask_all(runs: str, ctx: ToolContext) -> str:
    """Ask the user, then the model, then for the roots, one question at a time; append a
    line to ``runs`` each time the handler starts (to show the call runs again per round).

    Args:
        runs: path of a file counting the handler's runs.
    """
    with open(runs, "a") as f:
        f.write("run\n")
    name = await ctx.elicit("Name?", NAME_FORM)
    reply = await ctx.sample("Capital of France?", max_tokens=20)
    roots = await ctx.list_roots()
    content = reply.get("content") or {}
    return f"{name['content']['name']} / {content.get('text')} / " + ",".join(
        str(r.get("uri")) for r in roots
    )


@tool
async def ask_together(ctx: ToolContext) -> str:
    """Ask the user, the model and for the roots in one round (``ctx.gather``)."""
    name, reply, roots = await ctx.gather(
        ctx.elicit("Name?", NAME_FORM),
        ctx.sample("Capital of France?", max_tokens=20),
        ctx.list_roots(),
    )
    content = reply.get("content") or {}
    return f"{name['content']['name']} / {content.get('text')} / {len(roots)} roots"


@tool
async def append_note(path: str, line: str, ctx: ToolContext) -> str:
    """Append ``line`` to ``path`` (in the root): a write that must land once.

    Args:
        path: the file, relative to the root.
        line: the line to append.
    """
    with open(ctx.env.resolve(path), "a") as f:
        f.write(line + "\n")
    return "noted"

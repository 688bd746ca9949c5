"""Tools and hooks for the end-to-end tests of the call pipeline (tests/host/calls/test_pipeline_e2e.py).

Side channels: tools write marker files into a directory the test names, and report
their own start/end times (the host's monotonic clock), so a test can see what ran and
when without trusting the host's account of it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel
from toolwire.host import (
    Block,
    ResultPatch,
    ToolContext,
    ToolResult,
    after_tool_call,
    before_tool_call,
    tool,
)


def _mark(side: str, name: str, text: str = "") -> None:
    Path(side, name).write_text(text)


# ---------------------------------------------------------------------------- timing


@tool
async def stamp(label: str, delay: float = 0.3) -> dict[str, Any]:
    """Sleep ``delay`` seconds; return the label with start and end (host monotonic clock)."""
    start = time.monotonic()
    await anyio.sleep(delay)
    return {"label": label, "start": start, "end": time.monotonic()}


@tool(execution_mode="sequential")
async def serial_stamp(label: str, delay: float = 0.2) -> dict[str, Any]:
    """Like stamp, but any batch containing it runs sequentially."""
    start = time.monotonic()
    await anyio.sleep(delay)
    return {"label": label, "start": start, "end": time.monotonic()}


@tool
async def steps(n: int, ctx: ToolContext) -> str:
    """Report progress n times, then finish."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
        await anyio.sleep(0.01)
    return f"{n} steps"


@tool
async def block(name: str, side: str) -> str:
    """Write ``<name>.started``, wait forever; write ``<name>.cancelled`` when interrupted."""
    _mark(side, f"{name}.started")
    try:
        await anyio.sleep_forever()
    finally:
        _mark(side, f"{name}.cancelled")
    return "unreachable"


# ---------------------------------------------------------------------------- arguments


@tool
async def typed(count: int, ratio: float, flag: bool, label: str, tags: list[int]) -> str:
    """Return the Python types and values the handler received, as JSON."""
    received = {"count": count, "ratio": ratio, "flag": flag, "label": label, "tags": tags}
    return json.dumps({k: [type(v).__name__, v] for k, v in received.items()})


class Edit(BaseModel):
    oldText: str
    newText: str


def _legacy_edits(raw: dict[str, Any]) -> dict[str, Any]:
    """Old shape {path, oldText, newText} → {path, edits: [{oldText, newText}]}."""
    if "edits" not in raw and "oldText" in raw:
        raw = dict(raw)
        raw["edits"] = [{"oldText": raw.pop("oldText"), "newText": raw.pop("newText", "")}]
    if raw.get("path") == "explode":
        raise ValueError("cannot prepare this")
    return raw


@tool(prepare_arguments=_legacy_edits)
async def replace(path: str, edits: list[Edit]) -> str:
    """Describe the edits received (prepare_arguments maps the legacy single-edit form)."""
    return f"{path}: " + "; ".join(f"{e.oldText}->{e.newText}" for e in edits)


@tool
async def set_value(value: int) -> str:
    """Return the value it ran with (a before hook changes 1 to 123)."""
    return f"ran with {value!r}"


@tool
async def guarded(word: str) -> str:
    """Return the word (a before hook may block it, replace it, or raise)."""
    return f"word={word}"


# ---------------------------------------------------------------------------- results


@tool
async def finish(label: str = "", fail: bool = False) -> ToolResult:
    """A result asking the agent loop to stop (or an error, with fail)."""
    return ToolResult(f"finished {label}", terminate=True, is_error=fail)


@tool
async def plain(label: str = "") -> str:
    """An ordinary result."""
    return f"plain {label}"


@tool
async def patched(text: str) -> ToolResult:
    """A result that after hooks patch (see the hooks below)."""
    return ToolResult(text, details={"original": True})


@tool
async def after_boom() -> str:
    """A tool whose after hook raises."""
    return "fine"


@tool
async def soft_stop(stop: bool) -> str:
    """Plain text; an after hook sets terminate when ``stop``."""
    return f"stop={stop}"


# ---------------------------------------------------------------------------- approval


@tool(annotations={"readOnlyHint": True})
async def look(side: str) -> str:
    """A read-only tool (never needs approval under --approve destructive)."""
    _mark(side, "look.ran")
    return "looked"


@tool
async def touch(name: str, side: str) -> str:
    """Create the marker file ``name`` in ``side`` (a destructive tool)."""
    _mark(side, name)
    return f"touched {name}"


# ---------------------------------------------------------------------------- files


@tool(mutates=("path",))
async def append_line(path: str, line: str, ctx: ToolContext) -> str:
    """Append a line by read-modify-write, yielding in between (safe only via the queue)."""
    real = ctx.env.resolve(path)
    data = real.read_text() if real.exists() else ""
    await anyio.sleep(0.001)
    real.write_text(data + line + "\n")
    return "ok"


@tool(mutates=("paths",))
async def append_to_each(paths: list[str], line: str, ctx: ToolContext) -> str:
    """append_line for each of ``paths`` (a list argument the mutation queue must hold)."""
    for path in paths:
        real = ctx.env.resolve(path)
        data = real.read_text() if real.exists() else ""
        await anyio.sleep(0.001)
        real.write_text(data + line + "\n")
    return "ok"


@tool
async def append_unqueued(path: str, line: str, ctx: ToolContext) -> str:
    """The same read-modify-write without declaring mutates (shows what the queue prevents)."""
    real = ctx.env.resolve(path)
    data = real.read_text() if real.exists() else ""
    await anyio.sleep(0.001)
    real.write_text(data + line + "\n")
    return "ok"


@tool(mutates=("path",))
async def hold_file(path: str, delay: float = 0.3) -> dict[str, Any]:
    """Hold ``path``'s mutation slot for ``delay`` seconds; return start and end times."""
    start = time.monotonic()
    await anyio.sleep(delay)
    return {"path": path, "start": start, "end": time.monotonic()}


# ---------------------------------------------------------------------------- hooks


@before_tool_call(tools=["set_value"])
def bump_one(call: Any, args: dict[str, Any], ctx: ToolContext) -> Any:
    """Change value 1 to 123 in place; replace 2 by an invalid value."""
    if args.get("value") == 1:
        args["value"] = 123
    elif args.get("value") == 2:
        return {"value": "not a number"}
    return None


@before_tool_call(tools=["guarded"])
async def guard(call: Any, args: dict[str, Any], ctx: ToolContext) -> Any:
    """Block "forbidden", raise on "explode", replace "swap"."""
    word = args["word"]
    if word == "forbidden":
        return Block("the word is forbidden here")
    if word == "explode":
        raise RuntimeError("the guard hook exploded")
    if word == "swap":
        return {"word": "swapped"}
    return None


@before_tool_call(tools=["guarded"])
def second_guard(call: Any, args: dict[str, Any], ctx: ToolContext) -> Any:
    """Runs after guard: blocks "forbidden" too (never reached: the first block wins)."""
    if args["word"] in ("forbidden", "late"):
        return Block(f"second guard blocked {args['word']}")
    return None


@after_tool_call(tools=["patched"])
def append_a(call: Any, args: dict[str, Any], result: Any, ctx: ToolContext) -> Any:
    """Append a text block and replace details."""
    return ResultPatch(
        content=[*result.content, {"type": "text", "text": "A"}], details={"by": "append_a"}
    )


@after_tool_call(tools=["patched"])
async def append_b(call: Any, args: dict[str, Any], result: Any, ctx: ToolContext) -> Any:
    """Append another block, and for text "err" mark the result an error, "clear" clears details."""
    patch: dict[str, Any] = {"content": [*result.content, {"type": "text", "text": "B"}]}
    if args["text"] == "err":
        patch["is_error"] = True
    if args["text"] == "clear":
        patch["details"] = None
    return ResultPatch(**patch)


@after_tool_call(tools=["after_boom"])
def explode_after(call: Any, args: dict[str, Any], result: Any, ctx: ToolContext) -> Any:
    """Raise."""
    raise ValueError("after hook blew up")


@after_tool_call(tools=["soft_stop"])
def stop_when_asked(call: Any, args: dict[str, Any], result: Any, ctx: ToolContext) -> Any:
    """Set terminate when the call asked for it."""
    return ResultPatch(terminate=True) if args["stop"] else None

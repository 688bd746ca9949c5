"""Tools for the end-to-end tests of the protocol core (tests/test_e2e_*.py).

Side channels: several tools write marker files into a directory the test names, so
a test can see what happened inside the host (a handler started, was interrupted,
ran its cleanup) without trusting the host's own answers.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

import anyio
from pydantic import BaseModel, Field
from toolwire.host import ToolContext, ToolResult, tool

from toolwire.models import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

print("PRINTED-AT-IMPORT")
sys.stdout.write("SYS-STDOUT-AT-IMPORT\n")
sys.stdout.flush()
os.write(1, b"FD1-AT-IMPORT\n")


def _mark(side: str, name: str, text: str = "") -> None:
    Path(side, name).write_text(text)


# ---------------------------------------------------------------------------- basics


@tool
async def echo(text: str) -> str:
    """Echo text back unchanged.

    Args:
        text: the text to return.
    """
    return text


@tool
def echo_sync(text: str) -> str:
    """Echo text back from a worker thread."""
    return text


@tool
async def stamp(delay: float) -> dict[str, float]:
    """Sleep ``delay`` seconds; return when it started and ended (host monotonic clock)."""
    start = time.monotonic()
    await anyio.sleep(delay)
    return {"start": start, "end": time.monotonic()}


@tool
async def wait_for_file(path: str, side: str) -> dict[str, float]:
    """Start, then wait until ``path`` exists; return start/end times (host clock)."""
    start = time.monotonic()
    _mark(side, "waiting")
    while not Path(path).exists():
        await anyio.sleep(0.005)
    return {"start": start, "end": time.monotonic()}


# ---------------------------------------------------------------------------- cancellation


@tool
async def block(name: str, side: str) -> str:
    """Write ``<name>.started``, then wait forever; write ``<name>.cancelled`` when interrupted."""
    _mark(side, f"{name}.started")
    try:
        await anyio.sleep_forever()
    finally:
        _mark(side, f"{name}.cancelled")
    return "unreachable"


@tool
async def spawn_child(side: str) -> str:
    """Start a detached grandchild ``sleep`` (pid in ``child.pid``), then wait forever."""
    subprocess.run(
        [
            "sh",
            "-c",
            f"sleep 60 & echo $! > {side}/child.pid.tmp; mv {side}/child.pid.tmp {side}/child.pid",
        ],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        check=True,
    )
    _mark(side, "spawned")
    await anyio.sleep_forever()
    return "unreachable"


@tool
async def shielded(side: str) -> str:
    """Refuse cancellation for 60 s (a misbehaving tool the host must not wait for)."""
    _mark(side, "shielded.started")
    with anyio.CancelScope(shield=True):
        await anyio.sleep(60)
    return "done"


# ---------------------------------------------------------------------------- threads

_gate = threading.Event()
_waiting = 0
_waiting_lock = threading.Lock()


@tool
def gate(timeout: float = 30.0) -> int:
    """Block this worker thread until ``open_gate`` is called; return how many were waiting."""
    global _waiting
    with _waiting_lock:
        _waiting += 1
    try:
        _gate.wait(timeout)
    finally:
        with _waiting_lock:
            _waiting -= 1
    return 1


@tool
async def gate_waiting() -> int:
    """How many ``gate`` calls are blocked right now."""
    return _waiting


@tool
async def open_gate() -> str:
    """Release every blocked ``gate`` call."""
    _gate.set()
    return "open"


# ---------------------------------------------------------------------------- progress and logs

_saved: list[ToolContext] = []


@tool
async def progress(n: int, ctx: ToolContext) -> str:
    """Report progress 1..n (plus repeats and a step back, which must be dropped)."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
        await ctx.report_progress(i, n, "repeat")  # not increasing: dropped
        await ctx.report_progress(i - 0.5, n, "back")  # going back: dropped
    _saved.append(ctx)
    return "done"


@tool
async def late_progress() -> str:
    """Report progress on the contexts of earlier, finished ``progress`` calls."""
    for ctx in _saved:
        await ctx.report_progress(10**9, None, "after the response")
    return f"tried {len(_saved)}"


@tool
def sync_progress(n: int, ctx: ToolContext) -> str:
    """Report progress 1..n from a worker thread."""
    for i in range(1, n + 1):
        ctx.report_progress_from_thread(i, n)
    return "done"


@tool
async def log_at(level: str, data: Any, ctx: ToolContext) -> str:
    """Send one log message at ``level``."""
    await ctx.log(level, data)
    return "logged"


# ---------------------------------------------------------------------------- failures


@tool
async def fail(message: str) -> str:
    """Raise ValueError(message)."""
    raise ValueError(message)


@tool
def fail_sync(message: str) -> str:
    """Raise RuntimeError(message) in a worker thread."""
    raise RuntimeError(message)


@tool
async def unserialisable() -> ToolResult:
    """Return details JSON cannot hold: the host must answer -32603, not crash."""
    return ToolResult("x", details={"obj": object()})


@tool
async def deep(levels: int) -> ToolResult:
    """Return details nested ``levels`` arrays deep (orjson encodes 255 at most)."""
    nested: list[Any] = []
    for _ in range(levels):
        nested = [nested]
    return ToolResult("x", details={"deep": nested})


@tool(timeout=2.0)
async def sleepy(seconds: float, side: str) -> str:
    """Sleep (per-tool timeout 2 s: wide enough that a ``seconds: 0`` call on a loaded
    machine finishes well within it); write ``sleepy.cancelled`` when interrupted."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _mark(side, "sleepy.cancelled")
        raise
    return "slept"


@tool
async def sleep_default(seconds: float) -> str:
    """Sleep; only the host's --timeout limits it."""
    await anyio.sleep(seconds)
    return "slept"


@tool(timeout=2.0)
def sleepy_sync(seconds: float) -> str:
    """Sleep in a worker thread (per-tool timeout 2 s)."""
    time.sleep(seconds)
    return "slept"


# ---------------------------------------------------------------------------- stdout hygiene


@tool
def noisy() -> str:
    """Write to stdout four ways: print, sys.stdout, fd 1, and a child process."""
    print("PRINTED-BY-HANDLER")
    sys.stdout.write("SYS-STDOUT-BY-HANDLER\n")
    sys.stdout.flush()
    os.write(1, b"FD1-BY-HANDLER\n")
    subprocess.run(["sh", "-c", "echo CHILD-STDOUT; cat"], check=True)  # stdin: /dev/null
    return "quiet wire"


# ---------------------------------------------------------------------------- returns

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


@tool
async def blocks_typed() -> list[Any]:
    """Return one content block of every kind, as typed objects."""
    return [
        TextContent(text="hello"),
        ImageContent(data=PNG, mime_type="image/png"),
        AudioContent(data="UklGRg==", mime_type="audio/wav"),
        ResourceLink(uri="file:///a.txt", name="a.txt", mime_type="text/plain"),
        EmbeddedResource(resource=TextResourceContents(uri="file:///b.txt", text="bee")),
    ]


@tool
async def blocks_dicts() -> list[dict[str, Any]]:
    """Return one content block of every kind, as plain MCP-shaped dicts."""
    return [
        {"type": "text", "text": "hello"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {
            "type": "resource_link",
            "uri": "file:///a.txt",
            "name": "a.txt",
            "mimeType": "text/plain",
        },
        {"type": "resource", "resource": {"uri": "file:///b.txt", "blob": "YmVl"}},
    ]


@tool
async def bad_block() -> dict[str, Any]:
    """Return a dict claiming to be an image block but lacking its data."""
    return {"type": "image", "mimeType": "image/png"}


@tool
async def with_details(n: int) -> ToolResult:
    """Return text for the model and details for programs."""
    return ToolResult(f"{n} items", details={"items": list(range(n))})


class Weather(BaseModel):
    """Structured weather."""

    city: str
    celsius: float


class Totals(TypedDict):
    count: int
    names: list[str]


@tool
async def weather(city: str) -> Weather:
    """Weather for a city (pydantic return model → outputSchema)."""
    return Weather(city=city, celsius=21.5)


@tool
async def totals(names: list[str]) -> Totals:
    """Count names (TypedDict return → outputSchema)."""
    return {"count": len(names), "names": names}


@tool
async def wrong_totals() -> Totals:
    """Return a value that breaks its own output schema."""
    return {"count": "many", "names": []}  # type: ignore[typeddict-item]


# ---------------------------------------------------------------------------- parameters


class Point(BaseModel):
    x: int
    y: int = 0


class Shape(BaseModel):
    """A shape as one pydantic model."""

    name: str = Field(description="shape name")
    points: list[Point]


@tool
async def shape(spec: Shape) -> str:
    """Describe a shape given as one pydantic model."""
    return f"{spec.name}:{len(spec.points)}:{type(spec).__name__}"


@tool(
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "limit": {"type": "integer", "minimum": 1, "maximum": 10},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["query", "limit"],
        "additionalProperties": False,
    }
)
async def search(args: dict[str, Any]) -> str:
    """Search with a raw JSON Schema."""
    return f"{args['query']}x{args['limit']}"


@tool(
    name="renamed.tool-1",
    description="An overridden description.",
    title="Pretty Title",
    annotations={"readOnlyHint": True, "openWorldHint": False},
)
async def original_name(
    count: Annotated[int, "how many, from Annotated"],
    label: Annotated[str, Field(description="a label, from Field", max_length=5)] = "x",
    flag: bool = False,
) -> str:
    """Ignored docstring.

    Args:
        count: overridden by Annotated.
        flag: a flag, from the docstring.
    """
    return f"{count}{label}{flag}"


@tool
async def exits(code: int) -> str:
    """Call sys.exit(code): the call fails, the host stays."""
    sys.exit(code)


@tool
def exits_sync(code: int) -> str:
    """Call sys.exit(code) in a worker thread."""
    sys.exit(code)


@tool
def log_sync(level: str, data: str, ctx: ToolContext) -> str:
    """Log from a worker thread."""
    ctx.log_from_thread(level, data)
    return "logged"


@tool
async def whoami(ctx: ToolContext) -> dict[str, Any]:
    """What the context says about this call and where it runs."""
    return {
        "call_id": ctx.call_id,
        "tool_name": ctx.tool_name,
        "root": str(ctx.env.root),
        "cwd": str(ctx.env.cwd),
    }


_registry: Any = None


def register(registry: Any) -> None:
    """Loading hook: keep the registry so ``add_tool`` can change it at runtime."""
    global _registry
    _registry = registry


@tool
async def add_tool(name: str) -> str:
    """Register a new tool while the host runs."""

    def dynamic() -> str:
        return "dynamic"

    dynamic.__doc__ = "Added at runtime."
    _registry.add(tool(name=name)(dynamic))
    return "added"


@tool
async def stray_cancel() -> str:
    """Raise asyncio.CancelledError although nothing cancelled the call."""
    raise asyncio.CancelledError()


@tool
async def awaits_cancelled_task() -> str:
    """Await a task someone else cancelled."""
    task = asyncio.ensure_future(asyncio.sleep(10))
    await asyncio.sleep(0)
    task.cancel()
    await task
    return "unreachable"


@tool
def stray_cancel_sync() -> str:
    """Raise asyncio.CancelledError in a worker thread."""
    raise asyncio.CancelledError()


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("cannot print me")


@tool
async def fail_unprintable() -> str:
    """Raise an exception whose message cannot be computed."""
    raise _Unprintable()

"""Tools for the end-to-end tests of isolated workers (tests/test_workers_*.py).

Served with ``--no-builtins --no-entry-points --tools tests/tools/worker_tools.py``,
once in worker processes (``--isolation process``) and once in the host itself
(``--isolation none``), the control. The tools misbehave in the ways workers exist
for: they crash the interpreter, never give the event loop back, burn CPU; and they
use every part of the tool context that must look the same through a worker.

Signals the tests read come over the wire only (progress notifications mark "the
handler is running now"; values recorded at import time mark "which process imported
this module"), so they hold whether or not the worker runs in a sandbox.
"""

from __future__ import annotations

import ctypes
import os
import time
import uuid
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
    run_in_env,
    tool,
)

IMPORT_PID = os.getpid()
"""The process that imported this module (the host in none mode, a worker otherwise)."""

WORKER_ID = uuid.uuid4().hex
"""Unique per import: tells workers apart even when pid namespaces make pids collide."""


def _record_import() -> None:
    """Append this process's pid to the file named by ``WORKER_TOOLS_IMPORT_LOG``, if set.

    A sandboxed worker may not see the variable (scrubbed environment) or be able to
    write the file; only the host's own imports matter to the test reading it.
    """
    log = os.environ.get("WORKER_TOOLS_IMPORT_LOG")
    if not log:
        return
    try:
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
    except OSError:
        pass


_record_import()

_counter = 0


# ---------------------------------------------------------------------------- basics


@tool
async def hello(name: str = "world") -> str:
    """Greet; the call that must work again after a worker died or was replaced."""
    return f"hello {name}"


@tool
async def import_info() -> dict[str, Any]:
    """Which process imported this module, and this process's command line."""
    cmdline = Path("/proc/self/cmdline").read_bytes().split(b"\0")
    return {
        "import_pid": IMPORT_PID,
        "pid": os.getpid(),
        "worker_id": WORKER_ID,
        "cmdline": [part.decode(errors="replace") for part in cmdline if part],
    }


@tool
async def hold(seconds: float, ctx: ToolContext) -> str:
    """Report progress 1 (the call is running), then sleep ``seconds``."""
    await ctx.report_progress(1, None, "holding")
    await anyio.sleep(seconds)
    return "held"


# ---------------------------------------------------------------------------- crashes


@tool
async def segfault(ctx: ToolContext) -> str:
    """Read address 0: the process dies of SIGSEGV."""
    await ctx.report_progress(1, None, "about to crash")
    ctypes.string_at(0)
    return "unreachable"


@tool
def hard_exit(code: int) -> str:
    """End the process at once with ``os._exit(code)`` (no cleanup, no exception)."""
    os._exit(code)


# ---------------------------------------------------------------------------- stuck handlers


@tool(timeout=1.0)
async def spin_async(ctx: ToolContext) -> str:
    """Report progress 1, then loop forever without awaiting (timeout 1 s)."""
    await ctx.report_progress(1, None, "spinning")
    while True:
        pass


@tool(timeout=1.0)
def spin_sync(ctx: ToolContext) -> str:
    """Report progress 1, then loop forever in a thread (timeout 1 s)."""
    ctx.report_progress_from_thread(1, None, "spinning")
    while True:
        pass


@tool
async def spin_forever(ctx: ToolContext) -> str:
    """Report progress 1, then loop forever without awaiting; only the host's --timeout applies."""
    await ctx.report_progress(1, None, "spinning")
    while True:
        pass


# ---------------------------------------------------------------------------- cores and state


@tool
def burn(cpu_seconds: float, meet: str = "") -> dict[str, Any]:
    """Spend ``cpu_seconds`` of this thread's CPU time in a pure-Python loop.

    CPU time, not wall time: two calls sharing one interpreter (the GIL) take twice as
    long on the wall clock as two calls in two processes on two cores. With ``meet`` (a
    directory), the call first creates a file named after its worker there and, after
    its CPU time is spent, keeps burning until a file of another worker appears (60 s at
    most): the calls are then known to have run at the same time, however slow the
    machine. Returns the worker id, the wall seconds, and ``met``: whether another
    worker's file was seen.
    """
    start = time.monotonic()
    if meet:
        (Path(meet) / WORKER_ID).touch()
    end_cpu = time.thread_time() + cpu_seconds
    give_up = start + 60
    n = 0
    met = False
    while True:
        for _ in range(1000):
            n += 1
        if time.thread_time() < end_cpu:
            continue
        if meet and not met:
            met = any(p.name != WORKER_ID for p in Path(meet).iterdir())
            if not met and time.monotonic() < give_up:
                continue
        break
    return {"worker_id": WORKER_ID, "wall": time.monotonic() - start, "loops": n, "met": met}


@tool
def count(hold_seconds: float = 0.0) -> dict[str, Any]:
    """Increment this module's global counter; keep the call busy for ``hold_seconds``."""
    global _counter
    _counter += 1
    value = _counter
    time.sleep(hold_seconds)
    return {"worker_id": WORKER_ID, "count": value}


# ---------------------------------------------------------------------------- pass-through


class Reading(BaseModel):
    """A structured result (its model gives the tool an outputSchema)."""

    sensor: str
    value: float
    tags: list[str]


@tool
async def reading(sensor: str) -> Reading:
    """A structured reading for ``sensor``."""
    return Reading(sensor=sensor, value=4.25, tags=["a", "b"])


@tool
async def steps(n: int, ctx: ToolContext) -> str:
    """Report progress 1..n with messages."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i} of {n}")
    return f"{n} steps"


@tool
def steps_sync(n: int, ctx: ToolContext) -> str:
    """Report progress 1..n from a thread."""
    for i in range(1, n + 1):
        ctx.report_progress_from_thread(i, n)
    return f"{n} steps"


@tool
async def chatter(ctx: ToolContext) -> str:
    """Log at three levels (debug is below the default threshold), with structured data."""
    await ctx.log("debug", "not shown by default")
    await ctx.log("warning", "careful")
    await ctx.log("error", {"code": 7, "why": ["x", "y"]}, logger="custom.logger")
    return "chatted"


@tool
def chatter_sync(ctx: ToolContext) -> str:
    """Log from a thread."""
    ctx.log_from_thread("warning", "from a thread")
    return "chatted"


@tool
async def detailed(n: int) -> ToolResult:
    """Text for the model, details for programs."""
    return ToolResult(f"{n} things", details={"things": list(range(n)), "nested": {"ok": True}})


@tool
async def failing(message: str) -> str:
    """Raise ValueError(message)."""
    raise ValueError(message)


@tool
async def where(path: str, ctx: ToolContext) -> dict[str, str]:
    """The root, the cwd and ``path`` resolved inside the root."""
    return {
        "root": str(ctx.env.root),
        "cwd": str(ctx.env.cwd),
        "resolved": str(ctx.env.resolve(path)),
    }


@tool
async def write_in_root(name: str, text: str, ctx: ToolContext) -> str:
    """Write ``text`` to ``name`` inside the root; return the path written."""
    target = ctx.env.resolve(name)
    target.write_text(text)
    return str(target)


@tool
async def run_cmd(script: str, ctx: ToolContext) -> dict[str, Any]:
    """Run ``sh -c script`` with run_in_env; return its output and exit status."""
    chunks: list[str] = []
    result = await run_in_env(ctx.env, ["sh", "-c", script], timeout=30, on_output=chunks.append)
    return {"output": "".join(chunks), "exit_code": result.exit_code, "signal": result.signal}


@tool
async def guarded(word: str) -> str:
    """Return the word (the before hook below may block or rewrite it)."""
    return f"word={word}"


@tool
async def patched(text: str) -> ToolResult:
    """A result the after hook below patches."""
    return ToolResult(text, details={"original": True})


@before_tool_call(tools=["guarded"])
def guard(call: Any, args: dict[str, Any], ctx: ToolContext) -> Any:
    """Block "forbidden"; rewrite "swap" to "swapped"."""
    if args["word"] == "forbidden":
        return Block("the word is forbidden here")
    if args["word"] == "swap":
        return {"word": "swapped"}
    return None


@after_tool_call(tools=["patched"])
async def patch_result(call: Any, args: dict[str, Any], result: Any, ctx: ToolContext) -> Any:
    """Append a text block and replace the details."""
    return ResultPatch(
        content=[*result.content, {"type": "text", "text": "patched"}],
        details={"by": "patch_result", "saw": args["text"]},
    )

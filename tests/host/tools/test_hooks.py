"""Hooks, approval policy and the mutation queue as Python API (in-process: pure logic)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolwire.host import (
    NOT_GIVEN,
    ApprovalPolicy,
    Block,
    ExecEnv,
    Executor,
    IncomingCall,
    Pipeline,
    Registry,
    ResultPatch,
    ToolContext,
    ToolResult,
    before_tool_call,
    tool,
)
from toolwire.host.calls.mutation import MutationQueue, mutation_keys
from toolwire.host.tools import loading

from toolwire.extensions import ApprovalDecision

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@tool
async def shout(text: str, n: int = 1) -> str:
    """Upper-case text."""
    return text.upper() * n


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(1, "shout", ExecEnv.at(tmp_path))


async def _run(registry: Registry, tmp_path: Path, arguments: dict[str, Any]) -> dict[str, Any]:
    t = registry.get("shout")
    assert t is not None
    pipeline = Pipeline(Executor(), registry.hooks)
    return await pipeline.run(t, IncomingCall(1, "shout", arguments), _ctx(tmp_path))


async def test_hooks_registered_in_python_see_raw_call_and_checked_args(tmp_path: Path) -> None:
    r = Registry()
    r.add(shout)
    seen: list[Any] = []

    def before(call: IncomingCall, args: dict[str, Any], ctx: ToolContext) -> Any:
        seen.append(("before", dict(call.arguments), dict(args), ctx.tool_name))
        args["n"] = 2  # in place: validated again, then used

    async def after(call: IncomingCall, args: dict[str, Any], result: ToolResult, ctx: Any) -> Any:
        seen.append(("after", args, result.content[0]["text"]))
        return None

    r.add_hook(before, "before")
    r.add_hook(after, "after")
    r.add_hook(lambda call, args, ctx: Block("not for you"), "before", tools=["other"])
    out = await _run(r, tmp_path, {"text": "hi", "n": "1", "extra": True})
    assert out == {"content": [{"type": "text", "text": "HIHI"}]}
    assert seen == [
        ("before", {"text": "hi", "n": "1", "extra": True}, {"text": "hi", "n": 1}, "shout"),
        ("after", {"text": "hi", "n": 2}, "HIHI"),
    ]
    with pytest.raises(ValueError, match="before or after"):
        r.add_hook(lambda *a: None)


async def test_first_block_wins_and_a_raising_hook_is_an_error_result(tmp_path: Path) -> None:
    r = Registry()
    r.add(shout)
    calls: list[str] = []

    @before_tool_call
    def first(call: IncomingCall, args: dict[str, Any], ctx: Any) -> Any:
        calls.append("first")
        return Block("first says no") if args["text"] == "no" else None

    @before_tool_call
    def second(call: IncomingCall, args: dict[str, Any], ctx: Any) -> Any:
        calls.append("second")
        if args["text"] == "boom":
            raise RuntimeError("kaput")
        return Block() if args["text"] == "no" else None

    r.add_hook(first)
    r.add_hook(second)
    out = await _run(r, tmp_path, {"text": "no"})
    assert out == {"content": [{"type": "text", "text": "first says no"}], "isError": True}
    assert calls == ["first"]
    out = await _run(r, tmp_path, {"text": "boom"})
    assert out["isError"] is True
    assert out["content"][0]["text"] == 'before_tool_call hook "' + (
        'test_first_block_wins_and_a_raising_hook_is_an_error_result.<locals>.second" failed: kaput'
    )
    assert (await _run(r, tmp_path, {"text": "ok"}))["content"][0]["text"] == "OK"


def test_result_patches_replace_fields_one_by_one_and_none_clears() -> None:
    base = ToolResult.from_wire(
        {
            "content": [{"type": "text", "text": "x"}],
            "isError": True,
            "structuredContent": {"a": 1},
            "_meta": {"toolwire/details": {"d": 1}, "toolwire/terminate": True, "other": 2},
        }
    )
    assert (base.details, base.is_error, base.terminate) == ({"d": 1}, True, True)
    kept = ResultPatch().apply(base)
    assert kept.to_wire() == base.to_wire()
    patched = ResultPatch(content="y", is_error=False).apply(base)
    assert patched.to_wire() == {
        "content": [{"type": "text", "text": "y"}],
        "structuredContent": {"a": 1},
        "_meta": {"other": 2, "toolwire/details": {"d": 1}, "toolwire/terminate": True},
    }
    cleared = ResultPatch(content=None, details=None, terminate=None).apply(base)
    assert cleared.to_wire() == {
        "content": [],
        "structuredContent": {"a": 1},
        "isError": True,
        "_meta": {"other": 2},
    }
    assert NOT_GIVEN is not None and not NOT_GIVEN
    with pytest.raises(TypeError):
        ResultPatch(content=[object()]).apply(base)


def test_tools_modules_register_decorated_hooks(tmp_path: Path) -> None:
    (tmp_path / "hooked_tools.py").write_text(
        textwrap.dedent(
            '''
            from toolwire.host import tool, before_tool_call, after_tool_call

            @tool
            def t() -> str:
                """T."""
                return ""

            @before_tool_call(tools=["t"])
            def b(call, args, ctx):
                return None

            @after_tool_call
            async def a(call, args, result, ctx):
                return None
            '''
        )
    )
    r = Registry()
    assert loading.load_tools(r, str(tmp_path / "hooked_tools.py")) == 1
    assert [(h.kind, h.tools) for h in r.hooks.before] == [("before", frozenset({"t"}))]
    assert [(h.kind, h.tools) for h in r.hooks.after] == [("after", None)]
    assert r.hooks.before_for("t") and not r.hooks.before_for("u")


def test_approval_policy() -> None:
    @tool(annotations={"readOnlyHint": True})
    def ro() -> str:
        """Read-only."""
        return ""

    @tool(annotations={"readOnlyHint": False})
    def rw() -> str:
        """Writes."""
        return ""

    @tool
    def plain() -> str:
        """No annotations."""
        return ""

    r = Registry()
    tools = [r.add(f) for f in (ro, rw, plain)]

    def marked(items: list[str]) -> list[str]:
        policy = ApprovalPolicy.parse(items)
        return [t.name for t in tools if policy.needs_approval(t)]

    assert marked([]) == [] and not ApprovalPolicy.parse([]).active
    assert marked(["destructive"]) == ["rw", "plain"]
    assert marked(["all"]) == ["ro", "rw", "plain"]
    assert marked(["ro, plain"]) == ["ro", "plain"]
    assert marked(["ro", "destructive"]) == ["ro", "rw", "plain"]
    assert ApprovalDecision.from_wire({"decision": "allow"}).allowed
    with pytest.raises(ValueError):
        ApprovalDecision.from_wire({"decision": "deny", "reason": 3})
    with pytest.raises(ValueError):
        ApprovalDecision.from_wire(None)


async def test_mutation_queue_is_fifo_per_key_and_forgets_idle_keys(tmp_path: Path) -> None:
    q = MutationQueue()
    order: list[str] = []

    async def worker(name: str, keys: list[str]) -> None:
        async with q.hold(keys):
            order.append(f"{name}+")
            await anyio.sleep(0.01)
            order.append(f"{name}-")

    async with anyio.create_task_group() as tg:
        tg.start_soon(worker, "a", ["/f"])
        await anyio.sleep(0)
        tg.start_soon(worker, "b", ["/f", "/g"])
        await anyio.sleep(0)
        tg.start_soon(worker, "c", ["/g", "/f"])
    assert order == ["a+", "a-", "b+", "b-", "c+", "c-"]
    assert len(q) == 0
    # A call waiting for its first path is not overtaken on its second: e arrived
    # before f, so f (which wants only /y, free until e gets it) waits for e.
    order.clear()
    async with anyio.create_task_group() as tg:
        tg.start_soon(worker, "d", ["/x"])
        await anyio.sleep(0)
        tg.start_soon(worker, "e", ["/x", "/y"])
        await anyio.sleep(0)
        tg.start_soon(worker, "f", ["/y"])
    assert order == ["d+", "d-", "e+", "e-", "f+", "f-"]
    assert len(q) == 0
    # A call cancelled while it waits leaves every queue it stood in.
    order.clear()
    async with anyio.create_task_group() as tg:
        tg.start_soon(worker, "g", ["/x"])
        await anyio.sleep(0)
        with anyio.move_on_after(0.001):
            async with q.hold(["/x", "/y"]):
                order.append("never")
        tg.start_soon(worker, "h", ["/y", "/x"])
    assert order == ["g+", "g-", "h+", "h-"]
    assert len(q) == 0
    env = ExecEnv.at(tmp_path)
    (tmp_path / "real").write_text("")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    keys = mutation_keys(("p", "q", "r"), {"p": "link", "q": ["real", 5], "r": "/etc/passwd"}, env)
    assert keys == [str(tmp_path.resolve() / "real")] * 2

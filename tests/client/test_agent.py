"""The agent loop (toolwire.client.agent) against the real host, through both call paths.

"batch" sends each assistant message's calls as one ``tools/callBatch`` (failing if
the host stops serving it); "fallback" makes the client run them as concurrent ``tools/call``
requests, as it does with any MCP server that has no ``tools/callBatch``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolwire.client import Client
from toolwire.client.agent import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    MessageEnd,
    MessageUpdate,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
    run_agent,
)
from toolwire.client.conversation import (
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from toolwire.client.providers import ModelRequest, ScriptedProvider

from tests.agent_support import agent_host, require_call_batch, spawn_agent_host

pytestmark = pytest.mark.anyio

PATHS = ["batch", "fallback"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def host(tmp_path: Path, path: str) -> AsyncIterator[Client]:
    if path == "batch":
        require_call_batch()
    async with agent_host(tmp_path, use_call_batch=path == "batch") as c:
        yield c
        # None: the test sent no batch at all.
        assert c.batch_supported is (None if path == "batch" else False) or (
            c.batch_supported is (path == "batch")
        )


def calls(
    *items: tuple[str, str, dict[str, Any]], stop: str = "toolUse", text: str = ""
) -> AssistantMessage:
    return AssistantMessage(text, [ToolCall(i, n, a) for i, n, a in items], stop)  # type: ignore[arg-type]


def user() -> list[UserMessage]:
    return [UserMessage("do the thing")]


# --------------------------------------------------------------------------- stopping rules


@pytest.mark.parametrize("path", PATHS)
async def test_length_truncated_message_runs_no_call_and_the_model_is_asked_again(
    tmp_path: Path, path: str
) -> None:
    marker = tmp_path / "ran.txt"
    provider = ScriptedProvider(
        [
            calls(
                ("c1", "mark", {"path": str(marker)}), ("c2", "say", {"text": "x"}), stop="length"
            ),
            AssistantMessage("ok"),
        ]
    )
    async with host(tmp_path, path) as c:
        run = run_agent(provider, c, user())
        await run.events()
    assert not marker.exists()
    assert provider.calls == 2
    second = provider.requests[1]
    assert second.roles == ["user", "assistant", "toolResult", "toolResult"]
    results = [m for m in second.messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["c1", "c2"]
    for r, name in zip(results, ["mark", "say"], strict=True):
        assert r.is_error
        assert f'"{name}"' in r.text and "length" in r.text
    assert run.end_reason == "stop"


@pytest.mark.parametrize("path", PATHS)
async def test_when_every_result_terminates_the_model_is_not_asked_again(
    tmp_path: Path, path: str
) -> None:
    provider = ScriptedProvider(
        [calls(("t1", "finish", {"summary": "all done"})), AssistantMessage("never")]
    )
    async with host(tmp_path, path) as c:
        run = run_agent(provider, c, user())
        await run.events()
    assert provider.calls == 1
    assert [m.role for m in run.messages] == ["user", "assistant", "toolResult"]
    assert run.end_reason == "terminate"
    last = run.messages[-1]
    assert isinstance(last, ToolResultMessage) and last.terminate and last.text == "all done"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    "second",
    [
        ("finish", {"summary": "not yet", "terminate": False}),
        ("fail", {"message": "broken"}),
        ("say", {"text": "plain"}),
    ],
    ids=["no-terminate", "error-result", "plain-result"],
)
async def test_one_of_two_terminating_keeps_the_loop_going(
    tmp_path: Path, path: str, second: tuple[str, dict[str, Any]]
) -> None:
    provider = ScriptedProvider(
        [
            calls(("a", "finish", {"summary": "stop please"}), ("b", *second)),
            AssistantMessage("final"),
        ]
    )
    async with host(tmp_path, path) as c:
        run = run_agent(provider, c, user())
        await run.events()
    assert provider.calls == 2
    assert run.end_reason == "stop"
    assert [m.role for m in run.messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]


@pytest.mark.parametrize("path", PATHS)
async def test_two_terminating_results_end_the_loop(tmp_path: Path, path: str) -> None:
    provider = ScriptedProvider(
        [
            calls(("a", "finish", {"summary": "one"}), ("b", "finish", {"summary": "two"})),
            AssistantMessage("never"),
        ]
    )
    async with host(tmp_path, path) as c:
        run = run_agent(provider, c, user())
        await run.events()
    assert provider.calls == 1 and run.end_reason == "terminate"


@pytest.mark.parametrize("path", PATHS)
async def test_turn_limit(tmp_path: Path, path: str) -> None:
    provider = ScriptedProvider([calls((f"c{i}", "say", {"text": str(i)})) for i in range(5)])
    async with host(tmp_path, path) as c:
        run = run_agent(provider, c, user(), max_turns=2)
        events = await run.events()
    assert provider.calls == 2
    assert run.end_reason == "max_turns"
    assert [m.role for m in run.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
        "toolResult",
    ]
    assert isinstance(events[-1], AgentEnd) and events[-1].reason == "max_turns"
    assert len(events[-1].messages) == 4


def test_max_turns_must_be_positive() -> None:
    with pytest.raises(ValueError):
        run_agent(ScriptedProvider([]), None, [], max_turns=0)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", PATHS)
async def test_no_tool_calls_ends_at_once(tmp_path: Path, path: str) -> None:
    provider = ScriptedProvider([AssistantMessage("just text")])
    async with host(tmp_path, path) as c:
        run = run_agent(provider, c, user())
        await run.events()
    assert provider.calls == 1 and run.end_reason == "stop"
    assert [m.role for m in run.messages] == ["user", "assistant"]


@pytest.mark.parametrize("stop", ["error", "aborted"])
async def test_an_errored_message_runs_none_of_its_calls(tmp_path: Path, stop: str) -> None:
    marker = tmp_path / "ran.txt"
    provider = ScriptedProvider(
        [calls(("c1", "mark", {"path": str(marker)}), stop=stop), AssistantMessage("never")]
    )
    async with agent_host(tmp_path) as c:
        run = run_agent(provider, c, user())
        await run.events()
    assert not marker.exists()
    assert provider.calls == 1
    assert run.end_reason == stop
    assert [m.role for m in run.messages] == ["user", "assistant"]


async def test_a_provider_that_raises_ends_the_run_with_an_error_message(tmp_path: Path) -> None:
    def boom(request: ModelRequest) -> AssistantMessage:
        raise ConnectionError("model unreachable")

    async with agent_host(tmp_path) as c:
        run = run_agent(ScriptedProvider([boom]), c, user())
        await run.events()
    assert run.end_reason == "error"
    last = run.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "error"
    assert last.error == "ConnectionError: model unreachable"


# --------------------------------------------------------------------------- calls and results


@pytest.mark.parametrize("path", PATHS)
async def test_results_come_in_source_order_paired_by_id_while_calls_overlap(
    tmp_path: Path, path: str
) -> None:
    """The first call waits for a file the test writes only once the second call has
    ended: they must overlap, and the ends come in completion order (not source order)."""
    door, mark_file = tmp_path / "door", tmp_path / "marked"
    provider = ScriptedProvider(
        [
            calls(
                ("call_slow", "gate", {"path": str(door)}),
                ("call_fast", "mark", {"path": str(mark_file)}),
            ),
            AssistantMessage("done"),
        ]
    )
    events: list[AgentEvent] = []
    async with host(tmp_path, path) as c, run_agent(provider, c, user()) as run:
        async for event in run:
            events.append(event)
            if isinstance(event, ToolExecutionEnd) and event.call_id == "call_fast":
                door.write_text("open")
    results = [m for m in run.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.tool_name, r.text) for r in results] == [
        ("call_slow", "gate", "opened"),
        ("call_fast", "mark", f"marked {mark_file}"),
    ]
    ends = [e.call_id for e in events if isinstance(e, ToolExecutionEnd)]
    assert ends == ["call_fast", "call_slow"]  # completion order


@pytest.mark.parametrize("path", PATHS)
async def test_calls_with_unusable_arguments_do_not_run(tmp_path: Path, path: str) -> None:
    m1, m2 = (tmp_path / f"m{i}" for i in range(2))
    message = AssistantMessage(
        "",
        [
            ToolCall(
                "a",
                "mark",
                {"path": str(m1)},
                invalid_arguments="the arguments are not valid JSON (x)",
            ),
            ToolCall("b", "mark", {"path": str(m2)}),
            ToolCall("c", "nope", {}),
        ],
        "toolUse",
    )
    provider = ScriptedProvider([message, AssistantMessage("done")])
    async with host(tmp_path, path) as c:
        run = run_agent(provider, c, user())
        events = await run.events()
    assert (m1.exists(), m2.exists()) == (False, True)
    results = [m for m in run.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.is_error) for r in results] == [
        ("a", True),
        ("b", False),
        ("c", True),
    ]
    assert "not valid JSON" in results[0].text
    assert "nope" in results[2].text
    starts = [e.call_id for e in events if isinstance(e, ToolExecutionStart)]
    ends = [e.call_id for e in events if isinstance(e, ToolExecutionEnd)]
    assert sorted(starts) == sorted(ends) == ["a", "b", "c"]


@pytest.mark.parametrize("path", PATHS)
async def test_repeated_and_empty_call_ids_all_run_and_results_pair_by_position(
    tmp_path: Path, path: str
) -> None:
    """A custom provider (no adapter deduplicating its ids) sends what llama.cpp and
    Ollama send: ``call_0`` twice, and calls with no id. The first ``call_0`` waits for a
    file only the second writes, so they overlap and finish in reverse order."""
    door = tmp_path / "door"
    marker = tmp_path / "marker"
    message = calls(
        ("call_0", "gate", {"path": str(door), "seconds": 30}),
        ("call_0", "mark", {"path": str(door)}),
        ("", "mark", {"path": str(marker), "text": "empty id"}),
        ("", "say", {"text": "four"}),
    )
    provider = ScriptedProvider([message, AssistantMessage("done")])
    async with host(tmp_path, path) as c:
        run = run_agent(provider, c, user())
        events = await run.events()
    assert run.end_reason == "stop"
    assert marker.read_text() == "empty id"
    results = [m for m in run.new_messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.tool_name, r.is_error, r.text) for r in results] == [
        ("call_0", "gate", False, "opened"),
        ("call_0", "mark", False, f"marked {door}"),
        ("", "mark", False, f"marked {marker}"),
        ("", "say", False, "four"),
    ]
    # The provider gets back its own message and ids, each result at its call's position.
    sent_back = provider.requests[1].messages
    assert sent_back[1] is message
    assert [(m.tool_call_id, m.text) for m in sent_back[2:]] == [
        (r.tool_call_id, r.text) for r in results
    ]
    # Every execution has its own id in the events: one start and one end each.
    starts = [e.call_id for e in events if isinstance(e, ToolExecutionStart)]
    ends = [e.call_id for e in events if isinstance(e, ToolExecutionEnd)]
    assert len(set(starts)) == 4 and all(starts) and sorted(starts) == sorted(ends)
    by_id = {e.call_id: e.name for e in events if isinstance(e, ToolExecutionStart)}
    assert sorted(by_id.values()) == ["gate", "mark", "mark", "say"]
    assert by_id["call_0"] == "gate"  # the first call keeps the provider's id


@pytest.mark.parametrize("path", PATHS)
async def test_event_order(tmp_path: Path, path: str) -> None:
    provider = ScriptedProvider(
        [
            calls(("p", "steps", {"n": 3}), ("s", "say", {"text": "hi"}), text="working"),
            AssistantMessage("finished"),
        ]
    )
    async with host(tmp_path, path) as c:
        run = run_agent(provider, c, user())
        events = await run.events()

    def kind(e: AgentEvent) -> str:
        if isinstance(e, MessageEnd):
            return f"end:{e.message.role}"
        if isinstance(e, ToolExecutionStart | ToolExecutionUpdate | ToolExecutionEnd):
            return "tool"
        return type(e).__name__

    condensed: list[str] = []
    for e in events:
        k = kind(e)
        if not (k == "tool" and condensed and condensed[-1] == "tool"):
            condensed.append(k)
    assert condensed == [
        "AgentStart",
        "TurnStart",
        "MessageUpdate",
        "end:assistant",
        "tool",
        "end:toolResult",
        "end:toolResult",
        "TurnEnd",
        "TurnStart",
        "MessageUpdate",
        "end:assistant",
        "TurnEnd",
        "AgentEnd",
    ]
    assert isinstance(events[0], AgentStart)
    assert [e.turn for e in events if isinstance(e, TurnStart)] == [1, 2]
    assert [e.delta for e in events if isinstance(e, MessageUpdate)] == ["working", "finished"]
    for call_id in ("p", "s"):
        mine = [
            e
            for e in events
            if isinstance(e, ToolExecutionStart | ToolExecutionUpdate | ToolExecutionEnd)
            and e.call_id == call_id
        ]
        assert isinstance(mine[0], ToolExecutionStart) and isinstance(mine[-1], ToolExecutionEnd)
        assert sum(isinstance(e, ToolExecutionStart) for e in mine) == 1
        assert sum(isinstance(e, ToolExecutionEnd) for e in mine) == 1
    updates = [e for e in events if isinstance(e, ToolExecutionUpdate)]
    assert [(u.call_id, u.progress.progress, u.progress.total) for u in updates] == [
        ("p", 1, 3),
        ("p", 2, 3),
        ("p", 3, 3),
    ]
    start = next(e for e in events if isinstance(e, ToolExecutionStart) and e.call_id == "p")
    assert start.name == "steps" and start.arguments == {"n": 3}
    turn_end = next(e for e in events if isinstance(e, TurnEnd))
    assert [r.tool_call_id for r in turn_end.tool_results] == ["p", "s"]
    assert turn_end.message.text == "working"


async def test_the_model_sees_the_hosts_tools_and_its_own_results(tmp_path: Path) -> None:
    provider = ScriptedProvider([calls(("c", "say", {"text": "echoed"})), AssistantMessage("ok")])
    async with spawn_agent_host(tmp_path) as c:
        host_tools = await c.list_tools()
        run = run_agent(provider, c, user(), system_prompt="Be brief.")
        await run.events()
    first = provider.requests[0]
    assert [t.name for t in first.tools] == [t.name for t in host_tools]
    assert first.system_prompt is not None and first.system_prompt.startswith("Be brief.")
    second = provider.requests[1]
    result = second.messages[-1]
    assert isinstance(result, ToolResultMessage) and result.text == "echoed"
    # The caller's list is not modified; the run keeps its own.
    messages = user()
    async with agent_host(tmp_path) as c:
        await run_agent(ScriptedProvider([AssistantMessage("hi")]), c, messages).events()
    assert len(messages) == 1


async def test_a_reacting_script_sees_each_result(tmp_path: Path) -> None:
    def react(request: ModelRequest) -> AssistantMessage:
        last = request.messages[-1]
        assert isinstance(last, ToolResultMessage)
        return calls(("c2", "say", {"text": last.text.upper()}))

    async def done(request: ModelRequest) -> AssistantMessage:
        return AssistantMessage(f"saw {request.messages[-1].text}")  # type: ignore[union-attr]

    provider = ScriptedProvider([calls(("c1", "say", {"text": "quiet"})), react, done])
    async with agent_host(tmp_path) as c:
        run = run_agent(provider, c, user())
        await run.events()
    last = run.messages[-1]
    assert isinstance(last, AssistantMessage) and last.text == "saw QUIET"


async def test_leaving_early_cancels_the_calls_in_flight(tmp_path: Path) -> None:
    never = tmp_path / "never"
    provider = ScriptedProvider([calls(("g", "gate", {"path": str(never), "seconds": 60}))])
    async with agent_host(tmp_path) as c:
        with anyio.fail_after(10):
            async with run_agent(provider, c, user()) as run:
                async for event in run:
                    if isinstance(event, ToolExecutionStart):
                        break
        assert run.end_reason is None
        # The connection is still usable after the cancelled batch.
        assert (await c.call_tool("say", {"text": "still here"})).text == "still here"

"""The OpenAI-compatible HTTP provider against a fake chat-completions server on a local socket.

The fake is a small HTTP/1.1 server on 127.0.0.1 written here (no network): it
records each request and answers with JSON, an error status, or a server-sent-event
stream written in awkward pieces.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from anyio.abc import SocketAttribute, SocketStream
from toolwire.client.agent import run_agent
from toolwire.client.conversation import AssistantMessage, ToolResultMessage, UserMessage
from toolwire.client.providers import (
    ModelRequest,
    OpenAIChatProvider,
    ProviderError,
    iter_sse_data,
)

from tests.agent_support import spawn_agent_host
from toolwire.models import ToolDefinition

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Reply:
    status: int = 200
    json_body: Any = None
    sse: list[bytes] | None = None  # raw pieces written one by one, then the socket closes


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class FakeServer:
    answer: Callable[[Received], Reply]
    port: int = 0
    received: list[Received] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def handle(self, stream: SocketStream) -> None:
        async with stream:
            buf = b""
            while b"\r\n\r\n" not in buf:
                buf += await stream.receive()
            head, _, rest = buf.partition(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {
                k.strip().lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])
            }
            length = int(headers.get("content-length", "0"))
            while len(rest) < length:
                rest += await stream.receive()
            req = Received(method, path, headers, json.loads(rest[:length]) if length else {})
            self.received.append(req)
            reply = self.answer(req)
            if reply.sse is not None:
                await stream.send(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                )
                for piece in reply.sse:
                    await stream.send(piece)
                    await anyio.sleep(0)  # let the client read between pieces
                return
            body = json.dumps(reply.json_body).encode()
            await stream.send(
                b"HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                b"Connection: close\r\n\r\n" % (reply.status, len(body)) + body
            )


@asynccontextmanager
async def fake_server(answer: Callable[[Received], Reply]) -> AsyncIterator[FakeServer]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    server = FakeServer(answer, listener.extra(SocketAttribute.local_port))
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, server.handle)
            try:
                yield server
            finally:
                tg.cancel_scope.cancel()
    finally:
        await listener.aclose()


def sse(*events: Any, done: bool = True, split: int = 7) -> list[bytes]:
    """Events as SSE bytes, cut into pieces of ``split`` bytes (so lines arrive in parts)."""
    text = "".join(f"data: {json.dumps(e)}\n\n" for e in events)
    if done:
        text += "data: [DONE]\n\n"
    raw = text.encode()
    return [raw[i : i + split] for i in range(0, len(raw), split)]


READ = ToolDefinition(
    name="read",
    description="Read a file.",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
)


def request(*messages: Any) -> ModelRequest:
    return ModelRequest("You are terse.", list(messages) or [UserMessage("hi")], [READ])


def tool_call_response(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": json.dumps(args)},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def text_response(text: str) -> dict[str, Any]:
    return {
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ]
    }


# --------------------------------------------------------------------------- non-streaming


async def test_request_body_headers_and_tool_call_answer() -> None:
    async with fake_server(
        lambda r: Reply(json_body=tool_call_response("call_9", "read", {"path": "a.py"}))
    ) as srv:
        provider = OpenAIChatProvider(
            "test-model", base_url=srv.base_url, api_key="sk-test", extra_body={"temperature": 0}
        )
        texts: list[str] = []
        msg = await provider.complete(request(), on_text=texts.append)
    (got,) = srv.received
    assert (got.method, got.path) == ("POST", "/v1/chat/completions")
    assert got.headers["authorization"] == "Bearer sk-test"
    assert got.body["model"] == "test-model"
    assert got.body["temperature"] == 0
    assert "stream" not in got.body
    assert got.body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hi"},
    ]
    assert got.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                    "additionalProperties": False,
                },
                "strict": True,
            },
        }
    ]
    assert [(c.id, c.name, c.arguments) for c in msg.tool_calls] == [
        ("call_9", "read", {"path": "a.py"})
    ]
    assert msg.stop_reason == "toolUse"
    assert msg.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    assert texts == []


async def test_no_api_key_sends_no_authorization(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with fake_server(lambda r: Reply(json_body=text_response("hello"))) as srv:
        texts: list[str] = []
        msg = await OpenAIChatProvider("m", base_url=srv.base_url).complete(
            request(), on_text=texts.append
        )
    assert "authorization" not in srv.received[0].headers
    assert (msg.text, msg.stop_reason, texts) == ("hello", "stop", ["hello"])


@pytest.mark.parametrize("status", [400, 401, 500])
async def test_http_errors_raise_provider_error_with_status(status: int) -> None:
    body = {"error": {"message": "bad things", "type": "invalid_request_error"}}
    async with fake_server(lambda r: Reply(status=status, json_body=body)) as srv:
        with pytest.raises(ProviderError) as info:
            await OpenAIChatProvider("m", base_url=srv.base_url).complete(request())
    assert info.value.status == status
    assert "bad things" in info.value.body
    assert f"HTTP {status}" in str(info.value)


async def test_a_refused_connection_is_a_provider_error() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    await listener.aclose()  # nothing listens there now
    with pytest.raises(ProviderError, match="ConnectError"):
        await OpenAIChatProvider("m", base_url=f"http://127.0.0.1:{port}/v1", timeout=5).complete(
            request()
        )


async def test_invalid_json_answer_is_a_provider_error() -> None:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"<html>not json</html>")

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        provider = OpenAIChatProvider("m", base_url="http://fake/v1", http_client=http)
        with pytest.raises(ProviderError, match="invalid JSON"):
            await provider.complete(request())


# --------------------------------------------------------------------------- streaming


def stream_events() -> list[dict[str, Any]]:
    def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}

    return [
        delta({"role": "assistant", "content": ""}),
        delta({"content": "Let me "}),
        delta({"content": "read it."}),
        delta(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_s",
                        "type": "function",
                        "function": {"name": "read", "arguments": ""},
                    }
                ]
            }
        ),
        delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"pa'}}]}),
        delta({"tool_calls": [{"index": 0, "function": {"arguments": 'th": "é.py"}'}}]}),
        delta({}, "tool_calls"),
        {"choices": [], "usage": {"total_tokens": 7}},
    ]


async def test_streamed_answer_is_assembled() -> None:
    async with fake_server(lambda r: Reply(sse=sse(*stream_events()))) as srv:
        texts: list[str] = []
        provider = OpenAIChatProvider("m", base_url=srv.base_url, stream=True)
        msg = await provider.complete(request(), on_text=texts.append)
    body = srv.received[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert texts == ["Let me ", "read it."]
    assert msg.text == "Let me read it."
    assert [(c.id, c.name, c.arguments) for c in msg.tool_calls] == [
        ("call_s", "read", {"path": "é.py"})
    ]
    assert msg.stop_reason == "toolUse"
    assert msg.usage == {"total_tokens": 7}


async def test_stream_without_done_and_with_comments_still_completes() -> None:
    pieces = [b": keep-alive\n\n", *sse(*stream_events(), done=False, split=3)]
    async with fake_server(lambda r: Reply(sse=pieces)) as srv:
        msg = await OpenAIChatProvider("m", base_url=srv.base_url, stream=True).complete(request())
    assert msg.tool_calls[0].arguments == {"path": "é.py"}


async def test_stream_cut_off_by_length_marks_the_call() -> None:
    events = [
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "c",
                                "function": {"name": "read", "arguments": '{"path": "a'},
                            }
                        ]
                    },
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
    ]
    async with fake_server(lambda r: Reply(sse=sse(*events))) as srv:
        msg = await OpenAIChatProvider("m", base_url=srv.base_url, stream=True).complete(request())
    assert msg.stop_reason == "length"
    assert msg.tool_calls[0].invalid_arguments is not None


async def test_an_error_inside_the_stream_raises() -> None:
    events = [{"error": {"message": "overloaded"}}]
    async with fake_server(lambda r: Reply(sse=sse(*events))) as srv:
        with pytest.raises(ProviderError, match="overloaded"):
            await OpenAIChatProvider("m", base_url=srv.base_url, stream=True).complete(request())


async def test_sse_parsing_rules() -> None:
    async def lines(*items: str) -> AsyncIterator[str]:
        for i in items:
            yield i

    got = [
        d
        async for d in iter_sse_data(
            lines("event: x", "data: a", "data:b", "", ": c", "", "id: 1", "data: last")
        )
    ]
    assert got == ["a\nb", "last"]


# --------------------------------------------------------------------------- with the agent loop


@pytest.mark.parametrize("stream", [False, True])
async def test_agent_loop_over_http_against_the_real_host(tmp_path: Path, stream: bool) -> None:
    """Turn 1: the 'model' asks for say(text); turn 2 it sees the result and answers."""

    def answer(req: Received) -> Reply:
        msgs = req.body["messages"]
        if msgs[-1]["role"] == "tool":
            reply = text_response(f"the tool said {msgs[-1]['content']}")
            events = [
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"content": reply["choices"][0]["message"]["content"]},
                            "finish_reason": "stop",
                        }
                    ]
                }
            ]
        else:
            reply = tool_call_response("call_h", "say", {"text": "over http"})
            events = [
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {
                                "tool_calls": [
                                    {
                                        "index": 0,
                                        "id": "call_h",
                                        "function": {
                                            "name": "say",
                                            "arguments": '{"text": "over http"}',
                                        },
                                    }
                                ]
                            },
                            "finish_reason": "tool_calls",
                        }
                    ]
                }
            ]
        return Reply(sse=sse(*events)) if stream else Reply(json_body=reply)

    async with fake_server(answer) as srv, spawn_agent_host(tmp_path) as client:
        provider = OpenAIChatProvider("m", base_url=srv.base_url, stream=stream)
        run = run_agent(provider, client, [UserMessage("say something")])
        await run.events()
    assert run.end_reason == "stop"
    assert [m.role for m in run.messages] == ["user", "assistant", "toolResult", "assistant"]
    result = run.messages[2]
    assert isinstance(result, ToolResultMessage) and result.text == "over http"
    final = run.messages[3]
    assert isinstance(final, AssistantMessage) and final.text == "the tool said over http"
    second = srv.received[1].body["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "call_h"
    assert second[-1] == {"role": "tool", "tool_call_id": "call_h", "content": "over http"}
    assert {t["function"]["name"] for t in srv.received[0].body["tools"]} >= {
        "say",
        "mark",
        "finish",
    }


async def test_http_failure_ends_the_loop_with_an_error(tmp_path: Path) -> None:
    async with (
        fake_server(lambda r: Reply(status=503, json_body={"error": "down"})) as srv,
        spawn_agent_host(tmp_path) as client,
    ):
        run = run_agent(OpenAIChatProvider("m", base_url=srv.base_url), client, [UserMessage("x")])
        await run.events()
    assert run.end_reason == "error"
    last = run.messages[-1]
    assert (
        isinstance(last, AssistantMessage) and last.error is not None and "HTTP 503" in last.error
    )


async def test_toolwire_agent_command_runs_the_loop(tmp_path: Path) -> None:
    """``toolwire agent PROMPT`` against the fake endpoint and a spawned host."""
    import subprocess
    import sys

    from tests.hostproc import TOOLS_DIR

    def answer(req: Received) -> Reply:
        msgs = req.body["messages"]
        if msgs[-1]["role"] == "tool":
            return Reply(json_body=text_response(f"done: {msgs[-1]['content']}"))
        return Reply(json_body=tool_call_response("call_cli", "say", {"text": "from the cli"}))

    toolwire = str(Path(sys.executable).parent / "toolwire")
    async with fake_server(answer) as srv:
        proc = await anyio.run_process(
            [
                toolwire,
                "agent",
                "please say something",
                "--model",
                "m",
                "--base-url",
                srv.base_url,
                "--no-builtins",
                "--tools",
                str(TOOLS_DIR / "agent_tools.py"),
                "--root",
                str(tmp_path),
            ],
            check=False,
            stdin=subprocess.DEVNULL,
        )
    stdout, stderr = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 0, stderr
    assert stdout.strip() == "done: from the cli"
    assert "→ say" in stderr and "from the cli" in stderr
    assert srv.received[0].body["messages"][-1] == {
        "role": "user",
        "content": "please say something",
    }


@pytest.mark.parametrize("stream", [False, True])
async def test_toolwire_agent_runs_a_dotted_tool_twice_under_one_repeated_id(
    tmp_path: Path, stream: bool
) -> None:
    """As llama.cpp answers: two calls, both with id ``call_0``, of a tool named
    ``ns.mark-file`` (declared under an OpenAI-valid name); both run, both results go back."""
    import subprocess
    import sys

    from tests.hostproc import TOOLS_DIR

    m1, m2 = tmp_path / "m1", tmp_path / "m2"

    def call(index: int, path: Path, text: str) -> dict[str, Any]:
        return {
            "index": index,
            "id": "call_0",
            "type": "function",
            "function": {
                "name": "ns_mark-file",
                "arguments": json.dumps({"path": str(path), "text": text}),
            },
        }

    def answer(req: Received) -> Reply:
        msgs = req.body["messages"]
        if msgs[-1]["role"] == "tool":
            if stream:
                done = {"choices": [{"index": 0, "delta": {"content": "both done"}}]}
                return Reply(sse=sse(done))
            return Reply(json_body=text_response("both done"))
        calls = [call(0, m1, "one"), call(1, m2, "two")]
        if stream:
            chunk = {"choices": [{"index": 0, "delta": {"tool_calls": calls}}]}
            end = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
            return Reply(sse=sse(chunk, end))
        for c in calls:
            del c["index"]
        return Reply(
            json_body={
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": None, "tool_calls": calls},
                        "finish_reason": "tool_calls",
                    }
                ]
            }
        )

    toolwire = str(Path(sys.executable).parent / "toolwire")
    async with fake_server(answer) as srv:
        args = [toolwire, "agent", "mark two files", "--model", "m", "--base-url", srv.base_url]
        if stream:
            args.append("--stream")
        proc = await anyio.run_process(
            [
                *args,
                "--no-builtins",
                "--tools",
                str(TOOLS_DIR / "dotted_tools.py"),
                "--root",
                str(tmp_path),
            ],
            check=False,
            stdin=subprocess.DEVNULL,
        )
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr
    assert (m1.read_text(), m2.read_text()) == ("one", "two")
    first, second = (r.body for r in srv.received)
    assert [t["function"]["name"] for t in first["tools"]] == ["ns_mark-file"]
    assistant, *results = second["messages"][-3:]
    ids = [tc["id"] for tc in assistant["tool_calls"]]
    assert ids[0] == "call_0" and len(set(ids)) == 2
    assert [tc["function"]["name"] for tc in assistant["tool_calls"]] == ["ns_mark-file"] * 2
    assert [(r["role"], r["tool_call_id"], r["content"]) for r in results] == [
        ("tool", ids[0], "wrote one"),
        ("tool", ids[1], "wrote two"),
    ]
    assert proc.stdout.decode().strip() == "both done"

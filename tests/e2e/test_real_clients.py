"""Real, independent clients against the real host: the official MCP SDK and pygls."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters

from tests.e2e_helpers import PROMPT, WIRE_TOOLS, wait_until
from tests.hostproc import REPO


def _host_args(root: Path) -> list[str]:
    return [
        "-m",
        "toolwire.host",
        "--root",
        str(root),
        "--no-builtins",
        "--no-entry-points",
        "--log-level",
        "error",
        "--tools",
        WIRE_TOOLS,
    ]


@pytest.mark.parametrize("mode", ["auto", "2026-07-28", "legacy"])
def test_official_mcp_sdk_client(tmp_path: Path, mode: str) -> None:
    """The official Python SDK client (mcp 2.x): ``auto`` probes ``server/discover`` and
    stays in 2026-07-28; a version pin sends enveloped requests without any negotiation;
    ``legacy`` runs the initialize handshake."""
    params = StdioServerParameters(command=sys.executable, args=_host_args(tmp_path), cwd=REPO)
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append((p, total, message))

    async def main() -> None:
        async with Client(params, mode=mode, read_timeout_seconds=20) as c:  # type: ignore[arg-type]
            expected = "2025-11-25" if mode == "legacy" else "2026-07-28"
            assert c.protocol_version == expected
            if mode == "auto":  # learnt from server/discover (a version pin sends none)
                assert c.server_info is not None and c.server_info.name == "toolwire"
            listed = await c.list_tools()
            names = {t.name for t in listed.tools}
            assert {"echo", "progress", "weather", "shape"} <= names
            echo_def = next(t for t in listed.tools if t.name == "echo")
            assert echo_def.input_schema["required"] == ["text"]

            r = await c.call_tool("echo", {"text": "héllo 😀"})
            assert r.is_error is False
            assert r.content[0].text == "héllo 😀"  # type: ignore[union-attr]

            r = await c.call_tool("progress", {"n": 4}, progress_callback=on_progress)
            assert r.content[0].text == "done"  # type: ignore[union-attr]

            r = await c.call_tool("fail", {"message": "it broke"})
            assert r.is_error is True
            assert r.content[0].text == "it broke"  # type: ignore[union-attr]

            r = await c.call_tool("search", {"query": "", "limit": 0})
            assert r.is_error is True

            # structured output is validated by the SDK client against outputSchema
            r = await c.call_tool("weather", {"city": "Rome"})
            assert r.structured_content == {"city": "Rome", "celsius": 21.5}

            with pytest.raises(MCPError) as e:
                await c.call_tool("no_such_tool", {})
            assert e.value.error.code == -32602

            # the SDK's timeout sends notifications/cancelled; the handler is interrupted
            with pytest.raises(MCPError):
                await c.call_tool(
                    "block", {"name": "sdk", "side": str(tmp_path)}, read_timeout_seconds=0.5
                )
            await anyio.to_thread.run_sync(
                lambda: wait_until(lambda: (tmp_path / "sdk.cancelled").exists(), timeout=PROMPT)
            )
            r = await c.call_tool("echo", {"text": "still here"})
            assert r.content[0].text == "still here"  # type: ignore[union-attr]

    anyio.run(main)
    assert [p[0] for p in progress] == [1, 2, 3, 4]
    assert progress[0][1:] == (4, "step 1")


def test_pygls_client_over_content_length(tmp_path: Path) -> None:
    from pygls.client import JsonRPCClient

    async def main() -> list[Any]:
        client = JsonRPCClient()
        await client.start_io(sys.executable, *_host_args(tmp_path))
        try:
            proto = client.protocol
            init = await asyncio.wait_for(
                proto.send_request_async(
                    "initialize",
                    {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "pygls", "version": "2"},
                    },
                ),
                10,
            )
            proto.notify("initialized", {})
            call = await asyncio.wait_for(
                proto.send_request_async(
                    "tools/call", {"name": "echo", "arguments": {"text": "Grüße 😀 中文 \u2028"}}
                ),
                10,
            )
            sync_call = await asyncio.wait_for(
                proto.send_request_async(
                    "tools/call", {"name": "echo_sync", "arguments": {"text": "x" * 100_000}}
                ),
                10,
            )
            listed = await asyncio.wait_for(proto.send_request_async("tools/list", {}), 10)
            down = await asyncio.wait_for(proto.send_request_async("shutdown", {}), 10)
            proto.notify("exit", {})
            return [init, call, sync_call, listed, down]
        finally:
            await client.stop()

    init, call, sync_call, listed, down = asyncio.run(main())
    assert init.protocolVersion == "2025-06-18"
    assert call.content[0].text == "Grüße 😀 中文 \u2028"
    assert sync_call.content[0].text == "x" * 100_000
    assert "echo" in {t.name for t in listed.tools}
    assert down is None


@pytest.mark.parametrize("mode", ["auto", "2026-07-28"])
def test_official_mcp_sdk_listen(tmp_path: Path, mode: str) -> None:
    """The SDK's ``Client.listen`` (subscriptions/listen) sees a tools list change."""
    params = StdioServerParameters(command=sys.executable, args=_host_args(tmp_path), cwd=REPO)

    async def main() -> list[str]:
        async with Client(params, mode=mode, read_timeout_seconds=20) as c:  # type: ignore[arg-type]
            async with c.listen(tools_list_changed=True) as sub:
                assert sub.honored is not None and sub.honored.tools_list_changed is True
                r = await c.call_tool("add_tool", {"name": "late.sdk"})
                assert r.is_error is False
                with anyio.fail_after(10):
                    async for _event in sub:
                        break
            names = [t.name for t in (await c.list_tools()).tools]
            r = await c.call_tool("late.sdk", {})
            assert r.content[0].text == "dynamic"  # type: ignore[union-attr]
            return names

    assert "late.sdk" in anyio.run(main)


def _asking_host_args(root: Path, *extra: str) -> list[str]:
    modern_tools = str(Path(WIRE_TOOLS).parent / "modern_tools.py")
    return [
        "-m",
        "toolwire.host",
        "--root",
        str(root),
        "--no-builtins",
        "--no-entry-points",
        "--log-level",
        "error",
        "--tools",
        modern_tools,
        str(REPO / "examples" / "tools" / "echo_tools.py"),
        *extra,
    ]


@pytest.mark.parametrize("mode", ["auto", "2026-07-28", "legacy"])
def test_official_mcp_sdk_elicitation_sampling_roots(tmp_path: Path, mode: str) -> None:
    """A tool asking the user, the model and for the roots: the SDK answers server requests
    (legacy) or input-required results (2026-07-28) through the same callbacks."""
    from mcp import types

    params = StdioServerParameters(
        command=sys.executable, args=_asking_host_args(tmp_path), cwd=REPO
    )
    asked: list[str] = []

    async def elicit(context: Any, p: Any) -> types.ElicitResult:
        asked.append("elicit")
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def sample(context: Any, p: Any) -> types.CreateMessageResult:
        asked.append("sample")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Paris"), model="m"
        )

    async def roots(context: Any) -> types.ListRootsResult:
        asked.append("roots")
        return types.ListRootsResult(roots=[types.Root(uri="file:///w", name="w")])

    async def main() -> None:
        async with Client(
            params,
            mode=mode,  # type: ignore[arg-type]
            read_timeout_seconds=20,
            elicitation_callback=elicit,
            sampling_callback=sample,
            list_roots_callback=roots,
        ) as c:
            r = await c.call_tool("ask_name", {})
            assert r.content[0].text == "hello Ada"  # type: ignore[union-attr]
            r = await c.call_tool("ask_all", {"runs": str(tmp_path / "runs")})
            assert r.content[0].text == "Ada / Paris / file:///w"  # type: ignore[union-attr]

    anyio.run(main)
    assert asked == ["elicit", "elicit", "sample", "roots"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_official_mcp_sdk_approval_through_elicitation(tmp_path: Path, mode: str) -> None:
    """A host started with --approve asks an SDK client through a standard elicitation form."""
    from mcp import types

    params = StdioServerParameters(
        command=sys.executable, args=_asking_host_args(tmp_path, "--approve", "echo"), cwd=REPO
    )
    forms: list[Any] = []

    async def elicit(context: Any, p: Any) -> types.ElicitResult:
        forms.append(p)
        text = p.message
        if '"no"' in text:
            return types.ElicitResult(
                action="accept", content={"decision": "deny", "reason": "nope"}
            )
        return types.ElicitResult(action="accept", content={"decision": "allow"})

    async def main() -> None:
        async with Client(
            params,
            mode=mode,
            read_timeout_seconds=20,
            elicitation_callback=elicit,  # type: ignore[arg-type]
        ) as c:
            r = await c.call_tool("echo", {"text": "yes"})
            assert r.is_error is False and r.content[0].text == "yes"  # type: ignore[union-attr]
            r = await c.call_tool("echo", {"text": "no"})
            assert r.is_error is True
            assert r.content[0].text == "Call denied by the client: nope"  # type: ignore[union-attr]
            # a tool the policy does not name is not asked about
            r = await c.call_tool("count", {"n": 1})
            assert r.content[0].text == "counted to 1"  # type: ignore[union-attr]

    anyio.run(main)
    assert len(forms) == 2
    schema = forms[0].requested_schema
    assert schema["properties"]["decision"]["enum"] == ["allow", "deny"]

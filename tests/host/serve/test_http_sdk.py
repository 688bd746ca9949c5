"""The official MCP Python SDK client (``mcp`` 2.x, its Streamable HTTP transport)
against ``toolwire serve --http`` with a bearer token, in both eras."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.e2e_helpers import WIRE_TOOLS
from tests.http_support import http_host

MODERN_TOOLS = str(Path(WIRE_TOOLS).parent / "modern_tools.py")
TOKEN = "sdk-test-token"


def _client(url: str, mode: str, **kwargs: Any) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
    return Client(
        streamable_http_client(url, http_client=http),
        mode=mode,  # type: ignore[arg-type]
        read_timeout_seconds=60,
        **kwargs,
    )


@pytest.fixture
def token_env() -> dict[str, str]:
    return {"TOOLWIRE_TOKEN": TOKEN}


@pytest.mark.parametrize("mode", ["auto", "2026-07-28", "legacy"])
def test_sdk_list_call_progress(tmp_path: Path, mode: str, token_env: dict[str, str]) -> None:
    progress: list[float] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append(p)

    async def main() -> None:
        with http_host(tmp_path, env=token_env, tools=[WIRE_TOOLS]) as h:
            async with _client(h.url, mode) as c:
                expected = "2025-11-25" if mode == "legacy" else "2026-07-28"
                assert c.protocol_version == expected
                names = {t.name for t in (await c.list_tools()).tools}
                assert {"echo", "progress", "weather"} <= names
                r = await c.call_tool("echo", {"text": "héllo 😀"})
                assert r.is_error is False and r.content[0].text == "héllo 😀"  # type: ignore[union-attr]
                r = await c.call_tool("progress", {"n": 4}, progress_callback=on_progress)
                assert r.content[0].text == "done"  # type: ignore[union-attr]
                r = await c.call_tool("fail", {"message": "it broke"})
                assert r.is_error is True
                r = await c.call_tool("weather", {"city": "Rome"})
                assert r.structured_content == {"city": "Rome", "celsius": 21.5}
                with pytest.raises(MCPError) as e:
                    await c.call_tool("no_such_tool", {})
                assert e.value.error.code == -32602

    anyio.run(main)
    assert progress == sorted(progress) and len(progress) == 4


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_elicitation_and_approval(tmp_path: Path, mode: str, token_env: dict[str, str]) -> None:
    """Questions reach the SDK: server→client requests on the POST's SSE stream in
    2025-11-25, input-required rounds in 2026-07-28; --approve asks through a form."""
    asked: list[str] = []

    async def elicit(context: Any, p: Any) -> types.ElicitResult:
        asked.append(p.message)
        if "decision" in str(p.requested_schema):
            return types.ElicitResult(action="accept", content={"decision": "allow"})
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def main() -> None:
        tools = [MODERN_TOOLS, str(Path(WIRE_TOOLS).parents[2] / "examples/tools/echo_tools.py")]
        with http_host(tmp_path, ["--approve", "echo"], env=token_env, tools=tools) as h:
            async with _client(h.url, mode, elicitation_callback=elicit) as c:
                r = await c.call_tool("ask_name", {})
                assert r.content[0].text == "hello Ada"  # type: ignore[union-attr]
                r = await c.call_tool("echo", {"text": "yes"})
                assert r.is_error is False and r.content[0].text == "yes"  # type: ignore[union-attr]

    anyio.run(main)
    assert len(asked) == 2


def test_sdk_listen(tmp_path: Path, token_env: dict[str, str]) -> None:
    """``subscriptions/listen`` over HTTP: the SDK sees a tools list change."""

    async def main() -> None:
        with http_host(tmp_path, env=token_env, tools=[WIRE_TOOLS]) as h:
            async with _client(h.url, "2026-07-28") as c:
                async with c.listen(tools_list_changed=True) as sub:
                    assert sub.honored is not None and sub.honored.tools_list_changed is True
                    r = await c.call_tool("add_tool", {"name": "late.http"})
                    assert r.is_error is False
                    with anyio.fail_after(60):
                        async for _event in sub:
                            break
                r = await c.call_tool("late.http", {})
                assert r.content[0].text == "dynamic"  # type: ignore[union-attr]

    anyio.run(main)

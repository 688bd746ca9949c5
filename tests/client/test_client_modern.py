"""toolwire.client in both eras against the real host: 2026-07-28 by default to a toolwire
host, the initialize fallback for a 2025-only server, and the callbacks that answer what a
tool asks (on_elicit, on_sample, on_roots) as input-required rounds or server requests."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolwire.client import Client, Progress, host_command

from tests.hostproc import REPO, TOOLS_DIR
from toolwire.errors import JsonRpcError

pytestmark = pytest.mark.anyio

MODERN_TOOLS = TOOLS_DIR / "modern_tools.py"
ECHO_TOOLS = REPO / "examples" / "tools" / "echo_tools.py"
LEGACY_SERVER = TOOLS_DIR / "legacy_server.py"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def spawn(root: Path, *extra: str, **options: Any) -> Client:
    cmd = host_command(
        root=root, tools=[MODERN_TOOLS, ECHO_TOOLS], builtins=False, extra_args=extra
    )
    options.setdefault("stderr", "capture")
    return Client.spawn(cmd, **options)


async def on_elicit(params: dict[str, Any]) -> dict[str, Any]:
    assert params["requestedSchema"]["required"] == ["name"]
    return {"action": "accept", "content": {"name": "Ada"}}


def on_sample(params: dict[str, Any]) -> dict[str, Any]:
    assert params["messages"][0]["content"]["text"] == "Capital of France?"
    return {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}


def on_roots(params: dict[str, Any]) -> dict[str, Any]:
    return {"roots": [{"uri": "file:///w", "name": "w"}]}


@pytest.mark.parametrize("era", ["auto", "legacy"])
async def test_tools_that_ask_in_both_eras(tmp_path: Path, era: str) -> None:
    runs = tmp_path / "runs"
    async with spawn(
        tmp_path, era=era, on_elicit=on_elicit, on_sample=on_sample, on_roots=on_roots
    ) as c:
        assert c.modern is (era == "auto")
        res = await c.call_tool("ask_name")
        assert res.text == "hello Ada"
        res = await c.call_tool("ask_all", {"runs": str(runs)})
        assert res.text == "Ada / Paris / file:///w"
        assert not res.is_error
    # 2026-07-28 runs the handler once per round; 2025-11-25 once
    assert runs.read_text() == ("run\n" * 4 if era == "auto" else "run\n")


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_a_tool_asking_without_the_callback(tmp_path: Path, era: str) -> None:
    async with spawn(tmp_path, era=era) as c:
        if era == "modern":
            with pytest.raises(JsonRpcError) as info:
                await c.call_tool("ask_name")
            assert info.value.code == -32021
            assert info.value.data == {"requiredCapabilities": {"elicitation": {}}}
        else:
            res = await c.call_tool("ask_name")
            assert res.is_error and "elicitation" in res.text


async def test_modern_progress_logs_and_list_changes(tmp_path: Path) -> None:
    changed = anyio.Event()
    progress: list[Progress] = []
    async with spawn(tmp_path, era="modern", on_tools_changed=changed.set) as c:
        assert c.discover_result is not None
        assert c.discover_result["supportedVersions"] == ["2026-07-28"]
        res = await c.call_tool("count", {"n": 3}, on_progress=progress.append)
        assert res.text == "counted to 3"
        assert [p.progress for p in progress] == [1, 2, 3]
        await c.ping()
        await c.call_tool("add_tool", {"name": "late.client"})
        with anyio.fail_after(10):
            await changed.wait()
        assert "late.client" in [t.name for t in await c.list_tools()]


async def test_fallback_to_initialize_for_a_2025_only_server(tmp_path: Path) -> None:
    cmd = [sys.executable, str(LEGACY_SERVER)]
    async with Client.spawn(cmd, stderr="capture") as c:
        assert c.modern is False
        assert c.protocol_version == "2025-11-25"
        assert c.server_info.name == "legacy"
        assert [t.name for t in await c.list_tools()] == ["hello"]
        assert (await c.call_tool("hello")).text == "hello from 2025"
    assert c.stderr_output.splitlines()[:2] == ["got server/discover", "got initialize"]
    with pytest.raises(JsonRpcError):
        async with Client.spawn(cmd, stderr="capture", era="modern"):
            pass

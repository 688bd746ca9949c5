"""The spawned host's transport on its own: it starts the process, hands its pipes to
whoever speaks over them, keeps its stderr and ends it in order."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from toolwire.client import Client, StdioTransport, host_command

from toolwire.session import Session


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_transport_serves_a_session_and_ends_the_host_on_eof(tmp_path: Path) -> None:
    transport = StdioTransport(host_command(root=tmp_path, builtins=False), stderr="capture")
    assert transport.env is not None and transport.env["PYTHONSAFEPATH"] == "1"
    async with anyio.create_task_group() as tg:
        receive, send = await transport.start(tg)
        session = Session(receive, send, framing="ndjson")
        async with session.running():
            result = await session.request("ping", None, timeout=30)
        await transport.end()
        await transport.close_streams()
    assert isinstance(result, dict)
    assert transport.ended_by == "eof"
    assert transport.process is not None and transport.process.returncode == 0


@pytest.mark.anyio
async def test_client_takes_a_transport_and_reports_through_it(tmp_path: Path) -> None:
    script = "import sys; sys.stderr.write('from the server\\n')"
    transport = StdioTransport([sys.executable, "-c", script], stderr="capture")
    assert transport.env is None  # not a toolwire host: the environment is inherited
    with pytest.raises(Exception, match="from the server"):
        async with Client(transport=transport, era="legacy", init_timeout=30):  # exits at once
            pass
    assert transport.ended_by == "eof"
    assert "from the server" in transport.stderr_output

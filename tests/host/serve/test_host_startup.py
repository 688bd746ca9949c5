"""The host as a library: start-up failures are exceptions, and ``run_host`` serves a
connection inside the caller's own process (no signals taken over, no exit)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import anyio
import pytest
from toolwire.host import HostConfig, StartupError, run_host
from toolwire.host.sandbox.settings import SandboxSettings
from toolwire.host.serve.connection import build_registry


def test_tools_that_do_not_load_raise_startup_error(tmp_path: Path) -> None:
    # In-process modules are loaded by build_registry.
    missing = HostConfig(
        root=tmp_path, tools=[str(tmp_path / "nope.py")], builtins=False, isolation="none"
    )
    with pytest.raises(StartupError, match=r"nope\.py"):
        build_registry(missing)
    bad = tmp_path / "bad.py"
    bad.write_text("from toolwire.host import tool\n@tool\ndef f(x) -> str:\n    return ''\n")
    with pytest.raises(StartupError, match=r"bad\.py"):
        build_registry(
            HostConfig(root=tmp_path, tools=[str(bad)], builtins=False, isolation="none")
        )


@pytest.mark.parametrize("what", ["missing", "bad"])
def test_worker_modules_that_do_not_load_make_run_host_raise_startup_error(
    tmp_path: Path, what: str
) -> None:
    # With worker processes (the default) run_host starts them, and raises for a module
    # that does not load in its worker, before serving anything.
    bad = tmp_path / "bad.py"
    bad.write_text("from toolwire.host import tool\n@tool\ndef f(x) -> str:\n    return ''\n")
    spec = str(tmp_path / "nope.py") if what == "missing" else str(bad)
    config = HostConfig(
        root=tmp_path,
        tools=[spec],
        builtins=False,
        entry_points=False,
        sandbox=SandboxSettings(mode="none"),
    )
    assert config.isolation == "process"
    r, w = os.pipe()
    try:
        with pytest.raises(StartupError, match=r"nope\.py" if what == "missing" else r"bad\.py"):
            anyio.run(run_host, config, r, w)
    finally:
        for fd in (r, w):
            with contextlib.suppress(OSError):
                os.close(fd)


def test_run_host_serves_one_connection_in_this_process(tmp_path: Path) -> None:
    to_host_r, to_host_w = os.pipe()
    from_host_r, from_host_w = os.pipe()
    config = HostConfig(
        root=tmp_path,
        builtins=False,
        entry_points=False,
        framing="ndjson",
        sandbox=SandboxSettings(mode="none"),
    )
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    os.write(to_host_w, b"".join(json.dumps(r).encode() + b"\n" for r in requests))
    os.close(to_host_w)  # end-of-file after the requests: the host answers and returns

    async def serve() -> int:
        with anyio.fail_after(30):
            return await run_host(config, to_host_r, from_host_w)

    code = anyio.run(serve, backend="asyncio")
    os.close(from_host_w)
    with os.fdopen(from_host_r, "rb") as f:
        answers = [json.loads(line) for line in f.read().splitlines()]
    os.close(to_host_r)
    assert code == 0
    assert [a.get("id") for a in answers if "id" in a] == [1, 2]
    assert answers[-1]["result"]["tools"] == []

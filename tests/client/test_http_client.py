"""toolwire's own client over Streamable HTTP: ``Client.open_url`` in both eras, and
the CLI's ``list``/``call`` with ``--url`` and ``--token-file``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from toolwire.client import Client

from tests.e2e_helpers import wait_until
from tests.hostproc import REPO
from tests.http_support import http_host
from toolwire.errors import JsonRpcError

TOKEN = "client-token"
TOOLWIRE = str(Path(sys.executable).parent / "toolwire")


@pytest.mark.parametrize("era", ["auto", "modern", "legacy"])
def test_client_open_url(tmp_path: Path, era: str) -> None:
    side = tmp_path / "side"
    side.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    progress: list[float] = []
    logs: list[str] = []

    async def main() -> None:
        with http_host(root, env={"TOOLWIRE_TOKEN": TOKEN}) as h:
            async with Client.open_url(
                h.url, token=TOKEN, era=era, on_log=lambda m: logs.append(str(m.data))
            ) as c:  # type: ignore[arg-type]
                assert c.modern is (era != "legacy")
                names = {t.name for t in await c.list_tools()}
                assert {"hold", "steps", "hang"} <= names
                r = await c.call_tool(
                    "steps", {"n": 3}, on_progress=lambda p: progress.append(p.progress)
                )
                assert r.is_error is False and r.content[0].text == "done"  # type: ignore[union-attr]
                # a call that times out is cancelled in the host, in both eras
                with pytest.raises(JsonRpcError):
                    await c.call_tool("hang", {"side": str(side)}, timeout=3)
                await anyio.to_thread.run_sync(
                    lambda: wait_until(lambda: (side / "hang.cancelled").exists(), 60.0)
                )
                r = await c.call_tool("steps", {"n": 1})
                assert r.content[0].text == "done"  # type: ignore[union-attr]
            async with Client.open_url(h.url, token="wrong", era=era) as c:  # type: ignore[arg-type]
                pass

    with pytest.raises(JsonRpcError) as e:
        anyio.run(main)
    assert "Unauthorized" in e.value.message
    assert progress == [1, 2, 3]
    assert "steps finished" in logs


def test_cli_list_and_call_with_url(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    root = tmp_path / "root"
    root.mkdir()
    env = dict(os.environ, PYTHONSAFEPATH="1")
    env.pop("TOOLWIRE_TOKEN", None)
    with http_host(root, ["--token-file", str(token_file)]) as h:

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            cmd = [TOOLWIRE, *args, "--url", h.url]
            return subprocess.run(
                [*cmd, "--token-file", str(token_file)],
                capture_output=True,
                text=True,
                cwd=REPO,
                env=env,
                timeout=120,
            )

        listed = run("list")
        assert listed.returncode == 0, listed.stderr
        assert "steps" in listed.stdout and "hold" in listed.stdout
        called = run("call", "steps", "n=2")
        assert called.returncode == 0, called.stderr
        assert called.stdout.strip() == "done"
        no_token = subprocess.run(
            [TOOLWIRE, "list", "--url", h.url],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )
        # A missing or refused token is the user's to fix: exit 2 and say how.
        assert no_token.returncode == 2 and "Unauthorized" in no_token.stderr, no_token.stderr
        assert "--token-file" in no_token.stderr

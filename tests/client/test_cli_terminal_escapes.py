"""``toolwire call``, ``list`` and ``agent`` never send tool or model text raw to the
terminal: window titles, OSC 52 clipboard writes, screen clears, C1 controls and bidi
overrides are shown as escapes; rich markup in tool text stays literal."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.cli_support import TOOLWIRE, run_cli
from tests.client.test_provider_http import (
    Received,
    Reply,
    fake_server,
    text_response,
    tool_call_response,
)
from tests.fixtures.escape_tools import NASTY
from tests.hostproc import TOOLS_DIR

HOST_OPTS = ["--no-builtins", "--tools", str(TOOLS_DIR / "escape_tools.py")]

RAW = ["\x1b]", "\x1b[2J", "\x9b", "\x9d", "\x9c", "\x07", "\x08", "\x00", "\r", "\u202e"]
"""What must never reach the terminal from tool or model text."""


def _assert_clean(text: str, *, styled: bool = False) -> None:
    """No raw control sequence from the tool; with ``styled`` (rich on a terminal) the
    console's own SGR styling (``ESC [ ... m``) is allowed, nothing else with ESC."""
    for seq in RAW:
        assert seq not in text, f"raw {seq!r} reached the terminal: {text!r}"
    if not styled:
        assert "\x1b" not in text, text
    else:
        import re

        leftover = re.sub(r"\x1b\[[0-9;]*m", "", text)
        assert "\x1b" not in leftover, leftover


WIDE = {**os.environ, "COLUMNS": "1000"}
"""Rich wraps at the terminal width: wide enough that the checked text stays on one line."""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, env=WIDE)


def test_call_shows_escapes_instead_of_sending_them(tmp_path: Path) -> None:
    proc = _run("call", "noisy", "--root", str(tmp_path), *HOST_OPTS)
    assert proc.returncode == 0, proc.stderr
    _assert_clean(proc.stdout)
    _assert_clean(proc.stderr)
    # visible, and the markup literal
    assert "\\x1b]0;pwned title\\x07" in proc.stdout
    assert "\\x9b31m" in proc.stdout
    assert "\\u202eevil" in proc.stdout
    assert "[bold red]markup[/bold red] [link=http://x]link[/link]" in proc.stdout
    assert "details: note=start \\x1b]0;pwned" in proc.stderr
    assert "progress 1/2 progress start \\x1b]0;pwned" in proc.stderr


def test_call_json_is_the_exact_text_with_every_control_escaped(tmp_path: Path) -> None:
    proc = _run("call", "noisy", "--json", "--root", str(tmp_path), *HOST_OPTS)
    assert proc.returncode == 0, proc.stderr
    _assert_clean(proc.stdout)
    assert json.loads(proc.stdout)["content"][0]["text"] == NASTY


def test_list_shows_descriptions_without_escapes_or_markup(tmp_path: Path) -> None:
    table = _run("list", "--root", str(tmp_path), *HOST_OPTS)
    assert table.returncode == 0, table.stderr
    _assert_clean(table.stdout)
    assert "[bold]markup[/bold]" in table.stdout
    listed = _run("list", "--json", "--root", str(tmp_path), *HOST_OPTS)
    _assert_clean(listed.stdout)
    assert "\x1b]0;desc title" in json.loads(listed.stdout)["tools"][0]["description"]


def _run_on_a_terminal(args: list[str]) -> tuple[int, str, str]:
    """Run with stdout on a pseudo-terminal (stderr a pipe); returns (code, out, err)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    out = bytearray()
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError("no output from the command within 60 s")
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other side closed
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.stderr is not None
    err = proc.stderr.read().decode("utf-8", "replace")
    return proc.wait(timeout=30), out.decode("utf-8", "replace"), err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pty layout of Linux")
def test_call_on_a_terminal_shows_escapes_too(tmp_path: Path) -> None:
    code, out, err = _run_on_a_terminal(
        [TOOLWIRE, "call", "noisy", "--root", str(tmp_path), *HOST_OPTS]
    )
    assert code == 0, err
    _assert_clean(out.replace("\r\n", "\n"))  # the terminal's own line discipline
    _assert_clean(err)
    assert "\\x1b]52;c;cHduZWQ=\\x07" in out


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pty layout of Linux")
def test_list_on_a_terminal_has_only_the_consoles_own_styling(tmp_path: Path) -> None:
    code, out, err = _run_on_a_terminal([TOOLWIRE, "list", "--root", str(tmp_path), *HOST_OPTS])
    assert code == 0, err
    _assert_clean(out.replace("\r\n", "\n"), styled=True)


def test_agent_shows_model_and_tool_text_without_escapes(tmp_path: Path) -> None:
    """``toolwire agent`` against a fake model endpoint: the model's answer and the
    tool's result both carry escapes."""

    def answer(req: Received) -> Reply:
        msgs = req.body["messages"]
        if msgs[-1]["role"] == "tool":
            return Reply(json_body=text_response("model says " + NASTY))
        return Reply(json_body=tool_call_response("call_1", "noisy", {}))

    async def main() -> subprocess.CompletedProcess[bytes]:
        async with fake_server(answer) as srv:
            return await anyio.run_process(
                [
                    TOOLWIRE,
                    "agent",
                    "go",
                    "--model",
                    "m",
                    "--base-url",
                    srv.base_url,
                    "--root",
                    str(tmp_path),
                    *HOST_OPTS,
                ],
                check=False,
                stdin=subprocess.DEVNULL,
                env=WIDE,
            )

    proc = anyio.run(main)
    stdout, stderr = proc.stdout.decode(), proc.stderr.decode()
    assert proc.returncode == 0, stderr
    _assert_clean(stdout)
    _assert_clean(stderr)
    assert "model says start \\x1b]0;pwned title\\x07" in stdout
    assert "[bold red]markup[/bold red]" in stdout
    assert "\\x1b]52;c;" in stderr  # the tool's result panel

"""The CLI's help texts: plain text (no raw control bytes reach the terminal), and what
they promise is what the commands do (tests/client/test_cli_mistakes.py runs each promise)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TOOLWIRE = str(Path(sys.executable).parent / "toolwire")


@pytest.mark.parametrize(
    "args",
    [["--help"], ["call", "--help"], ["serve", "--help"], ["list", "--help"], ["agent", "--help"]],
)
def test_help_has_no_control_bytes(args: list[str]) -> None:
    out = subprocess.run(
        [TOOLWIRE, *args], capture_output=True, timeout=60, stdin=subprocess.DEVNULL
    ).stdout
    assert out, "no help printed"
    bad = sorted({b for b in out if b < 0x20 and b not in (0x09, 0x0A)} | ({0x7F} & set(out)))
    assert not bad, f"control bytes in the help: {bad}"


def test_call_help_shows_the_escape_as_text() -> None:
    out = subprocess.run(
        [TOOLWIRE, "call", "--help"], capture_output=True, text=True, timeout=60
    ).stdout
    assert "\\x1b" in out


def help_text(*args: str) -> str:
    out = subprocess.run(
        [TOOLWIRE, *args, "--help"], capture_output=True, text=True, timeout=60
    ).stdout
    return " ".join(out.split())  # argparse wraps to the terminal's width


def test_top_help_offers_version() -> None:
    assert "--version print the installed version and exit" in help_text()


def test_call_help_says_arguments_go_anywhere_after_the_name() -> None:
    text = help_text("call")
    assert 'toolwire call bash --args-json \'{"command": "ls"}\' timeout=5' in text
    assert "toolwire call shout --tools shout.py text=hello" in text
    assert (
        "Every k=v or {...} word is an argument, before or after options (also after --tools"
        in text
    )
    assert "'toolwire list NAME' shows a tool's schema" in text
    assert "an unknown --approve name" in text and "a bad --root or --config" in text


def test_list_help_documents_name_and_its_json() -> None:
    text = help_text("list")
    assert "[name]" in text and "show this tool's definition and schemas" in text
    assert "its input schema and its output schema if it has one" in text
    assert "An unknown NAME exits 1 and lists the tools there are" in text


@pytest.mark.parametrize("command", ["list", "call", "agent"])
def test_host_commands_document_verbose(command: str) -> None:
    assert "-v, --verbose show the host's stderr (its start banner" in help_text(command)


def test_agent_help_documents_the_key_check() -> None:
    text = help_text("agent")
    assert "checked before the host starts: OpenAI's own endpoint needs one" in text

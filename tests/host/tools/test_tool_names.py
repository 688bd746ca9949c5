"""Tool names are checked whole at registration (MCP 2025-11-25 "Tool Names").

A ``$``-anchored pattern used with ``re.match`` accepts a final newline: ``"abc\\n"``
used to register, was listed as ``"abc\\n"`` and could never be called.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from toolwire.host import Registry, ToolDefinitionError, tool
from toolwire.host.tools.decorator import build_tool
from toolwire.host.tools.definition import check_tool_name

from tests.hostproc import HOST_COMMAND

BAD_NAMES = [
    "abc\n",  # `$` matches before a final newline
    "abc\r\n",
    "\nabc",
    "",
    "a" * 65,
    "a b",
    "a/b",
    "naïve",  # non-ASCII letters
    "abc\x00",
    "٣",  # a non-ASCII digit (\d would take it)
]

GOOD_NAMES = ["a", "read", "my_tool.v2-beta", "A" * 64, "0"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_name_is_refused_with_a_clear_error(name: str) -> None:
    def fn() -> str:
        """Do nothing."""
        return ""

    with pytest.raises(ToolDefinitionError) as err:
        build_tool(tool(name=name)(fn))
    message = str(err.value)
    assert "1-64 characters" in message
    assert repr(name) in message or "empty" in message


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_a_good_name_is_accepted(name: str) -> None:
    assert check_tool_name(name) == name

    def fn() -> str:
        """Do nothing."""
        return ""

    assert build_tool(tool(name=name)(fn)).name == name


def test_the_offending_character_is_named() -> None:
    with pytest.raises(ToolDefinitionError, match=r"contains '\\n' at position 3"):
        check_tool_name("abc\n")


def test_a_tool_built_by_hand_is_checked_when_registered() -> None:
    @tool
    def fine() -> str:
        """Do nothing."""
        return ""

    built = dataclasses.replace(build_tool(fine), name="fine\n")
    registry = Registry()
    with pytest.raises(ToolDefinitionError, match="contains"):
        registry.add(built)
    assert "fine\n" not in registry


def test_the_host_refuses_to_start_with_a_bad_tool_name(tmp_path: Path) -> None:
    tools = tmp_path / "newline_tools.py"
    tools.write_text(
        textwrap.dedent(
            '''
            from toolwire.host import tool

            @tool(name="abc\\n")
            def abc() -> str:
                """Listed, but never callable, before names were checked whole."""
                return "hi"
            '''
        )
    )
    proc = subprocess.run(
        [*HOST_COMMAND, "--root", str(tmp_path), "--no-builtins", "--tools", str(tools)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Tool name 'abc\\n' contains '\\n'" in proc.stderr
    assert sys.executable  # the host ran with this interpreter

"""The CLI's help texts are plain text: no raw control bytes reach the terminal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TOOLWIRE = str(Path(sys.executable).parent / "toolwire")


@pytest.mark.parametrize("args", [["--help"], ["call", "--help"], ["serve", "--help"]])
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

"""A tool that writes megabytes to stdout or stderr (tests/e2e/test_e2e_stderr.py): in the
host both reach the host's stderr, which the test's client never reads."""

from __future__ import annotations

import os
import sys
from typing import Literal

from toolwire.host import tool


@tool
def shout(mib: int, how: Literal["print", "stderr", "fd1", "fd2"]) -> str:
    """Write ``mib`` MiB of lines: with print, sys.stderr, or straight to fd 1 or fd 2."""
    line = "x" * 1023 + "\n"
    for _ in range(mib * 1024):
        if how == "print":
            print(line, end="")
        elif how == "stderr":
            sys.stderr.write(line)
        else:
            os.write(1 if how == "fd1" else 2, line.encode())
    return f"wrote {mib} MiB with {how}"

"""Taking the protocol streams away from everything else in the process (standard library
only: the host's and a worker's entry points call it before any heavy import)."""

from __future__ import annotations

import os
import sys

__all__ = ["take_over_stdio"]


def take_over_stdio() -> tuple[int, int]:
    """Move the protocol streams to private descriptors; returns ``(read_fd, write_fd)``.

    Afterwards fd 1 and ``sys.stdout`` write to stderr, and fd 0 / ``sys.stdin`` read
    /dev/null, so nothing but the process's own writer reaches the protocol stream (a
    tool module that prints, at import time or in a handler, writes to stderr).
    """
    sys.stdout.flush()
    proto_in = os.dup(0)
    proto_out = os.dup(1)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - lives for the process
    return proto_in, proto_out

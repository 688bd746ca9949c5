"""A deliberately independent test peer: spawns the real host and speaks raw JSON-RPC.

It shares no code with toolwire's session layer (plain subprocess, threads, json),
so tests of the host do not lean on the code under test to read its answers.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TOOLS_DIR = Path(__file__).resolve().parent / "fixtures"
HOST_COMMAND = (sys.executable, "-P", "-m", "toolwire.host")
"""How the tests start the host: like ``host_command()``, with ``-P`` (and
``PYTHONSAFEPATH=1``) so the working directory is never on its import path."""

RECV_TIMEOUT = 60.0
"""Seconds a test waits for a message by default: a bound on a hang, not a speed (a
loaded 2-core machine can take tens of seconds to start a host and answer)."""


class HostProcess:
    """The host as a subprocess, with a background reader collecting its messages.

    Args:
        args: extra ``toolwire serve`` arguments.
        framing: "ndjson" or "lsp": how :meth:`send` frames and how replies are parsed.
        cwd: working directory (and default root) of the host.
        env: variables added to the inherited environment.
        command: the argv that starts the host, ``args`` appended (default:
            :data:`HOST_COMMAND`, the way toolwire's own launchers start it).
        prefix: a command line the host is started through (e.g. ``unshare``), which
            must end by exec'ing its arguments.
    """

    def __init__(
        self,
        args: Sequence[str] = (),
        *,
        framing: str = "ndjson",
        cwd: str | Path | None = None,
        env: dict[str, str] | None = None,
        command: Sequence[str] | None = None,
        prefix: Sequence[str] = (),
    ) -> None:
        self.framing = framing
        full_env = dict(os.environ)
        if command is None:
            full_env["PYTHONSAFEPATH"] = "1"
        full_env.update(env or {})
        self.proc = subprocess.Popen(
            [*prefix, *(HOST_COMMAND if command is None else command), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(cwd or REPO),
            env=full_env,
        )
        self.messages: queue.Queue[Any] = queue.Queue()
        self.raw_stdout = bytearray()
        self.stderr_chunks: list[bytes] = []
        self._stderr_grew = threading.Condition()
        self._stderr_ended = False
        self._next_id = 1000
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._err_reader.start()
        self._stash: list[Any] = []

    # ------------------------------------------------------------------ reading

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        out = self.proc.stdout
        if self.framing == "ndjson":
            for line in out:
                self.raw_stdout += line
                try:
                    self.messages.put(json.loads(line))
                except ValueError:
                    self.messages.put(("<unparsable>", line))
        else:
            while True:
                headers: dict[str, str] = {}
                while True:
                    line = out.readline()
                    if not line:
                        self.messages.put(None)
                        return
                    self.raw_stdout += line
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.decode("ascii").partition(":")
                    headers[name.strip().lower()] = value.strip()
                n = int(headers["content-length"])
                body = out.read(n)
                self.raw_stdout += body
                self.messages.put(json.loads(body))
        self.messages.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read1(65536), b""):  # type: ignore[union-attr]
            with self._stderr_grew:
                self.stderr_chunks.append(chunk)
                self._stderr_grew.notify_all()
        with self._stderr_grew:
            self._stderr_ended = True
            self._stderr_grew.notify_all()

    def _join_readers(self, timeout: float = 5.0) -> None:
        """After the host exited: wait for the readers to collect the last of its output.

        A reader ends at EOF, which comes when the host and every process that inherited
        its pipes have closed them; ``timeout`` (seconds) bounds the wait should such a
        process outlive the host (the output collected so far is kept).
        """
        for reader in (self._reader, self._err_reader):
            reader.join(timeout)

    @property
    def stderr(self) -> str:
        """The host's stderr so far; once the host has exited, all of it (the reader
        is joined first, so no last chunk is still in flight).

        While the host runs, a line it has written may still be in the pipe: to check
        that a line came, use :meth:`expect_stderr`, which waits for it."""
        if self.proc.poll() is not None and self._err_reader.is_alive():
            self._err_reader.join(5.0)
        return b"".join(self.stderr_chunks).decode("utf-8", "replace")

    def expect_stderr(self, text: str, timeout: float = RECV_TIMEOUT) -> str:
        """Wait until ``text`` appears in the host's stderr; return the stderr so far.

        Woken by each chunk the reader collects (no polling). Raises AssertionError,
        with the stderr collected, when ``timeout`` seconds pass or the host's stderr
        ends without it.
        """
        deadline = time.monotonic() + timeout
        with self._stderr_grew:
            while True:
                got = b"".join(self.stderr_chunks).decode("utf-8", "replace")
                if text in got:
                    return got
                left = deadline - time.monotonic()
                if left <= 0 or self._stderr_ended:
                    raise AssertionError(f"{text!r} not in the host's stderr: {got!r}")
                self._stderr_grew.wait(left)

    def recv(self, timeout: float = RECV_TIMEOUT) -> Any:
        """The next message (None at EOF). Raises queue.Empty on timeout."""
        if self._stash:
            return self._stash.pop(0)
        return self.messages.get(timeout=timeout)

    def recv_response(self, id: Any, timeout: float = RECV_TIMEOUT) -> dict[str, Any]:
        """Wait for the response to ``id``; other messages are kept for later recv()."""
        for i, m in enumerate(self._stash):
            if isinstance(m, dict) and m.get("id") == id and "method" not in m:
                return self._stash.pop(i)  # type: ignore[no-any-return]
        while True:
            m = self.messages.get(timeout=timeout)
            if m is None:
                raise EOFError(
                    f"host closed stdout before answering {id!r}; stderr:\n{self.stderr}"
                )
            if isinstance(m, dict) and m.get("id") == id and "method" not in m:
                return m  # type: ignore[no-any-return]
            self._stash.append(m)

    def drain(self) -> list[Any]:
        """Messages already received and not yet consumed."""
        out, self._stash = self._stash, []
        while True:
            try:
                m = self.messages.get_nowait()
            except queue.Empty:
                return out
            out.append(m)

    # ------------------------------------------------------------------ writing

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg: Any) -> None:
        body = json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode()
        if self.framing == "ndjson":
            self.send_raw(body + b"\n")
        else:
            self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(
        self, method: str, params: Any = None, *, id: Any = None, timeout: float = RECV_TIMEOUT
    ) -> dict[str, Any]:
        """Send a request and wait for its response (the whole response object)."""
        if id is None:
            self._next_id += 1
            id = self._next_id
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.recv_response(id, timeout)

    def notify(self, method: str, params: Any = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        resp = self.request(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            },
        )
        self.notify("notifications/initialized")
        return resp

    def call(self, name: str, arguments: Any = None, **kw: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return self.request("tools/call", params, **kw)

    # ------------------------------------------------------------------ ending

    def close_stdin(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()

    def wait(self, timeout: float = 5.0) -> int:
        """Wait for the host to exit (raises subprocess.TimeoutExpired after ``timeout``
        seconds), then for the readers to collect the rest of its output."""
        code = self.proc.wait(timeout=timeout)
        self._join_readers()
        return code

    def close(self) -> None:
        """Close stdin, wait for the host to exit (killed after 5 s), join the readers."""
        self.close_stdin()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._join_readers()

    def __enter__(self) -> HostProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

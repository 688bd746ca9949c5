"""Helpers for the end-to-end tests of isolated workers (tests/test_workers_*.py)."""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.hostproc import TOOLS_DIR, HostProcess

WORKER_TOOLS = str(TOOLS_DIR / "worker_tools.py")

ISOLATIONS = ("process", "none")


def isolation_args(mode: str) -> list[str]:
    """The command-line arguments selecting isolation ``mode`` ("process" or "none")."""
    return ["--isolation", mode]


def host_args(
    tmp_path: Path, isolation: str, tools: Sequence[str] = (WORKER_TOOLS,), *extra: str
) -> list[str]:
    """``toolwire serve`` arguments: rooted in ``tmp_path``, only ``tools``, no built-ins."""
    return [
        "--root",
        str(tmp_path),
        "--no-builtins",
        "--no-entry-points",
        "--tools",
        *tools,
        *isolation_args(isolation),
        *extra,
    ]


@contextmanager
def worker_host(
    tmp_path: Path,
    isolation: str = "process",
    extra: Sequence[str] = (),
    *,
    tools: Sequence[str] = (WORKER_TOOLS,),
    env: dict[str, str] | None = None,
) -> Iterator[HostProcess]:
    """An initialized host serving ``tools`` (default tests/fixtures/worker_tools.py)."""
    with HostProcess(host_args(tmp_path, isolation, tools, *extra), env=env) as h:
        resp = h.initialize()
        assert "result" in resp, (resp, h.stderr)
        yield h


def call_msg(id: Any, name: str, arguments: dict[str, Any], token: Any = None) -> dict[str, Any]:
    """A tools/call request, with a progress token when ``token`` is given."""
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


def wait_for_message(
    h: HostProcess, pred: Callable[[Any], bool], timeout: float, what: str
) -> dict[str, Any]:
    """The first message (from now on) satisfying ``pred``; the others stay for later reads.

    Fails with an AssertionError naming ``what`` and the seconds waited when none arrives
    within ``timeout``, or when the host closes its output first.
    """
    skipped: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"no {what} within {timeout} s; other messages: {skipped!r}; "
                    f"stderr:\n{h.stderr}"
                )
            try:
                m = h.recv(timeout=left)
            except queue.Empty:
                continue
            if m is None:
                raise AssertionError(f"host closed stdout before {what}; stderr:\n{h.stderr}")
            if pred(m):
                return m  # type: ignore[no-any-return]
            skipped.append(m)
    finally:
        h._stash[:0] = skipped


def is_progress(token: Any) -> Callable[[Any], bool]:
    """A predicate: a notifications/progress message for ``token``."""

    def pred(m: Any) -> bool:
        return (
            isinstance(m, dict)
            and m.get("method") == "notifications/progress"
            and m["params"].get("progressToken") == token
        )

    return pred


def is_method(method: str) -> Callable[[Any], bool]:
    """A predicate: a message (notification or request) with ``method``."""

    def pred(m: Any) -> bool:
        return isinstance(m, dict) and m.get("method") == method

    return pred


def text_of_result(result: dict[str, Any]) -> str:
    """The joined text blocks of a CallToolResult."""
    return "\n".join(b["text"] for b in result.get("content", []) if b.get("type") == "text")


def data_of(result: dict[str, Any]) -> Any:
    """The JSON value a tool returned (its text block parsed), failing on error results."""
    assert "isError" not in result, result
    return json.loads(text_of_result(result))


def worker_pids(root: Path) -> list[int]:
    """Live processes whose command line names the worker module and ``root``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if "toolwire.host.workers.worker" in cmdline and str(root) in cmdline and state != "Z":
            pids.append(int(entry.name))
    return pids

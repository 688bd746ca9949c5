"""Escape attempts against the host's own resources, through the real host.

A model that cannot leave the root can still try to wedge or exhaust the host
process itself: a glob that makes a backtracking matcher run for ever on the event
loop (then ping, cancellation and timeouts stop working), or a small call that
makes the host load, decode or copy far more than it answers (a one-line read of a
huge file, an image that decompresses to gigabytes, a fuzzy edit of a huge file,
grep over one enormous line). Each attempt here asserts what proves it contained:
the host keeps answering ``ping`` while the call runs, and the host's peak resident
memory (``VmHWM``) grows by far less than the file or image involved. Bounds are
generous (behaviour, not speed); the code before the fix fails each of them by a
wide margin (it wedged, or grew by about a gigabyte).
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hostproc import HostProcess

PATHOLOGICAL = "*a*a*a*a*a*a*a*a*a*a*a*a*b"
"""Backtracks for ever (O(n^12)) in a regex translation of the glob."""

MiB = 1 << 20


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "root"
    r.mkdir()
    return r


@pytest.fixture
def host(root: Path) -> Iterator[HostProcess]:
    with HostProcess(["--root", str(root), "--sandbox", "none", "--timeout", "60"]) as h:
        assert "result" in h.initialize()
        yield h


def vm_hwm(h: HostProcess) -> int:
    """The host's peak resident memory so far, in bytes (Linux ``VmHWM``)."""
    for line in Path(f"/proc/{h.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/<pid>/status")


def start_call(h: HostProcess, name: str, arguments: dict[str, Any], id: str) -> None:
    h.send(
        {
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    )


def ping_answers(h: HostProcess, timeout: float = 10.0) -> bool:
    """True when the host answers a ping within ``timeout`` seconds."""
    try:
        resp = h.request("ping", {}, timeout=timeout)
    except queue.Empty:
        return False
    return resp.get("result") == {}


def text_of(resp: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in resp["result"]["content"])


# ------------------------------------------------------------------ glob backtracking


@pytest.mark.parametrize("tool", ["find", "grep"])
def test_pathological_glob_does_not_wedge_the_host(
    host: HostProcess, root: Path, tool: str
) -> None:
    name = "a" * 200  # a long name of only 'a': every split is tried by a backtracker
    (root / name).write_text("needle\n")
    keep = "xa" * 12 + "b"  # matches
    (root / keep).write_text("needle\n")
    args = (
        {"pattern": PATHOLOGICAL} if tool == "find" else {"pattern": "needle", "glob": PATHOLOGICAL}
    )
    start_call(host, tool, args, "glob")
    assert ping_answers(host), "the host stopped answering ping while matching the glob"
    resp = host.recv_response("glob", timeout=30)
    assert "result" in resp and not resp["result"].get("isError"), resp
    out = text_of(resp)
    assert keep in out and name not in out


def test_glob_with_many_alternatives_is_refused_not_expanded(host: HostProcess) -> None:
    resp = host.call("find", {"pattern": "{a,b}" * 40})
    assert resp["result"]["isError"] and "alternatives" in text_of(resp)

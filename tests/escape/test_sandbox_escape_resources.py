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
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e_helpers import vm_hwm
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


# ------------------------------------------------------------------ memory and CPU amplification


def call_with_pings(
    h: HostProcess, name: str, arguments: dict[str, Any], *, ping_within: float = 5.0
) -> tuple[dict[str, Any], int]:
    """Run a call while pinging the host back to back; every ping must be answered
    within ``ping_within`` seconds. Returns the call's response and the number of
    pings answered while it ran."""
    start_call(h, name, arguments, "big")
    pings = 0
    deadline = time.monotonic() + 120
    while not any(isinstance(m, dict) and m.get("id") == "big" for m in h._stash):
        assert time.monotonic() < deadline, "the call did not finish within 120 s"
        assert ping_answers(h, ping_within), (
            f"ping not answered within {ping_within} s while {name} ran "
            f"(after {pings} answered pings)"
        )
        pings += 1
    return h.recv_response("big"), pings


def grown(h: HostProcess, before: int) -> int:
    return vm_hwm(h) - before


def test_read_one_line_of_a_big_file_keeps_memory_flat(host: HostProcess, root: Path) -> None:
    # 300 MB of 100-byte lines (3 million): the old read loaded, decoded and split
    # all of it (about 1 GB more resident memory) to answer one line.
    line = b"x" * 99 + b"\n"
    with open(root / "big.log", "wb") as f:
        block = line * 10_000
        for _ in range(300):
            f.write(block)
    before = vm_hwm(host)
    resp, _ = call_with_pings(host, "read", {"path": "big.log", "offset": 2, "limit": 1})
    growth = grown(host, before)
    out = text_of(resp)
    assert out.startswith("x" * 99 + "\n")
    assert "[2999998 more lines in the file. Use offset=3 to continue.]" in out
    assert growth < 50 * MiB, f"host grew by {growth / MiB:.0f} MiB to read one line"


def test_read_limit_one_of_many_short_lines(host: HostProcess, root: Path) -> None:
    # 20 MB of 2-byte lines: ten million line objects in the old read (~930 MB).
    (root / "short.txt").write_bytes(b"y\n" * 10_000_000)
    before = vm_hwm(host)
    resp = host.call("read", {"path": "short.txt", "limit": 1}, timeout=60)
    growth = grown(host, before)
    assert text_of(resp).startswith("y\n\n[9999999 more lines")
    assert growth < 100 * MiB, f"host grew by {growth / MiB:.0f} MiB"


def _png_header_only_big(width: int, height: int) -> bytes:
    """A valid grayscale PNG of ``width`` x ``height`` zero pixels, compressed
    (a few hundred KB that decode to width*height bytes)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")
        )

    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    comp = zlib.compressobj(9)
    row = bytes(width + 1)  # filter byte 0, then zero pixels
    parts = [comp.compress(row * 1000) for _ in range(height // 1000)]
    parts.append(comp.compress(row * (height % 1000)))
    parts.append(comp.flush())
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", b"".join(parts))
        + chunk(b"IEND", b"")
    )


def test_decompression_bomb_image_is_not_decoded(host: HostProcess, root: Path) -> None:
    # 12000 x 12000 = 144 million pixels (the old read decoded it and converted it
    # to RGBA: ~1.8 GB) in a file of a few hundred KB.
    (root / "bomb.png").write_bytes(_png_header_only_big(12000, 12000))
    before = vm_hwm(host)
    resp, _ = call_with_pings(host, "read", {"path": "bomb.png"})
    growth = grown(host, before)
    assert resp["result"].get("isError"), resp
    assert "12000x12000" in text_of(resp) and "pixels" in text_of(resp)
    assert growth < 100 * MiB, f"host grew by {growth / MiB:.0f} MiB"


def test_fuzzy_edit_of_a_big_file_stays_bounded(host: HostProcess, root: Path) -> None:
    # 20 MB of code-like lines; the oldText only matches fuzzily (smart quotes), so
    # the whole file goes through the fuzzy normaliser. The old edit did it on the
    # event loop (ping stalled ~9 s) with per-character maps (gigabytes).
    body = "".join(f"value_{i} = compute({i}, 'arg')   \n" for i in range(600_000))
    target = "value_300000 = compute(300000, 'arg')"
    (root / "big.py").write_text(body)
    before = vm_hwm(host)
    resp, _ = call_with_pings(
        host,
        "edit",
        {"path": "big.py", "oldText": target.replace("'", "\u2019"), "newText": "changed = 1"},
    )
    growth = grown(host, before)
    assert not resp["result"].get("isError"), resp
    after = (root / "big.py").read_text()
    assert "\nchanged = 1   \n" in after and target not in after
    assert growth < 400 * MiB, f"host grew by {growth / MiB:.0f} MiB"


def test_edit_refuses_a_file_over_its_size_limit(host: HostProcess, root: Path) -> None:
    # SECURITY.md promises 32 MiB; one byte more is refused without being loaded.
    with open(root / "huge.txt", "wb") as f:
        f.truncate(32 * MiB + 1)  # sparse
    before = vm_hwm(host)
    resp = host.call("edit", {"path": "huge.txt", "oldText": "a", "newText": "b"})
    assert resp["result"]["isError"] and "more than the 32.0MB" in text_of(resp)
    assert grown(host, before) < 20 * MiB


def test_grep_over_one_huge_line(host: HostProcess, root: Path) -> None:
    # One 50 MB line: the old grep took ripgrep's JSON event for it whole (and
    # re-joined it chunk by chunk on the event loop: a 15 s stall).
    with open(root / "one.txt", "wb") as f:
        f.write(b"needle ")
        f.write(b"z" * (50 * 1000 * 1000))
        f.write(b"\n")
    before = vm_hwm(host)
    resp, _ = call_with_pings(host, "grep", {"pattern": "needle"})
    growth = grown(host, before)
    out = text_of(resp)
    assert out.startswith("one.txt:1: needle zzz") and "... [truncated]" in out
    assert len(out) < 2000
    assert growth < 100 * MiB, f"host grew by {growth / MiB:.0f} MiB"


def test_fuzzy_edit_in_one_huge_non_ascii_line(host: HostProcess, root: Path) -> None:
    # One 2 MB line of non-ASCII text; the oldText matches only fuzzily. The old
    # edit built two lists of integers per character of the line (65x the line).
    unit = "caf\u00e9 \u201cquoted\u201d \u2014 "
    line = unit * (2 * MiB // len(unit.encode()))
    (root / "wide.txt").write_text("head\n" + line + "TARGET \u201cend\u201d\n")
    before = vm_hwm(host)
    resp, _ = call_with_pings(
        host, "edit", {"path": "wide.txt", "oldText": 'TARGET "end"', "newText": "done"}
    )
    growth = grown(host, before)
    assert not resp["result"].get("isError"), resp
    assert (root / "wide.txt").read_text().endswith(unit + "done\n")
    # Measured: about 24 MiB now, 131 MiB with the per-character tables.
    assert growth < 80 * MiB, f"host grew by {growth / MiB:.0f} MiB"


def test_replace_all_of_millions_is_refused(host: HostProcess, root: Path) -> None:
    (root / "as.txt").write_text("a" * (4 * MiB) + "\n")
    before = vm_hwm(host)
    resp, _ = call_with_pings(
        host, "edit", {"path": "as.txt", "oldText": "a", "newText": "bb", "replaceAll": True}
    )
    growth = grown(host, before)
    assert resp["result"]["isError"] and "more than the 100000 replacements" in text_of(resp)
    assert (root / "as.txt").read_text() == "a" * (4 * MiB) + "\n"
    assert growth < 100 * MiB, f"host grew by {growth / MiB:.0f} MiB"

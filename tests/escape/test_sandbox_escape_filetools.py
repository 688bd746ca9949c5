"""Escape attempts against the host through the file tools' arguments, through the
real host.

A model confined to the root can still hand the file tools arguments that make the
host wedge its event loop (a path of hundreds of thousands of components, resolved
in quadratic time), build absurd trees (a ``write`` that creates thousands of nested
directories), keep working after its call was given up (an ``edit`` that writes the
file after its timeout, so the model believes it did not happen), or allocate far
more than the answer needs (a diff spanning two distant edits, an image whose tiny
file declares tens of millions of pixels). Each attempt asserts the observable
proof: ping keeps being answered, nothing is created, the file is unchanged, the
host's peak resident memory (``VmHWM``) stays small, or the image is refused.
Bounds are generous (behaviour, not speed).
"""

from __future__ import annotations

import io
import queue
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.e2e_helpers import vm_hwm
from tests.host.builtins.support import details
from tests.hostproc import HostProcess

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


def text_of(resp: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in resp["result"]["content"])


def ping_answers(h: HostProcess, timeout: float) -> bool:
    try:
        resp = h.request("ping", {}, timeout=timeout)
    except queue.Empty:
        return False
    return resp.get("result") == {}


def call_with_pings(
    h: HostProcess, name: str, arguments: dict[str, Any], *, ping_within: float = 5.0
) -> dict[str, Any]:
    """Run a call while pinging the host back to back; every ping must be answered
    within ``ping_within`` seconds. Returns the call's response."""
    h.send(
        {
            "jsonrpc": "2.0",
            "id": "big",
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    )
    deadline = time.monotonic() + 120
    while not any(isinstance(m, dict) and m.get("id") == "big" for m in h._stash):
        assert time.monotonic() < deadline, "the call did not finish within 120 s"
        assert ping_answers(h, ping_within), f"ping not answered within {ping_within} s"
    return h.recv_response("big")


# ------------------------------------------------------------------ long and deep paths

LONG = "a/" * 300_000 + "k.py"
"""600 KB of path: resolving it took ~16 s on the event loop (quadratic)."""


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read", {"path": LONG}),
        ("write", {"path": LONG, "content": "x"}),
        ("edit", {"path": LONG, "edits": [{"oldText": "a", "newText": "b"}]}),
        ("ls", {"path": LONG}),
        ("grep", {"pattern": "x", "path": LONG}),
        ("find", {"pattern": "*", "path": LONG}),
    ],
)
def test_very_long_path_is_refused_without_wedging_the_host(
    host: HostProcess, root: Path, tool: str, args: dict[str, Any]
) -> None:
    (root / "a").mkdir()
    resp = call_with_pings(host, tool, args)
    assert resp["result"]["isError"], resp
    assert "4096 bytes" in text_of(resp)
    assert list((root / "a").iterdir()) == []


def test_write_does_not_build_a_deep_tree(host: HostProcess, root: Path) -> None:
    # Under 4096 bytes but 301 components: the old write created 300 nested
    # directories (and 20,000 for "b/" * 20000).
    for path in ("b/" * 300 + "k.py", "b/" * 20_000 + "k.py", "b/" * 2000 + "k.py"):
        resp = host.call("write", {"path": path, "content": "x"}, timeout=60)
        assert resp["result"]["isError"], resp
        assert "at most" in text_of(resp)
        assert not (root / "b").exists()
    # Control: a deep but reasonable path is written.
    ok = "c/" * 100 + "k.py"
    resp = host.call("write", {"path": ok, "content": "x"})
    assert not resp["result"].get("isError"), resp
    assert (root / ok).read_text() == "x"


def test_depth_is_counted_after_resolution(host: HostProcess, root: Path) -> None:
    # A symlink inside the root stands for 200 levels; the argument has 102
    # components but would create 100 more levels below those 200.
    deep = root.joinpath(*(["d"] * 200))
    deep.mkdir(parents=True)
    (root / "deep").symlink_to(deep.relative_to(root))
    resp = host.call("write", {"path": "deep/" + "e/" * 100 + "k.py", "content": "x"})
    assert resp["result"]["isError"], resp
    assert "directories below the root" in text_of(resp)
    assert not (deep / "e").exists()
    # Control: within the bound through the same link.
    resp = host.call("write", {"path": "deep/" + "e/" * 40 + "k.py", "content": "x"})
    assert not resp["result"].get("isError"), resp


# ------------------------------------------------------------------ edit: timeout, diff


def _numbered_lines(n: int) -> str:
    return "".join(f"line {i:08d}\n" for i in range(n))


def test_edit_that_times_out_never_writes(tmp_path: Path) -> None:
    # 1,000 edits of an 8 MB file take far longer than the 1 s timeout. The old edit
    # answered "timed out" and then wrote the file anyway.
    root = tmp_path / "root"
    root.mkdir()
    body = _numbered_lines(800_000)
    (root / "big.txt").write_text(body)
    edits = [{"oldText": f"line {i * 797:08d}\n", "newText": "L\n"} for i in range(1000)]
    with HostProcess(["--root", str(root), "--sandbox", "none", "--timeout", "1"]) as h:
        assert "result" in h.initialize()
        resp = h.call("edit", {"path": "big.txt", "edits": edits}, timeout=120)
        assert resp["result"]["isError"], resp
        assert "timed out" in text_of(resp)
        # The worker has ended by the time the answer is sent (the executor waits for
        # it), so the file is checked after its end.
    assert (root / "big.txt").read_text() == body
    # no temporary file left (the cross-host lock directory is expected)
    assert sorted(p.name for p in root.iterdir()) == [".toolwire", "big.txt"]


def test_edit_cancelled_by_the_client_never_writes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    body = _numbered_lines(800_000)
    (root / "big.txt").write_text(body)
    edits = [{"oldText": f"line {i * 797:08d}\n", "newText": "L\n"} for i in range(1000)]
    with HostProcess(["--root", str(root), "--sandbox", "none", "--timeout", "300"]) as h:
        assert "result" in h.initialize()
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "e",
                "method": "tools/call",
                "params": {"name": "edit", "arguments": {"path": "big.txt", "edits": edits}},
            }
        )
        assert ping_answers(h, 30)  # the call has been read and started
        h.notify("notifications/cancelled", {"requestId": "e", "reason": "test"})
        # A cancelled request gets no answer. Another edit of the same file waits in
        # the host's per-file queue until the cancelled one's worker has ended, so
        # its answer says the first is over (written or not).
        resp = h.call(
            "edit",
            {"path": "big.txt", "edits": [{"oldText": "no such text", "newText": "x"}]},
            timeout=120,
        )
        assert "Could not find" in text_of(resp), resp
    assert (root / "big.txt").read_text() == body, "the cancelled edit wrote the file"
    assert sorted(p.name for p in root.iterdir()) == [".toolwire", "big.txt"]


def test_edit_of_two_distant_lines_keeps_memory_flat(host: HostProcess, root: Path) -> None:
    # 2,000,000 unique lines (28 MB); the first and last line change. The old diff
    # compared every line in between (712 MB peak, 12 s).
    n = 2_000_000
    (root / "uniq.txt").write_text(_numbered_lines(n))
    before = vm_hwm(host)
    edits = [
        {"oldText": "line 00000000\n", "newText": "first\n"},
        {"oldText": f"line {n - 1:08d}\n", "newText": "last\n"},
    ]
    resp = call_with_pings(host, "edit", {"path": "uniq.txt", "edits": edits})
    growth = vm_hwm(host) - before
    assert not resp["result"].get("isError"), resp
    diff = details(resp["result"])["diff"]
    assert "-line 00000000\n+first\n" in diff and "@@ -1,4 +1,4 @@" in diff
    assert f"@@ -{n - 3},4 +{n - 3},4 @@" in diff and "-line 01999999\n+last\n" in diff
    assert growth < 300 * MiB, f"host grew by {growth / MiB:.0f} MiB"
    text = (root / "uniq.txt").read_text()
    assert text.startswith("first\nline 00000001\n") and text.endswith("line 01999998\nlast\n")


# ------------------------------------------------------------------ images


def _png(width: int, height: int, idat: bytes = b"") -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")
        )

    ihdr = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    body = chunk(b"IHDR", ihdr) + (chunk(b"IDAT", idat) if idat else b"") + chunk(b"IEND", b"")
    return b"\x89PNG\r\n\x1a\n" + body


def _grey_png(width: int, height: int) -> bytes:
    """A valid grayscale PNG of zero pixels, compressed to a few KB."""
    comp = zlib.compressobj(9)
    row = bytes(width + 1)
    parts = [comp.compress(row * 500) for _ in range(height // 500)]
    parts.append(comp.compress(row * (height % 500)))
    parts.append(comp.flush())
    return _png(width, height, b"".join(parts))


def test_header_only_png_claiming_ten_gigapixels_is_refused(host: HostProcess, root: Path) -> None:
    # 45 bytes whose header says 100000 x 100000: Pillow's own bomb error used to
    # fall into "cannot decode: pass the small file through as it is".
    data = _png(100_000, 100_000)
    assert len(data) < 100
    (root / "claim.png").write_bytes(data)
    resp = host.call("read", {"path": "claim.png"})
    assert resp["result"].get("isError"), resp
    assert "100000x100000" in text_of(resp) and "pixels" in text_of(resp)
    assert not any(b.get("type") == "image" for b in resp["result"]["content"])


def test_image_over_the_decoded_bytes_budget_is_refused(host: HostProcess, root: Path) -> None:
    # 5000 x 4000 = 20 million pixels (80 MB as RGBA) in a few KB; the old bound
    # (36 million) let it be decoded, converted and scaled (hundreds of MB per read).
    (root / "wide.png").write_bytes(_grey_png(5000, 4000))
    before = vm_hwm(host)
    resp = host.call("read", {"path": "wide.png"}, timeout=60)
    growth = vm_hwm(host) - before
    assert resp["result"].get("isError"), resp
    assert "5000x4000" in text_of(resp) and "16777216" in text_of(resp)
    assert growth < 40 * MiB, f"host grew by {growth / MiB:.0f} MiB"


def _image(mode: str, fmt: str, size: tuple[int, int]) -> bytes:
    img = Image.linear_gradient("L").resize(size)
    if mode == "I;16":
        img = img.convert("I").point(lambda v: v * 200).convert("I;16")
    elif mode == "RGB-GIF":  # frames after the first load as RGB
        frames = [img.convert("RGB"), Image.new("RGB", size, (200, 30, 30))]
        buf = io.BytesIO()
        frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:])
        return buf.getvalue()
    else:
        img = img.convert(mode)
    buf = io.BytesIO()
    img.save(buf, fmt)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("mode", "fmt", "size"),
    [
        ("P", "PNG", (4100, 3000)),
        ("1", "PNG", (4100, 1000)),
        ("L", "PNG", (4100, 1000)),
        ("LA", "PNG", (4100, 1000)),
        ("RGB", "PNG", (4100, 1000)),
        ("RGBA", "PNG", (4100, 1000)),
        ("I;16", "PNG", (4100, 1000)),
        ("P", "GIF", (4100, 1000)),
        ("RGB-GIF", "GIF", (4100, 1000)),
        ("RGB", "WEBP", (4100, 1000)),
        ("RGBA", "WEBP", (4100, 1000)),
        ("RGB", "JPEG", (4100, 1000)),
        ("L", "JPEG", (4100, 1000)),
        ("CMYK", "JPEG", (4100, 1000)),
    ],
)
def test_large_image_of_every_mode_is_scaled(
    host: HostProcess, root: Path, mode: str, fmt: str, size: tuple[int, int]
) -> None:
    name = f"img.{fmt.lower()}"
    (root / name).write_bytes(_image(mode, fmt, size))
    resp = host.call("read", {"path": name}, timeout=60)
    assert not resp["result"].get("isError"), resp
    assert any(b.get("type") == "image" for b in resp["result"]["content"])
    assert f"original {size[0]}x{size[1]}, shown at 2000x" in text_of(resp)

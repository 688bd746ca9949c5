"""The read built-in: lines, offset/limit, truncation notices, images, special files."""

from __future__ import annotations

import base64
import io
import os
import stat
import threading
import time
from pathlib import Path

import pytest
from toolwire.host.truncate import MAX_BYTES

from tests.e2e_helpers import PROMPT
from tests.test_builtin_support import call, details, is_error, text

pytestmark = pytest.mark.anyio

# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def lines(n: int, width: int = 0) -> str:
    return "".join(
        (f"line {i}".ljust(width) if width else f"line {i}") + "\n" for i in range(1, n + 1)
    )


async def test_small_file_exact_content_no_details(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\nthree")
    r = await call(tmp_path, "read", {"path": "a.txt"})
    assert text(r) == "one\ntwo\nthree" and details(r) is None and not is_error(r)


async def test_missing_file(tmp_path: Path) -> None:
    r = await call(tmp_path, "read", {"path": "nope.txt"})
    assert is_error(r) and "not found" in text(r)


async def test_2500_lines_head_truncated(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text(lines(2500))
    r = await call(tmp_path, "read", {"path": "big.txt"})
    t = text(r)
    assert t.startswith("line 1\n") and "line 2000\n" in t and "line 2001" not in t
    assert "[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]" in t
    tr = details(r)["truncation"]
    assert (tr["truncatedBy"], tr["totalLines"], tr["outputLines"]) == ("lines", 2500, 2000)


async def test_byte_limit_notice(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text(lines(500, width=210))
    r = await call(tmp_path, "read", {"path": "wide.txt"})
    tr = details(r)["truncation"]
    assert tr["truncatedBy"] == "bytes" and tr["outputBytes"] <= MAX_BYTES
    end = tr["outputLines"]
    assert (
        f"[Showing lines 1-{end} of 500 (50.0KB limit). Use offset={end + 1} to continue.]"
        in text(r)
    )


async def test_offset_and_limit(tmp_path: Path) -> None:
    (tmp_path / "h.txt").write_text(lines(100))
    r = await call(tmp_path, "read", {"path": "h.txt", "offset": 51})
    assert text(r) == lines(100)[len(lines(50)) :]
    r = await call(tmp_path, "read", {"path": "h.txt", "limit": 10})
    assert text(r).startswith(lines(10))
    assert "[90 more lines in the file. Use offset=11 to continue.]" in text(r)
    r = await call(tmp_path, "read", {"path": "h.txt", "offset": 41, "limit": 20})
    t = text(r)
    assert t.startswith("line 41\n") and "line 60\n" in t and "line 61" not in t
    assert "offset=61" in t


async def test_offset_past_end(tmp_path: Path) -> None:
    (tmp_path / "s.txt").write_text("a\nb\nc\n")
    r = await call(tmp_path, "read", {"path": "s.txt", "offset": 100})
    assert is_error(r) and "Offset 100" in text(r) and "3 lines" in text(r)


async def test_empty_file(tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_text("")
    r = await call(tmp_path, "read", {"path": "e.txt"})
    assert not is_error(r) and text(r) == "(empty file)"


async def test_single_overlong_line(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("short\n" + "x" * 70_000 + "\n")
    r = await call(tmp_path, "read", {"path": "long.txt", "offset": 2})
    t = text(r)
    assert "Line 2" in t and "sed -n '2p'" in t and "head -c 51200" in t
    assert details(r)["truncation"]["firstLineExceedsLimit"] is True


async def test_png_in_txt_is_an_image(tmp_path: Path) -> None:
    (tmp_path / "pic.txt").write_bytes(PNG)
    r = await call(tmp_path, "read", {"path": "pic.txt"})
    blocks = r["content"]
    assert blocks[0]["type"] == "text" and "image/png" in blocks[0]["text"]
    assert blocks[1] == {
        "type": "image",
        "data": base64.b64encode(PNG).decode(),
        "mimeType": "image/png",
    }


async def test_text_in_png_is_text(tmp_path: Path) -> None:
    (tmp_path / "fake.png").write_text("just text\n")
    r = await call(tmp_path, "read", {"path": "fake.png"})
    assert text(r) == "just text\n"


@pytest.mark.parametrize(
    ("magic", "mime"),
    [
        (b"\xff\xd8\xff\xe0", "image/jpeg"),
        (b"GIF89a", "image/gif"),
        (b"RIFF\0\0\0\0WEBPVP8 ", "image/webp"),
    ],
)
def test_magic_detection(magic: bytes, mime: str) -> None:
    from toolwire.host.builtins.read import detect_image

    assert detect_image(magic + b"\0" * 8) == mime
    assert detect_image(b"plain text here!") is None


async def test_large_image_is_scaled(tmp_path: Path) -> None:
    import PIL.Image as pil  # a dependency of the project: never skipped

    img = pil.new("RGB", (4000, 1000), (10, 200, 30))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    (tmp_path / "wide.png").write_bytes(buf.getvalue())
    r = await call(tmp_path, "read", {"path": "wide.png"})
    note = r["content"][0]["text"]
    assert "4000x1000" in note and "2000x500" in note and "2.00" in note
    out = pil.open(io.BytesIO(base64.b64decode(r["content"][1]["data"])))
    assert out.size == (2000, 500)


async def test_invalid_utf8_replaced_and_said(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9\n")
    r = await call(tmp_path, "read", {"path": "latin.txt"})
    assert "caf\ufffd" in text(r) and "not valid UTF-8" in text(r)


async def test_directory_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    r = await call(tmp_path, "read", {"path": "d"})
    assert is_error(r) and "directory" in text(r)


@pytest.mark.parametrize("kind", ["fifo", "device", "device-link"])
async def test_fifo_and_device_refused_without_blocking(tmp_path: Path, kind: str) -> None:
    name = "special"
    if kind == "fifo":
        os.mkfifo(tmp_path / name)
    elif kind == "device":
        try:  # /dev/zero's numbers; needs CAP_MKNOD (root)
            os.mknod(tmp_path / name, stat.S_IFCHR | 0o666, os.makedev(1, 5))
        except PermissionError:
            pytest.skip("creating a device node needs CAP_MKNOD")
    else:
        (tmp_path / name).symlink_to("/dev/zero")
    start = time.monotonic()
    r = await call(tmp_path, "read", {"path": name})
    assert is_error(r) and time.monotonic() - start < PROMPT
    expected = {"fifo": "FIFO", "device": "character device", "device-link": "outside the root"}
    assert expected[kind] in text(r)


async def test_fifo_swapped_in_is_not_opened_blocking(tmp_path: Path) -> None:
    # open_regular uses O_NONBLOCK and fstat: even a direct call on a FIFO returns.
    from toolwire.host.builtins._common import open_regular
    from toolwire.host.results import ToolError

    os.mkfifo(tmp_path / "p")
    done = threading.Event()

    def attempt() -> None:
        try:
            open_regular(tmp_path / "p", "p")
        except ToolError:
            done.set()

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    assert done.wait(2)


async def test_path_outside_root_refused(tmp_path: Path) -> None:
    r = await call(tmp_path, "read", {"path": "/etc/passwd"})
    assert is_error(r) and "outside the root" in text(r)
    r = await call(tmp_path, "read", {"path": "../../etc/passwd"})
    assert is_error(r) and "outside the root" in text(r)

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
from toolwire.host.builtins.truncate import MAX_BYTES

from tests.e2e_helpers import PROMPT
from tests.host.builtins.support import call, details, is_error, text

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
    from toolwire.host.tools.results import ToolError

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


# ------------------------------------------------------------------ binary and UTF-16/32 (end to end)


def _sqlite_db(path: Path) -> None:
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("create table t (x text)")
    con.execute("insert into t values ('needle in a database')")
    con.commit()
    con.close()


def _zip(path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        z.writestr("inner.txt", "needle in a zip\n")


def _gzip(path: Path) -> None:
    import gzip

    path.write_bytes(gzip.compress(b"needle in gzip\n" * 100))


BINARY_KINDS = {
    "db.sqlite": (_sqlite_db, "SQLite database"),
    "a.zip": (_zip, "zip archive"),
    "a.gz": (_gzip, "gzip-compressed data"),
    "prog": (lambda p: p.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(200)), "ELF"),
    "doc.pdf": (lambda p: p.write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\nneedle\n"), "PDF document"),
    "blob.bin": (lambda p: p.write_bytes(b"needle\x00\x01\x02" * 50), "NUL bytes"),
}


@pytest.mark.parametrize("name", sorted(BINARY_KINDS))
def test_binary_file_is_described_not_dumped(inproc_host, tmp_path: Path, name: str) -> None:  # type: ignore[no-untyped-def]
    make, kind = BINARY_KINDS[name]
    make(tmp_path / name)
    size = (tmp_path / name).stat().st_size
    inproc_host.initialize()
    resp = inproc_host.call("read", {"path": name})
    result = resp["result"]
    out = "\n".join(b["text"] for b in result["content"])
    assert not result.get("isError") and "\x00" not in out
    assert f"{name} is a binary file" in out and kind in out and f"{size} bytes" in out
    assert len(out) < 400
    resp = inproc_host.call("read", {"path": name, "offset": 2, "limit": 1})
    assert "is a binary file" in resp["result"]["content"][0]["text"]


@pytest.mark.parametrize(
    ("codec", "bom"),
    [
        ("utf-16-le", b"\xff\xfe"),
        ("utf-16-be", b"\xfe\xff"),
        ("utf-32-le", b"\xff\xfe\x00\x00"),
        ("utf-32-be", b"\x00\x00\xfe\xff"),
    ],
)
def test_utf16_and_utf32_with_bom_are_decoded(
    inproc_host, tmp_path: Path, codec: str, bom: bytes
) -> None:  # type: ignore[no-untyped-def]
    content = "".join(f"ligne {i} – café ✓\n" for i in range(1, 3001))
    (tmp_path / "wide.txt").write_bytes(bom + content.encode(codec))
    inproc_host.initialize()
    resp = inproc_host.call("read", {"path": "wide.txt", "offset": 2999})
    out = resp["result"]["content"][0]["text"]
    assert "ligne 2999 – café ✓\nligne 3000 – café ✓\n" in out
    assert "\x00" not in out and "\ufffd" not in out and "byte-order mark" in out
    resp = inproc_host.call("read", {"path": "wide.txt"})
    out = resp["result"]["content"][0]["text"]
    assert "ligne 1 – café ✓\n" in out and "Showing lines 1-2000 of 3000" in out


def test_grep_never_prints_binary_lines(inproc_host, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _sqlite_db(tmp_path / "db.sqlite")
    (tmp_path / "blob.bin").write_bytes(b"needle one\n\x00\x01needle two\n")
    (tmp_path / "text.txt").write_text("a needle in text\n")
    (tmp_path / "u16.txt").write_bytes(b"\xff\xfe" + "needle in utf-16\n".encode("utf-16-le"))
    inproc_host.initialize()
    resp = inproc_host.call("grep", {"pattern": "needle"})
    out = "\n".join(b["text"] for b in resp["result"]["content"])
    assert "\x00" not in out
    lines = sorted(out.split("\n\n")[0].split("\n"))
    assert lines == ["text.txt:1: a needle in text", "u16.txt:1: needle in utf-16"]
    resp = inproc_host.call("grep", {"pattern": "needle", "path": "blob.bin"})
    out = "\n".join(b["text"] for b in resp["result"]["content"])
    assert "\x00" not in out and "needle two" not in out
    assert "Binary file matches, lines not shown: blob.bin" in out


@pytest.mark.parametrize("start", ["BMW cars\n", "ID3 tags\n", "BZh\n", "%PDF- notes\n", "OggS\n"])
async def test_text_starting_like_a_magic_number_is_text(tmp_path: Path, start: str) -> None:
    (tmp_path / "t.txt").write_text(start + "more text\n")
    r = await call(tmp_path, "read", {"path": "t.txt"})
    assert text(r) == start + "more text\n"


async def test_jpeg_over_the_pixel_bound_is_decoded_reduced(tmp_path: Path) -> None:
    # 7000 x 6000 = 42 million pixels, over the pixel bound: the JPEG decoder
    # scales it by 1/8 while decoding, so it is shown (scaled) rather than refused.
    pil = pytest.importorskip("PIL.Image")
    buf = io.BytesIO()
    pil.new("L", (7000, 6000), 128).save(buf, "JPEG", quality=50)
    (tmp_path / "huge.jpg").write_bytes(buf.getvalue())
    r = await call(tmp_path, "read", {"path": "huge.jpg"})
    assert not is_error(r), text(r)
    note = r["content"][0]["text"]
    assert "original 7000x6000" in note and "image/jpeg" in note
    out = pil.open(io.BytesIO(base64.b64decode(r["content"][1]["data"])))
    assert max(out.size) <= 2000


# ------------------------------------------------------------------ damaged images (end to end)


def _image(fmt: str) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    if fmt == "AGIF":  # an animation: the later frames are what a cut file loses
        frames = [Image.new("P", (24, 24), i) for i in range(3)]
        frames[0].save(buf, "GIF", save_all=True, append_images=frames[1:])
    else:
        Image.new("RGB", (64, 48), (200, 10, 30)).save(buf, fmt)
    return buf.getvalue()


def _damaged(fmt: str, how: str) -> bytes:
    good = _image(fmt)
    if how == "random":  # the magic number, then noise
        return good[:16] + bytes((i * 97 + 13) % 256 for i in range(400))
    if how == "half":
        return good[: len(good) // 2]
    if how == "last-byte":
        return good[:-1]
    mid = len(good) // 2  # one byte flipped in the middle
    return good[:mid] + bytes([good[mid] ^ 0xFF]) + good[mid + 1 :]


DAMAGED = [
    (fmt, how)
    for fmt in ("PNG", "JPEG", "GIF", "AGIF", "WEBP")
    for how in ("random", "half", "last-byte", "flipped")
    # A flipped bit in JPEG's entropy-coded data still decodes (to other pixels): the
    # format has no checksum, and providers take such a file too.
    if (fmt, how) != ("JPEG", "flipped")
]


@pytest.mark.parametrize(("fmt", "how"), DAMAGED)
def test_a_damaged_image_is_described_not_sent(
    inproc_host, tmp_path: Path, fmt: str, how: str
) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("PIL.Image")
    data = _damaged(fmt, how)
    (tmp_path / "pic").write_bytes(data)
    inproc_host.initialize()
    result = inproc_host.call("read", {"path": "pic"})["result"]
    assert [b["type"] for b in result["content"]] == ["text"], result
    out = result["content"][0]["text"]
    assert out.startswith("pic starts like a image/") and "it is not shown" in out, out
    assert f"({len(data)} bytes)" in out
    # the whole image still reads as an image
    (tmp_path / "pic").write_bytes(_image(fmt))
    result = inproc_host.call("read", {"path": "pic"})["result"]
    assert [b["type"] for b in result["content"]] == ["text", "image"], result

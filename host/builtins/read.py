"""The ``read`` tool: a text file's lines (with offset/limit), an image, or a short
description of a binary file.

Text is streamed: the file is decoded chunk by chunk in a worker thread and only
the lines the answer shows are kept (at most :data:`~toolwire.host.builtins.truncate.MAX_LINES`
lines and :data:`~toolwire.host.builtins.truncate.MAX_BYTES` bytes); the other lines are only
counted, so the "more lines" notes stay exact while memory stays bounded by the
answer. Images are measured from their header before any pixel is decoded.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import shlex
import struct
import threading
import zlib
from dataclasses import dataclass, field
from typing import IO, Annotated, Any, Literal

import anyio.from_thread
import anyio.to_thread

from ..sandbox.env import ExecEnv
from ..sandbox.paths import resolve_output_file, resolve_read_path
from ..schema.hints import Param
from ..tools.context import ToolContext
from ..tools.results import ToolError, ToolResult, image_block
from ._common import builtin_tool, display_path, open_regular
from .truncate import MAX_BYTES, MAX_LINES, Truncation, format_size

__all__ = [
    "IMAGE_MAX_BYTES",
    "IMAGE_MAX_PIXELS",
    "IMAGE_MAX_SIDE",
    "detect_binary",
    "detect_image",
    "detect_text_encoding",
    "fit_image",
    "image_problem",
    "read",
]

IMAGE_MAX_SIDE = 2000
"""Images are scaled down to fit this many pixels on each side."""

IMAGE_MAX_BYTES = int(4.5 * 1024 * 1024)
"""Images are re-encoded (and scaled further) until their encoding fits 4.5 MB."""

IMAGE_MAX_DECODED_BYTES = 64 * 1024 * 1024
"""Most bytes one decoded image may take (64 MiB), counted as 4 bytes per pixel (the
RGBA the host converts to): this is what bounds a read's memory, whatever the file's
size on disk (a 1 KB WebP can declare 16383x2000 pixels)."""

IMAGE_MAX_PIXELS = IMAGE_MAX_DECODED_BYTES // 4
"""Most pixels the host decodes for one image: 16,777,216 (5K, 5120x2880, fits;
8K UHD does not). The size comes from the image's header, before decoding; a JPEG is
decoded at 1/2, 1/4 or 1/8 of its size when that brings it under the bound (so an 8K
or 48-megapixel photo is read). Larger images are refused, so an image file that
decompresses to gigabytes is never decompressed."""

_REDUCIBLE_MODES = frozenset({"L", "RGB", "RGBA"})
"""Modes ``Image.reduce`` takes and that convert to RGB/RGBA afterwards; images in
other modes (1, P, I;16, LA, CMYK, ...) are converted before they are reduced."""

_CHUNK = 1 << 20
"""Bytes read and decoded at a time."""

_SNIFF = 8192
"""Bytes of the file's start examined for NUL bytes and magic numbers."""

_BOMS: tuple[tuple[bytes, str, str], ...] = (
    (b"\xff\xfe\x00\x00", "utf-32", "UTF-32LE"),
    (b"\x00\x00\xfe\xff", "utf-32", "UTF-32BE"),
    (b"\xff\xfe", "utf-16", "UTF-16LE"),
    (b"\xfe\xff", "utf-16", "UTF-16BE"),
)

_MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (0, b"SQLite format 3\x00", "SQLite database"),
    (0, b"PK\x03\x04", "zip archive (also jar, docx, xlsx, apk, wheel)"),
    (0, b"PK\x05\x06", "zip archive (empty)"),
    (0, b"PK\x07\x08", "zip archive (spanned)"),
    (0, b"\x1f\x8b", "gzip-compressed data"),
    (0, b"BZh", "bzip2-compressed data"),
    (0, b"\xfd7zXZ\x00", "xz-compressed data"),
    (0, b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (0, b"7z\xbc\xaf\x27\x1c", "7-zip archive"),
    (0, b"Rar!\x1a\x07", "RAR archive"),
    (257, b"ustar", "tar archive"),
    (0, b"\x7fELF", "ELF executable or library"),
    (0, b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (0, b"\xca\xfe\xba\xbe", "Java class file or Mach-O universal binary"),
    (0, b"\x00asm", "WebAssembly module"),
    (0, b"%PDF-", "PDF document"),
    (0, b"II*\x00", "TIFF image"),
    (0, b"MM\x00*", "TIFF image"),
    (0, b"BM", "BMP image"),
    (0, b"\x00\x00\x01\x00", "ICO image"),
    (0, b"OggS", "Ogg media"),
    (0, b"fLaC", "FLAC audio"),
    (0, b"ID3", "MP3 audio"),
    (0, b"\x1aE\xdf\xa3", "Matroska/WebM media"),
    (4, b"ftyp", "MP4/QuickTime media"),
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "Microsoft Office (OLE) document"),
)


def detect_image(head: bytes) -> str | None:
    """The MIME type of an image recognised by its magic bytes (PNG, JPEG, GIF, WebP)."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def detect_text_encoding(head: bytes) -> tuple[str, str, int] | None:
    """``(codec, name, BOM length)`` for text starting with a UTF-16 or UTF-32
    byte-order mark; None otherwise (UTF-8, with or without its BOM, is the default)."""
    for bom, codec, name in _BOMS:
        if head.startswith(bom):
            return codec, name, len(bom)
    return None


def detect_binary(head: bytes) -> str | None:
    """What kind of binary file ``head`` (the file's first bytes) starts, or None
    for text: a known magic number names the kind; otherwise a NUL byte in the
    first :data:`_SNIFF` bytes means "binary data". Text with a UTF-16/UTF-32
    byte-order mark is text (it has NUL bytes by nature)."""
    if detect_text_encoding(head) is not None:
        return None
    sniff = head[:_SNIFF]
    textual = b"\x00" not in sniff and _valid_utf8_prefix(sniff)
    for offset, magic, kind in _MAGIC:
        if head[offset : offset + len(magic)] == magic:
            # A magic number of plain letters ("BM", "ID3", "%PDF-") at the start of
            # valid UTF-8 text is more likely text ("BMW ...") than that format.
            if textual and magic.isascii() and magic.decode("ascii").isprintable():
                continue
            return kind
    if b"\x00" in sniff:
        return "binary data (NUL bytes)"
    return None


def _valid_utf8_prefix(data: bytes) -> bool:
    """True when ``data`` is valid UTF-8, a character cut at its end aside."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _open_image(source: IO[bytes], mime: str) -> tuple[Any, int, int]:
    """Open an image lazily (header only) and check its pixel count."""
    from PIL import Image

    def refuse(width: int, height: int) -> ToolError:
        return ToolError(
            f"The image is {width}x{height} pixels, more than the {IMAGE_MAX_PIXELS} pixels "
            f"({format_size(IMAGE_MAX_DECODED_BYTES)} decoded) the host decodes; scale it "
            "down with bash (e.g. ImageMagick's convert) first"
        )

    try:
        img: Any = Image.open(source)
    except Image.DecompressionBombError:
        # Pillow's own bound (twice its MAX_IMAGE_PIXELS) is far above ours: refuse it
        # as ours, reading the size from the header again without Pillow's check.
        raise refuse(*_header_size(source)) from None
    width, height = img.size
    if mime == "image/jpeg" and width * height > IMAGE_MAX_PIXELS:
        # The JPEG decoder scales by 1/2, 1/4 or 1/8 while decoding.
        img.draft("RGB", (max(1, width // 8), max(1, height // 8)))
    w, h = img.size if mime == "image/jpeg" else (width, height)
    if w * h > IMAGE_MAX_PIXELS:
        raise refuse(width, height)
    return img, width, height


def _header_size(source: IO[bytes]) -> tuple[int, int]:
    """``(width, height)`` from an image's header, opened with Pillow's bomb check
    off for this one call (nothing is decoded); ``(0, 0)`` when it cannot be read."""
    from PIL import Image

    source.seek(0)
    saved = Image.MAX_IMAGE_PIXELS
    try:
        Image.MAX_IMAGE_PIXELS = None
        with Image.open(source) as img:
            w, h = img.size
        return int(w), int(h)
    except Exception:
        return 0, 0
    finally:
        Image.MAX_IMAGE_PIXELS = saved


def _convert(img: Any, target: str) -> Any:
    """``img`` in mode ``target`` (RGB or RGBA); 16- and 32-bit greyscale (I;16, I, F)
    are scaled to 8 bits first, as Pillow converts those only to a few modes."""
    if img.mode == target:
        return img
    if img.mode.startswith("I;16") or img.mode in ("I", "F"):
        img = img.convert("I") if img.mode.startswith("I;16") else img
        hi = img.getextrema()[1] or 1
        img = img.point(lambda v: v * (255 / hi) if hi > 255 else v).convert("L")
    return img.convert(target)


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _structure_problem(source: IO[bytes], mime: str, size: int) -> str | None:
    """What is wrong with the layout of an image file, or None: the checks a decoder
    that stops at the first frame (Pillow's ``load``) does not make.

    * PNG (ISO/IEC 15948 §5.3): every chunk is whole and its CRC-32 matches, and the
      chunks run up to ``IEND``;
    * GIF (GIF89a §27): the blocks run, each whole, up to the trailer byte 0x3B;
    * WebP (RIFF container): the RIFF size covers the file (a cut file is shorter);
    * JPEG: left to the decoder, which reports a cut file.
    """
    source.seek(0)
    if mime == "image/png":
        source.seek(len(_PNG_SIGNATURE))
        while True:
            head = source.read(8)
            if len(head) < 8:
                return "the file ends before its IEND chunk (it is cut short)"
            length, kind = struct.unpack(">I4s", head)
            name = kind.decode("latin-1")
            crc = zlib.crc32(kind)
            left = length
            while left:
                piece = source.read(min(left, _CHUNK))
                if not piece:
                    return f"the file ends inside its {name!r} chunk (it is cut short)"
                crc = zlib.crc32(piece, crc)
                left -= len(piece)
            stored = source.read(4)
            if len(stored) < 4:
                return f"the file ends inside its {name!r} chunk (it is cut short)"
            if struct.unpack(">I", stored)[0] != crc:
                return f"the CRC of its {name!r} chunk does not match (the data is damaged)"
            if kind == b"IEND":
                return None
    if mime == "image/gif":
        return _gif_problem(source)
    if mime == "image/webp":
        head = source.read(12)
        declared = struct.unpack("<I", head[4:8])[0] + 8
        if declared > size:
            return (
                f"its RIFF header declares {declared} bytes but the file has {size} "
                "(it is cut short)"
            )
    return None


def _gif_problem(source: IO[bytes]) -> str | None:
    """The block walk of :func:`_structure_problem` for a GIF (header, logical screen,
    tables, extensions and images, up to the trailer)."""
    cut = "the file ends before its trailer (it is cut short)"

    def skip(n: int) -> bool:
        return n == 0 or len(source.read(n)) == n

    def sub_blocks() -> bool:
        while True:
            b = source.read(1)
            if not b:
                return False
            if b[0] == 0:
                return True
            if not skip(b[0]):
                return False

    screen = source.read(13)
    if len(screen) < 13:
        return cut
    if screen[10] & 0x80 and not skip(3 << ((screen[10] & 7) + 1)):
        return cut
    while True:
        b = source.read(1)
        if not b:
            return cut
        if b == b";":
            return None
        if b == b"!":
            if not skip(1) or not sub_blocks():
                return cut
        elif b == b",":
            desc = source.read(9)
            if len(desc) < 9:
                return cut
            if desc[8] & 0x80 and not skip(3 << ((desc[8] & 7) + 1)):
                return cut
            if not skip(1) or not sub_blocks():
                return cut
        else:
            return f"it holds an unknown block 0x{b[0]:02x} (the data is damaged)"


def image_problem(source: IO[bytes], mime: str, size: int) -> str | None:
    """Why the image in ``source`` (a seekable file of ``size`` bytes starting with the
    magic number of ``mime``) cannot be shown, or None when it decodes.

    A provider refuses a whole request holding an image it cannot decode ("Could not
    process image"), and some clients keep that image in every later turn: so an
    image is only sent after its layout checks out (:func:`_structure_problem`) and
    Pillow decodes it (``verify``, then ``load`` of its first frame; the pixel bound of
    :data:`IMAGE_MAX_PIXELS` is checked from the header first, and an image over it is
    left to :func:`fit_image`, which refuses or reduces it).
    """
    problem = _structure_problem(source, mime, size)
    if problem is not None:
        return problem
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:  # pragma: no cover - Pillow is a dependency
        return None
    try:
        source.seek(0)
        with Image.open(source) as img:
            img.verify()
        source.seek(0)
        img, _, _ = _open_image(source, mime)
        with img:
            img.load()
    except (ToolError, Image.DecompressionBombError):
        return None  # over the pixel bound: fit_image refuses or reduces it
    except Exception as exc:
        why = str(exc) if not isinstance(exc, UnidentifiedImageError) else ""
        return f"it cannot be decoded ({why or 'the decoder does not recognise its data'})"
    finally:
        source.seek(0)
    return None


def fit_image(
    data: bytes | IO[bytes], mime: str, size: int | None = None
) -> tuple[bytes, str, str | None]:
    """Scale an image to fit :data:`IMAGE_MAX_SIDE` and :data:`IMAGE_MAX_BYTES`.

    ``data`` is the encoded image or a seekable binary file holding it (``size``
    bytes). Returns ``(data, mime, note)``: the original bytes and no note when it
    already fits; otherwise the re-encoded image and a note giving the original and
    shown sizes and the factor mapping shown coordinates back to the original.
    The pixel count is read from the header and checked against
    :data:`IMAGE_MAX_PIXELS` before anything is decoded.

    Raises:
        ToolError: the image has too many pixels, or does not fit and cannot be
            scaled (Pillow missing or the file cannot be decoded).
    """
    source: IO[bytes] = io.BytesIO(data) if isinstance(data, bytes) else data
    if size is None:
        size = source.seek(0, os.SEEK_END)
        source.seek(0)

    def raw() -> bytes:
        source.seek(0)
        return source.read(size)

    try:
        from PIL import Image
    except ImportError:
        if size <= IMAGE_MAX_BYTES:
            return raw(), mime, None
        raise ToolError(
            f"The image is {format_size(size)}, over the {format_size(IMAGE_MAX_BYTES)} "
            "limit, and Pillow is not installed to scale it down"
        ) from None
    try:
        img, width, height = _open_image(source, mime)
    except ToolError:
        raise
    except Exception as exc:
        if size <= IMAGE_MAX_BYTES:
            return raw(), mime, None
        raise ToolError(f"Cannot decode the image to scale it: {exc}") from None
    if width <= IMAGE_MAX_SIDE and height <= IMAGE_MAX_SIDE and size <= IMAGE_MAX_BYTES:
        return raw(), mime, None
    scale = min(1.0, IMAGE_MAX_SIDE / width, IMAGE_MAX_SIDE / height)
    out_format = {"image/jpeg": "JPEG", "image/webp": "WEBP"}.get(mime, "PNG")
    out_mime = {"JPEG": "image/jpeg", "WEBP": "image/webp", "PNG": "image/png"}[out_format]
    with contextlib.suppress(Exception):
        img.seek(0)
    try:
        img.load()
    except Exception as exc:
        raise ToolError(f"Cannot decode the image to scale it: {exc}") from None
    # Shrink by a whole factor first (cheap, and it frees the full-size pixels
    # before the mode conversion copies them). reduce takes only some modes: convert
    # the others first (within the decoded-bytes budget, checked above).
    target = "RGB" if out_format == "JPEG" else "RGBA"
    factor_in = max(1, int(min(img.size[0] / (width * scale), img.size[1] / (height * scale))))
    if factor_in > 1:
        if img.mode not in _REDUCIBLE_MODES:
            img = _convert(img, target)
        img = img.reduce(factor_in)
    frame = _convert(img, target)
    del img
    encoded = b""
    w, h = width, height
    for _ in range(12):
        w = max(1, round(width * scale))
        h = max(1, round(height * scale))
        small = frame.resize((w, h), Image.Resampling.LANCZOS)
        buf = io.BytesIO()
        if out_format == "JPEG":
            small.save(buf, "JPEG", quality=85)
        elif out_format == "WEBP":
            small.save(buf, "WEBP", quality=85)
        else:
            small.save(buf, "PNG", optimize=True)
        encoded = buf.getvalue()
        if len(encoded) <= IMAGE_MAX_BYTES:
            break
        scale *= 0.75
    factor = width / w
    note = (
        f"[Image scaled down: original {width}x{height}, shown at {w}x{h}. "
        f"Multiply coordinates by {factor:.2f} to map them to the original.]"
    )
    return encoded, out_mime, note


_decode_state = threading.local()


def _replace_and_note(exc: UnicodeError) -> tuple[str, int]:
    """Decoding error handler: like "replace", and remembers that it was used."""
    _decode_state.replaced = True
    assert isinstance(exc, UnicodeDecodeError)
    return "\ufffd", exc.end


codecs.register_error("toolwire.read-replace", _replace_and_note)


def _utf8_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


@dataclass
class _Lines:
    """Streaming line selection: keeps what ``truncate_head`` would keep of the
    lines ``[start, end)`` and counts everything else.

    Line numbers are 0-based here; a line is the text up to and including a
    ``"\\n"`` (see :mod:`toolwire.host.builtins.truncate`).
    """

    start: int
    end: int | None
    cur: int = 0  # the line the next character belongs to
    partial: bool = False  # characters seen since the last "\n"
    collecting: bool = True
    by: Literal["lines", "bytes"] | None = None
    kept: list[str] = field(default_factory=list)
    kept_bytes: int = 0
    line_parts: list[str] = field(default_factory=list)
    line_bytes: int = 0  # bytes of the current selected line so far
    first_line_bytes: int = 0
    sel_lines: int = 0
    sel_bytes: int = 0

    def _selected(self, line: int) -> bool:
        return line >= self.start and (self.end is None or line < self.end)

    def feed(self, text: str) -> None:
        pos = 0
        n = len(text)
        while pos < n:
            if self.cur < self.start:
                pos = self._skip(text, pos, self.start - self.cur)
            elif self.end is None or self.cur < self.end:
                pos = self._select(text, pos)
            else:
                count = text.count("\n", pos)
                self.cur += count
                self.partial = not text.endswith("\n")
                return

    def _skip(self, text: str, pos: int, need: int) -> int:
        """Advance over up to ``need`` line ends without keeping anything."""
        count = text.count("\n", pos)
        if count < need:
            self.cur += count
            self.partial = not text.endswith("\n")
            return len(text)
        for _ in range(need):
            pos = text.index("\n", pos) + 1
        self.cur += need
        self.partial = False
        return pos

    def _select(self, text: str, pos: int) -> int:
        if not self.collecting and self.line_bytes == 0:
            # Nothing more to keep: count whole lines in bulk.
            limit = None if self.end is None else self.end - self.cur
            count = text.count("\n", pos)
            if limit is None or count < limit:
                self._count_selected(text[pos:], count)
                return len(text)
            stop = pos
            for _ in range(limit):
                stop = text.index("\n", stop) + 1
            self._count_selected(text[pos:stop], limit)
            return stop
        nl = text.find("\n", pos)
        stop = len(text) if nl < 0 else nl + 1
        piece = text[pos:stop]
        size = _utf8_len(piece)
        self.sel_bytes += size
        self.line_bytes += size
        if self.cur == self.start:
            self.first_line_bytes = self.line_bytes
        if self.collecting:
            if len(self.kept) >= MAX_LINES:
                self.collecting, self.by = False, "lines"
            elif self.kept_bytes + self.line_bytes > MAX_BYTES:
                self.collecting, self.by = False, "bytes"
                self.line_parts = []
            else:
                self.line_parts.append(piece)
        self.partial = nl < 0
        if nl >= 0:
            self._end_line()
        return stop

    def _count_selected(self, chunk: str, lines: int) -> None:
        self.sel_bytes += _utf8_len(chunk)
        self.sel_lines += lines
        self.cur += lines
        self.partial = bool(chunk) and not chunk.endswith("\n")
        if self.partial:
            self.line_bytes = _utf8_len(chunk[chunk.rfind("\n") + 1 :])

    def _end_line(self) -> None:
        if self.collecting and self.line_parts:
            line = "".join(self.line_parts)
            self.kept.append(line)
            self.kept_bytes += self.line_bytes
        self.line_parts = []
        self.line_bytes = 0
        self.sel_lines += 1
        self.cur += 1

    def finish(self) -> int:
        """End of the file: close a last line without ``"\\n"``; return the total."""
        if self.partial:
            if self._selected(self.cur):
                self._end_line()
            else:
                self.cur += 1
            self.partial = False
        return self.cur

    def truncation(self) -> Truncation:
        kept = len(self.kept)
        return Truncation(
            self.by is not None,
            self.by,
            self.sel_lines,
            self.sel_bytes,
            kept,
            self.kept_bytes,
            MAX_LINES,
            MAX_BYTES,
            first_line_exceeds_limit=kept == 0 and self.by == "bytes",
        )


@dataclass
class _Text:
    """What :func:`_read_text` found."""

    lines: _Lines
    total: int
    notes: list[str]


def _read_text(f: IO[bytes], head: bytes, start: int, end: int | None, check: bool = True) -> _Text:
    """Stream the file ``f`` (positioned after ``head``) through a decoder into a
    :class:`_Lines` selection; runs in a worker thread."""
    notes: list[str] = []
    enc = detect_text_encoding(head)
    if enc is not None:
        codec, name, _ = enc
        notes.append(f"[Decoded as {name} (the file starts with its byte-order mark).]")
    else:
        codec = "utf-8"
    decoder = codecs.getincrementaldecoder(codec)(errors="toolwire.read-replace")
    _decode_state.replaced = False
    sel = _Lines(start, end)
    data = head
    while True:
        if check:
            anyio.from_thread.check_cancelled()
        text = decoder.decode(data, final=not data)
        if text:
            sel.feed(text)
        if not data:
            break
        data = f.read(_CHUNK)
    if _decode_state.replaced:
        if enc is None:
            notes.append(
                "[The file is not valid UTF-8: bytes that are not were replaced by U+FFFD.]"
            )
        else:
            notes.append(f"[Bytes that are not valid {name} were replaced by U+FFFD.]")
    total = sel.finish()
    return _Text(sel, total, notes)


def _read_file(
    real: Any, shown: str, within: Any, offset: int | None, limit: int | None
) -> ToolResult:
    """The whole read, in a worker thread: open, sniff, then image, binary or text."""
    fd = open_regular(real, shown, within)
    with os.fdopen(fd, "rb", buffering=0) as raw:
        size = os.fstat(raw.fileno()).st_size
        head = raw.read(_SNIFF)
        mime = detect_image(head[:16])
        if mime is not None:
            f = io.BufferedReader(raw)
            f.seek(0)
            problem = image_problem(f, mime, size)
            if problem is not None:
                return ToolResult(
                    f"{shown} starts like a {mime} image ({size} bytes) but {problem}; it is "
                    "not shown. Use bash to look inside it (e.g. file, xxd, or identify).",
                    details={"image": mime, "invalid": problem, "size": size},
                )
            img, out_mime, note = fit_image(f, mime, size)
            text = f"Read image file {shown} [{out_mime}]"
            if note:
                text += "\n" + note
            return ToolResult([{"type": "text", "text": text}, image_block(img, out_mime)])
        kind = detect_binary(head)
        if kind is not None:
            return ToolResult(
                f"{shown} is a binary file ({kind}, {size} bytes); its content is not shown. "
                "Use bash to look inside it (e.g. file, xxd, strings, or the tool for its "
                "format such as sqlite3 or unzip -l).",
                details={"binary": True, "kind": kind, "size": size},
            )
        start = (offset or 1) - 1
        end = None if limit is None else start + limit
        got = _read_text(raw, head, start, end)
    return _answer(got, shown, offset, start, end)


def _answer(got: _Text, shown: str, offset: int | None, start: int, end: int | None) -> ToolResult:
    """The text answer for a streamed selection, with the truncation notes."""
    sel, total, notes = got.lines, got.total, got.notes
    if offset is not None and start >= total and not (total == 0 and offset == 1):
        raise ToolError(f"Offset {offset} is past the end of {shown}, which has {total} lines")
    end = total if end is None else min(total, end)
    rec = sel.truncation()
    content = "".join(sel.kept)
    details: dict[str, Any] | None = None
    if rec.first_line_exceeds_limit:
        n = start + 1
        size = format_size(sel.first_line_bytes)
        q = shlex.quote(shown)
        body = (
            f"[Line {n} of {shown} is {size}, more than the {format_size(MAX_BYTES)} one read "
            f"can return. Read it in pieces with bash, e.g. sed -n '{n}p' {q} | head -c {MAX_BYTES}"
            f" for the first piece, then sed -n '{n}p' {q} | tail -c +{MAX_BYTES + 1} | "
            f"head -c {MAX_BYTES} for the next.]"
        )
        details = {"truncation": rec.to_json()}
    elif rec.truncated:
        last = start + rec.output_lines
        why = f" ({format_size(MAX_BYTES)} limit)" if rec.truncated_by == "bytes" else ""
        body = content.removesuffix("\n") + (
            f"\n\n[Showing lines {start + 1}-{last} of {total}{why}. "
            f"Use offset={last + 1} to continue.]"
        )
        details = {"truncation": rec.to_json()}
    else:
        body = content
        if end < total:
            body = body.removesuffix("\n")
            body += f"\n\n[{total - end} more lines in the file. Use offset={end + 1} to continue.]"
        elif total == 0:
            body = "(empty file)"
    if notes:
        body = "\n".join(notes) + "\n\n" + body
    return ToolResult(body, details=details)


@builtin_tool(annotations={"readOnlyHint": True, "idempotentHint": True})
async def read(
    path: Annotated[str, Param(description="File to read, relative to the working directory.")],
    ctx: ToolContext,
    offset: Annotated[
        int | None, Param(default=None, ge=1, description="Line number to start at (1-based).")
    ] = None,
    limit: Annotated[
        int | None, Param(default=None, ge=1, description="Most lines to return.")
    ] = None,
) -> ToolResult:
    """Read a file. Text comes back as its lines (at most 2000 lines or 50KB per call;
    use offset and limit to page through larger files). PNG, JPEG, GIF and WebP
    images come back as images (a damaged one as a note saying what is wrong);
    other binary files as a short description.
    """
    result: ToolResult = await anyio.to_thread.run_sync(_read_path, ctx.env, path, offset, limit)
    return result


def _read_path(env: ExecEnv, path: str, offset: int | None, limit: int | None) -> ToolResult:
    """Resolve ``path`` and read it, in a worker thread (path resolution is file
    system work, kept off the event loop)."""
    output_file = resolve_output_file(path)  # a bash full-output file, read-only
    real = output_file or resolve_read_path(env, path)
    shown = display_path(real, env.cwd)
    within = output_file.parent if output_file else env.root
    return _read_file(real, shown, within, offset, limit)

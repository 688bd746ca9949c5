"""The ``read`` tool: a text file's lines (with offset/limit), or an image."""

from __future__ import annotations

import contextlib
import io
import shlex
from typing import Annotated, Any

import anyio.to_thread

from ..context import ToolContext
from ..hints import Param
from ..paths import resolve_output_file, resolve_read_path
from ..results import ToolError, ToolResult, image_block
from ..truncate import MAX_BYTES, MAX_LINES, format_size, split_lines, truncate_head
from ._common import builtin_tool, display_path, read_regular

__all__ = ["IMAGE_MAX_BYTES", "IMAGE_MAX_SIDE", "detect_image", "fit_image", "read"]

IMAGE_MAX_SIDE = 2000
"""Images are scaled down to fit this many pixels on each side."""

IMAGE_MAX_BYTES = int(4.5 * 1024 * 1024)
"""Images are re-encoded (and scaled further) until their encoding fits 4.5 MB."""


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


def fit_image(data: bytes, mime: str) -> tuple[bytes, str, str | None]:
    """Scale an image to fit :data:`IMAGE_MAX_SIDE` and :data:`IMAGE_MAX_BYTES`.

    Returns ``(data, mime, note)``: the original bytes and no note when it already
    fits; otherwise the re-encoded image and a note giving the original and shown
    sizes and the factor mapping shown coordinates back to the original.

    Raises:
        ToolError: the image does not fit and cannot be scaled (Pillow missing or
            the file cannot be decoded).
    """
    try:
        from PIL import Image
    except ImportError:
        if len(data) <= IMAGE_MAX_BYTES:
            return data, mime, None
        raise ToolError(
            f"The image is {format_size(len(data))}, over the {format_size(IMAGE_MAX_BYTES)} "
            "limit, and Pillow is not installed to scale it down"
        ) from None
    try:
        img: Any = Image.open(io.BytesIO(data))
        width, height = img.size
    except Exception as exc:
        if len(data) <= IMAGE_MAX_BYTES:
            return data, mime, None
        raise ToolError(f"Cannot decode the image to scale it: {exc}") from None
    if width <= IMAGE_MAX_SIDE and height <= IMAGE_MAX_SIDE and len(data) <= IMAGE_MAX_BYTES:
        return data, mime, None
    scale = min(1.0, IMAGE_MAX_SIDE / width, IMAGE_MAX_SIDE / height)
    out_format = {"image/jpeg": "JPEG", "image/webp": "WEBP"}.get(mime, "PNG")
    out_mime = {"JPEG": "image/jpeg", "WEBP": "image/webp", "PNG": "image/png"}[out_format]
    with contextlib.suppress(Exception):
        img.seek(0)
    frame = img.convert("RGB") if out_format == "JPEG" else img.convert("RGBA")
    encoded = data
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
    images come back as images.
    """
    output_file = resolve_output_file(path)  # a bash full-output file, read-only
    real = output_file or resolve_read_path(ctx.env, path)
    shown = display_path(real, ctx.env.cwd)
    within = output_file.parent if output_file else ctx.env.root
    data = await anyio.to_thread.run_sync(read_regular, real, shown, within)

    mime = detect_image(data[:16])
    if mime is not None:
        img, out_mime, note = await anyio.to_thread.run_sync(fit_image, data, mime)
        text = f"Read image file {shown} [{out_mime}]"
        if note:
            text += "\n" + note
        return ToolResult([{"type": "text", "text": text}, image_block(img, out_mime)])

    notes: list[str] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        notes.append("[The file is not valid UTF-8: bytes that are not were replaced by U+FFFD.]")
    lines = split_lines(text)
    total = len(lines)
    start = (offset or 1) - 1
    if offset is not None and start >= total and not (total == 0 and offset == 1):
        raise ToolError(f"Offset {offset} is past the end of {shown}, which has {total} lines")
    end = total if limit is None else min(total, start + limit)
    selected = lines[start:end]
    cut = truncate_head("".join(selected), MAX_LINES, MAX_BYTES)
    rec = cut.truncation
    details: dict[str, Any] | None = None
    if rec.first_line_exceeds_limit:
        n = start + 1
        size = format_size(len(selected[0].encode("utf-8", "surrogatepass")))
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
        body = cut.content.removesuffix("\n") + (
            f"\n\n[Showing lines {start + 1}-{last} of {total}{why}. "
            f"Use offset={last + 1} to continue.]"
        )
        details = {"truncation": rec.to_json()}
    else:
        body = cut.content
        if end < total:
            body = body.removesuffix("\n")
            body += f"\n\n[{total - end} more lines in the file. Use offset={end + 1} to continue.]"
        elif total == 0:
            body = "(empty file)"
    if notes:
        body = "\n".join(notes) + "\n\n" + body
    return ToolResult(body, details=details)

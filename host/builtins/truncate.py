"""Output limits shared by the built-in tools: keep the head or the tail of a text.

Every tool answer is capped at :data:`MAX_LINES` lines and :data:`MAX_BYTES` bytes of
UTF-8 (whichever is hit first); a grep line at :data:`GREP_MAX_LINE_CHARS`
characters. A tool that cuts its output says so in the text (how to get the rest)
and puts a :class:`Truncation` record in its result's ``details["truncation"]``.

Lines are the pieces between ``"\\n"`` characters; a final ``"\\n"`` ends the last
line and does not start another, so ``"a\\nb\\n"`` has 2 lines and ``""`` has 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "GREP_MAX_LINE_CHARS",
    "MAX_BYTES",
    "MAX_LINES",
    "Truncated",
    "Truncation",
    "count_lines",
    "format_size",
    "split_lines",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
]

MAX_LINES = 2000
"""Most lines a tool returns in one answer."""

MAX_BYTES = 50 * 1024
"""Most UTF-8 bytes (51,200, "50.0KB") a tool returns in one answer."""

GREP_MAX_LINE_CHARS = 500
"""Most characters of one grep output line."""


@dataclass(frozen=True)
class Truncation:
    """What a cut kept and what it dropped (the ``details["truncation"]`` record).

    Attributes:
        truncated: whether anything was dropped.
        truncated_by: which limit cut the text: "lines", "bytes", or None.
        total_lines: lines in the whole text.
        total_bytes: UTF-8 bytes in the whole text.
        output_lines: lines kept (a partial line counts as one).
        output_bytes: UTF-8 bytes kept.
        max_lines: the line limit applied.
        max_bytes: the byte limit applied.
        first_line_exceeds_limit: head cut only — the first line alone is over the
            byte limit, so nothing was kept.
        last_line_partial: tail cut only — the last line alone is over the byte
            limit, so only its end was kept.
    """

    truncated: bool
    truncated_by: Literal["lines", "bytes"] | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    max_lines: int = MAX_LINES
    max_bytes: int = MAX_BYTES
    first_line_exceeds_limit: bool = False
    last_line_partial: bool = False

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON object with camelCase keys."""
        return {
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by,
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "lastLinePartial": self.last_line_partial,
        }


@dataclass(frozen=True)
class Truncated:
    """The kept text and its :class:`Truncation` record."""

    content: str
    truncation: Truncation


def format_size(n: int) -> str:
    """Human size with one decimal: ``512B``, ``50.0KB``, ``1.5MB``."""
    if n < 1024:
        return f"{n}B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f}KB"
    return f"{n / (1024 * 1024):.1f}MB"


def split_lines(text: str) -> list[str]:
    """Split on ``"\\n"`` only, each piece keeping its ``"\\n"``; no empty last piece.

    ``"\\r"``, U+2028 and friends are data, not line breaks.
    """
    if not text:
        return []
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def count_lines(text: str) -> int:
    """Number of lines in ``text`` (see the module docstring for what a line is)."""
    if not text:
        return 0
    n = text.count("\n")
    return n if text.endswith("\n") else n + 1


def _utf8_len(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


def _whole(text: str, lines: int, size: int, max_lines: int, max_bytes: int) -> Truncated:
    """``text`` kept whole, with a record saying nothing was cut."""
    return Truncated(text, Truncation(False, None, lines, size, lines, size, max_lines, max_bytes))


def truncate_head(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Truncated:
    """Keep whole lines from the start while both limits hold.

    When the first line alone is over ``max_bytes``, nothing is kept and the record
    says ``first_line_exceeds_limit``. The kept text keeps its newlines.
    """
    lines = split_lines(text)
    total_bytes = _utf8_len(text)
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _whole(text, total_lines, total_bytes, max_lines, max_bytes)
    kept: list[str] = []
    used = 0
    by: Literal["lines", "bytes"] = "lines"
    for line in lines:
        if len(kept) >= max_lines:
            by = "lines"
            break
        size = _utf8_len(line)
        if used + size > max_bytes:
            by = "bytes"
            break
        kept.append(line)
        used += size
    return Truncated(
        "".join(kept),
        Truncation(
            True,
            by,
            total_lines,
            total_bytes,
            len(kept),
            used,
            max_lines,
            max_bytes,
            first_line_exceeds_limit=not kept and by == "bytes",
        ),
    )


def truncate_tail(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Truncated:
    """Keep whole lines from the end while both limits hold.

    When the last line alone is over ``max_bytes``, its last ``max_bytes`` bytes are
    kept (never splitting a character) and the record says ``last_line_partial``.
    """
    lines = split_lines(text)
    total_bytes = _utf8_len(text)
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return _whole(text, total_lines, total_bytes, max_lines, max_bytes)
    kept: list[str] = []
    used = 0
    by: Literal["lines", "bytes"] = "lines"
    partial = False
    for line in reversed(lines):
        if len(kept) >= max_lines:
            by = "lines"
            break
        size = _utf8_len(line)
        if used + size > max_bytes:
            by = "bytes"
            if not kept:
                tail = line.encode("utf-8", "surrogatepass")[-max_bytes:]
                # Drop continuation bytes at the cut so no character is split.
                start = 0
                while start < len(tail) and (tail[start] & 0xC0) == 0x80:
                    start += 1
                piece = tail[start:].decode("utf-8", "replace")
                kept.append(piece)
                used = _utf8_len(piece)
                partial = True
            break
        kept.append(line)
        used += size
    kept.reverse()
    return Truncated(
        "".join(kept),
        Truncation(
            True,
            by,
            total_lines,
            total_bytes,
            len(kept),
            used,
            max_lines,
            max_bytes,
            last_line_partial=partial,
        ),
    )


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_CHARS) -> tuple[str, bool]:
    """Cut one line to ``max_chars`` characters; returns ``(text, was_cut)``."""
    if len(line) <= max_chars:
        return line, False
    return line[:max_chars] + "... [truncated]", True

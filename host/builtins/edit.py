"""The ``edit`` tool: replace exact (or nearly exact) snippets of a file.

Matching works in two spaces, both mapped back to the file's original characters,
so only the matched span changes on disk and every other byte stays as it was:

* exact: the file with each CRLF read as LF (a bare CR is data and stays);
* fuzzy, when the exact text is not found: each line NFKC-normalised, smart quotes,
  Unicode dashes and spaces made ASCII, trailing whitespace dropped.

An edit must match exactly once (unless it asks for ``replaceAll``), counted in the
space it matched in. Every edit is matched against the original file; they all
apply or none do. New text takes the line ending of the line it lands on; a UTF-8
byte-order mark is kept.
"""

from __future__ import annotations

import array
import bisect
import difflib
import itertools
import os
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NotRequired, TypedDict

import anyio.to_thread

from ..sandbox.paths import resolve_write_path
from ..schema.hints import Param
from ..tools.context import ToolContext
from ..tools.results import ToolError, ToolResult
from ._common import (
    atomic_write,
    builtin_tool,
    check_cancelled,
    commit_point,
    display_path,
    open_regular,
)
from .truncate import MAX_BYTES, format_size

__all__ = [
    "EDIT_DIFF_MAX_LINES",
    "EDIT_MAX_DIFF_BYTES",
    "EDIT_MAX_FILE_BYTES",
    "EDIT_MAX_REPLACEMENTS",
    "EditSpec",
    "apply_edits",
    "edit",
    "fuzzy_normalize",
]

EDIT_MAX_FILE_BYTES = 32 * 1024 * 1024
"""Largest file edit changes (32 MiB). Matching holds a few copies of the text, so
a bigger file is refused before it is read; bash (sed, a script) handles those."""

EDIT_MAX_REPLACEMENTS = 100_000
"""Most replacements one edit makes (replaceAll of a one-character oldText in a big
file would otherwise hold millions of match records)."""

EDIT_MAX_DIFF_BYTES = 4 * MAX_BYTES
"""Most characters of the diff put in the result's details (200 KiB); a longer one
is cut with a note."""

EDIT_DIFF_MAX_LINES = 4000
"""Most lines (old plus new) of one changed region compared line by line for the
diff. Each edited region (with 3 lines of context) is diffed on its own, so the
lines between two distant edits are never compared; a region over this bound is
shown as all its old lines removed and all its new lines added (linear work)."""


class EditSpec(TypedDict):
    """One replacement: oldText (found in the original file) becomes newText."""

    oldText: Annotated[str, "Text to find; must occur exactly once unless replaceAll."]
    newText: Annotated[str, "Replacement text."]
    replaceAll: NotRequired[Annotated[bool, "Replace every occurrence instead of exactly one."]]


@dataclass(frozen=True)
class _Edit:
    """An :class:`EditSpec` as the matcher uses it."""

    oldText: str
    newText: str
    replaceAll: bool = False


_FUZZY_TABLE = str.maketrans(
    {
        **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033", '"'),
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u00a0\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008", " "),
        **dict.fromkeys("\u2009\u200a\u202f\u205f\u3000", " "),
    }
)


def _fuzzy_segment(seg: str) -> str:
    return unicodedata.normalize("NFKC", seg).translate(_FUZZY_TABLE)


def _segments(content: str) -> Iterator[tuple[int, str]]:
    """``(end, normalised)`` for each segment of a line: a starter character and the
    combining marks after it, normalised on its own; ``end`` is the offset in
    ``content`` where the segment ends."""
    i = 0
    length = len(content)
    while i < length:
        j = i + 1
        while j < length and unicodedata.combining(content[j]):
            j += 1
        yield j, _fuzzy_segment(content[i:j])
        i = j


def _fuzzy_line(content: str) -> str:
    """One line (without its line break) in fuzzy form, trailing whitespace dropped."""
    if content.isascii():
        # NFKC and the table leave ASCII alone.
        return content.rstrip()
    out: list[str] = []
    batch: list[str] = []
    for _, norm in _segments(content):
        batch.append(norm)
        if len(batch) >= 4096:  # join as it goes: no list of millions of pieces
            out.append("".join(batch))
            batch = []
    out.append("".join(batch))
    return "".join(out).rstrip()


def _fuzzy_to_line_offset(content: str, local: int, kept: int, *, end: bool) -> int:
    """Map offset ``local`` of ``content``'s fuzzy form back to ``content``.

    Segment boundaries map exactly; a start inside a segment moves back to the
    segment's start, an end inside one moves on to its end; past the kept text
    (trailing whitespace was dropped) maps to the end of the kept text. Scans the
    line without building per-character tables. ``kept`` is the length of the
    line's fuzzy form.
    """
    if content.isascii():
        return min(local, kept)
    if local <= 0 or kept == 0:
        return 0
    prev_o = 0
    n = 0
    for o, norm in _segments(content):
        n += len(norm)
        last = n >= kept
        if last:
            n = kept
        if n >= local:
            return o if n == local or end else prev_o
        prev_o = o
        if last:
            break
    return prev_o


def fuzzy_normalize(text: str) -> str:
    """The fuzzy form of ``text``: per line NFKC, ASCII quotes/dashes/spaces, no
    trailing whitespace; CRLF read as LF."""
    return "\n".join(_fuzzy_line(line.removesuffix("\r")) for line in text.split("\n"))


class _Doc:
    """The original text and its two matching spaces with maps back to it."""

    def __init__(self, text: str) -> None:
        self.text = text
        # Exact space: CRLF -> LF. crlf_at holds, for each dropped CR, the index in
        # the exact text of the LF that follows it.
        self.crlf_at: list[int] = []
        pieces: list[str] = []
        pos = 0
        dropped = 0
        while True:
            k = text.find("\r\n", pos)
            if k < 0:
                pieces.append(text[pos:])
                break
            pieces.append(text[pos:k])
            self.crlf_at.append(k - dropped)
            dropped += 1
            pos = k + 1  # keep the LF
        self.exact = "".join(pieces)
        self._fuzzy: str | None = None
        # Per line of the original text: its start there and in the fuzzy text.
        self._ostarts = array.array("q")
        self._fstarts = array.array("q")

    def exact_to_orig(self, x: int) -> int:
        return x + bisect.bisect_left(self.crlf_at, x)

    @property
    def fuzzy(self) -> str:
        """The fuzzy text; only line starts are kept, a line's character map is
        rebuilt when a match lands in it (see :meth:`fuzzy_to_orig`)."""
        if self._fuzzy is None:
            raws = self.text.split("\n")
            norms = [_fuzzy_line(r.removesuffix("\r")) for r in raws]
            self._ostarts = array.array(
                "q", itertools.accumulate((len(r) + 1 for r in raws), initial=0)
            )
            self._fstarts = array.array(
                "q", itertools.accumulate((len(n) + 1 for n in norms), initial=0)
            )
            del raws
            self._fuzzy = "\n".join(norms)
        return self._fuzzy

    def fuzzy_to_orig(self, x: int, *, end: bool) -> int:
        self.fuzzy  # noqa: B018 (builds the line starts)
        i = bisect.bisect_right(self._fstarts, x) - 1
        ostart = self._ostarts[i]
        stop = self.text.find("\n", ostart)
        raw = self.text[ostart : len(self.text) if stop < 0 else stop]
        local = x - self._fstarts[i]
        kept = self._fstarts[i + 1] - self._fstarts[i] - 1
        return ostart + _fuzzy_to_line_offset(raw.removesuffix("\r"), local, kept, end=end)


def _find_all(haystack: str, needle: str) -> list[int]:
    out = []
    pos = haystack.find(needle)
    while pos >= 0:
        out.append(pos)
        pos = haystack.find(needle, pos + len(needle))
    return out


def _line_ending_at(text: str, offset: int, default: str) -> str:
    nl = text.find("\n", offset)
    if nl < 0:
        return default
    return "\r\n" if nl > 0 and text[nl - 1] == "\r" else "\n"


@dataclass
class _Span:
    start: int
    end: int
    new: str
    index: int


def _check_count(count: int, replace_all: bool, label: str, shown: str) -> None:
    """Refuse an ambiguous match before its positions are collected, and a
    replaceAll over :data:`EDIT_MAX_REPLACEMENTS` occurrences."""
    if count > 1 and not replace_all:
        raise ToolError(
            f"{label} occurs {count} times in {shown}; it must occur exactly once. "
            "Include more surrounding lines to make it unique (or set replaceAll)."
        )
    if count > EDIT_MAX_REPLACEMENTS:
        raise ToolError(
            f"{label} occurs {count} times in {shown}, more than the "
            f"{EDIT_MAX_REPLACEMENTS} replacements one edit makes; use bash (sed) for this"
        )


def apply_edits(text: str, edits: list[_Edit], shown: str) -> tuple[str, list[_Span]]:
    """Apply ``edits`` to ``text`` (BOM already removed); return the new text and spans.

    Raises:
        ToolError: an edit is empty, not found, ambiguous, or overlaps another; or
            the result equals the original.
    """
    if not edits:
        raise ToolError("edits must contain at least one replacement")
    doc = _Doc(text)
    first_nl = text.find("\n")
    dominant = "\r\n" if first_nl > 0 and text[first_nl - 1] == "\r" else "\n"
    spans: list[_Span] = []
    for i, e in enumerate(edits):
        check_cancelled()
        label = f"edits[{i}]" if len(edits) > 1 else "oldText"
        old = e.oldText.replace("\r\n", "\n")
        if not old:
            raise ToolError(f"{label} is empty; give the exact text to replace")
        count = doc.exact.count(old)
        _check_count(count, e.replaceAll, label, shown)
        found = [(p, p + len(old)) for p in _find_all(doc.exact, old)] if count else []
        ranges: list[tuple[int, int]]
        if found:
            ranges = [(doc.exact_to_orig(s), doc.exact_to_orig(t)) for s, t in found]
        else:
            fold = fuzzy_normalize(old)
            count = doc.fuzzy.count(fold) if fold.strip() else 0
            _check_count(count, e.replaceAll, label, shown)
            hits = _find_all(doc.fuzzy, fold) if count else []
            if not hits:
                raise ToolError(
                    f"Could not find {label} in {shown}. It must match the file exactly, "
                    "including whitespace and line breaks; read the file again to copy it."
                )
            ranges = [
                (doc.fuzzy_to_orig(p, end=False), doc.fuzzy_to_orig(p + len(fold), end=True))
                for p in hits
            ]
        if len(ranges) > 1 and not e.replaceAll:
            raise ToolError(
                f"{label} occurs {len(ranges)} times in {shown}; it must occur exactly once. "
                "Include more surrounding lines to make it unique (or set replaceAll)."
            )
        for s, t in ranges:
            ending = _line_ending_at(text, s, dominant)
            new = e.newText.replace("\r\n", "\n")
            if ending != "\n":
                new = new.replace("\n", ending)
            spans.append(_Span(s, t, new, i))
    spans.sort(key=lambda sp: (sp.start, sp.end))
    for a, b in itertools.pairwise(spans):
        if b.start < a.end:
            if a.index == b.index:
                raise ToolError(f"Matches of edits[{a.index}] overlap in {shown}")
            raise ToolError(
                f"edits[{a.index}] and edits[{b.index}] overlap in {shown}; merge them into "
                "one edit or pick snippets that do not share text"
            )
    out: list[str] = []
    pos = 0
    for sp in spans:
        out.append(text[pos : sp.start])
        out.append(sp.new)
        pos = sp.end
    out.append(text[pos:])
    result = "".join(out)
    if result == text:
        raise ToolError(
            f"No change made to {shown}: the replacement gives the same content. "
            "Check that newText differs from the text it replaces."
        )
    return result, spans


_HUNK = re.compile(r"@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def _line_start_before(text: str, pos: int, lines: int) -> int:
    """Start of the line holding ``pos``, moved back ``lines`` more lines."""
    ws = text.rfind("\n", 0, pos) + 1
    for _ in range(lines):
        if ws == 0:
            break
        ws = text.rfind("\n", 0, ws - 1) + 1
    return ws


def _line_end_after(text: str, pos: int, lines: int) -> int:
    """End (after its break) of the line holding ``pos``, moved on ``lines`` more lines."""
    we = text.find("\n", pos)
    for _ in range(lines):
        if we < 0:
            break
        we = text.find("\n", we + 1)
    return len(text) if we < 0 else we + 1


def _regions(old: str, spans: list[_Span]) -> list[tuple[int, int, int]]:
    """``(start, old_end, delta)`` per changed region: the spans whose 3-line context
    windows touch are merged; ``delta`` is the region's change in length."""
    out: list[tuple[int, int, int]] = []
    for sp in spans:  # sorted by start, not overlapping
        ws = _line_start_before(old, sp.start, 3)
        we = _line_end_after(old, sp.end, 3)
        d = len(sp.new) - (sp.end - sp.start)
        if out and ws <= out[-1][1]:
            s0, e0, d0 = out[-1]
            out[-1] = (s0, max(e0, we), d0 + d)
        else:
            out.append((ws, we, d))
    return out


def _plain_hunk(a: list[str], b: list[str]) -> list[str]:
    """A unified-diff hunk (header relative to ``a`` and ``b``) removing every line of
    ``a`` and adding every line of ``b``, after the equal lines at both ends."""
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    head_ctx, tail_ctx = min(head, 3), min(tail, 3)
    a0, a1 = head - head_ctx, len(a) - tail + tail_ctx
    b0, b1 = head - head_ctx, len(b) - tail + tail_ctx
    lines = [f"@@ -{a0 + 1},{a1 - a0} +{b0 + 1},{b1 - b0} @@\n"]
    lines += [" " + x for x in a[a0:head]]
    lines += ["-" + x for x in a[head : len(a) - tail]]
    lines += ["+" + x for x in b[head : len(b) - tail]]
    lines += [" " + x for x in a[len(a) - tail : a1]]
    return lines


def _diff(old: str, new: str, shown: str, spans: list[_Span]) -> tuple[str, int]:
    """A unified diff (3 lines of context) of the changed regions only, with hunk
    line numbers shifted to the whole file; and the first changed line (1-based).

    Each region (:func:`_regions`) is diffed on its own; one over
    :data:`EDIT_DIFF_MAX_LINES` lines is shown as a plain replacement
    (:func:`_plain_hunk`). Generation stops once the diff passes
    :data:`EDIT_MAX_DIFF_BYTES`. Checks for cancellation between regions.
    """
    parts = [f"--- a/{shown}\n", f"+++ b/{shown}\n"]
    size = 0
    first = 0
    old_line = new_line = 0  # line numbers (0-based) of old_pos / new_pos
    old_pos = new_pos = 0
    shift_total = 0
    cut = False
    for ws, we, delta in _regions(old, spans):
        check_cancelled()
        nws, nwe = ws + shift_total, we + shift_total + delta
        old_line += _count_breaks_between(old, old_pos, ws)
        new_line += _count_breaks_between(new, new_pos, nws)
        old_pos, new_pos = ws, nws
        shift_total += delta
        a = old[ws:we].splitlines(keepends=True)
        b = new[nws:nwe].splitlines(keepends=True)
        if not first:
            first = old_line + 1
            for i, (x, y) in enumerate(zip(a, b, strict=False)):
                if x != y:
                    first = old_line + i + 1
                    break
            else:
                first = old_line + min(len(a), len(b)) + 1
        if len(a) + len(b) > EDIT_DIFF_MAX_LINES:
            hunk = _plain_hunk(a, b)
        else:
            hunk = list(difflib.unified_diff(a, b, n=3))[2:]
        for line in hunk:
            m = _HUNK.match(line)
            if m is not None:
                line = (
                    f"@@ -{int(m.group(1)) + old_line}{m.group(2) or ''} "
                    f"+{int(m.group(3)) + new_line}{m.group(4) or ''} @@" + line[m.end() :]
                )
            elif not line.endswith("\n"):
                line += "\n\\ No newline at end of file\n"
            parts.append(line)
            size += len(line)
            if size > EDIT_MAX_DIFF_BYTES:
                cut = True
                break
        if cut:
            break
    diff = "".join(parts) if size else ""
    if cut:
        end = diff.rfind("\n", 0, EDIT_MAX_DIFF_BYTES) + 1
        diff = diff[:end] + f"[diff cut at {format_size(EDIT_MAX_DIFF_BYTES)}]\n"
    return diff, first or 1


def _count_breaks_between(text: str, start: int, end: int) -> int:
    """Line breaks in ``text[start:end]`` as ``str.splitlines`` sees them (CRLF once;
    ``start`` is a line start, so no CRLF is split)."""
    n = text.count("\n", start, end) + text.count("\r", start, end)
    n -= text.count("\r\n", start, end)
    return n + sum(text.count(c, start, end) for c in "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")


def _legacy_single_edit(raw: Any) -> Any:
    """prepare_arguments: the old single-edit form ``{path, oldText, newText, replaceAll?}``
    becomes ``{path, edits: [{oldText, newText, replaceAll?}]}``."""
    if not isinstance(raw, dict) or "edits" in raw:
        return raw
    if "oldText" not in raw and "newText" not in raw:
        return raw
    spec = {k: raw[k] for k in ("oldText", "newText", "replaceAll") if k in raw}
    rest = {k: v for k, v in raw.items() if k not in ("oldText", "newText", "replaceAll")}
    return {**rest, "edits": [spec]}


@builtin_tool(
    annotations={"destructiveHint": True},
    mutates=("path",),
    prepare_arguments=_legacy_single_edit,
)
async def edit(
    path: Annotated[str, Param("File to edit, relative to the working directory.")],
    edits: Annotated[
        list[EditSpec],
        Param("Replacements, each matched against the original file; all apply or none."),
    ],
    ctx: ToolContext,
) -> ToolResult:
    """Edit a file by replacing text: each oldText must occur exactly once in the file
    (copy it from a read, with its whitespace). Give several replacements in edits;
    they all apply or none do. Line endings and a byte-order mark are preserved.
    (The older single form {path, oldText, newText} is accepted too.)
    """
    specs = [_Edit(e["oldText"], e["newText"], bool(e.get("replaceAll", False))) for e in edits]
    if not specs:
        raise ToolError(
            "Nothing to do: edits must contain at least one replacement {oldText, newText}"
        )
    env = ctx.env

    def work() -> ToolResult:
        real = resolve_write_path(env, path, must_exist=True)
        return _edit_file(real, display_path(real, env.cwd), env.root, specs, commit_point(ctx))

    # Edits of one file never overlap: the executor's per-file mutation queue (mutates).
    result: ToolResult = await anyio.to_thread.run_sync(work)
    return result


def _read_bounded(real: Path, shown: str, within: Path | None) -> bytes:
    """The file's bytes, refusing a file over :data:`EDIT_MAX_FILE_BYTES` (checked on
    the open file, and again while reading, so a growing file is refused too)."""
    fd = open_regular(real, shown, within)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        data = f.read(EDIT_MAX_FILE_BYTES + 1) if size <= EDIT_MAX_FILE_BYTES else b""
        if size > EDIT_MAX_FILE_BYTES or len(data) > EDIT_MAX_FILE_BYTES:
            raise ToolError(
                f"{shown} is {format_size(max(size, len(data)))}, more than the "
                f"{format_size(EDIT_MAX_FILE_BYTES)} edit changes; use bash (sed, a script) "
                "for a file this large"
            )
    return data


def _edit_file(
    real: Path,
    shown: str,
    within: Path | None,
    specs: list[_Edit],
    before_commit: Callable[[], None] = check_cancelled,
) -> ToolResult:
    """The whole edit, in a worker thread: read, match, diff, write. Stops (and
    writes nothing) when the call is cancelled or times out: checked after reading,
    before each edit is matched, between diff regions, and just before the rename
    (``before_commit``: :func:`commit_point` of the call, which also makes the call
    answered with its result once the rename is decided)."""
    data = _read_bounded(real, shown, within)
    check_cancelled()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{shown} is not valid UTF-8 (byte {exc.start}); edit cannot change it "
            "without damaging it"
        ) from None
    del data
    bom = text.startswith("\ufeff")
    body = text[1:] if bom else text
    del text
    new_body, spans = apply_edits(body, specs, shown)
    # The diff comes first: a call cancelled (or timed out) while it is made, or while
    # the file is written, leaves the file as it was (checked just before the rename).
    diff, first = _diff(body, new_body, shown, spans)
    check_cancelled()
    atomic_write(
        real,
        (("\ufeff" if bom else "") + new_body).encode("utf-8"),
        shown,
        within,
        before_commit=before_commit,
    )
    n = len(spans)
    details: dict[str, Any] = {"diff": diff, "firstChangedLine": first, "replacements": n}
    return ToolResult(
        f"Edited {shown}: replaced {n} block{'s' if n != 1 else ''} "
        f"(first change at line {first}).",
        details=details,
    )

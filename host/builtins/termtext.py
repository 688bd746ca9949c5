"""Terminal output as a model should read it: what a terminal would show, as plain text.

Commands write for terminals: colour and cursor escape sequences, ``\\r`` to redraw a
progress bar in place, backspaces, bells, NUL bytes. :class:`TerminalText` turns such a
stream, fed in chunks that may split anything anywhere, into plain text:

* **escape sequences are removed**: CSI (``ESC [`` … final byte, e.g. colours and cursor
  moves), OSC (``ESC ]`` … ``BEL`` or ``ESC \\``, e.g. window titles, hyperlinks,
  clipboard writes), DCS/SOS/PM/APC strings (``ESC P``/``X``/``^``/``_`` … ``ESC \\``)
  and two-byte escapes (``ESC`` + intermediates + final, e.g. ``ESC ( B``, ``ESC 7``),
  as ECMA-48 delimits them;
* **the current line is redrawn as a terminal would**: ``\\r`` returns to column 0 and
  later characters overwrite, ``\\b`` steps back one column, ``ESC [ K`` (0, 1, 2) erases
  in the line, ``ESC [ n G`` moves to column n, ``ESC [ n C`` / ``ESC [ n D`` move right
  or left; only the line's final state is kept when ``\\n`` ends it. Moves to other rows
  (``ESC [ A`` and the like) are dropped: the text has no screen;
* **other control characters** (C0 except ``\\n`` and ``\\t``, DEL, C1 U+0080–U+009F) are
  replaced by U+FFFD, the character invalid UTF-8 already becomes, so the model sees that
  something unprintable was there without receiving it.

Bounds: an escape sequence left open at the end of a chunk waits for the next one, but a
string sequence (OSC, DCS, …) still open after :data:`MAX_SEQUENCE_CHARS` characters is
taken for a stray ESC (replaced like any control character) followed by text, so a stray
``ESC ]`` cannot hide the rest of the output; the line being drawn is handed on once it is longer than
:data:`MAX_LINE_CHARS` (as a terminal wraps it): a later ``\\r`` then redraws only the
part still held. Memory per stream is therefore bounded, whatever the command writes.
Time is linear too: text with only ``\\r`` and ``\\n`` among its control characters (progress
bars, CRLF lines) is redrawn a whole line at a time in C-level string operations, not one
``\\r`` at a time; colour and other sequences that draw nothing are removed, and runs
of stray control characters replaced, in C-level passes too. Only sequences that move
the cursor within the line (``\\b``, ``ESC [ K``/``G``/``C``/``D``) cost a Python step
each; the bash tool cleans each chunk in a worker thread, off the event loop.
"""

from __future__ import annotations

import re

__all__ = ["MAX_LINE_CHARS", "MAX_SEQUENCE_CHARS", "TerminalText", "clean_terminal_text"]

MAX_LINE_CHARS = 16384
"""Characters of the line being drawn held back before the front of it is passed on."""

MAX_SEQUENCE_CHARS = 65536
"""Longest unterminated string sequence (OSC, DCS, …) waited for across chunks."""

_MAX_CSI_CHARS = 256
"""Longest unfinished CSI or two-byte escape waited for; longer ones are not sequences."""

REPLACEMENT = "\ufffd"
"""What a control character other than ``\\n`` and ``\\t`` becomes."""

# Anything that is not plain printable text: C0 but \t, DEL, C1.
_SPECIAL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")
# Plain text and newlines only (the fast path).
_ONLY_PLAIN = re.compile("[^\x00-\x08\x0b-\x1f\x7f-\x9f]*")
# Plain text, newlines and carriage returns only (the redraw path).
_ONLY_PLAIN_CR = re.compile("[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*")
# Complete CSI sequences that draw nothing (colours, modes, other rows: all but the
# private-less, intermediate-less K, G, C and D), removed in one C-level pass; only
# where the character before cannot end an unfinished escape (ESC, "[", parameter or
# intermediate bytes), so removing one never joins what is around it into a sequence.
_CSI_DRAWLESS = re.compile(
    r"(?<![\x1b\x20-\x3f\[])\x1b\[(?:[<=>?][\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
    r"|[\x30-\x3f]*[\x20-\x2f]+[\x40-\x7e]"
    r"|[\x30-\x3f]*(?![CDGK])[\x40-\x7e])"
)
# A stretch without newline, \r, \b or ESC: its control characters are only replaced.
_STRAY_RUN = re.compile("[^\n\r\x08\x1b]+")
_STRAY = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Carriage returns right before a newline change nothing a terminal shows.
_CR_NL = re.compile("\r+\n")

_CSI = re.compile(r"\x1b\[([\x30-\x3f]*)([\x20-\x2f]*)([\x40-\x7e])")
_CSI_OPEN = re.compile(r"\x1b\[[\x30-\x3f]*[\x20-\x2f]*\Z")
_STRING_START = re.compile(r"\x1b[\]PX^_]")
_STRING_END = re.compile(r"\x07|\x1b\\")
_ESC_OTHER = re.compile(r"\x1b[\x20-\x2f]*[\x30-\x7e]")
_ESC_OTHER_OPEN = re.compile(r"\x1b[\x20-\x2f]*\Z")


def _number(params: str, default: int) -> int:
    """The first numeric parameter of a CSI sequence, or ``default``."""
    first = params.split(";", 1)[0]
    return int(first) if first.isdigit() else default


class TerminalText:
    """A stream cleaner: :meth:`feed` chunks of decoded output, :meth:`finish` at the end.

    Each call returns the text that is final so far (whole lines, plus the front of an
    overlong line); :attr:`line` is the line being drawn, as a terminal shows it now.
    """

    __slots__ = ("_col", "_line", "_pending")

    def __init__(self) -> None:
        self._line = ""
        self._col = 0
        self._pending = ""  # an escape sequence cut by the end of the last chunk

    @property
    def line(self) -> str:
        """The line being drawn (no newline yet), as a terminal would show it now."""
        return self._line

    def feed(self, text: str) -> str:
        """Clean one chunk; return the text that became final."""
        if self._pending:
            text = self._pending + text
            self._pending = ""
        if "\x1b" in text:
            text = _CSI_DRAWLESS.sub("", text)
        if not text:
            return ""
        out: list[str] = []
        if self._col == len(self._line) and _ONLY_PLAIN.fullmatch(text):
            # The common case: plain lines, nothing to redraw.
            cut = text.rfind("\n") + 1
            if cut:
                out.append(self._line + text[:cut])
                self._line = text[cut:]
            else:
                self._line += text
            self._col = len(self._line)
        elif _ONLY_PLAIN_CR.fullmatch(text):
            # Redrawn lines (progress bars, CRLF): whole runs at a time, not per character.
            self._feed_redraw(text, out)
        else:
            self._feed_slow(text, out)
        if len(self._line) > MAX_LINE_CHARS:
            cut = len(self._line) - MAX_LINE_CHARS // 2
            out.append(self._line[:cut])
            self._line = self._line[cut:]
            self._col = max(0, self._col - cut)
        return "".join(out)

    def finish(self) -> str:
        """The rest: the line being drawn, without a newline (an open escape is dropped)."""
        self._pending = ""
        rest = self._line
        self._line = ""
        self._col = 0
        return rest

    # ---------------------------------------------------------------- the redraw path

    def _plain(self, s: str, out: list[str]) -> None:
        """Write plain text with newlines at the cursor."""
        first = s.find("\n")
        if first < 0:
            self._put(s)
            return
        self._put(s[:first])
        last = s.rfind("\n")
        out.append(self._line)
        out.append(s[first : last + 1])
        self._line = s[last + 1 :]
        self._col = len(self._line)

    def _overlay(self, segments: list[str]) -> None:
        """Write ``segments`` (one line's text split at ``\\r``): the first at the cursor,
        each later one from column 0 over what is there.

        Cost is linear in the text, in C-level passes: a column shows the last segment that
        reaches it, so only the last segment of each length matters, and a chunk of n
        characters holds at most about sqrt(2n) different lengths."""
        self._put(segments[0])
        rest = segments[1:]
        lengths = list(map(len, rest))
        if lengths[-1] == max(lengths):  # the usual redraw: the last segment covers all others
            self._line = rest[-1] + self._line[lengths[-1] :]
            self._col = lengths[-1]
            return
        # The index of the last segment of each length (later ones overwrite earlier keys).
        last_of = dict(zip(lengths, range(len(rest)), strict=True))
        # For each length w: the last segment at least w long (it shows columns below w).
        owner: dict[int, int] = {}
        latest = -1
        for width in sorted(last_of, reverse=True):
            latest = max(latest, last_of[width])
            owner[width] = latest
        parts: list[str] = []
        have = 0
        for width in sorted(owner):
            if width > have:
                parts.append(rest[owner[width]][have:width])
                have = width
        parts.append(self._line[have:])
        self._line = "".join(parts)
        self._col = len(rest[-1])

    def _feed_redraw(self, text: str, out: list[str]) -> None:
        text = _CR_NL.sub("\n", text)
        pos = 0
        while (cr := text.find("\r", pos)) >= 0:
            # The stretch of the line around this \r (from pos at most: earlier text is done).
            nl = text.rfind("\n", pos, cr)
            start = pos if nl < 0 else nl + 1
            end = text.find("\n", cr)
            if end < 0:
                end = len(text)
            if start > pos:
                self._plain(text[pos:start], out)
            self._overlay(text[start:end].split("\r"))
            pos = end
        if pos < len(text):
            self._plain(text[pos:], out)

    # ---------------------------------------------------------------- the slow path

    def _put(self, s: str) -> None:
        if not s:
            return  # nothing drawn: a cursor past the end pads nothing yet
        line, col = self._line, self._col
        if col == len(line):
            self._line = line + s
        elif col > len(line):
            self._line = line + " " * (col - len(line)) + s
        else:
            self._line = line[:col] + s + line[col + len(s) :]
        self._col = col + len(s)

    def _feed_slow(self, text: str, out: list[str]) -> None:
        pos = 0
        n = len(text)
        while pos < n:
            m = _SPECIAL.search(text, pos)
            if m is None:
                self._put(text[pos:])
                return
            i = m.start()
            if i > pos:
                self._put(text[pos:i])
            ch = text[i]
            pos = i + 1
            if ch == "\n":
                out.append(self._line + "\n")
                self._line = ""
                self._col = 0
            elif ch == "\r":
                self._col = 0
            elif ch == "\b":
                self._col = max(0, self._col - 1)
            elif ch == "\x1b":
                pos = self._escape(text, i)
                if pos < 0:
                    return
            else:
                # This and the controls around it up to the next newline, \r, \b or
                # ESC: replaced in one pass, not one at a time.
                run = _STRAY_RUN.match(text, i)
                assert run is not None  # text[i] itself is in the run
                self._put(_STRAY.sub(REPLACEMENT, run.group()))
                pos = run.end()

    def _escape(self, text: str, i: int) -> int:
        """Handle the escape sequence at ``text[i]``; the position after it, or -1 when
        the rest of ``text`` was consumed (kept as pending or skipped)."""
        m = _CSI.match(text, i)
        if m is not None:
            self._csi(m.group(1), m.group(2), m.group(3))
            return m.end()
        if _CSI_OPEN.match(text, i) and len(text) - i <= _MAX_CSI_CHARS:
            self._pending = text[i:]
            return -1
        if _STRING_START.match(text, i):
            end = _STRING_END.search(text, i + 2)
            if end is not None:
                return end.end()
            if len(text) - i <= MAX_SEQUENCE_CHARS:
                self._pending = text[i:]
                return -1
            # Too long to be a sequence: the ESC was a stray byte; what follows is text.
            self._put(REPLACEMENT)
            return i + 1
        m = _ESC_OTHER.match(text, i)
        if m is not None:
            return m.end()
        if i + 1 == len(text) or (
            _ESC_OTHER_OPEN.match(text, i) and len(text) - i <= _MAX_CSI_CHARS
        ):
            self._pending = text[i:]
            return -1
        # ESC followed by something no sequence starts with: a stray control character.
        self._put(REPLACEMENT)
        return i + 1

    def _csi(self, params: str, inter: str, final: str) -> None:
        if inter or (params[:1] in ("?", ">", "<", "=")):
            return  # private modes (cursor visibility, …): nothing to draw
        if final == "K":
            how = _number(params, 0)
            col = self._col
            if how == 0:
                self._line = self._line[:col]
            elif how == 1:
                self._line = " " * min(col + 1, len(self._line)) + self._line[col + 1 :]
            elif how == 2:
                self._line = ""
        elif final == "G":
            self._col = max(0, _number(params, 1) - 1)
        elif final == "C":
            self._col += max(1, _number(params, 1))
        elif final == "D":
            self._col = max(0, self._col - max(1, _number(params, 1)))
        # Everything else (colours, other rows, scrolling, modes) draws no character.


def clean_terminal_text(text: str) -> str:
    """``text`` as :class:`TerminalText` cleans a whole stream."""
    t = TerminalText()
    return t.feed(text) + t.finish()

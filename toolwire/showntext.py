"""Text a person reads to decide something (an approval), with nothing hidden in it.

Some characters are not shown as themselves: control characters (C0, DEL, C1) act on a
terminal, and the Unicode *format* characters (general category Cf) are invisible or
reorder what is around them: the bidirectional overrides and isolates of "Trojan Source"
(U+202A–U+202E, U+2066–U+2069), zero-width spaces and joiners (U+200B–U+200D, U+2060),
the byte order mark (U+FEFF), tag characters (U+E0001, U+E0020–U+E007F) and the rest. The
line and paragraph separators (U+2028, U+2029) break a line where no line break shows.
Lone surrogates (category Cs) cannot be shown at all. Text shown to a user for a decision
has every such character replaced by an escape that names it, so what the user reads is
what runs.

:data:`HIDDEN` matches exactly these characters (Unicode categories Cc, Cf, Cs, Zl, Zp,
as of Unicode 15.0; tests/escape/test_sandbox_escape_approvals.py checks it against :mod:`unicodedata`).

Standard library only.
"""

from __future__ import annotations

import re

__all__ = ["HIDDEN", "escape_hidden", "escape_hidden_json"]

HIDDEN = re.compile(
    "["
    "\x00-\x1f\x7f-\x9f"  # C0, DEL, C1 (Cc)
    "\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f"
    "\ud800-\udfff"  # lone surrogates (Cs)
    "\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
    "]"
)
"""One character of Unicode category Cc, Cf, Cs, Zl or Zp (tab and newline included:
callers that keep them say so)."""


def _display_escape(match: re.Match[str]) -> str:
    c = ord(match.group())
    if c < 0x100:
        return f"\\x{c:02x}"
    if c < 0x10000:
        return f"\\u{c:04x}"
    return f"\\U{c:08x}"


def _json_escape(match: re.Match[str]) -> str:
    c = ord(match.group())
    if c in (0x09, 0x0A):  # whitespace between tokens (inside strings they are escaped)
        return match.group()
    if c < 0x10000:
        return f"\\u{c:04x}"
    c -= 0x10000
    return f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04x}"


def escape_hidden(text: str, *, keep: str = "\n\t") -> str:
    """``text`` with every :data:`HIDDEN` character but those in ``keep`` written as an
    escape: ``\\xNN`` below U+0100 (``ESC`` as ``\\x1b``), ``\\uNNNN`` in the BMP (a
    right-to-left override as ``\\u202e``), ``\\UNNNNNNNN`` above."""
    if keep:
        return HIDDEN.sub(lambda m: m.group() if m.group() in keep else _display_escape(m), text)
    return HIDDEN.sub(_display_escape, text)


def escape_hidden_json(json_text: str) -> str:
    """JSON text with every :data:`HIDDEN` character written as a JSON escape (``\\uNNNN``,
    a surrogate pair above U+FFFF): the same JSON value, with nothing invisible in it.

    Only for JSON text: such characters can occur only inside its strings (a JSON
    encoder already escapes C0 controls), where an escape stands for the character
    itself (RFC 8259 §7). Tab and newline are left alone: in an encoder's output they
    are whitespace between tokens (indentation).
    """
    return HIDDEN.sub(_json_escape, json_text)

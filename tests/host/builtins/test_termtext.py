"""Terminal output cleaned for the model (issue 10 point 10): host/builtins/termtext.py."""

from __future__ import annotations

import pytest
from toolwire.host.builtins.termtext import (
    MAX_LINE_CHARS,
    MAX_SEQUENCE_CHARS,
    TerminalText,
    clean_terminal_text,
)

CASES = [
    ("colour", "\x1b[31mred\x1b[0m plain\n", "red plain\n"),
    ("bold and 256 colours", "\x1b[1;38;5;208mhot\x1b[m\n", "hot\n"),
    ("progress bar by \\r", "10%\r50%\r100%\ndone\n", "100%\ndone\n"),
    ("a shorter redraw keeps the rest, as a terminal", "abcdef\rXY\n", "XYcdef\n"),
    ("erase to end of line", "12345\r\x1b[Kxy\n", "xy\n"),
    ("erase the whole line", "12345\x1b[2K\rxy\n", "xy\n"),
    ("column move", "progress\x1b[1Gdone\n", "doneress\n"),
    ("cursor back and forward", "abc\x1b[2DX\x1b[CY\n", "aXcY\n"),
    ("backspace", "ab\bc\n", "ac\n"),
    ("CRLF", "win\r\nline2\r\n", "win\nline2\n"),
    ("NUL and BEL replaced", "a\x00b\x07c\n", "a\ufffdb\ufffdc\n"),
    ("DEL and C1 replaced", "a\x7fb\x9bc\n", "a\ufffdb\ufffdc\n"),
    ("tab kept", "tab\there\n", "tab\there\n"),
    (
        "OSC title and hyperlink",
        "\x1b]0;title\x07text \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\n",
        "text link\n",
    ),
    ("OSC 52 clipboard write", "\x1b]52;c;aGVsbG8=\x07ok\n", "ok\n"),
    ("DCS string", "\x1bPq#0;2;0;0;0\x1b\\after\n", "after\n"),
    ("charset and save/restore", "\x1b(Bx\x1b7y\x1b8\n", "xy\n"),
    ("screen clear and home", "\x1b[2J\x1b[Hcleared\n", "cleared\n"),
    ("private modes", "\x1b[?25lhidden cursor\x1b[?25h\n", "hidden cursor\n"),
    ("stray ESC", "a\x1b\x01b\n", "a\ufffd\ufffdb\n"),
    ("no final newline", "no newline", "no newline"),
    ("an open escape at the end is dropped", "end\x1b[3", "end"),
]


@pytest.mark.parametrize(("src", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_cleaned_whole_and_split_at_every_point(src: str, want: str) -> None:
    assert clean_terminal_text(src) == want
    for i in range(len(src) + 1):
        for j in range(i, len(src) + 1):
            t = TerminalText()
            got = t.feed(src[:i]) + t.feed(src[i:j]) + t.feed(src[j:]) + t.finish()
            assert got == want, (i, j)


def test_the_line_being_drawn_is_what_a_terminal_shows() -> None:
    t = TerminalText()
    assert t.feed("done 1\n\x1b[32m 10%") == "done 1\n"
    assert t.line == " 10%"
    t.feed("\r 55%")
    assert t.line == " 55%"


def test_an_endless_line_is_passed_on_in_bounded_pieces() -> None:
    t = TerminalText()
    out = []
    for _ in range(100):
        out.append(t.feed("x" * 1000))
        assert len(t.line) <= MAX_LINE_CHARS
    out.append(t.finish())
    assert "".join(out) == "x" * 100_000


def test_an_unterminated_string_sequence_does_not_hide_the_rest() -> None:
    t = TerminalText()
    out = [t.feed("a\x1b]0;")]
    for _ in range(MAX_SEQUENCE_CHARS // 1000 + 2):
        out.append(t.feed("y" * 999 + "\n"))
    out.append(t.feed("b\n"))
    out.append(t.finish())
    text = "".join(out)
    assert text.startswith("a\ufffd]0;yyy") and text.endswith("y\nb\n")
    assert text.count("\n") == MAX_SEQUENCE_CHARS // 1000 + 3

"""Resynchronisation of the Content-Length decoder finds a valid message that follows bad
bytes in the same read, whatever the read boundaries."""

from __future__ import annotations

import pytest

from toolwire.framing import ContentLengthDecoder, FramingError

BODY = b'{"jsonrpc":"2.0","id":"after","method":"ping"}'
GOOD = b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY

CASES = {
    "oversized header block": b"X-Junk: " + b"a" * 8200 + b"\r\n\r\n" + GOOD,
    "header block without a length": b"X-Only: 1\r\n\r\n" + GOOD,
    "short body glued to the next header": b"Content-Length: 10\r\n\r\n" + BODY + GOOD,
    "blanks and tabs before the first header": b"\r\n \t\n" + GOOD,
    "non-numeric length": b"Content-Length: ten\r\n\r\n" + GOOD,
}


def decode(data: bytes, step: int | None) -> list[bytes | FramingError]:
    d = ContentLengthDecoder()
    if step is None:
        return d.feed(data)
    out: list[bytes | FramingError] = []
    for i in range(0, len(data), step):
        out += d.feed(data[i : i + step])
    return out


@pytest.mark.parametrize("step", [None, 1, 7, 4096])
@pytest.mark.parametrize("name", list(CASES))
def test_the_valid_message_after_bad_bytes_is_decoded(name: str, step: int | None) -> None:
    out = decode(CASES[name], step)
    bodies = [o for o in out if isinstance(o, bytes)]
    assert bodies[-1] == BODY, out
    # at most the one garbled message before it is lost or reported
    assert len([o for o in out if isinstance(o, FramingError)]) <= 1

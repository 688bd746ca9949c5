"""Sans-IO framing codecs: bytes in, message bodies out, and back.

Two framings are spoken, chosen per connection:

* ``lsp`` — the Language Server Protocol base protocol: a header block of
  ``Name: value`` lines, each ended by CRLF (a bare LF is tolerated), then an empty
  line, then exactly ``Content-Length`` bytes of UTF-8 JSON. Header names are
  case-insensitive and headers other than Content-Length are ignored.
* ``ndjson`` — the MCP stdio transport: one compact UTF-8 JSON text per line, lines
  ended by LF (a CR before it is dropped). Only the byte 0x0A ends a message, so
  U+2028, U+2029 and U+0085 inside a JSON string are ordinary characters.

Decoders never raise on input. They return a list whose items are either a complete
message body (``bytes``) or a :class:`FramingError` describing bytes that were
dropped; the caller answers the error and keeps reading. Recovery rules:

* A body larger than the maximum message size is skipped without being buffered
  (its length is known), then decoding resumes at the next message.
* A header block without a usable Content-Length (missing, not a decimal number,
  a line that is not a ``Name: value`` header, such as a bare JSON text, or longer
  than 8 KiB) is dropped, and the decoder resynchronises at the next
  ``Content-Length`` header it finds in the stream. A bad line is reported as soon
  as its LF arrives.
* An ndjson line longer than the maximum is discarded through its terminating LF.
"""

from __future__ import annotations

import re
from typing import Literal, Protocol

from ._record import FrozenRecord

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "NDJSON_TERMINATOR",
    "ContentLengthDecoder",
    "Decoder",
    "Framing",
    "FramingError",
    "NdjsonDecoder",
    "detect_framing",
    "encode",
    "lsp_header",
    "make_decoder",
]

Framing = Literal["lsp", "ndjson"]

DEFAULT_MAX_MESSAGE_SIZE = 64 * 1024 * 1024
"""Largest accepted message body, in bytes (64 MiB)."""

MAX_HEADER_BLOCK = 8 * 1024
"""Largest accepted LSP header block, in bytes."""


class FramingError(FrozenRecord):
    """Bytes the decoder had to drop, and why.

    Attributes:
        code: the JSON-RPC error code to answer with (-32700 or -32600).
        message: a human-readable reason.
        dropped: how many bytes were (or will be) discarded; 0 when unknown.
    """

    __slots__ = __match_args__ = ("code", "message", "dropped")
    code: int
    message: str
    dropped: int

    def __init__(self, code: int, message: str, dropped: int = 0) -> None:
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "dropped", dropped)


class Decoder(Protocol):
    """A sans-IO decoder: feed bytes, receive zero or more frames."""

    max_message_size: int

    def feed(self, data: bytes) -> list[bytes | FramingError]:
        """Consume ``data``; return the complete bodies and errors it finished."""
        ...

    def pending(self) -> int:
        """Bytes held back waiting for the rest of a message."""
        ...


_CONTENT_LENGTH_RE = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_PLAIN_HEADER = re.compile(rb"Content-Length: ?([0-9]{1,18})\r\n\r\n")
"""The header block almost every peer sends, matched in one step (others take the
general path: any case, other headers, LF-only lines)."""


class ContentLengthDecoder:
    """Decoder for LSP base-protocol framing (``Content-Length: N`` + CRLF CRLF + body).

    Args:
        max_message_size: largest body accepted, in bytes; larger bodies are skipped
            and reported as a -32600 :class:`FramingError`.
    """

    def __init__(self, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self.max_message_size = max_message_size
        self._buf = bytearray()
        self._need: int | None = None  # body length once the header block is parsed
        self._skip = 0  # bytes of an oversized body still to discard
        self._resync = False  # after a bad header: drop bytes until "Content-Length"

    def pending(self) -> int:
        """Bytes held back waiting for the rest of a message."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes | FramingError]:
        """Consume ``data``; return the complete bodies and errors it finished.

        Parsing walks an offset through the input and trims the held-back buffer once
        per call, so a chunk holding thousands of small messages costs linear time.
        """
        out: list[bytes | FramingError] = []
        if self._skip:
            if len(data) <= self._skip:
                self._skip -= len(data)
                return out
            data = data[self._skip :]
            self._skip = 0
        buf = self._buf
        src: bytes | bytearray
        if buf:
            buf += data
            src = buf
        else:
            src = data
        n = len(src)
        pos = 0
        view = memoryview(src)
        try:
            while True:
                need = self._need
                if need is not None:
                    if n - pos < need:
                        break
                    out.append(bytes(view[pos : pos + need]))
                    pos += need
                    self._need = None
                    continue
                if self._resync:
                    m = _CONTENT_LENGTH_RE.search(src, pos)
                    if m is None:
                        # Keep a tail long enough to hold a split "Content-Length".
                        pos = max(pos, n - 32)
                        break
                    pos = m.start()
                    self._resync = False
                # Skip blank lines and blanks between messages (some peers send CRLF
                # after bodies; detection skips leading whitespace too).
                while pos < n and src[pos] in (9, 10, 13, 32):
                    pos += 1
                if pos >= n:
                    break
                fast = _PLAIN_HEADER.match(src, pos)
                if fast is not None:  # the usual lone "Content-Length: N" header
                    plain_length = int(fast.group(1))
                    if plain_length <= self.max_message_size:
                        pos = fast.end()
                        self._need = plain_length
                        continue
                end, sep_len = _find_header_end(src, pos)
                if end < 0:
                    nl = src.find(b"\n", pos, pos + MAX_HEADER_BLOCK)
                    if nl >= 0 and not _is_header_line(src[pos:nl]):
                        # A whole line that is no header (a bare JSON text without its
                        # header block): answered now, not held until 8 KiB arrive.
                        out.append(FramingError(-32700, _NOT_A_HEADER))
                        pos += 1
                        self._resync = True
                        continue
                    if n - pos > MAX_HEADER_BLOCK:
                        out.append(
                            FramingError(
                                -32700, "LSP header block too long or unterminated", n - pos
                            )
                        )
                        # Resynchronise at the next Content-Length after this block's
                        # start, which may already be in the buffer.
                        pos += 1
                        self._resync = True
                        continue
                    break
                header = bytes(view[pos:end])
                length = _content_length(header)
                if length is None:
                    out.append(FramingError(-32700, _NOT_A_HEADER))
                    # A short body glued to the next header makes a bad block that holds
                    # the next message's Content-Length: search from inside the block.
                    pos += 1
                    self._resync = True
                    continue
                pos = end + sep_len
                if length > self.max_message_size:
                    out.append(
                        FramingError(
                            -32600,
                            f"Message of {length} bytes exceeds the limit of "
                            f"{self.max_message_size} bytes",
                            length,
                        )
                    )
                    if n - pos >= length:
                        pos += length
                        continue
                    self._skip = length - (n - pos)
                    pos = n
                    break
                self._need = length
        finally:
            view.release()
        if src is buf:
            del buf[:pos]
        elif pos < n:
            buf += src[pos:]
        return out


def _find_header_end(buf: bytes | bytearray, pos: int = 0) -> tuple[int, int]:
    """Index of the empty line ending the header block that starts at ``pos``, and the
    separator's length; (-1, 0) when it is not within :data:`MAX_HEADER_BLOCK` bytes."""
    lim = min(len(buf), pos + MAX_HEADER_BLOCK + 4)
    crlf = buf.find(b"\r\n\r\n", pos, lim)
    lf = buf.find(b"\n\n", pos, lim)
    if crlf >= 0 and (lf < 0 or crlf <= lf + 1):
        return crlf, 4
    if lf >= 0:
        return lf, 2
    return -1, 0


_HEADER_NAME = re.compile(rb"[ \t]*[A-Za-z0-9_-]+[ \t]*")
"""A header line's name: a token (RFC 9110 §5.1 narrowed to what detection accepts)."""


_NOT_A_HEADER = "LSP header block without a valid Content-Length"


def _is_header_line(line: bytes | bytearray) -> bool:
    """True for a ``Name: value`` line whose name is a token."""
    name, sep, _ = line.partition(b":")
    return bool(sep) and _HEADER_NAME.fullmatch(name) is not None


def _content_length(header: bytes) -> int | None:
    length: int | None = None
    for line in header.split(b"\n"):
        name, _, value = line.partition(b":")
        if not _is_header_line(line):
            # Not a header line at all: e.g. a bare JSON text sent without a header
            # block, which must be answered, not skipped as an unknown header.
            return None
        if name.strip().lower() == b"content-length":
            v = value.strip()
            if not v.isdigit() or len(v) > 18:
                return None
            length = int(v)
    return length


class NdjsonDecoder:
    """Decoder for newline-delimited JSON (MCP stdio): one message per LF-ended line.

    Args:
        max_message_size: longest line accepted, in bytes; longer lines are discarded
            through their LF and reported as a -32600 :class:`FramingError`.
    """

    def __init__(self, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self.max_message_size = max_message_size
        self._buf = bytearray()
        self._discarding = 0  # >0 while dropping the rest of an oversized line

    def pending(self) -> int:
        """Bytes held back waiting for the rest of a message."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes | FramingError]:
        """Consume ``data``; return the complete bodies and errors it finished."""
        out: list[bytes | FramingError] = []
        start = 0
        if self._discarding:
            nl = data.find(b"\n")
            if nl < 0:
                self._discarding += len(data)
                return out
            self._discarding += nl
            out.append(self._too_long(self._discarding))
            self._discarding = 0
            start = nl + 1
        buf = self._buf
        if buf:
            nl = data.find(b"\n", start)
            if nl < 0:
                buf += data[start:] if start else data
                self._check_overflow(out)
                return out
            buf += data[start:nl]
            line = bytes(buf)
            buf.clear()
            self._emit(line, out)
            start = nl + 1
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            self._emit(data[start:nl], out)
            start = nl + 1
        if start < len(data):
            buf += data[start:]
            self._check_overflow(out)
        return out

    def _emit(self, line: bytes, out: list[bytes | FramingError]) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > self.max_message_size:
            out.append(self._too_long(len(line)))
            return
        if line.strip():
            out.append(line)

    def _check_overflow(self, out: list[bytes | FramingError]) -> None:
        if len(self._buf) > self.max_message_size + 1:
            self._discarding = len(self._buf)
            self._buf.clear()

    def _too_long(self, n: int) -> FramingError:
        return FramingError(
            -32600,
            f"Message of {n} bytes exceeds the limit of {self.max_message_size} bytes",
            n,
        )


_TOKEN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
_DETECT_LIMIT = 256
"""Bytes of a would-be header name examined before settling on ndjson."""


def detect_framing(prefix: bytes) -> Framing | None:
    """Guess the framing from the first bytes a peer sent.

    Leading whitespace is skipped. The stream is ``lsp`` when it starts with a header
    line, i.e. a name of letters, digits, ``-`` or ``_`` followed (after optional
    blanks) by ``:``, as in ``Content-Length: 42``. Anything else is ``ndjson``: a
    JSON text starts with ``{`` or ``[``, and garbage is then answered line by line
    with -32700 instead of stalling an LSP decoder that waits for a header. Returns
    None while the bytes seen so far could still begin either.
    """
    stripped = prefix.lstrip(b" \t\r\n")
    if not stripped:
        return None
    n = len(stripped)
    i = 0
    while i < n and i < _DETECT_LIMIT and stripped[i] in _TOKEN:
        i += 1
    if i == 0 or i >= _DETECT_LIMIT:
        return "ndjson"
    while i < n and stripped[i] in b" \t":
        i += 1
    if i == n:
        return None  # need more bytes to see what follows the name
    return "lsp" if stripped[i] == 0x3A else "ndjson"


def make_decoder(framing: Framing, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> Decoder:
    """Return a fresh decoder for ``framing``."""
    if framing == "lsp":
        return ContentLengthDecoder(max_message_size)
    return NdjsonDecoder(max_message_size)


NDJSON_TERMINATOR = b"\n"
"""What ends an ndjson frame: the byte 0x0A after the compact JSON body."""


def lsp_header(length: int) -> bytes:
    """The LSP header block that precedes a body of ``length`` bytes:
    ``Content-Length: <length>\\r\\n\\r\\n`` (the only header toolwire sends)."""
    return b"Content-Length: %d\r\n\r\n" % length


def encode(framing: Framing, body: bytes) -> bytes:
    """Frame one JSON body for ``framing``: an LSP header block before it, or an LF after
    it (an ndjson body must hold no raw LF; compact JSON never does). The session queues
    the same parts separately so a large body is not copied."""
    if framing == "lsp":
        return lsp_header(len(body)) + body
    return body + NDJSON_TERMINATOR

"""Sans-IO framing codecs (toolwire.framing), checked with hypothesis and by example."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import _json
from toolwire.framing import (
    ContentLengthDecoder,
    FramingError,
    NdjsonDecoder,
    detect_framing,
    encode,
    make_decoder,
)
from toolwire.messages import Notification, Request, Response, classify

# ---------------------------------------------------------------------------- strategies

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
# Text rich in the characters that trip line-based and length-based framing.
tricky_text = st.text(
    alphabet=st.sampled_from(
        ["a", "é", "中", "😀", "\u2028", "\u2029", "\u0085", "\n", "\r", '"', "\\", "\x00"]
    )
    | st.characters(),
    max_size=40,
)
ids = st.integers(min_value=-(2**70), max_value=2**70) | st.text(max_size=10)
params = st.none() | st.dictionaries(st.text(max_size=8), json_values | tricky_text, max_size=4)


@st.composite
def messages(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from(["request", "notification", "result", "error"]))
    msg: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind in ("request", "notification"):
        msg["method"] = draw(tricky_text)
        p = draw(params)
        if p is not None:
            msg["params"] = p
        if kind == "request":
            msg["id"] = draw(ids)
    elif kind == "result":
        msg["id"] = draw(ids)
        msg["result"] = draw(json_values | tricky_text)
    else:
        msg["id"] = draw(ids)
        msg["error"] = {"code": draw(st.integers(-33000, 0)), "message": draw(tricky_text)}
    return msg


def decode_all(
    framing: str, chunks: list[bytes], max_size: int = 1 << 20
) -> list[bytes | FramingError]:
    dec = make_decoder(framing, max_size)  # type: ignore[arg-type]
    out: list[bytes | FramingError] = []
    for c in chunks:
        out += dec.feed(c)
    return out


def bodies(frames: list[bytes | FramingError]) -> list[Any]:
    return [_json.loads(f) for f in frames if isinstance(f, bytes)]


# ---------------------------------------------------------------------------- properties


@settings(max_examples=200, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=5), st.sampled_from(["lsp", "ndjson"]))
def test_every_message_round_trips(msgs: list[dict[str, Any]], framing: str) -> None:
    wire = b"".join(encode(framing, _json.dumps(m)) for m in msgs)  # type: ignore[arg-type]
    frames = decode_all(framing, [wire])
    assert all(isinstance(f, bytes) for f in frames)
    assert bodies(frames) == msgs
    # and each decodes to the message kind it was built as
    for m in bodies(frames):
        kind = classify(m)
        if "method" in m:
            assert isinstance(kind, Request if "id" in m else Notification)
        else:
            assert isinstance(kind, Response)


@settings(max_examples=60, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=3), st.sampled_from(["lsp", "ndjson"]))
def test_split_at_every_byte_boundary_decodes_the_same(
    msgs: list[dict[str, Any]], framing: str
) -> None:
    wire = b"".join(encode(framing, _json.dumps(m)) for m in msgs)  # type: ignore[arg-type]
    whole = decode_all(framing, [wire])
    for cut in range(len(wire) + 1):
        assert decode_all(framing, [wire[:cut], wire[cut:]]) == whole
    # and byte by byte
    assert decode_all(framing, [wire[i : i + 1] for i in range(len(wire))]) == whole


@settings(max_examples=300, deadline=None)
@given(
    st.binary(max_size=400),
    st.sampled_from(["lsp", "ndjson"]),
    st.integers(min_value=1, max_value=64),
    st.integers(min_value=1, max_value=50),
)
def test_random_bytes_never_crash_a_decoder(
    data: bytes, framing: str, max_size: int, chunk: int
) -> None:
    dec = make_decoder(framing, max_size)  # type: ignore[arg-type]
    for i in range(0, len(data), chunk):
        for frame in dec.feed(data[i : i + chunk]):
            assert isinstance(frame, (bytes, FramingError))
            if isinstance(frame, bytes):
                assert len(frame) <= max_size
    detect_framing(data)  # never raises either


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200), messages(), st.sampled_from(["lsp", "ndjson"]))
def test_garbage_then_a_valid_message_still_decodes_it(
    garbage: bytes, msg: dict[str, Any], framing: str
) -> None:
    # ndjson resynchronises at the next LF; lsp at the next Content-Length header.
    sep = b"\n" if framing == "ndjson" else b"\r\n\r\n"
    wire = garbage + sep + encode(framing, _json.dumps(msg))  # type: ignore[arg-type]
    frames = decode_all(framing, [wire])
    assert bodies(frames[-1:]) == [msg]


@settings(max_examples=100, deadline=None)
@given(messages())
def test_ndjson_bodies_hold_no_raw_newline(msg: dict[str, Any]) -> None:
    body = _json.dumps(msg)
    assert b"\n" not in body and b"\r" not in body
    assert json.loads(body) == msg


# ---------------------------------------------------------------------------- Content-Length


def test_content_length_header_is_case_insensitive_and_others_are_ignored() -> None:
    body = b'{"a":1}'
    wire = (
        b"content-LENGTH:7\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"
        + body
        + b"CONTENT-LENGTH :  7\r\nX-Other: y\r\n\r\n"
        + body
    )
    assert decode_all("lsp", [wire]) == [body, body]


def test_lf_only_headers_are_tolerated() -> None:
    assert decode_all("lsp", [b"Content-Length: 2\n\n{}Content-Length: 2\n\n[]"]) == [b"{}", b"[]"]


def test_length_is_in_bytes_not_characters() -> None:
    body = json.dumps({"t": "😀中\u2028"}, ensure_ascii=False).encode()
    assert len(body) != len(body.decode())
    assert decode_all("lsp", [encode("lsp", body)]) == [body]


def test_oversized_message_is_skipped_then_the_next_decodes() -> None:
    big = b'{"x":"' + b"a" * 100 + b'"}'
    small = b'{"y":1}'
    wire = encode("lsp", big) + encode("lsp", small)
    for split in (0, 10, 30, len(wire) - 5):
        frames = decode_all("lsp", [wire[:split], wire[split:]], max_size=50)
        assert len(frames) == 2
        err = frames[0]
        assert isinstance(err, FramingError) and err.code == -32600
        assert err.dropped == len(big)
        assert frames[1] == small


def test_message_of_exactly_the_maximum_is_accepted() -> None:
    body = b'{"x":"' + b"a" * 10 + b'"}'
    assert decode_all("lsp", [encode("lsp", body)], max_size=len(body)) == [body]
    assert decode_all("ndjson", [encode("ndjson", body)], max_size=len(body)) == [body]
    over = decode_all("ndjson", [encode("ndjson", body)], max_size=len(body) - 1)
    assert len(over) == 1 and isinstance(over[0], FramingError)


def test_malformed_header_gives_an_error_then_resynchronises() -> None:
    good = encode("lsp", b'{"ok":true}')
    for bad in (
        b"Content-Length: abc\r\n\r\n{}",  # not a number
        b"Content-Type: x\r\n\r\n{}",  # no Content-Length at all
        b"this is not a header\r\n\r\n",  # not a header line
        b"Content-Length: -5\r\n\r\n",
    ):
        frames = decode_all("lsp", [bad + good])
        assert isinstance(frames[0], FramingError), bad
        assert frames[0].code == -32700
        assert frames[-1] == b'{"ok":true}', bad


def test_unterminated_header_block_is_bounded() -> None:
    dec = ContentLengthDecoder()
    frames = dec.feed(b"X" * 20000)
    assert len(frames) == 1 and isinstance(frames[0], FramingError)
    assert dec.pending() <= 64
    assert dec.feed(encode("lsp", b"{}")) == [b"{}"]


def test_oversized_skip_does_not_buffer_the_body() -> None:
    dec = ContentLengthDecoder(max_message_size=10)
    frames = dec.feed(b"Content-Length: 5000000\r\n\r\n")
    assert isinstance(frames[0], FramingError)
    for _ in range(50):
        assert dec.feed(b"z" * 100_000) == []
        assert dec.pending() == 0
    assert dec.feed(encode("lsp", b"{}")) == [b"{}"]


# ---------------------------------------------------------------------------- ndjson


def test_ndjson_unicode_line_separators_are_not_line_breaks() -> None:
    msg = {"t": "a\u2028b\u2029c\u0085d"}
    body = json.dumps(msg, ensure_ascii=False).encode()
    assert "\u2028".encode() in body
    assert bodies(decode_all("ndjson", [body + b"\n"])) == [msg]


def test_ndjson_crlf_and_blank_lines() -> None:
    assert decode_all("ndjson", [b'{"a":1}\r\n\n  \n{"b":2}\n']) == [b'{"a":1}', b'{"b":2}']


def test_ndjson_oversized_line_is_dropped_through_its_newline() -> None:
    dec = NdjsonDecoder(max_message_size=20)
    out = dec.feed(b'{"x":"' + b"a" * 50)
    out += dec.feed(b"a" * 50)
    assert dec.pending() <= 21
    out += dec.feed(b'"}\n{"y":1}\n')
    assert len(out) == 2
    assert isinstance(out[0], FramingError) and out[0].code == -32600
    assert out[1] == b'{"y":1}'


# ---------------------------------------------------------------------------- detection


def test_detect_framing() -> None:
    assert detect_framing(b"") is None
    assert detect_framing(b"  \r\n") is None
    assert detect_framing(b'{"jsonrpc"') == "ndjson"
    assert detect_framing(b"[{") == "ndjson"
    assert detect_framing(b"Content-Length: 5\r\n") == "lsp"
    assert detect_framing(b"content-type : x") == "lsp"
    assert detect_framing(b"Content-Len") is None  # could still be a header
    # garbage that is not a header line: ndjson, so it is answered per line
    assert detect_framing(b"hello world\n") == "ndjson"
    assert detect_framing(b"\xff\xfe") == "ndjson"
    assert detect_framing(b"x" * 300) == "ndjson"

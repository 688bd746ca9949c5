"""Exact big integers in large messages too (the large-message path skips the digit scan)."""

from __future__ import annotations

import pytest

from toolwire._json import RawJSON, dumps, loads


@pytest.mark.parametrize("pad", [0, 10_000])
@pytest.mark.parametrize(
    "literal, value",
    [
        ("-9223372036854775809", -9223372036854775809),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        ("18446744073709551616", 18446744073709551616),
        ("9223372036854775807", 9223372036854775807),
    ],
)
def test_big_integers_are_exact_in_small_and_large_texts(
    pad: int, literal: str, value: int
) -> None:
    text = '{"pad":"' + "x" * pad + '","n":' + literal + "}"
    got = loads(text.encode())
    assert type(got["n"]) is int and got["n"] == value


@pytest.mark.parametrize("pad", [0, 10_000])
def test_big_floats_stay_floats(pad: int) -> None:
    got = loads(('{"pad":"' + "x" * pad + '","f":1e30,"g":12345678901234567890.5}').encode())
    assert got["f"] == 1e30 and type(got["f"]) is float
    assert type(got["g"]) is float


@pytest.mark.parametrize("pad", [0, 10_000])
def test_overflowing_numbers_are_refused(pad: int) -> None:
    with pytest.raises(ValueError):
        loads(('{"pad":"' + "x" * pad + '","f":1e999}').encode())


def test_raw_json_is_written_as_it_is_on_both_encoders() -> None:
    """A RawJSON value (an input schema listed from the worker definition cache) is
    spliced in by orjson, and decoded for the stdlib fallback (a lone surrogate or an
    integer beyond 64 bits elsewhere in the same message sends the whole message there)."""
    raw = RawJSON(b'{"type":"object","properties":{"a":{"type":"string"}}}')
    assert dumps({"inputSchema": raw}) == (
        b'{"inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}'
    )
    fallback = dumps({"inputSchema": raw, "n": 2**70, "s": "\ud800"})
    assert loads(fallback) == {
        "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}},
        "n": 2**70,
        "s": "\ud800",
    }
    assert raw == {"type": "object", "properties": {"a": {"type": "string"}}}
    # Spliced, never decoded and encoded again: its bytes reach the output as they are.
    assert dumps([RawJSON(b'{"a": 1}')]) == b'[{"a": 1}]'
    with pytest.raises(TypeError):
        dumps({"x": object()})

"""Compact JSON encoding and strict decoding, orjson first with a stdlib fallback.

orjson is used on the hot path. The fallback covers what orjson refuses but JSON
allows: integers beyond 64 bits (RFC 8259 §6 leaves their range to implementations).
NaN and Infinity are rejected both ways, as RFC 8259 §6 has no such numbers.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["JSONDecodeError", "dumps", "loads"]

JSONDecodeError = ValueError
"""Raised by :func:`loads` for any input that is not one strict UTF-8 JSON text."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse one JSON text (UTF-8 bytes or str).

    Raises:
        ValueError: the input is not valid UTF-8 or not a single strict JSON text.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        # orjson refuses integers outside 64 bits; the stdlib parser does not.
        try:
            text = bytes(data).decode("utf-8") if not isinstance(data, str) else data
            return json.loads(text, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            raise ValueError(str(exc)) from None


def dumps(obj: Any) -> bytes:
    """Serialise to compact UTF-8 JSON bytes with no raw newline characters.

    Raises:
        TypeError: the object holds something JSON cannot represent.
    """
    try:
        return orjson.dumps(obj)
    except TypeError:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
            "utf-8"
        )

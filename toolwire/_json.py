"""Compact JSON encoding and strict decoding, orjson first with a stdlib fallback.

orjson is used on the hot path. The fallback covers what orjson refuses but JSON
allows: integers beyond 64 bits (RFC 8259 §6 leaves their range to implementations).
NaN and Infinity are rejected both ways, as RFC 8259 §6 has no such numbers.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import orjson

__all__ = [
    "MAX_INT_DIGITS",
    "IntegerTooLong",
    "JSONDecodeError",
    "RawJSON",
    "dumps",
    "loads",
    "lone_surrogates_replaced",
]

JSONDecodeError = ValueError
"""Raised by :func:`loads` for any input that is not one strict UTF-8 JSON text."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text} is out of range")
    return value


MAX_INT_DIGITS = 4300
"""Most digits of an integer read (protocol.md §2): Python's own bound on converting
decimal text to int (``sys.get_int_max_str_digits``), whose cost grows with the square
of the length. Longer integers are refused with :class:`IntegerTooLong`."""


class IntegerTooLong(ValueError):
    """A JSON text holds an integer of more than :data:`MAX_INT_DIGITS` digits."""


def _bounded_int(text: str) -> int:
    digits = len(text) - (text[0] == "-")
    if digits > MAX_INT_DIGITS:
        raise IntegerTooLong(
            f"an integer of {digits} digits is over the limit of {MAX_INT_DIGITS} digits "
            "(send an id that long as a string)"
        )
    return int(text)


_LONG_DIGITS = re.compile(rb"[0-9]{19}")
_LONG_DIGITS_STR = re.compile(r"[0-9]{19}")


MAX_DEPTH = 1024
"""Deepest nesting of arrays and objects accepted (protocol.md §1.3; orjson's own limit)."""


def _stack_depth() -> int:
    frame = sys._getframe()
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    return depth


def _depth(obj: Any) -> int:
    """Nesting depth of arrays and objects in ``obj`` (0 for a scalar), iteratively."""
    deepest = 0
    stack = [(obj, 1)]
    while stack:
        item, level = stack.pop()
        t = type(item)
        if t is dict or t is list:
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in (item.values() if t is dict else item))
    return deepest


def _loads_stdlib(data: bytes | bytearray | memoryview | str) -> Any:
    text = bytes(data).decode("utf-8") if not isinstance(data, str) else data
    # The stdlib decoder recurses once per level: give it room for MAX_DEPTH levels
    # (the default limit of 1,000 frames, less the caller's, refused far fewer).
    limit = sys.getrecursionlimit()
    need = _stack_depth() + MAX_DEPTH + 64
    if need > limit:
        sys.setrecursionlimit(need)
    try:
        obj = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_float=_finite_float,
            parse_int=_bounded_int,
        )
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    finally:
        if need > limit:
            sys.setrecursionlimit(limit)
    if _depth(obj) > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels")
    return obj


def _has_lossy_float(obj: Any) -> bool:
    """True when orjson may have turned an out-of-range integer into a float: some float
    in ``obj`` is integral and at least 2**63 in magnitude (a genuine float of that size
    is re-read the same way by the stdlib, so the check can only cost time, not change
    a value). Walks containers iteratively; cost is per value, not per byte."""
    stack = [obj]
    while stack:
        item = stack.pop()
        t = type(item)
        if t is dict:
            stack.extend(item.values())
        elif t is list:
            stack.extend(item)
        elif t is float and abs(item) >= 9.2e18 and item == item and item.is_integer():
            return True
    return False


_SMALL = 4096
"""Messages up to this many bytes are checked for long digit runs with a regex (cheap
at that size); larger ones are parsed first and their floats inspected instead, since
a regex scan costs time per byte (about 90 ms on a 5 MiB text)."""


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse one JSON text (UTF-8 bytes or str).

    Integers are exact at any size: orjson turns integers outside the 64-bit range
    into floats, so such texts are parsed by the stdlib instead (a request id or
    argument of ``-9223372036854775809`` comes back as that int). The stdlib also
    accepts lone surrogate escapes (``"\\ud800"``), which orjson refuses. Numbers that
    overflow a double are refused.

    Raises:
        IntegerTooLong: an integer of more than :data:`MAX_INT_DIGITS` digits (a
            ValueError too).
        ValueError: the input is not valid UTF-8 or not a single strict JSON text.
    """
    error: ValueError
    if len(data) <= _SMALL:
        long_digits = (
            _LONG_DIGITS_STR.search(data) if isinstance(data, str) else _LONG_DIGITS.search(data)
        )
        if long_digits is None:
            try:
                return orjson.loads(data)
            except orjson.JSONDecodeError as exc:
                error = exc
        else:
            error = ValueError("invalid JSON")
    else:
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            error = exc
        else:
            if not _has_lossy_float(obj):
                return obj
            error = ValueError("invalid JSON")
    try:
        return _loads_stdlib(data)
    except IntegerTooLong:
        raise
    except (ValueError, RecursionError) as exc:
        raise ValueError(str(exc if str(error) == "invalid JSON" else error)) from None


class RawJSON:
    """A JSON value encoded already, which :func:`dumps` writes as it is, without
    decoding it and encoding it again (the input schemas of tools listed from the worker
    definition cache, :mod:`toolwire.host.workers.listcache`: megabytes of them for a
    large module).

    Attributes:
        data: one JSON text, compact UTF-8, as orjson wrote it (never checked here:
            whoever makes one vouches for it).
    """

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def decoded(self) -> Any:
        """The value (decoded at each call)."""
        return orjson.loads(self.data)

    def __eq__(self, other: object) -> bool:
        if type(other) is RawJSON:
            return self.data == other.data
        return bool(self.decoded() == other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RawJSON({len(self.data)} bytes)"


def _orjson_default(obj: Any) -> Any:
    if type(obj) is RawJSON:
        return orjson.Fragment(obj.data)
    raise TypeError(f"Type is not JSON serializable: {type(obj).__name__}")


def _stdlib_default(obj: Any) -> Any:
    if type(obj) is RawJSON:
        return obj.decoded()
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def dumps(obj: Any, *, replace_surrogates: bool = False) -> bytes:
    """Serialise to compact UTF-8 JSON bytes with no raw newline characters.

    orjson handles almost everything. The stdlib fallback covers integers beyond 64
    bits and strings holding lone surrogates (which a peer can send as ``"\\ud800"``,
    and which a file name that is not UTF-8 decodes to). By default those are written
    as ``\\uXXXX`` escapes, so the output is always valid UTF-8 and reads back the
    same (:func:`loads`). With ``replace_surrogates`` (what a session sends: see
    :func:`lone_surrogates_replaced`) each lone surrogate becomes U+FFFD instead, as
    a peer's JSON or UTF-8 encoder refuses them (Python's "surrogates not allowed").
    The bytes returned hold their length of memory: orjson's output is copied out of
    the larger buffer it was written into.

    Raises:
        TypeError: the object holds something JSON cannot represent.
        ValueError: a float that is NaN or infinite (RFC 8259 §6), a cycle, or nesting
            deeper than :data:`MAX_DEPTH` levels.
    """
    try:
        out = orjson.dumps(obj, default=_orjson_default)
    except TypeError:
        return _dumps_stdlib(obj, replace_surrogates)
    # orjson's output keeps the whole buffer it wrote into: 4 KiB at least, and about
    # ten times the text's length for a long string (room for the worst escaping). A
    # queue of messages would hold that, not their length; a copy holds its length.
    return bytes(memoryview(out))


def lone_surrogates_replaced(text: str) -> str:
    """``text`` with each lone surrogate (U+D800..U+DFFF not part of a high-low pair)
    replaced by U+FFFD; a pair held as two code points becomes the one character it
    encodes in UTF-16 (the Unicode Standard §3.9, D91)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _dumps_stdlib(obj: Any, replace_surrogates: bool = False) -> bytes:
    """The stdlib encoder, given room for :data:`MAX_DEPTH` levels (it recurses per level;
    orjson stops at 255). Nesting deeper than that is a ValueError, never a
    RecursionError (a cycle is the encoder's own ValueError).

    With ``replace_surrogates``, the ``"id"`` of a message (``obj`` a JSON-RPC object)
    is kept as the peer sent it: a response carries the request's id unchanged
    (JSON-RPC 2.0 §5), so a peer that sent a lone surrogate in one reads it back."""
    if replace_surrogates and type(obj) is dict:
        rid = obj.get("id")
        if isinstance(rid, str) and not _encodable(rid):
            rest = _dumps_stdlib({k: v for k, v in obj.items() if k != "id"}, True)
            head = b'{"id":' + json.dumps(rid).encode("ascii")
            return head + (b"}" if rest == b"{}" else b"," + rest[1:])
    limit = sys.getrecursionlimit()
    need = _stack_depth() + 2 * MAX_DEPTH + 64  # the encoder takes two frames a level
    if need > limit:
        sys.setrecursionlimit(need)
    try:
        text = json.dumps(
            obj,
            ensure_ascii=False,
            separators=(",", ":"),
            allow_nan=False,
            default=_stdlib_default,
        )
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            if replace_surrogates:
                return lone_surrogates_replaced(text).encode("utf-8")
            return json.dumps(
                obj, separators=(",", ":"), allow_nan=False, default=_stdlib_default
            ).encode("ascii")
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    finally:
        if need > limit:
            sys.setrecursionlimit(limit)

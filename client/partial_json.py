"""Tool-call arguments from JSON text that may still be arriving (streamed) or be cut off.

Two parsers, for the two moments of a streamed tool call:

* :func:`parse_partial_arguments`: while deltas arrive, for a UI. Blank text is ``{}``;
  text that parses is used as it is; otherwise the longest prefix that can be closed
  (open strings and containers closed, a dangling key, colon or comma dropped) is
  used; failing all that, ``{}``. Never raises.
* :func:`parse_final_arguments`: once the call is complete. Blank text is ``{}``;
  anything else must be one JSON object, or :class:`ArgumentsError` says why. A call
  whose final text does not parse is never executed with guessed arguments.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ArgumentsError", "parse_final_arguments", "parse_partial_arguments"]


class ArgumentsError(ValueError):
    """The final argument text of a tool call is not a JSON object."""


def parse_final_arguments(text: str) -> dict[str, Any]:
    """Parse a complete tool call's argument text strictly.

    Args:
        text: the argument JSON as the model produced it.

    Returns:
        The arguments object; ``{}`` for blank text (a call without arguments).

    Raises:
        ArgumentsError: the text is not valid JSON, or not an object.
    """
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ArgumentsError(f"the arguments are not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ArgumentsError(f"the arguments must be a JSON object, not {type(value).__name__}")
    return value


def parse_partial_arguments(text: str) -> dict[str, Any]:
    """Best-effort arguments from a prefix of an argument object's JSON text.

    ``'{"path": "src/ma'`` gives ``{"path": "src/ma"}``; ``'{"a": 1, "b'`` gives
    ``{"a": 1}``; ``''`` and anything hopeless give ``{}``. Never raises.
    """
    s = text.strip()
    if not s:
        return {}
    try:
        value = json.loads(s)
    except ValueError:
        value = _complete_prefix(s)
    return value if isinstance(value, dict) else {}


def _complete_prefix(s: str) -> Any:
    """Close the longest prefix of ``s`` that becomes valid JSON; None when none does.

    One scan records cut points: right after an opening bracket and right before a
    comma (outside strings), each with the stack of containers open there. The whole
    text (an open string closed, a dangling escape dropped) is tried first, then the
    cut points from the end.
    """
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    in_string = False
    escape = False
    for i, ch in enumerate(s):
        if in_string:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
            cuts.append((i + 1, "".join(reversed(stack))))
        elif ch in "}]":
            if stack:
                stack.pop()
        elif ch == ",":
            cuts.append((i, "".join(reversed(stack))))
    tail = s
    if in_string:
        if escape:
            tail = tail[:-1]
        tail += '"'
    candidates = [tail + "".join(reversed(stack))]
    candidates += [s[:pos] + closers for pos, closers in reversed(cuts)]
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None

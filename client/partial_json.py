"""Tool-call arguments from JSON text that may still be arriving (streamed) or be cut off.

Two parsers, for the two moments of a streamed tool call:

* :func:`parse_partial_arguments`: while deltas arrive, for a UI. Blank text is ``{}``;
  otherwise ``pydantic_core.from_json(text, allow_partial="trailing-strings")`` reads the
  longest complete prefix (open strings kept as far as they go, open containers
  closed, a dangling key or value dropped); anything that is not an object, or not
  JSON at all, is ``{}``. Never raises.
* :func:`parse_final_arguments`: once the call is complete. Blank text is ``{}``;
  anything else must be exactly one JSON object, or :class:`ArgumentsError` says why. A
  call whose final text does not parse is never executed with guessed arguments.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core

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
        ArgumentsError: the text is not valid JSON (RFC 8259: one value, nothing after
            it), or not an object.
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
    ``{"a": 1}``; ``''``, a prefix of something other than an object, and text that is
    not JSON give ``{}``. Never raises.
    """
    if not text.strip():
        return {}
    try:
        value = pydantic_core.from_json(text, allow_partial="trailing-strings")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}

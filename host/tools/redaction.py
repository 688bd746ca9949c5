"""Real ``[secrets]`` values redacted from what a tool's call sends to its client.

:mod:`toolwire.host.sandbox.egress.credentials` registers the values when the configuration is read;
the executor passes every call's wire result through :func:`redact` (one place for both
protocol eras, worker calls included: their results come back through the host's
stand-in tool) and :meth:`toolwire.host.tools.context.ToolContext.report_progress` and the
worker pool's progress relay pass progress messages through :func:`redact_text`. Kept
apart from the proxy so that the executor imports nothing heavy.
"""

from __future__ import annotations

import threading
from typing import Any, TypeVar, cast

from toolwire._json import MAX_DEPTH

_T = TypeVar("_T")

__all__ = ["redact", "redact_text", "register", "registered", "unregister"]

_REGISTERED: list[tuple[str, str]] = []
_LOCK = threading.Lock()


def register(pairs: list[tuple[str, str]]) -> None:
    """Redact these ``(name, value)`` pairs from results and progress in this process."""
    with _LOCK:
        _REGISTERED.extend(p for p in pairs if p[1])


def unregister(pairs: list[tuple[str, str]]) -> None:
    """Stop redacting these ``(name, value)`` pairs (one registration of each): for a
    process that ends a host it registered them for (an embedding, a test)."""
    with _LOCK:
        for pair in pairs:
            if pair in _REGISTERED:
                _REGISTERED.remove(pair)


def registered() -> list[tuple[str, str]]:
    """The ``(name, value)`` pairs redacted in this process now (a copy)."""
    with _LOCK:
        return list(_REGISTERED)


def redact_text(text: str) -> str:
    """``text`` with every registered value replaced by ``[secret NAME redacted]``."""
    for name, value in _REGISTERED:
        if value in text:
            text = text.replace(value, f"[secret {name} redacted]")
    return text


def redact(value: _T) -> _T:
    """``value`` (a wire result: dicts, lists, strings) with :func:`redact_text` applied
    to every string in it, keys included; the very same object when nothing is
    registered (the common case costs one check).

    Walked without recursion, so a result nested hundreds of levels deep is redacted
    like any other (recursing, 500 levels overflowed Python's stack and the call failed).
    Below :data:`toolwire._json.MAX_DEPTH` levels nothing is copied: a value that deep is
    refused by the encoder and never reaches the wire (protocol.md §1.3), and a value
    that holds itself is not walked forever.
    """
    if not _REGISTERED:
        return value
    return cast(_T, _redact(value))


def _redact(value: Any) -> Any:
    if not isinstance(value, (dict, list)):
        return redact_text(value) if isinstance(value, str) else value
    top: list[Any] = [None]
    # (value, the container its copy goes into, the key or index there, its depth)
    todo: list[tuple[Any, Any, Any, int]] = [(value, top, 0, 1)]
    while todo:
        item, into, at, depth = todo.pop()
        if isinstance(item, str):
            into[at] = redact_text(item)
        elif not isinstance(item, (dict, list)) or depth > MAX_DEPTH:
            into[at] = item
        elif isinstance(item, dict):
            copy: dict[Any, Any] = {}
            into[at] = copy
            entries = [(redact_text(k) if isinstance(k, str) else k, v) for k, v in item.items()]
            for key, _ in entries:
                copy[key] = None  # the keys keep their order
            # Pushed last first, so taken in order: of two keys that redact alike, the
            # later one's value wins, as in a dict built in order.
            todo.extend((v, copy, key, depth + 1) for key, v in reversed(entries))
        else:
            items: list[Any] = [None] * len(item)
            into[at] = items
            todo.extend((v, items, i, depth + 1) for i, v in enumerate(item))
    return top[0]

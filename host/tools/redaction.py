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

_T = TypeVar("_T")

__all__ = ["redact", "redact_text", "register"]

_REGISTERED: list[tuple[str, str]] = []
_LOCK = threading.Lock()


def register(pairs: list[tuple[str, str]]) -> None:
    """Redact these ``(name, value)`` pairs from results and progress in this process."""
    with _LOCK:
        _REGISTERED.extend(p for p in pairs if p[1])


def redact_text(text: str) -> str:
    """``text`` with every registered value replaced by ``[secret NAME redacted]``."""
    for name, value in _REGISTERED:
        if value in text:
            text = text.replace(value, f"[secret {name} redacted]")
    return text


def redact(value: _T) -> _T:
    """``value`` (a wire result: dicts, lists, strings) with :func:`redact_text` applied
    to every string in it, keys included; the very same object when nothing is
    registered (the common case costs one check)."""
    if not _REGISTERED:
        return value
    return cast(_T, _redact(value))


def _redact(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {redact_text(k) if isinstance(k, str) else k: _redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value

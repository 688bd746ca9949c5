"""Whose command a sandbox runs, for the egress policy and its refusals: the scope a
tool call sets around the commands it starts (:func:`egress_scope`) and reads back where
a sandbox is made (:mod:`.proxy`).

Kept apart from the proxy so that what sets a scope (the bash tool, a worker's host
side) imports only the standard library: the proxy itself (h11, ssl, the credentials)
is imported only where a ``[network]`` policy makes a sandbox use it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["EgressScope", "egress_scope", "loop_reporter"]


@dataclass(frozen=True)
class EgressScope:
    """Whose command a sandbox runs, for the policy and for reporting refusals.

    Attributes:
        tool: the tool's name (``[network.tools.NAME]`` applies), or None.
        module: the tool module's name (``[network.modules.NAME]``), or None.
        on_refused: called, on the proxy's thread, with each refusal's message.
    """

    tool: str | None = None
    module: str | None = None
    on_refused: Callable[[str], None] | None = None


def loop_reporter(send: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """An ``on_refused`` for :class:`EgressScope` that runs ``send(message)`` on the
    event loop running in the calling thread (the proxy calls it from its own thread,
    and a session's notifications must be sent from the loop's). None when ``send`` is
    None or no loop runs here."""
    if send is None:
        return None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None

    def report(message: str) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: the host is ending
            loop.call_soon_threadsafe(send, message)

    return report


_SCOPE: ContextVar[EgressScope | None] = ContextVar("toolwire_egress_scope", default=None)


@contextlib.contextmanager
def egress_scope(scope: EgressScope) -> Iterator[None]:
    """Within the block (and the tasks and threads it starts), sandboxed commands run
    under ``scope``'s policy and report refusals to it."""
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)

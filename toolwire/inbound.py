"""Inbound requests of a :class:`~toolwire.session.Session`: what a handler knows of one.

A :class:`RequestContext` is made for every request the session reads and handed to its
handler with the params. It carries the request's id and method, its progress token
(``params._meta.progressToken``, MCP 2025-11-25 "Progress"), and its state while in
flight: cancelled by the peer (MCP ``notifications/cancelled`` or LSP
``$/cancelRequest``), aborted by the host, committed to a change it cannot take back
(protocol.md §5), done. The session decides what each state means for the answer; the
context only records it and interrupts the handler's cancel scope.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import anyio

from .errors import JsonRpcError
from .messages import RequestId, is_valid_id

if TYPE_CHECKING:
    from .session import Session, _Batch

__all__ = ["CancelDialect", "RequestContext", "is_stray_cancellation", "progress_accepted"]

CancelDialect = Literal["mcp", "lsp"]
"""How a request is cancelled: "mcp" (``notifications/cancelled``) or "lsp" (``$/cancelRequest``)."""


def is_stray_cancellation() -> bool:
    """True when a cancellation exception runs through the current task though nothing cancelled it.

    On asyncio, code can raise ``asyncio.CancelledError`` itself or await a future that
    someone else cancelled. anyio's cancel scopes cancel through ``Task.cancel()``,
    which ``Task.cancelling()`` counts, so a count of zero means the exception is the
    handler's own failure: it must fail that one request, not tear down the task group
    (and with it the whole connection). Always False on other backends.
    """
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no asyncio loop running: another backend
        return False
    return task is not None and task.cancelling() == 0


def _finite_number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def progress_accepted(last: float | None, progress: Any, total: Any = None) -> bool:
    """Whether a progress report may be sent after ``last`` (MCP 2025-11-25 "Progress"):
    ``progress`` (and ``total``, when given) are finite numbers — JSON has no NaN or
    infinity — and ``progress`` exceeds ``last``, as values must strictly increase."""
    if not _finite_number(progress) or (total is not None and not _finite_number(total)):
        return False
    return last is None or progress > last


class RequestContext:
    """What a request handler knows about the request it is serving.

    Attributes:
        id: the request id, exactly as received.
        method: the method name.
        session: the session the request arrived on.
        progress_token: ``params._meta.progressToken`` when the caller sent one.
        cancelled_by: None while running; "mcp" or "lsp" once a cancellation arrived.
        on_done: called once the request is finished, answered or not (after its
            handler returned); None for nothing.
    """

    __slots__ = (
        "_abort_error",
        "_answered",
        "_batch",
        "_committed",
        "_done",
        "_last_progress",
        "_release",
        "_scope",
        "cancelled_by",
        "id",
        "method",
        "on_cancel",
        "on_done",
        "progress_token",
        "session",
    )

    def __init__(
        self, session: Session, id: RequestId, method: str, params: Any, batch: _Batch | None
    ) -> None:
        self.session = session
        self.id = id
        self.method = method
        self.progress_token: str | int | None = None
        if type(params) is dict:
            meta = params.get("_meta")
            if type(meta) is dict:
                token = meta.get("progressToken")
                if is_valid_id(token):
                    self.progress_token = token
        self.cancelled_by: CancelDialect | None = None
        self._scope: anyio.CancelScope | None = None
        self._done = False
        self._last_progress: float | None = None
        self._batch = batch
        self._abort_error: JsonRpcError | None = None
        self._answered = False
        self._committed = False
        self.on_done: Callable[[], None] | None = None
        self.on_cancel: Callable[[], None] | None = None
        """Called once, at the moment the request is cancelled (either dialect, before
        :meth:`commit`) or aborted, before its handler hears of it: for work the request
        started elsewhere that must stop being counted on at once (a worker that must
        take no new call). It must not raise."""
        self._release: Callable[[], None] | None = None  # its handler waits to be queued

    @property
    def done(self) -> bool:
        """True once the response was queued (or the request was cancelled)."""
        return self._done

    def bind_scope(self, scope: anyio.CancelScope) -> None:
        """Run the handler under ``scope``: :meth:`cancel` and :meth:`abort` cancel it. For a
        server that runs a request outside a session's own task (the direct HTTP path)."""
        self._scope = scope

    def mark_done(self) -> None:
        """The request was answered (or given up): from now on it takes no cancellation,
        abort or progress (:attr:`done`). For a server that answers it itself."""
        self._done = True

    def cancel(self, dialect: CancelDialect) -> None:
        """Interrupt the handler as if the peer had cancelled it in ``dialect``; after
        :meth:`commit`, only record it (the handler runs on and is answered)."""
        if self._done or self.cancelled_by is not None:
            return
        self.cancelled_by = dialect
        if self._committed:
            return
        self._interrupt()

    def _interrupt(self) -> None:
        if self.on_cancel is not None:
            callback, self.on_cancel = self.on_cancel, None
            callback()
        if self._scope is not None:
            self._scope.cancel()
        if self._release is not None:
            self._release()  # a held handler runs now, and finds itself interrupted

    def commit(self) -> bool:
        """The handler is about to make a change it cannot take back (a file's rename):
        from now on a cancellation no longer interrupts it, and the request is answered
        with what the handler returns, cancelled or not (protocol.md §5). False, and
        nothing changes, when the request was already cancelled or aborted: the
        handler must then not make the change. Call it from the event loop's thread."""
        if self.cancelled_by is not None or self._abort_error is not None:
            return False
        self._committed = True
        return True

    def abort(self, error: JsonRpcError) -> None:
        """Interrupt the handler and answer the request with ``error`` (the host's own
        cancellation, e.g. at shutdown; the peer's cancellations use :meth:`cancel`)."""
        if self._done or self.cancelled_by is not None or self._abort_error is not None:
            return
        if self._committed:
            return  # answered with the handler's result, which is on its way
        self._abort_error = error
        self._interrupt()

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> bool:
        """Send ``notifications/progress`` for this request (MCP 2025-11-25 "Progress").

        Nothing is sent when the request carried no progress token, after the
        response or a cancellation, or when ``progress`` does not exceed the last
        value sent (the spec requires strictly increasing values).

        Returns:
            True when a notification was queued.
        """
        if self.progress_token is None or self._done or self.cancelled_by is not None:
            return False
        if not progress_accepted(self._last_progress, progress, total):
            return False
        self._last_progress = progress
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self.session.notify_lossy("notifications/progress", params, key=self.progress_token)
        return True

"""The channel from a running call back to its client: progress, log, drain, input requests.

:class:`~toolwire.host.context.ToolContext` reaches the client only through a
:class:`CallChannel`, one implementation per kind of call:

* :class:`CallChannel` itself: no client (a tool run directly, in tests or embedded):
  progress and log go nowhere, asking raises :class:`~toolwire.host.results.ToolError`;
* :class:`LegacyChannel`: a 2025-11-25 ``tools/call`` (progress on the request's token,
  and as LSP ``$/progress`` on its ``workDoneToken``: :class:`WorkDoneProgress`; log at
  the level set with ``logging/setLevel``, server→client requests to ask);
* :class:`ModernChannel`: a 2026-07-28 ``tools/call`` (log only when the request asked
  for it, questions become input requests of an input-required result);
* a call of a batch wraps one of these (``host/batch.py``): its progress becomes
  ``notifications/toolwire/callProgress``.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from toolwire.errors import JsonRpcError
from toolwire.messages import RequestId
from toolwire.modern import INPUT_METHODS, Envelope
from toolwire.session import RequestContext, Session, progress_accepted

from .results import ToolError
from .rounds import InputRound, call_key

__all__ = [
    "APPROVAL_KEY",
    "LOG_LEVELS",
    "CallChannel",
    "LegacyChannel",
    "LegacyPeer",
    "ModernCall",
    "ModernChannel",
    "WorkDoneProgress",
    "askable",
    "log_params",
]

APPROVAL_KEY = "approval"
"""The 2026-07-28 ``inputRequests`` key of a call's approval (host/approval.py), which a
tool's own question may not take; ``approval/ID`` in a batch, ID the canonical JSON of
the call id (:func:`~toolwire.host.rounds.call_key`)."""

LOG_LEVELS: dict[str, int] = {
    "debug": 0,
    "info": 1,
    "notice": 2,
    "warning": 3,
    "error": 4,
    "critical": 5,
    "alert": 6,
    "emergency": 7,
}
"""RFC 5424 severities as MCP names them, mapped to their order (higher is more severe)."""


def log_params(level: str, data: Any, logger: str | None) -> dict[str, Any]:
    """``notifications/message`` params: ``{level, data, logger?}``."""
    params: dict[str, Any] = {"level": level, "data": data}
    if logger:
        params["logger"] = logger
    return params


def askable(method: str) -> str:
    """The client capability a tool's question ``method`` needs.

    A tool (in the host or in a worker process) may ask the client only what MCP lets a
    server ask: ``elicitation/create``, ``sampling/createMessage``, ``roots/list``
    (:data:`toolwire.modern.INPUT_METHODS`), in both eras. Anything else, such as the
    host's own ``toolwire/approve``, is refused.

    Raises:
        ToolError: ``method`` is not one of these; the message names them.
    """
    capability = INPUT_METHODS.get(method) if type(method) is str else None
    if capability is None:
        allowed = ", ".join(INPUT_METHODS)
        raise ToolError(f"A tool may ask the client only {allowed}; {method!r} is refused")
    return capability


class CallChannel:
    """A call's way back to its client. This base class is the channel of a call with no
    client: nothing is sent and nothing can be asked."""

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """What the client declared (``{}`` here)."""
        return {}

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Send a progress report when the caller asked for progress (dropped here)."""

    def log(self, level: str, data: Any, logger: str | None) -> None:
        """Send ``notifications/message`` when the client wants ``level`` (dropped here)."""

    async def drain(self) -> None:
        """Wait while the client is not reading (the session's bounded output queue)."""

    def commit(self) -> bool:
        """The call is about to make its change: see :meth:`RequestContext.commit`
        (always True here: nobody can cancel this call from outside)."""
        return True

    async def ask(self, method: str, params: dict[str, Any], key: str) -> Any:
        """Ask the client (``elicitation/create``, ``sampling/createMessage``,
        ``roots/list``) and return its answer.

        Args:
            key: the call's own name for the question (its ``inputRequests`` key in
                2026-07-28).

        Raises:
            ToolError: the client cannot be asked (the call's result says so).
        """
        raise ToolError(f"{method}: no client to ask (the tool runs outside a host)")


class LegacyPeer(Protocol):
    """What a 2025-11-25 call needs of the connection it arrived on (the host server)."""

    @property
    def session(self) -> Session | None: ...

    @property
    def client_capabilities(self) -> dict[str, Any]: ...

    def send_log(self, level: str, data: Any, logger: str | None = None) -> None: ...


WORK_DONE_PROGRESS = "$/progress"
"""The LSP 3.17 progress notification: ``{token, value}``."""


class WorkDoneProgress:
    """LSP 3.17 "Work Done Progress" on a token the client sent (``workDoneToken`` in a
    request's params): ``$/progress {token, value}`` where ``value`` is, in this order,
    one ``{kind: "begin", title}``, any number of ``{kind: "report", message?,
    percentage?}`` and one ``{kind: "end"}``; nothing after the end. ``percentage`` (an
    integer 0–100, never going down) is sent when the tool gives a total.

    Reports are lossy like MCP progress (:meth:`Session.notify_lossy`: only the newest
    is held while the client is behind, and it is discarded at the end); ``begin`` and
    ``end`` are never dropped, so the end always comes last.

    Args:
        session: the connection.
        token: the client's token (a string or an integer).
        title: what the work is (the tool's name).
    """

    __slots__ = ("_key", "_last", "_percentage", "_session", "_state", "title", "token")

    def __init__(self, session: Session, token: RequestId, title: str) -> None:
        self._session = session
        self.token = token
        self.title = title
        self._key = ("workDone", token)
        self._state: Literal["new", "running", "ended"] = "new"
        self._last: float | None = None
        self._percentage = 0

    def _send(self, value: dict[str, Any]) -> None:
        self._session.notify(WORK_DONE_PROGRESS, {"token": self.token, "value": value})

    def begin(self) -> None:
        """Send ``begin`` (once; nothing after :meth:`end`)."""
        if self._state != "new":
            return
        self._state = "running"
        self._send({"kind": "begin", "title": self.title})

    def report(self, progress: float, total: float | None, message: str | None) -> None:
        """Send a ``report`` (after ``begin``); dropped when ``progress`` does not exceed
        the last one or is not finite (as MCP progress is), or after the end."""
        if self._state == "ended" or not progress_accepted(self._last, progress, total):
            return
        self.begin()
        self._last = progress
        value: dict[str, Any] = {"kind": "report"}
        if message is not None:
            value["message"] = message
        if total is not None and total > 0:
            share = int(min(100.0, max(0.0, progress * 100.0 / total)))
            self._percentage = max(self._percentage, share)
            value["percentage"] = self._percentage
        self._session.notify_lossy(
            WORK_DONE_PROGRESS, {"token": self.token, "value": value}, key=self._key
        )

    def end(self) -> None:
        """Send ``end`` (once, after ``begin``), dropping a report still held back."""
        if self._state == "ended":
            return
        self.begin()
        self._state = "ended"
        self._session.forget_lossy(self._key)
        self._send({"kind": "end"})


class LegacyChannel(CallChannel):
    """The channel of a 2025-11-25 ``tools/call``.

    Args:
        request: the ``tools/call`` request (its progress token).
        peer: the connection: its session, the ``initialize`` capabilities, the log level.
        work_done: the LSP progress of a call that carried a ``workDoneToken``; the
            caller sends its ``begin`` when the call starts and its ``end``
            (:meth:`end_work`) when the call is over.
    """

    __slots__ = ("_peer", "_request", "work_done")

    def __init__(
        self,
        request: RequestContext | None,
        peer: LegacyPeer,
        work_done: WorkDoneProgress | None = None,
    ) -> None:
        self._request = request
        self._peer = peer
        self.work_done = work_done

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self._peer.client_capabilities

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        request = self._request
        if request is not None:
            request.report_progress(progress, total, message)
        work_done = self.work_done
        if work_done is not None and request is not None and request.cancelled_by is None:
            work_done.report(progress, total, message)

    def end_work(self) -> None:
        """The call is over: send the LSP ``end`` of its work done progress (not after an
        MCP cancellation, which means nothing more is sent for the request)."""
        request = self._request
        if self.work_done is not None and (request is None or request.cancelled_by != "mcp"):
            self.work_done.end()

    def log(self, level: str, data: Any, logger: str | None) -> None:
        self._peer.send_log(level, data, logger)

    def commit(self) -> bool:
        return self._request is None or self._request.commit()

    async def drain(self) -> None:
        session = self._peer.session
        if session is not None:
            await session.drain()

    async def ask(self, method: str, params: dict[str, Any], key: str) -> Any:
        """A server→client request.

        Raises:
            ToolError: the client did not declare the capability in ``initialize``, or
                answered with an error (the call's result then says so).
        """
        capability = askable(method)
        session = self._peer.session
        if type(self.client_capabilities.get(capability)) is not dict or session is None:
            raise ToolError(
                f"This tool needs the client capability {capability!r} ({method}), "
                "which the client did not declare in initialize"
            )
        try:
            return await session.request(method, params)
        except JsonRpcError as exc:
            raise ToolError(f"The client could not answer {method}: {exc.message}") from None


class ModernCall:
    """What a 2026-07-28 request carries that the tool code may see.

    Attributes:
        envelope: the request's checked ``_meta`` envelope.
        log_threshold: the numeric level asked for with ``logLevel``, or None: then no
            ``notifications/message`` is sent for this request.
        session: the connection the request arrived on.
        round: the :class:`~toolwire.host.rounds.InputRound` of a ``tools/call`` or
            ``tools/callBatch``.
    """

    __slots__ = ("envelope", "log_threshold", "round", "session")

    def __init__(self, envelope: Envelope, log_threshold: int | None, session: Session) -> None:
        self.envelope = envelope
        self.log_threshold = log_threshold
        self.session = session
        self.round: InputRound | None = None
        """Set for calls that may ask (``tools/call``, ``tools/callBatch``)."""

    def send_log(self, level: str, data: Any, logger: str | None) -> None:
        """Send ``notifications/message`` when the request asked for ``level`` or lower
        (dropped, and counted, while the client is behind in reading)."""
        if self.log_threshold is None or LOG_LEVELS.get(level, 0) < self.log_threshold:
            return
        self.session.notify_lossy("notifications/message", log_params(level, data, logger))


class ModernChannel(CallChannel):
    """The channel of a 2026-07-28 ``tools/call`` (or of one call of a batch).

    Args:
        request: the request (its progress token).
        call: the request's envelope, log level and input round.
        call_id: the call's id; in a batch it prefixes the call's ``inputRequests`` keys.
    """

    __slots__ = ("_call", "_call_id", "_request")

    def __init__(self, request: RequestContext, call: ModernCall, call_id: RequestId) -> None:
        self._request = request
        self._call = call
        self._call_id = call_id

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self._call.envelope.capabilities

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self._request.report_progress(progress, total, message)

    def log(self, level: str, data: Any, logger: str | None) -> None:
        self._call.send_log(level, data, logger)

    def commit(self) -> bool:
        return self._request.commit()

    async def drain(self) -> None:
        await self._call.session.drain()

    async def ask(self, method: str, params: dict[str, Any], key: str) -> Any:
        """The answer the request brought, or
        :class:`~toolwire.host.rounds.InputNeeded` after recording the question.

        Raises:
            ToolError: the request cannot ask (not a call), ``method`` is not a question a
                tool may ask (:func:`askable`), or a single call's question takes the
                approval's key :data:`APPROVAL_KEY`.
        """
        askable(method)
        round = self._call.round
        if round is None:
            raise ToolError(f"{method} cannot be asked here")
        if round.batch:
            key = f"{call_key(self._call_id)}/{key}"
        elif key == APPROVAL_KEY:
            raise ToolError(
                f"The question key {APPROVAL_KEY!r} is the host's own (a call's approval); "
                "ask under another key"
            )
        return round.answer(key, method, params, signed_only=False)

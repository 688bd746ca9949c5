"""The channel from a running call back to its client: progress, log, drain, input requests.

:class:`~toolwire.host.tools.context.ToolContext` reaches the client only through a
:class:`CallChannel`, one implementation per kind of call:

* :class:`CallChannel` itself: no client (a tool run directly, in tests or embedded):
  progress and log go nowhere, asking raises :class:`~toolwire.host.tools.results.ToolError`;
* :class:`LegacyChannel`: a 2025-11-25 ``tools/call`` (progress on the request's token,
  and as LSP ``$/progress`` on its ``workDoneToken``: :class:`WorkDoneProgress`; log at
  the level set with ``logging/setLevel``, server→client requests to ask);
* :class:`ModernChannel`: a 2026-07-28 ``tools/call`` (log only when the request asked
  for it, questions become input requests of an input-required result);
* a call of a batch wraps one of these (``host/methods/batch.py``): its progress becomes
  ``notifications/toolwire/callProgress``.

The channel is the one place a call's era is chosen: the face that reads the request
builds it (``host/methods/server.py``, ``host/methods/modern.py``) and passes it down
to the kernel, which never asks which era it serves. Besides what the tool uses, a
channel brackets the call (:meth:`CallChannel.begin_work`, :meth:`CallChannel.end_work`),
gives the channel of each call of a batch (:meth:`CallChannel.for_batch_call`) and
carries the host's own question, the call's approval
(:meth:`CallChannel.ask_approval`; ``host/calls/approval.py`` chooses it). A 2026-07-28
channel holds its request's :class:`~toolwire.host.tools.rounds.InputRound`, where
every question is answered or recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from toolwire.errors import JsonRpcError
from toolwire.jsonschema_facts import is_type
from toolwire.messages import RequestId
from toolwire.session import RequestContext, Session, progress_accepted

from .results import ToolError

if TYPE_CHECKING:
    # The 2026-07-28 round machinery is imported once a tool asks, not at a worker's
    # start (a worker's imports are its start-up time: tests/host/workers/test_workers_imports.py).
    from toolwire.modern import Envelope

    from .rounds import InputRound

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
    "check_elicitation",
    "log_params",
]

APPROVAL_KEY = "approval"
"""The 2026-07-28 ``inputRequests`` key of a call's approval (host/calls/approval.py), which a
tool's own question may not take; ``approval/ID`` in a batch, ID the canonical JSON of
the call id (:func:`~toolwire.host.tools.rounds.call_key`)."""

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


_COMMON_KEYS = frozenset({"type", "title", "description", "default"})
_FORM_KEYS: dict[str, frozenset[str]] = {
    "string": _COMMON_KEYS | {"minLength", "maxLength", "format", "enum", "enumNames", "oneOf"},
    "number": _COMMON_KEYS | {"minimum", "maximum"},
    "integer": _COMMON_KEYS | {"minimum", "maximum"},
    "boolean": _COMMON_KEYS,
    "array": _COMMON_KEYS | {"minItems", "maxItems", "items"},
}
"""The keywords of each kind of form field (MCP 2025-11-25 ``PrimitiveSchemaDefinition``)."""

_STRING_FORMATS = ("email", "uri", "date", "date-time")


def _is_str_list(value: Any) -> bool:
    return type(value) is list and all(type(v) is str for v in value)


def _is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _is_number(value: Any) -> bool:
    return is_type(value, "number")


def _titled_options(value: Any) -> bool:
    return (
        type(value) is list
        and bool(value)
        and all(
            type(o) is dict
            and set(o) == {"const", "title"}
            and type(o["const"]) is str
            and type(o["title"]) is str
            for o in value
        )
    )


def _field_problem(field: Any) -> str | None:
    """What makes ``field`` no form field of MCP's subset, or None."""
    if type(field) is not dict:
        return "is not a schema object"
    kind = field.get("type")
    if type(kind) is not str or kind not in _FORM_KEYS:
        return (
            f"has type {kind!r}; a form field is a string, number, integer, boolean or "
            "an array of enum strings (no objects, nesting, $ref or anyOf/oneOf unions)"
        )
    extra = sorted(set(field) - _FORM_KEYS[kind])
    if extra:
        return f"uses {', '.join(map(repr, extra))}, which a {kind} form field does not have"
    for key in ("minLength", "maxLength", "minItems", "maxItems"):
        if key in field and not _is_count(field[key]):
            return f"has {key} {field[key]!r}, not a non-negative integer"
    for key in ("minimum", "maximum"):
        if key in field and not _is_number(field[key]):
            return f"has {key} {field[key]!r}, not a number"
    for key in ("title", "description"):
        if key in field and type(field[key]) is not str:
            return f"has a {key} that is not a string"
    if kind == "string":
        if "format" in field and field["format"] not in _STRING_FORMATS:
            return f"has format {field['format']!r}; a form field's format is one of " + (
                ", ".join(_STRING_FORMATS)
            )
        if "enum" in field and not (_is_str_list(field["enum"]) and field["enum"]):
            return "has an enum that is not a list of strings"
        if "enumNames" in field and not (
            "enum" in field
            and _is_str_list(field["enumNames"])
            and len(field["enumNames"]) == len(field["enum"])
        ):
            return "has enumNames that are not one string per enum value"
        if "oneOf" in field and not _titled_options(field["oneOf"]):
            return 'has a oneOf that is not a list of {"const": string, "title": string} options'
        if "default" in field and type(field["default"]) is not str:
            return "has a default that is not a string"
    elif kind == "array":
        items = field.get("items")
        plain = (
            type(items) is dict
            and set(items) == {"type", "enum"}
            and items["type"] == "string"
            and _is_str_list(items["enum"])
            and bool(items["enum"])
        )
        titled = type(items) is dict and set(items) == {"anyOf"} and _titled_options(items["anyOf"])
        if not (plain or titled):
            return (
                'is an array whose items are not {"type": "string", "enum": [...]} or '
                '{"anyOf": [{"const", "title"}, ...]} (a form has multi-select enums only)'
            )
        if "default" in field and not _is_str_list(field["default"]):
            return "has a default that is not a list of strings"
    elif kind == "boolean":
        if "default" in field and type(field["default"]) is not bool:
            return "has a default that is not a boolean"
    elif "default" in field and not _is_number(field["default"]):
        return "has a default that is not a number"
    return None


def check_elicitation(params: Any) -> None:
    """Refuse an ``elicitation/create`` a client cannot show.

    A form's ``requestedSchema`` is the flat subset of JSON Schema MCP 2025-11-25
    defines ("Elicitation", ``ElicitRequestFormParams``): ``{"type": "object",
    "properties": {name: field}, "required"?: [names]}``, each field a string
    (``minLength``, ``maxLength``, ``format`` email/uri/date/date-time), a number or
    integer (``minimum``, ``maximum``), a boolean, a single-select enum (``enum``,
    ``oneOf`` of ``{const, title}``, legacy ``enumNames``) or a multi-select enum (an
    array of such strings), with ``title``, ``description`` and ``default``. URL mode
    has no schema.

    Raises:
        ToolError: the schema is outside that subset; the message names the property
            and what is wrong with it.
    """
    if type(params) is not dict or params.get("mode", "form") != "form":
        return
    schema = params.get("requestedSchema")
    where = "The elicitation's requestedSchema"
    if type(schema) is not dict or schema.get("type") != "object":
        raise ToolError(f'{where} must be {{"type": "object", "properties": {{...}}}}')
    extra = sorted(set(schema) - {"type", "properties", "required", "$schema"})
    if extra:
        raise ToolError(
            f"{where} uses {', '.join(map(repr, extra))}; a form is only type, properties "
            "and required (MCP 2025-11-25 elicitation)"
        )
    properties = schema.get("properties")
    if type(properties) is not dict:
        raise ToolError(f"{where} needs properties, an object of form fields")
    for name, field in properties.items():
        problem = _field_problem(field)
        if problem is not None:
            raise ToolError(
                f"{where}: property {name!r} {problem} (MCP 2025-11-25 elicitation allows "
                "only flat primitive fields)"
            )
    required = schema.get("required", [])
    if not _is_str_list(required):
        raise ToolError(f"{where}: required must be a list of property names")
    missing = [r for r in required if r not in properties]
    if missing:
        raise ToolError(f"{where}: required names {missing[0]!r}, which is not a property")


def askable(method: str, params: Any = None) -> str:
    """The client capability a tool's question ``method`` needs.

    A tool (in the host or in a worker process) may ask the client only what MCP lets a
    server ask: ``elicitation/create``, ``sampling/createMessage``, ``roots/list``
    (:data:`toolwire.modern.INPUT_METHODS`), in both eras. Anything else, such as the
    host's own ``toolwire/approve``, is refused.

    An ``elicitation/create`` form must be one a client can show
    (:func:`check_elicitation`).

    Raises:
        ToolError: ``method`` is not one of these (the message names them), or its
            ``params`` are a form outside MCP's subset.
    """
    from toolwire.modern import INPUT_METHODS

    capability = INPUT_METHODS.get(method) if type(method) is str else None
    if capability is None:
        allowed = ", ".join(INPUT_METHODS)
        raise ToolError(f"A tool may ask the client only {allowed}; {method!r} is refused")
    if method == "elicitation/create":
        check_elicitation(params)
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

    def begin_work(self) -> None:
        """The call starts (its params were checked): begin what the client follows it by
        besides MCP progress (nothing here; LSP ``$/progress`` in 2025-11-25)."""

    def end_work(self) -> None:
        """The call is over: end what :meth:`begin_work` began (nothing here)."""

    def for_batch_call(self, call_id: RequestId) -> CallChannel:
        """The channel of one call of the ``tools/callBatch`` this channel's request is:
        the same era's log, drain and questions, keyed by ``call_id`` where the era keys
        questions (``host/methods/batch.py`` adds the call's own progress on top). Here:
        a channel reaching no client."""
        return CallChannel()

    @property
    def reaches_client(self) -> bool:
        """Whether a client can be asked through this channel (False here)."""
        return False

    async def ask_approval(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        """Ask the client the host's own question about this call, its approval
        (``toolwire/approve``, or an ``elicitation/create`` form), and return the answer
        as sent, unchecked (``host/calls/approval.py`` reads it).

        Args:
            method: ``toolwire/approve`` or ``elicitation/create``.
            params: the question.
            timeout: seconds to wait for a client that answers on the connection.

        Raises:
            ToolError: no client to ask (ask only where :attr:`reaches_client`).
            JsonRpcError: the client answered with an error, or not in time (-32001).
            InputNeeded: 2026-07-28, the question was recorded for the input-required
                result (:class:`~toolwire.host.tools.rounds.InputRound`).
        """
        raise ToolError(f"{method}: no client to ask (the tool runs outside a host)")

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

    def begin_work(self) -> None:
        """The call starts: send the LSP ``begin`` of its work done progress, if any."""
        if self.work_done is not None:
            self.work_done.begin()

    def end_work(self) -> None:
        """The call is over: send the LSP ``end`` of its work done progress (not after an
        MCP cancellation, which means nothing more is sent for the request)."""
        request = self._request
        if self.work_done is not None and (request is None or request.cancelled_by != "mcp"):
            self.work_done.end()

    def for_batch_call(self, call_id: RequestId) -> CallChannel:
        """A call of a batch: the connection's log, drain and questions; no request of its
        own (the batch reports its progress)."""
        return LegacyChannel(None, self._peer)

    @property
    def reaches_client(self) -> bool:
        return self._peer.session is not None

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
        capability = askable(method, params)
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

    async def ask_approval(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        """A server→client request on the connection, answered within ``timeout`` seconds.

        Raises:
            ToolError: the connection has no session (:attr:`reaches_client` is False).
            JsonRpcError: the client answered with an error, or not in time (-32001).
        """
        session = self._peer.session
        if session is None:
            raise ToolError(f"{method}: no client to ask (no session)")
        return await session.request(method, params, timeout=timeout)


class ModernCall:
    """What a 2026-07-28 request carries that the tool code may see.

    Attributes:
        envelope: the request's checked ``_meta`` envelope.
        log_threshold: the numeric level asked for with ``logLevel``, or None: then no
            ``notifications/message`` is sent for this request.
        session: the connection the request arrived on.
    """

    __slots__ = ("envelope", "log_threshold", "session")

    def __init__(self, envelope: Envelope, log_threshold: int | None, session: Session) -> None:
        self.envelope = envelope
        self.log_threshold = log_threshold
        self.session = session

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
        call: the request's envelope and log level.
        call_id: the call's id; in a batch it prefixes the call's ``inputRequests`` keys.
        round: the request's input round, where every question of the call is answered or
            recorded (None: the request cannot ask).
    """

    __slots__ = ("_call", "_call_id", "_request", "round")

    def __init__(
        self,
        request: RequestContext,
        call: ModernCall,
        call_id: RequestId,
        round: InputRound | None = None,
    ) -> None:
        self._request = request
        self._call = call
        self._call_id = call_id
        self.round = round

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

    def for_batch_call(self, call_id: RequestId) -> CallChannel:
        """A call of a batch: the request's log level and input round, its questions keyed
        by ``call_id``."""
        return ModernChannel(self._request, self._call, call_id, self.round)

    @property
    def reaches_client(self) -> bool:
        return self.round is not None

    async def ask(self, method: str, params: dict[str, Any], key: str) -> Any:
        """The answer the request brought, or
        :class:`~toolwire.host.tools.rounds.InputNeeded` after recording the question.

        Raises:
            ToolError: the request cannot ask (not a call), ``method`` is not a question a
                tool may ask (:func:`askable`), or a single call's question takes the
                approval's key :data:`APPROVAL_KEY`.
        """
        askable(method, params)
        round = self.round
        if round is None:
            raise ToolError(f"{method} cannot be asked here")
        if round.batch:
            from .rounds import call_key

            key = f"{call_key(self._call_id)}/{key}"
        elif key == APPROVAL_KEY:
            raise ToolError(
                f"The question key {APPROVAL_KEY!r} is the host's own (a call's approval); "
                "ask under another key"
            )
        return round.answer(key, method, params, signed_only=False)

    async def ask_approval(self, method: str, params: dict[str, Any], timeout: float) -> Any:
        """The approval the request brought, or
        :class:`~toolwire.host.tools.rounds.InputNeeded` after recording the question under
        :data:`APPROVAL_KEY` (``approval/ID`` for a call of a batch). Only an answer to a
        question this host asked counts (its key is in the signed ``requestState``), so a
        client cannot approve a call before it was shown. ``timeout`` does not apply: the
        client answers in its retry.

        Raises:
            ToolError: the request cannot ask (no input round).
        """
        round = self.round
        if round is None:
            raise ToolError(f"{method} cannot be asked here")
        from .rounds import call_key

        # One key per call of a batch, the id's type included ("1" and 1 are two calls).
        key = f"{APPROVAL_KEY}/{call_key(self._call_id)}" if round.batch else APPROVAL_KEY
        return round.answer(key, method, params, signed_only=True)

"""The asynchronous client: spawn or connect to a toolwire host and call its tools.

Usage::

    async with Client.spawn(host_command(root="proj")) as c:
        tools = await c.list_tools()
        res = await c.call_tool("read", {"path": "app.py"}, on_progress=print, timeout=30)
        print(res.call_id, res.is_error, res.text)

The client is an MCP client for the tool subset. By default it asks ``server/discover``
on entry and speaks revision 2026-07-28 (stateless: the envelope in every request's
``_meta``, input-required results answered through ``on_elicit`` / ``on_sample`` /
``on_roots`` / ``on_approval``, list changes through ``subscriptions/listen``) when the
server answers, as every toolwire host does; otherwise it runs the 2025-11-25
``initialize`` handshake. Either way: ``tools/list`` across all pages, ``tools/call``
with progress, cancellation and timeouts, and the host's log messages. It stands on
:class:`toolwire.session.Session`, so every request runs concurrently with the others.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc
from anyio.abc import ByteReceiveStream, ByteSendStream
from pydantic import ValidationError

from toolwire import __version__
from toolwire.errors import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    REQUEST_TIMEOUT,
    JsonRpcError,
)
from toolwire.extensions import (
    APPROVAL_CAPABILITY,
    APPROVE,
    CALL_BATCH,
    CALL_ENDED,
    CALL_PROGRESS,
    CALL_STARTED,
    EXTENSION_CAPABILITY,
    ApprovalRequest,
    BatchCall,
    batch_terminates,
    length_stop_text,
)
from toolwire.framing import Framing
from toolwire.messages import RequestId
from toolwire.models import (
    LATEST_PROTOCOL_VERSION,
    SUPPORTED_PROTOCOL_VERSIONS,
    CallToolResult,
    Implementation,
    InitializeResult,
    ListToolsResult,
    TextContent,
    ToolDefinition,
)
from toolwire.modern import (
    DISCOVER,
    LISTEN,
    MODERN_PROTOCOL_VERSION,
    RESULT_INPUT_REQUIRED,
    envelope_meta,
)
from toolwire.router import Router
from toolwire.session import ProgressListener, RequestContext, Session

from .approval import ApprovalCallback, decide
from .http import HttpTransport
from .modern import Era, InputCallback, InputHandlers, initialize_from_discover
from .results import Progress, ProgressCallback, ToolReply
from .transport import (
    SAFE_PATH_ENV,
    STDERR_CAPTURE_LIMIT,
    TERMINATE_GRACE,
    EndedBy,
    StderrMode,
    StdioTransport,
    host_command,
    is_host_command,
)

if TYPE_CHECKING:
    from .batch import BatchEventCallback, BatchMode, BatchResult

__all__ = [
    "MODEL_ERROR_CODES",
    "SAFE_PATH_ENV",
    "STDERR_CAPTURE_LIMIT",
    "TERMINATE_GRACE",
    "CallTimeout",
    "Client",
    "LogMessage",
    "Progress",
    "ProgressCallback",
    "StderrMode",
    "StdioTransport",
    "ToolReply",
    "host_command",
    "is_host_command",
]

log = logging.getLogger("toolwire.client")

MODEL_ERROR_CODES: frozenset[int] = frozenset({INVALID_PARAMS})
"""JSON-RPC error codes of ``tools/call`` that report the caller's (the model's) mistake:
-32602, used for an unknown tool and for params that break the request schema (MCP
2025-11-25, "Tools › Error Handling"). :meth:`Client.call_tool` turns them into error
results unless asked to raise."""

PROBE_TIMEOUT = 10.0
"""Seconds ``era="auto"`` waits for the ``server/discover`` answer before it falls back to
``initialize`` (a server that ignores unknown requests never answers)."""

EXIT_REPORT_WAIT = 10.0
"""Seconds the client waits, after a spawned host closed the connection early, for its exit
code and the end of its stderr to put in the error (it waits no longer once both are in)."""

MAX_INPUT_ROUNDS = 10
"""Rounds of input-required results one call may take before the client gives up."""

# --------------------------------------------------------------------------- data


@dataclass(frozen=True, slots=True)
class LogMessage:
    """One ``notifications/message`` from the host (MCP 2025-11-25 "Logging").

    Attributes:
        level: an RFC 5424 level name ("debug" … "emergency").
        data: any JSON value.
        logger: the logger's name (the host uses the tool's name), when given.
    """

    level: str
    data: Any
    logger: str | None = None


class CallTimeout(JsonRpcError, TimeoutError):
    """A ``tools/call`` got no response within its timeout.

    Both a :class:`JsonRpcError` with code -32001 (what the official MCP SDKs raise)
    and a builtin :class:`TimeoutError`, so either ``except`` catches it. Before it is
    raised the client has sent ``notifications/cancelled`` for the call, so the host
    interrupts the tool.

    Attributes:
        call_id: the JSON-RPC id of the abandoned ``tools/call`` request.
        timeout: the limit that expired, in seconds.
    """

    def __init__(self, call_id: RequestId, name: str, timeout: float) -> None:
        super().__init__(
            REQUEST_TIMEOUT,
            f'Call {call_id} to tool "{name}" timed out after {timeout:g} seconds',
            {"callId": call_id, "name": name, "timeout": timeout},
        )
        self.call_id = call_id
        self.timeout = timeout


# --------------------------------------------------------------------------- client


class Client:
    """An MCP tool client over a pair of byte streams or a spawned host process.

    Build one with :meth:`spawn` or :meth:`connect` and enter it with ``async with``;
    entering performs the handshake, leaving closes the connection (and ends a spawned
    host: close its stdin, wait, SIGTERM, wait, SIGKILL).

    Args (keyword-only, accepted by :meth:`spawn` and :meth:`connect`):
        client_info: ``clientInfo`` sent in ``initialize``.
        capabilities: client capabilities sent in ``initialize`` (default ``{}``).
        framing: "ndjson" (MCP stdio) or "lsp" (Content-Length headers).
        cancel_dialect: how calls are cancelled: "mcp" (``notifications/cancelled``) or
            "lsp" (``$/cancelRequest``).
        raise_on_protocol_error: default of :meth:`call_tool`'s option of that name.
        call_timeout: default seconds per call; None waits for the host (which has its
            own per-call limit).
        init_timeout: seconds to wait for the ``initialize`` response.
        log_level: when set, sent with ``logging/setLevel`` after the handshake.
        on_log: called with each :class:`LogMessage` the host sends.
        on_tools_changed: called (no arguments) on ``notifications/tools/list_changed``.
        on_approval: answers the host's ``toolwire/approve`` requests (see
            :mod:`toolwire.client.approval`); giving it adds the capability
            ``{"toolwire": {"approval": true}}`` to ``initialize``. Without it the host
            denies every call its policy wants approved.
        transport: a :class:`~toolwire.client.transport.StdioTransport` that spawns the
            host and ends it when the client closes (what :meth:`spawn` passes);
            ``receive`` and ``send`` are then not given.
        use_call_batch: False never sends ``tools/callBatch``: :meth:`call_batch` then
            always runs its calls as concurrent ``tools/call`` requests (as it does by
            itself once a host answered -32601).
        era: "auto" (default) asks ``server/discover`` and speaks MCP 2026-07-28 when the
            server answers it (every toolwire host does), else runs the ``initialize``
            handshake (2025-11-25); "modern" or "legacy" force one (see
            :data:`toolwire.client.modern.Era`).
        on_elicit, on_sample, on_roots: answer what a tool asks the user or the model
            (``elicitation/create``, ``sampling/createMessage``, ``roots/list``), as
            server→client requests in 2025-11-25 and as input-required results in
            2026-07-28 (see :mod:`toolwire.client.modern`); each one given declares its
            capability (``elicitation``, ``sampling``, ``roots``).
    """

    def __init__(
        self,
        receive: ByteReceiveStream | None = None,
        send: ByteSendStream | None = None,
        *,
        client_info: Mapping[str, Any] | None = None,
        capabilities: Mapping[str, Any] | None = None,
        framing: Framing = "ndjson",
        cancel_dialect: Literal["mcp", "lsp"] = "mcp",
        raise_on_protocol_error: bool = False,
        call_timeout: float | None = None,
        init_timeout: float = 60.0,
        log_level: str | None = None,
        on_log: Callable[[LogMessage], object] | None = None,
        on_tools_changed: Callable[[], object] | None = None,
        on_approval: ApprovalCallback | None = None,
        use_call_batch: bool = True,
        era: Era = "auto",
        on_elicit: InputCallback | None = None,
        on_sample: InputCallback | None = None,
        on_roots: InputCallback | None = None,
        transport: StdioTransport | HttpTransport | None = None,
    ) -> None:
        if (receive is None or send is None) and transport is None:
            raise TypeError("Client needs receive and send streams or a transport")
        self._receive = receive
        self._send = send
        self.transport = transport
        """The spawned host's transport (:meth:`spawn`); None over given streams."""
        self.client_info: dict[str, Any] = dict(
            client_info or {"name": "toolwire-client", "version": __version__}
        )
        self.capabilities: dict[str, Any] = dict(capabilities or {})
        self.on_approval = on_approval
        if on_approval is not None:
            ours = dict(self.capabilities.get(EXTENSION_CAPABILITY) or {})
            ours.update(APPROVAL_CAPABILITY[EXTENSION_CAPABILITY])
            self.capabilities[EXTENSION_CAPABILITY] = ours
        self.framing: Framing = framing
        self.cancel_dialect: Literal["mcp", "lsp"] = cancel_dialect
        self.raise_on_protocol_error = raise_on_protocol_error
        self.call_timeout = call_timeout
        self.init_timeout = init_timeout
        self.log_level = log_level
        self.on_log = on_log
        self.on_tools_changed = on_tools_changed
        if era not in ("auto", "modern", "legacy"):
            raise ValueError(f'era must be "auto", "modern" or "legacy", not {era!r}')
        self.era: Era = era
        self.inputs = InputHandlers(on_elicit, on_sample, on_roots, on_approval)
        self.capabilities = self.inputs.capabilities(self.capabilities)
        self.modern = False
        """True once the connection speaks MCP 2026-07-28 (set on entry)."""
        self.discover_result: dict[str, Any] | None = None
        """The server's ``server/discover`` result (2026-07-28 only)."""
        self._session: Session | None = None
        self._init: InitializeResult | None = None
        self._batch_supported: bool | None = None if use_call_batch else False
        self._stack: AsyncExitStack | None = None

    # ------------------------------------------------------------------ construction

    @classmethod
    def spawn(
        cls,
        command: Sequence[str | os.PathLike[str]] | None = None,
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        stderr: StderrMode = "inherit",
        terminate_grace: float = TERMINATE_GRACE,
        **options: Any,
    ) -> Client:
        """A client that starts ``command`` and talks to it over its stdin/stdout.

        Args:
            command: argv of the host (default: :func:`host_command` with no options,
                i.e. this interpreter's ``-P -m toolwire.host`` rooted at its cwd). A
                toolwire host (:func:`is_host_command`) is started with
                ``PYTHONSAFEPATH=1`` in its environment.
            cwd: working directory of the process.
            env: variables added to (overriding) the inherited environment.
            stderr: "inherit" (default), "capture" or "discard"; see :data:`StderrMode`.
            terminate_grace: seconds waited after closing stdin and again after
                SIGTERM before escalating (default 2, the MCP stdio shutdown sequence).
            options: the keyword options of :class:`Client`.

        The process is started and ended by a :class:`~toolwire.client.transport.StdioTransport`
        (its own process group; on leaving: stdin EOF, SIGTERM, SIGKILL of the group);
        ``Client(transport=StdioTransport(...))`` is the same.
        """
        transport = StdioTransport(
            command, cwd=cwd, env=env, stderr=stderr, terminate_grace=terminate_grace
        )
        return cls(transport=transport, **options)

    @classmethod
    def open_url(
        cls,
        url: str,
        *,
        token: str | None = None,
        timeout: float | None = 300.0,
        headers: dict[str, str] | None = None,
        **options: Any,
    ) -> Client:
        """A client of a host served over MCP Streamable HTTP (``toolwire serve --http``).

        Args:
            url: the MCP endpoint, e.g. ``http://127.0.0.1:8000/mcp``.
            token: bearer token sent on every request (``--token-file`` of the host).
            timeout: seconds to connect and between bytes of an answer (None: no limit).
            headers: more headers for every request.
            options: the keyword options of :class:`Client` (``era`` picks the MCP
                revision as over stdio).
        """
        transport = HttpTransport(url, token=token, timeout=timeout, headers=headers)
        return cls(transport=transport, **options)

    @classmethod
    def connect(cls, receive: ByteReceiveStream, send: ByteSendStream, **options: Any) -> Client:
        """A client over existing byte streams (a socket, a process you started, ...).

        Leaving the ``async with`` block closes ``send`` (the peer sees EOF); the
        streams' owner closes ``receive``.
        """
        return cls(receive, send, **options)

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Client:
        if self._stack is not None:
            raise RuntimeError("this Client was already entered")
        stack = AsyncExitStack()
        self._stack = stack
        await stack.__aenter__()
        try:
            await self._start(stack)
        except BaseException:
            await stack.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        stack = self._stack
        if stack is None:
            return None
        # The body's exception is not passed in: the internal task groups would wrap it
        # in an ExceptionGroup. Python re-raises it unchanged after this returns.
        # Each exit step shields itself (a shield here would break the nesting of the
        # task groups' own cancel scopes).
        await stack.__aexit__(None, None, None)
        return None

    async def _start(self, stack: AsyncExitStack) -> None:
        receive, send = self._receive, self._send
        tg = await stack.enter_async_context(anyio.create_task_group())
        if self.transport is not None:
            transport = self.transport
            receive, send = await transport.start(tg)
            stack.push_async_callback(transport.close_streams)

            async def end_host() -> None:
                await transport.end()
                tg.cancel_scope.cancel()

            stack.push_async_callback(end_host)
        assert receive is not None and send is not None
        router = Router()
        router.on_notification("notifications/message", self._on_message)
        router.on_notification("notifications/tools/list_changed", self._on_list_changed)
        router.on_request("ping", _answer_ping)
        if self.on_approval is not None:
            router.on_request(APPROVE, self._answer_approve)
        for method in ("elicitation/create", "sampling/createMessage", "roots/list"):
            if self.inputs.callback_for(method) is not None:
                router.on_request(method, self._answer_input)
        session = Session(
            receive,
            send,
            router=router,
            framing=self.framing,
            cancel_dialect=self.cancel_dialect,
            name="client",
        )
        self._session = session
        await stack.enter_async_context(session.running())
        if self.era != "legacy" and await self._discover(session):
            if self.on_tools_changed is not None:
                tg.start_soon(self._listen)
            return
        await self._handshake(session)

    async def _closed_early(self, method: str, cause: JsonRpcError) -> JsonRpcError:
        """The error for a host that closed the connection before answering ``method``:
        its exit code and the end of its stderr, when the client spawned it; else what
        the transport said (``cause``: e.g. an HTTP connection refused)."""
        process = self.process
        if process is None:
            why = cause.message if cause.message.startswith("HTTP request") else ""
            return JsonRpcError(
                CONNECTION_CLOSED,
                f"the connection closed before {method}" + (f": {why}" if why else ""),
            )
        code = None
        # A host that closed stdout is exiting, but its last stderr lines and its exit
        # can lag by seconds on a loaded machine (its stderr pump flushes for up to 2 s).
        with anyio.move_on_after(EXIT_REPORT_WAIT):
            code = await process.wait()
            if isinstance(self.transport, StdioTransport):
                await self.transport.stderr_ended()
        detail = f" (exit code {code})" if code is not None else ""
        tail = self.stderr_output.strip()[-2000:]
        return JsonRpcError(
            CONNECTION_CLOSED,
            f"the host closed the connection before answering {method}{detail}"
            + (f"; its stderr ends with:\n{tail}" if tail else ""),
            {"exitCode": code},
        )

    def _envelope(self) -> dict[str, Any]:
        # The host's default level in 2025-11-25 is "info"; ask for the same when the
        # caller listens to logs without choosing a level.
        level = self.log_level
        if level is None and self.on_log is not None:
            level = "info"
        return envelope_meta(self.capabilities, self.client_info, log_level=level)

    async def _discover(self, session: Session) -> bool:
        """Ask ``server/discover``; True when the connection now speaks 2026-07-28.

        Raises:
            JsonRpcError: with ``era="modern"``, when the server does not offer it; in
                any era, -32000 when the server closed the connection.
        """
        try:
            raw = await session.request(
                DISCOVER,
                {"_meta": self._envelope()},
                timeout=min(self.init_timeout, PROBE_TIMEOUT),
            )
        except JsonRpcError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise await self._closed_early(DISCOVER, exc) from None
            if self.era == "modern":
                raise
            log.info("server/discover failed (%s); falling back to initialize", exc.message)
            return False
        init = initialize_from_discover(raw)
        if init is None:
            if self.era == "modern":
                raise JsonRpcError(
                    INVALID_PARAMS,
                    f"the server does not offer MCP {MODERN_PROTOCOL_VERSION}",
                    {"discover": raw},
                )
            log.info("server/discover offers no version this client speaks; using initialize")
            return False
        self._init = init
        self.modern = True
        self.discover_result = raw
        return True

    async def _request(
        self,
        method: str,
        params: dict[str, Any] | None,
        timeout: float | None,
        *,
        request_id: int | None = None,
        on_progress: ProgressListener | None = None,
    ) -> Any:
        """Send ``method``; in 2026-07-28 with the envelope, answering input-required
        results through the callbacks and retrying (at most :data:`MAX_INPUT_ROUNDS`).

        ``request_id`` (from :meth:`Session.new_request_id`) is the id of the first
        round; ``on_progress`` listens to every round (:meth:`Session.request`)."""
        session = self.session
        if not self.modern:
            return await session.request(
                method, params, timeout=timeout, on_progress=on_progress, request_id=request_id
            )
        body = dict(params or {})
        body["_meta"] = {**self._envelope(), **(body.get("_meta") or {})}
        for _ in range(MAX_INPUT_ROUNDS):
            raw = await session.request(
                method, body, timeout=timeout, on_progress=on_progress, request_id=request_id
            )
            request_id = None
            if not isinstance(raw, dict) or raw.get("resultType") != RESULT_INPUT_REQUIRED:
                return raw
            body = {k: v for k, v in body.items() if k not in ("inputResponses", "requestState")}
            requests = raw.get("inputRequests")
            if requests is not None:
                body["inputResponses"] = await self.inputs.fulfil(requests)
            state = raw.get("requestState")
            if isinstance(state, str):
                body["requestState"] = state
        raise JsonRpcError(
            INTERNAL_ERROR, f"{method}: still input-required after {MAX_INPUT_ROUNDS} rounds"
        )

    async def _listen(self) -> None:
        """2026-07-28: keep a ``subscriptions/listen`` stream open for tools list changes
        (they reach :attr:`on_tools_changed`) until the connection ends."""
        try:
            await self._request(LISTEN, {"notifications": {"toolsListChanged": True}}, None)
        except JsonRpcError as exc:
            if exc.code != CONNECTION_CLOSED:
                log.warning("subscriptions/listen failed: %s", exc.message)

    async def _handshake(self, session: Session) -> None:
        params = {
            "protocolVersion": LATEST_PROTOCOL_VERSION,
            "capabilities": self.capabilities,
            "clientInfo": self.client_info,
        }
        try:
            raw = await session.request("initialize", params, timeout=self.init_timeout)
        except JsonRpcError as exc:
            if exc.code == CONNECTION_CLOSED:
                raise await self._closed_early("initialize", exc) from None
            raise
        try:
            init = InitializeResult.model_validate(raw)
        except ValidationError as exc:
            raise JsonRpcError(INTERNAL_ERROR, f"malformed initialize result: {exc}") from None
        if init.protocol_version not in SUPPORTED_PROTOCOL_VERSIONS:
            raise JsonRpcError(
                INVALID_PARAMS,
                f"the host chose protocol version {init.protocol_version!r}, "
                f"which this client does not speak",
                {"supported": list(SUPPORTED_PROTOCOL_VERSIONS)},
            )
        self._init = init
        session.notify("notifications/initialized")
        if self.log_level is not None:
            await self.set_log_level(self.log_level)

    # ------------------------------------------------------------------ properties

    @property
    def session(self) -> Session:
        """The underlying JSON-RPC session (for methods this class does not wrap).

        Raises:
            RuntimeError: the client is not connected.
        """
        if self._session is None:
            raise RuntimeError("the client is not connected; use 'async with'")
        return self._session

    @property
    def initialize_result(self) -> InitializeResult:
        """The host's ``initialize`` result."""
        if self._init is None:
            raise RuntimeError("the client is not connected; use 'async with'")
        return self._init

    @property
    def server_info(self) -> Implementation:
        """``serverInfo``: the host's name and version."""
        return self.initialize_result.server_info

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The host's ``capabilities``."""
        return self.initialize_result.capabilities

    @property
    def instructions(self) -> str | None:
        """The host's ``instructions`` (a hint for a system prompt), if any."""
        return self.initialize_result.instructions

    @property
    def protocol_version(self) -> str:
        """The negotiated MCP protocol version."""
        return self.initialize_result.protocol_version

    @property
    def process(self) -> anyio.abc.Process | None:
        """The spawned host process (None for :meth:`connect`)."""
        return self.transport.process if self.transport is not None else None

    @property
    def ended_by(self) -> EndedBy | None:
        """How a spawned host ended on close: it exited after stdin EOF, after SIGTERM,
        or was killed. None until the client closed (and for :meth:`connect`)."""
        return self.transport.ended_by if self.transport is not None else None

    @property
    def stderr_output(self) -> str:
        """What a host spawned with ``stderr="capture"`` wrote so far (last 1 MiB)."""
        return self.transport.stderr_output if self.transport is not None else ""

    # ------------------------------------------------------------------ requests

    async def ping(self, *, timeout: float | None = 10.0) -> None:
        """Send ``ping`` and wait for ``{}`` (2026-07-28 has no ``ping``: there it asks
        ``server/discover``).

        Raises:
            JsonRpcError: -32001 on timeout, -32000 when the connection closed.
        """
        if self.modern:
            await self._request(DISCOVER, None, timeout)
            return
        await self.session.request("ping", timeout=timeout)

    async def set_log_level(self, level: str) -> None:
        """Ask the host for ``notifications/message`` at or above ``level`` (RFC 5424 name).

        Raises:
            JsonRpcError: -32602 for an unknown level.
        """
        if self.modern:  # 2026-07-28: sent with every request instead
            await self._request(
                DISCOVER, {"_meta": {"io.modelcontextprotocol/logLevel": level}}, 30.0
            )
        else:
            await self.session.request("logging/setLevel", {"level": level}, timeout=30.0)
        self.log_level = level

    async def list_tools(self, *, timeout: float | None = 60.0) -> list[ToolDefinition]:
        """Every tool definition the host offers, following ``nextCursor`` to the end.

        Args:
            timeout: seconds per page.

        Raises:
            JsonRpcError: the host answered with an error, or sent the same cursor twice
                (-32603), or a timeout (-32001).
        """
        tools: list[ToolDefinition] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            params = {"cursor": cursor} if cursor is not None else None
            raw = await self._request("tools/list", params, timeout)
            try:
                page = ListToolsResult.model_validate(raw)
            except ValidationError as exc:
                raise JsonRpcError(INTERNAL_ERROR, f"malformed tools/list result: {exc}") from None
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return tools
            if cursor in seen:
                raise JsonRpcError(INTERNAL_ERROR, f"tools/list repeated the cursor {cursor!r}")
            seen.add(cursor)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
        raise_on_protocol_error: bool | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> ToolReply:
        """Call a tool and wait for its result.

        Args:
            name: the tool's name.
            arguments: its arguments (a JSON object); None sends ``{}``.
            on_progress: receives each :class:`Progress` of this call; giving it
                attaches ``_meta.progressToken`` (the call id) to the request.
            timeout: seconds to wait; None uses :attr:`call_timeout`.
            raise_on_protocol_error: raise :class:`JsonRpcError` for the codes in
                :data:`MODEL_ERROR_CODES` instead of returning an error result; None
                uses the client's default.
            meta: extra ``_meta`` members for the request.

        Returns:
            The result paired with the call id. A tool failure, invalid arguments and
            (by default) an unknown tool all come back here with ``is_error`` True.

        Raises:
            CallTimeout: no response within ``timeout`` (``notifications/cancelled``
                was sent first).
            JsonRpcError: any other protocol error; -32000 when the connection closed.

        Leaving an enclosing cancel scope while waiting sends the cancellation
        notification too (the host interrupts the tool and sends nothing more).
        """
        call_id = self.session.new_request_id()
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments or {})}
        if meta:
            params["_meta"] = dict(meta)
        if timeout is None:
            timeout = self.call_timeout
        listener = _progress_listener(on_progress) if on_progress is not None else None
        try:
            raw = await self._request(
                "tools/call", params, timeout, request_id=call_id, on_progress=listener
            )
        except JsonRpcError as exc:
            if exc.code == REQUEST_TIMEOUT and timeout is not None:
                raise CallTimeout(call_id, name, timeout) from None
            raise_it = self.raise_on_protocol_error
            if raise_on_protocol_error is not None:
                raise_it = raise_on_protocol_error
            if exc.code in MODEL_ERROR_CODES and not raise_it:
                return ToolReply.from_protocol_error(call_id, name, exc)
            raise
        try:
            result = CallToolResult.model_validate(raw)
        except ValidationError as exc:
            raise JsonRpcError(INTERNAL_ERROR, f"malformed tools/call result: {exc}") from None
        return ToolReply(call_id, name, result)

    async def call_batch(
        self,
        calls: Sequence[BatchCall | Mapping[str, Any]],
        *,
        mode: BatchMode | None = None,
        stop_reason: str | None = None,
        on_event: BatchEventCallback | None = None,
        timeout: float | None = None,
        fallback: bool = True,
    ) -> BatchResult:
        """Run several calls in one ``tools/callBatch`` request (protocol.md, "Batches").

        Args:
            calls: :class:`~toolwire.client.batch.BatchCall` objects or mappings
                ``{id, name, arguments?}``; ids (strings or integers) unique in the batch.
            mode: "parallel" (the host's default) or "sequential". The host makes a
                batch sequential anyway when a call targets a sequential tool.
            stop_reason: the stop reason of the model message the calls come from;
                "length" makes the host run none of them (each gets an error result
                asking to re-issue it).
            on_event: receives :data:`~toolwire.client.batch.BatchEvent` objects (call
                started, progress, ended; batch progress); giving it attaches a
                progress token to the request.
            timeout: seconds for the whole batch (None: :attr:`call_timeout`).
            fallback: when the host answers -32601 (no ``tools/callBatch``, as any
                plain MCP server), run the calls as concurrent ``tools/call`` requests
                with the same rules applied here (length rule, source-order results,
                terminate); False raises the error instead. The answer is remembered
                for this connection.

        Returns:
            One result per call, in source order, paired by call id.

        Raises:
            JsonRpcError: -32602 for a malformed batch (duplicate ids, unknown mode),
                -32001 on timeout, -32000 when the connection closed, -32603 for a
                malformed answer.
        """
        items = [BatchCall.of(c) for c in calls]
        if mode not in (None, "parallel", "sequential"):
            raise JsonRpcError(INVALID_PARAMS, f"unknown batch mode {mode!r}")
        if timeout is None:
            timeout = self.call_timeout
        if self._batch_supported is not False:
            try:
                result = await self._call_batch_wire(items, mode, stop_reason, on_event, timeout)
            except JsonRpcError as exc:
                if exc.code != METHOD_NOT_FOUND or not fallback:
                    raise
                log.info("the host has no tools/callBatch; running the calls one request each")
                self._batch_supported = False
            else:
                self._batch_supported = True
                return result
        return await self._call_batch_emulated(items, mode, stop_reason, on_event, timeout)

    @property
    def batch_supported(self) -> bool | None:
        """Whether the host answered ``tools/callBatch`` (None until the first batch)."""
        return self._batch_supported

    async def _call_batch_wire(
        self,
        items: list[BatchCall],
        mode: str | None,
        stop_reason: str | None,
        on_event: BatchEventCallback | None,
        timeout: float | None,
    ) -> BatchResult:
        from .batch import BatchResult

        params: dict[str, Any] = {"calls": [c.to_wire() for c in items]}
        if mode is not None:
            params["mode"] = mode
        if stop_reason is not None:
            params["stopReason"] = stop_reason
        listener = _batch_listener(on_event) if on_event is not None else None
        raw = await self._request(CALL_BATCH, params, timeout, on_progress=listener)
        try:
            entries = raw["results"]
            if not isinstance(entries, list) or len(entries) != len(items):
                raise ValueError(f"{len(items)} calls but {len(entries)} results")
            results = []
            for call, entry in zip(items, entries, strict=True):
                if entry.get("id") != call.id:
                    raise ValueError(f"result for id {entry.get('id')!r} where {call.id!r} was due")
                res = CallToolResult.model_validate(entry["result"])
                results.append(ToolReply(call.id, str(entry.get("name", call.name)), res))
        except (KeyError, TypeError, AttributeError, ValueError, ValidationError) as exc:
            raise JsonRpcError(INTERNAL_ERROR, f"malformed tools/callBatch result: {exc}") from None
        return BatchResult(results, bool(raw.get("terminate")))

    async def _call_batch_emulated(
        self,
        items: list[BatchCall],
        mode: str | None,
        stop_reason: str | None,
        on_event: BatchEventCallback | None,
        timeout: float | None,
    ) -> BatchResult:
        from .batch import (
            BatchEvent,
            BatchProgress,
            BatchResult,
            CallEnded,
            CallProgress,
            CallStarted,
        )

        ids = [c.id for c in items]
        if len(set(ids)) != len(ids):
            raise JsonRpcError(INVALID_PARAMS, "the ids of a batch's calls must be unique")
        total = len(items)
        finished = 0
        results: list[ToolReply | None] = [None] * total

        def emit(event: BatchEvent) -> None:
            if on_event is not None:
                try:
                    on_event(event)
                except Exception:
                    log.exception("batch event callback failed")

        def done(i: int, res: ToolReply) -> None:
            nonlocal finished
            results[i] = res
            finished += 1
            emit(CallEnded(res.call_id, res.is_error))
            emit(BatchProgress(finished, total, f"{res.name} finished"))

        if stop_reason == "length":
            for i, call in enumerate(items):
                emit(CallStarted(call.id, call.name))
                text = length_stop_text(call.name)
                result = CallToolResult(content=[TextContent(text=text)], is_error=True)
                done(i, ToolReply(call.id, call.name, result))
            return BatchResult([r for r in results if r is not None], False, emulated=True)

        async def run_one(i: int, call: BatchCall) -> None:
            emit(CallStarted(call.id, call.name))
            on_progress: ProgressCallback | None = None
            if on_event is not None:

                def on_progress(p: Progress) -> None:
                    emit(CallProgress(call.id, p))

            res = await self.call_tool(
                call.name, call.arguments, on_progress=on_progress, raise_on_protocol_error=False
            )
            done(i, ToolReply(call.id, call.name, res.result, res.protocol_error))

        try:
            with anyio.fail_after(timeout):
                if mode == "sequential":
                    for i, call in enumerate(items):
                        await run_one(i, call)
                else:
                    async with anyio.create_task_group() as tg:
                        for i, call in enumerate(items):
                            tg.start_soon(run_one, i, call)
        except TimeoutError:
            raise JsonRpcError(
                REQUEST_TIMEOUT, f"Batch timed out after {timeout:g}s", {"timeout": timeout}
            ) from None
        final = [r for r in results if r is not None]
        terminate = batch_terminates(r.to_wire() for r in final)
        return BatchResult(final, terminate, emulated=True)

    # ------------------------------------------------------------------ host → client requests

    async def _answer_approve(self, params: Any, ctx: RequestContext) -> dict[str, Any]:
        """Host → client ``toolwire/approve``: ask :attr:`on_approval`, answer its decision."""
        request = ApprovalRequest.from_params(params)
        if self.on_approval is None:  # pragma: no cover - the handler is registered only with one
            return {"decision": "deny", "reason": "this client approves nothing"}
        return (await decide(self.on_approval, request)).to_wire()

    async def _answer_input(self, params: Any, ctx: RequestContext) -> dict[str, Any]:
        """Host → client ``elicitation/create``, ``sampling/createMessage``, ``roots/list``
        (2025-11-25): answered by the matching callback."""
        return await self.inputs.answer(ctx.method, params)

    # ------------------------------------------------------------------ notifications

    def _on_message(self, params: Any) -> None:
        if self.on_log is None or type(params) is not dict:
            return
        logger = params.get("logger")
        item = LogMessage(
            str(params.get("level", "info")),
            params.get("data"),
            logger if isinstance(logger, str) else None,
        )
        try:
            self.on_log(item)
        except Exception:
            log.exception("log callback failed")

    def _on_list_changed(self, params: Any) -> None:
        if self.on_tools_changed is None:
            return
        try:
            self.on_tools_changed()
        except Exception:
            log.exception("tools-changed callback failed")


async def _answer_ping(params: Any, ctx: RequestContext) -> dict[str, Any]:
    """Host → client ``ping``: answer ``{}`` at once (MCP 2025-11-25 "Ping")."""
    return {}


def _progress_of(params: dict[str, Any]) -> Progress | None:
    """The :class:`Progress` a ``notifications/progress`` (or a batch's
    ``callProgress``) carries, or None when its ``progress`` is not a number."""
    progress = params.get("progress")
    if not isinstance(progress, int | float):
        return None
    total = params.get("total")
    message = params.get("message")
    return Progress(
        progress,
        total if isinstance(total, int | float) else None,
        message if isinstance(message, str) else None,
    )


def _progress_listener(callback: ProgressCallback) -> ProgressListener:
    """A session progress listener handing each ``notifications/progress`` of one call
    to ``callback`` (an exception it raises is logged, never lost in the read loop)."""

    def listen(method: str, params: dict[str, Any]) -> None:
        if method != "notifications/progress":
            return
        item = _progress_of(params)
        if item is None:
            return
        try:
            callback(item)
        except Exception:
            log.exception("progress callback failed")

    return listen


def _batch_listener(on_event: BatchEventCallback) -> ProgressListener:
    """A session progress listener turning one batch's notifications (its own progress,
    ``notifications/toolwire/call*``) into batch events for ``on_event``."""
    from .batch import BatchProgress, CallEnded, CallProgress, CallStarted

    def build(method: str, p: dict[str, Any]) -> Any:
        if method == "notifications/progress":
            item = _progress_of(p)
            return None if item is None else BatchProgress(item.progress, item.total, item.message)
        if method == CALL_STARTED:
            return CallStarted(p["callId"], str(p.get("name", "")))
        if method == CALL_PROGRESS:
            item = _progress_of(p)
            if item is None:
                raise TypeError("progress must be a number")
            return CallProgress(p["callId"], item)
        if method == CALL_ENDED:
            return CallEnded(p["callId"], bool(p.get("isError")))
        return None

    def listen(method: str, params: dict[str, Any]) -> None:
        try:
            event = build(method, params)
        except (KeyError, TypeError, ValueError):
            log.debug("ignoring a malformed batch notification: %r", params)
            return
        if event is None:
            return
        try:
            on_event(event)
        except Exception:
            log.exception("batch event callback failed")

    return listen

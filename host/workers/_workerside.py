"""The serving half of a worker process (:mod:`.worker` is its entry point).

Loads the module named in the worker's configuration, then answers the host's requests
(:mod:`.workerwire`) until the host closes the pipe.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
import traceback
from typing import TYPE_CHECKING, Any

import anyio

from toolwire.errors import INVALID_PARAMS, JsonRpcError
from toolwire.framing import DEFAULT_MAX_MESSAGE_SIZE
from toolwire.router import Router
from toolwire.session import RequestContext, Session, progress_accepted, size_text
from toolwire.streams import FdReceiveStream, FdSendStream

from ..calls.executor import Executor, format_argument_error
from ..tools.arguments import ArgumentError
from ..tools.channel import CallChannel
from ..tools.context import ToolContext
from ..tools.definition import Tool
from ..tools.hooks import NOT_GIVEN, Block, IncomingCall, ResultPatch, _Hook
from ..tools.loading import ENTRY_POINT_GROUP, import_spec, register_module, tools_in
from ..tools.registry import Registry
from ..tools.results import ToolError, ToolResult, error_result, to_wire_content
from .workerwire import (
    ASK,
    HEARTBEAT,
    HOOK,
    IMPORT_FAILED,
    INPUT_NEEDED,
    LOG,
    PREPARE,
    PROGRESS,
    PROTOCOL,
    TOOL_ERROR,
    TOOLS_CHANGED,
)

if TYPE_CHECKING:
    from ..sandbox.env import ExecEnv

__all__ = ["WorkerChannel", "load_module", "serve", "tool_description"]

log = logging.getLogger("toolwire.worker")


class WorkerChannel(CallChannel):
    """A call's way back to the client from inside a worker: through the host.

    Progress and log records go out as :data:`~.workerwire.PROGRESS` and
    :data:`~.workerwire.LOG` notifications naming the call's reference, questions as
    :data:`~.workerwire.ASK` requests.
    """

    __slots__ = ("_capabilities", "_last", "_ref", "_request")

    def __init__(self, request: RequestContext, ref: Any, capabilities: dict[str, Any]) -> None:
        self._request = request
        self._ref = ref
        self._capabilities = capabilities
        self._last: float | None = None

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self._capabilities

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if self._request.done or not progress_accepted(self._last, progress, total):
            return
        self._last = progress
        params: dict[str, Any] = {"ref": self._ref, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._request.session.notify(PROGRESS, params)

    def log(self, level: str, data: Any, logger: str | None) -> None:
        if self._request.done:
            return
        params: dict[str, Any] = {"ref": self._ref, "level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._request.session.notify(LOG, params)

    async def drain(self) -> None:
        await self._request.session.drain()

    async def ask(self, method: str, params: dict[str, Any], key: str) -> Any:
        """Ask the client through the host.

        Raises:
            InputNeeded: MCP 2026-07-28, the question was recorded for the call's answer.
            ToolError: the client cannot or did not answer.
        """
        try:
            return await self._request.session.request(
                ASK, {"ref": self._ref, "method": method, "params": params, "key": key}
            )
        except JsonRpcError as exc:
            if exc.code == INPUT_NEEDED:
                from ..tools.rounds import InputNeeded  # not imported at a worker's start

                raise InputNeeded(method) from None
            raise ToolError(exc.message) from None


def load_module(registry: Registry, config: dict[str, Any]) -> None:
    """Load the configured module's tools and hooks into ``registry``.

    Raises:
        Exception: whatever importing the module raises.
    """
    spec = str(config["spec"])
    if config.get("kind") == "entry_point":
        import importlib.metadata

        found = [
            ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == spec
        ]
        if not found:
            raise ImportError(f"no entry point {spec!r} in group {ENTRY_POINT_GROUP}")
        for fn in tools_in(found[0].load()):
            registry.add(fn)
    else:
        source: bytes | None = None
        fd = config.get("sourceFd")
        if type(fd) is int:
            with os.fdopen(fd, "rb") as f:
                source = f.read()
        register_module(registry, import_spec(spec, fresh=True, source=source))


def tool_description(t: Tool) -> dict[str, Any]:
    """What the host needs of one tool: its wire definition plus the call rules it applies."""
    out: dict[str, Any] = {"definition": t.definition()}
    if t.timeout is not None:
        out["timeout"] = t.timeout
    if t.mutates:
        out["mutates"] = list(t.mutates)
    if t.execution_mode != "parallel":
        out["executionMode"] = t.execution_mode
    if t.prepare_arguments is not None:
        out["prepareArguments"] = True
    return out


class _Worker:
    """The loaded module and the methods the host calls."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.registry = Registry()
        self.hooks: list[_Hook] = []
        self.failure: JsonRpcError | None = None
        self.session: Session
        self.timeouts: dict[str, float | None] = {}
        self.mutates: dict[str, tuple[str, ...]] = {}
        self._env: ExecEnv | None = None
        try:
            load_module(self.registry, config)
        except BaseException as exc:
            text = "".join(traceback.format_exception(exc))
            self.failure = JsonRpcError(
                IMPORT_FAILED, _message(exc), {"traceback": text, "type": type(exc).__name__}
            )
            return
        self.hooks = [*self.registry.hooks.before, *self.registry.hooks.after]
        self._take_rules()
        self.executor = Executor(
            default_timeout=None,
            max_threads=int(config.get("maxThreads", 256)),
            abandon_threads=False,
        )

    @property
    def env(self) -> ExecEnv:
        """Where the module's tools act (``config["root"]``), made at the first call or
        hook: a worker's start (to its ``initialize`` answer) imports no
        :mod:`toolwire.host.sandbox.env`."""
        if self._env is None:
            from ..sandbox.env import ExecEnv

            root = str(self.config.get("root") or os.getcwd())
            self._env = ExecEnv.at(root, default_timeout=None)
        return self._env

    def router(self) -> Router:
        """The worker's side of the worker protocol: the methods the host calls."""
        router = Router()
        router.on_inline_request("initialize", self.initialize)
        router.on_request("tools/call", self.call)
        router.on_request(HOOK, self.hook)
        router.on_request(PREPARE, self.prepare)
        # Answered in the read loop: a worker whose event loop is wedged does not answer.
        router.on_inline_request(HEARTBEAT, lambda params, ctx: {})
        return router

    def attach(self, session: Session) -> None:
        self.session = session
        if self.failure is None:
            self.registry.on_change(self._changed)

    def _changed(self) -> None:
        """The module changed the registry while serving: tell the host (from the event
        loop's thread; a synchronous tool runs in a worker thread)."""
        self._take_rules()

        def tell() -> None:
            self.session.notify(TOOLS_CHANGED, {"tools": self._describe()})

        if threading.current_thread() is threading.main_thread():
            tell()
        else:
            anyio.from_thread.run_sync(tell)

    def _take_rules(self) -> None:
        """Keep each new tool's timeout and mutated paths for the host, which applies
        them (the timeout and the per-file mutation queue); here a call runs until it
        ends or is cancelled."""
        for t in self.registry:
            if t.name not in self.timeouts:
                self.timeouts[t.name] = t.timeout
                self.mutates[t.name] = t.mutates
            t.timeout = None
            t.mutates = ()

    def _describe(self) -> list[dict[str, Any]]:
        """Every tool as the host needs it, with the rules :meth:`_take_rules` kept."""
        out = []
        for t in self.registry:
            d = tool_description(t)
            timeout = self.timeouts.get(t.name)
            if timeout is not None:
                d["timeout"] = timeout
            mutates = self.mutates.get(t.name)
            if mutates:
                d["mutates"] = list(mutates)
            out.append(d)
        return out

    def initialize(self, params: Any, ctx: RequestContext) -> dict[str, Any]:
        if self.failure is not None:
            raise self.failure
        hooks = [
            {
                "index": i,
                "kind": h.kind,
                "name": h.name,
                "tools": None if h.tools is None else sorted(h.tools),
            }
            for i, h in enumerate(self.hooks)
        ]
        return {
            "protocolVersion": PROTOCOL,
            "pid": os.getpid(),
            "tools": self._describe(),
            "hooks": hooks,
        }

    def _tool(self, params: Any) -> Tool:
        name = params.get("name") if type(params) is dict else None
        tool = self.registry.get(name) if type(name) is str else None
        if tool is None:
            raise JsonRpcError(INVALID_PARAMS, f"Unknown tool: {name}")
        return tool

    async def call(self, params: Any, rctx: RequestContext) -> dict[str, Any]:
        tool = self._tool(params)
        arguments = params.get("arguments") or {}
        try:
            checked = tool.check(arguments)
            kwargs = checked.kwargs()
        except ArgumentError as exc:
            return error_result(format_argument_error(tool.name, exc.problems, arguments))
        caps = params.get("capabilities")
        channel = WorkerChannel(rctx, params.get("ref"), caps if type(caps) is dict else {})
        ctx = ToolContext(params.get("callId", rctx.id), tool.name, self.env, channel)
        return await self.executor.invoke(tool, kwargs, ctx, arguments=checked.arguments)

    async def prepare(self, params: Any, rctx: RequestContext) -> dict[str, Any]:
        tool = self._tool(params)
        assert tool.prepare_arguments is not None
        try:
            return {"arguments": tool.prepare_arguments(params.get("arguments"))}
        except Exception as exc:
            raise JsonRpcError(TOOL_ERROR, _message(exc)) from None

    async def hook(self, params: Any, rctx: RequestContext) -> dict[str, Any]:
        index = params.get("hook")
        if type(index) is not int or not 0 <= index < len(self.hooks):
            raise JsonRpcError(INVALID_PARAMS, f"no hook {index!r}")
        hook = self.hooks[index]
        raw: dict[str, Any] = params.get("call") or {}
        call = IncomingCall(raw["id"], raw["name"], raw["arguments"], raw.get("batchId"))
        args = params.get("args")
        caps = params.get("capabilities")
        channel = WorkerChannel(rctx, params.get("ref"), caps if type(caps) is dict else {})
        ctx = ToolContext(call.id, call.name, self.env, channel)
        try:
            if hook.kind == "before":
                before = copy.deepcopy(args)
                value = hook.fn(call, args, ctx)
                if hasattr(value, "__await__"):
                    value = await value
                if isinstance(value, Block):
                    return {"block": value.reason}
                if value is None:
                    return {} if args == before else {"arguments": args}
                if type(value) is dict:
                    return {"arguments": value}
                return {"unusable": type(value).__name__}
            view = ToolResult.from_wire(params.get("result") or {})
            value = hook.fn(call, args, view, ctx)
            if hasattr(value, "__await__"):
                value = await value
        except Exception as exc:
            raise JsonRpcError(TOOL_ERROR, _message(exc)) from None
        if value is None:
            return {}
        if not isinstance(value, ResultPatch):
            return {"unusable": type(value).__name__}
        patch: dict[str, Any] = {}
        try:
            if value.content is not NOT_GIVEN:
                patch["content"] = None if value.content is None else to_wire_content(value.content)
        except TypeError as exc:
            return {"badContent": str(exc)}
        for field, key in (
            ("details", "details"),
            ("is_error", "isError"),
            ("terminate", "terminate"),
        ):
            given = getattr(value, field)
            if given is not NOT_GIVEN:
                patch[key] = given
        return {"patch": patch}


def _message(exc: BaseException) -> str:
    try:
        return str(exc) or type(exc).__name__
    except Exception:
        return type(exc).__name__


def serve(config: dict[str, Any], read_fd: int, write_fd: int) -> None:
    """Load the module, then serve the host on the two descriptors until it hangs up."""
    worker = _Worker(config)

    async def run() -> None:
        limit = int(config.get("maxMessageSize", DEFAULT_MAX_MESSAGE_SIZE))
        session = Session(
            FdReceiveStream(read_fd),
            FdSendStream(write_fd),
            router=worker.router(),
            framing="ndjson",
            name="worker",
            cancel_dialect="lsp",
            replace_surrogates=False,  # the host replaces them for its client
            max_send_size=limit,
            oversized_reply=lambda size: JsonRpcError(
                TOOL_ERROR,
                f"its result is {size_text(size)}, over the {size_text(limit)} limit of a "
                "message from a worker process (--max-message-size)",
            ),
        )
        worker.attach(session)
        await session.serve()

    anyio.run(run, backend="asyncio")

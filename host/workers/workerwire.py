"""What the host and its worker processes say to each other (:mod:`.worker`, :mod:`.workers`).

A worker serves the tools of one module to the host over a pipe pair, in JSON-RPC 2.0
with newline-delimited framing, on the same :class:`toolwire.session.Session` the host
uses with its clients: the host is the worker's client. The methods are MCP's where one
fits (``initialize``, ``tools/call``, ``notifications/progress``) and toolwire's own
otherwise (this module). Nothing here reaches a client: these names are private to one
host and its workers, and may change with any release.

Standard library only (both sides import it early).
"""

from __future__ import annotations

__all__ = [
    "ASK",
    "HEARTBEAT",
    "HOOK",
    "IMPORT_FAILED",
    "INPUT_NEEDED",
    "LOG",
    "PREPARE",
    "PROGRESS",
    "PROTOCOL",
    "TOOLS_CHANGED",
    "TOOL_ERROR",
    "WORKER_MODULE",
]

PROTOCOL = "toolwire-worker/1"
"""The ``protocolVersion`` a host sends in a worker's ``initialize``."""

WORKER_MODULE = "toolwire.host.workers.worker"
"""The module a worker process runs (``python -P -m toolwire.host.workers.worker CONFIG``)."""

HOOK = "toolwire/worker/hook"
"""host → worker: run one hook of the module.

Params: ``{"hook": index, "call": {"id", "name", "arguments", "batchId"?}, "args": {...},
"result"?: CallToolResult, "ref": call reference}``. Result: ``{}`` (nothing to change),
``{"block": reason|null}``, ``{"arguments": {...}}`` (before hooks) or ``{"patch":
{"content"?, "details"?, "isError"?, "terminate"?}}`` (after hooks). A hook that raises
answers :data:`TOOL_ERROR` with its message."""

HEARTBEAT = "toolwire/worker/heartbeat"
"""host → worker: are you there? Sent to a worker idle for a while before it gets a call
(:mod:`.health`). Params ``{}``; result ``{}``, answered in the worker's read loop."""

PREPARE = "toolwire/worker/prepareArguments"
"""host → worker: run a tool's ``prepare_arguments``. Params ``{"name", "arguments"}``;
result ``{"arguments": ...}``; :data:`TOOL_ERROR` with the message when it raises."""

ASK = "toolwire/worker/ask"
"""worker → host: a tool asks the client (elicitation, sampling, roots). Params
``{"ref", "method", "params", "key"}``; result: the client's answer. Errors:
:data:`INPUT_NEEDED` (MCP 2026-07-28: the call is answered with input required),
:data:`TOOL_ERROR` (the ask failed; its message is the tool's error)."""

LOG = "toolwire/worker/log"
"""worker → host notification: ``ctx.log`` of a call. Params ``{"ref", "level", "data",
"logger"?}``; the host accepts it only for a call in flight in that worker."""

PROGRESS = "toolwire/worker/progress"
"""worker → host notification: ``ctx.report_progress`` of a call. Params ``{"ref",
"progress", "total"?, "message"?}``; the host passes it on as the call's
``notifications/progress`` (when its client asked for progress), for calls in flight in
that worker only."""

TOOLS_CHANGED = "toolwire/worker/toolsChanged"
"""worker → host notification: the module changed its registry at run time (``register``
kept it and added or removed tools). Params ``{"tools": [...]}``: every tool now, described
as in ``initialize``."""

IMPORT_FAILED = -32090
"""Error code of ``initialize`` when the module did not import; the message says why and
``data.traceback`` holds the traceback text."""

TOOL_ERROR = -32091
"""Error code for a tool's, hook's or ask's own failure; the message is the whole text."""

INPUT_NEEDED = -32092
"""Error code of :data:`ASK` when the question was recorded for an input-required result."""

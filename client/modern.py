"""The client's side of MCP 2026-07-28: discovery, and answering what a tool asks for.

A 2026-07-28 server never sends the client a request. A tool that needs the user or the
model answers ``tools/call`` with ``{"resultType": "input_required", "inputRequests":
{KEY: {method, params}}, "requestState"?}``; the client answers each request through its
callbacks and sends the call again with ``inputResponses`` (same keys) and the
``requestState`` echoed byte for byte (MCP 2026-07-28 "basic/patterns/mrtr"). With a
2025-11-25 server the same callbacks answer the server's ``elicitation/create``,
``sampling/createMessage`` and ``roots/list`` requests.

Callbacks (sync or async) receive the request's ``params`` and return its result, in
wire form:

* ``on_elicit(params) -> {"action": "accept"|"decline"|"cancel", "content"?: {...}}``
* ``on_sample(params) -> {"role": "assistant", "content": {...}, "model": str, ...}``
* ``on_roots(params) -> {"roots": [{"uri": "file:///...", "name"?: str}, ...]}``
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from toolwire.errors import INTERNAL_ERROR, JsonRpcError
from toolwire.extensions import APPROVE, ApprovalRequest
from toolwire.models import Implementation, InitializeResult
from toolwire.modern import MODERN_PROTOCOL_VERSION, SERVER_INFO_KEY

from .approval import ApprovalCallback, decide

__all__ = [
    "Era",
    "InputCallback",
    "InputHandlers",
    "initialize_from_discover",
]

Era = Literal["auto", "modern", "legacy"]
"""How :class:`~toolwire.client.Client` connects: ``"auto"`` asks ``server/discover`` first
and speaks 2026-07-28 when the server answers it (a toolwire host does), else falls back
to the ``initialize`` handshake; ``"modern"`` speaks only 2026-07-28; ``"legacy"`` only
2025-11-25 (``initialize``)."""

InputCallback = Callable[[dict[str, Any]], Awaitable[dict[str, Any]] | dict[str, Any]]
"""``on_elicit`` / ``on_sample`` / ``on_roots``: the request's params in, its result out."""


@dataclass
class InputHandlers:
    """The client's answers to what a server asks for; a None callback declares nothing."""

    on_elicit: InputCallback | None = None
    on_sample: InputCallback | None = None
    on_roots: InputCallback | None = None
    on_approval: ApprovalCallback | None = None

    def capabilities(self, base: Mapping[str, Any]) -> dict[str, Any]:
        """``base`` plus ``elicitation``, ``sampling`` and ``roots`` for the callbacks given."""
        caps = dict(base)
        if self.on_elicit is not None:
            caps.setdefault("elicitation", {})
        if self.on_sample is not None:
            caps.setdefault("sampling", {})
        if self.on_roots is not None:
            caps.setdefault("roots", {})
        return caps

    def callback_for(self, method: str) -> InputCallback | None:
        """The callback that answers ``method`` (None when the client has none)."""
        return {
            "elicitation/create": self.on_elicit,
            "sampling/createMessage": self.on_sample,
            "roots/list": self.on_roots,
        }.get(method)

    async def answer(self, method: str, params: Any) -> dict[str, Any]:
        """Answer one request (a server→client request, or one entry of ``inputRequests``).

        Raises:
            JsonRpcError: -32603 when the client has no callback for ``method`` or the
                callback did not return an object.
        """
        params = params if isinstance(params, dict) else {}
        if method == APPROVE and self.on_approval is not None:
            return (await decide(self.on_approval, ApprovalRequest.from_params(params))).to_wire()
        callback = self.callback_for(method)
        if callback is None:
            raise JsonRpcError(
                INTERNAL_ERROR, f"the server asked for {method}, which this client cannot answer"
            )
        out = callback(params)
        if inspect.isawaitable(out):
            out = await out
        if not isinstance(out, dict):
            raise JsonRpcError(
                INTERNAL_ERROR, f"the {method} callback returned {type(out).__name__}, not a dict"
            )
        return out

    async def fulfil(self, requests: Any) -> dict[str, Any]:
        """Answer every entry of an ``inputRequests`` map; returns ``inputResponses``.

        Raises:
            JsonRpcError: -32603 for a malformed map or a request the client cannot answer.
        """
        if not isinstance(requests, dict):
            raise JsonRpcError(INTERNAL_ERROR, "malformed inputRequests: not an object")
        responses: dict[str, Any] = {}
        for key, request in requests.items():
            if not isinstance(request, dict) or not isinstance(request.get("method"), str):
                raise JsonRpcError(INTERNAL_ERROR, f"malformed inputRequests[{key!r}]")
            responses[key] = await self.answer(request["method"], request.get("params"))
        return responses


def initialize_from_discover(raw: Any) -> InitializeResult | None:
    """The ``server/discover`` result as an :class:`InitializeResult` (so the client's
    ``server_info``, ``server_capabilities`` and ``instructions`` work in both eras), or
    None when it does not offer 2026-07-28."""
    if not isinstance(raw, dict):
        return None
    versions = raw.get("supportedVersions")
    caps = raw.get("capabilities")
    if not isinstance(versions, list) or MODERN_PROTOCOL_VERSION not in versions:
        return None
    if not isinstance(caps, dict):
        return None
    meta = raw.get("_meta")
    info = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
    try:
        server_info = Implementation.model_validate(info)
    except ValueError:
        server_info = Implementation(name="unknown", version="")
    instructions = raw.get("instructions")
    return InitializeResult(
        protocol_version=MODERN_PROTOCOL_VERSION,
        capabilities=caps,
        server_info=server_info,
        instructions=instructions if isinstance(instructions, str) else None,
    )

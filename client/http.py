"""The client side of MCP Streamable HTTP: :class:`HttpTransport` (httpx).

``Client.open_url(url, token=...)`` uses it the way ``Client.spawn`` uses a
:class:`~toolwire.client.transport.StdioTransport`: the client's session speaks JSON-RPC
over a pair of in-memory byte streams, and the transport turns each message into a POST
to the MCP endpoint and feeds the answers (JSON, or each event of an SSE stream) back.

Per era (MCP 2025-11-25 and 2026-07-28 "transports/streamable-http"):

* a 2026-07-28 request (its ``_meta`` carries the protocol version) is POSTed with
  ``MCP-Protocol-Version``, ``Mcp-Method`` and, for ``tools/call``, ``Mcp-Name``
  (base64 sentinel when the name is not plain header text); the client cancels it by
  closing the response (``notifications/cancelled`` for it closes the POST);
* the 2025-11-25 leg keeps the ``Mcp-Session-Id`` the ``initialize`` answer carries,
  sends it and the negotiated ``MCP-Protocol-Version`` on every request, and ends the
  session with DELETE when the client closes.

An HTTP error without a JSON-RPC body (401, 403, 421, …) becomes the JSON-RPC error
-32000 of the request that met it, naming the status.
"""

from __future__ import annotations

import base64
import contextlib
import logging
from typing import Any

import anyio
import anyio.abc
import httpx
from anyio.abc import ByteReceiveStream, ByteSendStream

from toolwire import _json
from toolwire.errors import CONNECTION_CLOSED, JsonRpcError
from toolwire.messages import error_response
from toolwire.modern import NAMED_BY_HEADER, PROTOCOL_VERSION_KEY
from toolwire.streams import MemoryReceiveStream

__all__ = ["HttpTransport"]

log = logging.getLogger("toolwire.client")


def header_value(text: str) -> str:
    """``text`` as an ``Mcp-Name`` value: as is when it is plain visible ASCII without
    surrounding space, else the base64 sentinel ``=?base64?…?=``."""
    plain = text and text == text.strip() and all(0x20 <= ord(c) <= 0x7E for c in text)
    if plain and not (text.startswith("=?base64?") and text.endswith("?=")):
        return text
    return "=?base64?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


class _Outbound(ByteSendStream):
    def __init__(self, transport: HttpTransport) -> None:
        self._transport = transport
        self._buf = b""

    async def send(self, item: bytes) -> None:
        buf = self._buf + bytes(item)
        *frames, self._buf = buf.split(b"\n")
        for frame in frames:
            if frame.strip():
                self._transport._post(frame)

    async def aclose(self) -> None:
        self._transport._closed_by_client()


class HttpTransport:
    """A connection to an MCP endpoint over Streamable HTTP.

    Args:
        url: the MCP endpoint (``http://127.0.0.1:8000/mcp``).
        token: a bearer token sent as ``Authorization: Bearer …`` on every request.
        timeout: seconds to connect and between bytes of a response (None: no limit;
            a long call's SSE stream is kept alive by the host's comments).
        headers: more headers for every request.
    """

    process = None
    ended_by = None
    stderr_output = ""

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout: float | None = 300.0,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.url = url
        self._headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            **(headers or {}),
        }
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token}"
        self._timeout = timeout
        self.session_id: str | None = None
        """The 2025-11-25 ``Mcp-Session-Id`` (None before ``initialize`` and in 2026-07-28)."""
        self.protocol_version: str | None = None
        self._http: httpx.AsyncClient | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._inbound = MemoryReceiveStream()
        self._inflight: dict[Any, anyio.CancelScope] = {}
        self._initialize_id: Any = None

    async def start(self, tg: anyio.abc.TaskGroup) -> tuple[ByteReceiveStream, ByteSendStream]:
        """Open the HTTP client; returns the streams the client's session uses."""
        self._http = httpx.AsyncClient(timeout=httpx.Timeout(self._timeout))
        self._tg = tg
        return self._inbound, _Outbound(self)

    def _closed_by_client(self) -> None:
        self._inbound.end()

    def _post(self, frame: bytes) -> None:
        assert self._tg is not None
        try:
            message = _json.loads(frame)
        except ValueError:
            return
        if type(message) is not dict:
            return
        method = message.get("method")
        if method == "notifications/cancelled":
            params = message.get("params")
            rid = params.get("requestId") if type(params) is dict else None
            scope = self._inflight.get(rid)
            if scope is not None and self.session_id is None:
                scope.cancel()  # 2026-07-28: closing the response is the cancellation
                return
        self._tg.start_soon(self._exchange, frame, message)

    def _request_headers(self, message: dict[str, Any]) -> dict[str, str]:
        headers = dict(self._headers)
        method = message.get("method")
        params = message.get("params")
        meta = params.get("_meta") if type(params) is dict else None
        version = meta.get(PROTOCOL_VERSION_KEY) if type(meta) is dict else None
        if type(version) is str:
            headers["MCP-Protocol-Version"] = version
            if type(method) is str:
                headers["Mcp-Method"] = method
                member = NAMED_BY_HEADER.get(method)
                if member is not None and type(params) is dict:
                    value = params.get(member)
                    if type(value) is str:
                        headers["Mcp-Name"] = header_value(value)
            return headers
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    async def _exchange(self, frame: bytes, message: dict[str, Any]) -> None:
        assert self._http is not None
        rid = message.get("id") if "method" in message else None
        is_request = rid is not None
        if message.get("method") == "initialize":
            self._initialize_id = rid
        with anyio.CancelScope() as scope:
            if is_request:
                self._inflight[rid] = scope
            try:
                await self._send_and_read(frame, message, rid)
            except httpx.HTTPError as exc:
                if is_request:
                    self._fail(rid, f"HTTP request to {self.url} failed: {exc}")
                else:
                    log.warning("posting %s failed: %s", message.get("method"), exc)
            finally:
                if is_request and self._inflight.get(rid) is scope:
                    del self._inflight[rid]

    async def _send_and_read(self, frame: bytes, message: dict[str, Any], rid: Any) -> None:
        assert self._http is not None
        request = self._http.build_request(
            "POST", self.url, content=frame, headers=self._request_headers(message)
        )
        response = await self._http.send(request, stream=True)
        try:
            sid = response.headers.get("mcp-session-id")
            if sid is not None and rid is not None and rid == self._initialize_id:
                self.session_id = sid
            if response.status_code == 202:
                return
            ctype = response.headers.get("content-type", "")
            if ctype.startswith("text/event-stream"):
                await self._read_sse(response)
                return
            body = await response.aread()
            if ctype.startswith("application/json"):
                try:
                    answer = _json.loads(body)
                except ValueError:
                    answer = None
                if type(answer) is dict and ("result" in answer or "error" in answer):
                    if answer.get("id") is None and rid is not None:
                        answer["id"] = rid  # an id-less HTTP error answers this request
                    self._note_initialize(answer, rid)
                    self._inbound.put(_json.dumps(answer) + b"\n")
                    return
            if rid is not None:
                text = body.decode("utf-8", "replace").strip()[:500]
                self._fail(rid, f"HTTP {response.status_code} from {self.url}: {text}")
        finally:
            await response.aclose()

    def _note_initialize(self, answer: dict[str, Any], rid: Any) -> None:
        if rid is not None and rid == self._initialize_id:
            result = answer.get("result")
            if type(result) is dict and type(result.get("protocolVersion")) is str:
                self.protocol_version = result["protocolVersion"]

    async def _read_sse(self, response: httpx.Response) -> None:
        data: list[str] = []
        async for line in response.aiter_lines():
            if line == "":
                if data:
                    payload = "\n".join(data).encode("utf-8")
                    data = []
                    if payload.strip():
                        self._inbound.put(payload + b"\n")
                continue
            if line.startswith(":"):
                continue
            field, _, value = line.partition(":")
            if field == "data":
                data.append(value[1:] if value.startswith(" ") else value)

    def _fail(self, rid: Any, text: str) -> None:
        reply = error_response(rid, JsonRpcError(CONNECTION_CLOSED, text))
        self._inbound.put(_json.dumps(reply) + b"\n")

    async def end(self) -> None:
        """End the 2025-11-25 session (DELETE) and close the HTTP client (shielded)."""
        with anyio.CancelScope(shield=True):
            http = self._http
            if http is None:
                return
            if self.session_id is not None:
                with contextlib.suppress(httpx.HTTPError), anyio.move_on_after(5):
                    headers = {
                        k: v
                        for k, v in self._request_headers({}).items()
                        if k not in ("Content-Type",)
                    }
                    await http.delete(self.url, headers=headers)
            await http.aclose()

    async def close_streams(self) -> None:
        """Stop feeding the client's session."""
        self._inbound.end()

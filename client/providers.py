"""Model providers for :func:`toolwire.client.agent.run_agent`.

A provider turns a :class:`ModelRequest` (system prompt, conversation, tool
definitions) into the next :class:`~toolwire.client.conversation.AssistantMessage`.
Two come with toolwire:

* :class:`ScriptedProvider`: plays a list of assistant messages (or functions of the
  request that return one). For tests and the demo; records every request it got.
* :class:`OpenAIChatProvider`: any OpenAI-compatible chat-completions endpoint over
  HTTP (httpx), with or without streaming (server-sent events).

Write your own by implementing :class:`Provider`'s one method.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from toolwire.models import ToolDefinition

from .adapters import (
    OpenAIChatStream,
    ProviderTools,
    assistant_from_openai_chat,
    openai_chat_tools,
    to_openai_chat_messages,
)
from .conversation import AssistantMessage, Message

__all__ = [
    "ModelRequest",
    "OpenAIChatProvider",
    "Provider",
    "ProviderError",
    "ScriptStep",
    "ScriptedProvider",
    "TextCallback",
    "iter_sse_data",
]

TextCallback = Callable[[str], object]
"""Receives the assistant's text as it streams (each call: the newly added text)."""


@dataclass
class ModelRequest:
    """What the model is asked with.

    Attributes:
        system_prompt: the system prompt (with the "Available tools" section), or None.
        messages: the conversation so far (a copy; the provider may keep it).
        tools: the tool definitions the model may call.
    """

    system_prompt: str | None
    messages: list[Message]
    tools: list[ToolDefinition] = field(default_factory=list)

    @property
    def roles(self) -> list[str]:
        """The role of each message, in order (handy in tests)."""
        return [m.role for m in self.messages]


class Provider(Protocol):
    """A model: ``await provider.complete(request, on_text=...)`` gives the next message."""

    async def complete(
        self, request: ModelRequest, *, on_text: TextCallback | None = None
    ) -> AssistantMessage:
        """The model's next assistant message.

        Raise for a failure (network, HTTP status, malformed answer): the agent loop
        records it as an assistant message with stop reason "error" and ends.
        """
        ...


class ProviderError(Exception):
    """A provider's request failed.

    Attributes:
        status: the HTTP status, when there was a response.
        body: the start of the response body (at most 2000 characters), if any.
    """

    def __init__(self, message: str, *, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


# --------------------------------------------------------------------------- scripted

ScriptStep = (
    AssistantMessage
    | Callable[[ModelRequest], AssistantMessage]
    | Callable[[ModelRequest], Awaitable[AssistantMessage]]
)
"""One step of a script: a fixed message, or a function of the request (sync or async)
that returns one, for a script that reacts to tool results."""


class ScriptedProvider:
    """Plays assistant messages in order; the stand-in model of tests and the demo.

    Args:
        script: the steps, one per model call.
        when_done: the message given once the script is used up (default: an empty
            message with stop reason "stop", which ends an agent loop).

    Attributes:
        requests: every :class:`ModelRequest` received, in order.
    """

    def __init__(
        self, script: Iterable[ScriptStep], *, when_done: AssistantMessage | None = None
    ) -> None:
        self._steps = list(script)
        self._next = 0
        self.when_done = when_done
        self.requests: list[ModelRequest] = []

    @property
    def calls(self) -> int:
        """How many times the model was asked."""
        return len(self.requests)

    async def complete(
        self, request: ModelRequest, *, on_text: TextCallback | None = None
    ) -> AssistantMessage:
        """The next scripted message (a function step is called with ``request``)."""
        self.requests.append(request)
        if self._next >= len(self._steps):
            message = self.when_done or AssistantMessage()
        else:
            step = self._steps[self._next]
            self._next += 1
            if isinstance(step, AssistantMessage):
                message = step
            else:
                produced: Any = step(request)
                if inspect.isawaitable(produced):
                    produced = await produced
                if not isinstance(produced, AssistantMessage):
                    raise TypeError(f"script step {self._next} returned {type(produced).__name__}")
                message = produced
        if on_text is not None and message.text:
            on_text(message.text)
        return message


# --------------------------------------------------------------------------- OpenAI-compatible


async def iter_sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The ``data`` of each server-sent event (WHATWG "Server-sent events" §9.2).

    Lines ``data: X`` of one event are joined with newlines; an empty line ends the
    event; comments (``:``) and other fields are skipped. A final event without its
    closing empty line is still given.
    """
    data: list[str] = []
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
    if data:
        yield "\n".join(data)


class OpenAIChatProvider:
    """An OpenAI-compatible chat-completions endpoint (``POST {base_url}/chat/completions``).

    Args:
        model: the model name sent in the body.
        base_url: the API root, e.g. ``https://api.openai.com/v1`` or
            ``http://localhost:8000/v1`` (default: ``$OPENAI_BASE_URL`` or OpenAI's).
        api_key: sent as ``Authorization: Bearer``; default ``$OPENAI_API_KEY``; None
            and no variable sends no header (local servers).
        stream: ask for a streamed answer (``stream: true``, server-sent events) and
            assemble it with :class:`~toolwire.client.adapters.OpenAIChatStream`.
        timeout: seconds for connecting and between received bytes.
        extra_body: more members for the request body (``temperature``,
            ``max_tokens``, ...).
        headers: more HTTP headers.
        strict_tools: declare tools in OpenAI's strict form (``strict: true``) where
            their schema can be written so without loosening it.
        http_client: an ``httpx.AsyncClient`` to use (and not close); default: a new
            one per request.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        stream: bool = False,
        timeout: float = 120.0,
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        strict_tools: bool = True,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.model = model
        self.base_url = (
            base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        ).rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.stream = stream
        self.timeout = timeout
        self.extra_body = dict(extra_body or {})
        self.headers = dict(headers or {})
        self.strict_tools = strict_tools
        self.http_client = http_client

    def tool_set(self, request: ModelRequest) -> ProviderTools:
        """The request's tools as this API takes them (names, schemas, the way back)."""
        return openai_chat_tools(request.tools, strict=self.strict_tools)

    def request_body(
        self, request: ModelRequest, tools: ProviderTools | None = None
    ) -> dict[str, Any]:
        """The JSON body for ``request`` (exposed for tests and logging)."""
        tools = tools if tools is not None else self.tool_set(request)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_chat_messages(request.messages, request.system_prompt, tools),
        }
        if tools.declarations:
            body["tools"] = tools.declarations
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        body.update(self.extra_body)
        return body

    async def complete(
        self, request: ModelRequest, *, on_text: TextCallback | None = None
    ) -> AssistantMessage:
        """POST the conversation and return the assistant message.

        Raises:
            ProviderError: a transport failure, an HTTP status of 400 or more, an
                ``error`` object in the stream, or an answer that is not JSON.
        """
        headers = {"Content-Type": "application/json", **self.headers}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        url = f"{self.base_url}/chat/completions"
        tools = self.tool_set(request)
        body = self.request_body(request, tools)
        try:
            if self.http_client is not None:
                return await self._post(self.http_client, url, body, headers, on_text, tools)
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                return await self._post(client, url, body, headers, on_text, tools)
        except httpx.HTTPError as exc:
            raise ProviderError(f"request to {url} failed: {type(exc).__name__}: {exc}") from exc

    async def _post(
        self,
        client: httpx.AsyncClient,
        url: str,
        body: dict[str, Any],
        headers: dict[str, str],
        on_text: TextCallback | None,
        tools: ProviderTools,
    ) -> AssistantMessage:
        async with client.stream(
            "POST", url, json=body, headers=headers, timeout=self.timeout
        ) as resp:
            if resp.status_code >= 400:
                text = (await resp.aread()).decode("utf-8", "replace")[:2000]
                raise ProviderError(
                    f"{url} answered HTTP {resp.status_code}: {text[:300]}",
                    status=resp.status_code,
                    body=text,
                )
            if not self.stream:
                raw = await resp.aread()
                try:
                    data = json.loads(raw)
                except ValueError as exc:
                    raise ProviderError(f"{url} answered with invalid JSON: {exc}") from None
                if not isinstance(data, dict):
                    raise ProviderError(f"{url} answered with JSON that is not an object")
                if "error" in data and "choices" not in data:
                    raise ProviderError(f"{url} answered with an error: {data['error']}")
                message = assistant_from_openai_chat(data, tools)
                if on_text is not None and message.text:
                    on_text(message.text)
                return message
            assembler = OpenAIChatStream(tools)
            async for data_text in iter_sse_data(resp.aiter_lines()):
                if data_text.strip() == "[DONE]":
                    break
                try:
                    chunk = json.loads(data_text)
                except ValueError as exc:
                    raise ProviderError(f"{url} streamed invalid JSON: {exc}") from None
                if not isinstance(chunk, dict):
                    continue
                if "error" in chunk:
                    raise ProviderError(f"{url} streamed an error: {chunk['error']}")
                added = assembler.feed(chunk)
                if added and on_text is not None:
                    on_text(added)
            return assembler.message()

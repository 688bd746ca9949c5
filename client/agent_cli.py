"""``toolwire agent``: a model behind an OpenAI-compatible endpoint uses a spawned host's tools.

One run for a prompt given on the command line; without one, an interactive session
that reads a prompt per line (an empty line or end of input ends it) and keeps the
conversation across prompts. Calls the host asks about (``--approve``) are put to the
user on the terminal (or allowed with ``--yes``).

Output: the model's text on stdout (streamed with ``--stream``), each tool call and
its clipped result on stderr. Exit code 0 when the last run ended normally (the model
stopped, or a tool asked to terminate), 1 otherwise (model error, turn limit, cut-off
answer).
"""

from __future__ import annotations

import argparse
import os
import sys

import anyio
from rich.console import Console
from rich.markup import escape

from .agent import (
    AgentEnd,
    MessageEnd,
    MessageUpdate,
    ToolExecutionStart,
    run_agent,
)
from .client import ToolReply
from .conversation import AssistantMessage, Message, ToolResultMessage, UserMessage
from .hostargs import spawn_host
from .providers import OpenAIChatProvider
from .render import TerminalApprover, json_text, result_panel, visible

__all__ = ["MissingApiKey", "check_api_key", "run_agent_cli"]


class MissingApiKey(Exception):
    """``toolwire agent`` has no API key to send (a usage error, exit code 2)."""


def check_api_key(ns: argparse.Namespace) -> str | None:
    """The API key ``toolwire agent`` sends: the value of ``$VAR`` (``--api-key-env``,
    default ``OPENAI_API_KEY``), or None when it is unset and the endpoint is not
    OpenAI's own (``--base-url`` or ``$OPENAI_BASE_URL`` names another: a local server
    takes none). Called before the host starts or any request is sent, so a missing key
    costs nothing.

    Raises:
        MissingApiKey: no key, and the endpoint is OpenAI's (which refuses every request
            without one).
    """
    key = os.environ.get(ns.api_key_env)
    if key:
        return key
    if not (ns.base_url or os.environ.get("OPENAI_BASE_URL")):
        raise MissingApiKey(
            f"no API key: ${ns.api_key_env} is not set, and OpenAI's API needs one (set "
            "it, name another variable with --api-key-env, or give --base-url for an "
            "endpoint that takes none)"
        )
    return None


async def run_agent_cli(ns: argparse.Namespace) -> int:
    """``toolwire agent`` with parsed arguments; returns the exit code.

    Raises:
        MissingApiKey: see :func:`check_api_key`.
    """
    out = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    key = check_api_key(ns)
    provider = OpenAIChatProvider(
        ns.model,
        base_url=ns.base_url,
        api_key=key or "",
        stream=ns.stream,
    )
    if key is None:
        err.print(
            f"toolwire agent: ${ns.api_key_env} is not set: no API key is sent to "
            f"{visible(provider.base_url)}",
            markup=False,
            soft_wrap=True,
        )
    approver = TerminalApprover(err, assume_yes=ns.yes)
    messages: list[Message] = []
    code = 0
    async with spawn_host(ns, on_approval=approver) as client:
        tools = await client.list_tools()
        prompts = [ns.prompt] if ns.prompt else None
        while True:
            if prompts is not None:
                if not prompts:
                    break
                text = prompts.pop(0)
            else:
                try:
                    text = await anyio.to_thread.run_sync(err.input, "[bold]you>[/bold] ")
                except EOFError:
                    break
                if not text.strip():
                    break
            messages.append(UserMessage(text))
            run = run_agent(
                provider,
                client,
                messages,
                tools=tools,
                system_prompt=ns.system,
                max_turns=ns.max_turns,
            )
            async with run:
                async for event in run:
                    if isinstance(event, MessageUpdate) and ns.stream:
                        out.print(visible(event.delta), end="", markup=False)
                    elif isinstance(event, MessageEnd):
                        _show_message(event.message, out, err, streamed=ns.stream)
                    elif isinstance(event, ToolExecutionStart):
                        args = json_text(event.arguments, indent=None)
                        if len(args) > 200:
                            args = args[:199] + "…"
                        err.print(f"[cyan]→ {escape(visible(event.name))}[/cyan] {escape(args)}")
                    elif isinstance(event, AgentEnd) and event.reason not in ("stop", "terminate"):
                        err.print(f"[yellow]the run ended: {event.reason}[/yellow]")
            messages = run.messages
            code = 0 if run.end_reason in ("stop", "terminate") else 1
    sys.stdout.flush()
    return code


def _show_message(message: Message, out: Console, err: Console, *, streamed: bool) -> None:
    if isinstance(message, AssistantMessage):
        if message.stop_reason == "error":
            err.print(f"[red]model error:[/red] {escape(visible(message.error or 'unknown'))}")
        elif streamed:
            if message.text:
                out.print()
        elif message.text:
            out.print(visible(message.text), markup=False)
    elif isinstance(message, ToolResultMessage):
        res = ToolReply(message.tool_call_id, message.tool_name, message.result)
        err.print(result_panel(res))

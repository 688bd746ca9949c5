"""The host options the client's subcommands share (``list``, ``call``, ``agent``),
and the spawned host's start (:func:`spawn_host`).

Used by :mod:`toolwire.client.cli` and :mod:`toolwire.client.agent_cli`, which do not
import each other's private names.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolwire.errors import JsonRpcError

if TYPE_CHECKING:
    from .client import Client

__all__ = ["HostStartError", "add_host_options", "open_client", "spawn_command", "spawn_host"]

HOST_USAGE_EXIT = 2
"""The exit code of a toolwire host refusing its options (``toolwire serve``'s usage error)."""

_HOST_LINE = re.compile(r"^toolwire serve: ")


def add_host_options(p: argparse.ArgumentParser, *, approval: bool = False) -> None:
    """Add the options that say which host to spawn (``--config``, ``--root``, ``--tools``,
    ``--no-builtins``, ``--isolation``, ``--workers``, ``--server``; with ``approval`` also ``--approve`` and ``--yes``)
    to a subcommand's parser."""
    g = p.add_argument_group("host")
    if approval:
        g.add_argument(
            "--approve",
            action="append",
            default=[],
            metavar="NAMES|destructive|all",
            help="the host asks before running these calls (tool names, comma-separated; "
            "'destructive': tools not marked read-only; 'all'); you answer on the terminal",
        )
        g.add_argument(
            "-y",
            "--yes",
            action="store_true",
            help="allow every call the host asks about without prompting",
        )
    g.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="the host's toolwire.toml (as 'toolwire serve --config'); options given here "
        "take precedence over it",
    )
    g.add_argument("--root", type=Path, help="directory the tools act in (default: cwd)")
    g.add_argument(
        "--tools",
        nargs="+",
        action="extend",
        default=[],
        metavar="FILE.py|MODULE",
        help="also load every @tool from these files or modules",
    )
    g.add_argument("--no-builtins", action="store_true", help="do not offer the built-in tools")
    g.add_argument(
        "--isolation",
        choices=["process", "none"],
        default=None,
        help="where the host runs --tools modules: in worker processes (default) or in "
        "the host itself",
    )
    g.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="worker processes per tool module at most (default: the number of cores)",
    )
    g.add_argument(
        "--server",
        metavar="COMMAND",
        help="talk to this MCP stdio server command instead of a toolwire host "
        "(--config/--root/--tools/--no-builtins are then ignored)",
    )
    g.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show the host's stderr (its start banner, its log) as it comes; without it, "
        "the banner is held back and the rest (warnings, errors) shown after the command",
    )
    g.add_argument(
        "--url",
        metavar="URL",
        type=http_url,
        help="talk to a host served over Streamable HTTP at URL (toolwire serve --http) "
        "instead of spawning one",
    )
    g.add_argument(
        "--token-file",
        metavar="FILE",
        help="with --url: send the bearer token in FILE (default: $TOOLWIRE_TOKEN)",
    )


def http_url(text: str) -> str:
    """``--url``'s value checked: an ``http://`` or ``https://`` URL with a host.

    Raises:
        argparse.ArgumentTypeError: another scheme, or no host (argparse makes it a
            usage error, exit status 2).
    """
    from urllib.parse import urlsplit

    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an http:// or https:// URL with a host "
            "(e.g. http://127.0.0.1:8000/mcp)"
        )
    return text


def spawn_command(ns: argparse.Namespace) -> list[str]:
    """The command (argv) that starts the host the parsed options of
    :func:`add_host_options` describe: ``--server`` split as a shell would, else a
    toolwire host (:func:`~toolwire.client.client.host_command`)."""
    from .client import host_command

    if ns.server:
        return shlex.split(ns.server)
    extra: list[str] = []
    if getattr(ns, "config", None) is not None:
        extra += ["--config", os.path.abspath(ns.config)]
    for policy in getattr(ns, "approve", []):
        extra += ["--approve", policy]
    if getattr(ns, "isolation", None) is not None:
        extra += ["--isolation", ns.isolation]
    if getattr(ns, "workers", None) is not None:
        extra += ["--workers", str(ns.workers)]
    return host_command(root=ns.root, tools=ns.tools, builtins=not ns.no_builtins, extra_args=extra)


class HostStartError(Exception):
    """The spawned host did not start.

    Attributes:
        message: the reason, one line when the host gave one (its ``toolwire serve:``
            line, without that prefix), else the connection's error and the host's
            last stderr lines.
        usage: True when the host refused its options (exit code 2): the command line's
            usage error, not a host failure.
    """

    def __init__(self, message: str, *, usage: bool) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


@contextlib.asynccontextmanager
async def spawn_host(ns: argparse.Namespace, **options: Any) -> AsyncIterator[Client]:
    """Start the host the options describe and connect a :class:`Client` to it.

    A toolwire host's stderr is captured unless ``--verbose``: its start banner is not
    shown; its other lines (warnings, errors) are written to our stderr when the block
    ends. ``--server`` commands keep their stderr.

    Args:
        ns: the parsed options of :func:`add_host_options`.
        options: keyword options of :class:`~toolwire.client.Client`.

    Raises:
        HostStartError: the host exited or hung up before it answered the first request.
    """
    from .client import Client

    if getattr(ns, "url", None):
        # A host served over HTTP (toolwire serve --http): nothing to spawn.
        async with open_client(ns, **options) as c:
            yield c
        return
    captured = not ns.server and not getattr(ns, "verbose", False)
    client = Client.spawn(spawn_command(ns), stderr="capture" if captured else "inherit", **options)
    entered = False
    try:
        async with client as c:
            entered = True
            yield c
    except (JsonRpcError, OSError) as exc:
        if entered:
            raise
        raise _start_failure(client, exc, captured) from None
    finally:
        if captured and entered:
            _relay(client.stderr_output)


def _start_failure(client: Client, exc: Exception, captured: bool) -> HostStartError:
    from .render import visible

    process = client.process
    code = process.returncode if process is not None else None
    lines = client.stderr_output.splitlines() if captured else []
    said = [line for line in lines if _HOST_LINE.match(line)]
    if code == HOST_USAGE_EXIT and said:
        # toolwire serve prints its reason last, as one line per problem; the lines
        # before it are its banner.
        reason = [_HOST_LINE.sub("", line) for line in said if not _is_banner(line)]
        return HostStartError(visible("\n".join(reason or said[-1:])), usage=True)
    tail = "\n".join(line for line in lines[-20:] if not _is_banner(line))
    text = str(exc) + (f"\n{tail}" if tail.strip() else "")
    return HostStartError(visible(text), usage=False)


def _is_banner(line: str) -> bool:
    """The host's start lines (which sandbox runs the commands; the host inputs inside
    the root), not its reason for stopping."""
    return line.startswith(("toolwire serve: commands run", "toolwire serve: Host inputs"))


def _relay(output: str) -> None:
    """Write what a captured host said on stderr, less its start banner."""
    from .render import visible

    shown = [line for line in output.splitlines() if not _HOST_LINE.match(line)]
    if any(line.strip() for line in shown):
        sys.stderr.write(visible("\n".join(shown)) + "\n")
        sys.stderr.flush()


def open_client(ns: argparse.Namespace, **options: Any) -> Client:
    """The (not yet entered) client the parsed options describe: over HTTP with
    ``--url`` (token from ``--token-file`` or ``$TOOLWIRE_TOKEN``), else a spawned host
    (:func:`spawn_command`).

    Raises:
        OSError: an unreadable or empty token file (the CLI prints it and exits).
    """
    from .client import Client

    url = getattr(ns, "url", None)
    if not url:
        return Client.spawn(spawn_command(ns), **options)
    token_file = getattr(ns, "token_file", None)
    if token_file:
        try:
            token: str | None = Path(token_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise OSError(f"cannot read token file {token_file}: {exc.strerror}") from None
        if not token:
            raise OSError(f"token file {token_file} is empty")
    else:
        token = os.environ.get("TOOLWIRE_TOKEN") or None
    return Client.open_url(url, token=token, **options)

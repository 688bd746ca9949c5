"""The host options the client's subcommands share (``list``, ``call``, ``agent``).

Used by :mod:`toolwire.client.cli` and :mod:`toolwire.client.agent_cli`, which do not
import each other's private names.
"""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path

__all__ = ["add_host_options", "spawn_command"]


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

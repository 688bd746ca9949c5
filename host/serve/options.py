"""``toolwire serve``'s options: the command line, ``toolwire.toml`` and :class:`HostConfig`.

Standard library only (plus the sandbox settings and the config file reader), so the
process (:mod:`toolwire.host.serve.process`) can parse them and start probing the sandbox before the heavy imports.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from toolwire.framing import DEFAULT_MAX_MESSAGE_SIZE

from ..sandbox.settings import SandboxSettings
from .config import ConfigError, key_line, load_config_file
from .http.config import HttpSettings, add_http_arguments, http_settings_from
from .http.fleet import (
    FleetSettings,
    add_fleet_arguments,
    check_key_ring_outside,
    check_secret_outside_root,
    fleet_settings_from,
)

__all__ = [
    "DEFAULT_WORKER_START",
    "WORKER_START_ENV",
    "HostConfig",
    "StartupError",
    "build_parser",
    "check_tool_specs",
    "config_from_args",
]

DEFAULT_WORKER_START: Literal["spawn", "fork"] = (
    "fork" if sys.platform.startswith("linux") else "spawn"
)
"""How workers start when neither ``--worker-start``, ``[workers] start`` nor
:data:`WORKER_START_ENV` says: forked from their module's template, each in a sandbox of
its own (:mod:`toolwire.host.sandbox.linux.nsfork`), on Linux; elsewhere from scratch."""

WORKER_START_ENV = "TOOLWIRE_WORKER_START"
"""The environment variable read for the worker start (``spawn`` or ``fork``) when
neither ``--worker-start`` nor ``[workers] start`` gives it (the test suite runs its
sandbox and escape tests in each mode with it)."""


class StartupError(Exception):
    """The host cannot start as configured: a ``--tools`` file or module that does not
    load, a root that is not a directory, no sandbox where one is required. The message
    is the whole explanation for the user; ``toolwire serve`` prints it and exits with
    code 2 (:mod:`toolwire.host.serve.process`), an embedder decides for itself."""


@dataclass
class HostConfig:
    """Everything ``toolwire serve`` is configured with.

    Attributes:
        root: directory the tools act in (default: the current directory).
        tools: files (``path/to/tools.py``) or module names to load tools from.
        builtins: register the built-in tools.
        entry_points: load tools from the ``toolwire.tools`` entry-point group.
        framing: "auto" (detect from the first bytes), "lsp" or "ndjson".
        log_level: stderr log threshold (Python logging level name, lower-case).
        timeout: default seconds per call; None for no limit.
        max_message_size: largest inbound message, in bytes.
        max_threads: worker threads for synchronous tools.
        page_size: tool definitions per ``tools/list`` page.
        sandbox: settings for the processes tools start.
        approve: which calls need the client's approval: tool names, "destructive"
            or "all" (empty: none).
        approval_timeout: seconds to wait for the client's approval answer.
        isolation: "process" (default): tool modules from ``tools`` and the entry points
            run in worker processes (:mod:`toolwire.host.workers`); "none": they are
            imported into the host process.
        workers: worker processes per tool module at most (default: the number of cores).
        worker_start: how a worker process starts (``--worker-start``, ``[workers]
            start``, :data:`WORKER_START_ENV`; default :data:`DEFAULT_WORKER_START`):
            "spawn", each from scratch in a sandbox of its own; "fork" (Linux), forked
            from a pre-imported template process per module
            (:mod:`toolwire.host.workers.template`), each still in a sandbox of its own
            (:mod:`toolwire.host.sandbox.linux.nsfork`; SECURITY.md compares the two).
        reload: watch the tool modules' files and reload them on change (``--reload``).
        list_cache: keep the worker modules' tool definitions between starts and list
            them before the workers are up (``--no-list-cache``, ``[workers] list_cache
            = false`` turn it off; :mod:`toolwire.host.workers.listcache`).
        reload_timeout: seconds a reloaded module's first worker may take to load it
            (``[workers] reload_timeout``, default
            :data:`toolwire.host.workers.pool.RELOAD_TIMEOUT`); past it the worker is killed
            and the previous version keeps serving. A module whose imports take longer
            (a large library) needs more.
        shutdown_grace: seconds LSP ``shutdown`` lets the calls in flight finish before
            it cancels them (``[host] shutdown_grace``, default
            :data:`toolwire.host.methods.server.SHUTDOWN_GRACE`; protocol.md §3.4).
        config_file: the ``--config`` file the settings were read from (None: none);
            a host input (:mod:`toolwire.host.sandbox.inputs`).
        http: serve Streamable HTTP with these settings instead of stdio (None: stdio;
            :mod:`toolwire.host.serve.http.config`).
        fleet: what HTTP replicas of one fleet share: the ``requestState`` key ring,
            the audience, the change bus (:mod:`toolwire.host.serve.http.fleet`).
    """

    root: Path = field(default_factory=Path.cwd)
    tools: list[str] = field(default_factory=list)
    builtins: bool = True
    entry_points: bool = True
    framing: Literal["auto", "lsp", "ndjson"] = "auto"
    log_level: str = "warning"
    timeout: float | None = 600.0
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_threads: int = 256
    page_size: int = 500
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    approve: list[str] = field(default_factory=list)
    approval_timeout: float = 120.0
    isolation: Literal["process", "none"] = "process"
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    worker_start: Literal["spawn", "fork"] = field(default_factory=lambda: DEFAULT_WORKER_START)
    reload: bool = False
    list_cache: bool = True
    reload_timeout: float = 10.0
    shutdown_grace: float = 5.0
    config_file: Path | None = None
    http: HttpSettings | None = None
    fleet: FleetSettings = field(default_factory=FleetSettings)


def _message_size(text: str) -> int:
    """argparse type: a message size limit in bytes, at least 1 KiB."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of bytes: {text!r}") from None
    if value < 1024:
        raise argparse.ArgumentTypeError(f"must be at least 1024 bytes, not {value}")
    return value


def _worker_count(text: str) -> int:
    """argparse type: a number of worker processes, 1 to 256."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= 256:
        raise argparse.ArgumentTypeError(f"must be from 1 to 256, not {value}")
    return value


def build_parser(prog: str = "toolwire serve") -> argparse.ArgumentParser:
    """The argument parser of ``toolwire serve``."""
    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog=prog,
        description="Run the toolwire host: JSON-RPC 2.0 (MCP tool subset) on stdin/stdout.",
    )
    p.add_argument(
        "--config",
        type=Path,
        default=None,
        metavar="FILE",
        help="read settings from a toolwire.toml (command-line options win)",
    )
    p.add_argument("--root", type=Path, default=None, help="directory tools act in (default: cwd)")
    p.add_argument(
        "--tools",
        nargs="+",
        action="extend",
        default=[],
        metavar="FILE.py|MODULE",
        help="load every @tool from these files or modules",
    )
    p.add_argument("--no-builtins", action="store_true", help="do not register built-in tools")
    p.add_argument(
        "--no-entry-points",
        action="store_true",
        help="do not load tools from the 'toolwire.tools' entry-point group",
    )
    p.add_argument(
        "--framing",
        choices=["auto", "lsp", "ndjson"],
        default=None,
        help="message framing (default: detect from the client's first bytes)",
    )
    p.add_argument(
        "--log-level",
        default=None,
        choices=["debug", "info", "warning", "error", "critical"],
        help="stderr log threshold (default: warning)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="default seconds a call may run; 0 for no limit (default: 600)",
    )
    p.add_argument(
        "--max-message-size",
        type=_message_size,
        default=None,
        help="largest accepted message in bytes (default: 64 MiB)",
    )
    p.add_argument("--max-threads", type=int, default=None, help="threads for sync tools")
    p.add_argument("--page-size", type=int, default=None, help="tools per tools/list page")
    p.add_argument(
        "--sandbox",
        choices=["auto", "bwrap", "none"],
        default=None,
        help="run tool processes in bubblewrap: auto (when it works here, else say so), "
        "bwrap (refuse to start without it), none (default: auto)",
    )
    p.add_argument(
        "--approve",
        action="append",
        default=None,
        metavar="NAMES|destructive|all",
        help="calls that need the client's approval: comma-separated tool names, "
        "'destructive' (tools not annotated read-only) or 'all' (default: none)",
    )
    p.add_argument(
        "--isolation",
        choices=["process", "none"],
        default=None,
        help="process: import --tools modules and entry points in worker processes, "
        "sandboxed like commands (a crash costs one call); none: import them into the "
        "host (default: process)",
    )
    p.add_argument(
        "--workers",
        type=_worker_count,
        default=None,
        metavar="N",
        help="worker processes per tool module at most (default: the number of cores)",
    )
    p.add_argument(
        "--worker-start",
        choices=["spawn", "fork"],
        default=None,
        help="spawn: start each worker from scratch in a sandbox of its own; fork (Linux): "
        f"fork a module's workers from a pre-imported template, each in a sandbox of its "
        f"own, much faster to (re)start (default: {DEFAULT_WORKER_START}, or "
        f"${WORKER_START_ENV})",
    )
    p.add_argument(
        "--no-list-cache",
        dest="list_cache",
        action="store_false",
        default=None,
        help="do not keep the tool modules' definitions between starts (by default the "
        "first tools/list is answered from them while the workers start, and checked "
        "against the workers' answer)",
    )
    p.add_argument(
        "--reload",
        action="store_true",
        default=None,
        help="watch the tool modules' files; on a change, load them again in new workers "
        "and send notifications/tools/list_changed",
    )
    p.add_argument(
        "--approval-timeout",
        type=float,
        default=None,
        help="seconds to wait for the client's approval answer (default: 120)",
    )
    add_http_arguments(p)
    add_fleet_arguments(p)
    return p


_FLAG_KEYS: dict[str, tuple[str, str, str]] = {
    "--token-file": ("token_file", "http", "token_file"),
    "--http": ("http", "http", "listen"),
    "--state-keys": ("state_keys", "fleet", "state_keys"),
    "--audience": ("audience", "fleet", "audience"),
    "--bus": ("bus", "fleet", "bus"),
}
"""Flags whose refusals name the flag: option → (its ``ns`` attribute, the config table
and key that give the same setting)."""


def config_from_args(ns: argparse.Namespace) -> HostConfig:
    """Build a :class:`HostConfig` from parsed ``toolwire serve`` arguments.

    Settings come from, in increasing priority: defaults, the ``--config`` file,
    the command line. A refused value that came from the file is reported as
    ``FILE:LINE: [table] key ...``, not under the flag the user never typed.

    Raises:
        toolwire.host.serve.config.ConfigError: the config file is unusable.
        ValueError: a setting has an invalid value.
    """
    try:
        return _config_from_args(ns)
    except ConfigError:
        raise
    except ValueError as exc:
        raise ValueError(_from_the_file(ns, str(exc))) from None


def _from_the_file(ns: argparse.Namespace, message: str) -> str:
    """``message`` with its leading flag replaced by the config file's place of the
    setting, when the value came from the file (see :data:`_FLAG_KEYS`)."""
    config = getattr(ns, "config", None)
    flag = message.split(" ", 1)[0].rstrip(":")
    if config is None or flag not in _FLAG_KEYS or getattr(ns, _FLAG_KEYS[flag][0], None):
        return message
    _, table, key = _FLAG_KEYS[flag]
    try:
        text = Path(config).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return message
    line = key_line(text, [table, key])
    if line is None:
        return message
    return f"{config}:{line}: [{table}] {key}{message[len(flag) :]}"


def _config_from_args(ns: argparse.Namespace) -> HostConfig:
    tables: dict[str, dict[str, Any]] = {"host": {}, "sandbox": {}, "approval": {}, "workers": {}}
    if getattr(ns, "config", None) is not None:
        tables = load_config_file(ns.config)
    host = dict(tables["host"])
    known = set(HostConfig.__dataclass_fields__) - {
        "sandbox",
        "approve",
        "approval_timeout",
        "http",
        "worker_start",
        "list_cache",
        "reload_timeout",
        "fleet",
    }
    unknown = set(host) - known
    if unknown:
        raise ValueError(f"unknown [host] settings: {sorted(unknown)}")

    def pick(flag: Any, key: str, default: Any) -> Any:
        if flag is not None:
            return flag
        return host.get(key, default)

    timeout = pick(ns.timeout, "timeout", 600.0)
    approve = ns.approve if ns.approve is not None else tables["approval"].get("policy", [])
    if isinstance(approve, str):
        approve = [approve]
    approval_timeout = ns.approval_timeout
    if approval_timeout is None:
        approval_timeout = float(tables["approval"].get("timeout", 120.0))
    return _check(
        HostConfig(
            root=Path(pick(ns.root, "root", Path.cwd())),
            tools=list(host.get("tools", [])) + list(ns.tools),
            builtins=not ns.no_builtins and bool(host.get("builtins", True)),
            entry_points=not ns.no_entry_points and bool(host.get("entry_points", True)),
            framing=pick(ns.framing, "framing", "auto"),
            log_level=pick(ns.log_level, "log_level", "warning"),
            timeout=float(timeout) if timeout and float(timeout) > 0 else None,
            max_message_size=int(
                pick(ns.max_message_size, "max_message_size", DEFAULT_MAX_MESSAGE_SIZE)
            ),
            max_threads=int(pick(ns.max_threads, "max_threads", 256)),
            page_size=max(1, int(pick(ns.page_size, "page_size", 500))),
            sandbox=_with_network(
                SandboxSettings.from_table(tables["sandbox"], ns.sandbox),
                tables.get("network"),
                tables.get("secrets"),
            ),
            approve=[
                name.strip() for item in approve for name in str(item).split(",") if name.strip()
            ],
            approval_timeout=approval_timeout,
            isolation=_isolation(pick(ns.isolation, "isolation", "process")),
            workers=_workers(pick(ns.workers, "workers", os.cpu_count() or 1)),
            worker_start=_worker_start(
                getattr(ns, "worker_start", None)
                or tables.get("workers", {}).get("start")
                or os.environ.get(WORKER_START_ENV)
                or DEFAULT_WORKER_START
            ),
            reload=bool(pick(ns.reload, "reload", False)),
            shutdown_grace=float(host.get("shutdown_grace", HostConfig.shutdown_grace)),
            list_cache=(
                getattr(ns, "list_cache", None) is not False
                and bool(tables.get("workers", {}).get("list_cache", True))
            ),
            reload_timeout=float(
                tables.get("workers", {}).get("reload_timeout", HostConfig.reload_timeout)
            ),
            config_file=getattr(ns, "config", None),
            http=http_settings_from(ns, tables.get("http", {})),
            fleet=fleet_settings_from(ns, tables.get("fleet", {})),
        )
    )


def _with_network(
    settings: SandboxSettings,
    table: dict[str, Any] | None,
    secrets: dict[str, Any] | None = None,
) -> SandboxSettings:
    """``settings`` with the ``[network]`` egress policy, when the file has that table,
    and its ``[secrets]`` (their values read now, and redacted from results from now on).

    Raises:
        ValueError: ``[network]`` together with ``[sandbox] allow_network = true`` (the
            policy would not apply), ``[secrets]`` without ``[network]``, a rule the
            policy refuses, or a secret whose value cannot be read.
    """
    if table is None:
        if secrets:
            raise ValueError(
                "[secrets] are substituted by the egress proxy, which runs only with a "
                "[network] table: add one"
            )
        return settings
    if settings.allow_network:
        raise ValueError(
            "[network] limits what sandboxed processes may reach, but [sandbox] "
            "allow_network = true gives them the whole network: remove one of them"
        )
    from ..sandbox.egress.policy import NetworkPolicy

    policy = NetworkPolicy.from_table(table)
    if secrets:
        import dataclasses

        from ..sandbox.egress.credentials import SecretSet, register

        found = SecretSet.from_table(secrets)
        _check_secret_hosts_allowed(found, policy)
        register(found.pairs())
        policy = dataclasses.replace(policy, secrets=found)
    settings.network = policy
    return settings


def _check_secret_hosts_allowed(found: Any, policy: Any) -> None:
    """Refuse a ``[secrets]`` host that no ``[network]`` allow list admits: the proxy would
    refuse every connection to it, so the secret could never be sent.

    ``found`` is a :class:`~toolwire.host.sandbox.egress.credentials.SecretSet`, ``policy``
    a :class:`~toolwire.host.sandbox.egress.policy.NetworkPolicy`.

    Raises:
        ValueError: naming the secret and the host.
    """
    rules = [*policy.allow, *(r for rs in policy.tools.values() for r in rs)]
    rules += [r for rs in policy.modules.values() for r in rs]
    for secret in found.secrets:
        for host in secret.hosts:
            port = host.port if host.port is not None else 443
            if host.wildcard:
                admitted = any(r.name == host.name or r.name.endswith("." + host.name)
                               for r in rules)  # fmt: skip
            else:
                admitted = any(r.matches(host.name, port) for r in rules)
            if not admitted:
                raise ValueError(
                    f"[secrets.{secret.name}] hosts: {host} is in no [network] allow list, "
                    "so the proxy refuses every connection to it and the secret is never "
                    f"sent; add {host} to [network] allow (or to a tool's or module's allow)"
                )


def _check(config: HostConfig) -> HostConfig:
    if config.fleet.configured and config.http is None:
        raise ValueError(
            "--state-keys, --audience and --bus ([fleet]) apply to replicas serving "
            "--http; give --http HOST:PORT"
        )
    if refusal := check_key_ring_outside(config.fleet.state_keys, config.root):
        raise ValueError(refusal)
    if config.http is not None:
        jwks = config.http.oauth.jwks if config.http.oauth is not None else None
        for refusal in (
            check_secret_outside_root(
                "--token-file", "the bearer token", config.http.token_file, config.root
            ),
            check_secret_outside_root(
                "[http.oauth] jwks",
                "the key set",
                None if jwks is None or "://" in jwks else jwks,
                config.root,
            ),
        ):
            if refusal:
                raise ValueError(refusal)
    if config.reload and config.isolation != "process":
        raise ValueError(
            "--reload needs --isolation process (modules imported into the host cannot be unloaded)"
        )
    return config


def _isolation(value: Any) -> Literal["process", "none"]:
    if value not in ("process", "none"):
        raise ValueError(f"isolation must be 'process' or 'none', not {value!r}")
    return value  # type: ignore[no-any-return]


def _worker_start(value: Any) -> Literal["spawn", "fork"]:
    if value not in ("spawn", "fork"):
        raise ValueError(f"worker start must be 'spawn' or 'fork', not {value!r}")
    if value == "fork" and not sys.platform.startswith("linux"):
        raise ValueError("--worker-start fork needs Linux (it uses /proc and pidfds)")
    return value  # type: ignore[no-any-return]


def _workers(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 256:
        raise ValueError(f"workers must be a whole number from 1 to 256, not {value!r}")
    return value


def check_tool_specs(specs: list[str]) -> None:
    """Check the ``--tools`` values before any of them is loaded, so a mistake is one
    line, not a worker's traceback: a value that looks like a tool argument
    (``text=hello``: it belongs after the tool's name in ``toolwire call``), a file
    (``*.py`` or a path) that does not exist, or one whose source does not compile
    (reported as ``FILE:LINE:COLUMN: SyntaxError: message``). Nothing is imported or run; a module
    name is checked where it is imported.

    Raises:
        StartupError: the first value that fails; the message starts with
            ``toolwire serve: --tools VALUE:``.
    """
    for spec in specs:
        path = Path(spec)
        looks_like_file = spec.endswith(".py") or os.sep in spec or path.is_file()
        if "=" in spec and not path.exists():
            raise StartupError(
                f"toolwire serve: --tools {spec}: not a tool file or module; it looks like a "
                f"tool argument k=v, which goes after the tool's name "
                f"('toolwire call NAME {spec}')"
            )
        if not looks_like_file:
            continue
        if not path.is_file():
            what = "is not a file" if path.exists() else "no such file"
            raise StartupError(f"toolwire serve: --tools {spec}: {what}")
        try:
            source = path.read_bytes()
        except OSError as exc:
            raise StartupError(f"toolwire serve: --tools {spec}: {exc.strerror}") from None
        try:
            compile(source, spec, "exec", dont_inherit=True)
        except SyntaxError as exc:
            where = f"{spec}:{exc.lineno}" if exc.lineno else spec
            if exc.lineno and exc.offset:
                where += f":{exc.offset}"
            name = type(exc).__name__  # SyntaxError, IndentationError, TabError
            raise StartupError(f"toolwire serve: --tools {where}: {name}: {exc.msg}") from None
        except ValueError as exc:  # null bytes in the source
            raise StartupError(f"toolwire serve: --tools {spec}: {exc}") from None

"""``toolwire.toml``: the host's configuration file.

Given explicitly with ``toolwire serve --config FILE`` (never picked up from the root on
its own, so files a tool writes cannot reconfigure the next host). Tables:

* ``[host]``: root, tools, builtins, entry_points, framing, log_level, timeout,
  max_message_size, max_threads, page_size, isolation, workers, reload — the command-line
  options of the same names;
* ``[sandbox]``: see :class:`toolwire.host.sandbox.SandboxSettings`;
* ``[approval]``: ``policy`` (a list of tool names, ``"destructive"`` or ``"all"``) and
  ``timeout`` (seconds).

Command-line options override the file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

__all__ = ["ConfigError", "load_config_file"]

_TABLES = {"host", "sandbox", "approval"}


class ConfigError(ValueError):
    """The configuration file is missing, not TOML, or has unknown tables."""


def load_config_file(path: str | Path) -> dict[str, dict[str, Any]]:
    """Read a ``toolwire.toml``; returns ``{table: {key: value}}`` for the known tables.

    Raises:
        ConfigError: unreadable file, invalid TOML, or an unknown table.
    """
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read config file {p}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {p} is not valid TOML: {exc}") from exc
    unknown = set(data) - _TABLES
    if unknown:
        raise ConfigError(f"config file {p}: unknown tables {sorted(unknown)}")
    out: dict[str, dict[str, Any]] = {}
    for name in _TABLES:
        table = data.get(name, {})
        if not isinstance(table, dict):
            raise ConfigError(f"config file {p}: [{name}] must be a table")
        out[name] = table
    return out

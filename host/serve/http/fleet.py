"""Settings for running several ``toolwire serve --http`` replicas as one fleet.

Behind a load balancer each request of a client may reach another replica, so what one
replica issues the others must accept (issue 25; mcp-http.md §2.7-2.8):

* ``--state-keys FILE`` (``[fleet] state_keys``): the key ring ``requestState`` is
  signed with (:class:`~toolwire.host.tools.rounds.StateSigner`). One key a line, 32 random
  bytes in standard base64 (``head -c 32 /dev/urandom | base64``); blank lines and
  ``#`` comments are allowed. The first key signs, every key verifies: to rotate, add
  the new key as the second line on every replica, then move it first, then remove the
  old one once the states it signed have expired (one hour). Without a ring each
  process signs with a random key of its own, so a round can only be finished by the
  process that began it.
* ``--audience URL`` (``[fleet] audience``): the one audience of the fleet, named in
  every ``requestState`` (a state naming another audience is refused) and the default
  OAuth resource (the ``aud`` an access token must carry, RFC 8707). Without it the
  audience is the OAuth resource, else the endpoint URL of the bind.
* ``--bus URL`` (``[fleet] bus``): the change bus between replicas
  (:mod:`toolwire.host.serve.http.bus`), ``redis://HOST:PORT/DB``; without it a replica tells its
  listeners only of its own changes.

Standard library only, like :mod:`toolwire.host.serve.options`, which calls
:func:`add_fleet_arguments` and :func:`fleet_settings_from`.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "KEY_BYTES",
    "FleetSettings",
    "add_fleet_arguments",
    "check_key_ring_outside",
    "check_secret_outside_root",
    "fleet_settings_from",
    "parse_bus_url",
    "read_key_ring",
]

KEY_BYTES = 32
"""Length of one ``requestState`` key, in bytes (HMAC-SHA256's block-sized secret)."""

_KNOWN = {"state_keys", "audience", "bus"}


@dataclass
class FleetSettings:
    """What replicas of one fleet share.

    Attributes:
        state_keys: the key ring file (None: a random key per process).
        keys: the keys read from it, the signing key first (empty without a file).
        audience: the fleet's audience URL (None: the OAuth resource or the bind's URL).
        bus: the change bus URL, ``redis://HOST:PORT/DB`` (None: this replica only).
    """

    state_keys: Path | None = None
    keys: list[bytes] = field(default_factory=list)
    audience: str | None = None
    bus: str | None = None

    @property
    def configured(self) -> bool:
        """True when any fleet setting is given."""
        return self.state_keys is not None or self.audience is not None or self.bus is not None


def read_key_ring(path: str | os.PathLike[str]) -> list[bytes]:
    """The keys of a key ring file, in file order (the first signs).

    Raises:
        ValueError: the file cannot be read, holds no key, or a line is not 32 bytes in
            standard base64; the message is ``FILE:LINE: ...`` and never shows the line
            (it may be a key).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"--state-keys {path}: cannot read it: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ValueError(f"--state-keys {path}: not UTF-8 text") from None
    keys: list[bytes] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()  # '#' is not in the base64 alphabet
        if not line:
            continue
        try:
            key = base64.b64decode(line, validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if len(key) != KEY_BYTES:
            raise ValueError(
                f"{path}:{number}: not a key: each line holds {KEY_BYTES} random bytes in "
                f"standard base64 (44 characters; e.g. 'head -c 32 /dev/urandom | base64')"
            )
        keys.append(key)
    if not keys:
        raise ValueError(f"{path}: the key ring holds no key")
    return keys


def check_key_ring_outside(path: Path | None, root: Path) -> str | None:
    """Why the key ring may not be used where it lies (None: it may).

    The ring must not lie inside the root: the tools (``read``, sandboxed commands) can
    read the root, and whoever knows a key can forge a ``requestState``, approvals
    included."""
    return check_secret_outside_root("--state-keys", "the key ring", path, root)


def check_secret_outside_root(
    flag: str, what: str, path: str | os.PathLike[str] | None, root: Path
) -> str | None:
    """Why a file holding a credential may not be used where it lies (None: it may).

    ``flag`` names the setting (``--token-file``), ``what`` the file ("the bearer token").
    A file inside the root is readable and writable by the tools (``read``, ``write``,
    ``bash``): the model could read a token and hand it on, or replace a key set with its
    own keys."""
    if path is None:
        return None
    real = os.path.realpath(path)
    top = os.path.realpath(root)
    if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
        return (
            f"{flag} {path} lies inside the root {root}, where the tools can read and change it; "
            f"keep {what} outside the root"
        )
    return None


def parse_bus_url(url: str) -> tuple[str, int, int]:
    """``redis://HOST:PORT/DB`` → ``(host, port, db)`` (port 6379 and db 0 by default).

    Raises:
        ValueError: another scheme, no host, a bad port or database number, or
            credentials, a query or a fragment in the URL.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ValueError(f"--bus {url}: not a redis://HOST:PORT/DB URL") from None
    if parts.scheme != "redis" or not parts.hostname:
        raise ValueError(f"--bus {url}: not a redis://HOST:PORT/DB URL")
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise ValueError(f"--bus {url}: only redis://HOST:PORT/DB is understood")
    db_text = parts.path.strip("/") or "0"
    if not db_text.isdigit():
        raise ValueError(f"--bus {url}: the database must be a number (redis://HOST:PORT/0)")
    return parts.hostname, port if port is not None else 6379, int(db_text)


def _audience(value: str) -> str:
    parts = urlsplit(value)
    if not parts.scheme or not (parts.netloc or parts.path) or any(c.isspace() for c in value):
        raise ValueError(f"--audience {value!r}: not an absolute URL (https://tools.example/mcp)")
    return value


def add_fleet_arguments(p: argparse.ArgumentParser) -> None:
    """Add the fleet options to ``toolwire serve``'s parser."""
    g = p.add_argument_group("fleet of HTTP replicas behind a load balancer")
    g.add_argument(
        "--state-keys",
        default=None,
        metavar="FILE",
        help="sign requestState with the key ring in FILE (one base64 key of 32 bytes a "
        "line; the first signs, all verify), so any replica finishes a round another began",
    )
    g.add_argument(
        "--audience",
        default=None,
        metavar="URL",
        help="the fleet's audience: named in every requestState, and the default OAuth "
        "resource (default: the OAuth resource, else this bind's URL)",
    )
    g.add_argument(
        "--bus",
        default=None,
        metavar="URL",
        help="tell subscriptions/listen streams of tools list changes made on other "
        "replicas, over Redis pub/sub at redis://HOST:PORT/DB",
    )


def fleet_settings_from(ns: argparse.Namespace, table: dict[str, Any]) -> FleetSettings:
    """The fleet settings from parsed arguments and the ``[fleet]`` table (the command
    line wins); the key ring is read here, so a bad ring stops the start.

    Raises:
        ValueError: an unknown key, a bad audience or bus URL, an unusable key ring.
    """
    unknown = set(table) - _KNOWN
    if unknown:
        raise ValueError(f"unknown [fleet] settings: {sorted(unknown)}")
    ring = getattr(ns, "state_keys", None) or table.get("state_keys")
    audience = getattr(ns, "audience", None) or table.get("audience")
    bus = getattr(ns, "bus", None) or table.get("bus")
    settings = FleetSettings(
        state_keys=Path(ring) if ring else None,
        audience=_audience(str(audience)) if audience is not None else None,
        bus=str(bus) if bus is not None else None,
    )
    if settings.state_keys is not None:
        settings.keys = read_key_ring(settings.state_keys)
    if settings.bus is not None:
        parse_bus_url(settings.bus)
    return settings

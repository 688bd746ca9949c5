"""The egress policy: which hosts a sandboxed process may reach through the egress proxy.

Configured by the ``[network]`` table of ``toolwire.toml`` (see :mod:`toolwire.host.sandbox.egress`
for the proxy that enforces it)::

    [network]
    allow = ["pypi.org", "files.pythonhosted.org", "*.github.com", "git.example.org:8443"]

    [network.resolve]            # names pinned to an address (like curl --resolve)
    "git.example.org" = "10.0.0.7"

    [network.tools.bash]         # added to `allow` for the bash tool only
    allow = ["registry.npmjs.org"]

    [network.modules.fetcher]    # added for the tool module `fetcher` (its workers)
    allow = ["api.example.com"]

Rules (default deny: nothing is reachable unless a rule allows it):

* ``host`` allows that exact name on ports 80 and 443; ``host:port`` that port only;
  ``*.domain`` every name below ``domain`` (not ``domain`` itself) on 80 and 443, and
  ``*.domain:port`` on that port. Names compare case-insensitively, a trailing dot
  ignored.
* Targets are names, never addresses: an IPv4 or IPv6 literal (and any name whose last
  label is numeric, which resolvers read as an address: ``2130706433``, ``0x7f.1``) is
  refused whatever the rules say, and a rule may not be an address either.
* An allowed name is resolved once, by the host; when any of its addresses is not a
  public (globally routable) one — loopback, private (RFC 1918), link-local, unique
  local, shared (RFC 6598), reserved, multicast — the connection is refused (SSRF),
  unless the name is pinned in ``[network.resolve]``: a pinned address is trusted even
  when private, and the name is then never looked up.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_PORTS",
    "NetworkPolicy",
    "Rule",
    "ScopePolicy",
    "address_problem",
    "parse_rule",
    "target_problem",
]

DEFAULT_PORTS = (80, 443)
"""The ports a rule without ``:port`` allows (HTTP and HTTPS)."""

_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")


def _normal_name(name: str) -> str:
    return name.strip().lower().removesuffix(".")


def _name_problem(name: str) -> str | None:
    """Why ``name`` (already lower-cased) is not a host name we accept, or None."""
    if not name:
        return "an empty host name"
    if name.startswith("[") or ":" in name:
        return f"{name!r} is an IPv6 address literal; name a host instead"
    try:
        ipaddress.ip_address(name)
    except ValueError:
        pass
    else:
        return f"{name!r} is an IP address literal; name a host instead"
    if len(name) > 253:
        return "a host name longer than 253 characters"
    labels = name.split(".")
    if not all(_LABEL.match(label) for label in labels):
        return f"{name!r} is not a valid host name (letters, digits, '-' and '_' in dot-separated labels)"
    if not labels[-1][0].isalpha():
        # 127.1, 2130706433, 0x7f.0.0.1: resolvers read these as addresses.
        return (
            f"{name!r} looks like a numeric address (its last label does not start with a letter)"
        )
    return None


@dataclass(frozen=True)
class Rule:
    """One ``allow`` entry.

    Attributes:
        name: the exact host name, or for a wildcard the domain below which names match.
        wildcard: ``*.domain``: matches names ending in ``.domain`` (not ``domain``).
        port: the one port allowed; None for :data:`DEFAULT_PORTS`.
    """

    name: str
    wildcard: bool = False
    port: int | None = None

    def matches(self, host: str, port: int) -> bool:
        """Whether this rule allows ``host`` (normalized) on ``port``."""
        if port not in ((self.port,) if self.port is not None else DEFAULT_PORTS):
            return False
        if self.wildcard:
            return host.endswith("." + self.name)
        return host == self.name

    def __str__(self) -> str:
        text = ("*." if self.wildcard else "") + self.name
        return text if self.port is None else f"{text}:{self.port}"


def parse_rule(text: str) -> Rule:
    """Parse an ``allow`` entry: ``host``, ``host:port``, ``*.domain`` or ``*.domain:port``.

    Raises:
        ValueError: an address literal, a malformed name, a bad or out-of-range port
            (1-65535), or a wildcard other than a leading ``*.``.
    """
    raw = text.strip()
    if "://" in raw or "/" in raw:
        raise ValueError(f"{text!r}: name a host or host:port (e.g. 'pypi.org:443'), not a URL")
    if raw.startswith("["):
        raise ValueError(f"{text!r}: an IPv6 address literal; rules name hosts")
    host, sep, port_text = raw.rpartition(":") if raw.count(":") == 1 else (raw, "", "")
    if not sep:
        host = raw
    port: int | None = None
    if sep:
        if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            raise ValueError(f"{text!r}: the port must be a number from 1 to 65535")
        port = int(port_text)
    host = _normal_name(host)
    wildcard = host.startswith("*.")
    if wildcard:
        host = host[2:]
    if "*" in host:
        raise ValueError(f"{text!r}: a wildcard is allowed only as a leading '*.'")
    if problem := _name_problem(host):
        raise ValueError(f"{text!r}: {problem}")
    if wildcard and "." not in host:
        raise ValueError(f"{text!r}: a wildcard must name a domain with at least two labels")
    return Rule(host, wildcard, port)


def _pin(name: str, address: str) -> tuple[str, str]:
    host = _normal_name(name)
    if problem := _name_problem(host):
        raise ValueError(f"[network.resolve] {name!r}: {problem}")
    try:
        addr = ipaddress.ip_address(address.strip())
    except ValueError:
        raise ValueError(
            f"[network.resolve] {name!r}: {address!r} is not an IPv4 or IPv6 address"
        ) from None
    return host, str(addr)


def target_problem(host: str, port: int) -> str | None:
    """Why a requested target is refused before any rule is consulted (an address
    literal, a malformed name, a port outside 1-65535), or None."""
    if not 1 <= port <= 65535:
        return f"port {port} is out of range"
    return _name_problem(host)


def address_problem(address: str) -> str | None:
    """Why connecting to ``address`` (a resolved IP) is refused unless pinned: it is
    not globally routable (``ipaddress``'s ``is_global``, which follows the IANA
    special-purpose registries, RFC 6890), or multicast. None for a public address."""
    addr = ipaddress.ip_address(address)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if not addr.is_global or addr.is_multicast:
        return "not a public address (loopback, private, link-local or reserved)"
    return None


@dataclass(frozen=True)
class ScopePolicy:
    """The rules that hold for one sandboxed command or worker process.

    Attributes:
        rules: the host-wide ``allow`` plus the tool's or module's own.
        resolve: pinned names (normalized) → address.
        scope: who it is for (``"tool bash"``, ``"module fetcher"``, ``"host"``), for messages.
        secrets: the ``[secrets]`` the proxy substitutes (None: none; the proxy then
            passes ``CONNECT`` tunnels through untouched).
        upstream_ca: extra CA files trusted for upstream TLS (``[network] upstream_ca``).
    """

    rules: tuple[Rule, ...]
    resolve: Mapping[str, str]
    scope: str = "host"
    secrets: Any = (
        None  # a toolwire.host.sandbox.egress.credentials.SecretSet (which imports this module)
    )
    upstream_ca: tuple[str, ...] = ()

    def check(self, host: str, port: int) -> str | None:
        """None when ``host:port`` may be reached, else the reason it may not (a
        sentence for the 403 body and the log). Checked before any lookup, so a
        refused name never reaches the host's resolver."""
        name = _normal_name(host)
        if problem := target_problem(name, port):
            return problem
        if any(rule.matches(name, port) for rule in self.rules):
            return None
        allowed = ", ".join(str(r) for r in self.rules) or "nothing"
        return (
            f"{name}:{port} is not in the network allow list for {self.scope} (allowed: {allowed})"
        )

    def pinned(self, host: str) -> str | None:
        """The address ``host`` is pinned to by ``[network.resolve]``, or None."""
        return self.resolve.get(_normal_name(host))

    def describe(self) -> str:
        """One sentence on what this scope may reach."""
        if not self.rules:
            return "no network: nothing is on the allow list"
        ports = "/".join(str(p) for p in DEFAULT_PORTS)
        return (
            "network only through the host's egress proxy (HTTP_PROXY/HTTPS_PROXY are set), "
            f"to: {', '.join(str(r) for r in self.rules)} (ports {ports} unless given)"
        )


@dataclass(frozen=True)
class NetworkPolicy:
    """The whole ``[network]`` table, checked.

    Attributes:
        allow: host-wide rules.
        resolve: pinned names → addresses.
        tools: tool name → its extra rules.
        modules: tool module name → its extra rules.
        secrets: the ``[secrets]`` tables (:mod:`toolwire.host.sandbox.egress.credentials`), or None.
        upstream_ca: ``upstream_ca``: extra CA certificate files for upstream TLS.
    """

    allow: tuple[Rule, ...] = ()
    resolve: Mapping[str, str] = field(default_factory=dict)
    tools: Mapping[str, tuple[Rule, ...]] = field(default_factory=dict)
    modules: Mapping[str, tuple[Rule, ...]] = field(default_factory=dict)
    secrets: Any = (
        None  # a toolwire.host.sandbox.egress.credentials.SecretSet (which imports this module)
    )
    upstream_ca: tuple[str, ...] = ()

    @classmethod
    def from_table(cls, table: Mapping[str, Any]) -> NetworkPolicy:
        """Build from a ``[network]`` table (already shape-checked by
        :func:`toolwire.host.serve.config.config_schema`).

        Raises:
            ValueError: a rule or pin :func:`parse_rule` / the pin check refuses.
        """

        def rules(items: Iterable[str]) -> tuple[Rule, ...]:
            return tuple(parse_rule(item) for item in items)

        pins = dict(_pin(k, v) for k, v in dict(table.get("resolve", {})).items())
        return cls(
            allow=rules(table.get("allow", [])),
            resolve=pins,
            tools={k: rules(v.get("allow", [])) for k, v in dict(table.get("tools", {})).items()},
            modules={
                k: rules(v.get("allow", [])) for k, v in dict(table.get("modules", {})).items()
            },
            upstream_ca=tuple(str(p) for p in table.get("upstream_ca", [])),
        )

    def for_scope(self, *, tool: str | None = None, module: str | None = None) -> ScopePolicy:
        """The rules for a command of ``tool`` or a worker of ``module`` (neither: the
        host-wide list only)."""
        extra: Sequence[Rule] = ()
        scope = "host"
        if tool is not None:
            extra, scope = self.tools.get(tool, ()), f"tool {tool}"
        elif module is not None:
            extra, scope = self.modules.get(module, ()), f"module {module}"
        merged = tuple(dict.fromkeys((*self.allow, *extra)))
        return ScopePolicy(merged, self.resolve, scope, self.secrets, self.upstream_ca)

    def describe(self) -> str:
        """A sentence or two for the host's instructions: what sandboxed processes may reach."""
        text = self.for_scope().describe().capitalize() + "."
        for kind, table in (("tool", self.tools), ("module", self.modules)):
            for name, extra in sorted(table.items()):
                if extra:
                    text += f" The {kind} {name} may also reach {', '.join(map(str, extra))}."
        return (
            text + " A refused connection is answered HTTP 403 with the reason; the sandbox "
            "resolves no names itself."
        )

"""Masked credentials for the egress proxy: placeholders in the sandbox, real values on the wire.

Configured in ``toolwire.toml`` (with a ``[network]`` table: the proxy does the work)::

    [secrets.GITHUB_TOKEN]
    env = "GITHUB_TOKEN"            # or: file = "/run/keys/github" (its text, stripped)
    hosts = ["api.github.com"]      # allow-list rules (toolwire.host.sandbox.egress.policy)

Inside a sandbox the environment variable ``GITHUB_TOKEN`` holds a placeholder,
``toolwire-secret-GITHUB_TOKEN-<32 hex digits>``: recognisable, and new for every host
run (:func:`secrets.token_hex`), so it cannot be guessed from outside the run nor reused
after it. The egress proxy (:mod:`toolwire.host.sandbox.egress`) replaces a placeholder by the
real value in the request target and header values of a request to a host the secret's
``hosts`` allow, over HTTPS only: with secrets configured the proxy terminates the TLS
of every ``CONNECT`` tunnel (:class:`MintingCA`) so that it sees each request. A
placeholder in a request to any other host, or in a plain-HTTP request, is refused.
``Authorization: Basic`` credentials are decoded first (:func:`basic_parts`), so a
placeholder given as a URL's password (``https://user:$TOKEN@host/``: pip, git) is
checked and replaced like one in a bearer token. Request bodies are checked, never
rewritten (:class:`BodyCheck`): a body carrying a placeholder its host may not receive
is cut off before it and refused.

The real values leave the host only in those requests: responses from upstream are
masked (:class:`StreamMasker`), and the host redacts them from tool results and
progress text (:func:`redact`).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import ipaddress
import os
import re
import secrets as _random
import ssl
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...tools.redaction import redact, redact_text, register
from .policy import Rule, parse_rule

__all__ = [
    "NAME_PATTERN",
    "PLACEHOLDER_PREFIX",
    "BodyCheck",
    "MintingCA",
    "Secret",
    "SecretRefused",
    "SecretSet",
    "StreamMasker",
    "basic_parts",
    "redact",
    "redact_text",
    "register",
]

PLACEHOLDER_PREFIX = "toolwire-secret-"
"""Every placeholder starts with this, then the secret's name, ``-`` and 32 hex digits."""

NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
"""A secret's name: an environment variable name (POSIX portable characters)."""


class SecretRefused(Exception):
    """A request carries a placeholder its target may not receive; the message says why."""


def basic_parts(value: bytes) -> tuple[bytes, bytes] | None:
    """``(scheme, decoded credentials)`` of an ``Authorization`` value in the Basic
    scheme (RFC 7617: ``Basic base64(user ":" password)``, the scheme name in any case);
    None for any other value or one that is not valid base64."""
    scheme, _, token = value.strip().partition(b" ")
    if scheme.lower() != b"basic":
        return None
    try:
        return scheme, base64.b64decode(token.strip(), validate=True)
    except (binascii.Error, ValueError):
        return None


@dataclass(frozen=True)
class Secret:
    """One masked credential.

    Attributes:
        name: the sandbox's environment variable holding :attr:`placeholder`.
        value: the real value (never shown to the sandbox).
        hosts: the rules of the hosts it may be sent to.
        placeholder: what the sandbox sees.
    """

    name: str
    value: str
    hosts: tuple[Rule, ...]
    placeholder: str

    def allowed(self, host: str, port: int) -> bool:
        """Whether ``host:port`` may receive the real value."""
        name = host.strip().lower().removesuffix(".")
        return any(rule.matches(name, port) for rule in self.hosts)

    def __repr__(self) -> str:  # never the value, not even in a traceback
        return f"Secret({self.name!r}, hosts={[str(r) for r in self.hosts]})"


@dataclass(frozen=True)
class SecretSet:
    """The ``[secrets]`` of one host run.

    Attributes:
        secrets: the secrets, in configuration order.
    """

    secrets: tuple[Secret, ...]

    @classmethod
    def from_table(
        cls, table: Mapping[str, Mapping[str, Any]], environ: Mapping[str, str] | None = None
    ) -> SecretSet:
        """Read the values: ``{NAME: {"env": VAR | "file": PATH, "hosts": [...]}}``
        (shape-checked by :func:`toolwire.host.serve.config.config_schema`).

        Raises:
            ValueError: a bad name, no hosts, a variable that is not set, a file that
                cannot be read, or an empty value.
        """
        environ = os.environ if environ is None else environ
        out = []
        for name, entry in table.items():
            if not NAME_PATTERN.match(name):
                raise ValueError(f"[secrets.{name}]: the name must be an environment variable name")
            hosts = tuple(parse_rule(h) for h in entry.get("hosts", []))
            if not hosts:
                raise ValueError(f"[secrets.{name}]: hosts must name at least one host")
            if entry.get("env") is not None:
                value = environ.get(str(entry["env"]))
                if value is None:
                    raise ValueError(
                        f"[secrets.{name}]: the environment variable {entry['env']} is not set"
                    )
            else:
                try:
                    value = Path(str(entry["file"])).read_text(encoding="utf-8").strip()
                except (OSError, UnicodeDecodeError) as exc:
                    raise ValueError(
                        f"[secrets.{name}]: cannot read {entry['file']}: {exc}"
                    ) from None
            if not value:
                raise ValueError(f"[secrets.{name}]: the value is empty")
            placeholder = f"{PLACEHOLDER_PREFIX}{name}-{_random.token_hex(16)}"
            out.append(Secret(name, value, hosts, placeholder))
        return cls(tuple(out))

    def env(self) -> dict[str, str]:
        """``{NAME: placeholder}`` for the sandbox's environment."""
        return {s.name: s.placeholder for s in self.secrets}

    def substitute(self, data: bytes, host: str, port: int) -> bytes:
        """``data`` (a request target or header value) with each placeholder replaced by
        its value, for a request to ``host:port``.

        Raises:
            SecretRefused: a placeholder whose secret ``host:port`` may not receive.
        """
        if PLACEHOLDER_PREFIX.encode() not in data:
            return data
        for s in self.secrets:
            mark = s.placeholder.encode()
            if mark in data:
                if not s.allowed(host, port):
                    raise SecretRefused(
                        f"the secret {s.name} may be sent only to "
                        f"{', '.join(map(str, s.hosts))}, not to {host}:{port}"
                    )
                data = data.replace(mark, s.value.encode())
        return data

    def substitute_header(self, name: bytes, value: bytes, host: str, port: int) -> bytes:
        """:meth:`substitute` for one header; an ``Authorization`` value in the Basic
        scheme is decoded, substituted and encoded again (:func:`basic_parts`).

        Raises:
            SecretRefused: as :meth:`substitute`.
        """
        if name.lower() == b"authorization" and (parts := basic_parts(value)) is not None:
            scheme, decoded = parts
            if PLACEHOLDER_PREFIX.encode() in decoded:
                replaced = self.substitute(decoded, host, port)
                return scheme + b" " + base64.b64encode(replaced)
        return self.substitute(value, host, port)

    def refuse_any(self, data: bytes | str, why: str) -> None:
        """Raise :class:`SecretRefused` (``why``) when ``data`` holds a placeholder, or a
        line of it is an ``Authorization: Basic`` value whose credentials hold one. A
        ``str`` (a host name, lower-cased) is compared without regard to case."""
        if isinstance(data, str):
            for s in self.secrets:
                if s.placeholder.lower() in data.lower():
                    raise SecretRefused(f"the secret {s.name} {why}")
            return
        decoded = [parts[1] for line in data.split(b"\n") if (parts := basic_parts(line))]
        for s in self.secrets:
            mark = s.placeholder.encode()
            if mark in data or any(mark in d for d in decoded):
                raise SecretRefused(f"the secret {s.name} {why}")

    def body_check(self, host: str | None, port: int = 0) -> BodyCheck | None:
        """A :class:`BodyCheck` for the body of a request to ``host:port`` (None: a
        plain-HTTP request, which no secret may be in): it refuses the placeholders of
        the secrets that may not go there; None when every secret may."""
        refused = [s for s in self.secrets if host is None or not s.allowed(host, port)]
        if not refused:
            return None
        return BodyCheck(refused, None if host is None else f"{host}:{port}")

    def masker(self) -> StreamMasker:
        """A :class:`StreamMasker` of these values."""
        return StreamMasker([s.value.encode() for s in self.secrets])

    def pairs(self) -> list[tuple[str, str]]:
        """``[(name, value), ...]`` for :func:`toolwire.host.tools.redaction.register`."""
        return [(s.name, s.value) for s in self.secrets]


class BodyCheck:
    """Checks a request body, cut into arbitrary chunks, for the placeholders of
    ``secrets``, passing the rest on as it comes: it keeps back at most the longest
    placeholder's length less one byte between chunks, so a placeholder is found before
    any of it is passed on. The body's bytes as sent are searched (after HTTP's chunked
    framing is taken off, before any ``Content-Encoding`` is undone: a placeholder
    inside a compressed or otherwise encoded body is not seen).

    Args:
        secrets: the secrets whose placeholders must not pass.
        target: where the body goes (``host:port``), for the refusal's message; None
            for a plain-HTTP request.
    """

    def __init__(self, secrets: list[Secret], target: str | None) -> None:
        self._secrets = secrets
        self._target = target
        self._keep = max(len(s.placeholder) for s in secrets) - 1
        self._tail = b""

    def feed(self, data: bytes) -> bytes:
        """The bytes of ``data`` (after what was kept back) that may be sent now.

        Raises:
            SecretRefused: a placeholder of one of the secrets is in the body.
        """
        buf = self._tail + data
        if PLACEHOLDER_PREFIX.encode() in buf:
            for s in self._secrets:
                if s.placeholder.encode() in buf:
                    where = (
                        "is sent over HTTPS only, never in a plain-HTTP request"
                        if self._target is None
                        else f"may be sent only to {', '.join(map(str, s.hosts))}, "
                        f"not to {self._target}"
                    )
                    raise SecretRefused(
                        f"the secret {s.name} {where} (its placeholder is in the request body)"
                    )
        out, self._tail = buf[: max(len(buf) - self._keep, 0)], buf[-self._keep :]
        return out

    def flush(self) -> bytes:
        """What is kept back, at the body's end (checked already)."""
        out, self._tail = self._tail, b""
        return out


class StreamMasker:
    """Masks values in a byte stream cut into arbitrary chunks: each occurrence becomes
    ``*`` of the same length (so a ``Content-Length`` still holds). Keeps back up to the
    longest value's length less one byte between chunks.

    Args:
        values: the byte strings to mask (non-empty).
    """

    def __init__(self, values: list[bytes]) -> None:
        self._values = [v for v in values if v]
        self._keep = max((len(v) for v in self._values), default=1) - 1
        self._tail = b""

    def feed(self, data: bytes) -> bytes:
        """Masked bytes that are safe to pass on now."""
        buf = self._tail + data
        for v in self._values:
            buf = buf.replace(v, b"*" * len(v))
        if self._keep and len(buf) > self._keep:
            out, self._tail = buf[: -self._keep], buf[-self._keep :]
        elif self._keep:
            out, self._tail = b"", buf
        else:
            out, self._tail = buf, b""
        return out

    def flush(self) -> bytes:
        """What is kept back, at the stream's end."""
        out, self._tail = self._tail, b""
        return out


# ------------------------------------------------------------------ the proxy's CA


class MintingCA:
    """A certificate authority made at start (an EC P-256 key kept in memory only, never
    written to disk), and a leaf certificate per host name it is asked for (RFC 5280:
    the CA is ``basicConstraints CA:TRUE, pathlen 0``; a leaf names its host in
    ``subjectAltName`` and is for ``serverAuth``).

    Args:
        directory: where :attr:`cert_path` (the CA certificate, PEM, mode 0644) is
            written; leaf keys pass through a private (0700) subdirectory only while
            being loaded into their ``ssl.SSLContext``.
    """

    def __init__(self, directory: str) -> None:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        self._x509, self._hashes, self._ser, self._ec = x509, hashes, serialization, ec
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        name = x509.Name(
            [x509.NameAttribute(NameOID.COMMON_NAME, "toolwire egress proxy CA (one host run)")]
        )
        self._name = name
        self.cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False
            )
            .sign(self._key, hashes.SHA256())
        )
        self.cert_path = os.path.join(directory, "ca.pem")
        with open(self.cert_path, "wb") as f:
            f.write(self.cert.public_bytes(serialization.Encoding.PEM))
        os.chmod(self.cert_path, 0o644)
        self._private = tempfile.mkdtemp(prefix="leaf-", dir=directory)
        os.chmod(self._private, 0o700)
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._lock = threading.Lock()

    def server_context(self, host: str) -> ssl.SSLContext:
        """A TLS server context presenting a leaf certificate for ``host`` (made once
        per name; HTTP/1.1 offered by ALPN)."""
        host = host.lower().removesuffix(".")
        with self._lock:
            if host in self._contexts:
                return self._contexts[host]
            x509, ser = self._x509, self._ser
            key = self._ec.generate_private_key(self._ec.SECP256R1())
            now = datetime.datetime.now(datetime.UTC)
            try:
                alt: Any = x509.IPAddress(ipaddress.ip_address(host))
            except ValueError:
                alt = x509.DNSName(host)
            leaf = (
                x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, host)]))
                .issuer_name(self._name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(hours=1))
                .not_valid_after(now + datetime.timedelta(days=7))
                .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(
                    x509.ExtendedKeyUsage([x509.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
                )
                .sign(self._key, self._hashes.SHA256())
            )
            pem = leaf.public_bytes(ser.Encoding.PEM) + key.private_bytes(
                ser.Encoding.PEM, ser.PrivateFormat.PKCS8, ser.NoEncryption()
            )
            fd, path = tempfile.mkstemp(dir=self._private)
            try:
                os.write(fd, pem)
                os.close(fd)
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                ctx.load_cert_chain(path)
            finally:
                os.unlink(path)
            ctx.set_alpn_protocols(["http/1.1"])
            self._contexts[host] = ctx
            return ctx


def upstream_context(extra_ca: tuple[str, ...]) -> ssl.SSLContext:
    """The proxy's TLS client context: the system's trust store plus ``extra_ca`` (PEM
    files, ``[network] upstream_ca``), host names checked, HTTP/1.1 by ALPN.

    Raises:
        OSError, ssl.SSLError: a CA file cannot be read or parsed.
    """
    ctx = ssl.create_default_context()
    for path in extra_ca:
        ctx.load_verify_locations(cafile=path)
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx

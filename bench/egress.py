"""What the egress proxy costs an HTTPS request: latency per request and a large download's throughput.

Three ways to the same local HTTPS server (127.0.0.1, a certificate from a CA made for
the run), in one run; server, proxy and client each run in a process of their own:

* **direct**: a TLS connection straight to the server;
* **tunnel**: through the proxy (:class:`toolwire.host.sandbox.egress.proxy.EgressProxy`, its Unix
  socket) with ``CONNECT``, no ``[secrets]``: the proxy splices the bytes;
* **secrets**: through the proxy with a ``[secrets]`` entry for the server's name: the
  proxy terminates TLS with its own leaf certificate, parses the request (h11),
  substitutes the placeholder in ``Authorization``, opens its own verified TLS
  connection upstream and masks the response.

Each request opens a new connection (and TLS session) on every path, ``Connection:
close``, as a proxied request does. Figures: the median and p90 of one small request
(``GET /small``, 64 bytes) over ``--requests`` sequential requests, and the MB/s of one
``--mib`` MiB download, the median of ``--rounds``; the paths take turns in each round.
The sandbox's in-box relay (one more local copy over loopback) is not included.

Then what ``[network]`` adds to starting a sandboxed command (``--starts`` pairs, 0 to
skip; needs a working bubblewrap): ``/bin/sh -c true`` under the sandbox as the host
runs it (:meth:`toolwire.host.sandbox.bubblewrap.Sandbox.wrap`, bubblewrap, the limits,
the cgroups), with and without a ``[network]`` table, the two taking turns; with it
the command starts only once the in-box relay (:mod:`toolwire.host.sandbox.egress.relay`,
a Python start) listens, and the proxy makes the sandbox's socket.

Usage: python bench/egress.py [--requests 200] [--mib 128] [--rounds 3] [--starts 40]
(``--requests 0``: only the start pairs)
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import os
import socket
import ssl
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.connection import Connection
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from toolwire.host.sandbox.egress.credentials import SecretSet
from toolwire.host.sandbox.egress.policy import NetworkPolicy
from toolwire.host.sandbox.egress.proxy import EgressProxy

NAME = "bench.test"
TOKEN = "bench-real-token-0123456789abcdef"
_BLOCK = b"x" * (1 << 20)


def _pki(directory: str) -> tuple[str, str]:
    """A CA (its PEM path) and a leaf for :data:`NAME` (cert+key PEM path)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bench CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, NAME)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(NAME)]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path, leaf_path = os.path.join(directory, "ca.pem"), os.path.join(directory, "leaf.pem")
    Path(ca_path).write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    Path(leaf_path).write_bytes(
        leaf.public_bytes(serialization.Encoding.PEM)
        + key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_path, leaf_path


def _server(leaf: str, mib: int, conn: Connection) -> None:
    """Serve in this (child) process; send the port on ``conn``; run until killed."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            size = 64 if self.path == "/small" else mib << 20
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.send_header("Connection", "close")
            self.end_headers()
            if size == 64:
                self.wfile.write(b"s" * 64)
                return
            for _ in range(mib):
                self.wfile.write(_BLOCK)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(leaf)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    conn.send(httpd.server_address[1])
    httpd.serve_forever()


def _proxy(port: int, ca_path: str, conn: Connection) -> None:
    """Run the egress proxy in this (child) process, as the host does in its own: two
    grants (without and with a secret); send their socket paths, its CA file and the
    placeholder on ``conn``; run until killed."""
    table = {"allow": [f"{NAME}:{port}"], "resolve": {NAME: "127.0.0.1"}, "upstream_ca": [ca_path]}
    plain = NetworkPolicy.from_table(table)
    found = SecretSet.from_table({"TOKEN": {"env": "T", "hosts": [f"{NAME}:{port}"]}}, {"T": TOKEN})
    masked = NetworkPolicy(plain.allow, plain.resolve, secrets=found, upstream_ca=(ca_path,))
    proxy = EgressProxy()
    tunnel_grant = proxy.grant(plain.for_scope())
    secret_grant = proxy.grant(masked.for_scope())
    conn.send((tunnel_grant.path, secret_grant.path, proxy.ca_file(), found.env()["TOKEN"]))
    threading.Event().wait()


def _get(sock: socket.socket, ctx: ssl.SSLContext, port: int, path: str, auth: str) -> int:
    """GET ``path`` over TLS on ``sock``; the number of bytes read until the server closed."""
    with ctx.wrap_socket(sock, server_hostname=NAME) as tls:
        tls.sendall(
            f"GET {path} HTTP/1.1\r\nHost: {NAME}:{port}\r\nAuthorization: Bearer {auth}\r\n"
            "Connection: close\r\n\r\n".encode()
        )
        n = 0
        while chunk := tls.recv(1 << 18):
            n += len(chunk)
        return n


def _tunnel(path: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    sock.sendall(f"CONNECT {NAME}:{port} HTTP/1.1\r\nHost: {NAME}:{port}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(1)
        if not data:
            raise RuntimeError("the proxy closed the tunnel")
        head += data
    if b" 200 " not in head.split(b"\r\n")[0]:
        raise RuntimeError(head.decode(errors="replace"))
    return sock


def _starts(pairs: int) -> None:
    """Print the p50 start-to-exit time of a sandboxed ``true`` without and with
    ``[network]`` over ``pairs`` paired runs (nothing when bubblewrap cannot run here)."""
    import dataclasses
    import subprocess

    from toolwire.host.sandbox import Sandbox, SandboxSettings, SandboxUnavailable
    from toolwire.host.sandbox.probe import resolve_sandbox

    try:
        plain = resolve_sandbox(SandboxSettings(mode="bwrap"))
    except SandboxUnavailable as exc:
        print(f"sandbox start: skipped ({exc})")
        return
    network = NetworkPolicy.from_table({"allow": [f"{NAME}:443"]})
    boxed = dataclasses.replace(
        plain, settings=dataclasses.replace(plain.settings, network=network)
    )
    root = tempfile.mkdtemp(prefix="toolwire-bench-starts-")
    times: dict[str, list[float]] = {"without [network]": [], "with [network]": []}
    for _ in range(pairs):
        for kind, sandbox in zip(times, (plain, boxed), strict=True):
            wrapped = sandbox.wrap(
                ["/bin/sh", "-c", "true"], root=root, cwd=root, env={"PATH": "/usr/bin:/bin"}
            )
            t0 = time.perf_counter()
            subprocess.run(wrapped.argv, env=wrapped.env, pass_fds=wrapped.pass_fds, check=True)
            times[kind].append(time.perf_counter() - t0)
            Sandbox.cleanup(wrapped)
    base = statistics.median(times["without [network]"])
    print(f"sandboxed command start: {pairs} pairs, load {os.getloadavg()[0]:.1f}")
    print("| sandbox | start to exit p50 (ms) | added p50 (ms) |")
    print("|---|---|---|")
    for kind, xs in times.items():
        p50 = statistics.median(xs)
        print(f"| {kind} | {p50 * 1e3:.1f} | {(p50 - base) * 1e3:+.1f} |")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--mib", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--starts", type=int, default=40)
    args = parser.parse_args()
    if args.requests <= 0:
        _starts(args.starts)
        return 0
    work = tempfile.mkdtemp(prefix="toolwire-bench-egress-")
    ca_path, leaf = _pki(work)
    # Server, proxy and client each in a process of their own (no shared GIL), as
    # upstream, host and sandbox are.
    fork = multiprocessing.get_context("fork")
    here, there = fork.Pipe()
    server = fork.Process(target=_server, args=(leaf, args.mib, there), daemon=True)
    server.start()
    port = here.recv()
    proxy = fork.Process(target=_proxy, args=(port, ca_path, there), daemon=True)
    proxy.start()
    tunnel_path, secret_path, mitm_ca, placeholder = here.recv()
    direct_ctx = ssl.create_default_context(cafile=ca_path)
    mitm_ctx = ssl.create_default_context(cafile=mitm_ca)

    def conn(kind: str) -> tuple[socket.socket, ssl.SSLContext, str]:
        if kind == "direct":
            return socket.create_connection(("127.0.0.1", port)), direct_ctx, TOKEN
        if kind == "tunnel":
            return _tunnel(tunnel_path, port), direct_ctx, TOKEN
        return _tunnel(secret_path, port), mitm_ctx, placeholder

    kinds = ("direct", "tunnel", "secrets")
    small: dict[str, list[float]] = {k: [] for k in kinds}
    big: dict[str, list[float]] = {k: [] for k in kinds}
    for _ in range(args.rounds):
        for kind in kinds:
            for _ in range(args.requests // args.rounds):
                t0 = time.perf_counter()
                sock, ctx, auth = conn(kind)
                n = _get(sock, ctx, port, "/small", auth)
                small[kind].append(time.perf_counter() - t0)
                assert n > 64, n
            t0 = time.perf_counter()
            sock, ctx, auth = conn(kind)
            n = _get(sock, ctx, port, "/big", auth)
            big[kind].append((args.mib << 20) / (time.perf_counter() - t0) / 1e6)
            assert n > args.mib << 20, n
    for child in (proxy, server):
        child.kill()
        child.join()
    load = os.getloadavg()[0]
    print(
        f"egress proxy bench: {args.requests} small requests, {args.mib} MiB download, "
        f"{args.rounds} rounds, load {load:.1f}"
    )
    print("| path | small GET p50 (ms) | p90 (ms) | added p50 (ms) | download (MB/s) |")
    print("|---|---|---|---|---|")
    base = statistics.median(small["direct"])
    for kind in kinds:
        xs = sorted(small[kind])
        p50, p90 = statistics.median(xs), xs[int(len(xs) * 0.9)]
        print(
            f"| {kind} | {p50 * 1e3:.2f} | {p90 * 1e3:.2f} | {(p50 - base) * 1e3:+.2f} | "
            f"{statistics.median(big[kind]):.0f} |"
        )
    if args.starts > 0:
        _starts(args.starts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

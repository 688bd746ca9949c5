"""``toolwire serve --http`` answers on sockets with TCP_NODELAY set.

uvicorn writes a response's head and its body in two writes; with Nagle's algorithm on,
the body waits for the client's ACK of the head, which a client delays (~40 ms on Linux):
every keep-alive request took ~40 ms. The host's own listening socket once had proto 0,
which keeps the event loop from setting TCP_NODELAY on the connections it accepts. This
test reads the option from the host's end of a live connection (pidfd_getfd, Linux 5.6+)."""

from __future__ import annotations

import ctypes
import os
import socket
from pathlib import Path

import pytest

from tests.http_support import http_host

SYS_PIDFD_OPEN = 434
SYS_PIDFD_GETFD = 438
"""x86_64 and aarch64 share these numbers (the generic syscall table)."""


def _peer_socket_inodes(pid: int, local_port: int, remote_port: int) -> set[str]:
    """Inodes of the TCP sockets in /proc/PID/net/tcp{,6} from local_port to remote_port."""
    found = set()
    for table in ("tcp", "tcp6"):
        path = Path(f"/proc/{pid}/net/{table}")
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if int(local.rsplit(":", 1)[1], 16) == local_port and (
                int(remote.rsplit(":", 1)[1], 16) == remote_port
            ):
                found.add(inode)
    return found


def _nodelay_of(pid: int, inodes: set[str]) -> list[int]:
    """TCP_NODELAY of each fd of pid whose socket inode is in inodes."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = libc.syscall(SYS_PIDFD_OPEN, pid, 0)
    if pidfd < 0:
        pytest.skip(f"pidfd_open: {os.strerror(ctypes.get_errno())}")
    values = []
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if not (target.startswith("socket:[") and target[8:-1] in inodes):
                continue
            mine = libc.syscall(SYS_PIDFD_GETFD, pidfd, int(fd), 0)
            if mine < 0:
                pytest.skip(f"pidfd_getfd: {os.strerror(ctypes.get_errno())}")
            with socket.socket(fileno=mine) as dup:  # closes our copy only
                values.append(dup.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
    finally:
        os.close(pidfd)
    return values


def test_accepted_connections_have_nodelay(tmp_path: Path) -> None:
    with http_host(tmp_path) as h:
        host, port = h.hostport.rsplit(":", 1)
        with socket.create_connection((host, int(port))) as conn:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: " + h.hostport.encode() + b"\r\n\r\n")
            reply = b""
            while b"\r\n\r\n" not in reply:
                chunk = conn.recv(4096)
                assert chunk, reply
                reply += chunk
            assert reply.startswith(b"HTTP/1.1 200"), reply
            client_port = conn.getsockname()[1]
            inodes = _peer_socket_inodes(h.proc.pid, int(port), client_port)
            assert inodes, "the host's end of the connection is not in /proc/PID/net/tcp"
            values = _nodelay_of(h.proc.pid, inodes)
            assert values, "no fd of the host holds its end of the connection"
            assert all(values), f"TCP_NODELAY off on the host's socket: {values}"

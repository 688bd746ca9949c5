"""The in-sandbox end of the egress proxy: a TCP listener on 127.0.0.1 relaying to a Unix socket.

Run by the sandbox (never imported by the host) as
``python -I -S relay.py SOCKET PORT -- COMMAND...``: it binds ``127.0.0.1:PORT``
in the sandbox's own network namespace (which has only loopback), starts a relay
process that copies every connection on that port to the Unix socket ``SOCKET`` (the
host's egress proxy, bound into the sandbox), then execs ``COMMAND``. Most programs
cannot use a proxy on a Unix socket; ``HTTP_PROXY=http://127.0.0.1:PORT`` they can.

It enforces nothing and need not be trusted: the command could reach the Unix socket
directly, kill the relay or bind the port itself, and would still meet the same
proxy, which checks every request on the host side. The relay is the grandchild of
this process (re-parented to the sandbox's init), holds no descriptor of the command's
but its listening socket, and ends with the sandbox's PID namespace when the command
exits. Standard library only; ``-S`` keeps start-up short.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading

_CHUNK = 1 << 16


def _copy(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(_CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def _serve_one(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_copy, args=(upstream, client), daemon=True)
    back.start()
    _copy(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _relay(listener: socket.socket, path: str) -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, listener.fileno())
    os.closerange(listener.fileno() + 1, 1 << 16)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_serve_one, args=(client, path), daemon=True).start()


def main(argv: list[str]) -> None:
    """``SOCKET PORT -- COMMAND...``: start the relay, then exec the command."""
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: relay.py SOCKET PORT -- COMMAND...\n")
        os._exit(2)
    path, port, command = argv[0], int(argv[1]), argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    pid = os.fork()
    if pid == 0:
        if os.fork() == 0:
            try:
                _relay(listener, path)
            finally:
                os._exit(0)
        os._exit(0)
    os.waitpid(pid, 0)
    listener.close()
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"{command[0]}: {exc.strerror}\n")
        os._exit(127 if isinstance(exc, FileNotFoundError) else 126)


if __name__ == "__main__":
    main(sys.argv[1:])

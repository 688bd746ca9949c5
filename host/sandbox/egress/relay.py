"""The in-sandbox end of the egress proxy: a TCP listener on 127.0.0.1 relaying to a Unix socket.

Run by the sandbox (never imported by the host) as
``python -I -S relay.py SOCKET PORT [FD...] -- COMMAND...``: it binds ``127.0.0.1:PORT``
in the sandbox's own network namespace (which has only loopback), starts a relay
process that copies every connection on that port to the Unix socket ``SOCKET`` (the
host's egress proxy, bound into the sandbox), then execs ``COMMAND``. Most programs
cannot use a proxy on a Unix socket; ``HTTP_PROXY=http://127.0.0.1:PORT`` they can.

Each ``FD`` is a descriptor open for writing on a cgroup's ``cgroup.procs``, the groups
a worker process joins itself once it runs (``join_by_fd`` in
:meth:`toolwire.host.sandbox.bubblewrap.Sandbox.wrap`): the relay process joins them
before it serves anything, so its memory, processes and threads count in the worker's
limits. A relay that cannot join them exits at once (the command then has no way out).

It enforces nothing and need not be trusted: the command could reach the Unix socket
directly, kill the relay or bind the port itself, and would still meet the same
proxy, which checks every request on the host side. The relay is the grandchild of
this process (re-parented to the sandbox's init), holds no descriptor of the command's
but its listening socket, and ends with the sandbox's PID namespace when the command
exits.

Start-up is on every sandboxed command's path, so this file imports only modules built
into the interpreter or loaded by every Python start (``posix``, ``_socket``, ``_thread``,
``sys``: no ``os``, ``socket`` or ``threading``, whose imports took longer than the
interpreter's own start), and ``-S`` skips ``site``. ``bench/egress.py --starts``
measures it.
"""

import _socket
import _thread
import posix
import sys

_CHUNK = 1 << 16


def _copy(src: _socket.socket, dst: _socket.socket) -> None:
    try:
        while data := src.recv(_CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:  # noqa: SIM105 (no contextlib: it would cost an import on every start)
            dst.shutdown(_socket.SHUT_WR)
        except OSError:
            pass


def _back(src: _socket.socket, dst: _socket.socket, done: "_thread.LockType") -> None:
    try:
        _copy(src, dst)
    finally:
        done.release()


def _serve_one(fd: int, path: str) -> None:
    client = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM, 0, fd)
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    done = _thread.allocate_lock()
    done.acquire()
    _thread.start_new_thread(_back, (upstream, client, done))
    _copy(client, upstream)
    done.acquire()
    client.close()
    upstream.close()


def _join(fds: list[int]) -> None:
    """Join the cgroups whose ``cgroup.procs`` are open as ``fds`` (``0``: this
    process), closing them; exit (status 1) when one cannot be joined."""
    for fd in fds:
        try:
            posix.write(fd, b"0")
            posix.close(fd)
        except OSError as exc:
            sys.stderr.write(f"egress relay: cannot join the worker's cgroup: {exc}\n")
            posix._exit(1)


def _relay(listener: _socket.socket, path: str, fds: list[int]) -> None:
    _join(fds)
    null = posix.open("/dev/null", posix.O_RDWR)
    for fd in (0, 1, 2):
        posix.dup2(null, fd)
    posix.closerange(3, listener.fileno())
    posix.closerange(listener.fileno() + 1, 1 << 16)
    while True:
        # The C socket's accept, which returns a descriptor (socket.socket.accept wraps it).
        fd, _ = listener._accept()  # type: ignore[attr-defined]
        _thread.start_new_thread(_serve_one, (fd, path))


def _exec(command: list[str]) -> None:
    """``execvp``: the first program named ``command[0]`` on ``PATH``; 127 when there is
    none, 126 when one was found but could not run."""
    name = command[0]
    if "/" in name:
        candidates = [name]
    else:
        path = posix.environ.get(b"PATH", b"/usr/bin:/bin").decode("utf-8", "surrogateescape")
        candidates = [f"{d or '.'}/{name}" for d in path.split(":")]
    failed: OSError | None = None
    missing: OSError | None = None
    for candidate in candidates:
        try:
            posix.execv(candidate, command)
        except (FileNotFoundError, NotADirectoryError) as exc:
            missing = missing or exc
        except OSError as exc:
            failed = failed or exc
    error = failed or missing
    reason = error.strerror if error is not None else "cannot run"
    sys.stderr.write(f"{name}: {reason}\n")
    posix._exit(126 if failed is not None else 127)


def serve_here(path: str, port: int, fds: list[int]) -> None:
    """Bind ``127.0.0.1:port`` and relay every connection to the Unix socket ``path`` in
    this process, for good, after joining the cgroups open as ``fds`` (as :func:`main`'s
    relay does): a worker forked from a template starts its own sandbox's relay this way
    (toolwire.host.workers.worker, toolwire.host.sandbox.linux.nsfork); never returns.

    Raises:
        OSError: the port cannot be bound.
    """
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    try:
        _relay(listener, path, fds)
    finally:
        posix._exit(0)


def main(argv: list[str]) -> None:
    """``SOCKET PORT [FD...] -- COMMAND...``: start the relay, then exec the command."""
    try:
        cut = argv.index("--")
        path, port, fds = argv[0], int(argv[1]), [int(fd) for fd in argv[2:cut]]
        command = argv[cut + 1 :]
    except (ValueError, IndexError):
        command = []
    if not command:
        sys.stderr.write("usage: relay.py SOCKET PORT [FD...] -- COMMAND...\n")
        posix._exit(2)
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
    pid = posix.fork()
    if pid == 0:
        if posix.fork() == 0:
            try:
                _relay(listener, path, fds)
            finally:
                posix._exit(0)
        posix._exit(0)
    posix.waitpid(pid, 0)
    listener.close()
    _exec(command)  # it keeps the FDs: a worker joins the groups itself, through them


if __name__ == "__main__":
    main(sys.argv[1:])

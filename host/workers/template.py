"""Worker templates: the host's side of a module's pre-imported process that forks its
workers (a zygote; the child's side is ``_serve_forks`` in :mod:`.worker`).

A :class:`~.workers.WorkerPool` starts one template per module generation exactly as it
starts a worker (the same command line, under the same bubblewrap invocation when the
sandbox is active, in cgroups of its own), with ``"template": true`` in its configuration
and a ``SOCK_SEQPACKET`` socket as its stdin. The template imports toolwire's serving
runtime (asyncio, anyio, the worker session), never the tool module, and then forks one
worker per request: the forked process takes a session of its own (``setsid``), its
stdio from the descriptors sent with the request, joins the process-count and memory
cgroups the host made for it (:meth:`~.sandbox.Sandbox.forked_groups`) before anything
else runs, and then imports the module and serves as a worker started from scratch does.
A worker's start then costs a fork, not a Python start-up and its imports.

Messages, one JSON object per packet:

* template → host ``{"ready": pid}`` once its imports are done;
* host → template ``{"id": n, "cgroupFd"?: i, "memoryCgroupFd"?: i, "sourceFd"?: i}``
  with descriptors (``SCM_RIGHTS``): the worker's stdin, stdout and stderr, then the
  ones the indices ``i`` name; answered ``{"forked": n, "pid": pid}`` (the pid as the
  template sees it: inside its PID namespace under bubblewrap);
* template → host ``{"exited": pid, "code": c}`` when it reaped a worker (``c`` as a
  worker's exit code reads: :func:`~.workers.describe_status`);
* host → template ``{"kill": pid}``: SIGKILL that worker (used only when the host could
  not learn its host pid).
"""

from __future__ import annotations

import contextlib
import json
import socket
from typing import Any

import anyio

__all__ = ["TemplateLink", "host_pid_of"]

FORK_TIMEOUT = 5.0
"""Seconds a template has to answer a fork request before it is given up (killed)."""


def _nspid(pid: int) -> list[int]:
    """``NSpid`` of host process ``pid`` (its pid in each PID namespace it is in, the
    host's first, proc(5)); empty when unknown."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return [int(p) for p in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []


def host_pid_of(parent: int, inner: int) -> int | None:
    """The pid, in the host's PID namespace, of the child of host process ``parent``
    whose pid is ``inner`` as ``parent``'s own (innermost) PID namespace numbers it
    (``NSpid`` in ``/proc/<pid>/status``, proc(5)); None when there is no such child
    (any more)."""
    try:
        with open(f"/proc/{parent}/task/{parent}/children") as f:
            children = [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        return None
    level = len(_nspid(parent))
    for child in children:
        if not level:
            if child == inner:  # no NSpid: one PID namespace for all
                return child
            continue
        ids = _nspid(child)
        # Its pid in ``parent``'s innermost namespace (a child that is the first process
        # of a namespace of its own has one more entry, after that one).
        if len(ids) >= level and ids[level - 1] == inner:
            return child
    return None


class TemplateLink:
    """The control socket to one template process.

    Args:
        sock: the host's end (non-blocking is set here).
    """

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self.ready = anyio.Event()
        self.closed = anyio.Event()
        self.inner_pid = 0
        self._next = 0
        self._forks: dict[int, tuple[anyio.Event, list[int]]] = {}
        self._exits: dict[int, int] = {}
        self._exit_events: dict[int, anyio.Event] = {}

    async def run(self) -> None:
        """Read the template's messages until it hangs up (then :attr:`closed` is set,
        every fork waiting fails and every worker not reported is counted as gone)."""
        try:
            while True:
                await anyio.wait_readable(self.sock)
                while True:
                    try:
                        data = self.sock.recv(65536)
                    except BlockingIOError:
                        break
                    except OSError:
                        return
                    if not data:
                        return
                    self._take(data)
        finally:
            self.closed.set()
            for event, _ in self._forks.values():
                event.set()
            for event in self._exit_events.values():
                event.set()
            with contextlib.suppress(OSError):
                self.sock.close()

    def _take(self, data: bytes) -> None:
        try:
            message = json.loads(data)
        except ValueError:
            return
        if type(message) is not dict:
            return
        if type(message.get("ready")) is int:
            self.inner_pid = message["ready"]
            self.ready.set()
        elif "forked" in message:
            waiting = self._forks.get(message["forked"])
            pid = message.get("pid")
            if waiting is not None and type(pid) is int:
                worker = message.get("worker")
                waiting[1].extend((pid, worker if type(worker) is int else 0))
                waiting[0].set()
        elif type(message.get("exited")) is int:
            pid, code = message["exited"], message.get("code")
            self._exits[pid] = code if type(code) is int else -9
            event = self._exit_events.pop(pid, None)
            if event is not None:
                event.set()

    async def fork(self, request: dict[str, Any], fds: list[int]) -> tuple[int, int]:
        """Ask for one worker (``request`` and ``fds`` as the module docstring says):
        ``(pid, worker)``: the pid of what the template reaps as the worker, as the
        template sees it, and, when each worker has a sandbox of its own (then ``pid``
        is that sandbox's init), the worker's pid in its own PID namespace (else 0).

        Raises:
            OSError: the template is gone, or did not answer within :data:`FORK_TIMEOUT`.
        """
        if self.closed.is_set():
            raise OSError("the worker template is gone")
        self._next += 1
        number = self._next
        event = anyio.Event()
        got: list[int] = []
        self._forks[number] = (event, got)
        try:
            payload = json.dumps({**request, "id": number}).encode()
            with anyio.fail_after(FORK_TIMEOUT):
                while True:
                    try:
                        socket.send_fds(self.sock, [payload], fds)
                        break
                    except BlockingIOError:
                        await anyio.wait_writable(self.sock)
                await event.wait()
        except TimeoutError:
            raise OSError(f"the worker template did not fork within {FORK_TIMEOUT:g} s") from None
        finally:
            del self._forks[number]
        if not got:
            raise OSError("the worker template is gone")
        self._exit_events.setdefault(got[0], anyio.Event())
        return got[0], got[1]

    async def exit_code(self, pid: int) -> int | None:
        """The exit code of the worker the template knows as ``pid`` once reaped; None
        when the template went away first (then the worker is gone with it)."""
        if pid not in self._exits:
            event = self._exit_events.setdefault(pid, anyio.Event())
            if not self.closed.is_set():
                await event.wait()
        return self._exits.pop(pid, None)

    def kill(self, pid: int) -> None:
        """Ask the template to SIGKILL its worker ``pid`` (best effort)."""
        with contextlib.suppress(OSError):
            self.sock.send(json.dumps({"kill": pid}).encode())

    def close(self) -> None:
        """Hang up: the template exits, and its workers with it."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)

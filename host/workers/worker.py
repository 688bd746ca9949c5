"""A worker process: imports one tool module and serves its tools to the host.

Started by the host (:mod:`.workers`) as ``python -P -m toolwire.host.workers.worker CONFIG``,
under bubblewrap when the sandbox is active. ``CONFIG`` is a JSON object:

* ``spec``: the ``--tools`` file or module, or the entry point's name;
* ``kind``: ``"tools"`` or ``"entry_point"``;
* ``root``: the directory tools act in;
* ``sysPath``: the host's import path (already cleared of the root);
* ``maxThreads``: threads for synchronous handlers;
* ``logLevel``: the stderr log threshold (a :mod:`logging` level name, lower case);
* ``boxed``: true when bubblewrap runs this process (it then dies with the host already);
* ``cgroupFd``: a descriptor of the process-count cgroup's ``cgroup.procs`` this process
  joins before it imports the module (absent when there is none);
* ``memoryCgroupFd``: the same for its memory cgroup, when that is a group of its own
  (cgroup v1; on v2 one group holds both limits).

The host is this process's client, over stdin/stdout, in newline-delimited JSON-RPC
(:mod:`.workerwire`): ``initialize`` answers the module's tool definitions and hooks (or
:data:`~.workerwire.IMPORT_FAILED`), ``tools/call`` runs one call. The host has already
validated the arguments, run the approval and applies the call's timeout; here the handler
runs without a timeout of its own and, when cancelled (``$/cancelRequest``), answers only
once it has really stopped: a synchronous handler's thread is never abandoned, so the host
can tell a handler that stops from one that will not (and then kills this process).

The process ends when the host closes stdin, and with the host: under bubblewrap through
its ``--die-with-parent`` and PID namespace (the namespace's first process dies with the
host, and Linux kills every process of a namespace whose first process died:
pid_namespaces(7)); without it through ``PR_SET_PDEATHSIG``, asked for here. The host
starts it in a session and process group of its own, with no controlling terminal
(bubblewrap adds ``--new-session``), so a signal to its group or a terminal it opens
never reaches the host; the host ends it by its pid.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from typing import Any, NoReturn


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the host (its parent) dies."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _start_joining(*given: Any) -> Callable[[], None]:
    """Join each cgroup whose ``cgroup.procs`` is open as one of the descriptors
    ``given`` (writing ``0`` moves this whole process; non-int values are skipped), in
    a thread: the kernel's wait for an RCU grace period (5-50 ms on a small machine)
    then overlaps the imports. Returns the function that waits for the joins and raises
    :class:`OSError` when one failed; with no descriptor, one that returns at once."""
    fds = [fd for fd in given if type(fd) is int]
    if not fds:
        return lambda: None
    import threading

    failed: list[OSError] = []

    def join() -> None:
        for fd in fds:
            try:
                if not failed:
                    os.write(fd, b"0")
            except OSError as exc:
                failed.append(exc)
            finally:
                os.close(fd)

    thread = threading.Thread(target=join, name="toolwire-cgroup-join", daemon=True)
    thread.start()

    def wait() -> None:
        thread.join()
        if failed:
            raise OSError(f"could not join the worker's cgroup: {failed[0]}")

    return wait


def _join_now(*given: Any) -> None:
    """Join each cgroup whose ``cgroup.procs`` is open as one of the descriptors
    ``given`` (non-int values skipped), now, closing them.

    Raises:
        OSError: a join failed (the rest are closed unjoined).
    """
    failed: OSError | None = None
    for fd in given:
        if type(fd) is not int:
            continue
        try:
            if failed is None:
                os.write(fd, b"0")
        except OSError as exc:
            failed = exc
        finally:
            os.close(fd)
    if failed is not None:
        raise OSError(f"could not join the worker's cgroup: {failed}")


def _exit_code(status: int, boxed: bool) -> int:
    """A forked worker's wait status as the host reads a worker's: the exit code, or for
    a signal N, -N (as :mod:`subprocess` says it) or, under bubblewrap, 128 + N (as
    bubblewrap passes it on)."""
    code = os.waitstatus_to_exitcode(status)
    return 128 - code if code < 0 and boxed else code


WORKER_NAME = b"toolwire.host.workers.worker"
TEMPLATE_NAME = b"toolwire-worker-tmpl-forking"
"""What a template's command line shows in place of :data:`WORKER_NAME` (the same
length): ``ps`` and ``/proc/<pid>/cmdline`` tell a template from the workers it forks,
which put the worker's name back, and from the host."""


def _retitle(old: bytes, new: bytes) -> bool:
    """Overwrite the first ``old`` in this process's command line (the memory
    ``/proc/<pid>/cmdline`` reads, between ``arg_start`` and ``arg_end`` of
    ``/proc/self/stat``, proc(5)) with ``new``, of the same length; whether it did."""
    assert len(old) == len(new)
    try:
        import ctypes

        with open("/proc/self/stat", "rb") as f:
            stat = f.read()
        fields = stat[stat.rindex(b")") + 2 :].split()
        start, end = int(fields[45]), int(fields[46])  # fields 48 and 49
        at = ctypes.string_at(start, end - start).find(old)
        if at < 0:
            return False
        ctypes.memmove(start + at, new, len(new))
        return True
    except (OSError, ValueError, IndexError, ImportError):
        return False


def _warm_up() -> None:
    """Run an empty event loop once, so what the first ``anyio.run`` imports and sets up
    (anyio's asyncio backend, its streams, :mod:`queue`) is in the template already and
    not imported again in each forked worker."""
    import anyio

    async def nothing() -> None:
        return None

    anyio.run(nothing, backend="asyncio")


def _serve_forks(config: dict[str, Any], control: Any) -> dict[str, Any]:
    """The template's loop (``config["template"]``): fork one worker per request read
    from ``control`` (a ``SOCK_SEQPACKET`` socket to the host; :mod:`.template` says the
    messages), report each one's pid and, once reaped, its exit code. Returns only in a
    forked worker, with its configuration; the template itself exits when the host hangs
    up. Nothing of the tool module runs here: each worker imports it after the fork, in
    its own cgroups and session."""
    import contextlib
    import json
    import select
    import signal
    import socket

    boxed = config.get("boxed") is True
    box = config.get("forkSandbox") if boxed else None
    if type(box) is not dict:
        box = None
    else:
        from ..sandbox.linux import nsfork  # noqa: F401  (imported here, not in each worker)

        _set_child_subreaper()
    _warm_up()
    retitled = _retitle(WORKER_NAME, TEMPLATE_NAME)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    children: set[int] = set()

    def send(message: dict[str, Any]) -> None:
        try:
            control.send(json.dumps(message).encode())
        except OSError:
            os._exit(0)  # the host is gone

    if box is not None:
        _check_own_sandbox(box)
    send({"ready": os.getpid()})
    while True:
        try:
            readable, _, _ = select.select([control, wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in readable:
            with contextlib.suppress(OSError):
                os.read(wake_r, 4096)
            while children:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                if pid in children:
                    children.discard(pid)
                    send({"exited": pid, "code": _exit_code(status, boxed)})
        if control not in readable:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(control, 65536, 16, socket.MSG_CMSG_CLOEXEC)
        except OSError:
            os._exit(0)
        if not data:
            os._exit(0)  # the host closed the template: its workers end with it
        request = json.loads(data)
        if "kill" in request:
            target = request["kill"]
            if type(target) is int and target in children:
                with contextlib.suppress(OSError):
                    os.kill(target, signal.SIGKILL)
            continue
        status_r, status_w = os.pipe2(os.O_CLOEXEC) if box is not None else (-1, -1)
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.close(wake_r)
            os.close(wake_w)
            control.close()
            if box is not None:
                os.close(status_r)
                if retitled:
                    _retitle(TEMPLATE_NAME, INIT_NAME)
                groups = [
                    fds[i]
                    for i in (request.get("cgroupFd"), request.get("memoryCgroupFd"))
                    if type(i) is int and 3 <= i < len(fds)
                ]
                _enter_own_sandbox(box, fds, groups, status_w, retitled)  # returns in the worker
            elif retitled:
                _retitle(TEMPLATE_NAME, WORKER_NAME)
            return _become_worker(config, request, fds)
        answer: dict[str, Any] = {"forked": request.get("id"), "pid": pid}
        if box is not None:
            os.close(status_w)
            init, worker = _read_chain(status_r)
            if init:
                # The child that made the namespaces has exited, its init handed to this
                # process (a child subreaper): the init is what ends with the worker.
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
                answer["pid"] = init
                if worker:
                    answer["worker"] = worker
        children.add(answer["pid"])
        for fd in fds:
            os.close(fd)
        send(answer)


RELAY_NAME = b"toolwire-worker-egress-relay"
"""What the command line of a forked worker's egress relay shows in place of
:data:`INIT_NAME`."""

INIT_NAME = b"toolwire-worker-ns-init-shim"
"""What the command line of a forked worker's init (the first process of its PID
namespace, :func:`_enter_own_sandbox`) shows in place of :data:`WORKER_NAME`."""


def _set_child_subreaper() -> None:
    """Make this process (a template) the reaper of its descendants' orphans: each
    worker's init, once the child that made its namespaces has exited."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
        raise OSError(ctypes.get_errno(), "PR_SET_CHILD_SUBREAPER failed")


def _report_chain(status_w: int, kind: bytes, pid: int) -> None:
    """Write one record of a boxed fork's chain to its status pipe: ``kind`` (``P``, the
    worker's init; ``W``, the worker) and ``pid``, as one line. The init and the child
    that forked it write concurrently, in either order; each record is one ``write`` far
    below ``PIPE_BUF`` (pipe(7): such writes are atomic) and ends with its own newline,
    so records never run together whichever comes first."""
    os.write(status_w, kind + str(pid).encode() + b"\n")


def _read_chain(status_r: int) -> tuple[int, int]:
    """Read, until the end, what a boxed fork reports on its status pipe: ``P<init>``
    (the worker's init, as this template's PID namespace numbers it) and ``W<worker>``
    (the worker, as the init's namespace numbers it); 0 for what is missing (the chain
    failed first and its process exits with a message on the worker's stderr)."""
    data = b""
    try:
        while True:
            try:
                chunk = os.read(status_r, 256)
            except InterruptedError:
                continue
            if not chunk:
                break
            data += chunk
    finally:
        os.close(status_r)
    init = worker = 0
    for word in data.split():
        if word[:1] == b"P" and word[1:].isdigit():
            init = int(word[1:])
        elif word[:1] == b"W" and word[1:].isdigit():
            worker = int(word[1:])
    return init, worker


def _fail(fds: list[int], what: str, exc: BaseException) -> NoReturn:
    """Write why a forked worker's sandbox could not be made to its stderr (``fds[2]``,
    the host reads it), then exit 1."""
    with contextlib.suppress(OSError, IndexError):
        os.write(fds[2], f"toolwire-worker: {what}: {exc}\n".encode(errors="replace"))
    os._exit(1)


def _enter_own_sandbox(
    box: dict[str, Any], fds: list[int], groups: list[int], status_w: int, retitled: bool
) -> None:
    """In a process just forked from a template started with ``forkSandbox`` (the
    host's :meth:`~.process.WorkerProcess` configuration): make the worker's own
    namespaces, fork its init (the first process of the new PID namespace, which makes
    the mounts, its user namespace and the limit, :func:`~..sandbox.nsfork.start_init`)
    and exit; the init starts the worker's egress relay if it has one (in the worker's
    cgroups, ``groups``), forks the worker, locks itself down and waits for it, then exits
    with the worker's exit code (128 + N for a signal N, as bubblewrap passes it on).
    Returns only in the worker, which :func:`_become_worker` then finishes (its cgroups,
    then :func:`~..sandbox.nsfork.lock_down`)."""
    import signal

    from ..sandbox.linux import nsfork

    try:
        os.setsid()
        nsfork.unshare_for_worker(network=box.get("network") is True)
        init = os.fork()
    except OSError as exc:
        _fail(fds, "could not make the worker's namespaces", exc)
    if init != 0:
        _report_chain(status_w, b"P", init)
        os._exit(0)
    # The init: PID 1 of the worker's namespace.
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, signal.SIG_DFL)  # from inside, PID 1 ignores them then
    seccomp = bytes.fromhex(box["seccomp"]) if isinstance(box.get("seccomp"), str) else None
    try:
        nsfork.start_init(box)
        relay = box.get("relay")
        if isinstance(relay, list) and len(relay) == 2 and os.fork() == 0:
            os.close(status_w)  # the template reads the pipe to its end
            if retitled:
                _retitle(INIT_NAME, RELAY_NAME)
            _run_relay(str(relay[0]), int(relay[1]), seccomp, fds, groups)
        worker = os.fork()
    except OSError as exc:
        _fail(fds, "could not make the worker's sandbox", exc)
    if worker == 0:
        os.close(status_w)
        if retitled:
            _retitle(INIT_NAME, WORKER_NAME)
        return
    _report_chain(status_w, b"W", worker)
    os.closerange(3, os.sysconf("SC_OPEN_MAX") if os.sysconf("SC_OPEN_MAX") > 0 else 65536)
    try:
        nsfork.lock_down(seccomp)
    except OSError as exc:
        _fail(fds, "could not lock the worker's init down", exc)
    _wait_as_init(worker)


def _check_own_sandbox(box: dict[str, Any]) -> None:
    """Make one worker's sandbox once, in a throw-away child, before this template says
    it is ready: where the kernel or bubblewrap refuses a step (user namespaces
    restricted, a bubblewrap that kept no capability), the template exits with the
    reason on its stderr and the host starts its workers from scratch instead.

    Raises:
        OSError: a step failed (the reason is on stderr already).
    """
    from ..sandbox.linux import nsfork

    seccomp = bytes.fromhex(box["seccomp"]) if isinstance(box.get("seccomp"), str) else None
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            nsfork.unshare_for_worker(network=box.get("network") is True)
            init = os.fork()
            if init == 0:
                try:
                    nsfork.start_init(box)
                    nsfork.lock_down(seccomp, cgroup_namespace=True)
                except BaseException as exc:
                    sys.stderr.write(f"toolwire-worker-tmpl: a worker's sandbox fails: {exc}\n")
                    sys.stderr.flush()
                    os._exit(1)
                os._exit(0)
            code = os.waitstatus_to_exitcode(os.waitpid(init, 0)[1])
        except BaseException as exc:
            sys.stderr.write(f"toolwire-worker-tmpl: a worker's namespaces fail: {exc}\n")
            sys.stderr.flush()
        os._exit(code)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.waitstatus_to_exitcode(status) != 0:
        raise OSError("this template cannot give its workers a sandbox each")


def _wait_as_init(worker: int) -> NoReturn:
    """Reap every process of the namespace until ``worker`` ends; then exit as it did."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(1)
        if pid == worker:
            code = os.waitstatus_to_exitcode(status)
            os._exit(128 - code if code < 0 else code)


def _run_relay(
    path: str, port: int, seccomp: bytes | None, fds: list[int], groups: list[int]
) -> NoReturn:
    """In a child of a forked worker's init: the worker's egress relay (its own, in its
    own network namespace, as a spawned worker's sandbox starts one), in the worker's
    cgroups (``groups``: descriptors of their ``cgroup.procs``) and locked down as the
    worker is; never returns."""
    from ..sandbox.egress import relay
    from ..sandbox.linux import nsfork

    try:
        nsfork.lock_down(seccomp)
        relay.serve_here(path, port, groups)
    except OSError as exc:
        _fail(fds, "could not start the worker's egress relay", exc)
    os._exit(0)


def _become_worker(
    config: dict[str, Any], request: dict[str, Any], fds: list[int]
) -> dict[str, Any]:
    """In a process just forked from the template: a session of its own, its stdio from
    ``fds`` (the pipes to the host and the stderr pipe), its own cgroups joined (before
    anything of the module runs), and, without bubblewrap, death with the template;
    with a sandbox per worker (``forkSandbox``), then a cgroup namespace of its own and
    every privilege given up (:func:`~..sandbox.nsfork.lock_down`); returns the worker's
    configuration."""
    os.setsid()  # a session and process group of its own, no controlling terminal
    template = os.getppid()
    for target, fd in enumerate(fds[:3]):
        os.dup2(fd, target)
    for fd in fds[:3]:
        if fd > 2:
            os.close(fd)

    def given(key: str) -> int | None:
        index = request.get(key)
        return fds[index] if type(index) is int and 3 <= index < len(fds) else None

    _join_now(given("cgroupFd"), given("memoryCgroupFd"))
    box = config.get("forkSandbox")
    if config.get("boxed") is True and type(box) is dict:
        from ..sandbox.linux import nsfork

        seccomp = bytes.fromhex(box["seccomp"]) if isinstance(box.get("seccomp"), str) else None
        nsfork.lock_down(seccomp, cgroup_namespace=True)
    if config.get("boxed") is not True:
        _die_with_parent()  # dies with the template, which dies with the host
        if os.getppid() != template:
            os._exit(1)  # the template died before the request took effect
    out = {k: v for k, v in config.items() if k not in ("template", "forkSandbox")}
    source = given("sourceFd")
    if source is not None:
        out["sourceFd"] = source
    else:
        out.pop("sourceFd", None)
    return out


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m toolwire.host.workers.worker CONFIG``; never returns."""
    import json

    args = sys.argv[1:] if argv is None else argv
    config = json.loads(args[0])
    joined = _start_joining(config.get("cgroupFd"), config.get("memoryCgroupFd"))
    template = config.get("template") is True
    if config.get("boxed") is not True:
        _die_with_parent()  # ctypes costs a few ms of the start; bubblewrap needs none
    sys.path[:] = [p for p in config.get("sysPath", sys.path) if isinstance(p, str)]
    from .stdio import take_over_stdio

    control: Any = None
    if template:
        import socket

        # stdin is the control socket; the template's own stdin and stdout are /dev/null.
        control = socket.socket(fileno=os.dup(0))
        control.set_inheritable(False)
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.close(devnull)
    else:
        read_fd, write_fd = take_over_stdio()
    import logging

    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, str(config.get("logLevel", "warning")).upper(), logging.WARNING),
        format="toolwire-worker[%(process)d] %(levelname)s %(name)s: %(message)s",
    )
    import faulthandler

    faulthandler.enable(sys.stderr)  # a crash in C code leaves a Python traceback behind
    code = 0
    try:
        from ..sandbox.inputs import source_only_imports
        from ._workerside import serve

        source_only_imports()  # the module and its neighbours: from source only

        joined()  # the process and memory limits hold before the module's code runs
        if template:
            config = _serve_forks(config, control)  # returns in a forked worker only
            read_fd, write_fd = take_over_stdio()
        serve(config, read_fd, write_fd)
    except BaseException:
        logging.getLogger("toolwire.worker").exception("worker failed")
        code = 1
    finally:
        sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()

"""A worker process: imports one tool module and serves its tools to the host.

Started by the host (:mod:`.workers`) as ``python -P -m toolwire.host.worker CONFIG``,
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

import os
import sys
from collections.abc import Callable
from typing import Any


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


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``python -m toolwire.host.worker CONFIG``; never returns."""
    import json

    args = sys.argv[1:] if argv is None else argv
    config = json.loads(args[0])
    joined = _start_joining(config.get("cgroupFd"), config.get("memoryCgroupFd"))
    if config.get("boxed") is not True:
        _die_with_parent()  # ctypes costs a few ms of the start; bubblewrap needs none
    sys.path[:] = [p for p in config.get("sysPath", sys.path) if isinstance(p, str)]
    from .stdio import take_over_stdio

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
        from ._workerside import serve
        from .inputs import source_only_imports

        source_only_imports()  # the module and its neighbours: from source only

        joined()  # the process and memory limits hold before the module's code runs
        serve(config, read_fd, write_fd)
    except BaseException:
        logging.getLogger("toolwire.worker").exception("worker failed")
        code = 1
    finally:
        sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()

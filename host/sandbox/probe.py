"""Whether the sandbox really works here, decided once at start-up:
:func:`resolve_sandbox` turns :class:`~.settings.SandboxSettings` into a
:class:`~.bubblewrap.Sandbox`, after running a trivial command in exactly the layout real
commands get, and says what to do when it does not work (install bubblewrap, allow user
namespaces, choose ``--sandbox none``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import platform
import resource
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from typing import Any

from .bubblewrap import (
    Sandbox,
    _etc_masks,
    _proc_hardening,
    _sweep_stale_cgroups,
    child_pid_from_info,
    reap_orphan,
)
from .linux.memcg import (
    MEMORY_KEY,
    find_memory_cgroup,
)
from .programs import (
    _bwrap_origin,
    _configured_bwrap_problem,
    _find_prlimit,
    _package_dirs,
    find_bwrap,
)
from .settings import LIMIT_KEYS, SandboxSettings, SandboxUnavailable

__all__ = [
    "resolve_sandbox",
]

log = logging.getLogger("toolwire.sandbox")


def _clamped_limits(limits: Mapping[str, int]) -> dict[str, int]:
    """The non-zero limits, each lowered to the host's own hard limit (a process
    without CAP_SYS_RESOURCE cannot raise it)."""
    out: dict[str, int] = {}
    for key, value in limits.items():
        if value <= 0:
            continue
        if key not in LIMIT_KEYS:  # tmpfs_size, memory: no rlimit to clamp to
            out[key] = value
            continue
        rlim = LIMIT_KEYS[key][0]
        hard = resource.getrlimit(rlim)[1]
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        out[key] = value
    return out


def _find_pids_cgroup() -> str | None:
    """A cgroup directory with the pids controller in which this process may create
    child groups (cgroup v1 ``pids`` hierarchy, or v2 with pids delegated), or None."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as f:
            lines = f.read().splitlines()
        with open("/proc/self/mounts", encoding="ascii") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return None
    candidates: list[str] = []
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if "pids" in controllers.split(","):
            for m in mounts:
                if len(m) > 3 and m[2] == "cgroup" and "pids" in m[3].split(","):
                    candidates.append(m[1] + rel)
        elif controllers == "":
            for m in mounts:
                if len(m) > 2 and m[2] == "cgroup2":
                    base = m[1] + rel
                    try:
                        with open(os.path.join(base, "cgroup.subtree_control")) as f:
                            if "pids" in f.read().split():
                                candidates.append(base)
                    except OSError:
                        pass
    for base in candidates:
        probe = os.path.join(base, f"toolwire-probe-{os.urandom(4).hex()}")
        try:
            os.mkdir(probe)
        except OSError:
            continue
        try:
            with open(os.path.join(probe, "pids.max"), "w") as f:
                f.write("16")
            return base
        except OSError:
            continue
        finally:
            with contextlib.suppress(OSError):
                os.rmdir(probe)
    return None


_INSTALL_ADVICE = (
    "To sandbox commands, install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; "
    "Fedora: dnf install bubblewrap) and make sure it may create namespaces."
)


_NAMESPACE_ADVICE = (
    "Bubblewrap needs to create namespaces: enable unprivileged user namespaces (sysctl "
    "kernel.unprivileged_userns_clone=1; on Ubuntu 24.04+ "
    "kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap; in a "
    "container, a seccomp profile that allows unshare/mount)."
)


_CHOICE_ADVICE = (
    "Use --sandbox none to run unsandboxed on purpose, or --sandbox bwrap to refuse to "
    "start without it."
)


def _advice(cause: str, configured: bool) -> str:
    """What to do about an unusable sandbox, matching its cause: "platform" (not Linux),
    "missing" (no bubblewrap found, or the configured path is not executable),
    "cannot-run" (bubblewrap failed to start the probe) or "not-a-sandbox" (the probe ran
    but was not isolated). ``configured``: the bubblewrap came from ``[sandbox] bwrap``."""
    if cause == "platform":
        steps = ["Sandboxing needs Linux."]
    elif cause == "missing" and configured:
        steps = [
            "Point [sandbox] bwrap at a bubblewrap executable (0.5.0 or later), or remove "
            "the setting to use the system's or the bundled one.",
            _INSTALL_ADVICE,
        ]
    elif cause == "missing":
        steps = [_INSTALL_ADVICE, _NAMESPACE_ADVICE]
    elif cause == "not-a-sandbox":
        steps = [
            "Point [sandbox] bwrap at a real bubblewrap (0.5.0 or later), or remove the "
            "setting to use the system's or the bundled one."
            if configured
            else "Install a distribution's bubblewrap (0.5.0 or later) in /usr/bin."
        ]
    else:
        steps = [_NAMESPACE_ADVICE]
        if configured:
            steps.append("Or check that [sandbox] bwrap names a working bubblewrap.")
    return " ".join([*steps, _CHOICE_ADVICE])


def _seccomp_program() -> bytes | None:
    """The seccomp filter for this machine's architecture, or None without a table
    (said in :meth:`Sandbox.describe`)."""
    from .linux.seccomp import SUPPORTED_MACHINES, build_filter

    machine = platform.machine()
    return build_filter(machine) if machine in SUPPORTED_MACHINES else None


_probe_cache: dict[tuple[Any, ...], tuple[bool, str, bool]] = {}


_PROBE_SCRIPT = (
    "readlink /proc/self/ns/pid; "
    "while read -r k v _; do case $k in Seccomp:|CapEff:|NoNewPrivs:) echo $k $v;; esac; "
    "done < /proc/self/status"
)


def _probe_findings(sandbox: Sandbox, output: str) -> str:
    """What the probe's output shows to be missing from the sandbox ("" when nothing):
    its own PID namespace, no effective capability, the seccomp filter."""
    lines = output.split("\n")
    try:
        host_ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        host_ns = ""
    status = dict(line.split(" ", 1) for line in lines[1:] if " " in line)
    problems = []
    if not lines[0].startswith("pid:") or lines[0] == host_ns:
        problems.append("the command did not get a PID namespace of its own")
    if status.get("CapEff:", "").strip("0") != "":
        problems.append("the command kept capabilities")
    if sandbox.seccomp is not None and status.get("Seccomp:") != "2":
        problems.append("the seccomp filter was not applied")
    if problems:
        return f"{sandbox.bwrap} did not sandbox the probe command: " + "; ".join(problems)
    return ""


def _probe(sandbox: Sandbox) -> tuple[bool, str, bool]:
    """Run a command in the sandbox's real layout once and check from inside that it
    is sandboxed; (works, error text, whether the command ran but was not isolated)."""
    key = (
        sandbox.bwrap,
        sandbox.seccomp,
        sandbox.settings.allow_network,
        tuple(sorted(sandbox.limits.items())),
        sandbox.prlimit,
        os.geteuid(),
    )
    if key in _probe_cache:
        return _probe_cache[key]
    info_r, info_w = os.pipe2(os.O_CLOEXEC)
    unisolated = False
    with tempfile.TemporaryDirectory(prefix="toolwire-probe-") as tmp:
        wrapped = sandbox.wrap(
            ["/bin/sh", "-c", _PROBE_SCRIPT],
            root=tmp,
            cwd=tmp,
            env={"PATH": "/usr/bin:/bin"},
            info_fd=info_w,
        )
        try:
            proc = subprocess.run(
                wrapped.argv,
                env=wrapped.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=20,
                check=False,
                pass_fds=wrapped.pass_fds,
            )
            ok = proc.returncode == 0
            err = proc.stderr.decode("utf-8", "replace").strip() or f"exit code {proc.returncode}"
            if ok:
                wrong = _probe_findings(sandbox, proc.stdout.decode("utf-8", "replace"))
                ok, err, unisolated = not wrong, wrong, bool(wrong)
        except (OSError, subprocess.TimeoutExpired) as exc:
            ok, err = False, str(exc)
        finally:
            os.close(info_w)
            os.set_blocking(info_r, False)
            try:
                info = os.read(info_r, 4096)
            except OSError:
                info = b""
            os.close(info_r)
            reap_orphan(child_pid_from_info(info))
            Sandbox.cleanup(wrapped)
    _probe_cache[key] = (ok, "" if ok else err, unisolated)
    return _probe_cache[key]


def resolve_sandbox(settings: SandboxSettings) -> Sandbox:
    """Decide whether the sandbox can be used here, by really running bubblewrap once
    (the answer is cached for the process).

    Returns:
        A :class:`Sandbox`: active when bubblewrap works; otherwise inactive with the
        reason and what to do about it (mode "auto"), or inactive because disabled
        (mode "none").

    Raises:
        SandboxUnavailable: mode is "bwrap" and bubblewrap cannot run; or, in every
            mode but "none", a configured ``bwrap`` fails the trust checks of
            :func:`toolwire.host.sandbox.inputs.bwrap_problem`.
    """
    limits = _clamped_limits(settings.effective_limits())
    if settings.mode == "none":
        return Sandbox(settings, active=False, reason="disabled")
    sandbox = Sandbox(settings, limits=limits, prlimit=_find_prlimit())
    configured = settings.bwrap is not None
    cause = "missing"
    if not sys.platform.startswith("linux"):
        reason = f"bubblewrap needs Linux (this is {sys.platform})."
        cause = "platform"
    elif settings.bwrap is not None and not os.access(settings.bwrap, os.X_OK):
        reason = f"bubblewrap (bwrap) is not installed at {settings.bwrap}."
    elif settings.bwrap is not None and (
        untrusted := _configured_bwrap_problem(settings.bwrap, settings.extra_rw_paths)
    ):
        # Never run it, not even as the probe, and never fall back to no sandbox.
        raise SandboxUnavailable(f"[sandbox] bwrap is not trusted: {untrusted}")
    elif (bwrap := settings.bwrap or find_bwrap()) is None:
        reason = "bubblewrap (bwrap) is not installed, and no bundled one was found."
    else:
        candidate = Sandbox(
            settings,
            active=True,
            bwrap=bwrap,
            limits=limits,
            bwrap_origin=_bwrap_origin(bwrap, settings.bwrap is not None),
            seccomp=_seccomp_program(),
            prlimit=sandbox.prlimit,
            etc_masks=_etc_masks(),
            proc_ops=_proc_hardening(),
            install_dirs=_package_dirs(),
        )
        if os.geteuid() == 0 and "processes" in limits:
            candidate.cgroup_base = _find_pids_cgroup()
            candidate.process_limit_enforced = candidate.cgroup_base is not None
            if candidate.cgroup_base is not None:
                _sweep_stale_cgroups(candidate.cgroup_base)
        if limits.get(MEMORY_KEY):
            candidate.memory_cgroups = find_memory_cgroup()
            candidate.memory_limit_enforced = candidate.memory_cgroups is not None
            if candidate.memory_cgroups is not None:
                _sweep_stale_cgroups(candidate.memory_cgroups.base)
        ok, err, unisolated = _probe(candidate)
        if ok:
            return candidate
        if unisolated:
            reason = f"{err}."
            cause = "not-a-sandbox"
        else:
            reason = f"bubblewrap ({bwrap}) cannot run here: {err.rstrip('.')}."
            cause = "cannot-run"
    advice = _advice(cause, configured)
    from .linux.container import examine  # in a container: the profile setting, the boundary

    found = examine(cause, reason)
    if found.missing is not None:
        advice = f"{found.missing} {_CHOICE_ADVICE}"
    if settings.mode == "bwrap":
        raise SandboxUnavailable(f"--sandbox bwrap: {reason} {advice}")
    sandbox.reason = " ".join(filter(None, [found.boundary, reason, advice]))
    return sandbox

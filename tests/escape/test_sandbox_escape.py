"""The escape suite: attempts to get out of the root or the sandbox, through the real host.

Each test is one attempt (or a few of one kind). It asserts the observable proof (a
marker outside the root does not exist afterwards, a secret is absent from the output)
and checks that the attempt really ran (its command printed what only a run prints),
and where practical it runs the same command through a ``--sandbox none`` host as a
control, showing it *would* have succeeded unsandboxed. File-tool attempts need no
bubblewrap; the command attempts run on hosts started with ``--sandbox bwrap`` (which
refuses to start unsandboxed) and FAIL where the sandbox is expected but does not start
(tests/sandbox_support.py).

Containment on a regression: every marker an attempt may create lands in a throw-away
directory of the test (or a uniquely named ``/tmp`` entry that is removed afterwards);
system directories and the Python installation are only probed with no-op opens for
append of files that exist; fork bombs are bounded by their own loop or recursion
depth, so a sandbox whose limits broke cannot produce an unbounded one. The suite runs
as root and, from ``make test``, again as an ordinary user (tests/run_unprivileged.sh).
See SECURITY.md for the threat model.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e_helpers import PROMPT
from tests.hostproc import HostProcess
from tests.sandbox_support import (
    PROMISE_TEXT,
    PROMISED_LIMITS,
    boxed,
    check_boxed,
    expected_limit,
    parse_proc_limits,
    pids_cgroup_expected,
    require_boxed,
    require_sandbox,
)
from toolwire.models import DETAILS_META_KEY

SECRET = "s3cr3t-" + secrets.token_hex(8)
"""Held in the host's environment and in files outside the root; must never show up."""

OUTSIDE_TOKEN = "outside-" + secrets.token_hex(8)

REPO = Path(__file__).resolve().parents[2]
INSTRUCTIONS: dict[int, str] = {}
"""The ``initialize`` instructions of the module's sandboxed hosts, by ``id``."""
needs_bwrap = pytest.mark.usefixtures("sandbox_required")


class World:
    """A root with traps pointing out of it, and a directory outside it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "root"
        self.outside = base / "outside"
        self.ro = base / "ro"  # bound read-only into the box (extra_ro_paths)
        self.home = base / "home"  # the host's HOME
        for d in (self.root, self.outside, self.ro, self.home):
            d.mkdir()
        (self.outside / "secret.txt").write_text(f"{OUTSIDE_TOKEN}\n")
        (self.outside / "linked.txt").write_text("original outside content\n")
        (self.outside / "linked2.txt").write_text("original outside content\n")
        os.symlink(self.outside / "secret.txt", self.root / "link_out")
        os.symlink(self.outside, self.root / "dir_out")
        os.symlink("/etc", self.root / "etc_link")
        os.symlink("/dev/zero", self.root / "zero_link")
        os.symlink(self.outside / "created_by_write.txt", self.root / "dangling")
        os.link(self.outside / "linked.txt", self.root / "hard")
        os.link(self.outside / "linked2.txt", self.root / "hard2")
        os.mkfifo(self.root / "fifo")
        (self.root / "inside.txt").write_text("inside\n")
        with open(self.root / "huge.bin", "wb") as f:
            f.truncate(600 << 20)  # sparse: over read's 512 MiB limit, no disk used

    def unchanged_outside(self) -> bool:
        names = sorted(p.name for p in self.outside.iterdir())
        return names == ["linked.txt", "linked2.txt", "secret.txt"] and all(
            (self.outside / n).read_text() == "original outside content\n"
            for n in ("linked.txt", "linked2.txt")
        )


def _text(resp: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in resp["result"]["content"])


def _refused(resp: dict[str, Any]) -> str:
    assert resp["result"].get("isError") is True, resp
    return _text(resp)


def _host(
    world: World, config: str = "", env: dict[str, str] | None = None
) -> tuple[HostProcess, str]:
    """A host started with --sandbox bwrap (and ``config``); returns it and its
    ``initialize`` instructions."""
    args = ["--root", str(world.root), "--sandbox", "bwrap"]
    if config:
        cfg = world.base / f"toolwire-{secrets.token_hex(4)}.toml"
        cfg.write_text(config)
        args += ["--config", str(cfg)]
    h = HostProcess(
        args, env={"TOOLWIRE_TEST_SECRET": SECRET, "HOME": str(world.home), **(env or {})}
    )
    return h, h.initialize()["result"]["instructions"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("escape"))


@pytest.fixture(scope="module")
def files_host(world: World) -> Iterator[HostProcess]:
    """A host for the file-tool attempts (sandbox auto: file rules do not need bwrap)."""
    h = HostProcess(["--root", str(world.root)], env={"TOOLWIRE_TEST_SECRET": SECRET})
    h.initialize()
    yield h
    h.close()


@pytest.fixture(scope="module")
def box(world: World) -> Iterator[HostProcess]:
    """A sandboxed host with small limits and a secret in its environment, which its
    configuration even tries to pass on."""
    require_sandbox()
    h, instructions = _host(
        world,
        "[sandbox]\n"
        'env_allow = ["PATH", "HOME", "TOOLWIRE_TEST_SECRET", "AWS_*"]\n'
        f'extra_ro_paths = ["{world.ro}"]\n'
        "[sandbox.limits]\n"
        "processes = 64\n"
        "address_space = 536870912\n"
        "cpu_seconds = 1\n"
        "file_size = 1048576\n",
        env={"AWS_SECRET_ACCESS_KEY": SECRET},
    )
    INSTRUCTIONS[id(h)] = instructions
    require_boxed(h)  # before any attempt: they would harm this machine unsandboxed
    yield h
    h.close()


@pytest.fixture(scope="module")
def bare(world: World) -> Iterator[HostProcess]:
    """The control: a ``--sandbox none`` host on the same root, environment and HOME.
    Only ever given commands whose effects land in throw-away places."""
    h = HostProcess(
        ["--root", str(world.root), "--sandbox", "none"],
        env={
            "TOOLWIRE_TEST_SECRET": SECRET,
            "AWS_SECRET_ACCESS_KEY": SECRET,
            "HOME": str(world.home),
        },
    )
    h.initialize()
    yield h
    h.close()


def _sh(
    h: HostProcess, command: str, timeout: float | None = None, keep_full_output: bool = False
) -> tuple[str, dict[str, Any]]:
    """Run ``command`` with the bash tool; (its text, the result). A full-output file the
    host kept for a truncated answer is removed unless ``keep_full_output``."""
    args: dict[str, Any] = {"command": command}
    if timeout is not None:
        args["timeout"] = timeout
    resp = h.call("bash", args, timeout=(timeout or 0) + 30)
    full = resp["result"].get("_meta", {}).get(DETAILS_META_KEY, {}).get("fullOutputPath")
    if full and not keep_full_output:
        Path(full).unlink(missing_ok=True)
    return _text(resp), resp["result"]


def _serving(h: HostProcess) -> bool:
    return h.request("ping", timeout=10)["result"] == {} and h.proc.poll() is None


# ====================================================================== file tools


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read", {"path": "../outside/secret.txt"}),
        ("read", {"path": "../../../../../../../../etc/shadow"}),
        ("read", {"path": "/etc/shadow"}),
        ("read", {"path": "{outside}/secret.txt"}),
        ("read", {"path": "link_out"}),
        ("read", {"path": "dir_out/secret.txt"}),
        ("read", {"path": "etc_link/passwd"}),
        ("read", {"path": "/proc/self/root/etc/passwd"}),
        ("read", {"path": "/proc/self/environ"}),
        ("read", {"path": "~/.bashrc"}),
        ("read", {"path": "inside.txt/../../outside/secret.txt"}),
        ("ls", {"path": "dir_out"}),
        ("ls", {"path": "/"}),
        ("grep", {"pattern": "root", "path": "/etc"}),
        ("grep", {"pattern": "outside", "path": "dir_out"}),
        ("find", {"pattern": "*", "path": "dir_out"}),
        ("find", {"pattern": "*", "path": ".."}),
        ("edit", {"path": "link_out", "edits": [{"oldText": "outside", "newText": "x"}]}),
    ],
)
def test_file_tools_refuse_paths_out_of_the_root(
    files_host: HostProcess, world: World, tool: str, args: dict[str, Any]
) -> None:
    args = {
        k: (v.format(outside=world.outside) if isinstance(v, str) else v) for k, v in args.items()
    }
    text = _refused(files_host.call(tool, args))
    assert "outside the root" in text, text
    assert OUTSIDE_TOKEN not in text and "root:" not in text
    assert world.unchanged_outside()


@pytest.mark.parametrize("path", ["../outside/new.txt", "dir_out/new.txt", "dangling"])
def test_write_out_of_the_root_is_refused_and_creates_nothing(
    files_host: HostProcess, world: World, path: str
) -> None:
    text = _refused(files_host.call("write", {"path": path, "content": "pwned"}))
    assert "outside the root" in text
    assert world.unchanged_outside()


def test_hard_links_out_of_the_root_never_change_the_outside_file(
    files_host: HostProcess, world: World
) -> None:
    # A hard link planted in the root shares its inode with a file outside. Writes and
    # edits replace the link with a new file (atomic rename), so the other name keeps
    # its content.
    r = files_host.call("write", {"path": "hard", "content": "new\n"})["result"]
    assert r.get("isError") is not True
    r = files_host.call(
        "edit", {"path": "hard2", "edits": [{"oldText": "original", "newText": "edited"}]}
    )["result"]
    assert r.get("isError") is not True
    assert (world.root / "hard").read_text() == "new\n"
    assert (world.root / "hard2").read_text() == "edited outside content\n"
    assert world.unchanged_outside()


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read", {"path": "fifo"}),
        ("grep", {"pattern": "x", "path": "fifo"}),
        ("edit", {"path": "fifo", "edits": [{"oldText": "a", "newText": "b"}]}),
        ("write", {"path": "fifo", "content": "x"}),
        ("read", {"path": "zero_link"}),
        ("read", {"path": "/dev/zero"}),
    ],
)
def test_special_files_are_refused_without_blocking(
    files_host: HostProcess, tool: str, args: dict[str, Any]
) -> None:
    start = time.monotonic()
    text = _refused(files_host.call(tool, args, timeout=30))
    assert time.monotonic() - start < PROMPT
    assert "FIFO" in text or "outside the root" in text, text


def test_a_device_node_inside_the_root_is_refused(files_host: HostProcess, world: World) -> None:
    dev = world.root / "zero_dev"
    if os.geteuid() == 0:
        os.mknod(dev, 0o600 | 0o020000, os.makedev(1, 5))
        try:
            text = _refused(files_host.call("read", {"path": "zero_dev"}, timeout=30))
        finally:
            dev.unlink()
    else:
        # An ordinary user cannot make a device node; in a user and mount namespace of
        # its own it can bind /dev/null over a file in the root, and the host started
        # in that namespace sees a character device there.
        dev.write_text("")
        try:
            with HostProcess(
                ["--root", str(world.root), "--sandbox", "none"],
                prefix=[
                    "unshare",
                    "--user",
                    "--map-root-user",
                    "--mount",
                    "sh",
                    "-c",
                    'mount --bind /dev/null "$0" && exec "$@"',
                    str(dev),
                ],
            ) as h:
                h.initialize()
                text = _refused(h.call("read", {"path": "zero_dev"}, timeout=30))
        finally:
            dev.unlink()
    assert "character device" in text, text


def test_size_limit_and_nul_byte(files_host: HostProcess) -> None:
    text = _refused(files_host.call("read", {"path": "huge.bin"}))
    assert "more than the 536870912 bytes" in text
    text = _refused(files_host.call("read", {"path": "inside.txt\x00../../etc/passwd"}))
    assert "NUL" in text


def test_grep_and_find_do_not_follow_links_out(files_host: HostProcess) -> None:
    # ripgrep does not follow symlinks: dir_out and link_out lead outside.
    assert _text(files_host.call("grep", {"pattern": OUTSIDE_TOKEN})) == "No matches found"
    r = files_host.call("find", {"pattern": "secret*"})
    assert _text(r) == "No files found matching secret*"


# ====================================================================== commands


@needs_bwrap
def test_bash_cannot_read_shadow_or_files_outside(
    box: HostProcess, bare: HostProcess, world: World
) -> None:
    cmd = (
        f"cat {world.outside}/secret.txt; cat ../outside/secret.txt; cat link_out; "
        "cat dir_out/secret.txt; cat /etc/shadow /etc/gshadow; ls /root; echo end"
    )
    out, _ = _sh(box, cmd)
    assert out.endswith("end")
    assert OUTSIDE_TOKEN not in out
    assert "root:" not in out
    # The control: unsandboxed, the same command reads the outside file.
    control, _ = _sh(bare, cmd)
    assert OUTSIDE_TOKEN in control


@needs_bwrap
def test_bash_cannot_hard_link_files_from_outside(
    box: HostProcess, bare: HostProcess, world: World
) -> None:
    out, _ = _sh(box, f"ln /etc/passwd pw; ln {world.outside}/secret.txt s; echo end")
    assert out.endswith("end")
    assert not (world.root / "pw").exists() and not (world.root / "s").exists()
    # EXDEV (another mount), ENOENT (not there) or EPERM (protected_hardlinks).
    assert any(
        m in out for m in ("Invalid cross-device link", "No such file", "Operation not permitted")
    )
    # The control: unsandboxed, the outside file (same file system, same owner) links.
    try:
        control, _ = _sh(bare, f"ln {world.outside}/secret.txt s && echo linked")
        assert control == "linked" and (world.root / "s").read_text() == f"{OUTSIDE_TOKEN}\n"
    finally:
        (world.root / "s").unlink(missing_ok=True)


def _throwaway_targets(world: World, tag: str) -> list[Path]:
    """Places outside the root a regression could write to, all disposable: the
    outside directory, the root's parent, a path bound read-only into the box, the
    host's HOME (a test directory) and a uniquely named entry of the host's /tmp."""
    return [
        world.outside / f"toolwire-{tag}",
        world.base / f"toolwire-{tag}",
        world.ro / f"toolwire-{tag}",
        world.home / f"toolwire-{tag}",
        Path(f"/tmp/toolwire-escape-{tag}"),
    ]


@needs_bwrap
def test_bash_cannot_write_outside_the_root(
    box: HostProcess, bare: HostProcess, world: World
) -> None:
    tag = secrets.token_hex(6)
    targets = _throwaway_targets(world, tag)
    cmd = "; ".join(f"echo pwned > {t}" for t in targets) + "; echo written"
    try:
        out, _ = _sh(box, cmd)
        assert out.endswith("written")
        for t in targets:
            assert not t.exists(), t
        # The path bound read-only is there and refuses the write for that reason.
        assert f"{world.ro}/toolwire-{tag}: Read-only file system" in out, out
        assert world.unchanged_outside()
        # The control: unsandboxed, the same command creates every marker.
        control, _ = _sh(bare, cmd)
        assert control == "written", control
        assert all(t.read_text() == "pwned\n" for t in targets)
    finally:
        for t in targets:
            t.unlink(missing_ok=True)


def _system_files() -> list[str]:
    """Existing files in /etc, /usr and the Python installation (the venv and the
    interpreter's own prefix): probed for writability by a no-op open for append."""
    files = ["/etc/passwd", os.path.realpath(os.__file__)]
    for candidate in ("/usr/lib/os-release", "/usr/share/common-licenses/GPL-3"):
        if os.path.isfile(candidate):
            files.append(os.path.realpath(candidate))
            break
    cfg = Path(sys.prefix) / "pyvenv.cfg"
    if cfg.is_file():
        files.append(str(cfg.resolve()))
    return files


@needs_bwrap
def test_system_directories_and_python_are_read_only(box: HostProcess) -> None:
    # `: >> FILE` opens an existing file for append and writes nothing: harmless even
    # on a regression, and refused with EROFS on a read-only mount.
    files = _system_files()
    before = {f: os.stat(f) for f in files}
    out, _ = _sh(box, "; ".join(f": >> {f}" for f in files) + "; echo end")
    assert out.endswith("end")
    for f in files:
        if os.access(f, os.W_OK):
            # The control: this user can write the file on the host.
            assert f"{f}: Read-only file system" in out, out
        else:
            assert f"{f}: Read-only file system" in out or f"{f}: Permission denied" in out
        after = os.stat(f)
        assert (after.st_size, after.st_mtime_ns) == (before[f].st_size, before[f].st_mtime_ns)


@needs_bwrap
def test_private_tmp_is_emptied_between_commands(box: HostProcess) -> None:
    name = f"/tmp/toolwire-left-behind-{secrets.token_hex(6)}"
    try:
        out, _ = _sh(box, f"echo left > {name} && cat {name}")
        assert out == "left"  # the write worked: /tmp is writable inside
        assert not os.path.exists(name)  # ... and it is not the host's /tmp
        out, _ = _sh(box, f"cat {name} 2>/dev/null || echo gone")
        assert out == "gone"
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


@needs_bwrap
def test_no_mounts_or_capabilities(box: HostProcess, bare: HostProcess, world: World) -> None:
    tag = secrets.token_hex(6)
    marker = world.ro / f"pwned-{tag}"
    cmd = (
        "command -v mount unshare >/dev/null && echo tools-present; "
        f"mount -t tmpfs none {world.ro}; echo mount-rc=$?; "
        f"mount -o remount,rw {world.ro}; echo remount-rc=$?; "
        f"unshare -rm sh -c 'mount -o remount,rw {world.ro} && : > {marker}'; "
        "echo unshare-rc=$?; grep CapEff /proc/self/status"
    )
    # Guarded: were the box not there, root would mount a tmpfs on this machine.
    out, _ = _sh(box, boxed(cmd))
    check_boxed(out)
    assert not marker.exists()
    assert "tools-present" in out, out
    # EPERM: mount(8) says "permission denied" (or, when its caller's uid is not 0,
    # "must be superuser to use mount"); unshare(1) says "Operation not permitted".
    assert "mount-rc=32" in out and "remount-rc=32" in out, out
    eperm = (f"mount: {world.ro}: permission denied", f"mount: {world.ro}: must be superuser")
    assert sum(out.count(m) for m in eperm) >= 2, out
    step = out.split("remount-rc=32", 1)[1].split("unshare-rc=", 1)
    assert not step[1].startswith("0"), out
    assert "Operation not permitted" in step[0] or "permission denied" in step[0], out
    assert "CapEff:\t0000000000000000" in out
    # The control: unsandboxed, this user can make a mount namespace of its own and
    # mount in it, so the refusals above are the sandbox's doing.
    try:
        control, _ = _sh(
            bare,
            f"unshare -rm sh -c 'mount -t tmpfs none {world.ro} && : > {world.ro}/x "
            "&& echo mounted'",
        )
        assert control == "mounted", control
        assert not (world.ro / "x").exists()  # that tmpfs lived in the private namespace
    finally:
        (world.ro / "x").unlink(missing_ok=True)


@needs_bwrap
def test_host_environment_and_secrets_are_invisible(box: HostProcess, bare: HostProcess) -> None:
    cmd = (
        "env; cat /proc/self/environ; for f in /proc/[0-9]*/environ; do cat $f; done; "
        "echo $TOOLWIRE_TEST_SECRET $AWS_SECRET_ACCESS_KEY; echo ran-to-the-end"
    )
    out, _ = _sh(box, cmd)
    assert out.endswith("ran-to-the-end")
    assert "PATH=" in out  # env did print the environment the box has
    assert SECRET not in out
    assert "TOOLWIRE_TEST_SECRET" not in out and "AWS_SECRET_ACCESS_KEY" not in out
    # The control (only the variables: the whole machine's /proc would be huge).
    control, _ = _sh(bare, "env; echo $TOOLWIRE_TEST_SECRET $AWS_SECRET_ACCESS_KEY")
    assert f"TOOLWIRE_TEST_SECRET={SECRET}" in control and f"{SECRET} {SECRET}" in control


@needs_bwrap
def test_host_process_is_invisible_and_unreachable(box: HostProcess, bare: HostProcess) -> None:
    pid = box.proc.pid
    # Quoted apart so that the command line itself (visible in /proc) never holds the word.
    probe = f"test -e /proc/{pid}/environ && echo host-vis''ible; echo end"
    out, _ = _sh(
        box,
        f"cat /proc/{pid}/environ; ls /proc/{pid}; kill -9 {pid}; "
        "cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; ls /proc | grep -c '^[0-9]'; " + probe,
    )
    assert out.endswith("end") and "host-visible" not in out
    assert SECRET not in out and "toolwire.host" not in out
    assert int(out.strip().split("\n")[-2]) < 10
    assert _serving(box)
    control, _ = _sh(bare, probe)
    assert control == "host-visible\nend"


@needs_bwrap
def test_kill_all_inside_leaves_the_host_serving(box: HostProcess) -> None:
    # Guarded: only ever run kill -9 -1 when bash is inside bubblewrap's PID namespace.
    out, _ = _sh(
        box,
        'if [ "$$" -lt 10 ] && grep -q bwrap /proc/1/cmdline; then sleep 30 & kill -9 -1; '
        "echo killed-all; else echo NOT-SANDBOXED; fi",
    )
    assert "killed-all" in out, out
    assert _serving(box)
    out, _ = _sh(box, "echo still here")
    assert out == "still here"


def _live_with(arg: str) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
        if arg.encode() in cmd and state not in (b"Z", b"X"):
            out.append(int(entry))
    return out


def _gone(arg: str, deadline: float = PROMPT) -> bool:
    end = time.monotonic() + deadline
    while _live_with(arg):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


@needs_bwrap
@pytest.mark.parametrize(
    "template",
    [
        "setsid env -i sh -c 'echo $$ > {m}; exec sleep {arg}' > /dev/null 2>&1 &",
        "(setsid env -i sh -c '(echo $$ > {m}; exec sleep {arg}) &' &)",
        "nohup env -i setsid sh -c 'trap \"\" HUP TERM; echo $$ > {m}; sleep {arg}' "
        "> /dev/null 2>&1 &",
    ],
)
def test_processes_left_running_are_gone_after_the_call(
    box: HostProcess, world: World, template: str
) -> None:
    arg = f"77.{secrets.randbelow(10**6):06d}"
    marker = f"alive-{secrets.token_hex(4)}"
    # The call returns only once the leftover really runs (it wrote its pid).
    wait = f"\nfor i in $(seq 400); do [ -s {marker} ] && break; sleep 0.05; done"
    out, _ = _sh(
        box, template.format(arg=arg, m=marker) + wait + f"; [ -s {marker} ] && echo started"
    )
    assert out == "started"
    assert int((world.root / marker).read_text()) > 0
    (world.root / marker).unlink()
    assert _gone(arg), f"a process with {arg} survived its call"


@needs_bwrap
def test_network_is_refused_without_allow_network(box: HostProcess, bare: HostProcess) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        out, _ = _sh(
            box,
            f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED || echo refused; "
            "getent hosts example.com || echo no-dns",
        )
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing ever connected
        # The control: unsandboxed, the same connection reaches the listener.
        control, _ = _sh(bare, f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED")
        server.settimeout(30)
        conn, _ = server.accept()
        conn.close()
        assert control == "CONNECTED"
    assert "CONNECTED" not in out and "refused" in out
    assert "Connection refused" in out or "Network is unreachable" in out, out


@needs_bwrap
def test_network_is_there_with_allow_network(world: World) -> None:
    h, instructions = _host(world, "[sandbox]\nallow_network = true\n")
    try:
        assert "(bubblewrap, with network)" in instructions
        with socket.create_server(("127.0.0.1", 0)) as server:
            port = server.getsockname()[1]
            out, _ = _sh(h, f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED")
            server.settimeout(30)
            conn, _ = server.accept()
            conn.close()
        assert out == "CONNECTED"
    finally:
        h.close()


BOX_PROCESSES = 64
"""The ``processes`` limit of the ``box`` fixture."""


@needs_bwrap
def test_fork_bomb_is_contained(box: HostProcess) -> None:
    # Bounded on purpose: at most 300 forks even if the limit failed.
    script = (
        "import os,time\n"
        "n=0\n"
        "try:\n"
        "    for i in range(300):\n"
        "        if os.fork()==0:\n"
        "            time.sleep(60); os._exit(0)\n"
        "        n+=1\n"
        "except OSError as e:\n"
        "    print('fork failed after', n, type(e).__name__)\n"
        "print('bomb done')\n"
    )
    (box_root(box) / "bomb.py").write_text(script)
    out, _ = _sh(box, f"{sys.executable} bomb.py", timeout=60)
    assert "bomb done" in out, out
    assert "fork failed after" in out, out
    forks = int(out.split("fork failed after ")[1].split()[0])
    assert 0 < forks <= BOX_PROCESSES, out
    assert _serving(box)
    assert _gone("bomb.py")


@needs_bwrap
def test_classic_fork_bomb_is_contained(box: HostProcess) -> None:
    # The shell's recursive bomb, bounded by a recursion depth of 8 (at most 511
    # processes even if the limit failed). Against the limit, forks fail.
    # Root is exempt from the process rlimit; the host then needs a pids cgroup, and
    # says so when it has none. Whether one is possible is checked independently.
    enforced = os.geteuid() != 0 or pids_cgroup_expected()
    if not enforced:
        assert "The process limit is not enforced" in INSTRUCTIONS[id(box)]
    out, result = _sh(
        box,
        "b(){ [ $1 -gt 0 ] || return 0; b $(($1-1)) | b $(($1-1)) & }; b 8; wait; "
        "sleep 3; echo survived",
        timeout=2,
    )
    assert result["isError"] is True and "timed out" in out, out
    if enforced:
        assert "fork: retry: Resource temporarily unavailable" in out, out
    assert _serving(box)
    out, _ = _sh(box, "echo still here")
    assert out == "still here"


@needs_bwrap
def test_memory_bomb_is_contained(box: HostProcess) -> None:
    # At most 64 x 64 MiB even if the limit failed; the 512 MiB address-space limit stops
    # it early. Mappings are reserved, not touched, so the box's 1 s CPU limit (which a
    # bytearray bomb's page zeroing can hit first on a slow machine) stays out of it.
    cmd = (
        f"{sys.executable} -c 'import mmap\na=[]\n"
        "for i in range(64): a.append(mmap.mmap(-1, 64<<20))'"
    )
    out, result = _sh(box, cmd, timeout=60)
    assert "Cannot allocate memory" in out and result["isError"] is True
    assert _serving(box)


@needs_bwrap
def test_cpu_limit_kills_a_busy_loop_at_the_limit(box: HostProcess) -> None:
    # The box allows 1 s of CPU per process; the call's own timeout (60 s) is far away,
    # so only the CPU limit (SIGXCPU at the soft limit, SIGKILL at the hard one) can end
    # the loop. bash's `times` then shows the CPU time its child used: about the limit.
    out, _ = _sh(box, "bash -c 'while :; do :; done'; echo rc=$?; times", timeout=60)
    assert "timed out" not in out, out
    lines = out.splitlines()
    assert lines[-3] in ("rc=137", "rc=152"), out  # 128 + SIGKILL or SIGXCPU
    user, system = (float(t.split("m")[0]) * 60 + float(t.split("m")[1].rstrip("s"))
                    for t in lines[-1].split())  # fmt: skip
    assert 0.5 <= user + system <= 3.0, out


@needs_bwrap
def test_file_size_limit_stops_a_write_at_the_limit(box: HostProcess) -> None:
    out, _ = _sh(box, "head -c 3000000 /dev/zero > big; echo end")
    try:
        assert out.endswith("end")
        assert "File size limit exceeded" in out, out
        assert (box_root(box) / "big").stat().st_size == 1 << 20
    finally:
        (box_root(box) / "big").unlink(missing_ok=True)


def test_security_md_states_the_promised_limits() -> None:
    text = (REPO / "SECURITY.md").read_text()
    for key, phrase in PROMISE_TEXT.items():
        assert phrase in text, f"SECURITY.md no longer promises {phrase} ({key})"


@needs_bwrap
def test_default_limits_inside_the_box_are_the_promised_ones(world: World) -> None:
    # A host with no [sandbox.limits]: what a command measures inside must be what
    # SECURITY.md promises (lowered to the host's own hard limits), soft and hard.
    h, _ = _host(world)
    try:
        out, _ = _sh(h, "cat /proc/self/limits")
    finally:
        h.close()
    measured = parse_proc_limits(out)
    for key, promised in PROMISED_LIMITS.items():
        want = expected_limit(key, promised)
        assert measured[key] == (want, want), (key, measured[key], want)


@needs_bwrap
def test_endless_output_is_truncated(box: HostProcess) -> None:
    out, result = _sh(box, "yes toolwire", timeout=1, keep_full_output=True)
    assert len(out.encode()) < 60_000
    assert "timed out" in out and "Showing lines" in out
    meta = result["_meta"][DETAILS_META_KEY]
    assert meta["truncation"]["truncated"] is True
    full = Path(meta["fullOutputPath"])
    assert full.stat().st_size <= (64 << 20) + (1 << 20)
    full.unlink()
    assert _serving(box)


def box_root(h: HostProcess) -> Path:
    """The root a host serves (its --root argument)."""
    args = h.proc.args
    assert isinstance(args, list)
    return Path(args[args.index("--root") + 1])


def test_suite_has_at_least_30_attempts() -> None:
    import inspect

    mod = sys.modules[__name__]
    count = 0
    for name, fn in inspect.getmembers(mod, inspect.isfunction):
        if name.startswith("test_") and name != "test_suite_has_at_least_30_attempts":
            marks = getattr(fn, "pytestmark", [])
            params = [m for m in marks if m.name == "parametrize"]
            count += len(params[0].args[1]) if params else 1
    assert count >= 30, count

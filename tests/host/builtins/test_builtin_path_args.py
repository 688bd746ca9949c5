"""Path arguments as models write them, through the real host: a trailing ``/`` names
a directory, and a leading ``@`` is dropped only when the literal path does not exist
(protocol.md §10.8). The host serves in the test's process (the ``inproc_host`` fixture):
what is tested is the tools' answers, not the host's process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from toolwire.host.calls.rootlock import LOCK_DIR

from tests.inproc import InProcHost


def _result(h: InProcHost, tool: str, args: dict[str, Any]) -> tuple[bool, str]:
    r = h.call(tool, args)["result"]
    text = "\n".join(b.get("text", "") for b in r["content"])
    return bool(r.get("isError")), text


def _names(d: Path) -> list[str]:
    """What the root holds, apart from the cross-host lock directory every mutating call
    may create (``.toolwire/``, toolwire.host.calls.rootlock)."""
    return sorted(
        str(p.relative_to(d)) for p in d.rglob("*") if p.relative_to(d).parts[0] != LOCK_DIR
    )


@pytest.fixture
def host(inproc_host: InProcHost) -> InProcHost:
    return inproc_host


# ------------------------------------------------------------------ a trailing slash


@pytest.mark.parametrize("path", ["trail/", "trail//", "new/dir/", "f.txt/", "f.txt/.", "sub/.."])
def test_write_to_a_path_naming_a_directory_is_refused(
    host: InProcHost, tmp_path: Path, path: str
) -> None:
    host.initialize()
    (tmp_path / "f.txt").write_text("keep\n")
    before = _names(tmp_path)
    err, text = _result(host, "write", {"path": path, "content": "x"})
    assert err and "is a directory name" in text, text
    assert _names(tmp_path) == before
    assert (tmp_path / "f.txt").read_text() == "keep\n"


@pytest.mark.parametrize("tool", ["edit", "read"])
def test_edit_and_read_of_a_file_with_a_trailing_slash_are_refused(
    host: InProcHost, tmp_path: Path, tool: str
) -> None:
    host.initialize()
    (tmp_path / "f.txt").write_text("keep\n")
    args: dict[str, Any] = {"path": "f.txt/"}
    if tool == "edit":
        args["edits"] = [{"oldText": "keep", "newText": "gone"}]
    err, text = _result(host, tool, args)
    assert err and "is a directory name" in text, text
    assert (tmp_path / "f.txt").read_text() == "keep\n"
    # Without the slash the same call works: the refusal is about the slash.
    args["path"] = "f.txt"
    assert not _result(host, tool, args)[0]


def test_a_directory_with_a_trailing_slash_still_lists(host: InProcHost, tmp_path: Path) -> None:
    host.initialize()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("x")
    assert _result(host, "ls", {"path": "d/"}) == (False, "x")


# ------------------------------------------------------------------ a leading @


@pytest.fixture
def at_host(host: InProcHost, tmp_path: Path) -> InProcHost:
    (tmp_path / "@scope").mkdir()
    (tmp_path / "scope").mkdir()
    (tmp_path / "@scope" / "x.txt").write_text("at scope\n")
    (tmp_path / "scope" / "x.txt").write_text("plain scope\n")
    (tmp_path / "only.txt").write_text("only plain\n")
    host.initialize()
    return host


def test_the_literal_path_with_an_at_sign_comes_first(at_host: InProcHost) -> None:
    assert _result(at_host, "read", {"path": "@scope/x.txt"}) == (False, "at scope\n")
    assert _result(at_host, "ls", {"path": "@scope"}) == (False, "x.txt")
    assert _result(at_host, "grep", {"pattern": "scope", "path": "@scope/x.txt"}) == (
        False,
        "x.txt:1: at scope",
    )


def test_the_at_sign_is_dropped_when_only_the_bare_path_exists(at_host: InProcHost) -> None:
    assert _result(at_host, "read", {"path": "@only.txt"}) == (False, "only plain\n")


def test_write_never_drops_the_at_sign_to_create_a_file(
    at_host: InProcHost, tmp_path: Path
) -> None:
    assert not _result(at_host, "write", {"path": "@scope/y.txt", "content": "new"})[0]
    assert (tmp_path / "@scope" / "y.txt").read_text() == "new"
    assert not (tmp_path / "scope" / "y.txt").exists()
    # A new top-level name keeps its @ too, even when the bare directory exists.
    assert not _result(at_host, "write", {"path": "@new.txt", "content": "n"})[0]
    assert (tmp_path / "@new.txt").read_text() == "n"
    assert not (tmp_path / "new.txt").exists()


def test_write_and_edit_change_the_literal_file(at_host: InProcHost, tmp_path: Path) -> None:
    assert not _result(at_host, "write", {"path": "@scope/x.txt", "content": "w\n"})[0]
    edit = {"path": "@scope/x.txt", "edits": [{"oldText": "w", "newText": "e"}]}
    assert not _result(at_host, "edit", edit)[0]
    assert (tmp_path / "@scope" / "x.txt").read_text() == "e\n"
    assert (tmp_path / "scope" / "x.txt").read_text() == "plain scope\n"

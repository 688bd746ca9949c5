"""Escape attempts around bash's full-output files (issue 10 point 12), through the real host.

The sandbox mounts this host's full-output directory read-only at its own path, and
nothing else of the per-user parent: a sandboxed command can read the files an answer
names, but cannot change them, and cannot see another host's files. Each attempt has a
control showing the same command unsandboxed would have succeeded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.e2e_helpers import text_of
from tests.hostproc import HostProcess
from tests.sandbox_support import require_sandbox

BIG = "seq 3000"


@contextmanager
def host(root: Path, mode: str) -> Iterator[HostProcess]:
    with HostProcess(["--root", str(root), "--sandbox", mode, "--no-entry-points"]) as h:
        h.initialize()
        yield h


def full_output(h: HostProcess) -> Path:
    resp = h.call("bash", {"command": BIG}, timeout=30)
    return Path(resp["result"]["_meta"]["toolwire/details"]["fullOutputPath"])


def bash(h: HostProcess, command: str) -> dict[str, Any]:
    return h.call("bash", {"command": command}, timeout=30)["result"]  # type: ignore[no-any-return]


def test_a_sandboxed_command_cannot_change_a_full_output_file(tmp_path: Path) -> None:
    require_sandbox()
    with host(tmp_path, "bwrap") as h:
        path = full_output(h)
        before = path.read_bytes()
        r = bash(h, f"printf planted > {path}; printf more >> {path}; rm -f {path}")
        assert r.get("isError") is True
        assert path.read_bytes() == before
        r = bash(h, f"touch {path.parent}/planted")
        assert r.get("isError") is True
        assert not (path.parent / "planted").exists()
    # Control: unsandboxed, the same commands do change it.
    with host(tmp_path, "none") as h:
        path = full_output(h)
        assert bash(h, f"printf planted > {path}").get("isError") is not True
        assert path.read_bytes() == b"planted"


def test_a_sandboxed_command_cannot_see_another_hosts_files(tmp_path: Path) -> None:
    require_sandbox()
    with host(tmp_path, "none") as other:
        theirs = full_output(other)
        assert theirs.exists()
        # Control: unsandboxed, another host's file is readable (same user).
        with host(tmp_path, "none") as h:
            r = bash(h, f"head -n 1 {theirs}")
            assert r.get("isError") is not True and text_of({"result": r}) == "1"
        with host(tmp_path, "bwrap") as h:
            mine = full_output(h)
            assert mine.parent != theirs.parent
            r = bash(h, f"head -n 1 {theirs}")
            assert r.get("isError") is True and "No such file" in text_of({"result": r})
            listing = text_of({"result": bash(h, f"ls {theirs.parent.parent}")})
            assert mine.parent.name in listing and theirs.parent.name not in listing
            assert bash(h, f"head -n 1 {mine}").get("isError") is not True
    assert os.path.exists(theirs) is False  # its host has exited and removed it


def test_the_file_tools_refuse_another_hosts_full_output_files(tmp_path: Path) -> None:
    # read and grep accept this host's full-output files outside the root; another
    # host's (same user, another root) are outside both, for every file tool.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with host(tmp_path / "a", "none") as other:
        theirs = full_output(other)
        with host(tmp_path / "b", "none") as h:
            mine = full_output(h)
            assert mine.parent.parent == theirs.parent.parent  # siblings in one parent
            # Control: this host's own file is readable by read and grep.
            own = h.call("read", {"path": str(mine), "offset": 2998, "limit": 1})["result"]
            assert own.get("isError") is not True and "2998" in text_of({"result": own})
            found = h.call("grep", {"pattern": "^2999$", "path": str(mine)})["result"]
            assert found.get("isError") is not True and ":2999:" in text_of({"result": found})
            attempts: list[tuple[str, dict[str, Any]]] = [
                ("read", {"path": str(theirs)}),
                ("grep", {"pattern": "2999", "path": str(theirs)}),
                ("grep", {"pattern": "2999", "path": str(theirs.parent)}),
                ("find", {"pattern": "*", "path": str(theirs.parent)}),
                ("ls", {"path": str(theirs.parent)}),
                ("ls", {"path": str(theirs.parent.parent)}),
            ]
            for tool, args in attempts:
                r = h.call(tool, args)["result"]
                said = text_of({"result": r})
                assert r.get("isError") is True, (tool, args, r)
                assert "outside the root" in said, (tool, args, said)
                assert "2998" not in said.replace(str(theirs), ""), (tool, args, said)

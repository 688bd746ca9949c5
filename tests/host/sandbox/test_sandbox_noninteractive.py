"""A command that opens an editor, pager or prompt ends instead of waiting for a terminal
it does not have (issue 27): tools' processes get non-interactive defaults
(toolwire.host.sandbox.commands.NON_INTERACTIVE_ENV) over the host's own, inside the sandbox
and out, and the answer says what happened when a command wanted a terminal. Through
the real host; the hanging commands get a bound far above how long they take here, and
the test asserts they did not reach it."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.hostproc import HostProcess
from tests.sandbox_support import require_sandbox

BOUND = 90
"""Seconds a command may run: reached only by a command that waits for a terminal."""

IDENTITY = (
    "GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.org "
    "GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.org"
)

MODES = ["none", "bwrap"]


@contextmanager
def host(root: Path, mode: str) -> Iterator[HostProcess]:
    if mode == "bwrap":
        require_sandbox()
    # The host's own environment names a terminal editor and pager, as a developer's does.
    env = {"EDITOR": "vim", "VISUAL": "vim", "PAGER": "less", "GIT_PAGER": "less"}
    args = ["--root", str(root), "--sandbox", mode, "--no-entry-points"]
    with HostProcess(args, env=env) as h:
        h.initialize()
        yield h


def bash(h: HostProcess, command: str) -> dict[str, Any]:
    args = {"command": command, "timeout": BOUND}
    return h.call("bash", args, timeout=BOUND + 60)["result"]  # type: ignore[no-any-return]


def _text(result: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in result["content"] if b["type"] == "text")


def _details(result: dict[str, Any]) -> dict[str, Any]:
    return result["_meta"]["toolwire/details"]  # type: ignore[no-any-return]


def _repo(root: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(root), "add", "a.txt"], check=True)


@pytest.mark.parametrize("mode", MODES)
def test_git_commit_without_a_message_ends_with_a_hint(tmp_path: Path, mode: str) -> None:
    _repo(tmp_path)
    with host(tmp_path, mode) as h:
        r = bash(h, f"{IDENTITY} git commit")
        out = _text(r)
        assert not _details(r)["timedOut"], out
        assert r.get("isError") and "git commit -m MESSAGE" in out, out
        assert "The command wanted a terminal" in out and _details(r)["wantedTerminal"], out
        # with a message it commits, and git log does not page
        r = bash(h, f"{IDENTITY} git commit -q -m first && git log --oneline")
        assert not r.get("isError") and "first" in _text(r), _text(r)


@pytest.mark.parametrize("mode", MODES)
def test_an_editor_or_pager_ends_with_a_hint(tmp_path: Path, mode: str) -> None:
    if shutil.which("vi") is None or shutil.which("less") is None:
        pytest.skip("vi or less is not installed")
    (tmp_path / "notes.txt").write_text("".join(f"line {i}\n" for i in range(1, 301)))
    with host(tmp_path, mode) as h:
        r = bash(h, "vi notes.txt")
        out = _text(r)
        assert not _details(r)["timedOut"], out
        assert r.get("isError") and "The command wanted a terminal" in out, out
        assert (tmp_path / "notes.txt").read_text().startswith("line 1\n")
        r = bash(h, "less notes.txt")
        assert not r.get("isError") and "line 300" in _text(r), _text(r)
        r = bash(h, 'echo "$PAGER|$GIT_PAGER|$GIT_TERMINAL_PROMPT"')
        assert _text(r) == "cat|cat|0"
        # a vim script (vim -es) still runs
        r = bash(h, "vim -es -c '%s/^line 1$/first/' -c wq notes.txt && head -1 notes.txt")
        assert not r.get("isError") and _text(r) == "first", _text(r)


def test_a_command_that_asks_nothing_gets_no_hint(tmp_path: Path) -> None:
    with host(tmp_path, "none") as h:
        r = bash(h, "echo fine; exit 3")
        assert "wanted a terminal" not in _text(r) and "wantedTerminal" not in _details(r)


def test_a_command_that_succeeds_gets_no_hint_whatever_it_prints(tmp_path: Path) -> None:
    """`env` shows the non-interactive settings' own messages, and a grep of sources may
    print "not a tty": a command that succeeded was not stopped by a missing terminal."""
    with host(tmp_path, "none") as h:
        r = bash(h, "env; echo 'stdin is not a tty; see /dev/tty'; echo ran-to-the-end")
        assert not r.get("isError") and _text(r).endswith("ran-to-the-end"), _text(r)
        assert "wantedTerminal" not in _details(r)

"""The host's import-path scrub (toolwire.host.sandbox.importpath), in-process on a stand-in
``sys.path``; tests/escape/test_sandbox_escape_launch.py tries it through the real host."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from toolwire.host.sandbox import importpath


@pytest.mark.parametrize(
    ("argv", "root"),
    [
        (["--root", "/r"], "/r"),
        (["--root=/r"], "/r"),
        (["--tools", "x.py", "--root", "/a", "--root", "/b"], "/b"),
        (["--tools", "x.py"], None),
        (["--", "--root", "/r"], None),
        (["--root"], None),
    ],
)
def test_root_from_argv(argv: list[str], root: str | None) -> None:
    assert importpath.root_from_argv(argv) == root


def test_scrub_removes_what_the_root_could_provide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "root"
    venv = root / ".venv"
    site = venv / "lib" / "site-packages"
    for d in (root / "src", site, venv / "bin", tmp_path / "elsewhere", tmp_path / "cwd"):
        d.mkdir(parents=True)
    (root / "link").symlink_to(root / "src")
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(importpath, "installation_dirs", lambda: [str(venv)])
    monkeypatch.setattr(sys, "executable", str(venv / "bin" / "python"))
    monkeypatch.setattr(sys, "prefix", str(venv))
    monkeypatch.setattr(
        sys,
        "path",
        [
            str(venv / "bin"),  # a console script's directory
            "",
            ".",
            str(tmp_path / "cwd"),
            str(root),
            str(root / "src"),
            str(root / "link"),  # a symlink into the root's src
            str(site),  # the installation, although inside the root
            str(tmp_path / "elsewhere"),  # e.g. PYTHONPATH outside the root
        ],
    )
    removed = importpath.scrub_import_path([root])
    assert sys.path == [str(site), str(tmp_path / "elsewhere")]
    assert len(removed) == 7


def test_the_entry_drops_the_implicit_first_entry_and_pythonsafepath(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    first = str(tmp_path.parent / "scriptdir")
    rest = [p for p in sys.path if os.path.isabs(p) and not str(p).startswith(str(tmp_path))]
    monkeypatch.setattr(sys, "path", [first, *rest])
    monkeypatch.setenv("PYTHONSAFEPATH", "1")
    importpath.scrub_at_entry(["--root", str(tmp_path)])
    if not sys.flags.safe_path:
        assert first not in sys.path
    assert "PYTHONSAFEPATH" not in os.environ

"""The suite's folders follow the source (issue 23 point 7): every host package has its
own folder under tests/host/, and no test file is left at the top of tests/ (where a new
file would otherwise land by habit)."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
HOST = TESTS.parent / "host"


def test_every_host_package_has_a_test_folder() -> None:
    packages = {p.name for p in HOST.iterdir() if (p / "__init__.py").is_file()}
    folders = {p.name for p in (TESTS / "host").iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert packages - folders == set(), "host packages without a tests/host/<package> folder"
    assert folders - packages == set(), "tests/host folders naming no host package"


def test_no_test_file_sits_at_the_top() -> None:
    top = {p.name for p in TESTS.glob("test_*.py")}
    assert top == set(), f"move these into the folder of the code they test: {sorted(top)}"


def test_every_test_folder_is_a_package() -> None:
    """Without ``__init__.py`` two files of one name in different folders would clash."""
    for folder in TESTS.rglob("*"):
        if folder.is_dir() and any(folder.glob("test_*.py")) and "node_modules" not in folder.parts:
            assert (folder / "__init__.py").is_file(), folder

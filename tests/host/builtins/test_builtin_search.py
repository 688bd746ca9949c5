"""The ls, grep and find built-ins."""

from __future__ import annotations

from pathlib import Path

import pytest
from toolwire.host.builtins._common import GlobMatcher

from tests.e2e_helpers import PROMPT
from tests.host.builtins.support import call, details, is_error, text

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# ------------------------------------------------------------------ ls


async def test_ls_dotfiles_sorted_dirs_marked(tmp_path: Path) -> None:
    (tmp_path / ".hidden-file").write_text("")
    (tmp_path / ".hidden-dir").mkdir()
    (tmp_path / "Beta").write_text("")
    (tmp_path / "alpha").mkdir()
    (tmp_path / "gamma.txt").write_text("")
    r = await call(tmp_path, "ls", {})
    assert text(r).split("\n") == [".hidden-dir/", ".hidden-file", "alpha/", "Beta", "gamma.txt"]


async def test_ls_limit_empty_and_errors(tmp_path: Path) -> None:
    for i in range(12):
        (tmp_path / f"f{i:02d}").write_text("")
    r = await call(tmp_path, "ls", {"limit": 5})
    lines = text(r).split("\n")
    assert lines[:5] == ["f00", "f01", "f02", "f03", "f04"]
    assert "Showing 5 of 12 entries" in text(r) and "limit=10" in text(r)
    (tmp_path / "empty").mkdir()
    assert text(await call(tmp_path, "ls", {"path": "empty"})) == "(empty directory)"
    r = await call(tmp_path, "ls", {"path": "f00"})
    assert is_error(r) and "Not a directory" in text(r)
    r = await call(tmp_path, "ls", {"path": "missing"})
    assert is_error(r) and "not found" in text(r)
    r = await call(tmp_path, "ls", {"path": ".."})
    assert is_error(r) and "outside the root" in text(r)


async def test_ls_lists_symlinks_as_links_without_following_them(tmp_path: Path) -> None:
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "dir").mkdir()
    (tmp_path / "to_dir").symlink_to(tmp_path / "dir")
    assert text(await call(tmp_path, "ls", {})).split("\n") == ["dangling@", "dir/", "to_dir@"]


# ------------------------------------------------------------------ grep


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "example.txt").write_text("first line\nmatch line\nlast line\n")
    (tmp_path / "context.txt").write_text("before\nmatch one\nafter\nfiller\nmatch two\n")
    (tmp_path / ".gitignore").write_text("ignored/\n*.log\n")
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "x.txt").write_text("match hidden by gitignore\n")
    (tmp_path / "debug.log").write_text("match in log\n")
    (tmp_path / ".secret").mkdir()
    (tmp_path / ".secret" / "hidden.txt").write_text("match in dotdir\n")
    (tmp_path / "visible.txt").write_text("nothing\n")
    return tmp_path


async def test_grep_single_file(tree: Path) -> None:
    r = await call(tree, "grep", {"pattern": "match", "path": "example.txt"})
    assert text(r) == "example.txt:2: match line"


async def test_grep_directory_respects_gitignore_and_hidden(tree: Path) -> None:
    r = await call(tree, "grep", {"pattern": "match"})
    out = text(r).split("\n")
    assert sorted(out) == [
        ".secret/hidden.txt:1: match in dotdir",
        "context.txt:2: match one",
        "context.txt:5: match two",
        "example.txt:2: match line",
    ]


async def test_grep_context_and_limit(tree: Path) -> None:
    r = await call(
        tree, "grep", {"pattern": "match", "path": "context.txt", "limit": 1, "context": 1}
    )
    lines = text(r).split("\n")
    assert lines[:3] == [
        "context.txt-1- before",
        "context.txt:2: match one",
        "context.txt-3- after",
    ]
    assert "1 matches limit reached" in text(r) and "limit=2" in text(r)
    assert details(r)["matchLimitReached"] == 1


async def test_grep_flags(tree: Path) -> None:
    r = await call(
        tree, "grep", {"pattern": "MATCH LINE", "ignoreCase": True, "path": "example.txt"}
    )
    assert text(r) == "example.txt:2: match line"
    (tree / "re.txt").write_text("a.c\nabc\n")
    r = await call(tree, "grep", {"pattern": "a.c", "literal": True, "path": "re.txt"})
    assert text(r) == "re.txt:1: a.c"
    r = await call(tree, "grep", {"pattern": "match", "glob": "*.txt"})
    assert "example.txt:2" in text(r) and "debug.log" not in text(r)
    assert "ignored/x.txt" not in text(r)  # a glob does not override .gitignore
    r = await call(tree, "grep", {"pattern": "match", "glob": "ex*"})
    assert text(r) == "example.txt:2: match line"


@pytest.mark.parametrize("pattern", ["--pre={script}", "--pre", "-f{script}"])
async def test_grep_pattern_is_never_an_option(tmp_path: Path, pattern: str) -> None:
    script = tmp_path / "evil.sh"
    marker = tmp_path / "ran"
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    script.chmod(0o755)
    (tmp_path / "data.txt").write_text("hello\n")
    r = await call(tmp_path, "grep", {"pattern": pattern.format(script=script)})
    assert text(r) == "No matches found"
    assert not marker.exists()


async def test_grep_no_matches_and_bad_regex(tree: Path) -> None:
    assert text(await call(tree, "grep", {"pattern": "zzzz-not-there"})) == "No matches found"
    r = await call(tree, "grep", {"pattern": "("})
    assert is_error(r) and "grep failed" in text(r)
    r = await call(tree, "grep", {"pattern": "x", "path": "missing"})
    assert is_error(r) and "not found" in text(r)


async def test_grep_special_files_do_not_block(tmp_path: Path) -> None:
    import os
    import time

    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "a.txt").write_text("hello\n")
    start = time.monotonic()
    r = await call(tmp_path, "grep", {"pattern": "hello", "path": "pipe"})
    assert is_error(r) and "FIFO" in text(r)
    r = await call(tmp_path, "grep", {"pattern": "hello"})  # a FIFO in the tree is skipped
    assert text(r) == "a.txt:1: hello"
    assert time.monotonic() - start < PROMPT


async def test_grep_long_lines_cut(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text("needle" + "x" * 1000 + "\n")
    r = await call(tmp_path, "grep", {"pattern": "needle"})
    first = text(r).split("\n")[0]
    assert first.startswith("wide.txt:1: needle") and first.endswith("... [truncated]")
    assert len(first) < 540 and "cut to 500 characters" in text(r)


async def test_grep_output_capped(tmp_path: Path) -> None:
    (tmp_path / "many.txt").write_text(("hit " + "y" * 400 + "\n") * 300)
    r = await call(tmp_path, "grep", {"pattern": "hit", "limit": 1000})
    assert len(text(r).encode()) < 52_000 and "Output cut at 50.0KB" in text(r)


# ------------------------------------------------------------------ find


async def test_find_glob_hidden_and_gitignore(tree: Path) -> None:
    r = await call(tree, "find", {"pattern": "**/*.txt"})
    found = text(r).split("\n")
    assert "visible.txt" in found and ".secret/hidden.txt" in found
    assert "ignored/x.txt" not in found
    r = await call(tree, "find", {"pattern": "*.log"})
    assert text(r) == "No files found matching *.log"


async def test_find_limit_and_errors(tree: Path) -> None:
    r = await call(tree, "find", {"pattern": "*.txt", "limit": 2})
    assert len(text(r).split("\n\n")[0].split("\n")) == 2
    assert "2 results limit reached" in text(r)
    r = await call(tree, "find", {"pattern": "["})
    assert is_error(r) and "glob" in text(r).lower()
    r = await call(tree, "find", {"pattern": "--help"})
    assert not is_error(r) and text(r).startswith("No files found")


@pytest.mark.parametrize(
    ("glob", "path", "hit"),
    [
        ("*.py", "a/b/c.py", True),
        ("*.py", "c.pyc", False),
        ("src/**/*.ts", "src/x/y/z.ts", True),
        ("src/**/*.ts", "src/z.ts", True),
        ("src/*.ts", "src/x/z.ts", False),
        ("**/*.txt", "visible.txt", True),
        ("{a,b}.md", "b.md", True),
        ("[ab]?.c", "ax.c", True),
        ("[!ab]?.c", "ax.c", False),
        ("!*.md", "x.md", False),
        ("[!]]", "]", False),
        ("[!]]", "x", True),
        ("x/a***b", "x/a/y/b", True),
        ("x/a*b", "x/a/y/b", False),
        ("src/**", "src/a/b", True),
        ("*a*a*a*a*a*a*a*a*a*a*a*a*b", "a" * 5000, False),
        ("*a*a*a*a*a*a*a*a*a*a*a*a*b", "a" * 5000 + "b", True),
    ],
)
def test_glob_matcher(glob: str, path: str, hit: bool) -> None:
    assert GlobMatcher(glob)(path) is hit


@pytest.mark.parametrize("glob", ["[b-a]", "{a,b}" * 40, "x" * 5000, "[ab", "{a,b"])
def test_glob_matcher_refuses(glob: str) -> None:
    with pytest.raises(ValueError):
        GlobMatcher(glob)


# ------------------------------------------------------------------ ripgrep lookup


def test_rg_is_never_taken_from_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolwire.host.builtins._common import find_rg

    planted = tmp_path / "rg"
    planted.write_text("#!/bin/sh\ntouch planted-ran\n")
    planted.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    found = find_rg.__wrapped__()
    assert found is not None and found != str(planted)
    assert Path(found).is_absolute()


def test_ripgrep_requirement_resolves_to_a_wheel() -> None:
    # ripgrep 15.0.0 and 15.1.0 exist on PyPI only as source (a Rust build that a
    # plain `pip install -e .` cannot do offline); 14.1.0 ships manylinux wheels.
    import tomllib

    from packaging.requirements import Requirement

    repo = Path(__file__).resolve().parents[3]
    deps = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["dependencies"]
    (rg,) = [Requirement(d) for d in deps if Requirement(d).name == "ripgrep"]
    assert "14.1.0" in rg.specifier
    assert "15.0.0" not in rg.specifier and "15.1.0" not in rg.specifier

"""Escape attempts against the file tools' path rules, through the real host.

* a directory swapped for a symlink out of the root while a batch of writes creates
  directories below it (nothing may appear outside);
* a sibling directory whose name starts with the root's name (``root2``, ``root-x``);
* the host's own installation (a virtual environment inside the root) changed by
  write or edit;
* refusals that would tell where ``/proc/<pid>/cwd``, ``/proc/<pid>/fd/<n>`` or a
  symlink out of the root leads.

See SECURITY.md, "What the file tools promise". Every attempt writes only into the
test's own temporary directories.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hostproc import HostProcess

TOKEN = "outside-" + secrets.token_hex(8)
"""Content of files outside the root; must never show up in an answer."""


def _text(resp: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for b in resp["result"]["content"])


def _refused(resp: dict[str, Any]) -> str:
    assert resp["result"].get("isError") is True, resp
    return _text(resp)


def _tree(d: Path) -> list[str]:
    """Every name below ``d`` (relative, sorted), directories included."""
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


# ====================================================================== the race


class _Swapper(threading.Thread):
    """Flips ``root/sw`` between a real directory and a symlink to ``outside`` until
    stopped; ``flipped`` is set after the first complete flip. A write that recreates
    ``sw`` while it is missing has its new directory moved aside (``junk<n>``)."""

    def __init__(self, root: Path, outside: Path) -> None:
        super().__init__(daemon=True)
        self.root = root
        self.sw = root / "sw"
        self.parked = root / "parked"
        self.outside = outside
        self.stop = threading.Event()
        self.flipped = threading.Event()
        self.flips = 0
        self.junk = 0

    def _aside(self) -> None:
        self.junk += 1
        with contextlib.suppress(FileNotFoundError):
            os.rename(self.sw, self.root / f"junk{self.junk}")

    def _symlink(self) -> None:
        while True:
            try:
                os.symlink(self.outside, self.sw)
                return
            except FileExistsError:
                self._aside()

    def _restore(self) -> None:
        while True:
            try:
                os.rename(self.parked, self.sw)
                return
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                self._aside()

    def run(self) -> None:
        while not self.stop.is_set():
            os.rename(self.sw, self.parked)
            self._symlink()
            os.unlink(self.sw)
            self._restore()
            self.flips += 1
            self.flipped.set()

    def end(self) -> None:
        self.stop.set()
        self.join(timeout=30)
        assert not self.is_alive()


def test_directory_swapped_for_a_symlink_during_a_batch_of_writes_creates_nothing_outside(
    tmp_path: Path,
) -> None:
    # write creates sw/a/b/c for each file. If it created the parents by name (following
    # symlinks), the moments when sw is a symlink to the outside directory would create
    # outside/a/b/c there. Parents are created relative to directory descriptors, never
    # through a symlink: nothing at all may appear outside.
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "sw").mkdir()
    n = 300
    with HostProcess(["--root", str(root), "--sandbox", "none"]) as h:
        h.initialize()
        swapper = _Swapper(root, outside)
        swapper.start()
        try:
            assert swapper.flipped.wait(timeout=30)
            answers: list[dict[str, Any]] = []
            for round_ in range(3):
                calls = [
                    {
                        "id": i,
                        "name": "write",
                        "arguments": {"path": f"sw/a/b/c/file_{round_}_{i}", "content": "x"},
                    }
                    for i in range(n)
                ]
                resp = h.request("tools/callBatch", {"calls": calls}, timeout=300)
                answers += [r["result"] for r in resp["result"]["results"]]
        finally:
            swapper.end()
        assert len(answers) == 3 * n
        assert swapper.flips > 0
        assert _tree(outside) == []
        # The path itself is fine: with the swapping over, the same write succeeds.
        ok = h.call("write", {"path": "sw/a/b/c/control", "content": "x"})["result"]
        assert ok.get("isError") is not True, ok
        assert (root / "sw" / "a" / "b" / "c" / "control").read_text() == "x"
    for r in answers:
        if r.get("isError"):
            text = "\n".join(b.get("text", "") for b in r["content"])
            assert str(outside) not in text, text
    assert _tree(outside) == []


# ====================================================================== sibling roots


class Siblings:
    """``base/root`` with traps, and siblings ``root2`` and ``root-x`` beside it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "root"
        self.root.mkdir()
        (self.root / "inside.txt").write_text("inside\n")
        self.siblings = [base / "root2", base / "root-x"]
        for d in self.siblings:
            d.mkdir()
            (d / "secret.txt").write_text(f"{TOKEN}\n")
        os.symlink(base / "root2", self.root / "sib")
        os.symlink("../root-x", self.root / "sib_rel")
        os.symlink(base / "root2" / "secret.txt", self.root / "sib_file")

    def unchanged(self) -> bool:
        return all(_tree(d) == ["secret.txt"] for d in self.siblings) and all(
            (d / "secret.txt").read_text() == f"{TOKEN}\n" for d in self.siblings
        )


@pytest.fixture(scope="module")
def siblings(tmp_path_factory: pytest.TempPathFactory) -> Siblings:
    return Siblings(tmp_path_factory.mktemp("siblings"))


@pytest.fixture(scope="module")
def sib_host(siblings: Siblings) -> Iterator[HostProcess]:
    with HostProcess(["--root", str(siblings.root), "--sandbox", "none"]) as h:
        h.initialize()
        yield h


def _sibling_attempts() -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for via in ("../root2", "../root-x", "{base}/root2", "{base}/root-x", "sib", "sib_rel"):
        out += [
            ("read", {"path": f"{via}/secret.txt"}),
            ("write", {"path": f"{via}/new.txt", "content": "pwned"}),
            ("write", {"path": f"{via}/deep/er/new.txt", "content": "pwned"}),
            ("write", {"path": f"{via}/secret.txt", "content": "pwned"}),
            ("edit", {"path": f"{via}/secret.txt", "edits": [{"oldText": "out", "newText": "x"}]}),
            ("ls", {"path": via}),
            ("grep", {"pattern": "outside", "path": via}),
            ("grep", {"pattern": "outside", "path": f"{via}/secret.txt"}),
            ("find", {"pattern": "*", "path": via}),
        ]
    out += [
        ("read", {"path": "sib_file"}),
        ("write", {"path": "sib_file", "content": "pwned"}),
        ("edit", {"path": "sib_file", "edits": [{"oldText": "out", "newText": "x"}]}),
        ("grep", {"pattern": "outside", "path": "sib_file"}),
    ]
    return out


@pytest.mark.parametrize(("tool", "args"), _sibling_attempts())
def test_a_sibling_whose_name_starts_with_the_roots_name_is_outside(
    sib_host: HostProcess, siblings: Siblings, tool: str, args: dict[str, Any]
) -> None:
    args = {k: (v.format(base=siblings.base) if isinstance(v, str) else v) for k, v in args.items()}
    text = _refused(sib_host.call(tool, args))
    assert "outside the root" in text, text
    assert TOKEN not in text
    assert siblings.unchanged()


def test_the_root_itself_stays_usable_beside_its_siblings(
    sib_host: HostProcess, siblings: Siblings
) -> None:
    # Control: the same tools work inside the root, so the refusals above are about
    # the siblings, not the tools.
    assert _text(sib_host.call("read", {"path": "inside.txt"})) == "inside\n"
    assert "inside.txt" in _text(sib_host.call("ls", {"path": "."}))


# ====================================================================== the host's installation


@pytest.fixture(scope="module")
def venv_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project root holding a virtual environment (``.venv``) that can run the host:
    it sees this test run's packages through a ``.pth`` file."""
    root = tmp_path_factory.mktemp("venvroot") / "project"
    root.mkdir()
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")],
        check=True,
        timeout=120,
    )
    probe = subprocess.run(
        [
            str(root / ".venv/bin/python"),
            "-c",
            "import sysconfig;print(sysconfig.get_path('purelib'))",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    site_dir = Path(probe.stdout.strip())
    ours = sysconfig.get_path("purelib")
    (site_dir / "zz_toolwire_tests.pth").write_text(
        f"import site; site.addsitedir({json.dumps(ours)})\n"
    )
    # Something that looks like an installation but is not the host's.
    other = root / "other-venv" / "lib" / "python3.11" / "site-packages"
    other.mkdir(parents=True)
    (root / "app.py").write_text("print('app')\n")
    return root


@pytest.fixture(scope="module")
def venv_host(venv_root: Path) -> Iterator[HostProcess]:
    """The host run by the interpreter of ``venv_root/.venv``, rooted at ``venv_root``."""
    python = str(venv_root / ".venv" / "bin" / "python")
    h = HostProcess(
        ["--root", str(venv_root), "--sandbox", "none"],
        cwd=venv_root,
        command=[python, "-P", "-m", "toolwire.host"],  # run by the root's environment
    )
    try:
        h.initialize()
        yield h
    finally:
        h.close()


def _site(venv_root: Path) -> str:
    found = sorted((venv_root / ".venv" / "lib").glob("python3*/site-packages"))
    assert found, "the virtual environment has no site-packages"
    return str(found[0].relative_to(venv_root))


@pytest.mark.parametrize(
    ("tool", "target"),
    [
        ("write", "{site}/orjson.py"),
        ("write", "{site}/PIL/__init__.py"),
        ("write", "{site}/zz_toolwire_tests.pth"),
        ("write", "{site}/evil.pth"),
        ("write", ".venv/bin/bwrap"),
        ("write", ".venv/bin/toolwire"),
        ("write", ".venv/pyvenv.cfg"),
        ("write", "./.venv/lib/../bin/sh"),
        ("edit", ".venv/pyvenv.cfg"),
        ("edit", "{site}/zz_toolwire_tests.pth"),
    ],
)
def test_write_and_edit_never_change_the_hosts_own_installation(
    venv_host: HostProcess, venv_root: Path, tool: str, target: str
) -> None:
    path = target.format(site=_site(venv_root))
    before = _tree(venv_root / ".venv")
    contents = {
        p: (venv_root / ".venv" / p).read_bytes()
        for p in before
        if (venv_root / ".venv" / p).is_file()
    }
    if tool == "write":
        args: dict[str, Any] = {"path": path, "content": "import os\n"}
    else:
        args = {"path": path, "edits": [{"oldText": "import", "newText": "#import"}]}
        if path.endswith("pyvenv.cfg"):
            args["edits"] = [{"oldText": "home", "newText": "hom"}]
    text = _refused(venv_host.call(tool, args))
    assert "host's own installation" in text, text
    assert _tree(venv_root / ".venv") == before
    assert all((venv_root / ".venv" / p).read_bytes() == c for p, c in contents.items())


def test_the_installation_stays_readable_and_the_rest_of_the_root_writable(
    venv_host: HostProcess, venv_root: Path
) -> None:
    r = venv_host.call("read", {"path": ".venv/pyvenv.cfg"})["result"]
    assert r.get("isError") is not True and "home" in _text({"result": r})
    # A look-alike that is not the running host's environment is an ordinary directory.
    target = "other-venv/lib/python3.11/site-packages/orjson.py"
    r = venv_host.call("write", {"path": target, "content": "x = 1\n"})["result"]
    assert r.get("isError") is not True, r
    assert (venv_root / target).read_text() == "x = 1\n"
    r = venv_host.call("edit", {"path": "app.py", "edits": [{"oldText": "app", "newText": "ok"}]})
    assert r["result"].get("isError") is not True, r


# ====================================================================== where paths lead


@pytest.fixture
def elsewhere(tmp_path: Path) -> Iterator[tuple[Path, Path, int, int]]:
    """A root, and a process whose cwd is a directory outside it with a telling name,
    holding a file there open; yields (root, that directory, the pid, the fd number)."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "inside.txt").write_text("inside\n")
    far = tmp_path / f"far-{TOKEN}"
    far.mkdir()
    (far / "held.txt").write_text(f"{TOKEN}\n")
    os.symlink(far, root / "lead")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os,sys\nf=open('held.txt')\nprint(f.fileno(),flush=True)\nsys.stdin.read()",
        ],
        cwd=far,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        fd = int(proc.stdout.readline())
        yield root, far, proc.pid, fd
    finally:
        proc.kill()
        proc.wait()


def test_refusals_never_tell_where_a_path_outside_the_root_leads(
    elsewhere: tuple[Path, Path, int, int],
) -> None:
    root, far, pid, fd = elsewhere
    paths = [
        f"/proc/{pid}/cwd/.x",
        f"/proc/{pid}/cwd",
        f"/proc/{pid}/cwd/held.txt",
        f"/proc/{pid}/fd/{fd}",
        f"/proc/{pid}/root/etc/hostname",
        f"/proc/{pid}/cwd/../root/inside.txt",  # back into the root: an oracle on cwd
        "/proc/self/cwd/inside.txt",
        "lead/.x",
        "lead/held.txt",
        "lead",
    ]
    with HostProcess(["--root", str(root), "--sandbox", "none"], cwd=root) as h:
        h.initialize()
        for p in paths:
            for tool, args in [
                ("read", {"path": p}),
                ("write", {"path": p, "content": "x"}),
                ("write", {"path": p + "/new", "content": "x"}),
                ("edit", {"path": p, "edits": [{"oldText": "o", "newText": "x"}]}),
                ("ls", {"path": p}),
                ("grep", {"pattern": "o", "path": p}),
                ("find", {"pattern": "*", "path": p}),
            ]:
                text = _refused(h.call(tool, args))
                assert "outside the root" in text, (tool, p, text)
                assert TOKEN not in text and str(far) not in text, (tool, p, text)
    assert _tree(far) == ["held.txt"]

"""``make mutants``: planted one-line regressions, each of which must turn its tests red.

Each mutant of :data:`MUTANTS` replaces one line of security- or data-critical product
code (the seccomp rules, path confinement, requestState verification, ...). The tree
is copied once (``git ls-files``: tracked and untracked-but-not-ignored files) to a
work directory laid out as the installed package (``toolwire/``, ``toolwire/host``,
``toolwire/client``) beside a copy of the tests, with a virtual environment holding a
copy of this checkout's dependencies whose interpreter imports the copy. Then:

1. the named tests of every mutant run on the unmutated copy and must pass (a red
   baseline would make every mutant look caught);
2. each mutant is applied alone (its ``old`` text must occur exactly once in its
   file), its tests run, the file is restored; the mutant is *caught* when they fail.

Exit status 0 when every mutant was caught; 1 when one survived or a baseline failed
(each is listed). ``--only NAME`` runs one mutant; ``--list`` prints them. A new
mutant: one entry below, naming the narrowest tests that must notice it.

Run as ``make mutants`` (or ``.venv/bin/python tests/mutants.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = {"toolwire": "toolwire", "host": "toolwire/host", "client": "toolwire/client"}
"""Top-level directories of the checkout and where the installed package has them
(pyproject.toml's [tool.setuptools.package-dir])."""


@dataclass(frozen=True)
class Mutant:
    """One planted regression.

    Attributes:
        name: a short unique name.
        path: the file, relative to the checkout (e.g. ``host/seccomp.py``).
        old: text occurring exactly once in that file.
        new: what replaces it (one line's change).
        tests: pytest node ids (relative to the checkout) that must fail.
    """

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


SECCOMP_TESTS = ("tests/test_sandbox_seccomp_rules.py",)

MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "seccomp: a call through another architecture is allowed",
        "host/seccomp.py",
        'emit(_JEQ_K, _AUDIT_ARCH[machine], None, "kill")',
        "emit(_JEQ_K, _AUDIT_ARCH[machine], None, None)",
        SECCOMP_TESTS,
    ),
    Mutant(
        "seccomp: the x32 ABI is allowed",
        "host/seccomp.py",
        'emit(_JGE_K, _X32_SYSCALL_BIT, "kill", None)',
        "emit(_JGE_K, _X32_SYSCALL_BIT, None, None)",
        SECCOMP_TESTS,
    ),
    Mutant(
        "seccomp: clone3 is allowed",
        "host/seccomp.py",
        'emit(_JEQ_K, _number("clone3", machine) or 0, "enosys", None)',
        'emit(_JEQ_K, _number("clone3", machine) or 0, "allow", None)',
        SECCOMP_TESTS,
    ),
    Mutant(
        "seccomp: clone with namespace flags is allowed",
        "host/seccomp.py",
        'emit(_JSET_K, _CLONE_NAMESPACES, "eperm", "allow")',
        'emit(_JSET_K, _CLONE_NAMESPACES, "allow", "allow")',
        SECCOMP_TESTS,
    ),
    Mutant(
        "seccomp: CLONE_NEWIPC is not a namespace flag",
        "host/seccomp.py",
        "    | 0x08000000  # CLONE_NEWIPC",
        "    | 0  # CLONE_NEWIPC",
        SECCOMP_TESTS,
    ),
    Mutant(
        "seccomp: TIOCSTI is allowed",
        "host/seccomp.py",
        'emit(_JEQ_K, _TIOCSTI, "eperm", None)',
        "emit(_JEQ_K, _TIOCSTI, None, None)",
        SECCOMP_TESTS,
    ),
    Mutant(
        "seccomp: any netlink protocol is allowed",
        "host/seccomp.py",
        'emit(_JEQ_K, _NETLINK_ROUTE, "allow", "eprotonosupport")',
        'emit(_JEQ_K, _NETLINK_ROUTE, "allow", "allow")',
        SECCOMP_TESTS,
    ),
    Mutant(
        "requestState: expiry is ignored",
        "host/rounds.py",
        'if type(payload.get("exp")) is not int or payload["exp"] < time.time():',
        'if type(payload.get("exp")) is not int:',
        ("tests/test_rounds_state.py",),
    ),
    Mutant(
        "requestState: lives 1,000 times longer",
        "host/rounds.py",
        "body = dict(payload, exp=int(time.time() + self.lifetime))",
        "body = dict(payload, exp=int(time.time() + self.lifetime * 1000))",
        ("tests/test_rounds_state.py",),
    ),
    Mutant(
        "commands: a timeout fires at four times its limit",
        "host/commands.py",
        "with anyio.move_on_after(timeout) as scope:",
        "with anyio.move_on_after(timeout * 4) as scope:",
        ("tests/test_commands.py::test_the_timeout_fires_at_its_limit_not_later",),
    ),
    Mutant(
        "sandbox: no IPC namespace",
        "host/sandbox.py",
        '            "--unshare-ipc",\n',
        '            "--die-with-parent",\n',
        ("tests/test_sandbox_namespaces.py",),
    ),
    Mutant(
        "sandbox: no UTS namespace",
        "host/sandbox.py",
        '            "--unshare-uts",\n',
        '            "--die-with-parent",\n',
        ("tests/test_sandbox_namespaces.py",),
    ),
    Mutant(
        "paths: a sibling of the root with the root's name as prefix is inside",
        "host/paths.py",
        'return p == r or p.startswith(r.rstrip("/") + "/")',
        "return p == r or p.startswith(r)",
        (
            "tests/test_builtin_paths.py::test_a_sibling_whose_name_starts_with_the_roots_is_outside",
        ),
    ),
)


def _copy_tree(dest: Path) -> Path:
    """Copy the checkout's files to ``dest/tree`` and lay the package out in
    ``dest/pkgs``; returns the tree (where the tests run)."""
    files = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    tree = dest / "tree"
    for raw in files:
        if not raw:
            continue
        rel = raw.decode()
        src = REPO / rel
        if not src.is_file():
            continue
        top = rel.split("/", 1)[0]
        if top in PACKAGE_DIRS and "/" in rel:
            target = dest / "pkgs" / PACKAGE_DIRS[top] / rel.split("/", 1)[1]
        else:
            target = tree / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    return tree


def _make_venv(dest: Path) -> Path:
    """A virtual environment in ``dest/venv`` with a copy of this interpreter's
    dependencies (a sandboxed worker sees its interpreter's prefix, not this checkout's
    .venv) that imports ``toolwire`` from ``dest/pkgs``; returns its python."""
    venv = dest / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    # the host looks for ripgrep beside its interpreter
    for tool in ("rg",):
        found = Path(sys.executable).parent / tool
        if found.exists():
            shutil.copy2(found.resolve(), venv / "bin" / tool)
    purelib = Path(sysconfig.get_paths(vars={"base": str(venv)})["purelib"])
    here = Path(sysconfig.get_paths()["purelib"])
    for entry in here.iterdir():
        if entry.name.startswith(("__editable__", "toolwire-", "_toolwire", "__pycache__")):
            continue
        if entry.is_dir():
            shutil.copytree(entry, purelib / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, purelib / entry.name)
    (purelib / "_toolwire_mutants.pth").write_text(f"{dest / 'pkgs'}\n")
    probe = subprocess.run(
        [str(py), "-c", "import toolwire.host, pytest; print(toolwire.host.__file__)"],
        cwd=dest,
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0 or not probe.stdout.startswith(str(dest / "pkgs")):
        raise SystemExit(
            f"mutants: the copy's python does not import toolwire from the copy: "
            f"{probe.stdout.strip()} {probe.stderr.strip()[-2000:]}"
        )
    return py


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    # No bytecode caches: a mutant and its restored original may share a size and a
    # second of mtime, which is all a .pyc is checked against.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _run(py: Path, tree: Path, tests: tuple[str, ...]) -> tuple[bool, str]:
    """Run ``tests`` in the copy; (passed, the last lines of pytest's output)."""
    proc = subprocess.run(
        [str(py), "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
        cwd=tree,
        env=_env(),
        capture_output=True,
        text=True,
    )
    tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-12:])
    return proc.returncode == 0, tail


def main(argv: list[str] | None = None) -> int:
    """Run the mutants; 0 when every one was caught."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--only", help="run the mutant of this name only")
    parser.add_argument("--list", action="store_true", help="print the mutants and exit")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTANTS if args.only in (None, m.name)]
    if args.list:
        for m in MUTANTS:
            print(f"{m.name}  [{m.path}]  -> {' '.join(m.tests)}")
        return 0
    if not chosen:
        raise SystemExit(f"mutants: no mutant named {args.only!r} (see --list)")
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="toolwire-mutants.") as tmp:
        dest = Path(tmp)
        tree = _copy_tree(dest)
        py = _make_venv(dest)
        for tests in sorted({m.tests for m in chosen}):
            ok, tail = _run(py, tree, tests)
            print(f"baseline {' '.join(tests)}: {'green' if ok else 'RED'}", flush=True)
            if not ok:
                failures.append(f"baseline of {' '.join(tests)} is red:\n{tail}")
        if failures:
            print("\n".join(failures))
            return 1
        for m in chosen:
            top, rest = m.path.split("/", 1)
            target = (
                dest / "pkgs" / PACKAGE_DIRS[top] / rest if top in PACKAGE_DIRS else tree / m.path
            )
            original = target.read_text()
            if original.count(m.old) != 1:
                failures.append(
                    f"{m.name}: its text occurs {original.count(m.old)} times in {m.path}"
                )
                continue
            target.write_text(original.replace(m.old, m.new))
            try:
                ok, tail = _run(py, tree, m.tests)
            finally:
                target.write_text(original)
            print(f"{'SURVIVED' if ok else 'caught  '}  {m.name}", flush=True)
            if ok:
                failures.append(f"{m.name}: {' '.join(m.tests)} stayed green")
    print(f"mutants: {len(chosen) - len(failures)} of {len(chosen)} caught")
    for f in failures:
        print(f"  {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

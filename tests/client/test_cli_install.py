"""``toolwire demo`` and ``--version`` after a plain (not editable) install from a wheel.

The demo plays a shipped example project (``examples/`` in the checkout) and runs that
project's tests with pytest: both must come with a ``pip install``. The wheel is built
from a copy of the sources (so the checkout gets no ``build/``) and installed into a
fresh virtual environment that borrows this one's dependencies through a ``.pth`` file
(the dependencies' own ``.pth`` files, such as an editable toolwire's finder, are not
processed there, so the toolwire imported is the wheel's).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import zipfile
from importlib.metadata import version
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
IGNORE = shutil.ignore_patterns(
    ".venv", "build", ".git", "node_modules", "*.egg-info", "__pycache__", ".*_cache"
)


def build_wheel(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=IGNORE)
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(src)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = dist.glob("toolwire-*.whl")
    return wheel


def test_a_plain_install_ships_the_demo_and_its_test_runner(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        metadata = next(z.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
    # Every source module is in the wheel (a package missing from pyproject's list is not).
    for top, where in (("toolwire", "toolwire/"), ("host", "toolwire/host/"),
                       ("client", "toolwire/client/")):  # fmt: skip
        for source in (REPO / top).rglob("*.py"):
            shipped = where + source.relative_to(REPO / top).as_posix()
            assert shipped in names, f"{shipped} is not in the wheel"
    demo = "toolwire/client/demo_project/"
    for part in ("invoice.session.json", "invoice/invoice.py", "invoice/test_invoice.py"):
        assert demo + part in names, f"{part} is not in the wheel"
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    # The demo runs the example's tests with `python -m pytest` in the installed venv.
    assert any(line.split()[1].startswith("pytest") and "extra" not in line for line in requires)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    Path(purelib, "borrowed_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    probe = (
        "import toolwire.client.demo as d; p = d.find_example(); plan = d.load_plan(p); "
        "print(d.__file__); print(p); print(sorted(f.name for f in plan.project.iterdir()))"
    )
    out = subprocess.run([python, "-c", probe], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    module, plan, files = out.stdout.splitlines()
    assert module.startswith(str(venv)) and plan.startswith(str(venv)), out.stdout
    assert "invoice.py" in files and "test_invoice.py" in files
    shown = subprocess.run(
        [venv / "bin" / "toolwire", "--version"], capture_output=True, text=True, cwd=tmp_path
    )
    assert shown.stdout == f"toolwire {version('toolwire')}\n", shown.stderr

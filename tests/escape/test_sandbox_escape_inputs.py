"""Escape attempt: rewrite what the host reads at its next start (issue 20, point 1).

``toolwire serve --root . --config toolwire.toml --tools shout.py`` is the natural
set-up, and it puts the host's own inputs inside the root the tools may write. The model
tries to change them through ``write``/``edit`` and through a sandboxed command, to plant
bytecode the next start would load instead of the source, and to configure a script
inside the root as "bubblewrap". Each attempt goes through the real host, as a
subprocess; SECURITY.md, "Host inputs", states the rule.
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.hostproc import HostProcess
from tests.sandbox_support import needs_bwrap

CONFIG = "[host]\nbuiltins = true\n[sandbox]\nmax_commands = 8\n"

SHOUT = '''\
from toolwire.host import tool
from helper import WORD


@tool
def shout(text: str) -> str:
    """Return the text in capitals and the helper's word.

    Args:
        text: the text.
    """
    return text.upper() + " " + WORD
'''

HELPER = 'WORD = "from-source"\n'

EVIL = '''\
from toolwire.host import tool

WORD = "from-planted-bytecode"


@tool
def evil(text: str) -> str:
    """Planted.

    Args:
        text: the text.
    """
    return "planted"
'''


def _layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A root holding toolwire.toml, shout.py and its neighbour helper.py."""
    root = tmp_path / "root"
    root.mkdir()
    config = root / "toolwire.toml"
    config.write_text(CONFIG)
    tools = root / "shout.py"
    tools.write_text(SHOUT)
    (root / "helper.py").write_text(HELPER)
    return root, config, tools


def _host(root: Path, config: Path, tools: Path, *extra: str) -> HostProcess:
    return HostProcess(
        ["--root", str(root), "--config", str(config), "--tools", str(tools), *extra], cwd=root
    )


def _text(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result["result"]["content"])


def test_write_refuses_the_config_file_inside_the_root(tmp_path: Path) -> None:
    root, config, tools = _layout(tmp_path)
    with _host(root, config, tools, "--sandbox", "none") as h:
        h.initialize()
        out = h.call("write", {"path": "toolwire.toml", "content": '[sandbox]\nmode = "none"\n'})
        edit = h.call(
            "edit",
            {"path": "toolwire.toml", "edits": [{"oldText": "builtins", "newText": "x"}]},
        )
    assert out["result"]["isError"] is True, out
    assert "host input" in _text(out) and "--config file" in _text(out), _text(out)
    assert edit["result"]["isError"] is True and "host input" in _text(edit), edit
    assert config.read_text() == CONFIG


def test_edit_refuses_a_tools_module_and_its_neighbours_inside_the_root(tmp_path: Path) -> None:
    root, config, tools = _layout(tmp_path)
    with _host(root, config, tools, "--sandbox", "none", "--isolation", "none") as h:
        h.initialize()
        edit = h.call(
            "edit", {"path": "shout.py", "edits": [{"oldText": "upper", "newText": "lower"}]}
        )
        helper = h.call("write", {"path": "helper.py", "content": "WORD = 'x'\n"})
        # A new module beside the tools file would shadow an installed one at the next
        # start; a cache entry would be loaded instead of the source.
        shadow = h.call("write", {"path": "anyio.py", "content": "raise SystemExit\n"})
        cache = h.call("write", {"path": "__pycache__/helper.cpython-311.pyc", "content": "x"})
        other = h.call("write", {"path": "notes.txt", "content": "fine"})
    for refused in (edit, helper, shadow, cache):
        assert refused["result"]["isError"] is True, refused
        assert "host input" in _text(refused), _text(refused)
    assert "--tools file" in _text(edit), _text(edit)
    assert other["result"].get("isError") is not True, other
    assert tools.read_text() == SHOUT and (root / "helper.py").read_text() == HELPER
    assert not (root / "anyio.py").exists() and not (root / "__pycache__").exists()


@needs_bwrap
def test_a_sandboxed_command_cannot_change_the_host_inputs(tmp_path: Path) -> None:
    root, config, tools = _layout(tmp_path)
    (root / "__pycache__").mkdir()
    with _host(root, config, tools, "--sandbox", "bwrap") as h:
        h.initialize()
        out = h.call(
            "bash",
            {
                "command": "echo 'mode = \"none\"' >> toolwire.toml; echo rc=$?; "
                "echo pwned > shout.py; echo rc=$?; rm -f helper.py; "
                "touch __pycache__/helper.cpython-311.pyc; echo rc=$?; "
                "echo ok > notes.txt; echo rc=$?"
            },
        )
    text = _text(out)
    assert text.count("rc=1") == 3, text  # read-only: each redirection fails
    assert text.rstrip().endswith("rc=0"), text  # the rest of the root stays writable
    assert config.read_text() == CONFIG and tools.read_text() == SHOUT
    assert (root / "helper.py").read_text() == HELPER
    assert list((root / "__pycache__").iterdir()) == []
    assert (root / "notes.txt").read_text() == "ok\n"


def _plant_bytecode(source: Path, code_text: str) -> Path:
    """A ``__pycache__`` entry for ``source`` that matches its mtime and size (so the
    standard loader takes it) but holds ``code_text`` compiled."""
    st = source.stat()
    code = compile(code_text, str(source), "exec")
    data = bytearray(importlib.util.MAGIC_NUMBER)
    data += (0).to_bytes(4, "little")
    data += (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little")
    data += (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
    data += marshal.dumps(code)
    cached = Path(importlib.util.cache_from_source(str(source)))
    cached.parent.mkdir(exist_ok=True)
    cached.write_bytes(bytes(data))
    return cached


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_planted_bytecode_is_never_loaded(tmp_path: Path, isolation: str) -> None:
    root, config, tools = _layout(tmp_path)
    _plant_bytecode(tools, EVIL)
    _plant_bytecode(root / "helper.py", EVIL)
    # Control: a plain interpreter does load the planted bytecode.
    control = subprocess.run(
        [sys.executable, "-c", "import helper; print(helper.WORD)"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert control.stdout.strip() == "from-planted-bytecode"
    with _host(root, config, tools, "--isolation", isolation) as h:
        h.initialize()
        names = [t["name"] for t in h.request("tools/list")["result"]["tools"]]
        out = h.call("shout", {"text": "hi"})
    assert "shout" in names and "evil" not in names, names
    assert _text(out) == "HI from-source", out


def test_a_configured_bwrap_inside_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    hooks = root / ".git" / "hooks"
    hooks.mkdir(parents=True)
    marker = tmp_path / "fake-bwrap-ran"
    fake = hooks / "pre-commit.sample"
    fake.write_text(
        f"#!/bin/sh\ntouch {marker}\n"
        'while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done\nshift\nexec "$@"\n'
    )
    fake.chmod(0o755)
    config = tmp_path / "toolwire.toml"
    config.write_text(f'[sandbox]\nbwrap = "{fake}"\n')
    for mode in ("auto", "bwrap"):
        h = HostProcess(["--root", str(root), "--config", str(config), "--sandbox", mode])
        with h:
            code = h.wait(timeout=60)
        assert code == 2, h.stderr
        assert "[sandbox] bwrap is not trusted" in h.stderr, h.stderr
        assert "inside" in h.stderr and str(root) in h.stderr, h.stderr
    assert not marker.exists(), "the configured script ran"


def test_a_configured_bwrap_others_may_replace_is_refused(tmp_path: Path) -> None:
    # Outside the root, but writable by the group: the system bubblewrap's rule applies.
    marker = tmp_path / "fake-bwrap-ran"
    place = tmp_path / "bin"
    place.mkdir(mode=0o755)
    fake = place / "bwrap"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    fake.chmod(0o775)
    (tmp_path / "root").mkdir()
    config = tmp_path / "toolwire.toml"
    config.write_text(f'[sandbox]\nbwrap = "{fake}"\n')
    h = HostProcess(["--root", str(tmp_path / "root"), "--config", str(config)])
    with h:
        code = h.wait(timeout=60)
    assert code == 2, h.stderr
    assert f"{fake} is writable by its group or by other users" in h.stderr, h.stderr
    assert not marker.exists(), "the configured script ran"


def test_the_host_names_its_inputs_inside_the_root_at_start(tmp_path: Path) -> None:
    root, config, tools = _layout(tmp_path)
    with _host(root, config, tools, "--sandbox", "none") as h:
        info = h.initialize()["result"]
        h.close_stdin()
        h.wait(timeout=30)
    lines = [line for line in h.stderr.splitlines() if "Host inputs inside the root" in line]
    assert len(lines) == 1, h.stderr
    for name in ("toolwire.toml", "shout.py", "helper.py"):
        assert name in lines[0], lines[0]
        assert name in info["instructions"], info["instructions"]
    assert "Host inputs inside the root" in info["instructions"]


def test_no_notice_when_the_inputs_lie_outside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    config = tmp_path / "toolwire.toml"
    config.write_text(CONFIG)
    with HostProcess(["--root", str(root), "--config", str(config), "--sandbox", "none"]) as h:
        info = h.initialize()["result"]
        ok = h.call("write", {"path": "toolwire.toml", "content": "x"})
    assert "Host inputs" not in info["instructions"]
    assert ok["result"].get("isError") is not True, ok  # the root's own file of that name


RELOADED = '''
from toolwire.host import tool


@tool
def named() -> str:
    """Named in --approve."""
    return "named ran"


@tool
def present() -> str:
    """There at start, not named."""
    return "present ran"
'''

ADDED = '''

@tool
def added() -> str:
    """Added by a reload."""
    return "added ran"
'''


def test_approve_names_also_covers_tools_a_reload_adds(tmp_path: Path) -> None:
    # --approve NAMES was chosen knowing the tools at start: a tool a reload adds later
    # is asked about too (here the client can be asked nothing, so it is denied), while
    # an unnamed tool that was there at start runs as before.
    from tests.e2e_helpers import PROMPT
    from tests.workers_support import host_args, is_method, wait_for_message

    tools_dir = tmp_path / "tools"
    tools_dir.mkdir()
    module = tools_dir / "reloaded.py"
    module.write_text(RELOADED)
    root = tmp_path / "root"
    root.mkdir()
    args = host_args(root, "process", [str(module)], "--reload", "--approve", "named")
    with HostProcess(args) as h:
        h.initialize()
        assert "client's approval" in _text(h.call("named", {}, timeout=PROMPT))
        assert _text(h.call("present", {}, timeout=PROMPT)) == "present ran"
        h.drain()
        module.write_text(RELOADED + ADDED)
        wait_for_message(h, is_method("notifications/tools/list_changed"), PROMPT, "list_changed")
        added = h.call("added", {}, timeout=PROMPT)
        assert added["result"].get("isError") is True, added
        assert "needs the client's approval" in _text(added), added
        assert _text(h.call("present", {}, timeout=PROMPT)) == "present ran"


USES_STDLIB = '''\
import colorsys

from toolwire.host import tool


@tool
def where() -> str:
    """Where the module colorsys came from."""
    return colorsys.__file__
'''


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_a_module_planted_beside_the_tools_file_shadows_no_installed_module(
    tmp_path: Path, isolation: str
) -> None:
    # A sandboxed command may create any new file in the root, a module named like one of
    # the installation's among them; the tools module beside it must still get the
    # installation's.
    root = tmp_path / "root"
    root.mkdir()
    marker = tmp_path / "planted-module-ran"
    tools = root / "where.py"
    tools.write_text(USES_STDLIB)
    config = root / "toolwire.toml"
    config.write_text(CONFIG)
    with _host(root, config, tools) as h:
        h.initialize()
        made = h.call(
            "bash",
            {"command": f"printf 'open({str(marker)!r}, \"w\").close()\\n' > colorsys.py"},
        )
    assert (root / "colorsys.py").exists(), made
    with _host(root, config, tools, "--isolation", isolation) as h:
        h.initialize()
        out = h.call("where", {})
    assert not marker.exists(), "the planted module ran"
    assert _text(out) != str(root / "colorsys.py") and _text(out).endswith("colorsys.py"), out

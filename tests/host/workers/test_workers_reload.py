"""End to end: ``--reload`` swaps in a new generation of workers when a tool file changes.

The tool module is written into the test's directory, served with ``--reload``, then
edited: a tool is added (the client hears ``notifications/tools/list_changed`` and
lists it), a call in flight finishes on the old generation, and a broken edit is
reported as a log message while the old tools keep working.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from toolwire.host.workers.pool import RELOAD_TIMEOUT

from tests.e2e_helpers import PROMPT, wait_until
from tests.hostproc import HostProcess
from tests.workers_support import (
    call_msg,
    host_args,
    is_method,
    is_progress,
    text_of_result,
    wait_for_message,
)

FIRST = '''
from toolwire.host import ToolContext, tool

import anyio


@tool
async def first() -> str:
    """The first tool."""
    return "first VERSION"


@tool
async def slow(seconds: float, ctx: ToolContext) -> str:
    """Report progress 1, sleep, then say which version ran."""
    await ctx.report_progress(1, None, "sleeping")
    await anyio.sleep(seconds)
    return "slow VERSION"
'''

SECOND = '''

@tool
async def second() -> str:
    """A tool added while the host runs."""
    return "second VERSION"
'''


def _source(version: str, *, with_second: bool = False) -> str:
    return (FIRST + (SECOND if with_second else "")).replace("VERSION", version)


def _serve(tmp_path: Path, module: Path, *extra: str) -> HostProcess:
    h = HostProcess(host_args(tmp_path, "process", [str(module)], *extra))
    assert "result" in h.initialize(), h.stderr
    return h


def _is_error_log(m: Any) -> bool:
    return (
        isinstance(m, dict)
        and m.get("method") == "notifications/message"
        and m["params"].get("level") == "error"
    )


def _names(h: HostProcess) -> set[str]:
    return {t["name"] for t in h.request("tools/list", timeout=PROMPT)["result"]["tools"]}


def _text(h: HostProcess, name: str) -> str:
    r = h.call(name, {}, timeout=PROMPT)["result"]
    assert "isError" not in r, r
    return text_of_result(r)


def test_an_edited_tool_file_is_served_without_a_restart(tmp_path: Path) -> None:
    module = tmp_path / "reload_me.py"
    module.write_text(_source("v1"))
    with _serve(tmp_path, module, "--reload") as h:
        assert _names(h) == {"first", "slow"}
        assert _text(h, "first") == "first v1"

        h.drain()
        module.write_text(_source("v2", with_second=True))
        wait_for_message(h, is_method("notifications/tools/list_changed"), PROMPT, "list_changed")
        assert _names(h) == {"first", "slow", "second"}
        assert _text(h, "second") == "second v2"
        assert _text(h, "first") == "first v2"

        # a broken edit: said once as a log message; the last good generation stays
        h.drain()
        module.write_text(_source("v3", with_second=True) + "\ndef broken(:\n")
        note = wait_for_message(h, _is_error_log, PROMPT, "a log message about the broken file")
        assert note["params"]["level"] == "error", note
        said = str(note["params"]["data"])
        assert "SyntaxError" in said or "invalid syntax" in said, note
        assert _names(h) == {"first", "slow", "second"}
        assert _text(h, "first") == "first v2"
        assert _text(h, "second") == "second v2"
        assert h.request("ping")["result"] == {}
        assert [m for m in h.drain() if _is_error_log(m)] == []  # once, not in a loop
        wait_until(
            lambda: "reload_me" in h.stderr and ("Syntax" in h.stderr or "syntax" in h.stderr),
            what="the breakage on stderr",
        )

        h.drain()
        # fixed again, without the second tool: the next generation is served as it is
        module.write_text(_source("v4"))
        wait_for_message(h, is_method("notifications/tools/list_changed"), PROMPT, "list_changed")
        assert _text(h, "first") == "first v4"
        assert _names(h) == {"first", "slow"}
        gone = h.call("second", {}, timeout=PROMPT)
        assert "error" in gone or gone["result"].get("isError") is True, gone
        assert h.proc.poll() is None


def test_a_call_in_flight_finishes_on_the_old_generation(tmp_path: Path) -> None:
    module = tmp_path / "reload_me.py"
    module.write_text(_source("v1"))
    with _serve(tmp_path, module, "--reload") as h:
        h.send(call_msg("old", "slow", {"seconds": 3}, token="old"))
        wait_for_message(h, is_progress("old"), PROMPT, "progress of the slow call")
        module.write_text(_source("v2-new"))  # another size: see the test below
        wait_for_message(h, is_method("notifications/tools/list_changed"), PROMPT, "list_changed")
        assert _text(h, "first") == "first v2-new"
        r = h.recv_response("old", timeout=PROMPT)["result"]
        assert r == {"content": [{"type": "text", "text": "slow v1"}]}, r


def test_an_edit_of_the_same_size_in_the_same_second_is_served(tmp_path: Path) -> None:
    # Python's bytecode cache (__pycache__) trusts a module's size and its mtime in whole
    # seconds: a quick one-character edit must not bring back the old code. The mtimes
    # are set within one past second so the case does not depend on the clock.
    module = tmp_path / "reload_me.py"
    second = int(time.time()) - 10
    module.write_text(_source("v1"))
    os.utime(module, ns=(second * 10**9, second * 10**9 + 1000))
    with _serve(tmp_path, module, "--reload") as h:
        assert _text(h, "first") == "first v1"
        h.drain()
        module.write_text(_source("v2"))
        os.utime(module, ns=(second * 10**9, second * 10**9 + 500_000_000))
        wait_for_message(h, is_method("notifications/tools/list_changed"), PROMPT, "list_changed")
        assert _text(h, "first") == "first v2"


def test_control_without_reload_an_edit_changes_nothing(tmp_path: Path) -> None:
    module = tmp_path / "reload_me.py"
    module.write_text(_source("v1"))
    with _serve(tmp_path, module) as h:
        assert _text(h, "first") == "first v1"
        module.write_text(_source("v2", with_second=True))
        with pytest.raises(AssertionError, match="no list_changed"):
            wait_for_message(h, is_method("notifications/tools/list_changed"), 3, "list_changed")
        assert _names(h) == {"first", "slow"}
        assert _text(h, "first") == "first v1"


HANGING = """
import pathlib
import time

pathlib.Path("hanging.started").write_text("importing")
while True:
    time.sleep(0.05)
"""


def _says(m: Any, *words: str) -> bool:
    return _is_error_log(m) and all(w in str(m["params"]["data"]) for w in words)


def test_a_hanging_import_does_not_hold_a_later_save(tmp_path: Path) -> None:
    module = tmp_path / "reload_me.py"
    module.write_text(_source("v1"))
    with _serve(tmp_path, module, "--reload") as h:
        assert _text(h, "first") == "first v1"
        h.drain()
        module.write_text(HANGING)
        # the hanging generation is importing (the event it reports), then the fix lands
        wait_until(lambda: (tmp_path / "hanging.started").exists(), PROMPT, "the hanging import")
        assert _text(h, "first") == "first v1"  # the previous generation serves meanwhile
        module.write_text(_source("v2", with_second=True))
        wait_for_message(h, is_method("notifications/tools/list_changed"), PROMPT, "list_changed")
        assert _text(h, "first") == "first v2"
        assert _names(h) == {"first", "slow", "second"}


def test_a_hanging_import_is_killed_after_the_deadline(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # The deadline is configured ([workers] reload_timeout) shorter than its default
    # (RELOAD_TIMEOUT), which test_the_reload_deadline_is_read_from_the_config checks.
    deadline = 3.0
    config = tmp_path_factory.mktemp("config") / "toolwire.toml"
    config.write_text(f"[workers]\nreload_timeout = {deadline}\n")
    module = tmp_path / "reload_me.py"
    module.write_text(_source("v1"))
    with _serve(tmp_path, module, "--reload", "--config", str(config)) as h:
        h.drain()
        began = time.monotonic()  # the deadline starts after the save
        module.write_text(HANGING)
        note = wait_for_message(
            h,
            lambda m: _says(m, "reload_me", "did not load within"),
            deadline + PROMPT,
            "a log message about the hanging import",
        )
        assert time.monotonic() - began >= deadline  # not cut short
        assert f"did not load within {deadline:g} s" in str(note["params"]["data"]), note
        assert "previous version keeps serving" in str(note["params"]["data"]), note
        assert _text(h, "first") == "first v1"
        module.write_text(_source("v3"))
        wait_for_message(h, is_method("notifications/tools/list_changed"), PROMPT, "list_changed")
        assert _text(h, "first") == "first v3"


def test_the_reload_deadline_is_read_from_the_config(tmp_path: Path) -> None:
    from toolwire.host.serve.options import build_parser, config_from_args

    def reload_timeout(*args: str) -> float:
        return config_from_args(
            build_parser().parse_args(["--root", str(tmp_path), *args])
        ).reload_timeout

    assert reload_timeout() == RELOAD_TIMEOUT == 10.0
    config = tmp_path / "toolwire.toml"
    config.write_text("[workers]\nreload_timeout = 45.5\n")
    assert reload_timeout("--config", str(config)) == 45.5


def test_an_empty_save_keeps_the_previous_tools(tmp_path: Path) -> None:
    module = tmp_path / "reload_me.py"
    module.write_text(_source("v1"))
    with _serve(tmp_path, module, "--reload") as h:
        h.drain()
        module.write_text("")
        note = wait_for_message(
            h, lambda m: _says(m, "reload_me", "no tools"), PROMPT, "a log message"
        )
        assert "previous version keeps serving" in str(note["params"]["data"]), note
        assert _names(h) == {"first", "slow"}
        assert _text(h, "first") == "first v1"
        module.write_text(_source("v2"))
        wait_for_message(h, is_method("notifications/tools/list_changed"), PROMPT, "list_changed")
        assert _text(h, "first") == "first v2"


def test_a_module_empty_from_the_start_gets_its_tools(tmp_path: Path) -> None:
    module = tmp_path / "reload_me.py"
    module.write_text("")
    with _serve(tmp_path, module, "--reload") as h:
        assert _names(h) == set()
        module.write_text(_source("v1"))
        wait_for_message(h, is_method("notifications/tools/list_changed"), PROMPT, "list_changed")
        assert _text(h, "first") == "first v1"

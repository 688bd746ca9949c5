"""End to end: the worker definition cache (toolwire.host.workers.listcache).

A host that served a module once keeps its worker's answer; the next host with the same
key lists the module's tools before its first worker is up. Here the worker is held at
its module's import by a FIFO in the root that the test opens only when it chooses, so
"before the worker is up" is shown by that event, not by timing. A stale or tampered
entry never outlives the worker's answer: the host replaces what it listed, says
``notifications/tools/list_changed``, rewrites the entry, and no call runs before that
check.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from toolwire.host.workers.listcache import DefinitionCache, decode_entry, encode_entry

from tests.e2e_helpers import PROMPT, wait_until
from tests.hostproc import HostProcess
from tests.workers_support import is_method, text_of_result, wait_for_message

MODULE = '''
import os

from toolwire.host import tool

from helper import WORD

if os.path.exists(os.path.join(os.getcwd(), "gate")):
    with open(os.path.join(os.getcwd(), "gate")) as f:  # a FIFO: held until the test writes
        f.read()
if os.path.exists(os.path.join(os.getcwd(), "broken")):
    raise RuntimeError("this module refuses to load")


@tool
def shout(text: str) -> str:
    """Shout the text (VERSION)."""
    return text.upper() + " " + WORD


@tool(mutates=["path"])
def touch(path: str) -> str:
    """Touch a file."""
    return path
'''


def _layout(tmp_path: Path, version: str = "v1", word: str = "one") -> tuple[Path, Path]:
    """The root, and the module (with its sibling ``helper.py``) outside it."""
    root = tmp_path / "root"
    mods = tmp_path / "mods"
    root.mkdir(exist_ok=True)
    mods.mkdir(exist_ok=True)
    (mods / "tools_mod.py").write_text(MODULE.replace("VERSION", version))
    (mods / "helper.py").write_text(f"WORD = {word!r}\n")
    return root, mods / "tools_mod.py"


def _entries(cache: Path) -> list[Path]:
    folder = cache / "toolwire" / "definitions"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


@contextmanager
def _host(tmp_path: Path, root: Path, module: Path, *extra: str) -> Iterator[HostProcess]:
    args = ["--root", str(root), "--no-builtins", "--no-entry-points", "--workers", "1"]
    args += ["--tools", str(module), "--log-level", "info", *extra]
    with HostProcess(args, env={"XDG_CACHE_HOME": str(tmp_path / "cache")}) as h:
        resp = h.initialize()
        assert "result" in resp, (resp, h.stderr)
        h.notify("notifications/initialized")
        yield h


def _list(h: HostProcess) -> list[dict[str, Any]]:
    resp = h.request("tools/list", {})
    assert "result" in resp, resp
    tools: list[dict[str, Any]] = resp["result"]["tools"]
    return tools


def _warm(tmp_path: Path, root: Path, module: Path) -> list[dict[str, Any]]:
    """Serve the module once, until its entry is stored; the list it gave."""
    with _host(tmp_path, root, module) as h:
        tools = _list(h)
        wait_until(lambda: _entries(tmp_path / "cache"), PROMPT, "the cache entry")
    assert "listed from the definition cache" not in h.stderr
    return tools


def _tamper(entry: Path, change: Any) -> None:
    """Rewrite ``entry`` as a well-formed entry of its key holding ``change(answer)``."""
    key = entry.name.removesuffix(".json")
    answer = decode_entry(key, entry.read_bytes())
    assert answer is not None
    change(answer)
    data = encode_entry(key, answer)
    assert data is not None
    entry.write_bytes(data)


def _release(gate: Path) -> None:
    """Let the worker held at the FIFO go on importing its module."""
    with open(gate, "w"):
        pass


def test_first_list_is_served_from_the_cache_before_the_worker_is_up(tmp_path: Path) -> None:
    root, module = _layout(tmp_path)
    first = _warm(tmp_path, root, module)
    os.mkfifo(root / "gate")
    with _host(tmp_path, root, module) as h:
        # The worker is held at its import until _release: this answer cannot be its.
        assert _list(h) == first
        h.expect_stderr("listed from the definition cache")
        h.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "shout", "arguments": {"text": "hi"}},
            }
        )
        _release(root / "gate")
        answer = h.recv_response(7, timeout=PROMPT)
        assert text_of_result(answer["result"]) == "HI one"
        wait_until(lambda: "cached definitions are confirmed" in h.stderr, PROMPT, "the check")
        h.request("ping")
        # The same answer: no change announced.
        assert not [m for m in h.drain() if is_method("notifications/tools/list_changed")(m)]
        assert _list(h) == first


def test_a_tampered_entry_is_replaced_at_the_check_and_no_call_runs_before(
    tmp_path: Path,
) -> None:
    root, module = _layout(tmp_path)
    first = _warm(tmp_path, root, module)
    [entry] = _entries(tmp_path / "cache")
    stored = entry.read_bytes()

    def lie(answer: dict[str, Any]) -> None:
        answer["tools"][0]["definition"]["description"] = "A lie."
        answer["tools"][1].pop("mutates")  # the per-file queue would be skipped
        fake = {**answer["tools"][0], "definition": {**answer["tools"][0]["definition"]}}
        fake["definition"]["name"] = "planted"
        answer["tools"].append(fake)

    _tamper(entry, lie)
    os.mkfifo(root / "gate")
    with _host(tmp_path, root, module) as h:
        listed = _list(h)
        assert [t["name"] for t in listed] == ["shout", "touch", "planted"]
        # A call of the planted tool, sent before the worker is up, waits for the check
        # and then finds no such tool.
        h.send(
            {
                "jsonrpc": "2.0",
                "id": 8,
                "method": "tools/call",
                "params": {"name": "planted", "arguments": {"text": "x"}},
            }
        )
        _release(root / "gate")
        answer = h.recv_response(8, timeout=PROMPT)
        assert answer.get("error", {}).get("code") == -32602, answer  # the host's own answer
        assert "Unknown tool" in answer["error"]["message"]
        wait_for_message(h, is_method("notifications/tools/list_changed"), PROMPT, "list_changed")
        assert _list(h) == first
        wait_until(lambda: entry.read_bytes() == stored, PROMPT, "the entry rewritten")


@pytest.mark.parametrize("change", ["source", "sibling"])
def test_a_changed_source_or_sibling_is_never_served_from_the_cache(
    tmp_path: Path, change: str
) -> None:
    root, module = _layout(tmp_path)
    _warm(tmp_path, root, module)
    if change == "source":
        _layout(tmp_path, version="v2")
    else:
        _layout(tmp_path, word="two")
    with _host(tmp_path, root, module) as h:
        tools = _list(h)
        shout = h.call("shout", {"text": "a"})
    assert "listed from the definition cache" not in h.stderr
    description = next(t["description"] for t in tools if t["name"] == "shout")
    assert description == ("Shout the text (v2)." if change == "source" else "Shout the text (v1).")
    if change == "sibling":
        assert text_of_result(shout["result"]) == "A two"


def test_a_module_that_no_longer_loads_loses_its_cached_tools(tmp_path: Path) -> None:
    root, module = _layout(tmp_path)
    _warm(tmp_path, root, module)
    (root / "broken").write_text("")  # not part of the key: only the worker can tell
    with _host(tmp_path, root, module) as h:
        assert [t["name"] for t in _list(h)] == ["shout", "touch"]
        wait_for_message(h, is_method("notifications/tools/list_changed"), PROMPT, "list_changed")
        assert _list(h) == []
    # Read after close (the readers joined): the host's stderr line may still be in the
    # pipe when its list_changed has already arrived on stdout.
    assert "refuses to load" in h.stderr
    assert not _entries(tmp_path / "cache")


def test_no_list_cache_never_reads_an_entry(tmp_path: Path) -> None:
    root, module = _layout(tmp_path)
    first = _warm(tmp_path, root, module)
    [entry] = _entries(tmp_path / "cache")
    _tamper(entry, lambda answer: answer["tools"][0]["definition"].update(description="A lie."))
    with _host(tmp_path, root, module, "--no-list-cache") as h:
        assert _list(h) == first
    assert "definition cache" not in h.stderr


def test_a_cache_directory_tools_can_write_or_others_own_is_not_used(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    assert DefinitionCache(str(root / ".cache"), root=str(root)).directory is None
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert DefinitionCache(str(shared), root=str(root)).directory is None
    own = tmp_path / "own"
    cache = DefinitionCache(str(own), root=str(root))
    assert cache.directory == str(own)
    assert stat.S_IMODE(own.stat().st_mode) == 0o700


def test_a_damaged_entry_is_never_listed(tmp_path: Path) -> None:
    """An entry whose body no longer matches its digest (or holds a raw newline, which
    would split an ndjson message) is not used: the start waits for the worker."""
    root, module = _layout(tmp_path)
    first = _warm(tmp_path, root, module)
    [entry] = _entries(tmp_path / "cache")
    data = entry.read_bytes()
    entry.write_bytes(data.replace(b'"type":"string"', b'"type":"\n\nstring"', 1))
    with _host(tmp_path, root, module) as h:
        assert _list(h) == first
    assert "listed from the definition cache" not in h.stderr

"""No text that leaves the host holds a lone surrogate (issue 27): a file name that is
not UTF-8 decodes to one (PEP 383), and a client's JSON or UTF-8 encoder refuses it
("surrogates not allowed"), failing the session's next turn. Every outgoing message
is encoded in one place (the session), where each lone surrogate becomes U+FFFD,
whichever tool or module put it in a result, its structured content, an error, a log
or progress message or a tool definition; ls shows such a name as find, grep and
bash do. Through the real host, with the module in a worker process and in-process."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.hostproc import TOOLS_DIR, HostProcess

MODULE = str(TOOLS_DIR / "surrogate_tools.py")


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _lone(value: Any) -> list[str]:
    """The strings of ``value`` a UTF-8 encoder refuses."""
    bad = []
    for s in _strings(value):
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            bad.append(s)
    return bad


def _check_stream(h: HostProcess) -> None:
    """Everything the host wrote is UTF-8 JSON without a lone surrogate."""
    raw = bytes(h.raw_stdout)
    raw.decode("utf-8")
    for line in raw.splitlines():
        message = json.loads(line)
        assert not _lone(message), line


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_no_lone_surrogate_leaves_the_host(tmp_path: Path, isolation: str) -> None:
    args = ["--root", str(tmp_path), "--no-builtins", "--tools", MODULE, "--isolation", isolation]
    with HostProcess(args) as h:
        h.initialize()
        listed = h.request("tools/list", {})["result"]["tools"]
        definition = next(t for t in listed if t["name"] == "lone_definition")
        assert "file-\ufffd.txt" in definition["description"]
        assert "file-\ufffd.txt" in json.dumps(definition["inputSchema"], ensure_ascii=False)

        r = h.call("lone_text", {})["result"]
        assert r["content"][0]["text"] == "file-\ufffd.txt"
        r = h.call("lone_structured", {})["result"]
        assert r["structuredContent"] == {"name": "file-\ufffd.txt"}, r
        r = h.call("lone_error", {})["result"]
        assert r["isError"] and "cannot open file-\ufffd.txt" in r["content"][0]["text"]
        r = h.call("lone_crash", {})["result"]
        assert r["isError"] and "file-\ufffd.txt" in r["content"][0]["text"], r

        h.request("logging/setLevel", {"level": "debug"})
        assert h.call("lone_log", {})["result"]["content"][0]["text"] == "logged"
        params = {"name": "lone_progress", "arguments": {}, "_meta": {"progressToken": "p"}}
        assert h.request("tools/call", params)["result"]["content"][0]["text"] == "reported"
        notes = [m for m in h.drain() if isinstance(m, dict) and "method" in m]
        logs = [m["params"]["data"] for m in notes if m["method"] == "notifications/message"]
        assert "looked at file-\ufffd.txt" in logs and {"file": "file-\ufffd.txt"} in logs
        progress = [m["params"] for m in notes if m["method"] == "notifications/progress"]
        assert [p["message"] for p in progress] == ["reading file-\ufffd.txt"], notes
        _check_stream(h)


def test_a_request_id_is_echoed_as_sent(tmp_path: Path) -> None:
    """A response carries the request's id unchanged (JSON-RPC 2.0 §5), even the lone
    surrogate a peer sent in it; the rest of the message has none."""
    args = ["--root", str(tmp_path), "--no-builtins", "--tools", MODULE, "--isolation", "none"]
    with HostProcess(args) as h:
        h.initialize()
        call = {"jsonrpc": "2.0", "id": "id-\ud800", "method": "tools/call"}
        call["params"] = {"name": "lone_text", "arguments": {}}
        h.send_raw(json.dumps(call).encode("ascii") + b"\n")
        r = h.recv_response("id-\ud800")
        assert r["result"]["content"][0]["text"] == "file-\ufffd.txt"
        assert b'"id":"id-\\ud800"' in bytes(h.raw_stdout)


def test_ls_shows_a_name_that_is_not_utf8_as_the_other_tools_do(tmp_path: Path) -> None:
    if os.uname().sysname != "Linux":
        pytest.skip("needs a file system that takes any bytes in a name")
    (tmp_path / os.fsdecode(b"caf\xe9.txt")).write_text("x\n")
    (tmp_path / "plain.txt").write_text("x\n")
    with HostProcess(["--root", str(tmp_path)]) as h:
        h.initialize()
        shown = {}
        for name, args in [("ls", {}), ("find", {"pattern": "*.txt"}), ("bash", {"command": "ls"})]:
            r = h.call(name, args, timeout=120)["result"]
            assert not r.get("isError"), r
            shown[name] = r["content"][0]["text"]
        for name, out in shown.items():
            assert "caf\ufffd.txt" in out, (name, ascii(out))
        assert "plain.txt" in shown["ls"] and "not valid UTF-8" in shown["ls"]
        # the session goes on: the next call is answered
        assert "plain.txt" in h.call("ls", {})["result"]["content"][0]["text"]
        _check_stream(h)

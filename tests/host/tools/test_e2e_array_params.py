"""``"params": []`` is ``{}`` for every method; a non-empty array is -32602 (protocol.md §2).

Neovim's LSP client encodes an empty Lua table as ``[]``: ``tools/list`` and
``tools/call`` used to refuse it while ``ping`` took it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.hostproc import TOOLS_DIR
from tests.inproc import InProcHost, in_host

EMPTY_OK_METHODS = ["initialize", "ping", "tools/list", "logging/setLevel", "shutdown"]


def _host(tmp_path: Path, framing: str) -> InProcHost:
    return InProcHost(
        in_host(
            ["--root", str(tmp_path), "--no-builtins", "--tools", str(TOOLS_DIR / "basic_tools.py")]
        ),
        framing=framing,
    )


@pytest.mark.parametrize("framing", ["ndjson", "lsp"])
def test_empty_array_params_are_an_empty_object_for_every_method(
    tmp_path: Path, framing: str
) -> None:
    with _host(tmp_path, framing) as host:
        answers: dict[str, dict[str, Any]] = {}
        for method in EMPTY_OK_METHODS:
            if method == "shutdown":
                continue
            answers[method] = host.request(method, [])
        host.notify("notifications/initialized", [])
        answers["tools/call"] = host.request("tools/call", [])
        answers["tools/callBatch"] = host.request("tools/callBatch", [])
        answers["shutdown"] = host.request("shutdown", [])
        host.notify("exit", [])
        assert host.wait(timeout=30) == 0

    assert answers["initialize"]["result"]["serverInfo"]["name"] == "toolwire"
    assert answers["ping"]["result"] == {}
    assert [t["name"] for t in answers["tools/list"]["result"]["tools"]] == [
        "echo",
        "slow",
        "prog",
    ]
    # {} has no level: the same error as for params {}
    assert answers["logging/setLevel"]["error"]["code"] == -32602
    assert "log level" in answers["logging/setLevel"]["error"]["message"]
    # {} has no name: the same error as for params {}
    assert answers["tools/call"]["error"] == {
        "code": -32602,
        "message": "tools/call needs a string 'name'",
    }
    assert "params must be an object" not in str(answers["tools/callBatch"])
    assert answers["shutdown"]["result"] is None


@pytest.mark.parametrize("framing", ["ndjson", "lsp"])
@pytest.mark.parametrize(
    "method",
    ["initialize", "ping", "tools/list", "tools/call", "tools/callBatch", "logging/setLevel"],
)
def test_a_non_empty_array_is_refused_with_params_must_be_an_object(
    tmp_path: Path, framing: str, method: str
) -> None:
    with _host(tmp_path, framing) as host:
        answer = host.request(method, ["echo", {"text": "hi"}])
        assert answer["error"] == {"code": -32602, "message": "params must be an object"}
        # the host is fine afterwards, and an unknown method still says so first
        assert host.request("ping")["result"] == {}
        assert host.request("nope", [1])["error"]["code"] == -32601


def test_a_call_with_empty_array_arguments_wrapper_still_runs(tmp_path: Path) -> None:
    """The rule is about ``params`` only: arguments inside an object are unchanged."""
    with _host(tmp_path, "ndjson") as host:
        answer = host.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert answer["result"]["content"][0]["text"] == "hi"

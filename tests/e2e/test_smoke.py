"""First end-to-end check: the host answers the basic lifecycle and a call."""

from __future__ import annotations

from tests.hostproc import HostProcess


def test_initialize_list_call(host: HostProcess) -> None:
    init = host.initialize()
    assert init["result"]["protocolVersion"] == "2025-11-25"
    tools = host.request("tools/list")["result"]["tools"]
    assert "echo" in {t["name"] for t in tools}
    resp = host.call("echo", {"text": "hi"})
    assert resp["result"]["content"] == [{"type": "text", "text": "hi"}]

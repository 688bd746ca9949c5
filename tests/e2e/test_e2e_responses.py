"""Responses from the client to the host's own requests: the first answer settles a request,
a malformed one fails it at once, and the host never answers a response."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.host.calls.test_pipeline_e2e import APPROVAL_CAPS, _call, pipeline_host, texts
from tests.inproc import InProcHost


def _await_approval_request(h: InProcHost) -> dict[str, Any]:
    while True:
        m = h.recv(timeout=10)
        assert m is not None
        if m.get("method") == "toolwire/approve":
            return m  # type: ignore[no-any-return]


def _answers(*answers: dict[str, Any]) -> bytes:
    return b"".join(json.dumps(a).encode() + b"\n" for a in answers)


def test_the_first_answer_wins_even_when_a_second_arrives_in_the_same_write(tmp_path: Path) -> None:
    side = tmp_path / "side"
    side.mkdir()
    with pipeline_host(tmp_path, ["--approve", "touch"], APPROVAL_CAPS) as h:
        h.send(_call(1, "touch", {"name": "m", "side": str(side)}))
        ask = _await_approval_request(h)
        h.send_raw(
            _answers(
                {
                    "jsonrpc": "2.0",
                    "id": ask["id"],
                    "result": {"decision": "deny", "reason": "first"},
                },
                {"jsonrpc": "2.0", "id": ask["id"], "result": {"decision": "allow"}},
            )
        )
        r = h.recv_response(1)["result"]
        assert r["isError"] is True and "first" in texts(r)
        assert not (side / "m").exists()
        assert h.request("ping")["result"] == {}
        # nothing was sent back for the second (dropped) answer
        assert all(m.get("id") != ask["id"] for m in h.drain() if isinstance(m, dict))


def test_a_malformed_answer_denies_at_once_not_at_the_timeout(tmp_path: Path) -> None:
    side = tmp_path / "side"
    side.mkdir()
    args = ["--approve", "touch", "--approval-timeout", "60"]
    with pipeline_host(tmp_path, args, APPROVAL_CAPS) as h:
        h.send(_call(1, "touch", {"name": "m", "side": str(side)}))
        ask = _await_approval_request(h)
        h.send(
            {
                "jsonrpc": "2.0",
                "id": ask["id"],
                "result": {"decision": "allow"},
                "error": {"code": 1, "message": "both"},
            }
        )
        r = h.recv_response(1, timeout=10)["result"]
        assert r["isError"] is True and "Malformed response" in texts(r)
        assert not (side / "m").exists()


def test_the_host_never_answers_a_response(tmp_path: Path) -> None:
    with pipeline_host(tmp_path) as h:
        for stray in (
            {"jsonrpc": "2.0", "result": {}},
            {"jsonrpc": "2.0", "id": 12345, "result": {}},
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}},
            {"jsonrpc": "2.0", "id": 3, "result": 1, "error": {"code": 1, "message": "x"}},
            {"jsonrpc": "1.0", "id": 4, "result": {}},
        ):
            h.send(stray)
        assert h.request("ping", id="after")["result"] == {}
        assert [m for m in h.drain() if isinstance(m, dict)] == []

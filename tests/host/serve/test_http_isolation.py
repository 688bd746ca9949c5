"""No state shared between HTTP clients: the same JSON-RPC ids at the same moment, in
both eras, never cross (the class of CVE-2026-25536)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx

from tests.e2e_helpers import wait_until
from tests.http_support import LEGACY_HEADERS, http_host, initialize_body, modern_request

TIMEOUT = httpx.Timeout(60.0)


def _hold(id: Any, text: str, gate: Path, side: Path) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {
            "name": "hold",
            "arguments": {"text": text, "path": str(gate), "side": str(side)},
        },
    }


async def until(cond: Any) -> None:
    """Wait (in a thread) until ``cond()`` holds: an event the host reports."""
    await anyio.to_thread.run_sync(lambda: wait_until(cond, 60.0))


def _text(response: httpx.Response) -> str:
    body = response.json()
    assert body["id"] == 1, body
    return str(body["result"]["content"][0]["text"])


def test_same_ids_at_the_same_moment(tmp_path: Path) -> None:
    """Four callers — two 2025-11-25 sessions and two 2026-07-28 clients — each have
    request id 1 in flight at once; the calls end in the reverse order they started,
    and each caller gets its own result."""
    side = tmp_path / "side"
    side.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    names = ["legacy-a", "legacy-b", "modern-a", "modern-b"]
    gates = {n: tmp_path / f"{n}.gate" for n in names}
    got: dict[str, str] = {}

    async def main() -> None:
        with http_host(root) as h:
            async with httpx.AsyncClient(timeout=TIMEOUT) as client:
                sessions = {}
                for n in names[:2]:
                    r = await client.post(h.url, json=initialize_body(1), headers=LEGACY_HEADERS)
                    sessions[n] = r.headers["mcp-session-id"]

                async def call(n: str) -> None:
                    if n.startswith("legacy"):
                        headers = {
                            **LEGACY_HEADERS,
                            "Mcp-Session-Id": sessions[n],
                            "MCP-Protocol-Version": "2025-11-25",
                        }
                        r = await client.post(
                            h.url, json=_hold(1, n, gates[n], side), headers=headers
                        )
                    else:
                        body, headers = modern_request(
                            1, "tools/call", _hold(1, n, gates[n], side)["params"]
                        )
                        r = await client.post(h.url, json=body, headers=headers)
                    got[n] = _text(r)

                async with anyio.create_task_group() as tg:
                    for n in names:
                        tg.start_soon(call, n)
                    # every call is running before any may end
                    for n in names:
                        await until(lambda n=n: (side / f"{n}.waiting").exists())
                    for n in reversed(names):
                        gates[n].write_text("")
                        await until(lambda n=n: n in got)

    anyio.run(main)
    assert got == {n: n for n in names}


def test_concurrent_duplicate_id_in_one_session_is_refused(tmp_path: Path) -> None:
    """Within one 2025-11-25 session a second request with an id still in flight gets
    409 (the first keeps its own answer); the id is free again once answered."""
    side = tmp_path / "side"
    side.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    gate = tmp_path / "gate"
    with http_host(root) as h:
        r = httpx.post(h.url, json=initialize_body(0), headers=LEGACY_HEADERS)
        headers = {
            **LEGACY_HEADERS,
            "Mcp-Session-Id": r.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        results: dict[str, httpx.Response] = {}

        async def main() -> None:
            async with httpx.AsyncClient(timeout=TIMEOUT) as client:

                async def first() -> None:
                    results["first"] = await client.post(
                        h.url, json=_hold(1, "first", gate, side), headers=headers
                    )

                async with anyio.create_task_group() as tg:
                    tg.start_soon(first)
                    await until(lambda: (side / "first.waiting").exists())
                    results["second"] = await client.post(
                        h.url, json=_hold(1, "second", gate, side), headers=headers
                    )
                    gate.write_text("")
                again = await client.post(
                    h.url, json=_hold(1, "again", gate, side), headers=headers
                )
                results["again"] = again

        anyio.run(main)
        assert results["second"].status_code == 409
        assert results["second"].json()["error"]["code"] == -32600
        assert _text(results["first"]) == "first"
        assert _text(results["again"]) == "again"

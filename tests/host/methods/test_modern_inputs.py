"""Tools that ask (ctx.elicit, ctx.sample, ctx.list_roots) and approval through elicitation,
in both eras, through the real host process with a raw JSON-RPC peer.

2026-07-28: input-required results with a signed requestState, verified on the retry.
2025-11-25: server→client requests, only when the client declared the capability.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.hostproc import REPO, TOOLS_DIR
from tests.inproc import InProcHost

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
MODERN_TOOLS = str(TOOLS_DIR / "modern_tools.py")
ECHO_TOOLS = str(REPO / "examples" / "tools" / "echo_tools.py")


@contextmanager
def host(tmp_path: Path, *extra: str) -> Iterator[InProcHost]:
    args = ["--root", str(tmp_path), "--no-builtins", "--no-entry-points"]
    with InProcHost([*args, "--tools", MODERN_TOOLS, ECHO_TOOLS, *extra]) as h:
        yield h


def call(
    h: InProcHost,
    name: str,
    arguments: dict[str, Any] | None = None,
    caps: Any = None,
    **more: Any,
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "_meta": {PV: V, CAPS: {"elicitation": {}} if caps is None else caps},
        "name": name,
        "arguments": arguments or {},
        **more,
    }
    return h.request("tools/call", params)


def text(resp: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in resp["result"]["content"] if b["type"] == "text")


ADA = {"action": "accept", "content": {"name": "Ada"}}


# --------------------------------------------------------------------------- 2026-07-28


def test_elicitation_round_trip(tmp_path: Path) -> None:
    with host(tmp_path) as h:
        r1 = call(h, "ask_name")["result"]
        assert r1["resultType"] == "input_required"
        assert r1["inputRequests"] == {
            "user_name": {
                "method": "elicitation/create",
                "params": {
                    "mode": "form",
                    "message": "What is your name?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string", "title": "Your name"}},
                        "required": ["name"],
                    },
                },
            }
        }
        assert isinstance(r1["requestState"], str)
        assert "ttlMs" not in r1 and "io.modelcontextprotocol/serverInfo" in r1["_meta"]
        state = r1["requestState"]
        r2 = call(h, "ask_name", inputResponses={"user_name": ADA}, requestState=state)
        assert r2["result"]["resultType"] == "complete"
        assert text(r2) == "hello Ada"
        declined = call(
            h, "ask_name", inputResponses={"user_name": {"action": "decline"}}, requestState=state
        )
        assert text(declined) == "no name (decline)"


def test_tampered_or_foreign_state_is_an_error(tmp_path: Path) -> None:
    with host(tmp_path) as h:
        state = call(h, "ask_name")["result"]["requestState"]
        for bad in (state + "-TAMPERED", "x" + state[1:], "not-a-state", state.split(".")[0]):
            r = call(h, "ask_name", inputResponses={"user_name": ADA}, requestState=bad)
            assert r["error"]["code"] == -32602, bad
        # a state issued for another call (another tool, other arguments) is refused
        runs = str(tmp_path / "runs")
        other = call(h, "ask_all", {"runs": runs})["result"]["requestState"]
        r = call(h, "ask_name", inputResponses={"user_name": ADA}, requestState=other)
        assert r["error"]["code"] == -32602
        assert "another request" in r["error"]["message"]
        r = call(h, "ask_all", {"runs": runs + "x"}, requestState=other)
        assert r["error"]["code"] == -32602
        # a state from another host process is refused too (per-host key)
        with host(tmp_path) as h2:
            r = call(h2, "ask_name", inputResponses={"user_name": ADA}, requestState=state)
            assert r["error"]["code"] == -32602


def test_missing_answers_are_asked_again_and_extra_keys_ignored(tmp_path: Path) -> None:
    with host(tmp_path) as h:
        state = call(h, "ask_name")["result"]["requestState"]
        again = call(h, "ask_name", inputResponses={"wrong_key": ADA}, requestState=state)
        assert again["result"]["resultType"] == "input_required"
        assert list(again["result"]["inputRequests"]) == ["user_name"]
        no_state = call(h, "ask_name", inputResponses={"wrong_key": ADA})
        assert no_state["result"]["resultType"] == "input_required"
        extra = call(h, "ask_name", inputResponses={"user_name": ADA, "x": 1, "y": {"z": 2}})
        assert text(extra) == "hello Ada"
        null = call(h, "ask_name", inputResponses=None)
        assert null["result"]["resultType"] == "input_required"


@pytest.mark.parametrize("answer", [12345, None, "Ada", {"action": "maybe"}, {"content": {}}])
def test_malformed_answers_are_refused(tmp_path: Path, answer: Any) -> None:
    with host(tmp_path) as h:
        r = call(h, "ask_name", inputResponses={"user_name": answer})
        assert r["error"]["code"] == -32602
        r = call(h, "ask_name", inputResponses=[ADA])
        assert r["error"]["code"] == -32602


def test_undeclared_capability_is_32021(tmp_path: Path) -> None:
    with host(tmp_path) as h:
        r = call(h, "ask_name", caps={})
        assert r["error"]["code"] == -32021
        assert r["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}
        runs = str(tmp_path / "runs")
        r = call(h, "ask_all", {"runs": runs}, caps={"elicitation": {}})
        state = r["result"]["requestState"]
        r = call(
            h,
            "ask_all",
            {"runs": runs},
            caps={"elicitation": {}},
            inputResponses={"elicit-1": ADA},
            requestState=state,
        )
        assert r["error"]["code"] == -32021
        assert r["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


def test_multi_round_reruns_the_handler_with_earlier_answers(tmp_path: Path) -> None:
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    runs = tmp_path / "runs"
    args = {"runs": str(runs)}
    answers = {
        "elicit-1": ADA,
        "sample-2": {
            "role": "assistant",
            "content": {"type": "text", "text": "Paris"},
            "model": "m",
        },
        "roots-3": {"roots": [{"uri": "file:///w", "name": "w"}]},
    }
    with host(tmp_path) as h:
        r = call(h, "ask_all", args, caps=caps)["result"]
        states = []
        for key in ("elicit-1", "sample-2", "roots-3"):
            assert r["resultType"] == "input_required"
            assert list(r["inputRequests"]) == [key]
            states.append(r["requestState"])
            # only this round's answer is sent: earlier ones travel in the signed state
            r = call(
                h,
                "ask_all",
                args,
                caps=caps,
                inputResponses={key: answers[key]},
                requestState=r["requestState"],
            )["result"]
        assert r["resultType"] == "complete"
        assert r["content"] == [{"type": "text", "text": "Ada / Paris / file:///w"}]
        assert len(set(states)) == 3
        assert runs.read_text() == "run\n" * 4
        req = call(h, "ask_all", args, caps=caps)["result"]["inputRequests"]
        assert req["elicit-1"]["method"] == "elicitation/create"


# --------------------------------------------------------------------------- 2025-11-25


def initialize(h: InProcHost, caps: dict[str, Any]) -> None:
    h.request(
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "t"}},
    )
    h.notify("notifications/initialized")


def test_legacy_tools_ask_with_server_requests(tmp_path: Path) -> None:
    with host(tmp_path) as h:
        initialize(h, {"elicitation": {}, "sampling": {}, "roots": {}})
        h.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "ask_all", "arguments": {"runs": str(tmp_path / "runs")}},
            }
        )
        replies = {
            "elicitation/create": ADA,
            "sampling/createMessage": {
                "role": "assistant",
                "content": {"type": "text", "text": "Paris"},
                "model": "m",
            },
            "roots/list": {"roots": [{"uri": "file:///w"}]},
        }
        seen = []
        for _ in range(3):
            req = h.recv()
            seen.append(req["method"])
            h.send({"jsonrpc": "2.0", "id": req["id"], "result": replies[req["method"]]})
        assert seen == list(replies)
        assert text(h.recv_response(1)) == "Ada / Paris / file:///w"
        assert (tmp_path / "runs").read_text() == "run\n"  # one run: nothing is repeated


def test_legacy_without_capability_is_an_error_result(tmp_path: Path) -> None:
    with host(tmp_path) as h:
        initialize(h, {})
        r = h.call("ask_name")["result"]
        assert r["isError"] is True
        assert "elicitation" in text({"result": r}) and "did not declare" in text({"result": r})


# --------------------------------------------------------------------------- approval


def test_modern_approval_through_elicitation(tmp_path: Path) -> None:
    with host(tmp_path, "--approve", "echo") as h:
        r = call(h, "echo", {"text": "hi"})["result"]
        assert r["resultType"] == "input_required"
        (key,) = r["inputRequests"]
        form = r["inputRequests"][key]
        assert key == "approval" and form["method"] == "elicitation/create"
        schema = form["params"]["requestedSchema"]
        assert schema["properties"]["decision"]["enum"] == ["allow", "deny"]
        assert schema["required"] == ["decision"] and "reason" in schema["properties"]
        assert (
            '"echo"' in form["params"]["message"] and '{"text":"hi"}' in form["params"]["message"]
        )
        state = r["requestState"]
        allow = {"action": "accept", "content": {"decision": "allow"}}
        ok = call(h, "echo", {"text": "hi"}, inputResponses={key: allow}, requestState=state)
        assert text(ok) == "hi"
        deny = {"action": "accept", "content": {"decision": "deny", "reason": "not now"}}
        no = call(h, "echo", {"text": "hi"}, inputResponses={key: deny}, requestState=state)
        assert no["result"]["isError"] is True
        assert text(no) == "Call denied by the client: not now"
        cancel = call(
            h,
            "echo",
            {"text": "hi"},
            inputResponses={key: {"action": "cancel"}},
            requestState=state,
        )
        assert text(cancel) == "Call denied by the client: the user cancelled the approval form"
        # an approval the host did not ask for (no state) is not taken: it asks
        unasked = call(h, "echo", {"text": "hi"}, inputResponses={key: allow})
        assert unasked["result"]["resultType"] == "input_required"
        # the state does not carry over to other arguments
        other = call(h, "echo", {"text": "rm"}, inputResponses={key: allow}, requestState=state)
        assert other["error"]["code"] == -32602


def test_modern_approval_with_toolwire_approve_and_without_any_way(tmp_path: Path) -> None:
    with host(tmp_path, "--approve", "echo") as h:
        caps = {"toolwire": {"approval": True}, "elicitation": {}}
        r = call(h, "echo", {"text": "hi"}, caps=caps)["result"]
        req = r["inputRequests"]["approval"]
        assert req["method"] == "toolwire/approve"
        assert req["params"]["name"] == "echo" and req["params"]["arguments"] == {"text": "hi"}
        ok = call(
            h,
            "echo",
            {"text": "hi"},
            caps=caps,
            inputResponses={"approval": {"decision": "allow", "arguments": {"text": "changed"}}},
            requestState=r["requestState"],
        )
        assert text(ok) == "changed"
        none = call(h, "echo", {"text": "hi"}, caps={})["result"]
        assert none["isError"] is True and "declared neither" in text({"result": none})


def test_modern_batch_asks_once_per_call_in_source_order(tmp_path: Path) -> None:
    with host(tmp_path, "--approve", "echo") as h:
        calls = [
            {"id": "b", "name": "echo", "arguments": {"text": "1"}},
            {"id": "n", "name": "count", "arguments": {"n": 1}},
            {"id": "a", "name": "echo", "arguments": {"text": "2"}},
        ]
        meta = {PV: V, CAPS: {"elicitation": {}}}
        r = h.request("tools/callBatch", {"_meta": meta, "calls": calls})["result"]
        assert r["resultType"] == "input_required"
        assert list(r["inputRequests"]) == ['approval/"b"', 'approval/"a"']
        allow = {"action": "accept", "content": {"decision": "allow"}}
        deny = {"action": "decline"}
        done = h.request(
            "tools/callBatch",
            {
                "_meta": meta,
                "calls": calls,
                "inputResponses": {'approval/"b"': allow, 'approval/"a"': deny},
                "requestState": r["requestState"],
            },
        )["result"]
        assert done["resultType"] == "complete"
        out = {e["id"]: e["result"] for e in done["results"]}
        assert out["b"]["content"][0]["text"] == "1"
        assert out["n"]["content"][0]["text"] == "counted to 1"
        assert out["a"]["isError"] is True


def test_legacy_approval_through_elicitation(tmp_path: Path) -> None:
    with host(tmp_path, "--approve", "echo") as h:
        initialize(h, {"elicitation": {}})
        h.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "hi"}},
            }
        )
        req = h.recv()
        assert req["method"] == "elicitation/create"
        assert req["params"]["requestedSchema"]["properties"]["decision"]["enum"] == [
            "allow",
            "deny",
        ]
        h.send(
            {
                "jsonrpc": "2.0",
                "id": req["id"],
                "result": {"action": "accept", "content": {"decision": "allow"}},
            }
        )
        assert text(h.recv_response(1)) == "hi"


def test_modern_batch_tools_ask_under_their_call_ids(tmp_path: Path) -> None:
    with host(tmp_path) as h:
        calls = [{"id": "c1", "name": "ask_name"}, {"id": "c2", "name": "ask_name"}]
        meta = {PV: V, CAPS: {"elicitation": {}}}
        r = h.request("tools/callBatch", {"_meta": meta, "calls": calls})["result"]
        assert r["resultType"] == "input_required"
        assert sorted(r["inputRequests"]) == ['"c1"/user_name', '"c2"/user_name']
        bob = {"action": "accept", "content": {"name": "Bob"}}
        done = h.request(
            "tools/callBatch",
            {
                "_meta": meta,
                "calls": calls,
                "inputResponses": {'"c1"/user_name': ADA, '"c2"/user_name': bob},
                "requestState": r["requestState"],
            },
        )["result"]
        assert done["resultType"] == "complete"
        assert [e["result"]["content"][0]["text"] for e in done["results"]] == [
            "hello Ada",
            "hello Bob",
        ]


def test_gather_asks_everything_in_one_round(tmp_path: Path) -> None:
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    paris = {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}
    with host(tmp_path) as h:
        r = call(h, "ask_together", caps=caps)["result"]
        assert list(r["inputRequests"]) == ["elicit-1", "sample-2", "roots-3"]
        answers = {"elicit-1": ADA, "sample-2": paris, "roots-3": {"roots": [{"uri": "file:///w"}]}}
        done = call(
            h, "ask_together", caps=caps, inputResponses=answers, requestState=r["requestState"]
        )
        assert text(done) == "Ada / Paris / 1 roots"
        # one missing answer: only that one is asked again
        partial = dict(answers)
        del partial["sample-2"]
        again = call(
            h, "ask_together", caps=caps, inputResponses=partial, requestState=r["requestState"]
        )["result"]
        assert list(again["inputRequests"]) == ["sample-2"]


def test_modern_batch_that_asks_runs_none_of_its_calls_until_the_answers(tmp_path: Path) -> None:
    # An approval to ask ends the round before anything runs: the call needing no
    # approval runs once, on the retry, not also in the input-required round.
    notes = tmp_path / "notes.txt"
    with host(tmp_path, "--approve", "echo") as h:
        calls = [
            {"id": "w", "name": "append_note", "arguments": {"path": "notes.txt", "line": "once"}},
            {"id": "e", "name": "echo", "arguments": {"text": "hi"}},
        ]
        meta = {PV: V, CAPS: {"elicitation": {}}}
        r = h.request("tools/callBatch", {"_meta": meta, "calls": calls})["result"]
        assert r["resultType"] == "input_required", r
        assert list(r["inputRequests"]) == ['approval/"e"']
        assert not notes.exists()  # nothing ran in the round that asked
        allow = {"action": "accept", "content": {"decision": "allow"}}
        done = h.request(
            "tools/callBatch",
            {
                "_meta": meta,
                "calls": calls,
                "inputResponses": {'approval/"e"': allow},
                "requestState": r["requestState"],
            },
        )["result"]
        assert done["resultType"] == "complete", done
        out = {e["id"]: e["result"]["content"][0]["text"] for e in done["results"]}
        assert out == {"w": "noted", "e": "hi"}
    assert notes.read_text() == "once\n"

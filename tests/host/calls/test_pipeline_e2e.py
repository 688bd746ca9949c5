"""End to end: the call pipeline against the real host (issue 3 §1–§4).

Batches (``tools/callBatch``), before/after hooks, ``prepare_arguments``, coercion on the
wire, approval with a scripted client answering ``toolwire/approve``, and the per-file
mutation queue. The host runs tests/fixtures/pipeline_tools.py; tools report their own
start/end times and write marker files, so the tests do not rely on the host's account.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.e2e_helpers import text_of, wait_until
from tests.hostproc import TOOLS_DIR
from tests.inproc import InProcHost, in_host

PIPELINE_TOOLS = str(TOOLS_DIR / "pipeline_tools.py")

WORKERS = ["--isolation", "process"]
"""For the tests of the module's own hooks, which run in its worker process by default
(the pipeline itself, preflight to result, is the host's either way)."""


@contextmanager
def pipeline_host(
    tmp_path: Path, args: Sequence[str] = (), capabilities: dict[str, Any] | None = None
) -> Iterator[InProcHost]:
    with InProcHost(
        in_host(
            [
                "--root",
                str(tmp_path),
                "--no-builtins",
                "--no-entry-points",
                "--tools",
                PIPELINE_TOOLS,
                *args,
            ]
        )
    ) as h:
        resp = h.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities or {},
                "clientInfo": {"name": "pipeline-test", "version": "0"},
            },
        )
        assert "result" in resp
        h.notify("notifications/initialized")
        yield h


def batch(h: InProcHost, calls: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
    resp = h.request("tools/callBatch", {"calls": calls, **params}, timeout=30)
    assert "result" in resp, resp
    return resp["result"]  # type: ignore[no-any-return]


def texts(result: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in result["content"] if b["type"] == "text")


def stamp_of(entry: dict[str, Any]) -> dict[str, Any]:
    return json.loads(entry["result"]["content"][0]["text"])  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------- batches


def test_invalid_second_call_comes_back_second_while_first_and_third_overlap(
    tmp_path: Path,
) -> None:
    with pipeline_host(tmp_path) as h:
        out = batch(
            h,
            [
                {"id": "a", "name": "stamp", "arguments": {"label": "a", "delay": 0.4}},
                {"id": "b", "name": "stamp", "arguments": {"label": "b", "delay": "soon"}},
                {"id": "c", "name": "stamp", "arguments": {"label": "c", "delay": 0.4}},
            ],
        )
    results = out["results"]
    assert [r["id"] for r in results] == ["a", "b", "c"]
    assert [r["name"] for r in results] == ["stamp"] * 3
    bad = results[1]["result"]
    assert bad["isError"] is True
    assert texts(bad).startswith('Invalid arguments for tool "stamp":\n  - delay: ')
    a, c = stamp_of(results[0]), stamp_of(results[2])
    assert (a["label"], c["label"]) == ("a", "c")
    # overlap in time, by the tools' own clocks: each started before the other ended
    assert a["start"] < c["end"] and c["start"] < a["end"]
    assert "terminate" not in out


def test_sequential_mode_and_a_sequential_tool_serialise_the_batch(tmp_path: Path) -> None:
    calls = [
        {"id": 1, "name": "stamp", "arguments": {"label": "1", "delay": 0.15}},
        {"id": 2, "name": "stamp", "arguments": {"label": "2", "delay": 0.15}},
    ]
    with pipeline_host(tmp_path) as h:
        parallel = [stamp_of(r) for r in batch(h, calls)["results"]]
        requested = [stamp_of(r) for r in batch(h, calls, mode="sequential")["results"]]
        forced = [
            stamp_of(r)
            for r in batch(
                h,
                [
                    *calls,
                    {"id": 3, "name": "serial_stamp", "arguments": {"label": "3", "delay": 0.1}},
                ],
            )["results"]
        ]
    assert parallel[0]["start"] < parallel[1]["end"] and parallel[1]["start"] < parallel[0]["end"]
    for run in (requested, forced):
        for earlier, later in itertools.pairwise(run):
            assert earlier["end"] <= later["start"], run


def test_end_notifications_in_completion_order_results_in_source_order(tmp_path: Path) -> None:
    with pipeline_host(tmp_path) as h:
        resp_id = "batch-1"
        h.send(
            {
                "jsonrpc": "2.0",
                "id": resp_id,
                "method": "tools/callBatch",
                "params": {
                    "calls": [
                        {"id": "slow", "name": "stamp", "arguments": {"label": "s", "delay": 0.5}},
                        {"id": "bad", "name": "no_such_tool", "arguments": {}},
                        {"id": "fast", "name": "steps", "arguments": {"n": 3}},
                    ],
                    "_meta": {"progressToken": "T"},
                },
            }
        )
        resp = h.recv_response(resp_id, timeout=30)
        notes = [m for m in h.drain() if isinstance(m, dict) and "method" in m]
    results = resp["result"]["results"]
    assert [r["id"] for r in results] == ["slow", "bad", "fast"]
    assert results[1]["result"] == {
        "content": [{"type": "text", "text": "Unknown tool: no_such_tool"}],
        "isError": True,
    }
    assert all(n["params"]["progressToken"] == "T" for n in notes)
    flow = [(n["method"].rsplit("/", 1)[1], n["params"].get("callId")) for n in notes]
    started = [c for m, c in flow if m == "callStarted"]
    ended = [c for m, c in flow if m == "callEnded"]
    # the unknown tool fails in preflight: started and ended at once, before any execution
    assert flow[:2] == [("callStarted", "bad"), ("callEnded", "bad")]
    assert started == ["bad", "slow", "fast"]
    assert ended == ["bad", "fast", "slow"]  # completion order
    ends = {
        n["params"]["callId"]: n["params"]["isError"] for n in notes if "callEnded" in n["method"]
    }
    assert ends == {"bad": True, "fast": False, "slow": False}
    # the fast call's own progress, tagged with its call id, between its start and end
    call_progress = [n["params"] for n in notes if n["method"].endswith("callProgress")]
    assert [(p["callId"], p["progress"], p["total"]) for p in call_progress] == [
        ("fast", 1, 3),
        ("fast", 2, 3),
        ("fast", 3, 3),
    ]
    # the batch's own progress after each end: strictly increasing, total = number of calls
    batch_progress = [n["params"] for n in notes if n["method"] == "notifications/progress"]
    assert [(p["progress"], p["total"]) for p in batch_progress] == [(1, 3), (2, 3), (3, 3)]
    assert [p["message"] for p in batch_progress] == [
        "no_such_tool finished",
        "steps finished",
        "stamp finished",
    ]
    # each batch progress note follows its callEnded
    kinds = [n["method"] for n in notes]
    for i, k in enumerate(kinds):
        if k == "notifications/progress":
            assert kinds[i - 1].endswith("callEnded")


def test_no_notifications_without_a_token(tmp_path: Path) -> None:
    with pipeline_host(tmp_path) as h:
        out = batch(h, [{"id": 1, "name": "steps", "arguments": {"n": 2}}])
        assert texts(out["results"][0]["result"]) == "2 steps"
        assert h.request("ping")["result"] == {}
        assert [m for m in h.drain() if isinstance(m, dict) and "method" in m] == []


def test_length_stop_reason_executes_nothing(tmp_path: Path) -> None:
    side = tmp_path / "side"
    side.mkdir()
    with pipeline_host(tmp_path) as h:
        out = batch(
            h,
            [
                {"id": "t1", "name": "touch", "arguments": {"name": "one", "side": str(side)}},
                {"id": "t2", "name": "touch", "arguments": {"name": "two", "side": str(side)}},
            ],
            stopReason="length",
        )
    assert [r["id"] for r in out["results"]] == ["t1", "t2"]
    for r in out["results"]:
        assert r["result"]["isError"] is True
        text = texts(r["result"])
        assert text.startswith('Tool call "touch" was not executed')
        assert "again with complete arguments" in text
    assert list(side.iterdir()) == []
    assert "terminate" not in out


def test_terminate_only_when_every_result_sets_it(tmp_path: Path) -> None:
    with pipeline_host(tmp_path) as h:
        both = batch(
            h,
            [
                {"id": 1, "name": "finish", "arguments": {"label": "x"}},
                {"id": 2, "name": "soft_stop", "arguments": {"stop": True}},  # after hook sets it
            ],
        )
        one = batch(
            h,
            [
                {"id": 1, "name": "finish", "arguments": {"label": "x"}},
                {"id": 2, "name": "plain", "arguments": {}},
            ],
        )
        with_error = batch(
            h,
            [
                {"id": 1, "name": "finish", "arguments": {"label": "x"}},
                {"id": 2, "name": "finish", "arguments": {"fail": True}},
            ],
        )
        empty = batch(h, [])
    assert both["terminate"] is True
    assert both["results"][1]["result"]["_meta"] == {"toolwire/terminate": True}
    assert "terminate" not in one
    assert one["results"][0]["result"]["_meta"] == {"toolwire/terminate": True}
    assert "terminate" not in with_error
    assert empty == {"results": []}


@pytest.mark.parametrize(
    ("params", "fragment"),
    [
        ({"calls": {}}, "'calls'"),
        ([], "'calls'"),  # [] is {} for every method (protocol.md §2)
        ([{"calls": []}], "params must be an object"),
        ({"calls": [{"id": 1}]}, "calls[0].name"),
        ({"calls": [{"name": "plain"}]}, "calls[0].id"),
        ({"calls": [{"id": True, "name": "plain"}]}, "calls[0].id"),
        ({"calls": [{"id": 1, "name": "plain"}, {"id": 1, "name": "plain"}]}, "Duplicate"),
        ({"calls": [], "mode": "fast"}, "Unknown mode"),
        ({"calls": [], "stopReason": 3}, "stopReason"),
        ({"calls": ["plain"]}, "calls[0] must be an object"),
    ],
)
def test_malformed_batch_envelopes_are_protocol_errors(
    tmp_path: Path, params: Any, fragment: str
) -> None:
    with pipeline_host(tmp_path) as h:
        resp = h.request("tools/callBatch", params)
        assert resp["error"]["code"] == -32602
        assert fragment in resp["error"]["message"]
        # the host keeps serving; a bad entry inside a valid envelope is a result
        out = batch(h, [{"id": 1, "name": "plain", "arguments": [1]}, {"id": 2, "name": "plain"}])
        assert out["results"][0]["result"]["isError"] is True
        assert texts(out["results"][1]["result"]) == "plain "


def test_cancelling_a_batch_cancels_all_its_calls(tmp_path: Path) -> None:
    side = tmp_path / "side"
    side.mkdir()
    with pipeline_host(tmp_path) as h:
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "b",
                "method": "tools/callBatch",
                "params": {
                    "calls": [
                        {
                            "id": i,
                            "name": "block",
                            "arguments": {"name": f"c{i}", "side": str(side)},
                        }
                        for i in range(3)
                    ],
                    "_meta": {"progressToken": 7},
                },
            }
        )
        wait_until(lambda: len(list(side.glob("*.started"))) == 3, what="three calls started")
        h.notify("notifications/cancelled", {"requestId": "b", "reason": "user"})
        wait_until(lambda: len(list(side.glob("*.cancelled"))) == 3, what="three cancelled")
        assert h.request("ping")["result"] == {}
        msgs = h.drain()
    # nothing for the cancelled request: no response and no notification after the cancel
    assert not [m for m in msgs if isinstance(m, dict) and m.get("id") == "b"]
    assert not [
        m for m in msgs if isinstance(m, dict) and m.get("method", "").endswith("callEnded")
    ]


# ---------------------------------------------------------------------------- arguments


def test_coercion_and_undeclared_fields_over_the_wire(tmp_path: Path) -> None:
    with pipeline_host(tmp_path) as h:
        r = h.call(
            "typed",
            {
                "count": "42",
                "ratio": "0.5",
                "flag": "true",
                "label": 7,
                "tags": '[1, "2"]',
                "undeclared": "dropped",
            },
        )
        assert json.loads(text_of(r)) == {
            "count": ["int", 42],
            "ratio": ["float", 0.5],
            "flag": ["bool", True],
            "label": ["str", "7"],
            "tags": ["list", [1, 2]],
        }
        bad = h.call("typed", {"count": "42.1", "ratio": "x", "flag": "1", "label": [], "tags": 3})
        text = bad["result"]["content"][0]["text"]
        assert bad["result"]["isError"] is True
        for path in ("count", "ratio", "flag", "label", "tags"):
            assert f"\n  - {path}: " in text, text
        assert text.endswith(
            'Received arguments:\n{"count":"42.1","ratio":"x","flag":"1","label":[],"tags":3}'
        )


def test_prepare_arguments_maps_legacy_arguments(tmp_path: Path) -> None:
    with pipeline_host(tmp_path) as h:
        legacy = h.call("replace", {"path": "f.txt", "oldText": "a", "newText": "b"})
        assert text_of(legacy) == "f.txt: a->b"
        current = h.call("replace", {"path": "f.txt", "edits": [{"oldText": "x", "newText": "y"}]})
        assert text_of(current) == "f.txt: x->y"
        failed = h.call("replace", {"path": "explode"})["result"]
        assert failed["isError"] is True
        assert (
            texts(failed)
            == 'Could not prepare the arguments of tool "replace": cannot prepare this'
        )


# ---------------------------------------------------------------------------- hooks


def test_before_hooks_change_block_and_raise(tmp_path: Path) -> None:
    with pipeline_host(tmp_path, WORKERS) as h:
        assert text_of(h.call("set_value", {"value": 1})) == "ran with 123"
        assert text_of(h.call("set_value", {"value": "1"})) == "ran with 123"  # coerced first
        assert text_of(h.call("set_value", {"value": 5})) == "ran with 5"
        invalid = h.call("set_value", {"value": 2})["result"]
        assert invalid["isError"] is True
        assert texts(invalid).startswith('Invalid arguments for tool "set_value":\n  - value: ')
        assert "before_tool_call hook" in texts(invalid)

        blocked = h.call("guarded", {"word": "forbidden"})["result"]
        assert blocked == {
            "content": [{"type": "text", "text": "the word is forbidden here"}],
            "isError": True,
        }
        late = h.call("guarded", {"word": "late"})["result"]
        assert texts(late) == "second guard blocked late"
        assert text_of(h.call("guarded", {"word": "swap"})) == "word=swapped"
        boom = h.call("guarded", {"word": "explode"})["result"]
        assert boom["isError"] is True
        assert "the guard hook exploded" in texts(boom)
        assert b"Traceback" not in bytes(h.raw_stdout)
        assert text_of(h.call("guarded", {"word": "fine"})) == "word=fine"
        assert h.request("ping")["result"] == {}


def test_after_hooks_chain_field_by_field(tmp_path: Path) -> None:
    with pipeline_host(tmp_path, WORKERS) as h:
        r = h.call("patched", {"text": "hi"})["result"]
        assert [b["text"] for b in r["content"]] == ["hi", "A", "B"]  # both appends kept
        assert r["_meta"] == {"toolwire/details": {"by": "append_a"}}
        assert "isError" not in r
        err = h.call("patched", {"text": "err"})["result"]
        # {content, details} from the first hook, then {content, is_error} from the second
        assert [b["text"] for b in err["content"]] == ["err", "A", "B"]
        assert err["_meta"] == {"toolwire/details": {"by": "append_a"}}
        assert err["isError"] is True
        cleared = h.call("patched", {"text": "clear"})["result"]
        assert "_meta" not in cleared  # None clears a field a previous hook set

        boom = h.call("after_boom")["result"]
        assert boom["isError"] is True
        assert "after hook blew up" in texts(boom)
        assert h.request("ping")["result"] == {}


def test_hooks_apply_inside_batches_too(tmp_path: Path) -> None:
    with pipeline_host(tmp_path, WORKERS) as h:
        out = batch(
            h,
            [
                {"id": 1, "name": "set_value", "arguments": {"value": 1}},
                {"id": 2, "name": "guarded", "arguments": {"word": "forbidden"}},
                {"id": 3, "name": "patched", "arguments": {"text": "x"}},
            ],
        )
    r1, r2, r3 = (r["result"] for r in out["results"])
    assert texts(r1) == "ran with 123"
    assert r2["isError"] is True and texts(r2) == "the word is forbidden here"
    assert [b["text"] for b in r3["content"]] == ["x", "A", "B"]


# ---------------------------------------------------------------------------- approval

APPROVAL_CAPS = {"toolwire": {"approval": True}}


def _approve_exchange(
    h: InProcHost, request: dict[str, Any], answer: Any, *, error: dict[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Send ``request``; answer the host's toolwire/approve; return (approve params, response)."""
    h.send(request)
    while True:
        m = h.recv(timeout=10)
        assert m is not None
        if m.get("method") == "toolwire/approve":
            break
        assert m.get("id") != request["id"], f"answered without asking: {m}"
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": m["id"]}
    if error is not None:
        reply["error"] = error
    else:
        reply["result"] = answer
    h.send(reply)
    return m["params"], h.recv_response(request["id"])


def _call(id: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def test_a_denied_approval_never_runs_the_tool(tmp_path: Path) -> None:
    side = tmp_path / "side"
    side.mkdir()
    args = {"name": "denied", "side": str(side)}
    with pipeline_host(tmp_path, ["--approve", "destructive"], APPROVAL_CAPS) as h:
        params, resp = _approve_exchange(
            h, _call(5, "touch", args), {"decision": "deny", "reason": "not today"}
        )
        assert params == {"callId": 5, "name": "touch", "arguments": args}
        assert resp["result"] == {
            "content": [{"type": "text", "text": "Call denied by the client: not today"}],
            "isError": True,
        }
        assert not (side / "denied").exists()
        # read-only tools need no approval under "destructive"
        assert text_of(h.call("look", {"side": str(side)})) == "looked"
        # allowed, with replacement arguments (validated again: "name" comes from the client)
        params, resp = _approve_exchange(
            h,
            _call(6, "touch", {**args, "name": "asked"}),
            {"decision": "allow", "arguments": {"name": "replaced", "side": str(side)}},
        )
        assert text_of(resp) == "touched replaced"
        assert (side / "replaced").exists() and not (side / "asked").exists()
        # replacement arguments that fail the schema: denied as invalid, the tool never runs
        _, resp = _approve_exchange(
            h,
            _call(7, "touch", {**args, "name": "x1"}),
            {"decision": "allow", "arguments": {"name": ["no"], "side": str(side)}},
        )
        assert resp["result"]["isError"] is True
        assert "Invalid arguments" in texts(resp["result"])
        assert sorted(p.name for p in side.iterdir()) == ["look.ran", "replaced"]


@pytest.mark.parametrize(
    ("answer", "error", "fragment"),
    [
        ({"decision": "maybe"}, None, "malformed"),
        ("yes", None, "malformed"),
        ({"decision": "allow", "arguments": [1]}, None, "malformed"),
        (None, {"code": -32601, "message": "Method not found"}, "approval request failed"),
    ],
)
def test_malformed_or_failed_approval_answers_deny(
    tmp_path: Path, answer: Any, error: dict[str, Any] | None, fragment: str
) -> None:
    side = tmp_path / "side"
    side.mkdir()
    with pipeline_host(tmp_path, ["--approve", "touch"], APPROVAL_CAPS) as h:
        _, resp = _approve_exchange(
            h, _call(1, "touch", {"name": "m", "side": str(side)}), answer, error=error
        )
        assert resp["result"]["isError"] is True
        assert texts(resp["result"]).startswith("Call denied")
        assert fragment in texts(resp["result"])
        assert not (side / "m").exists()


def test_approval_without_capability_or_answer_denies(tmp_path: Path) -> None:
    side = tmp_path / "side"
    side.mkdir()
    with pipeline_host(tmp_path, ["--approve", "all"]) as h:  # no approval capability
        r = h.call("look", {"side": str(side)})["result"]
        assert r["isError"] is True
        assert "declared neither" in texts(r)
    with pipeline_host(
        tmp_path, ["--approve", "touch,look", "--approval-timeout", "0.3"], APPROVAL_CAPS
    ) as h:
        r = h.call("touch", {"name": "late", "side": str(side)})["result"]
        assert r["isError"] is True
        assert texts(r) == (
            "Call denied: the client did not answer the approval request within 0.3 seconds"
        )
        msgs = h.drain()
        asks = [m for m in msgs if m.get("method") == "toolwire/approve"]
        assert len(asks) == 1
        # the host withdrew its request when it gave up waiting
        cancels = [m for m in msgs if m.get("method") == "notifications/cancelled"]
        assert [c["params"]["requestId"] for c in cancels] == [asks[0]["id"]]
    assert list(side.iterdir()) == []


def test_approval_in_a_batch_happens_in_preflight_in_source_order(tmp_path: Path) -> None:
    side = tmp_path / "side"
    side.mkdir()
    with pipeline_host(tmp_path, ["--approve", "touch"], APPROVAL_CAPS) as h:
        h.send(
            {
                "jsonrpc": "2.0",
                "id": "b",
                "method": "tools/callBatch",
                "params": {
                    "calls": [
                        {"id": "x", "name": "touch", "arguments": {"name": "x", "side": str(side)}},
                        {"id": "y", "name": "look", "arguments": {"side": str(side)}},
                        {"id": "z", "name": "touch", "arguments": {"name": "z", "side": str(side)}},
                    ]
                },
            }
        )
        asked = []
        for decision in ("allow", "deny"):
            m = h.recv(timeout=10)
            assert m["method"] == "toolwire/approve", m
            asked.append(m["params"]["callId"])
            # nothing runs until preflight is over
            assert not (side / "look.ran").exists()
            h.send({"jsonrpc": "2.0", "id": m["id"], "result": {"decision": decision}})
        resp = h.recv_response("b")
    assert asked == ["x", "z"]
    results = {r["id"]: r["result"] for r in resp["result"]["results"]}
    assert texts(results["x"]) == "touched x"
    assert texts(results["y"]) == "looked"
    assert texts(results["z"]) == "Call denied by the client: no reason given"
    assert sorted(p.name for p in side.iterdir()) == ["look.ran", "x"]


# ---------------------------------------------------------------------------- mutation queue


def _pipelined_calls(h: InProcHost, name: str, path: str, n: int) -> None:
    lines = b"".join(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": name, "arguments": {"path": path, "line": f"line {i}"}},
            }
        ).encode()
        + b"\n"
        for i in range(n)
    )
    h.send_raw(lines)
    for i in range(n):
        assert text_of(h.recv_response(i, timeout=60)) == "ok"


def test_a_thousand_concurrent_appends_to_one_file_lose_nothing(tmp_path: Path) -> None:
    n = 1000
    with pipeline_host(tmp_path) as h:
        _pipelined_calls(h, "append_line", "log.txt", n)
        # the same read-modify-write without the queue loses lines: the test can fail
        _pipelined_calls(h, "append_unqueued", "racy.txt", 50)
    lines = (tmp_path / "log.txt").read_text().splitlines()
    assert sorted(lines) == sorted(f"line {i}" for i in range(n))
    assert lines == [f"line {i}" for i in range(n)]  # FIFO: arrival order
    assert len((tmp_path / "racy.txt").read_text().splitlines()) < 50


def test_paths_given_as_a_list_are_queued_too(tmp_path: Path) -> None:
    # A tool whose mutated argument is a list of paths holds every one of them: calls
    # naming the same file (alone or among others, spelled differently) run one at a
    # time in arrival order, so no read-modify-write is lost, and a call waiting for
    # its first file is not overtaken on its second by a later call.
    (tmp_path / "sub").mkdir()
    spellings = [["a.txt"], ["./sub/../a.txt", "b.txt"], ["b.txt"]]
    n = 150
    with pipeline_host(tmp_path) as h:
        lines = b"".join(
            json.dumps(
                _call(
                    i,
                    "append_to_each",
                    {"paths": spellings[i % len(spellings)], "line": f"line {i}"},
                )
            ).encode()
            + b"\n"
            for i in range(n)
        )
        h.send_raw(lines)
        for i in range(n):
            assert text_of(h.recv_response(i, timeout=60)) == "ok"
    for name, kinds in (("a.txt", (0, 1)), ("b.txt", (1, 2))):
        want = [f"line {i}" for i in range(n) if i % len(spellings) in kinds]
        assert (tmp_path / name).read_text().splitlines() == want, name


def test_the_queue_is_per_real_path_across_calls_and_batches(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    with pipeline_host(tmp_path) as h:
        h.send(_call("single", "hold_file", {"path": "real.txt", "delay": 0.3}))
        out = batch(
            h,
            [
                {"id": 1, "name": "hold_file", "arguments": {"path": "link.txt", "delay": 0.3}},
                {"id": 2, "name": "hold_file", "arguments": {"path": "other.txt", "delay": 0.3}},
                {"id": 3, "name": "hold_file", "arguments": {"path": "./new/../new.txt"}},
            ],
        )
        single = json.loads(text_of(h.recv_response("single")))
    via_link, other, new = (stamp_of(r) for r in out["results"])
    # same real path (through the symlink): the batch's call waited for the single call
    assert single["end"] <= via_link["start"]
    # different files run in parallel with it
    assert other["start"] < single["end"] and single["start"] < other["end"]
    assert new["start"] < single["end"]

"""Escape suite, approvals (issue 20 §4): an approval is bound to the exact call it shows.

Through the real host process (its tools in real worker processes), with a raw
JSON-RPC peer playing the client:

* calls of a ``tools/callBatch`` whose ids differ only in type (``"1"`` and ``1``) are
  two calls: two approvals, and denying one never runs it (both eras);
* the elicitation approval form shows the whole call, or, when it is too long to
  show, the call is denied with a message saying so; never a part of it;
* format, bidirectional and control characters reach the form escaped;
* a tool (in a worker process) may ask the client only elicitation, sampling and
  roots, in both eras: ``toolwire/approve`` or anything else is refused;
* the terminal approval of ``toolwire call`` shows the whole call too, or denies it;
* a progress token of another JSON type (``1.0``, ``true``) reaches no listener of ``1``.

Run as root and as an ordinary user (tests/run_unprivileged.sh).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from toolwire.host.calls.approval import FORM_MAX_CHARS

from tests.hostproc import TOOLS_DIR, HostProcess

V = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"
APPROVAL_TOOLS = str(TOOLS_DIR / "approval_tools.py")
ELICIT = {"elicitation": {}}
TOOLWIRE_APPROVE = {"toolwire": {"approval": True}}
ALLOW = {"action": "accept", "content": {"decision": "allow"}}
DENY = {"action": "accept", "content": {"decision": "deny", "reason": "no"}}


@contextmanager
def host(tmp_path: Path) -> Iterator[HostProcess]:
    args = ["--root", str(tmp_path), "--no-builtins", "--no-entry-points"]
    with HostProcess([*args, "--tools", APPROVAL_TOOLS, "--approve", "mark"]) as h:
        yield h


def initialize(h: HostProcess, caps: dict[str, Any]) -> None:
    resp = h.request(
        "initialize",
        {"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "t"}},
    )
    assert "result" in resp, resp
    h.notify("notifications/initialized")


def modern(h: HostProcess, method: str, params: dict[str, Any], caps: Any) -> dict[str, Any]:
    resp = h.request(method, {"_meta": {PV: V, CAPS: caps}, **params}, timeout=30)
    assert "result" in resp, resp
    return resp["result"]  # type: ignore[no-any-return]


def text(result: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in result["content"] if b["type"] == "text")


def marks(side: Path, *names: str) -> dict[str, dict[str, Any]]:
    return {n: {"name": n, "side": str(side), "command": f"run {n}"} for n in names}


# ------------------------------------------------------------------ keys that cannot collide


@pytest.mark.parametrize("caps", [ELICIT, TOOLWIRE_APPROVE], ids=["form", "toolwire-approve"])
def test_batch_ids_differing_in_type_get_an_approval_each(
    tmp_path: Path, caps: dict[str, Any]
) -> None:
    side = tmp_path / "side"
    side.mkdir()
    args = marks(side, "for-string-id", "for-integer-id")
    calls = [
        {"id": "1", "name": "mark", "arguments": args["for-string-id"]},
        {"id": 1, "name": "mark", "arguments": args["for-integer-id"]},
    ]
    with host(tmp_path) as h:
        r = modern(h, "tools/callBatch", {"calls": calls}, caps)
        assert r["resultType"] == "input_required"
        asked = r["inputRequests"]
        # One question per call, each showing its own call: nothing shown twice or hidden.
        assert len(asked) == 2, asked
        answers: dict[str, Any] = {}
        shown: list[str] = []
        for key, question in asked.items():
            if caps is ELICIT:
                message = question["params"]["message"]
                allowed = "for-string-id" in message
                shown.append("for-string-id" if allowed else "for-integer-id")
                answers[key] = ALLOW if allowed else DENY
            else:
                params = question["params"]
                allowed = params["callId"] == "1"
                shown.append(params["arguments"]["name"])
                answers[key] = {"decision": "allow" if allowed else "deny", "reason": "no"}
        assert sorted(shown) == ["for-integer-id", "for-string-id"]
        done = modern(
            h,
            "tools/callBatch",
            {"calls": calls, "inputResponses": answers, "requestState": r["requestState"]},
            caps,
        )
    assert done["resultType"] == "complete"
    by_type = {type(e["id"]): e["result"] for e in done["results"]}
    assert text(by_type[str]) == "marked for-string-id"
    assert by_type[int]["isError"] is True
    assert text(by_type[int]) == "Call denied by the client: no"
    assert sorted(os.listdir(side)) == ["for-string-id"]


def test_legacy_batch_ids_differing_in_type_are_asked_apart(tmp_path: Path) -> None:
    side = tmp_path / "side"
    side.mkdir()
    args = marks(side, "for-string-id", "for-integer-id")
    calls = [
        {"id": "1", "name": "mark", "arguments": args["for-string-id"]},
        {"id": 1, "name": "mark", "arguments": args["for-integer-id"]},
    ]
    with host(tmp_path) as h:
        initialize(h, TOOLWIRE_APPROVE)
        h.send({"jsonrpc": "2.0", "id": 9, "method": "tools/callBatch", "params": {"calls": calls}})
        seen = []
        for _ in range(2):
            req = h.recv(timeout=30)
            assert req["method"] == "toolwire/approve", req
            seen.append((req["params"]["callId"], req["params"]["arguments"]["name"]))
            decision = "allow" if req["params"]["callId"] == "1" else "deny"
            h.send({"jsonrpc": "2.0", "id": req["id"], "result": {"decision": decision}})
        done = h.recv_response(9, timeout=30)["result"]
    assert seen == [("1", "for-string-id"), (1, "for-integer-id")]
    assert [e["result"].get("isError") is True for e in done["results"]] == [False, True]
    assert sorted(os.listdir(side)) == ["for-string-id"]


def test_a_tool_question_cannot_take_an_approval_key(tmp_path: Path) -> None:
    """A batch call's questions are keyed by the call id as JSON (``"approval"/x``), which
    never equals an approval key (``approval/ID``); a single call's question may not use
    the key ``approval``."""
    with host(tmp_path) as h:
        calls = [{"id": "approval", "name": "pose", "arguments": {"method": "roots/list"}}]
        r = modern(h, "tools/callBatch", {"calls": calls}, {"roots": {}})
        assert list(r["inputRequests"]) == ['"approval"/q']
        single = modern(
            h,
            "tools/call",
            {"name": "pose", "arguments": {"method": "roots/list", "key": "approval"}},
            {"roots": {}},
        )
    assert single["resultType"] == "complete", single
    assert "is the host's own" in text(single)


# ------------------------------------------------------------------ the form shows the whole call


def test_a_long_call_is_shown_whole_in_the_form(tmp_path: Path) -> None:
    side = tmp_path / "side"
    side.mkdir()
    command = "echo harmless " + "x" * 10_000 + " ; the-tail-that-runs"
    args = {"name": "long", "side": str(side), "command": command}
    with host(tmp_path) as h:
        r = modern(h, "tools/call", {"name": "mark", "arguments": args}, ELICIT)
        message = r["inputRequests"]["approval"]["params"]["message"]
        assert json.dumps(args, separators=(",", ":")) in message
        assert "the-tail-that-runs" in message
        # legacy era: the same form, as a server->client request
        initialize(h, ELICIT)
        h.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "mark", "arguments": args},
            }
        )
        req = h.recv(timeout=30)
        assert req["method"] == "elicitation/create"
        assert json.dumps(args, separators=(",", ":")) in req["params"]["message"]
        h.send({"jsonrpc": "2.0", "id": req["id"], "result": DENY})
        assert h.recv_response(7, timeout=30)["result"]["isError"] is True
    assert os.listdir(side) == []


def test_a_call_too_long_to_show_is_denied_with_a_message(tmp_path: Path) -> None:
    side = tmp_path / "side"
    side.mkdir()
    command = "echo harmless " + " " * FORM_MAX_CHARS + " ; the-tail-that-runs"
    args = {"name": "too-long", "side": str(side), "command": command}
    with host(tmp_path) as h:
        r = modern(h, "tools/call", {"name": "mark", "arguments": args}, ELICIT)
        assert r["resultType"] == "complete" and r["isError"] is True, r
        assert "more than the" in text(r) and "approval form shows whole" in text(r)
        assert '{"toolwire": {"approval": true}}' in text(r)  # how to approve it otherwise
        initialize(h, ELICIT)
        legacy = h.call("mark", args, timeout=30)["result"]  # denied without a question
        assert legacy["isError"] is True and "approval form shows whole" in text(legacy)
        # a client answering toolwire/approve receives the arguments as data and may run it
        ok = modern(h, "tools/call", {"name": "mark", "arguments": args}, TOOLWIRE_APPROVE)
        assert ok["inputRequests"]["approval"]["params"]["arguments"] == args
    assert os.listdir(side) == []


HIDDEN = {
    "\u202e": "\\u202e",  # right-to-left override
    "\u2066": "\\u2066",  # left-to-right isolate
    "\u2069": "\\u2069",  # pop directional isolate
    "\u200b": "\\u200b",  # zero-width space
    "\u2028": "\\u2028",  # line separator
    "\ufeff": "\\ufeff",  # byte order mark
    "\x9b": "\\u009b",  # C1 CSI
    "\x1b": "\\u001b",  # ESC
    "\U000e0041": "\\udb40\\udc41",  # tag latin capital A
}


def test_format_and_bidi_characters_reach_the_form_escaped(tmp_path: Path) -> None:
    side = tmp_path / "side"
    side.mkdir()
    command = "rm -rf ./" + "".join(HIDDEN) + "safe"
    args = {"name": "bidi", "side": str(side), "command": command}
    with host(tmp_path) as h:
        r = modern(h, "tools/call", {"name": "mark", "arguments": args}, ELICIT)
        message = r["inputRequests"]["approval"]["params"]["message"]
    for raw, escaped in HIDDEN.items():
        assert raw not in message, f"{raw!r} reached the form unescaped"
        assert escaped in message
    # the escapes are JSON escapes: the form still shows exactly these arguments
    shown = message.split("\n", 1)[1]
    assert json.loads(shown) == args


# ------------------------------------------------------------------ what a worker may ask


@pytest.mark.parametrize("method", ["toolwire/approve", "ping", "tools/call"])
def test_a_worker_may_not_pose_other_questions_modern(tmp_path: Path, method: str) -> None:
    caps = {**ELICIT, **TOOLWIRE_APPROVE, "sampling": {}, "roots": {}}
    with host(tmp_path) as h:
        r = modern(h, "tools/call", {"name": "pose", "arguments": {"method": method}}, caps)
        assert r["resultType"] == "complete", r  # no input request reaches the client
        assert text(r) == (
            "refused: A tool may ask the client only elicitation/create, "
            f"sampling/createMessage, roots/list; {method!r} is refused"
        )
        batch = modern(
            h,
            "tools/callBatch",
            {"calls": [{"id": 1, "name": "pose", "arguments": {"method": method}}]},
            caps,
        )
        assert batch["resultType"] == "complete", batch
        assert text(batch["results"][0]["result"]).startswith("refused: A tool may ask")
        # an allowed question still goes out
        asked = modern(
            h, "tools/call", {"name": "pose", "arguments": {"method": "roots/list"}}, caps
        )
        assert asked["resultType"] == "input_required"
        assert asked["inputRequests"]["q"]["method"] == "roots/list"


@pytest.mark.parametrize("method", ["toolwire/approve", "ping"])
def test_a_worker_may_not_pose_other_questions_legacy(tmp_path: Path, method: str) -> None:
    with host(tmp_path) as h:
        initialize(h, {**ELICIT, **TOOLWIRE_APPROVE, "roots": {}})
        h.send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "pose", "arguments": {"method": method}},
            }
        )
        resp = h.recv(timeout=30)
        assert resp.get("id") == 3 and "method" not in resp, f"the client was asked: {resp}"
        assert text(resp["result"]) == (
            "refused: A tool may ask the client only elicitation/create, "
            f"sampling/createMessage, roots/list; {method!r} is refused"
        )


# ------------------------------------------------------------------ the terminal approval


def _toolwire_call(tmp_path: Path, command: str, stdin: str) -> subprocess.CompletedProcess[str]:
    marker = tmp_path / "m.txt"
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "toolwire"),
            "call",
            "mark",
            f"path={marker}",
            f"text={command}",
            "--approve",
            "mark",
            "--root",
            str(tmp_path),
            "--no-builtins",
            "--tools",
            str(TOOLS_DIR / "agent_tools.py"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        input=stdin,
        env={**os.environ, "COLUMNS": "400"},
    )


def test_the_terminal_approval_shows_the_whole_call(tmp_path: Path) -> None:
    command = "echo harmless" + "x" * 10_000 + ";the-tail-that-runs\u202e"
    out = _toolwire_call(tmp_path, command, "n\n")
    assert out.returncode == 1 and "denied" in out.stdout.lower(), out
    assert "Allow this call? [y/N]" in out.stderr
    # The panel wraps long lines: join them, without borders, to read the whole call.
    flat = "".join(ch for ch in out.stderr if ch not in "│╭╮╰╯─ \n")
    assert "echoharmless" + "x" * 10_000 + ";the-tail-that-runs\\u202e" in flat
    assert "\u202e" not in out.stderr
    assert not (tmp_path / "m.txt").exists()


def test_the_terminal_approval_denies_a_call_too_long_to_show(tmp_path: Path) -> None:
    command = "echo harmless" + "x" * 40_000 + ";the-tail-that-runs"
    out = _toolwire_call(tmp_path, command, "y\n")
    assert out.returncode == 1, out
    assert "the terminal approval shows whole" in out.stdout
    assert "Allow this call?" not in out.stderr
    assert not (tmp_path / "m.txt").exists()


def test_hidden_matches_every_control_and_format_character() -> None:
    """:data:`toolwire.showntext.HIDDEN` against this Python's Unicode database: every
    character of categories Cc, Cf, Cs, Zl, Zp matches; what else matches is unassigned
    here (format characters of a later Unicode version)."""
    import unicodedata

    from toolwire.showntext import HIDDEN

    for c in range(0x110000):
        ch = chr(c)
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            assert HIDDEN.fullmatch(ch), f"U+{c:04X} ({category}) is not escaped"
        elif HIDDEN.fullmatch(ch):
            assert category == "Cn", f"U+{c:04X} ({category}) is escaped"


# ------------------------------------------------------------------ progress tokens are ids


def test_a_progress_token_of_another_type_reaches_no_listener() -> None:
    """A request's progress listener hears only its own token: ``1.0`` or ``true`` are equal
    to ``1`` as dict keys in Python, but not the same JSON token (two real Sessions back
    to back over pipes)."""
    import anyio

    from toolwire import RequestContext, Session
    from toolwire.streams import FdReceiveStream, FdSendStream

    heard: list[Any] = []

    async def main() -> None:
        a_r, b_w = os.pipe()
        b_r, a_w = os.pipe()
        a = Session(FdReceiveStream(a_r), FdSendStream(a_w), name="a")  # type: ignore[arg-type]
        b = Session(FdReceiveStream(b_r), FdSendStream(b_w), name="b")  # type: ignore[arg-type]

        async def work(params: Any, ctx: RequestContext) -> Any:
            token = ctx.progress_token
            assert type(token) is int
            for fake in (float(token), token == 1, token == 0, str(token)):
                ctx.session.notify(
                    "notifications/progress", {"progressToken": fake, "progress": 99}
                )
            ctx.session.notify("notifications/progress", {"progressToken": token, "progress": 1})
            return "done"

        b.router.on_request("work", work)
        async with a.running(), b.running():
            for token in (1, 0):
                result = await a.request(
                    "work",
                    {"_meta": {"progressToken": token}},
                    timeout=10,
                    on_progress=lambda method, params: heard.append(params),
                )
                assert result == "done"

    anyio.run(main)
    assert [p["progress"] for p in heard] == [1, 1], heard

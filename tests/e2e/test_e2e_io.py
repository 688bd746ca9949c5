"""End to end: the byte stream — stdout hygiene, big and non-ASCII messages, bad frames."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e_helpers import FRAMINGS, text_of, wait_until, wire_host


@pytest.mark.parametrize("framing", FRAMINGS)
def test_stdout_hygiene(tmp_path: Path, framing: str) -> None:
    with wire_host(tmp_path, framing) as h:
        # the tool module printed at import; a handler prints, writes sys.stdout and fd 1,
        # and starts a child writing to its stdout
        assert text_of(h.call("noisy")) == "quiet wire"
        assert h.request("ping")["result"] == {}
        markers = [
            "PRINTED-AT-IMPORT",
            "SYS-STDOUT-AT-IMPORT",
            "FD1-AT-IMPORT",
            "PRINTED-BY-HANDLER",
            "SYS-STDOUT-BY-HANDLER",
            "FD1-BY-HANDLER",
            "CHILD-STDOUT",
        ]
        # all of it shows on stderr ...
        wait_until(
            lambda: all(m in h.stderr for m in markers), what=f"markers on stderr: {h.stderr}"
        )
        h.close()
        raw = bytes(h.raw_stdout)
        # ... none of it in the protocol stream, which stays parseable message by message
        for m in markers:
            assert m.encode() not in raw
        assert not [m for m in h.drain() if isinstance(m, tuple)]
        if framing == "ndjson":
            for line in raw.splitlines():
                json.loads(line)


@pytest.mark.parametrize("framing", FRAMINGS)
def test_five_megabyte_arguments_and_results(tmp_path: Path, framing: str) -> None:
    big = ("0123456789abcdef" * (5 * 1024 * 1024 // 16))[:-3] + "end"
    with wire_host(tmp_path, framing) as h:
        for tool in ("echo", "echo_sync"):
            r = h.call(tool, {"text": big}, timeout=30)
            assert r["result"]["content"][0]["text"] == big
        assert h.request("ping")["result"] == {}


def test_non_ascii_text_in_content_length_framing(tmp_path: Path) -> None:
    text = "naïve 😀 中文 \u2028 \u2029 \u0085 עברית " * 50
    with wire_host(tmp_path, "lsp") as h:
        r = h.call("echo", {"text": text})
        assert text_of(r) == text
        # the reader in hostproc reads exactly Content-Length bytes, so a header counting
        # characters instead of bytes would have broken the parse of this and the next
        assert h.request("ping")["result"] == {}
        raw = bytes(h.raw_stdout)
        assert "😀".encode() in raw  # sent as UTF-8, not escaped


def test_unicode_line_separators_in_ndjson(tmp_path: Path) -> None:
    text = "a\u2028b\u2029c\u0085d"
    with wire_host(tmp_path, "ndjson") as h:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": text}},
            },
            ensure_ascii=False,
        ).encode()
        assert "\u2028".encode() in body
        h.send_raw(body + b"\n")
        assert text_of(h.recv_response(1)) == text


@pytest.mark.parametrize("framing_arg", ["auto", "lsp"])
def test_malformed_lsp_header_gets_an_error_and_the_host_keeps_serving(
    tmp_path: Path, framing_arg: str
) -> None:
    with wire_host(tmp_path, "lsp", args=["--framing", framing_arg]) as h:
        # After a bad header block the body's length is unknown: the host answers
        # -32700 and drops bytes up to the next Content-Length header.
        for bad in (b"Content-Length: twelve\r\n\r\n{}", b"Content-Type: a/b\r\n\r\n{}"):
            h.send_raw(bad)
            err = h.recv()
            assert err["id"] is None and err["error"]["code"] == -32700
            assert h.request("ping")["result"] == {}
        # lower-case name, no space, LF-only line endings, extra headers: all accepted
        body = b'{"jsonrpc":"2.0","id":"lf","method":"ping"}'
        h.send_raw(b"content-length:%d\nX-Extra: 1\n\n%s" % (len(body), body))
        assert h.recv_response("lf")["result"] == {}


@pytest.mark.parametrize("framing", FRAMINGS)
def test_oversized_message_gets_an_error_and_the_host_keeps_serving(
    tmp_path: Path, framing: str
) -> None:
    with wire_host(tmp_path, framing, args=["--max-message-size", "2000"]) as h:
        big = {
            "jsonrpc": "2.0",
            "id": "big",
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "x" * 5000}},
        }
        h.send(big)
        err = h.recv()
        assert err["id"] is None
        assert err["error"]["code"] == -32600
        assert "2000" in err["error"]["message"]
        r = h.call("echo", {"text": "y" * 1000})
        assert text_of(r) == "y" * 1000


@pytest.mark.parametrize("framing", FRAMINGS)
def test_random_garbage_then_a_valid_request(tmp_path: Path, framing: str) -> None:
    garbage = bytes(range(256)) * 4 + b"\n\r\n\r\n"
    with wire_host(tmp_path, framing, args=["--framing", framing]) as h:
        h.send_raw(garbage)
        h.send({"jsonrpc": "2.0", "id": "valid", "method": "ping"})
        r = h.recv_response("valid")
        assert r["result"] == {}
        for m in h.drain():  # whatever came before is an error reply with a null id
            assert m["id"] is None and m["error"]["code"] in (-32700, -32600)


def test_auto_detection_answers_garbage_and_then_ndjson(tmp_path: Path) -> None:
    with wire_host(tmp_path, "ndjson", initialize=False) as h:
        h.send_raw(b"hello, this is not JSON\n")
        assert h.recv()["error"]["code"] == -32700
        assert h.initialize()["result"]["protocolVersion"] == "2025-11-25"


def test_forced_framing_is_used_from_the_first_byte(tmp_path: Path) -> None:
    # --framing lsp: an ndjson line is not a header block, so it is an error, not a message
    with wire_host(tmp_path, "lsp", args=["--framing", "lsp"], initialize=False) as h:
        h.send_raw(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n\r\n')
        assert h.recv()["error"]["code"] == -32700
        assert h.request("ping")["result"] == {}


@pytest.mark.parametrize("framing", FRAMINGS)
def test_concurrent_large_replies_and_notifications_never_interleave(
    tmp_path: Path, framing: str
) -> None:
    # One writer serialises output: with many big replies and progress notifications
    # produced at once, every frame still parses on its own.
    with wire_host(tmp_path, framing) as h:
        texts = {f"e{i}": chr(0x4E00 + i) * (100_000 + i) for i in range(20)}
        for i, (rid, text) in enumerate(texts.items()):
            tool = "echo" if i % 2 else "echo_sync"
            h.send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "method": "tools/call",
                    "params": {"name": tool, "arguments": {"text": text}},
                }
            )
            h.send(
                {
                    "jsonrpc": "2.0",
                    "id": f"p{i}",
                    "method": "tools/call",
                    "params": {
                        "name": "progress",
                        "arguments": {"n": 20},
                        "_meta": {"progressToken": i},
                    },
                }
            )
        for rid, text in texts.items():
            assert text_of(h.recv_response(rid, timeout=30)) == text
        for i in range(20):
            assert text_of(h.recv_response(f"p{i}", timeout=30)) == "done"
        notes = [
            m
            for m in h.drain()
            if isinstance(m, dict) and m.get("method") == "notifications/progress"
        ]
        # While the writer is behind (2 MB of replies queued), progress is coalesced to
        # the newest report per token (protocol.md §6): fewer may arrive, never out of
        # order, never a value that was not reported, every one a whole frame.
        assert len(notes) <= 20 * 20
        for i in range(20):
            seen = [n["params"]["progress"] for n in notes if n["params"]["progressToken"] == i]
            assert seen == sorted(set(seen)) and set(seen) <= set(range(1, 21)), (i, seen)

"""End to end against the real host: protocol edge cases of issue 21 (point 6) — a bare
JSON line on an LSP connection, ``logging/setLevel`` with a non-string level, the documented nesting limit of 1,024 levels
on every decoding path, a result nested too deep to encode."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inproc import wire_host


def test_bare_json_line_on_an_lsp_connection_gets_a_parse_error(tmp_path: Path) -> None:
    with wire_host(tmp_path, "lsp") as h:
        # No header block: nothing else follows, so the host must answer this line alone.
        h.send_raw(b'{"jsonrpc":"2.0","id":7,"method":"ping"}\n')
        err = h.recv()
        assert err["id"] is None and err["error"]["code"] == -32700
        # The connection carries on: the next framed message is served.
        assert h.request("ping")["result"] == {}
        # A bare line glued in front of a framed message: an error, then the message.
        body = b'{"jsonrpc":"2.0","id":8,"method":"ping"}'
        h.send_raw(body + b"\n" + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        assert h.recv()["error"]["code"] == -32700
        assert h.recv() == {"jsonrpc": "2.0", "id": 8, "result": {}}


@pytest.mark.parametrize("level", [{"a": 1}, ["info"], 3, None, True])
def test_set_level_with_a_non_string_level_is_invalid_params(tmp_path: Path, level: object) -> None:
    with wire_host(tmp_path) as h:
        r = h.request("logging/setLevel", {"level": level})
        assert r["error"]["code"] == -32602, r
        assert "expected a string" in r["error"]["message"]
        assert h.request("logging/setLevel", {"level": "debug"})["result"] == {}


@pytest.mark.parametrize("big_number", [False, True], ids=["orjson", "stdlib"])
def test_nesting_limit_is_1024_levels_on_every_decoding_path(
    tmp_path: Path, big_number: bool
) -> None:
    # A 20-digit integer sends the message through the stdlib decoder (orjson turns it
    # into a float); both paths must take exactly 1,024 levels and refuse 1,025.
    leaf = "12345678901234567890" if big_number else "1"

    def ping(levels: int) -> bytes:  # envelope, params, _meta: 3 levels, then arrays
        arrays = levels - 3
        return b'{"jsonrpc":"2.0","id":"deep","method":"ping","params":{"_meta":{"x":%s}}}\n' % (
            ("[" * arrays + leaf + "]" * arrays).encode()
        )

    with wire_host(tmp_path) as h:
        h.send_raw(ping(1024))
        assert h.recv() == {"jsonrpc": "2.0", "id": "deep", "result": {}}
        h.send_raw(ping(1025))
        err = h.recv()
        assert err["id"] is None and err["error"]["code"] == -32700, err
        assert h.request("ping")["result"] == {}


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_a_result_nested_too_deep_to_encode_is_32603_and_the_host_serves_on(
    tmp_path: Path, isolation: str
) -> None:
    # orjson stops at 255 levels and the stdlib encoder, its fallback, recursed into a
    # RecursionError that the reply's encoding did not catch (a worker process died of
    # it; the host itself sent no answer).
    with wire_host(tmp_path, args=["--isolation", isolation]) as h:
        served = h.call("deep", {"levels": 600})
        assert served["result"]["content"][0]["text"] == "x", served
        for levels in (5_000, 200_000):
            r = h.call("deep", {"levels": levels}, timeout=60)
            assert "error" in r and r["error"]["code"] == -32603, (levels, str(r)[:300])
            assert "not valid JSON" in r["error"]["message"], r
            assert "nested deeper than 1024 levels" in r["error"]["message"], r
        assert h.request("ping")["result"] == {}


def test_integer_ids_round_trip_up_to_4300_digits_and_longer_ones_are_invalid_requests(
    tmp_path: Path,
) -> None:
    # Python converts at most 4,300 decimal digits to an int (the conversion is
    # quadratic): longer integer ids were refused as a -32700 "number is infinity".
    with wire_host(tmp_path) as h:
        for digits in ("7" * 4300, "-" + "9" * 4300):
            h.send_raw(b'{"jsonrpc":"2.0","id":%s,"method":"ping"}\n' % digits.encode())
            assert h.recv() == {"jsonrpc": "2.0", "id": int(digits), "result": {}}
        for digits in ("7" * 4301, "-" + "9" * 4301, "1" * 200_000):
            h.send_raw(b'{"jsonrpc":"2.0","id":%s,"method":"ping"}\n' % digits.encode())
            err = h.recv()
            assert err["id"] is None and err["error"]["code"] == -32600, err
            message = err["error"]["message"]
            assert f"integer of {len(digits.lstrip('-'))} digits" in message, message
            assert "limit of 4300 digits" in message and "as a string" in message, message
        # A string id has no such bound.
        assert h.request("ping", id="7" * 200_000)["result"] == {}
        assert h.request("ping")["result"] == {}

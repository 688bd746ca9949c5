"""JSON-RPC 2.0 envelope validation (toolwire.messages) and the JSON codec (toolwire._json)."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import _json
from toolwire.errors import INTERNAL_ERROR, INVALID_REQUEST, JsonRpcError
from toolwire.messages import Invalid, Notification, Request, Response, classify


@pytest.mark.parametrize("id", ["abc", "", 0, -1, 2**63 - 1, -(2**63), 2**80, -(2**80)])
def test_valid_ids_are_kept_exactly(id: Any) -> None:
    msg = classify({"jsonrpc": "2.0", "id": id, "method": "ping"})
    assert isinstance(msg, Request)
    assert msg.id == id and type(msg.id) is type(id)
    assert msg.params is None  # a request without params is valid


@pytest.mark.parametrize("id", [None, 1.0, 1.5, True, False, {}, [], {"a": 1}])
def test_invalid_ids_are_invalid_requests(id: Any) -> None:
    msg = classify({"jsonrpc": "2.0", "id": id, "method": "ping"})
    assert isinstance(msg, Invalid)
    assert msg.error.code == INVALID_REQUEST
    assert msg.id is None


@pytest.mark.parametrize(
    "obj",
    [
        {"id": 1, "method": "ping"},  # jsonrpc missing
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": 2.0, "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": 5},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "x"},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": 3},
        {"jsonrpc": "2.0", "id": 1},  # neither method nor result
    ],
)
def test_invalid_requests_keep_a_usable_id(obj: dict[str, Any]) -> None:
    msg = classify(obj)
    assert isinstance(msg, Invalid)
    assert msg.error.code == INVALID_REQUEST
    # the id is echoed when it is usable, null otherwise
    assert msg.id in (1, None)


@pytest.mark.parametrize("obj", [1, "x", None, True, [1]])
def test_non_objects_are_invalid(obj: Any) -> None:
    assert isinstance(classify(obj), Invalid)


def test_null_params_count_as_absent() -> None:
    req = classify({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": None})
    assert isinstance(req, Request) and req.params is None
    note = classify({"jsonrpc": "2.0", "method": "exit", "params": None})
    assert isinstance(note, Notification) and note.params is None


def test_notifications_and_responses() -> None:
    n = classify({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert isinstance(n, Notification) and n.params is None
    r = classify({"jsonrpc": "2.0", "id": 0, "result": None})
    assert isinstance(r, Response) and r.id == 0 and r.error is None
    e = classify({"jsonrpc": "2.0", "id": "a", "error": {"code": -32601, "message": "no"}})
    assert isinstance(e, Response) and e.error is not None and e.error.code == -32601
    bad = classify({"jsonrpc": "2.0", "id": "a", "error": "oops"})
    assert isinstance(bad, Response) and bad.error is not None
    assert bad.error.code == INTERNAL_ERROR


@pytest.mark.parametrize(
    ("obj", "id"),
    [
        ({"jsonrpc": "2.0", "id": 1, "result": 1, "error": {"code": 1, "message": "x"}}, 1),
        ({"jsonrpc": "1.0", "id": "a", "result": 1}, "a"),
        ({"jsonrpc": "2.0", "result": {}}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "result": {}}, None),
    ],
)
def test_malformed_responses_are_responses_carrying_an_error(obj: dict[str, Any], id: Any) -> None:
    # a response is never answered: the session fails the request it names instead
    msg = classify(obj)
    assert isinstance(msg, Response) and msg.id == id
    assert msg.error is not None and msg.error.code == INVALID_REQUEST


def test_error_to_dict_omits_absent_data() -> None:
    assert JsonRpcError(-32601).to_dict() == {"code": -32601, "message": "Method not found"}
    assert JsonRpcError(-32602, "x", {"a": 1}).to_dict()["data"] == {"a": 1}


# ---------------------------------------------------------------------------- _json


@pytest.mark.parametrize(
    "text",
    [
        b"-9223372036854775809",
        b"18446744073709551616",
        b"123456789012345678901234567890",
        b'{"id": -99999999999999999999999, "x": 1.5}',
    ],
)
def test_big_integers_stay_exact(text: bytes) -> None:
    assert _json.loads(text) == json.loads(text)
    assert type(_json.loads(text)) is type(json.loads(text))
    assert _json.loads(_json.dumps(_json.loads(text))) == json.loads(text)


def test_lone_surrogates_round_trip_as_valid_utf8() -> None:
    value = _json.loads(b'{"t":"a\\ud800b"}')
    assert value == {"t": "a\ud800b"}
    body = _json.dumps(value)
    body.decode("utf-8")  # valid UTF-8
    assert _json.loads(body) == value


@pytest.mark.parametrize(
    "text", [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"[1,]", b"\xff", b"", b"{} {}"]
)
def test_non_json_is_refused(text: bytes) -> None:
    with pytest.raises(ValueError):
        _json.loads(text)


def test_deep_nesting_is_refused_not_crashing() -> None:
    with pytest.raises(ValueError):
        _json.loads(b"[" * 100_000 + b"]" * 100_000)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=100).map(str.encode))
def test_loads_raises_only_value_error(data: bytes) -> None:
    with contextlib.suppress(ValueError):
        _json.loads(data)


def test_dumps_is_compact_and_single_line() -> None:
    body = _json.dumps({"a": [1, 2], "b": "x\ny\u2028"})
    assert body == '{"a":[1,2],"b":"x\\ny\u2028"}'.encode()
    with pytest.raises(TypeError):
        _json.dumps({"a": object()})

"""The value classes made without dataclasses keep the rules a dataclass gave them."""

from __future__ import annotations

import copy
import pickle
from dataclasses import FrozenInstanceError

import pytest
from toolwire.host import Block, ResultPatch
from toolwire.host.tools.hooks import NOT_GIVEN, IncomingCall

from toolwire.errors import JsonRpcError
from toolwire.framing import FramingError
from toolwire.messages import Invalid, Notification, Request, Response
from toolwire.modern import Envelope


def test_repr_names_every_field_in_order() -> None:
    assert repr(Request(1, "ping", None)) == "Request(id=1, method='ping', params=None)"
    assert repr(Block("no")) == "Block(reason='no')"
    assert (
        repr(FramingError(-32700, "bad", 3))
        == "FramingError(code=-32700, message='bad', dropped=3)"
    )


def test_equality_is_by_class_and_fields() -> None:
    assert Request(1, "a", {}) == Request(1, "a", {})
    assert Request(1, "a", {}) != Request(2, "a", {})
    assert Notification("a", None) != Request(1, "a", None)
    assert IncomingCall("x", "t", {}) == IncomingCall("x", "t", {}, None)
    assert IncomingCall("x", "t", {}) != IncomingCall("x", "t", {}, "b")
    assert Block() == Block(None) and Block("a") != Block("b")
    assert Request(1, "a", None) != (1, "a", None)


def test_mutable_records_are_unhashable_and_frozen_ones_hash_by_value() -> None:
    with pytest.raises(TypeError):
        hash(Request(1, "a", None))
    with pytest.raises(TypeError):
        hash(IncomingCall("x", "t", {}))
    assert hash(Block("a")) == hash(Block("a"))
    assert len({FramingError(1, "m"), FramingError(1, "m", 0), FramingError(2, "m")}) == 2


def test_frozen_records_refuse_assignment_and_deletion() -> None:
    patch = ResultPatch(content="x")
    with pytest.raises(FrozenInstanceError):
        patch.content = "y"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del patch.details  # type: ignore[misc]
    with pytest.raises(AttributeError):
        Block().other = 1  # type: ignore[attr-defined]
    call = IncomingCall("x", "t", {})
    call.name = "u"  # mutable, as before
    assert call.name == "u"


def test_defaults_and_fresh_mutable_default() -> None:
    patch = ResultPatch()
    assert patch.content is NOT_GIVEN and patch.terminate is NOT_GIVEN
    a, b = Envelope("2026-07-28"), Envelope("2026-07-28")
    assert a.capabilities == {} and a.capabilities is not b.capabilities
    assert FramingError(-32600, "m").dropped == 0


@pytest.mark.parametrize(
    "value",
    [
        Request("r", "m", [1]),
        Response(1, {"ok": True}, None),
        Invalid(None, JsonRpcError(-32600, "bad")),
        ResultPatch(content="x", is_error=True),
        Block("r"),
        Envelope("v", {"sampling": {}}, None, "info"),
        FramingError(-32700, "m", 5),
    ],
)
def test_copy_deepcopy_and_pickle_give_an_equal_value(value: object) -> None:
    assert copy.copy(value).__class__ is value.__class__
    deep = copy.deepcopy(value)
    assert deep is not value
    if not isinstance(value, Invalid):  # JsonRpcError compares by identity
        assert deep == value
        assert pickle.loads(pickle.dumps(value)) == value

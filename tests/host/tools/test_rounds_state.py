"""requestState expiry (host/tools/rounds.py ``StateSigner``): a state lives STATE_LIFETIME
seconds, then is refused with -32602 "requestState has expired; call again".

The host's clock is replaced (``time.time`` as the module sees it), so the test waits
for nothing; the e2e rules of requestState (altered, foreign, wrong type) are in
test_modern_inputs.py and test_sandbox_escape_approvals.py.
"""

from __future__ import annotations

import time
import types

import pytest
from toolwire.host.tools import rounds
from toolwire.host.tools.rounds import STATE_LIFETIME, StateSigner

from toolwire.errors import JsonRpcError


def _clock(monkeypatch: pytest.MonkeyPatch, now: float) -> None:
    monkeypatch.setattr(rounds, "time", types.SimpleNamespace(time=lambda: now))


def test_a_state_lives_an_hour_then_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    assert STATE_LIFETIME == 3600.0
    signer = StateSigner(key=b"k" * 32)
    start = time.time()
    _clock(monkeypatch, start)
    state = signer.sign({"round": 1})
    payload = signer.verify(state)
    assert payload["round"] == 1
    assert start + STATE_LIFETIME - 1 <= payload["exp"] <= start + STATE_LIFETIME + 1
    _clock(monkeypatch, start + STATE_LIFETIME - 5)
    assert signer.verify(state)["round"] == 1  # still good just before the hour
    _clock(monkeypatch, start + STATE_LIFETIME + 5)
    with pytest.raises(JsonRpcError) as e:
        signer.verify(state)
    assert e.value.code == -32602
    assert "requestState has expired; call again" in str(e.value)


def test_the_lifetime_is_the_signers(monkeypatch: pytest.MonkeyPatch) -> None:
    signer = StateSigner(key=b"k" * 32, lifetime=10)
    _clock(monkeypatch, 1_000_000.0)
    state = signer.sign({})
    _clock(monkeypatch, 1_000_009.0)
    signer.verify(state)
    _clock(monkeypatch, 1_000_012.0)
    with pytest.raises(JsonRpcError, match="expired"):
        signer.verify(state)

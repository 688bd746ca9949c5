"""Input rounds of MCP 2026-07-28: a call that asks answers with *input required*.

A ``tools/call`` or ``tools/callBatch`` that needs an answer from the client (an
elicitation, a sampling, the roots, an approval) is run again by the client with the
answers (multi-round-trip requests, SEP-2322; protocol.md §11.7). An :class:`InputRound`
holds what one attempt brought and records what it still asks; answers given so far
travel in a ``requestState`` signed by :class:`StateSigner`.

A round travels with its request's channel
(:class:`~toolwire.host.tools.channel.ModernChannel`): every question of the call, a
tool's own or the host's approval, is asked through the channel, which answers it from
the round or records it there. Nothing here is held per task or per context.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Sequence
from typing import Any

from toolwire import _json
from toolwire.constants import APPROVE, CALL_BATCH, EXTENSION_CAPABILITY
from toolwire.errors import INVALID_PARAMS, JsonRpcError
from toolwire.messages import RequestId
from toolwire.modern import (
    INPUT_METHODS,
    MISSING_CLIENT_CAPABILITY,
    RESULT_INPUT_REQUIRED,
    Envelope,
)

__all__ = [
    "STATE_LIFETIME",
    "InputNeeded",
    "InputRound",
    "StateSigner",
    "call_key",
    "request_digest",
]

STATE_LIFETIME = 3600.0
"""Seconds a ``requestState`` stays valid after it was issued (one hour)."""


def call_key(call_id: RequestId) -> str:
    """The canonical JSON of a call id, its type included: ``"1"`` for the string ``"1"``,
    ``1`` for the integer. The part of a batch's ``inputRequests`` keys that names the
    call (``approval/ID``, ``ID/KEY``): ids that differ only in type never share a key,
    and a key starting with ``"``, ``-`` or a digit never equals one starting with a
    letter (such as ``approval/``)."""
    return _json.dumps(call_id).decode("utf-8")


def _mac(key: bytes, data: bytes) -> bytes:
    """HMAC-SHA256 of ``data`` (hashlib and hmac load OpenSSL: imported when first
    needed, so a worker process that never signs a state does not pay for them)."""
    import hashlib
    import hmac

    return hmac.new(key, data, hashlib.sha256).digest()


class InputNeeded(Exception):
    """Raised inside a 2026-07-28 call when it needs an answer the request did not bring.

    The host answers the call with an input-required result (or -32021, or -32602)
    whatever the tool does with this exception: the round records what was asked.
    """


class StateSigner:
    """Signs and checks ``requestState`` with HMAC-SHA256 under a random per-host key,
    or under a key ring shared by a fleet of hosts (``--state-keys``, :mod:`toolwire.host.serve.http.fleet`).

    A state is ``BASE64URL(JSON payload) "." BASE64URL(MAC)``. With the random key, which
    lives only in the host's memory, a state is valid only for the host process that
    issued it. With a key ring the first key signs and every key verifies, so any host
    holding the ring finishes a round another began, and a key being rotated out keeps
    verifying until it is removed from the ring. With an ``audience`` every state names
    it (``aud``) and a state naming another audience is refused (MCP 2026-07-28 security
    considerations: bind the state to its issuer).

    Args:
        key: the one key (default: 32 random bytes).
        lifetime: seconds a state stays valid.
        keys: a key ring (overrides ``key``): the first signs, all verify.
        audience: the audience states are issued for and must name (None: not bound).
    """

    def __init__(
        self,
        key: bytes | None = None,
        lifetime: float = STATE_LIFETIME,
        *,
        keys: Sequence[bytes] = (),
        audience: str | None = None,
    ) -> None:
        import secrets

        self._keys = list(keys) or [key if key is not None else secrets.token_bytes(32)]
        self.lifetime = lifetime
        self.audience = audience

    def sign(self, payload: dict[str, Any]) -> str:
        """The signed state for ``payload`` (a JSON object), with an expiry (and the
        audience) added."""
        body = dict(payload, exp=int(time.time() + self.lifetime))
        if self.audience is not None:
            body["aud"] = self.audience
        raw = _json.dumps(body)
        mac = _mac(self._keys[0], raw)
        return _b64(raw) + "." + _b64(mac)

    def verify(self, state: Any) -> dict[str, Any]:
        """The payload of a state this host signed.

        Raises:
            JsonRpcError: -32602 when the state is not a string, was altered, was not
                signed with a key this host holds, expired, or names another audience
                (-32602 is what the reference server and the SDKs answer for a bad state;
                the specification asks only for a JSON-RPC error).
        """
        if type(state) is not str:
            raise JsonRpcError(INVALID_PARAMS, "requestState must be a string")
        raw_b64, _, mac_b64 = state.partition(".")
        try:
            raw = _unb64(raw_b64)
            mac = _unb64(mac_b64)
        except ValueError:
            raise JsonRpcError(INVALID_PARAMS, "requestState is malformed") from None
        import hmac

        if not any(hmac.compare_digest(_mac(key, raw), mac) for key in self._keys):
            raise JsonRpcError(
                INVALID_PARAMS, "requestState was altered or was not issued by this host"
            )
        payload = _json.loads(raw)
        if type(payload) is not dict:  # pragma: no cover - only this host signs
            raise JsonRpcError(INVALID_PARAMS, "requestState is malformed")
        if type(payload.get("exp")) is not int or payload["exp"] < time.time():
            raise JsonRpcError(INVALID_PARAMS, "requestState has expired; call again")
        if self.audience is not None and payload.get("aud") != self.audience:
            raise JsonRpcError(INVALID_PARAMS, "requestState was issued for another audience")
        return payload


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise ValueError(str(exc)) from None


def request_digest(method: str, params: dict[str, Any]) -> str:
    """SHA-256 of the method and the params a retry must repeat (everything but ``_meta``,
    ``inputResponses`` and ``requestState``), so a state cannot be replayed on another call."""
    core = {k: v for k, v in params.items() if k not in _ROUND_KEYS}
    import hashlib

    return hashlib.sha256(_json.dumps([method, core])).hexdigest()


_ROUND_KEYS = frozenset({"_meta", "inputResponses", "requestState"})


def _check_answer(method: str, answer: Any) -> bool:
    """Whether ``answer`` has the shape of a result of ``method`` (MCP 2026-07-28 schema)."""
    if type(answer) is not dict:
        return False
    if method == "elicitation/create":
        content = answer.get("content")
        return answer.get("action") in ("accept", "decline", "cancel") and (
            content is None or type(content) is dict
        )
    if method == "sampling/createMessage":
        return answer.get("role") in ("user", "assistant") and "content" in answer
    if method == "roots/list":
        return type(answer.get("roots")) is list
    return True  # toolwire/approve: ApprovalDecision.from_wire checks it


class InputRound:
    """One attempt at a 2026-07-28 ``tools/call`` (or ``tools/callBatch``) that may ask.

    Built from the request: the answers carried over in a verified ``requestState`` plus
    this retry's ``inputResponses``. Each ask (``ctx.elicit`` and its siblings, an
    approval) either finds its answer here or is recorded as asked; after the handler
    ran, :meth:`outcome` turns what was recorded into the reply.

    Attributes:
        envelope: the request's envelope (its declared capabilities decide what may be asked).
        asked: key → ``{method, params}`` still to be answered, in the order asked.
        missing: capabilities a needed ask requires but the request did not declare.
        error: a malformed answer, reported as -32602.
    """

    def __init__(
        self,
        envelope: Envelope,
        method: str,
        params: dict[str, Any],
        signer: StateSigner,
    ) -> None:
        self.envelope = envelope
        self.signer = signer
        self.batch = method == CALL_BATCH
        self.digest = request_digest(method, params)
        self.asked: dict[str, dict[str, Any]] = {}
        self.missing: dict[str, Any] = {}
        self.error: JsonRpcError | None = None
        self.used: dict[str, Any] = {}
        self.signed: dict[str, Any] = {}
        self.asked_before: frozenset[str] = frozenset()
        state = params.get("requestState")
        if state is not None:
            payload = signer.verify(state)
            if payload.get("d") != self.digest:
                raise JsonRpcError(
                    INVALID_PARAMS,
                    "requestState belongs to another request (method, tool or arguments differ)",
                )
            answers = payload.get("r")
            self.signed = dict(answers) if type(answers) is dict else {}
            asked = payload.get("q")
            self.asked_before = frozenset(asked) if type(asked) is list else frozenset()
        responses = params.get("inputResponses")
        if responses is not None and type(responses) is not dict:
            raise JsonRpcError(INVALID_PARAMS, "inputResponses must be an object")
        self.responses: dict[str, Any] = responses or {}

    def answer(self, key: str, method: str, params: dict[str, Any], *, signed_only: bool) -> Any:
        """The answer to the request ``method`` under ``key``; raises :class:`InputNeeded`
        after recording what is missing.

        Args:
            signed_only: accept an answer only for a request this host asked (its key is
                named in the verified ``requestState``); used for approvals, so a client
                cannot approve a call before it was shown to its user.
        """
        capability = EXTENSION_CAPABILITY if method == APPROVE else INPUT_METHODS[method]
        if key in self.signed:
            answer = self.signed[key]
        elif key in self.responses and (not signed_only or key in self.asked_before):
            answer = self.responses[key]
            if not _check_answer(method, answer):
                self.error = JsonRpcError(
                    INVALID_PARAMS,
                    f"inputResponses[{key!r}] is not a valid {method} result",
                    {"key": key},
                )
                raise InputNeeded(key)
        else:
            if not self.envelope.declares(capability):
                self.missing[capability] = {}
                raise InputNeeded(key)
            self.asked[key] = {"method": method, "params": params}
            raise InputNeeded(key)
        self.used[key] = answer
        return answer

    def outcome(self) -> dict[str, Any] | None:
        """The reply when the call asked for something: an input-required result; None
        when it did not (its own result stands).

        Raises:
            JsonRpcError: -32602 for a malformed answer; -32021 for a needed capability
                the request did not declare.
        """
        if self.error is not None:
            raise self.error
        if self.missing:
            names = ", ".join(sorted(self.missing))
            raise JsonRpcError(
                MISSING_CLIENT_CAPABILITY,
                f"This call needs the client capability {names}, which the request did not declare",
                {"requiredCapabilities": dict(self.missing)},
            )
        if not self.asked:
            return None
        # Answers given so far travel in the signed state: inputResponses apply to one
        # retry only, and the handler runs from the start each time.
        state = self.signer.sign({"d": self.digest, "r": self.used, "q": sorted(self.asked)})
        return {
            "resultType": RESULT_INPUT_REQUIRED,
            "inputRequests": dict(self.asked),
            "requestState": state,
        }

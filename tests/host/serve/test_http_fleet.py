"""Replicas of one fleet (issue 25 points 1 and 2), each a real ``toolwire serve --http``:

* a round begun on replica A is finished on replica B holding the same key ring
  (``--state-keys``, ``[fleet] state_keys``) and audience (``--audience``), while a
  tampered, expired, replayed-by-another-principal or foreign-audience state is refused
  with -32602 (HTTP 400), and a rotated-out key verifies until it leaves the ring;
* a ``subscriptions/listen`` stream on A hears a tools list change made on B through a
  real redis-server (``--bus``), and without a bus a replica still tells its own.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

from tests.e2e_helpers import WIRE_TOOLS
from tests.http_support import HttpHost, http_host, modern_request, run_host_expect_exit
from tests.redis_support import redis_server

MODERN_TOOLS = str(Path(WIRE_TOOLS).parent / "modern_tools.py")
ISSUER = "https://auth.example"
AUDIENCE = "https://tools.example/mcp"
WAIT = 60.0
"""Seconds to wait for an answer or a notification: a bound on a hang, not a speed."""


def new_key() -> bytes:
    return secrets.token_bytes(32)


def write_ring(path: Path, *keys: bytes) -> Path:
    lines = ["# toolwire requestState keys: the first signs", ""]
    lines += [base64.b64encode(k).decode("ascii") for k in keys]
    path.write_text("\n".join(lines) + "\n")
    return path


# --------------------------------------------------------------------------- key ring


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("fleet")
    signing = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(signing.public_key()))
    jwk.update(kid="k1", use="sig", alg="RS256")
    (base / "jwks.json").write_text(json.dumps({"keys": [jwk]}))
    k1, k2 = new_key(), new_key()
    secrets_dir = base / "secrets"
    secrets_dir.mkdir()
    ring = write_ring(secrets_dir / "ring", k1)
    # The OAuth table names no audience: the fleet's audience is the default one.
    (base / "toolwire.toml").write_text(
        f'[http.oauth]\nissuer = "{ISSUER}"\njwks = "{base / "jwks.json"}"\n'
        f'[fleet]\nstate_keys = "{ring}"\naudience = "{AUDIENCE}"\n'
    )
    root = base / "root"
    root.mkdir()
    return {
        "base": base,
        "root": root,
        "config": str(base / "toolwire.toml"),
        "secrets": secrets_dir,
        "signing": signing,
        "k1": k1,
        "k2": k2,
    }


def token(fleet: dict[str, Any], sub: str = "alice") -> str:
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "exp": int(time.time()) + 600}
    return str(jwt.encode(claims, fleet["signing"], algorithm="RS256", headers={"kid": "k1"}))


def replica(fleet: dict[str, Any], *args: str) -> Any:
    return http_host(fleet["root"], ["--config", fleet["config"], *args], tools=[MODERN_TOOLS])


@pytest.fixture(scope="module")
def pair(fleet: dict[str, Any]) -> Iterator[tuple[HttpHost, HttpHost]]:
    with replica(fleet) as a, replica(fleet) as b:
        yield a, b


def ask(
    h: HttpHost, fleet: dict[str, Any], sub: str = "alice", **extra: Any
) -> tuple[int, dict[str, Any]]:
    body, headers = modern_request(1, "tools/call", {"name": "ask_name", "arguments": {}})
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"elicitation": {}}
    body["params"].update(extra)
    headers["Authorization"] = f"Bearer {token(fleet, sub)}"
    r = httpx.post(h.url, json=body, headers=headers, timeout=WAIT)
    return r.status_code, r.json()


ADA = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}


def first_round(h: HttpHost, fleet: dict[str, Any]) -> str:
    status, msg = ask(h, fleet)
    assert status == 200 and msg["result"]["resultType"] == "input_required", msg
    state = msg["result"]["requestState"]
    assert isinstance(state, str)
    return state


def resign(state: str, key: bytes, **changes: Any) -> str:
    """``state`` with its payload changed and signed again with ``key``, in the host's
    format (BASE64URL(JSON) "." BASE64URL(HMAC-SHA256)): what someone holding a key of
    the ring could send."""
    raw_b64 = state.split(".", 1)[0]
    payload = json.loads(base64.urlsafe_b64decode(raw_b64 + "=" * (-len(raw_b64) % 4)))
    payload.update(changes)
    raw = json.dumps(payload).encode()
    mac = hmac.new(key, raw, hashlib.sha256).digest()

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    return b64(raw) + "." + b64(mac)


def refused(status: int, msg: dict[str, Any], why: str) -> None:
    assert status == 400, msg
    assert msg["error"]["code"] == -32602, msg
    assert why in msg["error"]["message"], msg


def test_a_round_begun_on_one_replica_is_finished_on_another(
    pair: tuple[HttpHost, HttpHost], fleet: dict[str, Any]
) -> None:
    a, b = pair
    state = first_round(a, fleet)
    status, msg = ask(b, fleet, inputResponses=ADA, requestState=state)
    assert status == 200, msg
    assert msg["result"]["content"][0]["text"] == "hello Ada"
    # And the other way round: B's states open on A.
    state = first_round(b, fleet)
    status, msg = ask(a, fleet, inputResponses=ADA, requestState=state)
    assert status == 200 and msg["result"]["content"][0]["text"] == "hello Ada", msg


def test_bad_states_are_refused_on_another_replica(
    pair: tuple[HttpHost, HttpHost], fleet: dict[str, Any]
) -> None:
    a, b = pair
    state = first_round(a, fleet)
    raw, mac = state.split(".")
    flipped = raw[:-2] + ("A" if raw[-2] != "A" else "B") + raw[-1]
    status, msg = ask(b, fleet, inputResponses=ADA, requestState=flipped + "." + mac)
    refused(status, msg, "altered")
    status, msg = ask(b, fleet, "bob", inputResponses=ADA, requestState=state)
    refused(status, msg, "another principal")
    expired = resign(state, fleet["k1"], exp=int(time.time()) - 10)
    status, msg = ask(b, fleet, inputResponses=ADA, requestState=expired)
    refused(status, msg, "expired")
    foreign = resign(state, fleet["k1"], aud="https://elsewhere.example/mcp")
    status, msg = ask(b, fleet, inputResponses=ADA, requestState=foreign)
    refused(status, msg, "another audience")
    unbound = resign(state, fleet["k1"], aud=None)
    status, msg = ask(b, fleet, inputResponses=ADA, requestState=unbound)
    refused(status, msg, "another audience")
    # The untouched state still finishes the round: the refusals were about the states.
    status, msg = ask(b, fleet, inputResponses=ADA, requestState=state)
    assert status == 200 and msg["result"]["content"][0]["text"] == "hello Ada", msg


def test_a_replica_of_another_audience_refuses_the_state(
    pair: tuple[HttpHost, HttpHost], fleet: dict[str, Any]
) -> None:
    a, _ = pair
    state = first_round(a, fleet)
    other = "https://other.example/mcp"
    with replica(fleet, "--audience", other) as c:
        body, headers = modern_request(1, "tools/call", {"name": "ask_name", "arguments": {}})
        body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"elicitation": {}}
        body["params"].update(inputResponses=ADA, requestState=state)
        claims = {"iss": ISSUER, "aud": other, "sub": "alice", "exp": int(time.time()) + 600}
        bearer = jwt.encode(claims, fleet["signing"], algorithm="RS256", headers={"kid": "k1"})
        headers["Authorization"] = f"Bearer {bearer}"
        r = httpx.post(c.url, json=body, headers=headers, timeout=WAIT)
        refused(r.status_code, r.json(), "another audience")


def test_key_rotation(pair: tuple[HttpHost, HttpHost], fleet: dict[str, Any]) -> None:
    """The new key first and the old one second: the old key's states still verify, and
    the new key signs; once the old key is removed its states are refused."""
    a, _ = pair
    old_state = first_round(a, fleet)
    rotated = write_ring(fleet["secrets"] / "rotated", fleet["k2"], fleet["k1"])
    with replica(fleet, "--state-keys", str(rotated)) as c:
        status, msg = ask(c, fleet, inputResponses=ADA, requestState=old_state)
        assert status == 200 and msg["result"]["content"][0]["text"] == "hello Ada", msg
        new_state = first_round(c, fleet)
    status, msg = ask(a, fleet, inputResponses=ADA, requestState=new_state)
    refused(status, msg, "altered or was not issued")  # A's ring lacks the new key
    removed = write_ring(fleet["secrets"] / "removed", fleet["k2"])
    with replica(fleet, "--state-keys", str(removed)) as d:
        status, msg = ask(d, fleet, inputResponses=ADA, requestState=old_state)
        refused(status, msg, "altered or was not issued")
        status, msg = ask(d, fleet, inputResponses=ADA, requestState=new_state)
        assert status == 200 and msg["result"]["content"][0]["text"] == "hello Ada", msg


def test_without_a_ring_each_process_has_its_own_key(tmp_path: Path) -> None:
    """Today's behaviour stays: no --state-keys, a state opens only where it was issued."""
    token_env = {"TOOLWIRE_TOKEN": "t"}
    with (
        http_host(tmp_path, env=token_env, tools=[MODERN_TOOLS]) as a,
        http_host(tmp_path, env=token_env, tools=[MODERN_TOOLS]) as b,
    ):

        def post(h: HttpHost, **extra: Any) -> tuple[int, dict[str, Any]]:
            body, headers = modern_request(1, "tools/call", {"name": "ask_name", "arguments": {}})
            body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {
                "elicitation": {}
            }
            body["params"].update(extra)
            headers["Authorization"] = "Bearer t"
            r = httpx.post(h.url, json=body, headers=headers, timeout=WAIT)
            return r.status_code, r.json()

        state = post(a)[1]["result"]["requestState"]
        refused(*post(b, inputResponses=ADA, requestState=state), "altered or was not issued")
        status, msg = post(a, inputResponses=ADA, requestState=state)
        assert status == 200 and msg["result"]["content"][0]["text"] == "hello Ada", msg


def test_a_malformed_key_ring_stops_the_start(tmp_path: Path) -> None:
    ring = tmp_path / "ring"
    good = base64.b64encode(new_key()).decode()
    ring.write_text(f"# keys\n{good}\n\n{good[:-4]}\n")
    root = tmp_path / "root"
    root.mkdir()
    code, err = run_host_expect_exit(root, ["--http", "127.0.0.1:0", "--state-keys", str(ring)])
    assert code == 2, err
    assert f"{ring}:4: not a key" in err
    assert good[:-4] not in err  # a key is never shown


def test_a_key_ring_inside_the_root_stops_the_start(tmp_path: Path) -> None:
    ring = write_ring(tmp_path / "ring", new_key())
    code, err = run_host_expect_exit(tmp_path, ["--http", "127.0.0.1:0", "--state-keys", str(ring)])
    assert code == 2, err
    assert "inside the root" in err


# --------------------------------------------------------------------------- change bus


async def _listen(h: HttpHost, token_value: str, seen: anyio.abc.ObjectSendStream[str]) -> None:
    """Open ``subscriptions/listen`` on ``h``; send each notification's method to ``seen``."""
    body, headers = modern_request(
        7, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
    )
    headers["Authorization"] = f"Bearer {token_value}"
    async with (
        httpx.AsyncClient(timeout=httpx.Timeout(WAIT, read=None)) as client,
        client.stream("POST", h.url, json=body, headers=headers) as r,
    ):
        assert r.status_code == 200
        async for line in r.aiter_lines():
            if line.startswith("data:"):
                msg = json.loads(line[5:])
                if msg.get("method"):
                    assert msg["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 7
                    await seen.send(msg["method"])


def _add_tool(h: HttpHost, token_value: str, name: str) -> None:
    body, headers = modern_request(
        1, "tools/call", {"name": "add_tool", "arguments": {"name": name}}
    )
    headers["Authorization"] = f"Bearer {token_value}"
    r = httpx.post(h.url, json=body, headers=headers, timeout=WAIT)
    assert r.status_code == 200 and r.json()["result"]["content"][0]["text"] == "added", r.text


def _listen_then(
    listener: HttpHost, changes: list[tuple[HttpHost, str]], token_value: str
) -> list[str]:
    """Listen on ``listener``; after the acknowledgement, make each change in turn,
    waiting for its notification on the listen stream before the next."""
    got: list[str] = []

    async def main() -> None:
        send, receive = anyio.create_memory_object_stream[str](100)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_listen, listener, token_value, send)
            with anyio.fail_after(WAIT):
                got.append(await receive.receive())
            for h, name in changes:
                await anyio.to_thread.run_sync(_add_tool, h, token_value, name)
                with anyio.fail_after(WAIT):
                    got.append(await receive.receive())
            tg.cancel_scope.cancel()

    anyio.run(main)
    return got


ACK = "notifications/subscriptions/acknowledged"
CHANGED = "notifications/tools/list_changed"


def test_a_listener_hears_a_change_made_on_another_replica(tmp_path: Path) -> None:
    env = {"TOOLWIRE_TOKEN": "t"}
    (tmp_path / "redis").mkdir()
    with redis_server(tmp_path / "redis") as url:
        bus = ["--bus", url + "/3"]
        with (
            http_host(tmp_path, bus, env=env, tools=[MODERN_TOOLS]) as a,
            http_host(tmp_path, bus, env=env, tools=[MODERN_TOOLS]) as b,
        ):
            got = _listen_then(a, [(b, "made.on.b"), (a, "made.on.a")], "t")
    assert got == [ACK, CHANGED, CHANGED]


def test_without_a_bus_a_replica_tells_its_own_changes(tmp_path: Path) -> None:
    env = {"TOOLWIRE_TOKEN": "t"}
    with http_host(tmp_path, env=env, tools=[MODERN_TOOLS]) as a:
        assert _listen_then(a, [(a, "made.here")], "t") == [ACK, CHANGED]


def test_an_unreachable_bus_stops_the_start(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        code, err = run_host_expect_exit(
            tmp_path,
            ["--http", "127.0.0.1:0", "--sandbox", "none", "--bus", f"redis://127.0.0.1:{port}/0"],
        )
    assert code == 2, err
    # Said once, by serve's own line (uvicorn's lifespan would repeat it, then add its own).
    assert err.count("cannot reach Redis") == 1, err
    assert "Application startup failed" not in err, err


def test_a_token_file_or_key_set_inside_the_root_stops_the_start(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-" + "x" * 32 + "\n")
    code, err = run_host_expect_exit(
        tmp_path, ["--http", "127.0.0.1:0", "--token-file", str(token)]
    )
    assert code == 2, err
    assert f"--token-file {token} lies inside the root" in err
    assert "s3cret" not in err  # the token is never shown

    jwks = tmp_path / "jwks.json"
    jwks.write_text('{"keys": []}')
    config = tmp_path / "toolwire.toml"
    config.write_text(
        '[http]\nlisten = "127.0.0.1:0"\n'
        f'[http.oauth]\nissuer = "https://issuer.test"\njwks = "{jwks}"\n'
    )
    code, err = run_host_expect_exit(tmp_path, ["--config", str(config)])
    assert code == 2, err
    assert f"[http.oauth] jwks {jwks} lies inside the root" in err

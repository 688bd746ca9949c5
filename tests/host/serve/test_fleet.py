"""Fleet settings and the change bus in process (issue 25 points 1 and 2): the key ring
file, ``[fleet]`` in ``toolwire.toml``, the signer's ring and audience, and
:class:`~toolwire.host.serve.http.bus.RedisBus` against a real redis-server (tests/redis_support.py).
The replicas themselves are driven in tests/host/serve/test_http_fleet.py."""

from __future__ import annotations

import base64
import secrets
from pathlib import Path
from typing import Any

import anyio
import pytest
from toolwire.host.serve.config import ConfigError
from toolwire.host.serve.http.bus import TOOLS, LocalBus, RedisBus
from toolwire.host.serve.http.fleet import parse_bus_url, read_key_ring
from toolwire.host.serve.options import build_parser, config_from_args
from toolwire.host.tools.rounds import StateSigner

from tests.redis_support import redis_server
from toolwire.errors import JsonRpcError

WAIT = 60.0
"""Seconds to wait for a message: a bound on a hang, not a speed."""


def b64key() -> tuple[bytes, str]:
    key = secrets.token_bytes(32)
    return key, base64.b64encode(key).decode("ascii")


# --------------------------------------------------------------------------- key ring


def test_the_ring_keeps_file_order_and_skips_comments(tmp_path: Path) -> None:
    (k1, t1), (k2, t2) = b64key(), b64key()
    ring = tmp_path / "ring"
    ring.write_text(f"# signing key first\n\n  {t1}  # added in June\n{t2}\n\n")
    assert read_key_ring(ring) == [k1, k2]


@pytest.mark.parametrize(
    "bad",
    [
        "not base64 at all!",
        base64.b64encode(b"x" * 31).decode(),  # 31 bytes
        base64.b64encode(b"x" * 33).decode(),
        base64.urlsafe_b64encode(b"\xfb" * 32).decode(),  # the URL-safe alphabet
        base64.b64encode(b"x" * 32).decode().rstrip("="),  # padding dropped
    ],
)
def test_a_malformed_line_names_file_and_line(tmp_path: Path, bad: str) -> None:
    _, good = b64key()
    ring = tmp_path / "ring"
    ring.write_text(f"{good}\n# next\n{bad}\n")
    with pytest.raises(ValueError) as err:
        read_key_ring(ring)
    assert str(err.value).startswith(f"{ring}:3: not a key")
    assert bad not in str(err.value) and good not in str(err.value)


def test_an_empty_or_missing_ring_is_refused(tmp_path: Path) -> None:
    ring = tmp_path / "ring"
    ring.write_text("# nothing yet\n\n")
    with pytest.raises(ValueError, match="holds no key"):
        read_key_ring(ring)
    with pytest.raises(ValueError, match="cannot read"):
        read_key_ring(tmp_path / "absent")


# --------------------------------------------------------------------------- signer


def test_rotation_old_key_verifies_until_removed() -> None:
    old, new = secrets.token_bytes(32), secrets.token_bytes(32)
    before = StateSigner(keys=[old], audience="https://a.example/mcp")
    during = StateSigner(keys=[new, old], audience="https://a.example/mcp")
    after = StateSigner(keys=[new], audience="https://a.example/mcp")
    state = before.sign({"x": 1})
    assert during.verify(state)["x"] == 1
    with pytest.raises(JsonRpcError) as err:
        after.verify(state)
    assert err.value.code == -32602
    fresh = during.sign({"x": 2})  # the first key signs
    assert after.verify(fresh)["x"] == 2
    with pytest.raises(JsonRpcError):
        before.verify(fresh)


def test_a_state_of_another_audience_is_refused() -> None:
    key = secrets.token_bytes(32)
    state = StateSigner(keys=[key], audience="https://a.example/mcp").sign({})
    with pytest.raises(JsonRpcError) as err:
        StateSigner(keys=[key], audience="https://b.example/mcp").verify(state)
    assert err.value.code == -32602 and "another audience" in err.value.message
    unbound = StateSigner(keys=[key]).sign({})  # signed without an audience
    with pytest.raises(JsonRpcError, match="another audience"):
        StateSigner(keys=[key], audience="https://a.example/mcp").verify(unbound)


# --------------------------------------------------------------------------- settings


def parse(tmp_path: Path, toml: str | None, *args: str) -> Any:
    argv = ["--root", str(tmp_path / "root"), *args]
    if toml is not None:
        (tmp_path / "toolwire.toml").write_text(toml)
        argv += ["--config", str(tmp_path / "toolwire.toml")]
    (tmp_path / "root").mkdir(exist_ok=True)
    return config_from_args(build_parser().parse_args(argv))


def test_fleet_table_and_flags(tmp_path: Path) -> None:
    (k1, t1), (k2, t2) = b64key(), b64key()
    (tmp_path / "ring1").write_text(t1 + "\n")
    (tmp_path / "ring2").write_text(t2 + "\n")
    toml = (
        '[http]\nlisten = "127.0.0.1:0"\n'
        f'[fleet]\nstate_keys = "{tmp_path / "ring1"}"\n'
        'audience = "https://tools.example/mcp"\nbus = "redis://redis:6379/2"\n'
    )
    fleet = parse(tmp_path, toml).fleet
    assert fleet.keys == [k1]
    assert fleet.audience == "https://tools.example/mcp"
    assert fleet.bus == "redis://redis:6379/2"
    flags = ["--state-keys", str(tmp_path / "ring2"), "--audience", "https://b.example/mcp"]
    fleet = parse(tmp_path, toml, *flags, "--bus", "redis://other:1/0").fleet
    assert (fleet.keys, fleet.audience, fleet.bus) == (
        [k2],
        "https://b.example/mcp",
        "redis://other:1/0",
    )
    assert not parse(tmp_path, None, "--http", "127.0.0.1:0").fleet.configured


@pytest.mark.parametrize(
    ("fleet", "expected"),
    [
        ("state_keys = 5\n", "toolwire.toml:4: [fleet] state_keys must be a string"),
        ("keys = 'x'\n", "toolwire.toml:4: [fleet] unknown key 'keys'"),
        ("\nbus = ['redis://a:1/0']\n", "toolwire.toml:5: [fleet] bus must be a string"),
    ],
)
def test_the_fleet_table_is_strict(tmp_path: Path, fleet: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse(tmp_path, '[http]\nlisten = "127.0.0.1:0"\n[fleet]\n' + fleet)
    assert expected in str(err.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bus", "redis://a:1/0"], "apply to replicas serving --http"),
        (["--http", "127.0.0.1:0", "--bus", "http://a:1/0"], "not a redis://HOST:PORT/DB URL"),
        (["--http", "127.0.0.1:0", "--bus", "redis://a:1/x"], "the database must be a number"),
        (["--http", "127.0.0.1:0", "--bus", "redis://u:p@a:1/0"], "only redis://HOST:PORT/DB"),
        (["--http", "127.0.0.1:0", "--audience", "tools"], "not an absolute URL"),
    ],
)
def test_bad_fleet_options(tmp_path: Path, args: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse(tmp_path, None, *args)


def test_bus_url_defaults() -> None:
    assert parse_bus_url("redis://redis") == ("redis", 6379, 0)
    assert parse_bus_url("redis://10.0.0.5:7000/4") == ("10.0.0.5", 7000, 4)


# --------------------------------------------------------------------------- bus


def test_the_local_bus_tells_its_own_subscribers() -> None:
    bus = LocalBus()
    heard: list[str] = []
    unsubscribe = bus.subscribe(heard.append)
    bus.publish(TOOLS)
    unsubscribe()
    bus.publish(TOOLS)
    assert heard == [TOOLS]


def test_redis_bus_delivers_across_replicas_once(tmp_path: Path) -> None:
    """A's change reaches A's subscribers at once and B's over Redis; A ignores its own
    message coming back. B's reply is published only after B heard A, so Redis hands
    A's own message to A's subscription before B's: had A not ignored it, A would
    count it before it sees B's."""

    async def main(url: str) -> None:
        a, b = RedisBus(url + "/5"), RedisBus(url + "/5")
        other_db = RedisBus(url + "/6")  # pub/sub ignores databases: the channel does not
        heard: dict[str, list[str]] = {"a": [], "b": [], "other": []}
        b_heard = anyio.Event()
        a_heard_b = anyio.Event()

        def on_a(change: str) -> None:
            heard["a"].append(change)
            if change == "marker":
                a_heard_b.set()

        def on_b(change: str) -> None:
            heard["b"].append(change)
            if change == TOOLS:
                b_heard.set()
                b.publish("marker")

        a.subscribe(on_a)
        b.subscribe(on_b)
        other_db.subscribe(heard["other"].append)
        async with a.running(), b.running(), other_db.running():
            a.publish(TOOLS)
            assert heard["a"] == [TOOLS]  # its own: at once, not through Redis
            with anyio.fail_after(WAIT):
                await b_heard.wait()
                await a_heard_b.wait()
        assert heard["a"] == [TOOLS, "marker"]
        assert heard["b"] == [TOOLS, "marker"]
        assert heard["other"] == []

    (tmp_path / "redis").mkdir()
    with redis_server(tmp_path / "redis") as url:
        anyio.run(main, url)


def test_redis_bus_signals_a_change_after_reconnecting(tmp_path: Path) -> None:
    """Changes published while the subscription was lost were not heard: once it is
    back (Redis restarted on the same port), the bus tells its subscribers that the
    list may have changed."""
    (tmp_path / "redis").mkdir()
    port = _free_port()

    async def main() -> None:
        first = redis_server(tmp_path / "redis", port)
        url = first.__enter__()
        bus = RedisBus(url + "/0")
        heard: list[str] = []
        again = anyio.Event()

        def on_change(change: str) -> None:
            heard.append(change)
            again.set()

        bus.subscribe(on_change)
        async with bus.running():
            await anyio.to_thread.run_sync(first.__exit__, None, None, None)
            second = redis_server(tmp_path / "redis", port)
            await anyio.to_thread.run_sync(second.__enter__)
            try:
                with anyio.fail_after(WAIT):
                    await again.wait()
            finally:
                await anyio.to_thread.run_sync(second.__exit__, None, None, None)
        assert heard == [TOOLS]

    anyio.run(main)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

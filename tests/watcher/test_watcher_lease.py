"""Leader election on a coordination.k8s.io/v1 Lease through the fake cluster port: one leader at a
time, takeover after a crash only once the lease expired, at once after a release, a 409 race with
one winner, and a leader whose renewals fail (API errors, or calls cut at the time left) stepping
down within its renew deadline."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sidecar.fake.cluster import FakeCluster
from sidecar.watcher.kit.lease import LeaderElector, LeaseConfig, micro_time, parse_time
from sidecar.watcher.kit.port import LEASES
from tests.k8s_fixtures import wait_for

NAME, NAMESPACE = "repack-watcher", "kube-system"
#: short timings (client-go's ratios: duration > deadline > retry), one-second leases
TIMING = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.1}
NO_CALLBACKS: dict[str, Any] = {"on_started_leading": lambda: None, "on_stopped_leading": lambda: None}


@pytest.fixture
def cluster() -> FakeCluster:
    """An empty cluster: the Lease is the only object."""
    return FakeCluster()


class Tracker:
    """Leadership as the callbacks tell it: who leads, when, and how many at once (must stay ≤ 1)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.leaders: set[str] = set()
        self.most = 0
        self.log: list[tuple[float, str, str]] = []

    def started(self, who: str) -> None:
        with self.lock:
            self.leaders.add(who)
            self.most = max(self.most, len(self.leaders))
            self.log.append((time.time(), who, "start"))

    def stopped(self, who: str) -> None:
        with self.lock:
            self.leaders.discard(who)
            self.log.append((time.time(), who, "stop"))

    def events(self, who: str) -> list[str]:
        return [what for _, w, what in self.log if w == who]

    def first(self, who: str, what: str) -> float:
        return next(t for t, w, x in self.log if w == who and x == what)


@pytest.fixture
def tracker() -> Tracker:
    return Tracker()


@pytest.fixture
def electors(cluster: FakeCluster, tracker: Tracker) -> Iterator[Any]:
    made: list[LeaderElector] = []

    def make(who: str, **timing: float) -> LeaderElector:
        conf = LeaseConfig(name=NAME, namespace=NAMESPACE, identity=who, **{**TIMING, **timing})
        e = LeaderElector(
            cluster,
            conf,
            on_started_leading=lambda: tracker.started(who),
            on_stopped_leading=lambda: tracker.stopped(who),
        )
        made.append(e)
        return e

    yield make
    for e in made:
        e.stop()


def lease(cluster: FakeCluster) -> dict[str, Any]:
    found = cluster.get(LEASES, NAME, NAMESPACE)
    assert found is not None, "no Lease"
    return found


def leader(*candidates: LeaderElector) -> LeaderElector | None:
    leading = [e for e in candidates if e.is_leader()]
    assert len(leading) <= 1
    return leading[0] if leading else None


def test_one_of_two_electors_leads_and_the_other_waits(cluster: FakeCluster, electors: Any, tracker: Tracker) -> None:
    a, b = electors("a").start(), electors("b").start()
    first = wait_for(lambda: leader(a, b))
    other = b if first is a else a
    time.sleep(1.5)  # more than a lease duration: renewals keep it
    assert leader(a, b) is first and tracker.events(other.identity) == []
    spec = lease(cluster)["spec"]
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"], spec["leaseTransitions"]) == (first.identity, 1, 0)
    assert time.time() - (parse_time(spec["renewTime"]) or 0) < 0.5
    assert tracker.most == 1


def test_a_crashed_leader_is_replaced_only_after_its_lease_expires(
    cluster: FakeCluster, electors: Any, tracker: Tracker
) -> None:
    a = electors("a").start()
    wait_for(a.is_leader)
    b = electors("b").start()
    time.sleep(0.3)
    a.stop(release=False)  # as if the process died: the lease still names it
    last_renewal = parse_time(lease(cluster)["spec"]["renewTime"]) or 0
    wait_for(b.is_leader, timeout=5)
    assert tracker.first("b", "start") >= last_renewal + 1.0  # not before renewTime + leaseDurationSeconds
    spec = lease(cluster)["spec"]
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == ("b", 1)
    assert tracker.most == 1


def test_a_released_lease_is_taken_over_at_once(cluster: FakeCluster, electors: Any, tracker: Tracker) -> None:
    a = electors("a").start()
    wait_for(a.is_leader)
    b = electors("b").start()
    time.sleep(0.2)
    a.stop()  # clean shutdown: stop leading, then clear holderIdentity
    released = time.time()
    assert tracker.events("a") == ["start", "stop"]
    wait_for(b.is_leader, timeout=5)
    assert tracker.first("b", "start") - released < 0.5  # well before the one-second lease could expire
    assert tracker.first("a", "stop") <= tracker.first("b", "start")
    assert tracker.most == 1


def test_handovers_never_make_two_leaders(cluster: FakeCluster, electors: Any, tracker: Tracker) -> None:
    running = [electors(f"e{i}").start() for i in range(3)]
    spawned = 3
    for crash in (False, True, False):
        current = wait_for(lambda: leader(*running), timeout=5)
        current.stop(release=not crash)
        running.remove(current)
        running.append(electors(f"e{spawned}").start())
        spawned += 1
    wait_for(lambda: leader(*running), timeout=5)
    assert tracker.most == 1
    assert lease(cluster)["spec"]["leaseTransitions"] == 3


@pytest.mark.parametrize("exists", [False, True], ids=["create", "replace"])
def test_a_409_race_has_exactly_one_winner(cluster: FakeCluster, electors: Any, exists: bool) -> None:
    if exists:  # an expired lease left by a holder long gone
        old = micro_time(time.time() - 60)
        body: dict[str, Any] = {"metadata": {"name": NAME, "namespace": NAMESPACE}}
        body["spec"] = {"holderIdentity": "gone", "leaseDurationSeconds": 15, "renewTime": old, "acquireTime": old}
        cluster.create(LEASES, body)
    a, b = electors("a"), electors("b")
    alone = LeaderElector(cluster, LeaseConfig(name="alone", namespace=NAMESPACE), **NO_CALLBACKS)
    assert alone.try_acquire_or_renew() and alone.try_acquire_or_renew()  # no contender: taken, then renewed
    verb = "update" if exists else "create"
    cluster.faults.delay(0.3, verb, "leases")  # writes held back: both read the same version before either lands
    cluster.audit.clear()
    results: dict[str, bool] = {}
    together = threading.Barrier(2)

    def attempt(e: LeaderElector) -> None:
        together.wait(5)
        results[e.identity] = e.try_acquire_or_renew()

    threads = [threading.Thread(target=attempt, args=(e,)) for e in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(results.values()) == [False, True]
    winner = "a" if results["a"] else "b"

    codes = sorted(r.code for r in cluster.audit.records(verb, "leases"))
    assert codes == ([200, 409] if exists else [201, 409])
    assert lease(cluster)["spec"]["holderIdentity"] == winner


def test_api_errors_during_renewal_make_the_leader_step_down(
    cluster: FakeCluster, electors: Any, tracker: Tracker
) -> None:
    a = electors("a").start()
    wait_for(a.is_leader)
    cluster.faults.fail("*", "leases", 503, times=10**6)
    broken = time.time()
    wait_for(lambda: not a.is_leader(), timeout=5)
    stepped_down = tracker.first("a", "stop") - broken
    assert stepped_down <= 0.6 + 0.3  # within the renew deadline (plus a request's worth)
    assert tracker.events("a") == ["start", "stop"]
    cluster.faults.clear()
    wait_for(a.is_leader, timeout=5)  # back to candidacy, and the lease is free to take again
    assert tracker.events("a") == ["start", "stop", "start"]


def test_a_slow_api_server_is_a_failed_renewal_too(cluster: FakeCluster, electors: Any, tracker: Tracker) -> None:
    a = electors("a").start()
    wait_for(a.is_leader)
    cluster.faults.delay(2.0, "*", "leases")  # requests hang past the deadline: each is cut at the time left
    broken = time.time()
    wait_for(lambda: not a.is_leader(), timeout=5)
    assert tracker.first("a", "stop") - broken <= 0.6 + 0.3
    cluster.faults.clear()


def test_bad_timings_are_refused() -> None:
    assert LeaseConfig(lease_duration=10, renew_deadline=10).problems() == [
        "the lease duration must be greater than the renew deadline"
    ]
    assert LeaseConfig(renew_deadline=2, retry_period=2).problems() == [
        "the renew deadline must be greater than the retry period"
    ]
    with pytest.raises(ValueError, match="renew deadline"):
        LeaderElector(FakeCluster(), LeaseConfig(lease_duration=5, renew_deadline=6), **NO_CALLBACKS)

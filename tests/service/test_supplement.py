"""Supplement: the watcher's namespaces and PDBs merged into a session pushed by Volcano's extender
(whose onSessionOpen body carries neither), so Plan on ``latest`` honours PDBs — pushed by the
watcher's informers on the fake cluster port, and by ``watch`` itself."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import grpc
import pytest

from sidecar.api.v1alpha1 import service_pb2, service_pb2_grpc, snapshot_pb2
from sidecar.client import MIB, RepackClient, client_options
from sidecar.fake.cluster import FakeCluster
from sidecar.fake.objects import objects_from_snapshot
from sidecar.server.background import BackgroundServer
from sidecar.server.config import ServerConfig
from sidecar.service import Deadline, RepackService
from sidecar.service.supplement import merged
from sidecar.snapshot.io import load_repack_spec, load_snapshot
from sidecar.watcher import runner
from sidecar.watcher.args import WatchOptions
from sidecar.watcher.kit.cache import ClusterCache
from sidecar.watcher.kit.informer import Backoff
from sidecar.watcher.kit.port import PDBS
from sidecar.watcher.supplement import SupplementPusher
from tests.extender_fixtures import open_guide_session

GUIDE = "sidecar/data/guide-ascend.json"
SPEC = "sidecar/data/guide-ascend-dryrun.yaml"
TRAINING = {"volcano.sh/job-name": "ascend-batch-training"}
TRAINING_GROUP = "ascend-batch-training-2f6c840d-8b14-4e45-a4cf-b43c249acbfd"


def training_pdb(allowed: int) -> snapshot_pb2.PodDisruptionBudget:
    pdb = snapshot_pb2.PodDisruptionBudget(namespace="repack-demo", name="training", disruptions_allowed=allowed)
    pdb.selector.match_labels.update(TRAINING)
    return pdb


def moved(status: object) -> set[str]:
    plan = status.plan  # type: ignore[attr-defined]
    return {m.pod_group_name for m in plan.moves}


def test_merge_keeps_the_sessions_own_values() -> None:
    snap = snapshot_pb2.Snapshot()
    snap.namespaces.add(name="a", labels={"team": "mine"})
    snap.namespaces.add(name="b")
    snap.pdbs.append(training_pdb(3))
    extra = snapshot_pb2.Snapshot()
    extra.namespaces.add(name="a", labels={"team": "theirs"})
    extra.namespaces.add(name="b", labels={"team": "b"})
    extra.namespaces.add(name="c", labels={"team": "c"})
    other = snapshot_pb2.PodDisruptionBudget(namespace="x", name="y")
    extra.pdbs.extend([training_pdb(0), other])
    out = merged(snap, extra)
    assert {n.name: dict(n.labels) for n in out.namespaces} == {
        "a": {"team": "mine"},
        "b": {"team": "b"},
        "c": {"team": "c"},
    }
    assert [(p.name, p.disruptions_allowed) for p in out.pdbs] == [("training", 3), ("y", 0)]
    assert len(snap.namespaces) == 2 and len(snap.pdbs) == 1  # the input is not changed
    assert merged(snap, snapshot_pb2.Snapshot()) is snap


def _plan(service: RepackService) -> service_pb2.PlanResponse:
    request = service_pb2.PlanRequest(session_id="latest", spec=load_repack_spec(SPEC))
    return service.plan(request, Deadline(30))


def _without_pdbs() -> snapshot_pb2.Snapshot:
    snap = load_snapshot(GUIDE)
    del snap.pdbs[:]
    return snap


def test_supplement_republishes_latest_and_the_plan_honours_the_pdb() -> None:
    service = RepackService()
    first = service.publish("latest", _without_pdbs(), Deadline(30))
    before = _plan(service)
    assert TRAINING_GROUP in moved(before.status)
    answer = service.supplement(service_pb2.SupplementRequest(pdbs=[training_pdb(0)]), Deadline(30))
    assert (answer.pdb_count, answer.latest_updated) == (1, True)
    again = service.session("latest")
    assert again is not None and again.opened_at == first.opened_at and again.state is not first.state
    after = _plan(service)
    assert after.status.plan != before.status.plan
    assert TRAINING_GROUP not in moved(after.status)
    # kept for the next published session too
    service.publish("latest", _without_pdbs(), Deadline(30))
    assert _plan(service).status.plan == after.status.plan


def test_the_sessions_own_pdb_wins() -> None:
    service = RepackService()
    service.supplement(service_pb2.SupplementRequest(pdbs=[training_pdb(0)]), Deadline(30))
    free = _without_pdbs()
    free.pdbs.append(training_pdb(5))
    service.publish("latest", free, Deadline(30))
    unguarded = RepackService()
    unguarded.publish("latest", _without_pdbs(), Deadline(30))
    assert _plan(service).status.plan == _plan(unguarded).status.plan


def test_publish_and_supplement_waiting_on_a_busy_budget_both_go_through() -> None:
    """One lock order (the memory budget, then publishing): a publish and a Supplement that both
    wait while the budget is held each go through once it is free. In the opposite orders they took
    before, each held what the other waited for, until one failed Overloaded."""
    from sidecar.service.limits import MIB, ServiceLimits, snapshot_cost

    snap = _without_pdbs()
    cost = snapshot_cost(snap)
    limits = ServiceLimits(memory_budget_mib=1.5 * cost / MIB, admission_wait_seconds=3.0)  # one at a time
    service = RepackService(limits)
    service.publish("latest", snap, Deadline(30))
    budget = service._budget
    assert budget is not None
    errors: list[BaseException] = []

    def run(call: Callable[[], object]) -> threading.Thread:
        def target() -> None:
            try:
                call()
            except BaseException as exc:  # reported by the assertion below
                errors.append(exc)

        thread = threading.Thread(target=target)
        thread.start()
        return thread

    with budget.admit(budget.total):  # the budget is busy while both arrive
        threads = [run(lambda: service.publish("latest", snap, Deadline(30)))]
        time.sleep(0.2)
        request = service_pb2.SupplementRequest(pdbs=[training_pdb(0)])
        threads.append(run(lambda: service.supplement(request, Deadline(30))))
        time.sleep(0.2)
    for thread in threads:
        thread.join(20)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)
    assert TRAINING_GROUP not in moved(_plan(service).status)  # the supplement's PDB is in latest


def test_supplement_without_latest_updates_nothing() -> None:
    answer = RepackService().supplement(
        service_pb2.SupplementRequest(namespaces=[snapshot_pb2.Namespace(name="a")]), Deadline(5)
    )
    assert (answer.namespace_count, answer.pdb_count, answer.latest_updated) == (1, 0, False)


@pytest.fixture()
def sidecar() -> Iterator[BackgroundServer]:
    with BackgroundServer(ServerConfig(port=0, metrics_port=-1, extender_port=0)) as s:
        yield s


def test_extender_session_then_supplement_over_grpc(sidecar: BackgroundServer) -> None:
    open_guide_session(sidecar)
    channel = grpc.insecure_channel(sidecar.target, options=client_options(64 * MIB))
    rpc = service_pb2_grpc.RepackStub(channel)  # type: ignore[no-untyped-call]
    request = service_pb2.PlanRequest(session_id="latest", spec=load_repack_spec(SPEC))
    before = rpc.Plan(request, timeout=30)
    with RepackClient(sidecar.target) as client:
        answer = client.supplement(service_pb2.SupplementRequest(pdbs=[training_pdb(0)]))
    assert answer.latest_updated
    after = rpc.Plan(request, timeout=30)
    assert after.status.plan != before.status.plan
    assert TRAINING_GROUP not in moved(after.status)


# -- the watcher pushes it -------------------------------------------------------------------


def _wait(condition: Callable[[], bool], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def guide_cluster() -> FakeCluster:
    cluster = FakeCluster(history=50, bookmark_every=0.2)
    cluster.load(objects_from_snapshot(load_snapshot(GUIDE)))
    return cluster


def create_training_pdb(cluster: FakeCluster) -> None:
    """The PDB as a person applies it, then its status as the disruption controller keeps it (both
    workers healthy, minAvailable 2: none may go)."""
    body = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "training", "namespace": "repack-demo"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": TRAINING}},
    }
    created = cluster.create(PDBS, body)
    status = {"expectedPods": 2, "currentHealthy": 2, "desiredHealthy": 2, "disruptionsAllowed": 0}
    cluster.replace(PDBS, {**created, "status": status}, status=True)


def test_the_watcher_pushes_a_pdb_created_in_the_cluster(sidecar: BackgroundServer) -> None:
    open_guide_session(sidecar)
    spec = load_repack_spec(SPEC)
    cluster = guide_cluster()
    with RepackClient(sidecar.target) as planner:
        cache = ClusterCache(cluster, backoff=Backoff(initial=0.05, cap=0.5)).start()
        pusher = SupplementPusher(planner, cache, period=0.2).start()
        try:
            assert _wait(lambda: pusher.pushed >= 1)
            before = planner.plan(service_pb2.PlanRequest(session_id="latest", spec=spec))
            assert TRAINING_GROUP in moved(before.status)
            pushed = pusher.pushed
            create_training_pdb(cluster)
            assert _wait(lambda: pusher.pushed > pushed)

            def honoured() -> bool:
                plan = planner.plan(service_pb2.PlanRequest(session_id="latest", spec=spec))
                return TRAINING_GROUP not in moved(plan.status)

            assert _wait(honoured)
        finally:
            pusher.stop()
            cache.stop()


def test_watch_with_a_sidecar_pushes_pdbs(sidecar: BackgroundServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """``watch`` (the CLI's ``--sidecar`` wiring) starts the pusher; a PDB created later reaches
    ``latest``. Its cluster is the fake (the kubeconfig is the real control plane's)."""
    open_guide_session(sidecar)
    spec = load_repack_spec(SPEC)
    stop = threading.Event()
    cluster = guide_cluster()
    monkeypatch.setattr(runner, "connect", lambda kubeconfig, retries=True: cluster)
    with RepackClient(sidecar.target) as planner:
        options = WatchOptions(kubeconfig="fake", period=0.2, leader_elect=False)
        thread = threading.Thread(target=runner.watch, args=(options, planner), kwargs={"stop": stop}, daemon=True)
        thread.start()
        try:
            create_training_pdb(cluster)

            def honoured() -> bool:
                plan = planner.plan(service_pb2.PlanRequest(session_id="latest", spec=spec))
                return TRAINING_GROUP not in moved(plan.status)

            assert _wait(honoured)
        finally:
            stop.set()
            thread.join(30)
        assert not thread.is_alive()

"""The simulated Volcano over the fake cluster: gang binding, nominatedNodeName, scheduling gates,
the mirror's node order, kubelet start and graceful removal, Job pod recreation and ServingGroup
rebuild. Scheduling tests cycle one component by hand, so each step is deterministic; the last
ones run every part on its thread and wait (bounded) for what a watcher would see."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from sidecar.fake.cluster import JOBS, FakeCluster
from sidecar.fake.plane import ControlPlane, PlaneConfig
from sidecar.fake.scheduler import Scheduler
from sidecar.mirror.core import Mirror
from sidecar.snapshot.decode import decode
from sidecar.snapshot.kube import GROUP_NAME, snapshot_from_objects
from sidecar.watcher.kit.cache import SNAPSHOT_KINDS
from sidecar.watcher.kit.port import NODES, PODGROUPS, PODS
from tests.k8s_fixtures import wait_for

JOB_OWNER = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "train", "uid": "job-uid-1"}
MS_OWNER = {"apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelServing", "name": "llm", "uid": "ms-1"}


def node(name: str, cpu: str = "4", memory: str = "16Gi") -> dict[str, Any]:
    res = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": res, "capacity": res, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def podgroup(name: str, min_member: int, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner:
        meta["ownerReferences"] = [{**owner, "controller": True}]
    return {"metadata": meta, "spec": {"minMember": min_member}}


def pod(name: str, cpu: str = "1", group: str = "", owner: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"app": "t"}}
    if group:
        meta["annotations"] = {GROUP_NAME: group}
    if owner:
        meta["ownerReferences"] = [{**owner, "controller": True, "blockOwnerDeletion": True}]
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}
    return {"metadata": meta, "spec": {"schedulerName": "volcano", "terminationGracePeriodSeconds": 1,
                                       "containers": [container], **spec}}  # fmt: skip


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster()


@pytest.fixture
def scheduler(cluster: FakeCluster) -> Scheduler:
    return Scheduler(cluster, period=3600)


def bound(cluster: FakeCluster, name: str) -> str | None:
    found = cluster.get(PODS, name, "default")
    return None if found is None else found["spec"].get("nodeName")


def test_gang_binds_only_when_min_member_fit(cluster: FakeCluster, scheduler: Scheduler) -> None:
    cluster.create(NODES, node("n1", cpu="2"))
    cluster.create(PODGROUPS, podgroup("gang", 2))
    for name in ("a", "b"):
        cluster.create(PODS, pod(name, cpu="2", group="gang"))
    assert scheduler.cycle() == 0  # one fits, the gang needs two
    assert (bound(cluster, "a"), bound(cluster, "b")) == (None, None)
    cluster.create(NODES, node("n2", cpu="2"))
    assert scheduler.cycle() == 2
    assert {bound(cluster, "a"), bound(cluster, "b")} == {"n1", "n2"}
    scheduled = (cluster.get(PODS, "a", "default") or {})["status"]["conditions"]
    assert [(c["type"], c["status"]) for c in scheduled] == [("PodScheduled", "True")]


def test_members_already_running_count_towards_min_member(cluster: FakeCluster, scheduler: Scheduler) -> None:
    cluster.create(NODES, node("n1", cpu="2"))
    cluster.create(PODGROUPS, podgroup("gang", 2))
    running = pod("a", cpu="1", group="gang", nodeName="n1") | {"status": {"phase": "Running"}}
    cluster.load([{"apiVersion": "v1", "kind": "Pod", **running}])
    cluster.create(PODS, pod("b", cpu="1", group="gang"))
    assert scheduler.cycle() == 1
    assert bound(cluster, "b") == "n1"


def test_a_pod_waits_for_its_missing_podgroup(cluster: FakeCluster, scheduler: Scheduler) -> None:
    cluster.create(NODES, node("n1"))
    cluster.create(PODS, pod("a", group="nowhere"))
    assert scheduler.cycle() == 0
    cluster.create(PODGROUPS, podgroup("nowhere", 1))
    assert scheduler.cycle() == 1


def _nominate(cluster: FakeCluster, name: str, node_name: str) -> None:
    cluster.patch(PODS, name, "default", [{"op": "add", "path": "/status/nominatedNodeName", "value": node_name}],
                  status=True)  # fmt: skip


def test_nominated_node_is_honoured_when_the_pod_fits_there(cluster: FakeCluster, scheduler: Scheduler) -> None:
    for name in ("n1", "n2", "n3"):
        cluster.create(NODES, node(name))
    cluster.create(PODS, pod("a"))
    _nominate(cluster, "a", "n3")
    assert scheduler.cycle() == 1
    assert bound(cluster, "a") == "n3"


def test_a_nominated_node_the_pod_exactly_fills_is_honoured(cluster: FakeCluster, scheduler: Scheduler) -> None:
    """The nominated pod's own reservation (Pipelined there) must not count against that node."""
    for name in ("n1", "n2"):  # twins: without the nomination, the tie goes to n1 (by name)
        cluster.create(NODES, node(name, cpu="2"))
    cluster.create(PODS, pod("a", cpu="2"))
    _nominate(cluster, "a", "n2")
    assert scheduler.cycle() == 1
    assert bound(cluster, "a") == "n2"


def test_nominated_node_is_ignored_when_the_pod_does_not_fit(cluster: FakeCluster, scheduler: Scheduler) -> None:
    cluster.create(NODES, node("big", cpu="8"))
    cluster.create(NODES, node("small", cpu="1"))
    cluster.create(PODS, pod("a", cpu="2"))
    _nominate(cluster, "a", "small")
    assert scheduler.cycle() == 1
    assert bound(cluster, "a") == "big"


def test_node_order_is_the_mirrors_best_node(cluster: FakeCluster, scheduler: Scheduler) -> None:
    for name, cpu in (("n1", "4"), ("n2", "16"), ("n3", "8")):
        cluster.create(NODES, node(name, cpu=cpu))
    busy = pod("busy", cpu="3", nodeName="n2") | {"status": {"phase": "Running"}}
    cluster.load([{"apiVersion": "v1", "kind": "Pod", **busy}])
    cluster.create(PODS, pod("a"))
    state = decode(snapshot_from_objects(*(cluster.items(kind) for kind in SNAPSHOT_KINDS)))
    mirror = Mirror(state)
    verdict = mirror.prioritize(mirror.subject_for_task(state.task_name.index("a")))
    assert verdict.scores is not None
    feasible = np.flatnonzero(verdict.filter.feasible)
    best = state.node_names[feasible[verdict.scores.ranked(state.node_names)[0]]]
    assert scheduler.cycle() == 1
    assert bound(cluster, "a") == best


def test_a_gated_pod_and_its_gang_wait_until_its_last_gate_is_removed(
    cluster: FakeCluster, scheduler: Scheduler
) -> None:
    """Volcano skips SchGated tasks: a gated member keeps its whole gang unscheduled."""
    cluster.create(NODES, node("n1"))
    cluster.create(PODGROUPS, podgroup("gang", 2))
    gates = [{"name": "repack.volcano.sh/placement"}, {"name": "other.example/gate"}]
    cluster.create(PODS, pod("a", group="gang", schedulingGates=gates))
    cluster.create(PODS, pod("b", group="gang"))
    assert scheduler.cycle() == 0
    cluster.patch(PODS, "a", "default", [{"op": "remove", "path": "/spec/schedulingGates/0"}])
    assert scheduler.cycle() == 0  # one gate left
    cluster.patch(PODS, "a", "default", [{"op": "remove", "path": "/spec/schedulingGates/0"}])
    assert scheduler.cycle() == 2
    assert bound(cluster, "a") == bound(cluster, "b") == "n1"


@pytest.fixture
def live(cluster: FakeCluster) -> Iterator[FakeCluster]:
    plane = ControlPlane(cluster, PlaneConfig(scheduler_period=0.05)).start()
    try:
        yield cluster
    finally:
        plane.stop()


def _running(cluster: FakeCluster, name: str, not_uid: str = "") -> dict[str, Any] | None:
    p = cluster.get(PODS, name, "default")
    if p is None or p["metadata"].get("deletionTimestamp") or p["metadata"]["uid"] == not_uid:
        return None
    return p if p["status"].get("phase") == "Running" else None


def test_the_kubelet_starts_bound_pods_and_removes_them_after_their_grace(live: FakeCluster) -> None:
    live.create(NODES, node("n1"))
    live.create(PODS, pod("a"))
    got = wait_for(lambda: _running(live, "a"))
    assert got["spec"]["nodeName"] == "n1"
    assert {c["type"] for c in got["status"]["conditions"]} >= {"PodScheduled", "Ready", "ContainersReady"}
    live.delete(PODS, "a", "default")  # grace 1 s: terminating first
    assert (live.get(PODS, "a", "default") or {})["metadata"]["deletionTimestamp"]
    wait_for(lambda: live.get(PODS, "a", "default") is None, 5, why="removed once its grace is over")


def test_an_evicted_job_pod_is_recreated_and_bound_again(live: FakeCluster) -> None:
    live.create(NODES, node("n1"))
    live.create(PODGROUPS, podgroup("train-pg", 1, JOB_OWNER))
    live.create(PODS, pod("train-worker-0", group="train-pg", owner=JOB_OWNER))
    first = wait_for(lambda: _running(live, "train-worker-0"))
    live.evict("default", "train-worker-0", uid=first["metadata"]["uid"], grace_seconds=0)
    again = wait_for(lambda: _running(live, "train-worker-0", first["metadata"]["uid"]))
    assert again["spec"]["nodeName"] == "n1"
    assert again["metadata"]["annotations"][GROUP_NAME] == "train-pg"
    assert again["metadata"]["ownerReferences"][0]["kind"] == "Job"


def test_a_disrupted_serving_group_is_recreated_whole_under_a_new_podgroup(live: FakeCluster) -> None:
    live.create(NODES, node("n1"))
    live.create(PODGROUPS, podgroup("llm-0", 2, MS_OWNER))
    for name in ("llm-0-entry", "llm-0-worker"):
        live.create(PODS, pod(name, group="llm-0", owner=MS_OWNER))
    before = {n: wait_for(lambda n=n: _running(live, n))["metadata"]["uid"] for n in ("llm-0-entry", "llm-0-worker")}
    live.evict("default", "llm-0-entry", uid=before["llm-0-entry"], grace_seconds=0)
    after = {n: wait_for(lambda n=n: _running(live, n, before[n]), 15) for n in before}
    assert {p["metadata"]["annotations"][GROUP_NAME] for p in after.values()} == {"llm-0-r1"}
    groups = live.items(PODGROUPS)
    assert [(g["metadata"]["name"], g["metadata"]["ownerReferences"][0]["name"]) for g in groups] == [
        ("llm-0-r1", "llm")
    ]


def test_finished_pods_and_pods_of_a_deleted_workload_are_not_rebuilt(live: FakeCluster) -> None:
    live.create(NODES, node("n1"))
    live.create(PODGROUPS, podgroup("train-pg", 1, JOB_OWNER))
    done = pod("done-0", group="train-pg", owner=JOB_OWNER, nodeName="n1") | {"status": {"phase": "Succeeded"}}
    live.load([{"apiVersion": "v1", "kind": "Pod", **done}])
    live.evict(
        "default", "done-0", uid=(live.find(PODS, "done-0", "default") or {})["metadata"]["uid"], grace_seconds=0
    )
    job = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
           "metadata": {"name": "train", "namespace": "default", "uid": "job-uid-1"}}  # fmt: skip
    live.load([job])
    live.create(PODS, pod("train-worker-0", group="train-pg", owner=JOB_OWNER))
    uid = wait_for(lambda: _running(live, "train-worker-0"))["metadata"]["uid"]
    live.delete(JOBS, "train", "default")  # the workload itself goes: garbage, not a disruption
    live.evict("default", "train-worker-0", uid=uid, grace_seconds=0)
    time.sleep(0.5)  # ten periods of the workload controllers: nothing may come back
    assert live.get(PODS, "done-0", "default") is None
    assert live.get(PODS, "train-worker-0", "default") is None

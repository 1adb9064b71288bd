"""Shared pieces of the watcher tests: the guide's cluster on the fake cluster port, the guide's
Step 5 run, and a driver that interleaves watcher passes with the simulated control plane.

``Box.drive`` runs the control plane's parts in the order a cluster with the placement gate would
see them: the workload controllers rebuild evicted pods, the watcher's next pass suggests nodes,
then the scheduler binds and the kubelet starts. Each part is the fake's own code; the order is
the test's, so every step is deterministic.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from sidecar.api.repackrun import TERMINAL
from sidecar.fake.cluster import FakeCluster
from sidecar.fake.objects import objects_from_snapshot
from sidecar.fake.plane import ControlPlane, PlaneConfig
from sidecar.snapshot.io import load_snapshot
from sidecar.snapshot.kube import GROUP_NAME
from sidecar.watcher.execute.reconciler import ExecuteReconciler
from sidecar.watcher.gate.index import GateIndex, owner_from
from sidecar.watcher.kit.port import EVENTS, PODGROUPS, PODS, REPACKRUNS

Obj = dict[str, Any]
ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "sidecar" / "data" / "guide-ascend.json"
DRYRUN = ROOT / "sidecar" / "data" / "guide-ascend-dryrun.yaml"
NPU = "huawei.com/ascend-1980"
NS = "repack-demo"
TRAINING_PG = "ascend-batch-training-2f6c840d-8b14-4e45-a4cf-b43c249acbfd"
WORKER0, WORKER1 = "ascend-batch-training-worker-0", "ascend-batch-training-worker-1"


def guide_objects(*, cards: int | None = None, grace: int = 0) -> list[Obj]:
    """The guide's cluster as objects; ``cards`` NPUs per node instead of 4; pods' own grace ``grace``."""
    snap = load_snapshot(GUIDE)
    if cards is not None:
        for node in snap.nodes:
            node.allocatable[NPU] = cards * 1000.0
    objs = objects_from_snapshot(snap)
    for obj in objs:
        if obj["kind"] == "Pod":
            obj["spec"]["terminationGracePeriodSeconds"] = grace
    return objs


def execute_run(name: str = "ascend-execute-001", *, grace: int | None = 0, **spec: Any) -> Obj:
    """The guide's Step 5: the guarded DryRun's spec with mode Execute and an eviction grace."""
    body = yaml.safe_load(DRYRUN.read_text())
    body["metadata"] = {"name": name, "labels": {"change-ticket": "change-20260730"}}
    body["spec"]["mode"] = "Execute"
    body["spec"]["ttlSecondsAfterFinished"] = 604800
    if grace is not None:
        body["spec"]["eviction"] = {"gracePeriodSeconds": grace}
    body["spec"].update(spec)
    return dict(body)


def gate_runs(cluster: FakeCluster) -> GateIndex:
    """The placement gate's admission decision on ``cluster``'s pod creates (as its webhook answers
    them), over the runs and PodGroups as stored now."""
    index = GateIndex(lambda: cluster.items(REPACKRUNS), owner_from(lambda name, ns: cluster.find(PODGROUPS, name, ns)))

    def review(request: Obj) -> Obj:
        index.refresh()
        return index.review(request)

    cluster.admission = review
    return index


class Box:
    """The fake cluster holding the guide's example and its control plane (``plane``: cycled by
    ``drive`` unless ``threads`` runs it in the background)."""

    def __init__(self, cluster: FakeCluster, plane: ControlPlane, threads: bool) -> None:
        self.cluster, self.plane, self.threads = cluster, plane, threads

    def create_run(self, body: Obj) -> Obj:
        return self.cluster.create(REPACKRUNS, copy.deepcopy(body))

    def run(self, name: str) -> Obj:
        found = self.cluster.get(REPACKRUNS, name)
        assert found is not None, f"no RepackRun {name}"
        return found

    def pod(self, name: str, namespace: str = NS) -> Obj | None:
        return self.cluster.get(PODS, name, namespace)

    def evictions(self) -> dict[str, int]:
        """Eviction requests per pod name, from the fake's audit (any answer)."""
        out: dict[str, int] = {}
        for call in self.cluster.audit.records("create", "pods"):
            if call.subresource == "eviction":
                out[call.name] = out.get(call.name, 0) + 1
        return out

    def events(self, name: str) -> list[Obj]:
        """Events about RepackRun ``name``."""
        return [e for e in self.cluster.items(EVENTS) if e["involvedObject"]["name"] == name]

    def rebuild(self) -> None:
        assert self.plane.workloads is not None
        self.plane.workloads.cycle()

    def schedule(self) -> None:
        for part in (self.plane.scheduler, self.plane.kubelet):
            if part is not None:
                part.cycle()

    def drive(
        self, rec: ExecuteReconciler, name: str, *, passes: int = 30, between: Callable[[], None] | None = None
    ) -> str:
        """Watcher passes until the run is terminal: pass, rebuild, pass, schedule (bounded)."""
        phase: str | None = None
        for _ in range(passes):
            for act in (self.rebuild, self.schedule):
                phase = rec.reconcile(self.run(name)).phase
                if phase in TERMINAL:
                    return phase
                act()
                if between is not None:
                    between()
        raise AssertionError(f"run {name} still {phase} after {passes} passes: {self.run(name).get('status')}")


@contextmanager
def guide_box(
    *, cards: int | None = None, grace: int = 0, threads: bool = False, objects: list[Obj] | None = None,
    gates: bool = False,
) -> Iterator[Box]:  # fmt: skip
    """The guide's cluster loaded; the control plane's threads idle unless ``threads``; with
    ``gates``, rebuilt pods are admitted behind the placement gate, as its webhook answers."""
    cluster = FakeCluster(history=500)
    cluster.load(objects if objects is not None else guide_objects(cards=cards, grace=grace))
    if gates:
        gate_runs(cluster)
    plane = ControlPlane(cluster, PlaneConfig(scheduler_period=0.05))
    if threads:
        plane.start()
    try:
        yield Box(cluster, plane, threads)
    finally:
        plane.stop()


def waiting_job(cluster: FakeCluster, name: str, size: int, cards: int, *, namespace: str = NS) -> list[str]:
    """A Volcano Job's gang as its controller creates it once the PodGroup is Inqueue: the PodGroup
    (minMember ``size``) and ``size`` pending workers of ``cards`` NPUs each, in the Ascend pool.
    Returns the workers' names."""
    owner = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": name}
    owner |= {"uid": f"job-{name}", "controller": True}
    cluster.create(PODGROUPS, {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace, "ownerReferences": [owner]},
        "spec": {"minMember": size, "queue": "default"},
        "status": {"phase": "Inqueue"},
    })  # fmt: skip
    names = [f"{name}-worker-{i}" for i in range(size)]
    for pod in names:
        meta = {
            "name": pod,
            "namespace": namespace,
            "labels": {"volcano.sh/job-name": name, "workload-type": "training"},
            "annotations": {GROUP_NAME: name},
            "ownerReferences": [owner],
        }
        trainer = {"name": "trainer", "image": "alpine:3.20",
                   "resources": {"requests": {NPU: str(cards)}, "limits": {NPU: str(cards)}}}  # fmt: skip
        spec = {
            "schedulerName": "volcano",
            "nodeSelector": {"accelerator-pool": "ascend-npu"},
            "restartPolicy": "Never",
        }
        cluster.create(
            PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {**spec, "containers": [trainer]}}
        )
    return names


def relocation(run: Obj, pod: str) -> Obj:
    return next(r for r in run["status"]["relocations"] if r["victimPodName"] == pod)


def condition(run: Obj, kind: str) -> Obj:
    return next(c for c in run["status"]["conditions"] if c["type"] == kind)


def true_reasons(run: Obj) -> list[tuple[str, str]]:
    return [(c["type"], c["reason"]) for c in run["status"]["conditions"] if c["status"] == "True"]

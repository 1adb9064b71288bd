"""Shared pieces of the Execute watcher tests: the guide's cluster in a sandbox API server, the
guide's Step 5 run, and a driver that interleaves watcher passes with the simulated control plane.

``Sandbox.step`` runs the control plane's parts in the order a cluster with the placement gate
would see them: workload controllers rebuild evicted pods, the watcher's next pass suggests nodes,
then the scheduler binds and the kubelet starts. (The sandbox's scheduler does not hold gated pods
yet, so the test orders the parts; each part is still the sandbox's own code over real HTTP.)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from sidecar.api.repackrun import TERMINAL
from sidecar.sandbox.apiserver import ApiServer
from sidecar.sandbox.controlplane import ControlPlane, ControlPlaneConfig
from sidecar.sandbox.objects import objects_from_snapshot
from sidecar.snapshot.io import load_snapshot
from sidecar.watcher.execute import ExecuteReconciler
from sidecar.watcher.status import GROUP, PLURAL, VERSION

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


class Sandbox:
    """An API server with the guide's cluster, the official client on it, and its control plane
    (``plane``: cycled by ``step`` unless ``threads`` runs it in the background)."""

    def __init__(self, server: ApiServer, path: Path, threads: bool) -> None:
        self.server = server
        self.api = config.new_client_from_config(str(server.kubeconfig(path)))
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)
        plane = server.control_plane
        assert plane is not None
        self.plane: ControlPlane = plane
        self.threads = threads

    def create_run(self, body: Obj) -> Obj:
        return self.custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, copy.deepcopy(body))  # type: ignore[no-any-return]

    def run(self, name: str) -> Obj:
        return self.custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, name)  # type: ignore[no-any-return]

    def pod(self, name: str, namespace: str = NS) -> client.V1Pod | None:
        try:
            return self.core.read_namespaced_pod(name, namespace)
        except client.ApiException as exc:
            assert exc.status == 404
            return None

    def evictions(self) -> dict[str, int]:
        """Eviction requests per pod name, from the API server's audit log (any answer)."""
        out: dict[str, int] = {}
        for r in self.server.audit.records("create", "pods"):
            if r.subresource == "eviction":
                out[r.name] = out.get(r.name, 0) + 1
        return out

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
def sandbox(
    path: Path,
    *,
    cards: int | None = None,
    grace: int = 0,
    threads: bool = False,
    objects: list[Obj] | None = None,
    gates: tuple[str, ...] = (),
) -> Iterator[Sandbox]:
    """The guide's cluster loaded; the control plane's threads idle unless ``threads``; rebuilt
    pods created with the scheduling ``gates`` (an admission webhook's effect)."""
    conf = ControlPlaneConfig(scheduler_period=0.05 if threads else 3600, rebuild_gates=gates)
    with ApiServer(history=200, control_plane=conf) as server:
        box = Sandbox(server, path / "kubeconfig", threads)
        if not threads:
            box.plane.stop()  # its parts are cycled by the test (``step``), in order
        server.load(objects if objects is not None else guide_objects(cards=cards, grace=grace))
        try:
            yield box
        finally:
            box.api.close()


def relocation(run: Obj, pod: str) -> Obj:
    return next(r for r in run["status"]["relocations"] if r["victimPodName"] == pod)


def condition(run: Obj, kind: str) -> Obj:
    return next(c for c in run["status"]["conditions"] if c["type"] == kind)


def true_reasons(run: Obj) -> list[tuple[str, str]]:
    return [(c["type"], c["reason"]) for c in run["status"]["conditions"] if c["status"] == "True"]
